//! promptgate: get a prompt into an AI coding agent in a tmux pane exactly once.
//!
//! The pipeline: read (tmux) -> identify -> detect (pure) -> gate (clock) ->
//! plan (pure) -> deliver (tmux) -> verify (detect again).

pub mod detect;
pub mod error;
pub mod plan;
pub mod profile;
pub mod screen;
pub mod text;
