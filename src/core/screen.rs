//! `Screen`: one read of a pane. The rows of the visible grid plus the
//! `display -p` facts about the pane, and when it was taken.
//!
//! It is also the shape of a saved capture (`NAME.txt` + `NAME.meta`), so
//! `detect --screen` and the fixture tests run the same code as a live pane.

use crate::core::error::{Error, Result};
use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Screen {
    /// The visible grid, one string per row, trailing blanks trimmed (as `capture-pane -p`).
    pub rows: Vec<String>,
    /// Cursor column and row, 0-based; `None` when not recorded.
    pub cursor: Option<(usize, usize)>,
    /// `cursor_flag`: whether the app shows the cursor.
    pub cursor_visible: Option<bool>,
    pub width: usize,
    pub height: usize,
    pub in_mode: bool,
    pub dead: bool,
    /// Keys sent to this pane would not go to it alone: its input is off
    /// (`select-pane -d`: tmux drops them) or its window has
    /// `synchronize-panes` on (a key reaches every pane of the window: the
    /// submit key would run a neighbour's half-typed shell line). Which one, in
    /// words; `None` when keys go to this pane alone (or not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys_astray: Option<String>,
    pub alternate_on: bool,
    /// `pane_current_command`, normalised (no path, no arguments); `None` when not recorded.
    pub command: Option<String>,
    pub pid: Option<u32>,
    /// The pane's foreground job (`identify::foreground_procs`), read only when a
    /// shell is in the foreground of a local pane; `None` when not read.
    #[serde(skip)]
    pub foreground: Option<Vec<Proc>>,
    pub title: Option<String>,
    /// At least this long the pane's window has had no output (tmux's
    /// `window_activity` against the server clock, in whole seconds); `None`
    /// when unknown or under a second.
    pub quiet_ms: Option<u64>,
    /// Whether the app has bracketed paste (mode 2004) on right now: tmux 3.7's
    /// `#{bracket_paste_flag}`; `None` on older releases and in saved captures.
    pub bracketed_paste: Option<bool>,
    /// The agent's own published state (`[status]`, e.g. Claude's session
    /// registry), read with the screen; `None` where there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_status: Option<String>,
    /// The tmux server's release (`#{version}`); `None` for saved captures.
    pub tmux_version: Option<String>,
    /// Milliseconds since the Unix epoch when the read was taken (0 for saved captures).
    pub taken_at_ms: u128,
    /// How each row's cells are drawn (`capture-pane -e`): the runs of cells with
    /// non-default attributes, one list per row; `None` when the read carried no
    /// attributes (a saved capture without its `.ansi`).
    #[serde(skip)]
    pub styles: Option<Vec<Vec<crate::core::cells::Span>>>,
}

/// Strip a path and arguments: `/usr/bin/node --foo` -> `node`, `-bash` -> `bash`.
pub fn normalise_command(cmd: &str) -> String {
    let first = cmd.split_whitespace().next().unwrap_or("");
    let base = first.rsplit('/').next().unwrap_or(first);
    base.trim_start_matches('-').to_string()
}

impl Screen {
    /// Build from `capture-pane -p` text and `key=value` meta lines (the format of
    /// `fixtures/*.meta`, keys named as tmux formats).
    pub fn from_capture(text: &str, meta: &str) -> Screen {
        let mut s = Screen::default();
        let (mut cx, mut cy) = (None, None);
        for line in meta.lines() {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            let num = || v.trim().parse::<usize>().ok();
            match k.trim() {
                "cursor_x" => cx = num(),
                "cursor_y" => cy = num(),
                "cursor_flag" => s.cursor_visible = Some(v.trim() == "1"),
                "pane_width" => s.width = num().unwrap_or(0),
                "pane_height" => s.height = num().unwrap_or(0),
                "alternate_on" => s.alternate_on = v.trim() == "1",
                "pane_in_mode" => s.in_mode = v.trim() == "1",
                "pane_dead" => s.dead = v.trim() == "1",
                "pane_current_command" if !v.trim().is_empty() => {
                    s.command = Some(normalise_command(v))
                }
                "pane_pid" => s.pid = v.trim().parse().ok(),
                // the title keeps the app's padding on disk; compare it trimmed
                "pane_title" => s.title = Some(v.trim_end().to_string()),
                "taken_at_ms" => s.taken_at_ms = v.trim().parse().unwrap_or(0),
                "quiet_ms" => s.quiet_ms = v.trim().parse().ok(),
                "bracket_paste_flag" => s.bracketed_paste = Some(v.trim() == "1"),
                "agent_status" => s.agent_status = Some(v.trim().to_string()),
                _ => {}
            }
        }
        if let (Some(x), Some(y)) = (cx, cy) {
            s.cursor = Some((x, y));
        }
        s.set_grid(text);
        if s.height == 0 {
            s.height = s.rows.len();
        }
        // capture-pane drops trailing empty rows' newlines only at the very end; pad to height
        while s.rows.len() < s.height {
            s.rows.push(String::new());
        }
        if s.width == 0 {
            s.width = s
                .rows
                .iter()
                .map(|r| crate::core::text::width(r))
                .max()
                .unwrap_or(0);
        }
        s
    }

