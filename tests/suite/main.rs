//! The integration tests, one binary (one link, one pool of test threads):
//! `cargo test --test suite live::` runs one module. The real-agent, ssh, fleet and
//! MCP-burst suites, which run only when asked, keep binaries of their own, and so
//! does the plugin's (`tests/plugin.rs`): its tests drive an attached client's keys
//! and read its messages in real time, and run beside each other only.

#[path = "../common/mod.rs"]
mod common;

mod args;
mod ask;
mod ask_mcp;
mod choke_point;
mod cli;
mod doctor;
mod fake_agent_screens;
mod fanout;
mod fixtures;
mod hooks;
mod kill;
mod live;
mod mcp;
mod mcp_input;
mod pipeline;
mod plan_props;
mod profile_drift;
mod proof;
mod queue;
mod queue_model;
mod tmux_release;
mod turn;
mod ux;
mod what_runs_there;
