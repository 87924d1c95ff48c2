//! cronslot-stores: one way to open any store from its URL.
//!
//! [`StoreUrl::parse`] reads a `--store` URL (`sqlite:PATH`, `postgres://…`,
//! `redis://…` or `rediss://…`, `dynamodb://…`) into the location of one
//! store, and [`StoreUrl::open`] opens it as an [`AnyStore`]: one type that
//! implements the core's store contract ([`StateStore`], [`TickIndex`],
//! [`EffectLedger`]) by handing each call to the store it holds, so the
//! core's coordinator and the runner run over it as over any store.
//!
//! Every store here implements the kit's [`UrlStore`], which says its
//! schemes, its syntax, how to parse its URL and how to open it. Adding a
//! store is its crate and one line in the list below (and a feature of the
//! same name, so that a program links only the stores it opens).
//!
//! ```
//! use cronslot_stores::{OpenOptions, StoreUrl};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("cronslot-stores-doc-{}", std::process::id()));
//! let url = StoreUrl::parse(&format!("sqlite:{}/cronslot.db", dir.display()))?;
//! assert_eq!(url.kind(), "sqlite");
//! let store = cronslot_core::coord::exec::block_on(url.open(OpenOptions::default()))?;
//! assert!(store.clock_offset().is_none(), "SQLite judges by the caller's clock");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
// Built with no store (a crate that only names the types, as the runner
// does), every match is empty and every argument unused.
#![cfg_attr(
    not(any(
        feature = "sqlite",
        feature = "postgres",
        feature = "redis",
        feature = "dynamodb"
    )),
    allow(unused)
)]

use std::fmt;
use std::time::Duration;

use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, JobState, LocationError, PutResult,
    RecordWrite, StateStore, StoreError, TickIndex, TickStart, Version, Versioned,
};
pub use cronslot_store_kit::{JudgeClock, OpenOptions, UrlStore, WakeSignal, Woken};
use jiff::{SignedDuration, Timestamp};

/// Declares the stores: for each, its feature, its variant and its type.
/// The location enum, the store enum, parsing by scheme, opening, the
/// contract's delegation and the syntax message all come from this list.
macro_rules! stores {
    ($($feature:literal => $variant:ident($store:ty),)+) => {
        /// Where a store is, parsed from its URL; `Display` names it
        /// without a password.
        #[derive(Debug, Clone)]
        #[non_exhaustive]
        pub enum StoreUrl {
            $(
                #[doc = concat!("A `", $feature, "` store.")]
                #[cfg(feature = $feature)]
                $variant(<$store as UrlStore>::Location),
            )+
        }

        /// An opened store, whatever its kind.
        #[derive(Debug, Clone)]
        #[non_exhaustive]
        pub enum AnyStore {
            $(
                #[doc = concat!("A `", $feature, "` store.")]
                #[cfg(feature = $feature)]
                $variant($store),
            )+
        }

        /// The syntax of every store linked in, for messages.
        fn all_syntaxes() -> Vec<&'static str> {
            vec![$(
                #[cfg(feature = $feature)]
                <$store as UrlStore>::SYNTAX,
            )+]
        }

        /// The schemes of every store linked in.
        fn all_schemes() -> Vec<&'static str> {
            let mut schemes = Vec::new();
            $(
                #[cfg(feature = $feature)]
                schemes.extend_from_slice(<$store as UrlStore>::SCHEMES);
            )+
            schemes
        }

        impl StoreUrl {
            fn parse_scheme(scheme: &str, url: &str) -> Option<Result<StoreUrl, LocationError>> {
                $(
                    #[cfg(feature = $feature)]
                    if <$store as UrlStore>::SCHEMES.contains(&scheme) {
                        return Some(<$store as UrlStore>::parse_location(url).map(StoreUrl::$variant));
                    }
                )+
                None
            }

            /// The store's kind: `sqlite`, `postgres`, `redis`, `dynamodb`.
            pub fn kind(&self) -> &'static str {
                match *self {
                    $(
                        #[cfg(feature = $feature)]
                        StoreUrl::$variant(_) => <$store as UrlStore>::KIND,
                    )+
                }
            }

            /// Opens the store. See [`OpenOptions`] for what it creates and
            /// whose clock judges leases.
            pub async fn open(&self, options: OpenOptions) -> Result<AnyStore, StoreError> {
                match *self {
                    $(
                        #[cfg(feature = $feature)]
                        StoreUrl::$variant(ref location) => Ok(AnyStore::$variant(
                            <$store as UrlStore>::open_at(location, options).await?,
                        )),
                    )+
                }
            }
        }

        impl fmt::Display for StoreUrl {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match *self {
                    $(
                        #[cfg(feature = $feature)]
                        StoreUrl::$variant(ref location) => fmt::Display::fmt(location, f),
                    )+
                }
            }
        }

        /// Runs `$body` with `$s` bound to the store inside, whatever its
        /// type.
        macro_rules! with_store {
            ($any:expr, $s:ident => $body:expr) => {
                match *$any {
                    $(
                        #[cfg(feature = $feature)]
                        AnyStore::$variant(ref $s) => $body,
                    )+
                }
            };
        }
    };
}

