//! What the tests share: the store's [`Harness`] for the shared server
//! tests (`cronslot_tests::server_store`), stores on the shared server,
//! each in a fresh schema, and a runtime to drive them.

use cronslot_core::coord::{CasCoordinator, LocationError, StoreError};
use cronslot_postgres::{
    PgLocation, PgOptions, PgStore, RequestCounts, parse_postgres_location_with_env,
};
use cronslot_tests::postgres::{shared, unique};
use cronslot_tests::server_store::{self, Harness};

pub use cronslot_tests::server_store::block_on;

/// PostgreSQL, for the tests every server store runs.
pub struct Pg;

impl Harness for Pg {
    type Store = PgStore;
    const NS: &'static str = "pg";
    const WOKEN_READ: u64 = 0;

    fn fresh_url(tag: &str) -> String {
        fresh_url(tag)
    }

    fn parse_with_env(
        url: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<PgLocation, LocationError> {
        parse_postgres_location_with_env(url, env)
    }

    async fn connect(url: &str) -> Result<PgStore, StoreError> {
        PgStore::connect(url).await
    }

    fn requests(store: &PgStore) -> RequestCounts {
        store.requests()
    }

    fn judge_by(store: PgStore, judge: cronslot_postgres::JudgeClock) -> PgStore {
        store.judge_by(judge)
    }
}

/// The URL of a new schema on the shared server's `postgres` database.
pub fn fresh_url(tag: &str) -> String {
    format!("{}&schema={}", shared().url("postgres"), unique(tag))
}

/// Opens `url` with the store's own options, reading no environment
/// variable (PGPASSWORD and the like must not change a test).
pub async fn open(url: &str, options: PgOptions) -> Result<PgStore, StoreError> {
    let location = parse_postgres_location_with_env(url, |_| None)
        .unwrap_or_else(|e| panic!("test URL {url}: {e}"));
    PgStore::connect_with(location, options).await
}

/// A store in a new schema on the shared server, judging by the caller's
/// clock (virtual time).
pub fn fresh_store(tag: &str) -> PgStore {
    server_store::fresh_store::<Pg>(tag)
}

/// The conformance suite's coordinator: a fresh schema per test.
pub fn conformance_coordinator() -> CasCoordinator<PgStore> {
    CasCoordinator::new(fresh_store("conf"), 7)
}
