//! promptgate: get a prompt into an AI coding agent in a tmux pane exactly once.
//!
//! The pipeline: read (tmux) -> identify -> detect (pure) -> gate (clock) ->
//! plan (pure) -> deliver (tmux) -> verify (detect again).

pub mod answer;
pub mod ask;
pub mod cells;
pub mod cli;
pub mod cmd;
pub mod deliver;
pub mod demo;
pub mod detect;
pub mod doctor;
pub mod error;
pub mod fake_agent;
pub mod fanout;
pub mod files;
pub mod fleet;
pub mod gate;
pub mod hooks;
pub mod identify;
pub mod interrupt;
pub mod jsonedit;
pub mod jsonrpc;
pub mod live;
pub mod lock;
pub mod log;
pub mod mcp;
pub mod observe;
pub mod out;
pub mod plan;
pub mod proc;
pub mod profile;
pub mod queue;
pub mod receipt;
pub mod record;
pub mod screen;
pub mod status;
pub mod store;
pub mod text;
pub mod tmux;
pub mod verify;
pub mod watch;
