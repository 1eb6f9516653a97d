//! The integration tests, one binary (one link, one pool of test threads):
//! `cargo test --test suite live::` runs one module. The real-agent, ssh, fleet and
//! MCP-burst suites, which run only when asked, keep binaries of their own.

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
mod plugin;
mod profile_drift;
mod proof;
mod queue;
mod queue_model;
mod tmux_release;
mod turn;
mod ux;
mod what_runs_there;
