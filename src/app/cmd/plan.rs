use super::{out, read_body};
use crate::app::cli::PlanArgs;
use crate::core::error::Result;
use crate::core::plan::plan;
use crate::core::profile::Profiles;

pub fn run(profiles: &Profiles, a: PlanArgs) -> Result<i32> {
    let p = profiles.get(&a.agent)?;
    let body = read_body(&a.body)?;
    let pl = plan(&body, p.capability())?;
    if a.json {
        out(
            &serde_json::json!({"agent": p.name(), "capability": p.capability(), "plan": pl})
                .to_string(),
        )?;
    } else {
        out(&format!("agent: {} ({})", p.name(), p.source))?;
        out(&pl.to_string())?;
    }
    Ok(0)
}
