//! cronslot-core: the platform-neutral heart of cronslot.
//!
//! No I/O, no clock, no async runtime: time, randomness and storage come in
//! through parameters, so every decision is a pure function that simulation
//! tests can drive. Builds for `wasm32-unknown-unknown`. (The `build`
//! feature's helper reads and writes files, for build scripts only.)
//!
//! # Where to start
//!
//! - [`CronExpr::parse`]: a cron expression, and the errors a bad one gets.
//! - [`Schedule::next_after`]: the instants an expression fires at in a
//!   time zone, across DST changes ([`DstPolicy`]).
//! - [`translate::translate`]: the same schedule as an EventBridge Scheduler
//!   or Cloudflare Cron Trigger expression, when one is exact.
//! - [`manifest::parse_manifest`]: a `cronslot.toml` manifest, validated
//!   into [`manifest::JobSpec`]s.
//! - [`coord`]: the per-job state record, the pure transitions over it and
//!   the [`Coordinator`](coord::Coordinator) contract that runners and
//!   stores share.
//! - [`explain::explain`] and [`health::assess`]: descriptions and health
//!   verdicts for status output.
//!
//! # Features
//!
//! - `tzdb` (default): [`Zone::get`] finds any zone of the bundled tz
//!   database by name. Without it only `UTC` is known by name, and other
//!   zones come with a precompiled manifest.
//! - `toml` (default): [`manifest::parse_manifest`]. Without it, manifests
//!   are loaded with [`manifest::load_precompiled`].
//! - `build`: `build_script::precompile_manifest`, for the `build.rs` of a
//!   program that embeds its manifest precompiled.
//! - `conformance`: `conformance`, the test suite every
//!   [`Coordinator`](coord::Coordinator) implementation must pass.

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

#[cfg(feature = "build")]
pub mod build_script;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod coord;
pub mod cron;
pub mod due;
pub mod explain;
pub mod health;
pub mod instant;
pub mod jitter;
pub mod json;
pub mod manifest;
pub mod schedule;
pub mod schedules;
pub mod suggest;
pub mod translate;

pub use cron::{Civil, CronError, CronExpr, Dialect, Field};
pub use schedule::{
    CLOCK_CHANGE_SECONDS, DstGap, DstOverlap, DstPolicy, GapCause, GapSkip, Occurrence, Schedule,
    SlotKind, TzDatabase, Zone, ZoneError,
};
