//! cronslot-redis: the compare-and-set store and effect ledger of
//! docs/design.md §5 in a Redis server that several servers share.
//!
//! [`RedisStore`] implements the core's [`StateStore`], [`EffectLedger`]
//! and [`TickIndex`] with the semantics of the PostgreSQL store, so the
//! core's [`CasCoordinator`] over it gives each slot to exactly one of the
//! servers sharing the Redis server. This is the seeds' Redis lock done
//! with fences: a claim is a conditional write of the job's whole record
//! (with its fence counter), not a `SET NX PX` lock that a paused holder
//! can outlive.
//!
//! - **Keys.** Under a prefix (`?prefix=NAME`, default `cronslot`), so
//!   deployments can share a server. One job's keys share the hash tag
//!   `{PREFIX:JOB}`: its record (a hash of version and JSON of
//!   [`encode_state`]) and its ledger entries (a hash of revision and
//!   JSON, with an expiry). The deployment's keys share `{PREFIX}`: the
//!   wake index (a sorted set of every job by its wake), the tick mark and
//!   the layout version. A layout written by a newer cronslot is refused.
//! - **Atomicity.** Every write that touches several keys, or must check
//!   before it writes, is one Lua script in one `EVALSHA` (redis-rs's
//!   [`Script`](redis::Script): on `NOSCRIPT` it loads the script and runs
//!   `EVALSHA` again): the record, its version and its wake index entry
//!   together, on condition of the version; a ledger entry and its expiry
//!   on condition of its revision; the tick mark only forward.
//! - **Cost.** A read is one round trip (the record with the server's
//!   `TIME`, pipelined); a write one script. A run costs one read and two
//!   writes (claim, completion); a duplicate delivery one read.
//!   [`RedisStore::requests`] counts them.
//! - **Clock.** Leases are judged by the server's clock
//!   ([`JudgeClock::Server`], `TIME` read in the same round trip as the
//!   record), so servers whose clocks disagree still agree on when a lease
//!   expired; [`RedisStore::clock_offset`] says how far this machine's
//!   clock is off.
//! - **Durability** is the server's: only AOF with `appendfsync always`
//!   keeps an acknowledged claim through a crash, and only `WAIT` keeps it
//!   through a failover to a replica (docs/design.md §10, "Redis").
//! - **Redis Cluster** is not supported: a record's write also writes the
//!   deployment's wake index, in another slot.
//! - **Errors** are the core's kinds, each in one sentence that names the
//!   store (the URL without its password) and says what to do:
//!   unreachable, timed out, loading or read-only is `Unavailable`; a
//!   write whose outcome is unknown (connection lost or timed out after
//!   sending) `Ambiguous`, which the coordinator resolves by reading back;
//!   an undecodable record `Corrupt`; a wrong password or a missing ACL
//!   permission `Other`. No error, log line or `Debug` output holds the
//!   password.
//!
//! ```no_run
//! use cronslot_core::coord::CasCoordinator;
//! use cronslot_redis::RedisStore;
//!
//! # async fn example() -> Result<(), cronslot_core::coord::StoreError> {
//! let store = RedisStore::connect("rediss://:secret@cache.internal:6380/0?prefix=ops").await?;
//! let coordinator = CasCoordinator::new(store.clone(), 7);
//! // … claim, run, complete through `coordinator`.
//! # Ok(())
//! # }
//! ```
//!
//! [`StateStore`]: cronslot_core::coord::StateStore
//! [`EffectLedger`]: cronslot_core::coord::EffectLedger
//! [`TickIndex`]: cronslot_core::coord::TickIndex
//! [`CasCoordinator`]: cronslot_core::coord::CasCoordinator
//! [`encode_state`]: cronslot_core::coord::encode_state

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod conn;
mod durability;
mod error;
mod location;
mod store;
mod time;

pub use cronslot_core::coord::LocationError;
pub use cronslot_store_kit::{DEFAULT_EFFECT_RETENTION, JudgeClock, RequestCounts};
pub use durability::Durability;
pub use location::{
    DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_PORT, DEFAULT_PREFIX,
    DEFAULT_WAIT_TIMEOUT, RedisLocation, RedisRootCerts, parse_redis_location,
    parse_redis_location_with_env,
};
pub use store::{RedisOptions, RedisStore, STORE_LAYOUT_VERSION};