    /// A saved capture: its text, its `.meta` (empty when there is none) and
    /// its `.ansi` (the attributes, taken when it shows the same text).
    /// `path` names the capture in errors. (`crate::io::capture` reads the files.)
    pub fn from_saved(
        path: &str,
        text: &str,
        meta_text: &str,
        ansi: Option<&str>,
    ) -> Result<Screen> {
        // A blank pane is a real screen (an agent before its first paint), but only
        // with its .meta beside it; an empty file on its own is a mistake.
        if text.is_empty() || (text.trim().is_empty() && meta_text.trim().is_empty()) {
            return Err(Error::ScreenFile {
                path: path.to_string(),
                msg: "empty screen".into(),
            });
        }
        let mut s = Screen::from_capture(text, meta_text);
        if let Some(ansi) = ansi {
            let (rows, styles) = crate::core::cells::parse_grid(ansi);
            let same = rows.len() <= s.rows.len()
                && rows.iter().zip(&s.rows).all(|(a, b)| a == b)
                && s.rows[rows.len()..].iter().all(|r| r.is_empty());
            if same {
                s.styles = Some(styles);
            }
        }
        Ok(s)
    }

    /// Set the rows from `capture-pane -p` output, with `-e` or without: escapes,
    /// where present, become `styles`.
    pub fn set_grid(&mut self, grid: &str) {
        if grid.contains('\x1b') {
            let (rows, styles) = crate::core::cells::parse_grid(grid);
            self.rows = rows;
            self.styles = Some(styles);
        } else {
            self.rows = grid
                .lines()
                .map(|l| l.trim_end_matches([' ', '\r']).to_string())
                .collect();
            self.styles = None;
        }
    }

    /// How cell `x` of row `y` is drawn; `None` when the read carried no attributes.
    pub fn style_at(&self, x: usize, y: usize) -> Option<crate::core::cells::Style> {
        let styles = self.styles.as_ref()?;
        Some(
            styles
                .get(y)
                .map(|spans| crate::core::cells::style_at(spans, x))
                .unwrap_or_default(),
        )
    }

    /// The `.meta` text for this screen, in the fixtures' key order.
    pub fn to_meta(&self) -> String {
        let mut out = String::new();
        if let Some((x, y)) = self.cursor {
            out += &format!("cursor_x={x}\ncursor_y={y}\n");
        }
        if let Some(v) = self.cursor_visible {
            out += &format!("cursor_flag={}\n", v as u8);
        }
        out += &format!(
            "pane_width={}\npane_height={}\nalternate_on={}\n",
            self.width, self.height, self.alternate_on as u8
        );
        if let Some(c) = &self.command {
            out += &format!("pane_current_command={c}\n");
        }
        out += &format!(
            "pane_in_mode={}\npane_dead={}\n",
            self.in_mode as u8, self.dead as u8
        );
        if let Some(t) = &self.title {
            out += &format!("pane_title={t}\n");
        }
        if let Some(q) = self.quiet_ms {
            out += &format!("quiet_ms={q}\n");
        }
        out
    }

    pub fn row(&self, y: usize) -> &str {
        self.rows.get(y).map(String::as_str).unwrap_or("")
    }

    /// True when two reads show the same picture (grid, cursor, mode, title).
    pub fn same_picture(&self, other: &Screen) -> bool {
        self.rows == other.rows
            && self.cursor == other.cursor
            && self.in_mode == other.in_mode
            && self.title == other.title
    }
}

/// One process under the pane: its `comm` and argv.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    pub comm: String,
    pub argv: Vec<String>,
}

/// Commands that mean "a shell is in the foreground": the agent is gone.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "fish", "dash", "ksh", "mksh", "tcsh", "csh", "nu", "elvish", "xonsh",
];

pub fn is_shell(cmd: &str) -> bool {
    SHELLS.contains(&cmd) || cmd.ends_with(".sh")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_commands() {
        assert_eq!(normalise_command("/usr/bin/node /x/codex"), "node");
        assert_eq!(normalise_command("-bash"), "bash");
        assert_eq!(normalise_command("claude"), "claude");
    }

    #[test]
    fn parses_meta_and_pads_rows() {
        let s = Screen::from_capture(
            "a\nb",
            "cursor_x=2\ncursor_y=1\ncursor_flag=0\npane_width=10\npane_height=4\npane_title=x   \n",
        );
        assert_eq!(s.rows.len(), 4);
        assert_eq!(s.cursor, Some((2, 1)));
        assert_eq!(s.cursor_visible, Some(false));
        assert_eq!(s.title.as_deref(), Some("x"));
    }
}
