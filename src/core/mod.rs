//! The pure middle of the pipeline: what a screen shows (screen, cells, text), which agent it is (identify), what state it is in (detect), how a body goes in (plan), whether it landed (verify), the agent profiles as data (profile), and the errors and exit codes (error). Nothing here runs tmux, reads a file or looks at a clock.

pub mod cells;
pub mod detect;
pub mod error;
pub mod identify;
pub mod plan;
pub mod profile;
pub mod screen;
pub mod text;
pub mod verify;
