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
