//! cronslot-core: the platform-neutral heart of cronslot.
//!
//! No I/O, no clock, no async runtime: time, randomness and storage come in
//! through parameters, so every decision is a pure function that simulation
//! tests can drive. Builds for `wasm32-unknown-unknown`. (The `build`
//! feature's helper reads and writes files, for build scripts only.)

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
pub mod explain;
pub mod health;
pub mod manifest;
pub mod schedule;
pub mod translate;

pub use cron::{Civil, CronError, CronExpr, Dialect, Field};
pub use schedule::{
    DstGap, DstOverlap, DstPolicy, Occurrence, Schedule, SlotKind, Zone, ZoneError,
};
