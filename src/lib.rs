//! promptgate: get a prompt into an AI coding agent in a tmux pane exactly once.
//!
//! The pipeline: read (tmux) -> identify -> detect (pure) -> gate (clock) ->
//! plan (pure) -> deliver (tmux) -> verify (detect again).

pub mod cli;
pub mod cmd;
pub mod deliver;
pub mod detect;
pub mod error;
pub mod fake_agent;
pub mod gate;
pub mod hooks;
pub mod identify;
pub mod interrupt;
pub mod live;
pub mod lock;
pub mod log;
pub mod observe;
pub mod plan;
pub mod profile;
pub mod queue;
pub mod record;
pub mod screen;
pub mod text;
pub mod tmux;
pub mod verify;
