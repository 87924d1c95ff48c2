//! What a store that opens from a URL says about itself, so that one place
//! (`cronslot-stores`) opens any store from its `--store` URL: adding a
//! store is its crate, which implements [`UrlStore`], and one line there.

use std::fmt;

use cronslot_core::coord::{EffectLedger, LocationError, StateStore, StoreError, TickIndex};
use jiff::{SignedDuration, Timestamp};

use crate::{JudgeClock, WakeSignal};

/// How to open a store, whatever its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    create: bool,
    judge: JudgeClock,
}

impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions {
            create: true,
            judge: JudgeClock::Server,
        }
    }
}

impl OpenOptions {
    /// Whether opening creates what is missing (the SQLite file, the
    /// PostgreSQL schema and tables, the Redis store's mark; the default),
    /// or only checks that it is there, for commands that must not create
    /// an empty store by mistake.
    pub fn create(mut self, create: bool) -> OpenOptions {
        self.create = create;
        self
    }

    /// Whose clock judges leases, where the store has a server clock
    /// ([`JudgeClock::Server`] by default).
    pub fn judge(mut self, judge: JudgeClock) -> OpenOptions {
        self.judge = judge;
        self
    }

    /// See [`OpenOptions::create`].
    pub fn creates(&self) -> bool {
        self.create
    }

    /// See [`OpenOptions::judge`].
    pub fn judge_clock(&self) -> JudgeClock {
        self.judge
    }
}

/// A store that opens from a URL (`sqlite:PATH`, `postgres://…`,
/// `redis://…`, `dynamodb://…`): everything the one opener needs to know.
pub trait UrlStore:
    StateStore + EffectLedger + TickIndex + Clone + Send + Sync + Sized + 'static
{
    /// The store's kind, as `cronslot init --format json` names it
    /// (`sqlite`, `postgres`, …).
    const KIND: &'static str;

    /// The URL schemes it answers to, lower case (`postgres`,
    /// `postgresql`).
    const SCHEMES: &'static [&'static str];

    /// The syntax it takes, for messages (`sqlite:PATH (…)`).
    const SYNTAX: &'static str;

    /// Where the store is. Its `Display` is the store as messages name it,
    /// without a password.
    type Location: Clone + fmt::Display + fmt::Debug + Send + Sync + 'static;

    /// Parses a URL of one of its schemes, reading passwords the URL leaves
    /// out from the environment (`PGPASSWORD`, `REDISCLI_AUTH`).
    fn parse_location(url: &str) -> Result<Self::Location, LocationError>;

    /// Opens the store at `location`.
    async fn open_at(location: &Self::Location, options: OpenOptions) -> Result<Self, StoreError>;

    /// How far the store's server clock is ahead of this machine's, as last
    /// measured; `None` for a store without a server clock, or before the
    /// first read.
    fn clock_offset(&self) -> Option<SignedDuration> {
        None
    }

    /// Whether leases are judged by a server's clock, so that a runner
    /// should time its runs by it too (through [`UrlStore::clock_offset`]).
    fn judges_by_server_clock(&self) -> bool {
        false
    }

    /// Why the server's configuration can lose an acknowledged claim, one
    /// sentence each; empty when it keeps the guarantee or cannot tell.
    async fn durability_warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Deletes expired effect ledger entries, at most `max_batches` batches
    /// of `batch`, for a store that does not expire them itself
    /// (PostgreSQL, SQLite); answers how many it deleted. Stores that
    /// expire entries themselves (Redis, DynamoDB's TTL) delete nothing.
    async fn sweep_expired(
        &self,
        now: Timestamp,
        batch: u32,
        max_batches: u32,
    ) -> Result<u64, StoreError> {
        let _ = (now, batch, max_batches);
        Ok(0)
    }

    /// The store's wake signal ([`WakeSignal`]): it fires when a write
    /// anywhere made a record due now, so that a runner ticks at once
    /// rather than at its next poll. The first call starts the process's
    /// one listener, which later calls (and clones of the store) share.
    /// `None` for a store with no such signal (DynamoDB; an in-memory
    /// SQLite store): its runners keep their poll.
    fn wake_signal(&self) -> Option<WakeSignal> {
        None
    }

    /// Whether [`UrlStore::sweep_expired`] does anything on this store.
    fn sweeps(&self) -> bool {
        false
    }
}
