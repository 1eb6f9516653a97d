use super::out;
use crate::app::cli::ProfilesArgs;
use crate::core::error::{Error, Result};
use crate::core::profile::{ProfileDef, Profiles};

#[derive(serde::Serialize)]
struct UserFile<'a> {
    agent: Vec<&'a ProfileDef>,
}

pub fn run(profiles: &Profiles, file: Option<&std::path::Path>, a: ProfilesArgs) -> Result<i32> {
    if let Some(name) = &a.show {
        let p = profiles.get(name)?;
        let text = if a.json {
            serde_json::to_string_pretty(&p.def).unwrap_or_default()
        } else {
            toml::to_string(&UserFile {
                agent: vec![&p.def],
            })
            .map_err(|e| Error::Other(e.to_string()))?
        };
        out(text.trim_end())?;
        return Ok(0);
    }
    for (d, source) in profiles.defs() {
        if a.json {
            out(&serde_json::json!({"name": d.name, "description": d.description, "source": source, "checked": d.checked}).to_string())?;
        } else {
            let checked = if d.checked.is_empty() {
                "checked against: (not stated)".to_string()
            } else {
                format!("checked against: {}", d.checked.join(", "))
            };
            out(&format!(
                "{}\t{}\t{}\t{checked}",
                d.name, source, d.description
            ))?;
        }
    }
    if !a.json {
        let user = file
            .map(|f| f.to_path_buf())
            .or_else(crate::io::profiles::default_user_file);
        if let Some(u) = user {
            out(&format!(
                "# user file: {}{}",
                u.display(),
                if u.exists() { "" } else { " (absent)" }
            ))?;
        }
    }
    Ok(0)
}
