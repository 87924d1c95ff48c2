//! `RedisStore`: the compare-and-set store, the effect ledger and the tick
//! index.

mod keys;
mod ledger;
mod records;
mod replicas;
mod scripts;
mod tick;
mod wake;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, EffectState, JobState, PutResult,
    StateStore, StoreError, TickIndex, TickStart, Version, Versioned, decide_begin, decide_finish,
    decode_state, encode_state, prefix_end,
};
use jiff::Timestamp;
use redis::Script;
use redis::aio::MultiplexedConnection;

use crate::conn::Shared;
use crate::error::Phase;
use crate::location::{RedisLocation, parse_redis_location};
use crate::time::{from_micros, from_time_reply, micros};
use cronslot_core::coord::LocationError;
use cronslot_store_kit::{
    DEFAULT_EFFECT_RETENTION, EffectEntry, Entry, JudgeClock, OpenOptions, RequestCounts, UrlStore,
    Written, seconds, settle_effect,
};

use keys::Keys;
use replicas::Replicas;
use scripts::Scripts;

/// The layout of the store's keys that this cronslot writes (kept in the
/// key `{PREFIX}:layout`). A store written by a newer layout is refused.
/// Layout 2 added the name index ([`Keys::names`]); opening a store of
/// layout 1 adds it, in one script, and marks the store layout 2, which
/// a cronslot of layout 1 then refuses to open.
pub const STORE_LAYOUT_VERSION: u32 = 2;

/// How a store is opened, beyond its location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    effect_retention: Duration,
    create: bool,
}

impl Default for RedisOptions {
    fn default() -> RedisOptions {
        RedisOptions {
            effect_retention: DEFAULT_EFFECT_RETENTION,
            create: true,
        }
    }
}

impl RedisOptions {
    /// Keeps done effects this long ([`DEFAULT_EFFECT_RETENTION`] by
    /// default): a done entry expires this long after it was written, an
    /// entry in progress this long after its hold lapses. Make it longer
    /// than any retry of a slot can come. At least a millisecond.
    pub fn effect_retention(mut self, retention: Duration) -> RedisOptions {
        self.effect_retention = retention.max(Duration::from_millis(1));
        self
    }

    /// Whether opening marks an empty prefix as a store (the default), or
    /// only checks that a store is there (for commands that must not
    /// start an empty store by mistake).
    pub fn create(mut self, create: bool) -> RedisOptions {
        self.create = create;
        self
    }
}

