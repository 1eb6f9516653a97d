//! `promptgate completions SHELL` and `promptgate man`: generated from the same
//! clap definition as the parser, so they cannot drift from it.

use super::out;
use crate::app::cli::{Cli, CompletionsArgs, ManArgs, EXIT_STATUS};
use crate::core::error::{Error, Result};
use clap::CommandFactory;
use std::io::Write;

pub fn completions(a: CompletionsArgs) -> Result<i32> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "promptgate", &mut buf);
    write_stdout(&buf)
}

pub fn man(a: ManArgs) -> Result<i32> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = &a.dir {
        let fail =
            |e: std::io::Error| Error::Other(format!("cannot write to {}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(fail)?;
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            for page in std::iter::once(sub).chain(sub.get_subcommands()) {
                let m = man_page(page.clone());
                let mut buf = Vec::new();
                m.render(&mut buf)?;
                std::fs::write(dir.join(m.get_filename()), synopsis_values(buf, page))
                    .map_err(fail)?;
            }
        }
        std::fs::write(dir.join("promptgate.1"), top_page(cmd.clone())?).map_err(fail)?;
        out(&format!("{}", dir.display()))?;
        return Ok(0);
    }
    let Some(name) = &a.command else {
        return write_stdout(&top_page(cmd)?);
    };
    let page = cmd
        .get_subcommands()
        .find(|s| s.get_name() == name && !s.is_hide_set())
        .cloned()
        .ok_or_else(|| Error::Usage(format!("no command {name} (see promptgate --help)")))?;
    let mut buf = Vec::new();
    man_page(page.clone()).render(&mut buf)?;
    write_stdout(&synopsis_values(buf, &page))
}

/// clap_mangen's synopsis leaves out an option's value (`[-L ]`, `[--host]`):
/// put each one's value name back (`[-L NAME]`, `[--host HOST]`).
fn synopsis_values(buf: Vec<u8>, cmd: &clap::Command) -> Vec<u8> {
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    for a in cmd.get_arguments() {
        let Some(v) = a.get_value_names().and_then(|v| v.first()) else {
            continue;
        };
        if !a.get_action().takes_values() {
            continue;
        }
        let value = format!("\\fI{}\\fR", v.as_str().replace('-', "\\-"));
        if let (Some(c), Some(l)) = (a.get_short(), a.get_long()) {
            let l = l.replace('-', "\\-");
            text = text.replace(
                &format!("[\\fB\\-{c}\\fR|\\fB\\-\\-{l}\\fR]"),
                &format!("[\\fB\\-{c}\\fR|\\fB\\-\\-{l}\\fR {value}]"),
            );
        }
        if let Some(c) = a.get_short() {
            text = text.replace(
                &format!("[\\fB\\-{c} \\fR]"),
                &format!("[\\fB\\-{c}\\fR {value}]"),
            );
        }
        if let Some(l) = a.get_long() {
            let l = l.replace('-', "\\-");
            text = text.replace(
                &format!("[\\fB\\-\\-{l}\\fR]"),
                &format!("[\\fB\\-\\-{l}\\fR {value}]"),
            );
        }
    }
    text.into_bytes()
}

/// One command's page, promptgate-send(1), from promptgate VERSION.
fn man_page(cmd: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd).source(format!("promptgate {}", env!("CARGO_PKG_VERSION")))
}

/// promptgate(1): clap_mangen's sections, with EXIT STATUS before VERSION.
fn top_page(cmd: clap::Command) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let m = clap_mangen::Man::new(cmd.clone());
    m.render_title(&mut buf)?;
    m.render_name_section(&mut buf)?;
    m.render_synopsis_section(&mut buf)?;
    m.render_description_section(&mut buf)?;
    m.render_options_section(&mut buf)?;
    m.render_subcommands_section(&mut buf)?;
    buf.extend_from_slice(b".SH \"EXIT STATUS\"\n");
    let esc = |s: &str| s.replace('\\', "\\\\").replace('-', "\\-");
    for (code, what) in EXIT_STATUS {
        buf.extend_from_slice(format!(".TP\n\\fB{}\\fR\n{}\n", esc(code), esc(what)).as_bytes());
    }
    m.render_version_section(&mut buf)?;
    Ok(synopsis_values(buf, &cmd))
}

fn write_stdout(buf: &[u8]) -> Result<i32> {
    let mut o = std::io::stdout().lock();
    o.write_all(buf)?;
    o.flush()?;
    Ok(0)
}
