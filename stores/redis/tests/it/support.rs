//! What the tests share: stores on the shared server, each under a fresh
//! prefix, and a runtime to drive them.

use std::future::Future;

use cronslot_core::coord::{CasCoordinator, StoreError};
use cronslot_redis::{JudgeClock, RedisOptions, RedisStore, parse_redis_location_with_env};
use cronslot_tests::redis::{shared, unique};

/// Runs `f` on a fresh current-thread runtime (the store's work happens on
/// its own thread; this one only waits).
pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// The URL of a new prefix on the shared server.
pub fn fresh_url(tag: &str) -> String {
    shared().url(&unique(tag))
}

/// Opens `url`, reading no environment variable (REDISCLI_AUTH must not
/// change a test).
pub async fn open(url: &str, options: RedisOptions) -> Result<RedisStore, StoreError> {
    let location = parse_redis_location_with_env(url, |_| None)
        .unwrap_or_else(|e| panic!("test URL {url}: {e}"));
    RedisStore::connect_with(location, options).await
}

/// A store under a new prefix on the shared server, judging by the
/// caller's clock (virtual time).
pub fn fresh_store(tag: &str) -> RedisStore {
    block_on(open(&fresh_url(tag), RedisOptions::default()))
        .expect("opening a fresh store")
        .judge_by(JudgeClock::Caller)
}

/// The conformance suite's coordinator: a fresh prefix per test.
pub fn conformance_coordinator() -> CasCoordinator<RedisStore> {
    CasCoordinator::new(fresh_store("conf"), 7)
}
