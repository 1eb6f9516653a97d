//! `promptgate hooks install|uninstall|status [AGENT]` (see `crate::io::hooks`).

use super::out;
use crate::app::cli::HooksArgs;
use crate::core::error::{Error, Result};

pub fn run(a: HooksArgs) -> Result<i32> {
    let exe = std::env::current_exe()?.display().to_string();
    let agents: Vec<&str> = match (&a.agent, a.action.as_str()) {
        (Some(x), _) => vec![x.as_str()],
        (None, "status") => crate::io::hooks::AGENTS.to_vec(),
        (None, act) => {
            return Err(Error::Usage(format!(
                "hooks {act}: name the agent (claude, codex or gemini)"
            )))
        }
    };
    if a.settings.is_some() && agents.len() > 1 {
        return Err(Error::Usage("--settings needs one agent".into()));
    }
    for agent in agents {
        let s = crate::io::hooks::spec(agent, a.settings.as_deref())?;
        let msg = match a.action.as_str() {
            "install" => crate::io::hooks::install(&s, &exe)?,
            "uninstall" => crate::io::hooks::uninstall(&s)?,
            _ => crate::io::hooks::status(&s)?,
        };
        out(&msg)?;
    }
    Ok(0)
}
