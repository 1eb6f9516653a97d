//! Everything that touches the world: tmux (the one adapter), the processes under a pane (proc), files local or over ssh (files, store, jsonedit, lock), the agents' own records of prompts and replies (record, answer), hooks, the delivery log, signals (interrupt), the live status line, and the JSON-RPC line filter.

pub mod answer;
pub mod capture;
pub mod files;
pub mod hooks;
pub mod interrupt;
pub mod jsonedit;
pub mod jsonrpc;
pub mod live;
pub mod lock;
pub mod log;
pub mod proc;
pub mod profiles;
pub mod record;
pub mod store;
pub mod tmux;

/// A file a user named (`-f`, `--screen-file`, `--profiles`, `--hosts`), read
/// to its end but never past `max` bytes: `-f /dev/zero` or a runaway pipe is a
/// clear error, not a process that grows until the machine kills it. Pipes,
/// FIFOs and `/dev/stdin` are read as files are.
pub fn read_capped(path: &std::path::Path, max: u64) -> std::io::Result<Vec<u8>> {
    read_upto(std::fs::File::open(path)?, max)?
        .ok_or_else(|| std::io::Error::other(format!("more than {max} bytes (the limit)")))
}

/// Read `r` to its end but never past `max` bytes (`None`: there was more).
pub fn read_upto(r: impl std::io::Read, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut v = Vec::new();
    r.take(max + 1).read_to_end(&mut v)?;
    Ok((v.len() as u64 <= max).then_some(v))
}

/// [`read_capped`] as text.
pub fn read_capped_string(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(read_capped(path, max)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not valid UTF-8"))
}

/// The limit on a screen, profiles or hosts file a user names.
pub const FILE_LIMIT: u64 = 16 << 20;
