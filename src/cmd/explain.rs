use super::{observe, out, target};
use crate::cli::ExplainArgs;
use crate::detect::Verdict;
use crate::error::Result;
use crate::identify::Identity;
use crate::profile::Profiles;
use crate::screen::Screen;
use crate::tmux::{Process, Server, Tmux};

pub fn run(server: &Server, profiles: &Profiles, a: ExplainArgs) -> Result<i32> {
    let mut tmux = Process::new(server.clone());
    let pane = tmux.resolve(&target(&a.t.target)?)?;
    let o = observe(&mut tmux, profiles, a.t.agent.as_deref(), &pane)?;
    if a.json {
        out(
            &serde_json::json!({"pane": pane, "identity": o.identity, "verdict": o.verdict, "screen": facts(&o.screen)})
                .to_string(),
        )?;
    } else {
        print(&pane, &o.screen, Some(&o.identity), &o.verdict)?;
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

/// The human explanation: the pane facts, who runs there, every rule, the verdict.
pub fn print(what: &str, s: &Screen, id: Option<&Identity>, v: &Verdict) -> Result<()> {
    out(&format!(
        "{what}: {}x{}, cursor {}, cursor_flag {}, in_mode {}, dead {}, alternate_on {}, command {}, title {:?}{}{}",
        s.width,
        s.height,
        s.cursor.map(|(x, y)| format!("{x},{y}")).unwrap_or("?".into()),
        s.cursor_visible.map(|v| (v as u8).to_string()).unwrap_or("?".into()),
        s.in_mode as u8,
        s.dead as u8,
        s.alternate_on as u8,
        s.command.as_deref().unwrap_or("?"),
        s.title.as_deref().unwrap_or(""),
        s.quiet_ms
            .map(|q| format!(", no output for {} s+", q / 1000))
            .unwrap_or_default(),
        s.bracketed_paste
            .map(|b| format!(", bracketed paste {}", if b { "on" } else { "off" }))
            .unwrap_or_default()
    ))?;
    if let Some(id) = id {
        out(&format!(
            "agent: {} (identified by {}: {})",
            id.agent.as_deref().unwrap_or("none"),
            id.how,
            id.detail
        ))?;
    }
    for c in &v.checks {
        out(&format!(
            "  {} {:<40} {}",
            if c.fired { "FIRED" } else { "  -  " },
            c.rule,
            c.detail
        ))?;
    }
    out(&format!("state: {}  ({})", v.state, v.reason()))
}