stores! {
    "sqlite" => Sqlite(cronslot_sqlite::SqliteStore),
    "postgres" => Postgres(cronslot_postgres::PgStore),
    "redis" => Redis(cronslot_redis::RedisStore),
    "dynamodb" => Dynamo(cronslot_dynamodb::DynamoStore),
}

impl StoreUrl {
    /// Parses a store URL (scheme in any case), reading passwords the URL
    /// leaves out from the environment (`PGPASSWORD`, `REDISCLI_AUTH`).
    /// Touches nothing else.
    pub fn parse(url: &str) -> Result<StoreUrl, LocationError> {
        let trimmed = url.trim();
        let error = |message: String| LocationError {
            input: url.to_string(),
            message,
        };
        let Some((scheme, _)) = trimmed.split_once(':') else {
            let hint = if trimmed.is_empty() {
                String::new()
            } else {
                format!("; did you mean sqlite:{trimmed}?")
            };
            return Err(error(format!(
                "unsupported store URL {url:?} (no scheme); {}{hint}",
                StoreUrl::expected()
            )));
        };
        let scheme = scheme.to_ascii_lowercase();
        StoreUrl::parse_scheme(&scheme, trimmed).unwrap_or_else(|| {
            Err(error(format!(
                "unsupported store URL {url:?} (scheme {scheme:?}); {}",
                StoreUrl::expected()
            )))
        })
    }

    /// The syntax of each store this program links, for messages.
    pub fn syntaxes() -> Vec<&'static str> {
        all_syntaxes()
    }

    /// The URL schemes of the stores this program links, lower case.
    pub fn schemes() -> Vec<&'static str> {
        all_schemes()
    }

    /// What a store URL may be: `expected A, B or C`.
    pub fn expected() -> String {
        let syntaxes = all_syntaxes();
        match syntaxes.split_last() {
            None => "no store is linked into this program".to_string(),
            Some((last, [])) => format!("expected {last}"),
            Some((last, rest)) => format!("expected {} or {last}", rest.join(", ")),
        }
    }
}

impl AnyStore {
    /// The store's kind: `sqlite`, `postgres`, `redis`, `dynamodb`.
    pub fn kind(&self) -> &'static str {
        with_store!(self, s => kind_of(s))
    }

    /// How far the store's server clock is ahead of this machine's, as last
    /// measured; `None` for a store without a server clock, or before the
    /// first read.
    pub fn clock_offset(&self) -> Option<SignedDuration> {
        with_store!(self, s => s.clock_offset())
    }

    /// Whether leases are judged by the store server's clock, so that a
    /// runner should time its runs by it too (through
    /// [`AnyStore::clock_offset`]).
    pub fn judges_by_server_clock(&self) -> bool {
        with_store!(self, s => s.judges_by_server_clock())
    }

    /// The store's wake signal ([`UrlStore::wake_signal`]): it fires when a
    /// write anywhere made a record due now, so that a runner ticks at once
    /// (PostgreSQL's `LISTEN`, Redis's `SUBSCRIBE`, SQLite's watch of
    /// `data_version`); `None` on DynamoDB, whose runners keep their poll.
    pub fn wake_signal(&self) -> Option<WakeSignal> {
        with_store!(self, s => UrlStore::wake_signal(s))
    }

    /// Why the server's configuration can lose an acknowledged claim, one
    /// sentence each (Redis without AOF, say); empty when it keeps the
    /// guarantee.
    pub async fn durability_warnings(&self) -> Vec<String> {
        with_store!(self, s => s.durability_warnings().await)
    }

    /// Whether [`AnyStore::sweep_expired`] deletes anything on this store
    /// (PostgreSQL and SQLite: Redis and DynamoDB expire entries
    /// themselves).
    pub fn sweeps(&self) -> bool {
        with_store!(self, s => s.sweeps())
    }

    /// Deletes expired effect ledger entries: at most `max_batches`
    /// batches of `batch` rows; answers how many.
    pub async fn sweep_expired(
        &self,
        now: Timestamp,
        batch: u32,
        max_batches: u32,
    ) -> Result<u64, StoreError> {
        with_store!(self, s => s.sweep_expired(now, batch, max_batches).await)
    }
}

