//! cronslot-local: cronslot on a plain machine (docs/design.md §6, Local).
//!
//! [`SqliteStore`] keeps every job's state record and the effect ledger in
//! one SQLite file, the embedded default store. Several processes may share
//! the file: every conditional write is one `BEGIN IMMEDIATE` transaction,
//! so the core's [`CasCoordinator`](cronslot_core::coord::CasCoordinator)
//! over it gives each slot to exactly one of them.
//!
//! [`Runner`] runs a manifest's jobs on it: command and http jobs from the
//! manifest, Rust functions registered in [`Jobs`], with N competing
//! workers, heartbeats, structured logs and a [`Summary`] at the end, on
//! the real clock or an accelerated [`Clock`].

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod action;
pub mod clock;
pub mod jobs;
pub mod log;
pub mod runner;
mod sqlite;
pub mod summary;
mod worker;

pub use sqlite::{
    DEFAULT_BUSY_TIMEOUT, LocationError, STORE_SCHEMA_VERSION, SqliteStore, parse_sqlite_location,
};

pub use clock::{Clock, MAX_SPEED, SpeedError};
pub use jobs::{JobCtx, JobError, JobResult, Jobs, LocalCoordinator};
pub use log::{LOG_LEVEL_VAR, LogFormat, LogInitError, init_logging};
pub use runner::{MAX_WORKERS, RunError, Runner, StopHandle};
pub use summary::{JobSummary, Summary};
