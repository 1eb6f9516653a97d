use super::out;
use crate::cli::DetectArgs;
use crate::detect::detect;
use crate::error::Result;
use crate::profile::Profiles;
use crate::screen::Screen;

pub fn run(profiles: &Profiles, a: DetectArgs) -> Result<i32> {
    let p = profiles.get(&a.agent)?;
    let screen = Screen::load(&a.screen, a.meta.as_deref())?;
    let v = detect(p, &screen);
    if a.json {
        out(&serde_json::json!({
            "file": a.screen.display().to_string(),
            "agent": p.name(),
            "state": v.state.to_string(),
            "reason": v.reason(),
            "evidence": v.evidence,
            "composer": v.composer,
            "checks": if a.explain { serde_json::to_value(&v.checks).unwrap_or_default() } else { serde_json::Value::Null },
        })
        .to_string())?;
    } else if a.explain {
        crate::out::explanation(&a.screen.display().to_string(), &screen, None, &v)?;
    } else {
        out(&format!(
            "{}\t{}\t{}\t{}",
            a.screen.display(),
            p.name(),
            v.state,
            v.reason()
        ))?;
    }
    Ok(0)
}
