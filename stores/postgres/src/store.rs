//! `PgStore`: the compare-and-set store and the effect ledger.

mod group;
mod ledger;
mod records;
mod sql;
mod tick;
mod txn;
mod wake;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use cronslot_core::coord::LocationError;
use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, JobState, PutResult, RecordWrite,
    StateStore, StoreError, TickIndex, TickStart, Version, Versioned, decide_begin, decide_finish,
    decode_state, encode_state, prefix_end,
};
use cronslot_store_kit::{
    DEFAULT_EFFECT_RETENTION, EffectEntry, Entry, JudgeClock, OpenOptions, RequestCounts, UrlStore,
    Written, settle_effect,
};
use jiff::{SignedDuration, Timestamp};
use tokio_postgres::Row;
use tokio_postgres::types::Type;

use crate::error::Phase;
use crate::location::{PgLocation, parse_postgres_location};
use crate::pool::{Conn, Session, Shared};
use crate::schema::{InitReport, ensure, quoted};
use crate::time::PgTime;

use sql::Sql;

/// How many connections a store (all its clones together) opens at most,
/// unless [`PgOptions::max_connections`] says otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4;

/// How a store is opened, beyond its location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    max_connections: usize,
    effect_retention: Duration,
    create: bool,
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            effect_retention: DEFAULT_EFFECT_RETENTION,
            create: true,
        }
    }
}

impl PgOptions {
    /// At most `n` connections (at least 1); [`DEFAULT_MAX_CONNECTIONS`]
    /// by default. A caller waits for a free one up to the connect
    /// timeout.
    pub fn max_connections(mut self, n: usize) -> PgOptions {
        self.max_connections = n.max(1);
        self
    }

    /// Keeps done effects this long before a sweep may delete them
    /// ([`DEFAULT_EFFECT_RETENTION`] by default). Make it longer than any
    /// retry of a slot can come.
    pub fn effect_retention(mut self, retention: Duration) -> PgOptions {
        self.effect_retention = retention;
        self
    }

    /// Whether opening creates the schema and tables when they are missing
    /// (the default), or only checks that they are there (for commands
    /// that must not create an empty store by mistake).
    pub fn create(mut self, create: bool) -> PgOptions {
        self.create = create;
        self
    }
}

/// The PostgreSQL store. Clones share one connection pool and one
/// background thread; its operations may be awaited from any thread and
/// any async runtime.
#[derive(Clone)]
pub struct PgStore {
    shared: Arc<Shared>,
    sql: Arc<Sql>,
    /// Conditional writes waiting to be sent together (store/group.rs).
    writes: Arc<group::Writes>,
    opened: Arc<InitReport>,
    retention: Duration,
    judge: JudgeClock,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.shared.location)
            .field("judge", &self.judge)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Opens the store at `url` ([`parse_postgres_location`]) with the
    /// default [`PgOptions`]: connects once, and creates the schema and
    /// tables if they are missing.
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        let location = parse_postgres_location(url).map_err(|e| StoreError::other(e.message))?;
        PgStore::connect_with(location, PgOptions::default()).await
    }

    /// Opens the store at `location`: starts its background thread,
    /// connects once, and creates the schema and tables if missing (unless
    /// `options` says not to), or checks their version. Fails, with nothing
    /// written, on a schema from a newer cronslot.
    pub async fn connect_with(
        location: PgLocation,
        options: PgOptions,
    ) -> Result<PgStore, StoreError> {
        let schema = location.schema().to_string();
        let shared = Arc::new(Shared::new(location, options.max_connections)?);
        let create = options.create;
        let task = {
            let shared = shared.clone();
            async move {
                let mut conn = shared.checkout().await?;
                ensure(&mut conn, &schema, create).await
            }
        };
        let opened = shared.driver.run(task).await?;
        Ok(PgStore {
            sql: Arc::new(Sql::new(shared.location.schema())),
            shared,
            writes: Arc::default(),
            opened: Arc::new(opened),
            retention: options.effect_retention,
            judge: JudgeClock::default(),
        })
    }

    /// This handle (and its later clones) judges leases by `clock`
    /// ([`JudgeClock::Server`] by default).
    pub fn judge_by(mut self, clock: JudgeClock) -> PgStore {
        self.judge = clock;
        self
    }

    /// The clock this handle judges leases by.
    pub fn judge_clock(&self) -> JudgeClock {
        self.judge
    }

    /// Where the store is (shown without its password).
    pub fn location(&self) -> &PgLocation {
        &self.shared.location
    }

    /// What opening found and did to the schema.
    pub fn opened(&self) -> &InitReport {
        &self.opened
    }

    /// Creates the schema and tables if they are missing, or reports them
    /// already there. Idempotent, and safe while other processes do the
    /// same: creation runs under a lock in one transaction. Refuses a
    /// schema from a newer cronslot.
    pub async fn init(&self) -> Result<InitReport, StoreError> {
        let shared = self.shared.clone();
        self.shared
            .driver
            .run(async move {
                let schema = shared.location.schema().to_string();
                let mut conn = shared.checkout().await?;
                ensure(&mut conn, &schema, true).await
            })
            .await
    }

    /// Requests (statements) sent so far by this store and its clones, by
    /// kind.
    pub fn requests(&self) -> RequestCounts {
        self.shared.counts.snapshot()
    }

    /// How far the database server's clock is ahead of this machine's
    /// (negative: behind), as measured by the last read of a record: the
    /// server's `clock_timestamp()` minus the midpoint of the round trip
    /// on this machine's clock. `None` before the first read.
    pub fn clock_offset(&self) -> Option<SignedDuration> {
        self.shared.offset.get()
    }
}

fn unexpected(conn: &impl Session, doing: &(dyn Fn() -> String + Sync)) -> StoreError {
    StoreError::other(format!(
        "PostgreSQL store {}: {}: the server answered with no row: this is a bug",
        conn.store(),
        doing()
    ))
}

impl UrlStore for PgStore {
    const KIND: &'static str = "postgres";
    const SCHEMES: &'static [&'static str] = &["postgres", "postgresql"];
    const SYNTAX: &'static str = "postgres://USER@HOST[:PORT]/DB[?sslmode=MODE&schema=NAME]";
    type Location = PgLocation;

    fn parse_location(url: &str) -> Result<PgLocation, LocationError> {
        parse_postgres_location(url)
    }

    async fn open_at(location: &PgLocation, options: OpenOptions) -> Result<Self, StoreError> {
        let store = PgStore::connect_with(
            location.clone(),
            PgOptions::default().create(options.creates()),
        )
        .await?;
        Ok(store.judge_by(options.judge_clock()))
    }

    fn clock_offset(&self) -> Option<SignedDuration> {
        PgStore::clock_offset(self)
    }

    fn judges_by_server_clock(&self) -> bool {
        self.judge == JudgeClock::Server
    }

    async fn sweep_expired(
        &self,
        now: Timestamp,
        batch: u32,
        max_batches: u32,
    ) -> Result<u64, StoreError> {
        PgStore::sweep_expired(self, now, batch, max_batches).await
    }

    fn sweeps(&self) -> bool {
        true
    }

    fn wake_signal(&self) -> Option<cronslot_store_kit::WakeSignal> {
        Some(PgStore::wake_signal(self))
    }
}
