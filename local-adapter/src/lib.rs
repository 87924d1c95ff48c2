//! cronslot-local: cronslot on a plain machine (docs/design.md §6, Local).
//!
//! [`SqliteStore`] keeps every job's state record and the effect ledger in
//! one SQLite file, the embedded default store. Several processes may share
//! the file: every conditional write is one `BEGIN IMMEDIATE` transaction,
//! so the core's [`CasCoordinator`](cronslot_core::coord::CasCoordinator)
//! over it gives each slot to exactly one of them.
//!
//! [`Runner`] runs a manifest's jobs on it: command and http jobs from the
//! manifest, Rust functions registered in [`Jobs`] (the runtime's registry,
//! shared by every platform), with N competing
//! workers, heartbeats, structured logs and a [`Summary`] at the end, on
//! the real clock or an accelerated [`Clock`].

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod clock;
pub mod command;
mod http;
pub mod log;
mod platform;
pub mod runner;
mod sqlite;
pub mod summary;
mod worker;

pub use sqlite::{
    DEFAULT_BUSY_TIMEOUT, LocationError, STORE_SCHEMA_VERSION, SqliteStore, parse_sqlite_location,
};

pub use clock::{Clock, MAX_SPEED, SpeedError};
pub use cronslot_runtime::{JobError, JobResult, Jobs, RunContext};
pub use log::{LOG_LEVEL_VAR, LogFormat, LogInitError, init_logging};
pub use platform::LocalPlatform;
pub use runner::{MAX_WORKERS, RunError, Runner, StopHandle};
pub use summary::{JobSummary, Summary};
pub use worker::LocalCoordinator;
