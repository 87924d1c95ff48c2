//! The process runner of `command` jobs, for the local runner and
//! `cronslot trigger` alike (the rules it follows are the runtime's:
//! `cronslot_runtime::command`).
//!
//! The child's stdout goes to this process's stderr, with the logs, so
//! that stdout carries only a command's summary. On Unix the child leads
//! its own process group: dropping the run (a timeout, a lost lease, a
//! forced shutdown) kills the whole group (a `sh -c` and everything it
//! started), and the terminal's Ctrl-C reaches the runner only, which then
//! lets the running commands finish.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use cronslot_runtime::JobError;
use cronslot_runtime::command::{CommandRequest, Exit, StderrTail, judge};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

/// Variables of the runner's own environment that a command never
/// inherits: they carry the store's password (`PGPASSWORD` for
/// PostgreSQL, `REDISCLI_AUTH` for Redis, and the store URL that `--store`
/// reads from `CRONSLOT_STORE`). A job that needs a password of its own
/// sets it in its manifest `env`, which still applies.
pub const WITHHELD_ENV: &[&str] = &["PGPASSWORD", "REDISCLI_AUTH", "CRONSLOT_STORE"];

/// How long stderr is still read after the child exits. A background
/// process it started may hold the pipe open forever; the job is over all
/// the same.
const STDERR_GRACE: Duration = Duration::from_millis(200);

/// Runs one command to its end; the time limit is the caller's (drop the
/// future to stop it: its process group is killed).
pub async fn run(request: CommandRequest) -> Result<Option<String>, JobError> {
    let Some((program, args)) = request.argv.split_first() else {
        return Err(JobError::permanent("the command is empty"));
    };
    let mut command = Command::new(program);
    for name in WITHHELD_ENV {
        command.env_remove(name);
    }
    command
        .args(args)
        .envs(request.env.iter().map(|(k, v)| (k, v)))
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
    let mut tail = StderrTail::default();
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
    judge(&exit_of(status), &tail.text())
}

#[cfg(unix)]
fn exit_of(status: ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(signal)) => Exit::Signal(signal),
        (None, None) => Exit::Other(status.to_string()),
    }
}

#[cfg(not(unix))]
fn exit_of(status: ExitStatus) -> Exit {
    match status.code() {
        Some(code) => Exit::Code(code),
        None => Exit::Other(status.to_string()),
    }
}

/// Reads `source` to its end, keeping the last bytes.
async fn read_into<R: AsyncRead + Unpin>(source: Option<R>, tail: &mut StderrTail) {
    let Some(mut source) = source else { return };
    let mut buf = [0u8; 4096];
    while let Ok(n) = source.read(&mut buf).await {
        if n == 0 {
            return;
        }
        tail.push(&buf[..n]);
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
