//! `command` jobs: one process per attempt, with rules written once.
//!
//! Exit 0 succeeds; 75 (`EX_TEMPFAIL` of sysexits.h) is a transient
//! failure; anything else, a signal included, is permanent. The end of the
//! process's stderr goes into the error, so a dead letter says why. The
//! process gets the manifest's environment, then cronslot's variables
//! (which the manifest cannot override): `CRONSLOT_JOB`, `CRONSLOT_SLOT`,
//! `CRONSLOT_IDEMPOTENCY_KEY`, `CRONSLOT_FENCE`, `CRONSLOT_ATTEMPT`,
//! `CRONSLOT_SCHEDULED_AT`; for a slot of a dynamic job's schedule also
//! `CRONSLOT_KEY` and `CRONSLOT_PAYLOAD` (the JSON its version carries,
//! `null` without one).
//!
//! Starting the process is the platform's
//! ([`Platform::run_command`](crate::Platform::run_command)); only the
//! local runner (and `cronslot trigger`, through the same code) has
//! processes. It must start the process in a group of its own and kill the
//! whole group when the run is dropped (a timeout, a lost lease, a forced
//! shutdown), so that nothing a `sh -c` started outlives its run.

use std::collections::BTreeMap;
use std::time::Duration;

use cronslot_core::coord::format_instant;
use cronslot_core::manifest::{Action, JobSpec};

use crate::{JobError, RunContext};

/// Exit status of a transient failure (sysexits.h `EX_TEMPFAIL`).
pub const EXIT_TRANSIENT: i32 = 75;

/// Bytes of stderr kept for the error message: its end, where programs
/// say why they stopped. (The state record keeps 1 KiB of error text.)
pub const STDERR_EXCERPT: usize = 800;

/// One process of one run, ready to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRequest {
    /// The program and its arguments (never empty in a valid manifest).
    pub argv: Vec<String>,
    /// The manifest's variables, then cronslot's (which win), added to the
    /// inherited environment.
    pub env: Vec<(String, String)>,
    /// Bounds the run; the runtime enforces it by dropping the run.
    pub timeout: Duration,
}

/// The variables that identify a run to its process.
pub fn identity(ctx: &RunContext) -> Vec<(&'static str, String)> {
    #[cfg_attr(not(feature = "schedules"), allow(unused_mut))]
    let mut vars = vec![
        ("CRONSLOT_JOB", ctx.job().to_string()),
        ("CRONSLOT_SLOT", ctx.slot_id().to_string()),
        ("CRONSLOT_IDEMPOTENCY_KEY", ctx.idempotency_key()),
        ("CRONSLOT_FENCE", ctx.fence().to_string()),
        ("CRONSLOT_ATTEMPT", ctx.attempt().to_string()),
        ("CRONSLOT_SCHEDULED_AT", format_instant(ctx.scheduled_at())),
    ];
    #[cfg(feature = "schedules")]
    if let Some(key) = ctx.key() {
        // A schedule's slot: its key, and its version's payload (`null`
        // without one, so that a process can always parse it).
        vars.push(("CRONSLOT_KEY", key.to_string()));
        vars.push((
            "CRONSLOT_PAYLOAD",
            ctx.payload().unwrap_or("null").to_string(),
        ));
    }
    vars
}

/// The process of `spec`'s `command` action for the run in `ctx`; `None`
/// if the job is not a command job.
pub fn plan(spec: &JobSpec, ctx: &RunContext) -> Option<CommandRequest> {
    let Action::Command { argv, timeout, env } = &spec.action else {
        return None;
    };
    Some(CommandRequest {
        argv: argv.clone(),
        env: environment(env, &identity(ctx)),
        timeout: *timeout,
    })
}

