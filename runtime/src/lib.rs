//! cronslot-runtime: what runs a job, written once for every platform.
//!
//! The core decides which slot runs and records its fate; this crate runs
//! it. It holds the one registry of Rust job functions ([`Jobs`]), the one
//! context every job receives ([`RunContext`]), the run loop that turns a
//! claimed lease into a recorded outcome ([`run_lease`], [`serve`]) with
//! one vocabulary of outcomes ([`Outcome`]), and the rules of the jobs a
//! manifest declares without Rust: [`http`] requests and [`command`]s; and
//! the [`admin`] routes (status, metrics, dead letters and the operator's
//! actions over HTTP), which the Worker and `cronslot serve` both answer.
//!
//! Nothing here knows a platform. The clock, sleeping, sending a request
//! and starting a process come in through [`Platform`]; the store comes in
//! as a core [`Coordinator`](cronslot_core::coord::Coordinator). So the
//! same code runs inside a Lambda invocation, inside a Worker isolate, in
//! the local runner and in the deterministic simulation. No tokio, no I/O:
//! it builds for `wasm32-unknown-unknown`.
//!
//! ```
//! use cronslot_runtime::{JobError, Jobs, RunContext};
//!
//! async fn nightly_report(ctx: RunContext) -> Result<(), JobError> {
//!     // The same key for every attempt of this slot.
//!     let key = ctx.idempotency_key();
//!     let stored = ctx
//!         .effect("upload", || async move { Ok(format!("reports/{key}.csv")) })
//!         .await?;
//!     assert!(stored.starts_with("reports/"));
//!     Ok(())
//! }
//!
//! let jobs = Jobs::new().register("nightly-report", nightly_report);
//! assert!(jobs.contains("nightly-report"));
//! ```

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod admin;
#[cfg(feature = "build")]
pub mod build_script;
pub mod command;
mod context;
pub mod http;
mod jobs;
mod outcome;
mod panic;
mod platform;
mod run;
mod tick;
mod virtual_platform;

pub use context::RunContext;
pub use cronslot_core::coord::{JobError, JobResult};
pub use jobs::{Jobs, RegistryError};
pub use outcome::{IdleDetail, Outcome, idle_detail, idle_reason};
pub use platform::{LocalFuture, Platform, PlatformDeadline, RunEvent};
pub use run::{
    MAX_RUNS_PER_TRIGGER, MoreDue, RECORD_RETRY, RunLine, RunReport, ServeOptions, Served,
    run_lease, serve,
};
pub use tick::{
    MARK_REFRESH, MAX_WOKEN_PER_TICK, ScheduleSource, TickJob, TickOptions, TickPlan, TickReport,
    TickServer, TickWork, WokenSchedule, resolve_with, tick, tick_with,
};
pub use virtual_platform::VirtualPlatform;
