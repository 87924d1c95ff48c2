//! cronslot-postgres: the compare-and-set store and effect ledger of
//! docs/design.md §5 in a PostgreSQL database that several servers share.
//!
//! [`PgStore`] implements the core's [`StateStore`] and [`EffectLedger`]
//! with the semantics of the SQLite store, so the core's
//! [`CasCoordinator`] over it gives each slot to exactly one of the
//! servers sharing the database.
//!
//! - **Records.** One row per job in `job_state` (job, version, the JSON of
//!   [`encode_state`], updated_at); one row per effect in `effects` (key,
//!   rev, the JSON of the entry, expires_at: when a sweep may delete it).
//!   Both live under a PostgreSQL schema (`?schema=NAME`, default
//!   `cronslot`), so deployments can share a database; the schema and its
//!   tables are created on first use (or by [`PgStore::init`]) and carry a
//!   `schema_migrations` table. A schema written by a newer cronslot is
//!   refused.
//! - **Cost.** Every operation is one statement in one round trip: a read
//!   returns the record with the server's clock; a write is `UPDATE …
//!   WHERE version = $expected` (or `INSERT … ON CONFLICT DO NOTHING`) that
//!   hands back the current record in the same statement when it loses. A
//!   run costs one read and two writes (claim, completion); a duplicate
//!   delivery one read. [`PgStore::requests`] counts them.
//! - **Clock.** Leases are judged by the database's clock
//!   ([`JudgeClock::Server`], read in the same statement as the record),
//!   so servers whose clocks disagree still agree on when a lease expired;
//!   [`PgStore::clock_offset`] says how far this machine's clock is off.
//! - **Threads.** The store owns a small background thread with its own
//!   tokio runtime, where connections are made and driven; clones share it
//!   and its connection pool, and callers on any runtime (or none) await
//!   answers.
//! - **Your transactions.** [`PgStore::enqueue_run_in`] enqueues a keyed
//!   run inside the application's own `tokio_postgres` transaction (this
//!   crate re-exports [`tokio_postgres`]): one read and at most one write,
//!   the store's own statements, and the run exists if and only if the
//!   transaction commits (docs/guide/runs-in-a-transaction.md).
//! - **Errors** are the core's kinds, each in one sentence that names the
//!   store (the URL without its password) and says what to do: unreachable,
//!   timed out or a serialization failure is `Unavailable`; a write whose
//!   outcome is unknown (connection lost after sending) `Ambiguous`, which
//!   the coordinator resolves by reading back; an undecodable record
//!   `Corrupt`; wrong password, missing privilege, a newer schema `Other`.
//!   No error, log line or `Debug` output holds the password.
//!
//! ```no_run
//! use cronslot_core::coord::CasCoordinator;
//! use cronslot_postgres::PgStore;
//!
//! # async fn example() -> Result<(), cronslot_core::coord::StoreError> {
//! let store = PgStore::connect("postgres://cronslot@db.internal/ops?sslmode=verify-full").await?;
//! let coordinator = CasCoordinator::new(store.clone(), 7);
//! // … claim, run, complete through `coordinator`; now and then:
//! store.sweep_effects(jiff::Timestamp::now(), 1000).await?;
//! # Ok(())
//! # }
//! ```
//!
//! [`StateStore`]: cronslot_core::coord::StateStore
//! [`EffectLedger`]: cronslot_core::coord::EffectLedger
//! [`CasCoordinator`]: cronslot_core::coord::CasCoordinator
//! [`encode_state`]: cronslot_core::coord::encode_state

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod error;
mod location;
mod pool;
mod schema;
mod store;
mod time;
mod tls;

pub use cronslot_core::coord::LocationError;
pub use cronslot_store_kit::{DEFAULT_EFFECT_RETENTION, JudgeClock, RequestCounts};
pub use location::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_PORT, DEFAULT_SCHEMA, DEFAULT_STATEMENT_TIMEOUT, PgHost,
    PgLocation, RootCerts, SslMode, parse_postgres_location, parse_postgres_location_with_env,
};
pub use schema::{InitReport, STORE_SCHEMA_VERSION};
pub use store::{DEFAULT_MAX_CONNECTIONS, PgOptions, PgStore};
/// The client this store is built on: an application that enqueues runs
/// in its own transactions ([`PgStore::enqueue_run_in`]) uses this one, so
/// that its `Transaction` is the type the store takes.
pub use tokio_postgres;