/// The manifest's variables, then cronslot's, which win on a clash.
pub fn environment(
    configured: &BTreeMap<String, String>,
    identity: &[(&'static str, String)],
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = configured
        .iter()
        .filter(|(name, _)| !identity.iter().any(|(ours, _)| ours == name))
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    env.extend(identity.iter().map(|(n, v)| ((*n).to_string(), v.clone())));
    env
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// Neither could be told (the text describes the status).
    Other(String),
}

/// The run's result from how its process ended and the end of its stderr.
pub fn judge(exit: &Exit, stderr: &str) -> Result<Option<String>, JobError> {
    let with_stderr = |what: String| {
        if stderr.is_empty() {
            what
        } else {
            format!("{what}: {stderr}")
        }
    };
    match exit {
        Exit::Code(0) => Ok(None),
        Exit::Code(EXIT_TRANSIENT) => Err(JobError::transient(with_stderr(format!(
            "exit status {EXIT_TRANSIENT} (transient)"
        )))),
        Exit::Code(code) => Err(JobError::permanent(with_stderr(format!(
            "exit status {code}"
        )))),
        Exit::Signal(signal) => Err(JobError::permanent(with_stderr(format!(
            "killed by signal {signal}"
        )))),
        Exit::Other(text) => Err(JobError::permanent(with_stderr(format!(
            "ended without an exit status ({text})"
        )))),
    }
}

/// The last [`STDERR_EXCERPT`] bytes of a stream, in bounded memory.
#[derive(Debug, Default, Clone)]
pub struct StderrTail {
    bytes: Vec<u8>,
    dropped: bool,
}

impl StderrTail {
    /// Adds a chunk read from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > 2 * STDERR_EXCERPT {
            let cut = self.bytes.len() - STDERR_EXCERPT;
            self.bytes.drain(..cut);
            self.dropped = true;
        }
    }

    /// The kept end as text, trimmed, starting with `…` when the stream
    /// was longer.
    pub fn text(&self) -> String {
        let mut start = self.bytes.len().saturating_sub(STDERR_EXCERPT);
        // Start on a character, not inside one.
        while start < self.bytes.len() && (self.bytes[start] & 0xC0) == 0x80 {
            start += 1;
        }
        let text = String::from_utf8_lossy(&self.bytes[start..]);
        let text = text.trim();
        if start > 0 || self.dropped {
            format!("…{text}")
        } else {
            text.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_are_classified() {
        assert_eq!(judge(&Exit::Code(0), "noise"), Ok(None));
        let e = judge(&Exit::Code(75), "try later").unwrap_err();
        assert!(!e.is_permanent());
        assert_eq!(e.message(), "exit status 75 (transient): try later");
        let e = judge(&Exit::Code(3), "").unwrap_err();
        assert!(e.is_permanent());
        assert_eq!(e.message(), "exit status 3");
        let e = judge(&Exit::Signal(9), "").unwrap_err();
        assert!(e.is_permanent());
        assert_eq!(e.message(), "killed by signal 9");
    }

    #[test]
    fn the_tail_keeps_the_end() {
        let mut tail = StderrTail::default();
        for _ in 0..1000 {
            tail.push(b"0123456789");
        }
        tail.push("the end é\n".as_bytes());
        let text = tail.text();
        assert!(text.ends_with("the end é"), "{text}");
        assert!(text.starts_with('…'));
        assert!(text.len() <= STDERR_EXCERPT + '…'.len_utf8());
        let mut short = StderrTail::default();
        short.push(b"  oops \n");
        assert_eq!(short.text(), "oops");
    }

    #[test]
    fn cronslot_variables_win_over_the_manifest() {
        let configured = BTreeMap::from([
            ("CRONSLOT_FENCE".to_string(), "0".to_string()),
            ("MODE".to_string(), "fast".to_string()),
        ]);
        let env = environment(&configured, &[("CRONSLOT_FENCE", "7".to_string())]);
        assert_eq!(
            env,
            vec![
                ("MODE".to_string(), "fast".to_string()),
                ("CRONSLOT_FENCE".to_string(), "7".to_string())
            ]
        );
    }
}
