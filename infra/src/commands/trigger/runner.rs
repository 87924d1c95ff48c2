//! `trigger`'s own runner for a command job: the process with the
//! `CRONSLOT_*` environment, its stderr shown and its tail kept, polled
//! until it exits or its time is up.
//!
//! Kept apart, as it was, so that it can be replaced by the shared runner
//! as a whole.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::process::{Command as Process, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use cronslot_core::coord::{Lease, format_instant};
use cronslot_core::manifest::{JobSpec, format_duration};
use jiff::Timestamp;

use crate::format::{one_line, slot_id};

/// Bytes of a command's stderr kept as the error of a failed run.
const STDERR_TAIL_BYTES: usize = 512;

/// How long to wait for a finished command's stderr to reach its end (a
/// background process it started may keep the pipe open).
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// How often a running command is polled for its exit.
const POLL: Duration = Duration::from_millis(20);

/// A command job's action, as `run_command` runs it.
pub struct CommandJob<'a> {
    pub argv: &'a [String],
    pub timeout: Duration,
    pub env: &'a BTreeMap<String, String>,
}

/// How a run ended.
pub enum RunResult {
    Succeeded,
    Failed { error: String, permanent: bool },
}

/// Runs a command job for its lease: `CRONSLOT_*` in the environment (over
/// the job's own `env`), stdin closed, stdout inherited, stderr shown and
/// its tail kept as the error. Exit 0 succeeds, 75 is transient, anything
/// else (a signal too) permanent; a command that cannot start is permanent,
/// one killed at its timeout (or its lease's expiry, if sooner) transient.
pub fn run_command(spec: &JobSpec, lease: &Lease, command: &CommandJob<'_>) -> RunResult {
    let Some((program, rest)) = command.argv.split_first() else {
        return RunResult::Failed {
            error: "the command is empty".to_string(),
            permanent: true,
        };
    };
    let id = slot_id(spec, lease.slot);
    let lease_left = Duration::try_from(lease.expires_at.duration_since(Timestamp::now()))
        .unwrap_or(Duration::ZERO);
    let limit = command.timeout.min(lease_left);
    let mut child = match Process::new(program)
        .args(rest)
        .envs(command.env)
        .env("CRONSLOT_JOB", spec.name.as_str())
        .env("CRONSLOT_SLOT", &id)
        .env("CRONSLOT_IDEMPOTENCY_KEY", &id)
        .env("CRONSLOT_FENCE", lease.fence.to_string())
        .env("CRONSLOT_ATTEMPT", lease.attempt.to_string())
        .env("CRONSLOT_SCHEDULED_AT", format_instant(lease.slot))
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            return RunResult::Failed {
                error: format!("cannot start {program:?}: {e}"),
                permanent: true,
            };
        }
    };
    let tail = Arc::new(Mutex::new(Vec::<u8>::new()));
    let cut = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    if let Some(mut stderr) = child.stderr.take() {
        let tail = Arc::clone(&tail);
        let cut = Arc::clone(&cut);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match stderr.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let _ = std::io::stderr().write_all(&buf[..n]);
                        let mut kept = tail.lock().unwrap_or_else(|p| p.into_inner());
                        kept.extend_from_slice(&buf[..n]);
                        let excess = kept.len().saturating_sub(STDERR_TAIL_BYTES);
                        kept.drain(..excess);
                        if excess > 0 {
                            cut.store(true, Ordering::Relaxed);
                        }
                    }
                }
            }
            let _ = done_tx.send(());
        });
    }
    // `None`: a limit beyond what the clock can represent, i.e. none.
    let deadline = Instant::now().checked_add(limit);
    let status: Result<ExitStatus, String> = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if deadline.is_some_and(|d| Instant::now() >= d) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!(
                    "timed out after {} and was killed",
                    format_duration(Duration::from_secs(limit.as_secs().max(1)))
                ));
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => {
                let _ = child.kill();
                break Err(format!("lost track of the process: {e}"));
            }
        }
    };
    let _ = done_rx.recv_timeout(STDERR_DRAIN);
    let stderr_tail = {
        let kept = tail.lock().unwrap_or_else(|p| p.into_inner());
        let text = one_line(&String::from_utf8_lossy(&kept), STDERR_TAIL_BYTES);
        if cut.load(Ordering::Relaxed) && !text.is_empty() {
            format!("…{text}")
        } else {
            text
        }
    };
    let with_tail = |what: String| {
        if stderr_tail.is_empty() {
            what
        } else {
            format!("{what}: {stderr_tail}")
        }
    };
    match status {
        Err(why) => RunResult::Failed {
            error: with_tail(why),
            permanent: false,
        },
        Ok(status) => match status.code() {
            Some(0) => RunResult::Succeeded,
            Some(75) => RunResult::Failed {
                error: with_tail("exit status 75 (transient)".to_string()),
                permanent: false,
            },
            Some(code) => RunResult::Failed {
                error: with_tail(format!("exit status {code}")),
                permanent: true,
            },
            None => RunResult::Failed {
                error: with_tail(describe_signal(status)),
                permanent: true,
            },
        },
    }
}

#[cfg(unix)]
fn describe_signal(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(signal) => format!("killed by signal {signal}"),
        None => format!("ended without an exit status ({status})"),
    }
}

#[cfg(not(unix))]
fn describe_signal(status: ExitStatus) -> String {
    format!("ended without an exit status ({status})")
}
