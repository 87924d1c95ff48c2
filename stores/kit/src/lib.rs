//! cronslot-store-kit: what the stores that talk to a server share, so that
//! each store's crate holds only what is particular to its server.
//!
//! - [`clock`]: whose clock judges a lease ([`JudgeClock`]) and how far the
//!   server's clock is from this machine's ([`ClockOffset`]), measured on
//!   every read.
//! - [`ledger`]: the effect ledger's read-decide-write loop
//!   ([`settle_effect`]) over a store's conditional write of one entry, and
//!   how long a done entry is kept ([`DEFAULT_EFFECT_RETENTION`]).
//! - [`counts`]: the requests a store sent, by kind ([`RequestCounts`]),
//!   which tests and benchmarks count exactly.
//! - [`open`]: what a store that opens from a URL says about itself
//!   ([`UrlStore`]), so that one place opens any store, and how to open it
//!   ([`OpenOptions`]).
//! - [`driver`]: the background thread with its own current-thread tokio
//!   runtime that opens and drives a store's connections ([`Driver`]), so
//!   callers on any runtime (or none) only await answers.
//! - [`wake`]: the signal a store gives its process's runners when a write
//!   made a record due now ([`WakeSignal`]), so that they tick at once.
//!
//! The pieces of a store URL every store parses alike (percent-decoding,
//! user and password, host and port, query parameters, the redacted form)
//! are in the core, which has no I/O: [`cronslot_core::coord::location`].
//! Errors are the core's [`StoreError`](cronslot_core::coord::StoreError),
//! one type for every store.

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![allow(async_fn_in_trait)]

pub mod clock;
pub mod counts;
pub mod driver;
pub mod ledger;
pub mod open;
pub mod wake;

pub use clock::{ClockOffset, JudgeClock};
pub use counts::{Counters, RequestCounts};
pub use driver::Driver;
pub use ledger::{
    DEFAULT_EFFECT_RETENTION, EffectEntry, Entry, MAX_LEDGER_ATTEMPTS, Written, settle_effect,
};
pub use open::{OpenOptions, UrlStore};
pub use wake::{WakeSender, WakeSignal, Woken, listen_until_closed, wake_channel};

/// A duration as messages show it: `5 s`, `1.5 s`.
pub fn seconds(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}
