//! `cronslot`: schedules, manifests, templates and stores from the command line.
//!
//! This file parses the command line and dispatches it: each command is a
//! module of `commands/`, and its result becomes the exit code in `exit.rs`
//! (part of the interface: 0 success, 1 a check found a problem, 2 bad
//! input, 3 a translation that cannot be exact).

mod check;
mod cli;
mod commands;
mod exit;
mod format;
mod health;
mod manifest;
mod parse;
mod render;
mod store;
mod sync;
mod version;

use std::process::ExitCode;

use clap::Parser;

use cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    exit::exit_code(commands::exec(cli.command))
}