fn kind_of<S: UrlStore>(_: &S) -> &'static str {
    S::KIND
}

impl StateStore for AnyStore {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        with_store!(self, s => s.get(job).await)
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        with_store!(self, s => s.put(job, state, expected).await)
    }

    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        with_store!(self, s => s.delete(job, expected).await)
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        with_store!(self, s => s.jobs().await)
    }

    async fn records_page(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        with_store!(self, s => s.records_page(prefix, after, limit).await)
    }

    async fn get_judged(
        &self,
        job: &str,
        now: Timestamp,
    ) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
        with_store!(self, s => s.get_judged(job, now).await)
    }

    async fn get_many_judged(
        &self,
        jobs: &[&str],
        now: Timestamp,
    ) -> Result<(Vec<Option<Versioned<JobState>>>, Timestamp), StoreError> {
        with_store!(self, s => s.get_many_judged(jobs, now).await)
    }

    async fn put_many(&self, writes: &[RecordWrite<'_>]) -> Vec<Result<PutResult, StoreError>> {
        with_store!(self, s => s.put_many(writes).await)
    }
}

impl TickIndex for AnyStore {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        with_store!(self, s => s.tick_start(now, limit).await)
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        with_store!(self, s => s.tick_end(mark).await)
    }

    fn leave(&self, planned: &[(&str, Timestamp)], woken: &[&str]) -> bool {
        with_store!(self, s => s.leave(planned, woken))
    }

    fn tick_end_moves_only_the_mark(&self) -> bool {
        with_store!(self, s => s.tick_end_moves_only_the_mark())
    }
}

impl EffectLedger for AnyStore {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        with_store!(self, s => s.begin_effect(key, owner, fence, now, hold).await)
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        with_store!(self, s => s.finish_effect(key, fence, result, now).await)
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        with_store!(self, s => s.read_effect(key).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SQLite store opened by URL sweeps its ledger through the one
    /// dispatch a runner calls.
    #[cfg(feature = "sqlite")]
    #[test]
    fn a_sqlite_store_sweeps_through_the_dispatch() {
        use cronslot_core::coord::EffectLedger;
        use cronslot_core::coord::exec::block_on;
        let dir =
            std::env::temp_dir().join(format!("cronslot-stores-sweep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let url = StoreUrl::parse(&format!("sqlite:{}", dir.join("c.db").display())).unwrap();
        let store = block_on(url.open(OpenOptions::default())).unwrap();
        assert!(store.sweeps());
        let t: Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
        let hold = std::time::Duration::from_secs(60);
        block_on(store.begin_effect("j@s/e", "w", 1, t, hold)).unwrap();
        let later = t.checked_add(jiff::SignedDuration::from_secs(61)).unwrap();
        assert_eq!(block_on(store.sweep_expired(later, 10, 10)).unwrap(), 1);
        assert_eq!(block_on(store.read_effect("j@s/e")).unwrap(), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn parses_by_scheme_and_says_what_it_expects() {
        let url = StoreUrl::parse("SQLite:data/c.db").unwrap();
        assert_eq!(url.kind(), "sqlite");
        assert_eq!(url.to_string(), "sqlite:data/c.db");
        let e = StoreUrl::parse("cronslot.db").unwrap_err();
        assert!(e.message.contains("(no scheme)"), "{e}");
        assert!(
            e.message.ends_with("; did you mean sqlite:cronslot.db?"),
            "{e}"
        );
        let e = StoreUrl::parse("mysql://h/db").unwrap_err();
        assert!(e.message.contains("(scheme \"mysql\")"), "{e}");
        assert!(e.message.contains("expected sqlite:PATH"), "{e}");
    }
}
