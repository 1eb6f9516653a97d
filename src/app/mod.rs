//! The command line: arguments (cli), what is printed (out), one small file per command (cmd), sends to several hosts (fleet), and the built-in fake agent.

pub mod cli;
pub mod cmd;
pub mod fake_agent;
pub mod fleet;
pub mod out;
