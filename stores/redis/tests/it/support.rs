//! What the tests share: the store's [`Harness`] for the shared server
//! tests (`cronslot_tests::server_store`), stores on the shared server,
//! each under a fresh prefix, and a runtime to drive them.

use cronslot_core::coord::{CasCoordinator, LocationError, StoreError};
use cronslot_redis::{
    JudgeClock, RedisLocation, RedisOptions, RedisStore, RequestCounts,
    parse_redis_location_with_env,
};
use cronslot_tests::redis::{shared, unique};
use cronslot_tests::server_store::{self, Harness};

pub use cronslot_tests::server_store::block_on;

/// Redis, for the tests every server store runs.
pub struct Redis;

impl Harness for Redis {
    type Store = RedisStore;
    const NS: &'static str = "redis";
    const WOKEN_READ: u64 = 1;

    fn fresh_url(tag: &str) -> String {
        fresh_url(tag)
    }

    fn parse_with_env(
        url: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<RedisLocation, LocationError> {
        parse_redis_location_with_env(url, env)
    }

    async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        RedisStore::connect(url).await
    }

    fn requests(store: &RedisStore) -> RequestCounts {
        store.requests()
    }

    fn judge_by(store: RedisStore, judge: JudgeClock) -> RedisStore {
        store.judge_by(judge)
    }
}

/// The URL of a new prefix on the shared server.
pub fn fresh_url(tag: &str) -> String {
    shared().url(&unique(tag))
}

/// Opens `url` with the store's own options, reading no environment
/// variable (REDISCLI_AUTH must not change a test).
pub async fn open(url: &str, options: RedisOptions) -> Result<RedisStore, StoreError> {
    let location = parse_redis_location_with_env(url, |_| None)
        .unwrap_or_else(|e| panic!("test URL {url}: {e}"));
    RedisStore::connect_with(location, options).await
}

/// A store under a new prefix on the shared server, judging by the
/// caller's clock (virtual time).
pub fn fresh_store(tag: &str) -> RedisStore {
    server_store::fresh_store::<Redis>(tag)
}

/// The conformance suite's coordinator: a fresh prefix per test.
pub fn conformance_coordinator() -> CasCoordinator<RedisStore> {
    CasCoordinator::new(fresh_store("conf"), 7)
}
