//! What a platform lends the runtime: its clock, its timers, its deadline,
//! and the means to send a request or start a process.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use cronslot_core::coord::CoordError;
use jiff::Timestamp;

use crate::JobError;
use crate::command::CommandRequest;
use crate::http::{HttpFailure, HttpRequest, HttpResponse};

/// A boxed future that stays on its thread: a Worker is single-threaded
/// wasm, and the core's futures are not `Send`.
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// The end of the time a platform gives one invocation (a Lambda
/// invocation's deadline). Runs are cut at `cut_runs_at`, so that their
/// outcome can still be recorded before `ends_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformDeadline {
    /// When a running job is stopped.
    pub cut_runs_at: Timestamp,
    /// When the platform stops everything; recording gives up here.
    pub ends_at: Timestamp,
    /// Said in the error of a run it cut, to tell the operator what to
    /// change (for Lambda: raise the function timeout and the lease).
    pub advice: String,
}

/// What a run does on its way, as [`Platform::observe`] is told.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum RunEvent<'a> {
    /// The run's work has ended; its outcome is not recorded yet. (Once it
    /// is, another worker may rightly claim the slot's retry: a watcher
    /// counts the run as finished here.)
    WorkEnded {
        /// The job's record: the job's name, or `job/key` for a slot of a
        /// dynamic job's schedule (two schedules of one job may share an
        /// instant).
        job: &'a str,
        /// The slot's scheduled instant.
        slot: Timestamp,
    },
    /// A heartbeat extended the lease.
    Heartbeat {
        /// The job.
        job: &'a str,
        /// The run's fence.
        fence: u64,
        /// The lease's new expiry.
        expires_at: Timestamp,
    },
    /// A store operation of the run (`"heartbeat"`, `"success"`,
    /// `"failure"`) failed and will be tried again.
    StoreRetry {
        /// The job.
        job: &'a str,
        /// What was being written.
        what: &'a str,
        /// The store's error.
        error: &'a CoordError,
    },
}

/// Everything platform-specific the runtime needs. Each adapter implements
/// it once: the local runner (tokio, reqwest, processes), Lambda (tokio,
/// the AWS SDK's HTTP connector), a Worker (`fetch`, JavaScript timers) and
/// the simulation (a virtual clock).
pub trait Platform {
    /// Names the platform in messages: "the local runner", "Lambda", "a
    /// Worker".
    fn name(&self) -> &'static str;

    /// Now, by the platform's clock (accelerated in a demo, virtual in a
    /// simulation).
    fn now(&self) -> Timestamp;

    /// Resolves after `duration` of the platform's clock.
    fn sleep(&self, duration: Duration) -> LocalFuture<'static, ()>;

    /// The end of the current invocation, when the platform has one.
    fn deadline(&self) -> Option<PlatformDeadline> {
        None
    }

    /// Resolves when running jobs must stop now (a forced shutdown). They
    /// are then recorded as transient failures, so their slots retry.
    /// Never, by default.
    fn stop_now(&self) -> LocalFuture<'static, ()> {
        Box::pin(std::future::pending())
    }

    /// Told what a run does on its way, for hosts that watch runs (the
    /// local runner's duplicate detector and store-error count, the
    /// simulation's model). Nothing, by default.
    fn observe(&self, event: &RunEvent<'_>) {
        let _ = event;
    }

    /// Sends one request of an `http` job and reads at most
    /// [`http::BODY_EXCERPT`](crate::http::BODY_EXCERPT) bytes of a failed
    /// response's body. Redirects must not be followed. The runtime bounds
    /// the exchange by the request's timeout.
    ///
    /// By default the platform sends none: the run fails permanently,
    /// saying so (a test or simulation platform).
    fn send_http(
        &self,
        request: HttpRequest,
    ) -> LocalFuture<'static, Result<HttpResponse, HttpFailure>> {
        let message = format!("{} sends no requests ({})", self.name(), request.url);
        Box::pin(std::future::ready(Err(HttpFailure {
            permanent: true,
            message,
        })))
    }

    /// Whether this platform can start processes (`command` jobs). Lambda's
    /// `provided.al2023` and Workers cannot: such jobs are refused at
    /// start-up ([`Jobs::check`](crate::Jobs::check)).
    fn runs_commands(&self) -> bool {
        false
    }

    /// Runs one `command` job's process (see [`command`](crate::command)
    /// for its rules). `Ok` carries a short result for the job's history.
    fn run_command(
        &self,
        command: CommandRequest,
    ) -> LocalFuture<'static, Result<Option<String>, JobError>> {
        let name = self.name();
        let program = command.argv.first().cloned().unwrap_or_default();
        Box::pin(async move {
            Err(JobError::permanent(format!(
                "command {program:?} cannot run: {name} has no processes"
            )))
        })
    }
}
