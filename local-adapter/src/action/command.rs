//! `command` jobs: one process per attempt.
//!
//! Exit 0 succeeds, 75 (`EX_TEMPFAIL` of sysexits.h) is a transient failure,
//! anything else (a signal included) is permanent. The tail of stderr goes
//! into the error, so a dead letter says why. The child's stdout goes to the
//! runner's stderr, with the logs, so that the runner's stdout carries only
//! its summary.
//!
//! On Unix the child leads its own process group: a timeout, a lost lease or
//! a forced shutdown kills the whole group (a `sh -c` and everything it
//! started), and the terminal's Ctrl-C reaches the runner only, which then
//! lets the running commands finish.

use std::collections::BTreeMap;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use crate::jobs::JobError;

/// Exit status of a transient failure (sysexits.h `EX_TEMPFAIL`).
pub const EXIT_TRANSIENT: i32 = 75;

/// Bytes of stderr kept for the error message (the state record keeps 1 KiB
/// of error text).
const STDERR_TAIL: usize = 800;

/// How long stderr is still read after the child exits. A background
/// process it started may hold the pipe open forever; the job is over all
/// the same.
const STDERR_GRACE: Duration = Duration::from_millis(200);

pub(crate) async fn run(
    argv: &[String],
    env: &BTreeMap<String, String>,
    identity: &[(&'static str, String)],
) -> Result<Option<String>, JobError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(JobError::permanent("the command is empty"));
    };
    let mut command = Command::new(program);
    command
        .args(args)
        // The manifest's variables first, so that they cannot override
        // cronslot's own.
        .envs(env)
        .envs(identity.iter().map(|(k, v)| (*k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| JobError::permanent(format!("could not start {program:?}: {e}")))?;
    let mut group = GroupGuard::new(child.id());
    let mut tail = Tail::default();
    let status = {
        let stderr = child.stderr.take();
        let mut read = std::pin::pin!(read_into(stderr, &mut tail));
        let mut read_done = false;
        let status = loop {
            tokio::select! {
                status = child.wait() => break status,
                () = &mut read, if !read_done => read_done = true,
            }
        };
        group.reaped();
        if !read_done {
            let _ = tokio::time::timeout(STDERR_GRACE, &mut read).await;
        }
        status
    };
    let status =
        status.map_err(|e| JobError::transient(format!("lost track of {program:?}: {e}")))?;
    judge(status, &tail.text())
}

fn judge(status: ExitStatus, stderr: &str) -> Result<Option<String>, JobError> {
    let with_stderr = |what: String| {
        if stderr.is_empty() {
            what
        } else {
            format!("{what}: {stderr}")
        }
    };
    match status.code() {
        Some(0) => Ok(None),
        Some(EXIT_TRANSIENT) => Err(JobError::transient(with_stderr(format!(
            "exit status {EXIT_TRANSIENT} (transient)"
        )))),
        Some(code) => Err(JobError::permanent(with_stderr(format!(
            "exit status {code}"
        )))),
        None => Err(JobError::permanent(with_stderr(describe_signal(status)))),
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

/// Reads `source` to its end, keeping the last bytes.
async fn read_into<R: AsyncRead + Unpin>(source: Option<R>, tail: &mut Tail) {
    let Some(mut source) = source else { return };
    let mut buf = [0u8; 4096];
    while let Ok(n) = source.read(&mut buf).await {
        if n == 0 {
            return;
        }
        tail.push(&buf[..n]);
    }
}

/// The last [`STDERR_TAIL`] bytes of a stream, in bounded memory.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > 2 * STDERR_TAIL {
            let cut = self.bytes.len() - STDERR_TAIL;
            self.bytes.drain(..cut);
        }
    }

    fn text(&self) -> String {
        let start = self.bytes.len().saturating_sub(STDERR_TAIL);
        let text = String::from_utf8_lossy(&self.bytes[start..]);
        let text = text.trim();
        if start > 0 {
            format!("…{text}")
        } else {
            text.to_string()
        }
    }
}

/// Kills the child's process group if the run is dropped before the child
/// was reaped. After reaping, the group id may name someone else's group
/// (ids are reused), so it is never signalled then.
struct GroupGuard {
    #[cfg_attr(not(unix), allow(dead_code))]
    pgid: Option<u32>,
    reaped: bool,
}

impl GroupGuard {
    fn new(pgid: Option<u32>) -> GroupGuard {
        GroupGuard {
            pgid,
            reaped: false,
        }
    }

    fn reaped(&mut self) {
        self.reaped = true;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        #[cfg(unix)]
        {
            use rustix::process::{Pid, Signal, kill_process_group};
            // Never 0 or 1: group 1 would mean every process we may signal.
            let pid = self
                .pgid
                .and_then(|id| i32::try_from(id).ok())
                .filter(|id| *id > 1)
                .and_then(Pid::from_raw);
            if let Some(pid) = pid {
                // Already gone is fine; `kill_on_drop` covers the child
                // itself in any case.
                let _ = kill_process_group(pid, Signal::KILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_end() {
        let mut tail = Tail::default();
        for _ in 0..1000 {
            tail.push(b"0123456789");
        }
        tail.push(b"the end\n");
        let text = tail.text();
        assert!(text.ends_with("the end"), "{text}");
        assert!(text.starts_with('…'));
        assert!(text.len() <= STDERR_TAIL + 4);
    }
}
