use super::{observe, out, target, Observed};
use crate::app::cli::StateArgs;
use crate::core::error::Result;
use crate::core::profile::Profiles;
use crate::io::tmux::{Control, Process, Server, Tmux};

pub fn run(server: &Server, profiles: &Profiles, a: StateArgs) -> Result<i32> {
    let panes: Vec<String> = if a.all {
        Process::new(server.clone())
            .list_panes()?
            .into_iter()
            .map(|p| p.id)
            .collect()
    } else {
        vec![Process::new(server.clone()).resolve(&target(server, &a.t.target)?)?]
    };
    let Some(first) = panes.first() else {
        return Ok(0);
    };
    let mut tmux = Control::new(server.clone(), first);
    for pane in &panes {
        match observe(&mut tmux, profiles, a.t.agent.as_deref(), pane) {
            Ok(o) => out(&line(&o, a.json))?,
            // a pane that vanished between list and read is skipped under --all
            Err(crate::core::error::Error::NoPane(_)) if a.all => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(0)
}

pub fn line(o: &Observed, json: bool) -> String {
    let v = &o.verdict;
    if json {
        serde_json::json!({
            "pane": o.pane,
            "agent": o.identity.agent,
            "identified_by": o.identity.how,
            "state": v.state.to_string(),
            "reason": v.reason(),
            "evidence": v.evidence,
            "composer": v.composer,
            "pane_pid": o.screen.pid,
            "command": o.screen.command,
            "size": [o.screen.width, o.screen.height],
        })
        .to_string()
    } else {
        format!(
            "{}\t{}\t{}\t{}",
            o.pane,
            o.identity.agent.as_deref().unwrap_or("-"),
            v.state,
            v.reason()
        )
    }
}
