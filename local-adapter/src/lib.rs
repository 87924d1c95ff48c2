//! cronslot-local: cronslot on a plain machine (DESIGN.md §6, Local).
//!
//! [`SqliteStore`] keeps every job's state record and the effect ledger in
//! one SQLite file, the embedded default store. Several processes may share
//! the file: every conditional write is one `BEGIN IMMEDIATE` transaction,
//! so the core's [`CasCoordinator`](cronslot_core::coord::CasCoordinator)
//! over it gives each slot to exactly one of them.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod sqlite;

pub use sqlite::{
    DEFAULT_BUSY_TIMEOUT, LocationError, STORE_SCHEMA_VERSION, SqliteStore, parse_sqlite_location,
};
