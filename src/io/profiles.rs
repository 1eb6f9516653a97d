//! The user's profile file on disk: built-ins plus
//! `$XDG_CONFIG_HOME/promptgate/agents.toml` (or `--profiles FILE`).

use crate::core::error::{Error, Result};
use crate::core::profile::Profiles;
use std::path::{Path, PathBuf};

/// The default user file: `$XDG_CONFIG_HOME/promptgate/agents.toml` (or `~/.config/...`).
pub fn default_user_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("promptgate").join("agents.toml"))
}

/// Built-ins plus the user file: `explicit` must exist; the default one may be absent.
pub fn load(explicit: Option<&Path>) -> Result<Profiles> {
    let mut p = Profiles::builtin();
    match explicit {
        Some(f) => merge_file(&mut p, f)?,
        None => {
            if let Some(f) = default_user_file().filter(|f| f.exists()) {
                merge_file(&mut p, &f)?;
            }
        }
    }
    Ok(p)
}

/// Add the agents of the user file `file` to `p`.
pub fn merge_file(p: &mut Profiles, file: &Path) -> Result<()> {
    let text = crate::io::read_capped_string(file, crate::io::FILE_LIMIT)
        .map_err(|e| Error::Profile(format!("{}: {e}", file.display())))?;
    p.merge_str(&text, &file.display().to_string())
}
