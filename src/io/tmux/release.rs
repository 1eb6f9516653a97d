//! What differs between tmux releases, and the one place that knows it.
//!
//! Every format promptgate asks tmux to expand starts with `#{version}` (the
//! server's release: the one that formats the reply), so each reply says how
//! to read it. The differences that matter, from tmux's own sources:
//!
//! | release | what differs |
//! | --- | --- |
//! | 3.2a, 3.3a | the baseline |
//! | 3.4, 3.5a | `display -p` and `list-* -F` replies pass through `vis(3)`: a control byte prints as octal (`\037`), `$` before a letter, `_` or `{` gains a backslash |
//! | 3.6a | replies are raw again |
//! | 3.7 | `#{bracket_paste_flag}`; `paste-buffer` passes the buffer through `vis(3)` unless `-S` (so `$HOME` would arrive as `\$HOME`) |

use serde::Serialize;

/// The oldest release the matrix tests (`scripts/tmux-matrix.sh`).
pub const OLDEST_TESTED: (u32, u32) = (3, 2);
/// The newest release the matrix tests.
pub const NEWEST_TESTED: (u32, u32) = (3, 8);
/// The releases the matrix runs, for `--version` and the README.
pub const TESTED: &[&str] = &["3.2a", "3.3a", "3.4", "3.5a", "3.6a", "3.7c", "next-3.8"];

/// A tmux release as `#{version}` or `tmux -V` names it: `3.5a`, `next-3.6`,
/// `master`, `openbsd-7.6`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Release {
    pub name: String,
    /// `(major, minor)`, `None` when the name holds no number (`master`): then
    /// the newest behaviour is assumed.
    #[serde(skip)]
    pub number: Option<(u32, u32)>,
}

impl Release {
    pub fn parse(name: &str) -> Release {
        let name = name.trim().trim_start_matches("tmux ").trim().to_string();
        // `next-3.6` is the development release before 3.6; `openbsd-7.6` ships
        // its own tmux, numbered by the OS: its number is no tmux release.
        let number = if name.starts_with("openbsd") {
            None
        } else {
            let digits = name.trim_start_matches(|c: char| !c.is_ascii_digit());
            let mut parts = digits.splitn(2, '.');
            let major = parts.next().and_then(|m| m.parse::<u32>().ok());
            let minor = parts.next().and_then(|m| {
                let d: String = m.chars().take_while(|c| c.is_ascii_digit()).collect();
                d.parse::<u32>().ok()
            });
            major.zip(minor)
        };
        Release { name, number }
    }

    fn at_least(&self, v: (u32, u32)) -> bool {
        self.number.is_none_or(|n| n >= v)
    }

    /// `display -p` and `-F` replies are vis-encoded (3.4 and 3.5 only).
    pub fn vis_replies(&self) -> bool {
        self.number.is_some_and(|n| ((3, 4)..=(3, 5)).contains(&n))
    }

    /// A vis-encoded reply also escapes `$` before a name (3.4 only).
    pub fn vis_dollar(&self) -> bool {
        self.number == Some((3, 4))
    }

    /// `paste-buffer` vis-encodes the buffer unless `-S` (3.7 and later).
    /// A notification for control clients (a paste buffer made or deleted, a
    /// client attached or detached) crashes the server when it reaches a
    /// control client still identifying: 3.2a to 3.6a (3.7 checks).
    pub fn notifies_identifying_control_clients(&self) -> bool {
        !self.at_least((3, 7))
    }

    pub fn paste_needs_raw_flag(&self) -> bool {
        self.at_least((3, 7))
    }

    /// `#{bracket_paste_flag}` exists (3.7 and later).
    pub fn has_bracket_paste_flag(&self) -> bool {
        self.at_least((3, 7))
    }

    /// How this release stands against the tested range.
    pub fn standing(&self) -> Standing {
        match self.number {
            None => Standing::Unknown,
            Some(n) if n < OLDEST_TESTED => Standing::Older,
            Some(n) if n > NEWEST_TESTED => Standing::Newer,
            Some(_) => Standing::Tested,
        }
    }
}

/// The oldest and newest tested releases, as words: `3.2a to next-3.8`.
pub fn tested_range() -> String {
    format!("{} to {}", TESTED[0], TESTED[TESTED.len() - 1])
}

/// A warning for a release outside the tested range, if it is.
pub fn warning(r: &Release) -> Option<String> {
    match r.standing() {
        Standing::Older => Some(format!(
            "tmux {} is older than the oldest tested release ({}): upgrade tmux; promptgate may misread panes on it",
            r.name, TESTED[0]
        )),
        _ => None,
    }
}

/// Warn once per process (on stderr) about a release outside the tested range.
pub fn warn_once(r: &Release) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if let Some(w) = warning(r) {
        if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            eprintln!("promptgate: warning: {w}");
        }
    }
}

/// What `promptgate --version` says about the tmux it finds: the client's
/// release (`tmux -V`, through `PROMPTGATE_TMUX` when set), where it is, and
/// how it stands against the tested range.
pub fn describe_local() -> String {
    let launcher = super::Launcher::current();
    let mut cmd = std::process::Command::new(&launcher.argv[0]);
    cmd.args(&launcher.argv[1..]).arg("-V");
    let where_ = if launcher.remote {
        launcher.argv.join(" ")
    } else {
        find_in_path(&launcher.argv[0]).unwrap_or_else(|| launcher.argv[0].clone())
    };
    let out = cmd
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let name = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => {
            return format!(
                "tmux: not found ({where_}); install tmux {} or later",
                TESTED[0]
            )
        }
    };
    let r = Release::parse(&name);
    let standing = match r.standing() {
        Standing::Tested => format!("tested (the matrix runs {})", tested_range()),
        Standing::Older => format!("WARNING: {}", warning(&r).unwrap_or_default()),
        Standing::Newer => format!(
            "newer than the newest tested release ({}): report what breaks",
            TESTED[TESTED.len() - 1]
        ),
        Standing::Unknown => format!("a development build; tested releases: {}", tested_range()),
    };
    format!("{name} ({where_}): {standing}")
}

