use super::{observe, out, target};
use crate::app::cli::ExplainArgs;
use crate::core::error::Result;
use crate::core::profile::Profiles;
use crate::core::screen::Screen;
use crate::io::tmux::{Process, Server, Tmux};

pub fn run(server: &Server, profiles: &Profiles, a: ExplainArgs) -> Result<i32> {
    let mut tmux = Process::new(server.clone());
    let pane = tmux.resolve(&target(server, &a.t.target)?)?;
    let o = observe(&mut tmux, profiles, a.t.agent.as_deref(), &pane)?;
    if a.json {
        out(
            &serde_json::json!({"pane": pane, "identity": o.identity, "verdict": o.verdict, "screen": facts(&o.screen)})
                .to_string(),
        )?;
    } else {
        crate::app::out::explanation(&pane, &o.screen, Some(&o.identity), &o.verdict)?;
    }
    Ok(0)
}

/// The pane facts of a read, without its rows (for `--json`).
fn facts(s: &Screen) -> serde_json::Value {
    serde_json::json!({
        "width": s.width,
        "height": s.height,
        "cursor": s.cursor,
        "cursor_visible": s.cursor_visible,
        "in_mode": s.in_mode,
        "dead": s.dead,
        "alternate_on": s.alternate_on,
        "command": s.command,
        "pid": s.pid,
        "title": s.title,
        "quiet_ms": s.quiet_ms,
        "bracketed_paste": s.bracketed_paste,
        "tmux": s.tmux_version,
    })
}
