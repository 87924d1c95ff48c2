//! Exit codes and the failures that carry them.
//!
//! Exit codes are part of the interface: 0 success, 1 a check found a
//! problem or an operation could not be done as asked, 2 bad input
//! (expression, zone, manifest, argument, store URL), 3 a translation that
//! cannot be exact. A command returns `Err(Failure)`; [`exit_code`] prints
//! its message on stderr and turns it into the process's exit code.

use std::process::ExitCode;

use cronslot_core::coord::CoordError;

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

    /// An operation that could not be done as asked (exit 1).
    pub fn problem(message: impl Into<String>) -> Failure {
        Failure {
            code: Self::PROBLEM,
            message: message.into(),
        }
    }
}

/// A store operation that failed: a refusal of what was asked is bad input
/// (2), the store itself failing is a problem (1).
pub fn coord_failure(store: &str, doing: &str, job: &str, e: &CoordError) -> Failure {
    let message = format!("error: {doing} job {job:?} in store {store}: {e}");
    match e {
        CoordError::Backfill(_) | CoordError::Trigger(_) | CoordError::NoSchedule { .. } => {
            Failure::bad_input(message)
        }
        CoordError::Store(_) | CoordError::Refused(_) | CoordError::Contention { .. } => {
            Failure::problem(message)
        }
        // An error newer than this CLI: not known to be the input's fault.
        _ => Failure::problem(message),
    }
}

/// A command's result as the process's exit code, its failure's message
/// printed on stderr.
pub fn exit_code(result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("{}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}
