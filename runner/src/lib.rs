//! cronslot-runner: the process runner, for one machine and fleets of
//! servers alike (docs/design.md §6 and §10).
//!
//! [`Runner`] runs a manifest's jobs on any store a process can open
//! ([`RunnerStore`]: SQLite, the embedded default re-exported here as
//! [`SqliteStore`]; PostgreSQL, Redis or DynamoDB for a fleet): command and http jobs from the
//! manifest, Rust functions registered in [`Jobs`] (the runtime's registry,
//! shared by every platform), with N competing
//! workers, heartbeats, structured logs and a [`Summary`] at the end, on
//! the real clock or an accelerated [`Clock`].
//!
//! ```
//! use cronslot_core::manifest::parse_manifest;
//! use cronslot_runner::{Clock, Jobs, Runner, SqliteStore};
//! use jiff::Timestamp;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let manifest = parse_manifest(
//!     r#"
//! [[job]]
//! name = "report"
//! schedule = "* * * * *"
//! "#,
//!     "cronslot.toml",
//! )?;
//! let jobs = Jobs::new().register("report", |ctx| async move {
//!     // The same key for every attempt of a slot: `report@<slot>`.
//!     let key = ctx.idempotency_key();
//!     ctx.effect("send", || async move { Ok(format!("sent {key}")) })
//!         .await?;
//!     Ok(())
//! });
//!
//! // A clock that reads 00:00:30 now and runs 600 times faster than real
//! // time: the slots 00:01, 00:02 and 00:03 pass in about a third of a
//! // real second.
//! let start: Timestamp = "2030-01-01T00:00:30Z".parse()?;
//! let clock = Clock::accelerated_from(start, 600.0)?;
//! let summary = Runner::new(SqliteStore::open_in_memory()?, manifest.jobs, clock)
//!     .with_jobs(jobs)
//!     .until("2030-01-01T00:03:50Z".parse()?)
//!     .run()?;
//!
//! let report = summary.job("report").ok_or("no summary of the job")?;
//! assert_eq!(report.succeeded, 3);
//! assert!(summary.ok(), "{summary}");
//! # Ok(())
//! # }
//! ```

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod clock;
pub mod command;
pub mod health;
mod http;
pub mod log;
mod platform;
mod records_seen;
pub mod runner;
pub mod summary;
mod watch;
mod worker;

/// The embedded default store, the runner's default (`cronslot-sqlite`).
pub use cronslot_sqlite::SqliteStore;

pub use clock::{Clock, MAX_SPEED, SpeedError};
pub use cronslot_runtime::{JobError, JobResult, Jobs, RunContext};
/// The store's wake signal a runner waits on ([`Runner::woken_by`]).
pub use cronslot_stores::WakeSignal;
pub use health::{Health, Verdict};
pub use log::{LOG_LEVEL_VAR, LogFormat, LogInitError, init_logging};
pub use platform::LocalPlatform;
pub use runner::{MAX_WORKERS, RunError, Runner, StopHandle};
pub use summary::{JobSummary, Summary};
pub use worker::{LocalCoordinator, RunnerStore};
