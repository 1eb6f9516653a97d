use super::out;
use crate::app::cli::DetectArgs;
use crate::core::detect::detect;
use crate::core::error::Result;
use crate::core::profile::Profiles;

pub fn run(profiles: &Profiles, a: DetectArgs) -> Result<i32> {
    let agent = match &a.agent {
        Some(n) => n.clone(),
        None => meta_agent(&a).ok_or_else(|| {
            crate::core::error::Error::Usage(format!(
                "give --agent NAME: {} has no .meta naming its agent (an agent= line)",
                a.screen.display()
            ))
        })?,
    };
    let p = profiles.get(&agent)?;
    let screen = crate::io::capture::load(&a.screen, a.meta.as_deref())?;
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
        crate::app::out::explanation(&a.screen.display().to_string(), &screen, None, &v)?;
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

/// The `agent=` line of the capture's `.meta` (`--meta`, else the screen file
/// with extension .meta).
fn meta_agent(a: &DetectArgs) -> Option<String> {
    let meta = a
        .meta
        .clone()
        .unwrap_or_else(|| a.screen.with_extension("meta"));
    std::fs::read_to_string(meta)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("agent="))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}
