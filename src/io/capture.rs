//! Saved captures on disk: `NAME.txt`, its `.meta` and `.ansi` siblings
//! (`detect --screen FILE`, the fixtures).

use crate::core::error::{Error, Result};
use crate::core::screen::Screen;
use std::path::Path;

/// Load `NAME.txt` (or the given file) and its `.meta` sibling (or `meta`).
pub fn load(screen: &Path, meta: Option<&Path>) -> Result<Screen> {
    let read = |p: &Path| {
        crate::io::read_capped(p, crate::io::FILE_LIMIT).map_err(|e| Error::ScreenFile {
            path: p.display().to_string(),
            msg: e.to_string(),
        })
    };
    let bytes = read(screen)?;
    let text = String::from_utf8(bytes).map_err(|_| Error::ScreenFile {
        path: screen.display().to_string(),
        msg: "not valid UTF-8".into(),
    })?;
    let meta_text = match meta {
        Some(m) => String::from_utf8_lossy(&read(m)?).into_owned(),
        None => std::fs::read_to_string(screen.with_extension("meta")).unwrap_or_default(),
    };
    let ansi = std::fs::read_to_string(screen.with_extension("ansi")).ok();
    Screen::from_saved(
        &screen.display().to_string(),
        &text,
        &meta_text,
        ansi.as_deref(),
    )
}
