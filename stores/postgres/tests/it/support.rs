//! What the tests share: stores on the shared server, each in a fresh
//! schema, and a runtime to drive them.

use std::future::Future;

use cronslot_core::coord::CasCoordinator;
use cronslot_postgres::{JudgeClock, PgOptions, PgStore, parse_postgres_location_with_env};
use cronslot_tests::postgres::{shared, unique};

/// Runs `f` on a fresh current-thread runtime (the store's work happens on
/// its own thread; this one only waits).
pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// The URL of a new schema on the shared server's `postgres` database.
pub fn fresh_url(tag: &str) -> String {
    format!("{}&schema={}", shared().url("postgres"), unique(tag))
}

/// Opens `url`, reading no environment variable (PGPASSWORD and the like
/// must not change a test).
pub async fn open(
    url: &str,
    options: PgOptions,
) -> Result<PgStore, cronslot_core::coord::StoreError> {
    let location = parse_postgres_location_with_env(url, |_| None)
        .unwrap_or_else(|e| panic!("test URL {url}: {e}"));
    PgStore::connect_with(location, options).await
}

/// A store in a new schema on the shared server, judging by the caller's
/// clock (virtual time).
pub fn fresh_store(tag: &str) -> PgStore {
    block_on(open(&fresh_url(tag), PgOptions::default()))
        .expect("opening a fresh store")
        .judge_by(JudgeClock::Caller)
}

/// The conformance suite's coordinator: a fresh schema per test.
pub fn conformance_coordinator() -> CasCoordinator<PgStore> {
    CasCoordinator::new(fresh_store("conf"), 7)
}
