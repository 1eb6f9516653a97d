//! promptgate: get a prompt into an AI coding agent in a tmux pane exactly once.
//!
//! The pipeline: read (tmux) -> identify -> detect (pure) -> gate (clock) ->
//! plan (pure) -> deliver (tmux) -> verify (detect again).
//!
//! Four layers, each importing only from those below it:
//! - [`core`]: pure: screens, identify, detect, plan, verify, profiles, errors;
//! - [`io`]: tmux, processes, files, the agents' records, hooks, locks, the log;
//! - [`engine`]: the gate and the clock, delivery, fan-out, the queue, ask;
//! - [`app`]: the command line, one small file per command.

pub mod app;
pub mod core;
pub mod engine;
pub mod io;