pub fn find_in_path(prog: &str) -> Option<String> {
    if prog.contains('/') {
        return Some(prog.to_string());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(prog))
            .find(|p| p.is_file())
            .map(|p| p.display().to_string())
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    Tested,
    Older,
    Newer,
    Unknown,
}

/// Split one line of a reply to a format that starts with `#{version}` into
/// that release and the other fields, each decoded as the release encoded it.
/// The last field takes the rest of the line (a title may hold the separator).
pub(crate) fn split_fields(line: &str, n: usize) -> Option<(Release, Vec<String>)> {
    let mut it = line.splitn(n + 1, super::SEP);
    let release = Release::parse(it.next()?);
    let fields: Vec<String> = it
        .map(|f| {
            if release.vis_replies() {
                unvis(f, release.vis_dollar())
            } else {
                f.to_string()
            }
        })
        .collect();
    (fields.len() == n).then_some((release, fields))
}

/// Undo what tmux 3.4 and 3.5 do to a reply (`vis(3)` with `VIS_OCTAL |
/// VIS_CSTYLE | VIS_NOSLASH`, and on 3.4 a backslash before `$` that starts a
/// variable name): `\NNN` octal, the C escapes, and with `dollar` `\$`. A
/// backslash itself is not escaped by those releases, so any other backslash is
/// kept as it is.
pub fn unvis(s: &str, dollar: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let next = b[i + 1];
        let octal = |j: usize| b.get(j).is_some_and(|c| (b'0'..=b'7').contains(c));
        if octal(i + 1) && octal(i + 2) && octal(i + 3) {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            if v <= 0xff {
                out.push(v as u8);
                i += 4;
                continue;
            }
        }
        let c_escape = match next {
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'r' => Some(b'\r'),
            b'v' => Some(0x0b),
            b'0' => Some(0),
            b'$' if dollar
                && b.get(i + 2)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_' || *c == b'{') =>
            {
                Some(b'$')
            }
            _ => None,
        };
        match c_escape {
            Some(c) => {
                out.push(c);
                i += 2;
            }
            None => {
                out.push(b'\\');
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_and_know_their_differences() {
        let r = |s| Release::parse(s);
        assert_eq!(r("3.5a").number, Some((3, 5)));
        assert_eq!(r("tmux 3.3a").number, Some((3, 3)));
        assert_eq!(r("next-3.6").number, Some((3, 6)));
        assert_eq!(r("master").number, None);
        assert_eq!(r("openbsd-7.6").number, None);
        assert!(!r("3.3a").vis_replies());
        assert!(r("3.4").vis_replies());
        assert!(r("3.5a").vis_replies());
        assert!(!r("3.6a").vis_replies());
        assert!(!r("3.6a").paste_needs_raw_flag());
        assert!(r("3.7c").paste_needs_raw_flag());
        assert!(r("3.7c").has_bracket_paste_flag());
        assert!(r("master").paste_needs_raw_flag());
        assert!(!r("3.2a").has_bracket_paste_flag());
        assert_eq!(r("3.1c").standing(), Standing::Older);
        assert_eq!(r("3.2a").standing(), Standing::Tested);
        assert_eq!(r("3.7c").standing(), Standing::Tested);
        assert_eq!(r("next-3.8").standing(), Standing::Tested);
        assert_eq!(r("3.9").standing(), Standing::Newer);
        assert_eq!(r("master").standing(), Standing::Unknown);
    }

    #[test]
    fn vis_encoded_replies_decode() {
        assert_eq!(unvis("a\\037b", false), "a\u{1f}b");
        assert_eq!(
            unvis("\\$HOME and \\${x} and $5", true),
            "$HOME and ${x} and $5"
        );
        assert_eq!(unvis("\\$HOME", false), "\\$HOME");
        assert_eq!(unvis("C:\\dir\\x", true), "C:\\dir\\x");
        assert_eq!(unvis("\\033[1m", true), "\u{1b}[1m");
        assert_eq!(unvis("tab\there", true), "tab\there");
        assert_eq!(unvis("end\\", true), "end\\");
        assert_eq!(unvis("✳ Claude", true), "✳ Claude");
    }

    #[test]
    fn fields_split_by_release() {
        let (r, f) = split_fields("3.4\t%1\t\\$HOME\ttitle\twith tab", 3).unwrap();
        assert_eq!(r.name, "3.4");
        assert_eq!(f, vec!["%1", "$HOME", "title\twith tab"]);
        let (_, f) = split_fields("3.3a\t%1\t\\$HOME\tt", 3).unwrap();
        assert_eq!(f[1], "\\$HOME");
        let (_, f) = split_fields("3.5a\t%1\t\\$HOME\\037\tt", 3).unwrap();
        assert_eq!(f[1], "\\$HOME\u{1f}");
        assert!(split_fields("3.3a\t%1", 3).is_none());
    }
}
