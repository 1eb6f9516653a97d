//! `promptgate`: parse the command line, run the command, and end with the
//! exit code of its outcome (`error.rs` holds the table).

use promptgate::app::cli::{command_path, usage_line, Cli, Command};
use promptgate::app::cmd;
use promptgate::core::error::{code, Error};
use promptgate::core::text::one_line;
use promptgate::io::interrupt;

use clap::Parser;

/// Parse, run, map errors to exit codes.
fn main() {
    interrupt::install();
    let code = run_main();
    // a signal held back while a prompt was typed: said, and the exit code is
    // the outcome's (128+N only ever means that nothing was typed)
    interrupt::held_at_exit();
    std::process::exit(code);
}

fn run_main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => {
            println!(
                "promptgate {}\n{}",
                env!("CARGO_PKG_VERSION"),
                promptgate::io::tmux::release::describe_local()
            );
            return 0;
        }
        Err(e) => {
            use clap::error::ErrorKind::*;
            return match e.kind() {
                DisplayHelp | DisplayVersion => {
                    let _ = e.print();
                    0
                }
                // bare `promptgate`: the help, as a usage error
                DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = e.print();
                    code::USAGE
                }
                _ => {
                    // an argument that is not UTF-8 (`-t $'\xff'`) is read
                    // lossily here: `args()` would panic on it
                    let args: Vec<String> = std::env::args_os()
                        .skip(1)
                        .map(|a| a.to_string_lossy().into_owned())
                        .collect();
                    let line = usage_line(&e, &args);
                    eprintln!("promptgate: {}", one_line(&line));
                    // `--json` among the flags: the usage error as JSON too
                    if args
                        .iter()
                        .take_while(|a| *a != "--")
                        .any(|a| a == "--json")
                    {
                        let v = error_json(&line, code::USAGE);
                        let _ = match command_path(&args) == "promptgate send" {
                            true => cmd::not_sent_json(v),
                            false => cmd::out_json(&v),
                        };
                    }
                    code::USAGE
                }
            };
        }
    };
    let json = cli.command.json();
    let send = matches!(cli.command, Command::Send(_) | Command::Ask(_));
    match cmd::run(cli) {
        Ok(code) => code,
        Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("promptgate: {}", one_line(&e.to_string()));
            // with --json, every outcome is one JSON object on stdout
            if json && !cmd::reported() {
                let v = error_json(&e.to_string(), e.exit_code());
                let _ = match send {
                    true => cmd::not_sent_json(v),
                    false => cmd::out_json(&v),
                };
            }
            e.exit_code()
        }
    }
}

/// An error as the one JSON object of a `--json` command: `{"error", "exit_code"}`
/// (`send` adds `"receipt": "not-sent"` and `time_ms`, and logs it).
fn error_json(msg: &str, code: i32) -> serde_json::Value {
    serde_json::json!({"error": msg, "exit_code": code})
}
