use super::{observe, out, target};
use crate::app::cli::CaptureArgs;
use crate::core::error::{Error, Result};
use crate::core::profile::Profiles;
use crate::io::tmux::{Process, Server, Tmux};

/// Save a pane in the fixtures' shape: OUT.txt (`capture-pane -p`), OUT.ansi
/// (`-e`), OUT.meta (`key=value`, keys named as tmux formats).
pub fn run(server: &Server, profiles: &Profiles, a: CaptureArgs) -> Result<i32> {
    let mut tmux = Process::new(server.clone());
    let pane = tmux.resolve(&target(server, &a.t.target)?)?;
    let o = observe(&mut tmux, profiles, a.t.agent.as_deref(), &pane)?;
    let ansi = tmux.capture_ansi(&pane)?;
    let base = a.output.to_string_lossy().to_string();
    let base = base.strip_suffix(".txt").unwrap_or(&base).to_string();
    if let Some(dir) = std::path::Path::new(&base)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Other(format!("cannot create {}: {e}", dir.display())))?;
    }
    let mut text = o.screen.rows.join("\n");
    text.push('\n');
    let mut meta = o.screen.to_meta();
    if let Some(agent) = &o.identity.agent {
        meta += &format!("agent={agent}\n");
    }
    if let Some(v) = &a.agent_version {
        meta += &format!("agent_version={v}\n");
    }
    meta += &format!("state={}\n", o.verdict.state);
    for (ext, body) in [("txt", &text), ("ansi", &ansi), ("meta", &meta)] {
        let path = format!("{base}.{ext}");
        std::fs::write(&path, body)
            .map_err(|e| Error::Other(format!("cannot write {path}: {e}")))?;
    }
    out(&format!(
        "{base}.{{txt,ansi,meta}}\t{}\t{}",
        o.identity.agent.as_deref().unwrap_or("-"),
        o.verdict.state
    ))?;
    Ok(0)
}
