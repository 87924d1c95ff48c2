//! The Lambda entry: EventBridge (Scheduler or Rules) invokes one function,
//! which claims the slot in the store, runs the job, and records the
//! outcome with the claim's fence.
//!
//! ```no_run
//! use cronslot_aws::lambda::{JobError, Jobs, ManifestSource};
//!
//! fn main() -> Result<(), cronslot_aws::lambda::Error> {
//!     let jobs = Jobs::new().register("nightly-report", |ctx| async move {
//!         println!("building the report for {}", ctx.idempotency_key());
//!         Ok::<(), JobError>(())
//!     });
//!     cronslot_aws::run(jobs, ManifestSource::embedded("cronslot.toml", "…"))
//! }
//! ```
//!
//! # Events
//!
//! **EventBridge Scheduler** (a dedicated job's schedule; infra renders the
//! target input from this template):
//!
//! ```json
//! {"cronslot": {"job": "nightly-report",
//!               "scheduled_time": "<aws.scheduler.scheduled-time>",
//!               "execution_id": "<aws.scheduler.execution-id>",
//!               "attempt": "<aws.scheduler.attempt-number>"}}
//! ```
//!
//! `job` and `scheduled_time` (RFC 3339) are required; `execution_id`,
//! `attempt` (text or number) and `schedule_arn`
//! (`<aws.scheduler.schedule-arn>`) are optional and only logged. The time
//! must be exactly a slot of the job's schedule.
//!
//! **EventBridge Rule** (the Scheduled Event envelope, sent as is):
//!
//! ```json
//! {"version": "0", "id": "…", "detail-type": "Scheduled Event",
//!  "source": "aws.events", "account": "…", "time": "2026-03-08T14:00:00Z",
//!  "region": "us-east-1",
//!  "resources": ["arn:aws:events:us-east-1:123456789012:rule/cronslot-nightly-report"],
//!  "detail": {}}
//! ```
//!
//! The job is `detail.job` when present, otherwise the rule's name: a rule
//! named `cronslot-<job>` triggers that job, `cronslot-tick` is the tick.
//! `time` is cut to the minute (rule schedules have minute granularity) and
//! must then be a slot of the job.
//!
//! **Tick** (serves every job with `trigger = "tick"`): the Scheduler input
//! `{"cronslot": {"tick": true, "scheduled_time": "<aws.scheduler.scheduled-time>"}}`,
//! a Rule named `cronslot-tick`, or a Rule event whose `detail` is
//! `{"tick": true}`.
//!
//! Decoding is strict: an unknown key in `cronslot` or `detail` is an error
//! (a typo in a template must not turn into a silently ignored field).
//!
//! # Jobs
//!
//! A function job is registered by name with [`Jobs::register`] and gets an
//! owned [`RunContext`] (idempotency key, fence, attempt, deadlines, effect
//! ledger: the runtime's, the same on every platform); it fails with
//! [`JobError::transient`] (retried) or [`JobError::permanent`] (dead
//! letter), and a panic counts as a transient failure (a crashed run). `http` jobs need no Rust: the function sends the request (see
//! [`http`]). `command` jobs are refused when the function starts:
//! `provided.al2023` has no tools a command could rely on. The function
//! starts only if every function job of the manifest is registered, and
//! nothing else is.
//!
//! # Outcomes
//!
//! The function succeeds when every claimed slot ran and was recorded, and
//! when there was nothing to do: a duplicate delivery of a slot that is
//! resolved or running returns success without running or writing. Every
//! other outcome is an error with a distinct Lambda `errorType` (see
//! [`ErrorKind`]): a failed run (after its retry was recorded) returns
//! `cronslot.RunFailed`, so Lambda's asynchronous retry re-delivers the
//! event, and the re-delivery claims the retry once its backoff has passed
//! (an earlier one gets `cronslot.RetryLater`). Lambda retries an
//! asynchronous invocation twice by default, one and two minutes apart: for
//! a dedicated job that bounds its useful `max_attempts` to 3 and its
//! `backoff` to about a minute. Tick-mode jobs retry on the next tick.
//!
//! Invalid events and misconfigurations are errors too, never a silent
//! success; see [`error`] for why they cannot be made "not retried" and
//! what makes them stand out instead.
//!
//! # Leases and time
//!
//! A run cannot heartbeat inside Lambda, so each job's lease must cover the
//! invocation: an invocation refuses (`cronslot.Misconfigured`, before any
//! claim) a job whose lease is shorter than the time left at invocation
//! plus the job's skew margin. A run is cut one second ([`RESERVE`]) before
//! the deadline and recorded as a transient failure. After a dedicated
//! slot's run, the job's further due slots (`catch_up = "all"`, pending
//! retries) run in the same invocation while the time left exceeds the
//! longest run so far plus [`CATCH_UP_MARGIN`].

// Events come from outside: nothing here may panic on them.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod error;
pub mod event;
mod handler;
pub mod http;
mod init;
pub mod log;
pub mod metrics;
mod observe;
mod platform;
#[cfg(feature = "lambda")]
mod runtime;

pub use cronslot_runtime::{JobError, Jobs, LocalFuture, RunContext};
pub use error::{ErrorKind, HandlerError};
pub use handler::{CATCH_UP_MARGIN, Handler, Host, Invocation, MAX_RUNS, StoreFactory};
pub use init::{ENDPOINT_ENV, InitError, MANIFEST_ENV, ManifestSource, TABLE_ENV, check};
pub use observe::{FateWatcher, Fates, Observed};
pub use platform::{Clock, RESERVE};
#[cfg(feature = "lambda")]
pub use runtime::{Error, run, serve};