/// The Redis store. Clones share one connection and one background
/// thread; its operations may be awaited from any thread and any async
/// runtime.
#[derive(Clone)]
pub struct RedisStore {
    shared: Arc<Shared>,
    keys: Arc<Keys>,
    scripts: Arc<Scripts>,
    retention: Duration,
    judge: JudgeClock,
    /// Whether opening found no store under the prefix and marked one.
    created: bool,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("location", &self.shared.location)
            .field("judge", &self.judge)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Opens the store at `url` ([`parse_redis_location`]) with the
    /// default [`RedisOptions`].
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        let location = parse_redis_location(url).map_err(|e| StoreError::other(e.message))?;
        RedisStore::connect_with(location, RedisOptions::default()).await
    }

    /// Opens the store at `location`: starts its background thread,
    /// connects once, and checks the layout of the keys under the prefix
    /// (marking an empty prefix as a store unless `options` says not to).
    /// Fails, with nothing written, on a layout from a newer cronslot.
    pub async fn connect_with(
        location: RedisLocation,
        options: RedisOptions,
    ) -> Result<RedisStore, StoreError> {
        let store = RedisStore {
            keys: Arc::new(Keys {
                prefix: location.prefix().to_string(),
            }),
            shared: Arc::new(Shared::new(location)?),
            scripts: Arc::new(Scripts::new()),
            retention: options.effect_retention,
            judge: JudgeClock::Server,
            created: false,
        };
        let created = store.check_layout(options.create).await?;
        Ok(RedisStore { created, ..store })
    }

    /// The same store, judging leases by `judge`.
    pub fn judge_by(mut self, judge: JudgeClock) -> RedisStore {
        self.judge = judge;
        self
    }

    /// Whether opening found no store under the prefix and marked one
    /// (`cronslot init` says "created"); false when it was there.
    pub fn created(&self) -> bool {
        self.created
    }

    /// Whose clock judges leases.
    pub fn judge_clock(&self) -> JudgeClock {
        self.judge
    }

    /// The store's location (shown without its password).
    pub fn location(&self) -> &RedisLocation {
        &self.shared.location
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Requests (commands, pipelines, scripts) sent so far by this store
    /// and its clones, by kind.
    pub fn requests(&self) -> RequestCounts {
        self.shared.counts.snapshot()
    }

    /// How far the Redis server's clock is ahead of this machine's
    /// (negative: behind), as measured by the last read of a record: the
    /// server's `TIME` minus the midpoint of the round trip on this
    /// machine's clock. `None` before the first read.
    pub fn clock_offset(&self) -> Option<jiff::SignedDuration> {
        self.shared.offset.get()
    }

    /// Checks the layout of the keys under the prefix, marking an empty
    /// prefix as a store when `create`; answers whether it did.
    async fn check_layout(&self, create: bool) -> Result<bool, StoreError> {
        let (shared, scripts, key) = (
            self.shared.clone(),
            self.scripts.clone(),
            self.keys.layout(),
        );
        let (wakes, names) = (self.keys.wakes(), self.keys.names());
        self.shared
            .driver
            .run(async move {
                let doing = || "checking the store's layout".to_string();
                let (layout_key, wakes, names) = (&key, &wakes, &names);
                let (found, created): (String, String) = shared
                    .request(Phase::Write, true, &doing, |mut conn| async move {
                        scripts
                            .layout
                            .key(layout_key)
                            .key(wakes)
                            .key(names)
                            .arg(STORE_LAYOUT_VERSION)
                            .arg(if create { "1" } else { "0" })
                            .invoke_async(&mut conn)
                            .await
                    })
                    .await?;
                if found.is_empty() {
                    return Err(StoreError::other(format!(
                        "Redis store {}: no store under this prefix (no key {key}): \
                         `cronslot init` (or `cronslot run`) creates one; or check the database \
                         number and the prefix",
                        shared.shown
                    )));
                }
                match found.parse::<u32>() {
                    Ok(v) if v <= STORE_LAYOUT_VERSION => Ok(created == "1"),
                    Ok(v) => Err(StoreError::other(format!(
                        "Redis store {}: the keys under this prefix have layout {v}, written by \
                         a newer cronslot (this one knows layout {STORE_LAYOUT_VERSION}): \
                         upgrade cronslot",
                        shared.shown
                    ))),
                    Err(_) => Err(StoreError::corrupt(format!(
                        "Redis store {}: the key {key} holds {found:?}, not a layout version: \
                         another program writes under this prefix; give the store a prefix of \
                         its own",
                        shared.shown
                    ))),
                }
            })
            .await
    }
}

impl UrlStore for RedisStore {
    const KIND: &'static str = "redis";
    const SCHEMES: &'static [&'static str] = &["redis", "rediss"];
    const SYNTAX: &'static str =
        "redis://[USER:PASSWORD@]HOST[:PORT]/DB[?prefix=NAME] (or rediss://)";
    type Location = RedisLocation;

    fn parse_location(url: &str) -> Result<RedisLocation, LocationError> {
        parse_redis_location(url)
    }

    async fn open_at(location: &RedisLocation, options: OpenOptions) -> Result<Self, StoreError> {
        let store = RedisStore::connect_with(
            location.clone(),
            RedisOptions::default().create(options.creates()),
        )
        .await?;
        Ok(store.judge_by(options.judge_clock()))
    }

    fn clock_offset(&self) -> Option<jiff::SignedDuration> {
        RedisStore::clock_offset(self)
    }

    fn judges_by_server_clock(&self) -> bool {
        self.judge == JudgeClock::Server
    }

    async fn durability_warnings(&self) -> Vec<String> {
        self.durability().await.warnings()
    }

    fn wake_signal(&self) -> Option<cronslot_store_kit::WakeSignal> {
        Some(RedisStore::wake_signal(self))
    }
}
