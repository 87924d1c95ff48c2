//! `cronslot`: schedules, manifests, templates and stores from the command line.
//!
//! Exit codes are part of the interface: 0 success, 1 a check found a
//! problem, 2 bad input (expression, zone, manifest, argument), 3 a
//! translation that cannot be exact.

mod check;
mod cli;
mod render;
mod run_cmd;
mod schedule_cmds;
mod store_cmds;
mod sync;
mod validate;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

/// A failure a command reports: what to print, and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub const PROBLEM: u8 = 1;
    pub const BAD_INPUT: u8 = 2;
    pub const INEXACT: u8 = 3;

    pub fn bad_input(message: impl Into<String>) -> Failure {
        Failure {
            code: Self::BAD_INPUT,
            message: message.into(),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Next(args) => schedule_cmds::next(args),
        Command::Explain(args) => schedule_cmds::explain(args),
        Command::Translate(args) => schedule_cmds::translate(args),
        Command::Validate(args) => validate::validate(args),
        Command::Run(args) => run_cmd::run(args),
        Command::Status(args) => store_cmds::status(args),
        Command::Dlq(args) => store_cmds::dlq(args),
        Command::Pause(args) => store_cmds::pause(args),
        Command::Resume(args) => store_cmds::resume(args),
        Command::Backfill(args) => store_cmds::backfill(args),
        Command::Trigger(args) => store_cmds::trigger(args),
        Command::Render(args) => render::render(args),
        Command::Check(args) => check::check(args),
        Command::Sync(args) => sync::sync(args),
        Command::Completions { shell } => {
            cli::print_completions(shell);
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("{}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}
