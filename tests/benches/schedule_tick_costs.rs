//! What a tick costs among 100,000 schedules of a dynamic job (issue 26,
//! "cost follows due work"), on SQLite, PostgreSQL and Redis (the servers
//! started as the tests start them): the tests check the same figures
//! with 10,000 (CI's time), this run with the 100,000. The counts
//! are exact and asserted (`schedule_counts::tick_costs_follow_due_work`):
//! a tick with nothing due costs 2 statements or requests, one with 10
//! due 32. Also printed: how long writing the schedules took, 256 upserts
//! at once from one process.
//!
//! Run with `cargo bench -p cronslot-tests --bench schedule_tick_costs`
//! (`SCHEDULES=N`, default 100,000).

use cronslot_core::coord::exec::block_on;
use cronslot_postgres::JudgeClock;
use cronslot_postgres::PgStore;
use cronslot_redis::RedisStore;
use cronslot_sqlite::SqliteStore;
use cronslot_tests::schedule_counts::{DUE, TickCosts, tick_costs_follow_due_work};

fn report(store: &str, n: usize, costs: TickCosts, unit: &str) {
    let rate = n as f64 / costs.loaded_in.as_secs_f64();
    println!(
        "{store:<9} {n:>7} schedules written in {:>6.1} s ({rate:>6.0}/s); a tick with nothing due: \
         {} {unit}, with {DUE} due: {}",
        costs.loaded_in.as_secs_f64(),
        costs.idle,
        costs.busy
    );
}

fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

fn main() {
    let n: usize = std::env::var("SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let dir = std::env::temp_dir().join(format!("cronslot-bench-ticks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    ok(std::fs::create_dir_all(&dir));

    let sqlite = ok(SqliteStore::open(dir.join("ticks.db")));
    let counter = sqlite.clone();
    let costs = block_on(tick_costs_follow_due_work(
        &sqlite,
        "lite",
        n,
        1,
        move || counter.statements(),
    ));
    report("sqlite", n, costs, "statements");

    let pg = cronslot_tests::postgres::shared();
    let url = pg.url(&pg.fresh_database("bench_ticks"));
    // The ticks run on a virtual clock in 2030: leases are judged by it.
    let store = ok(block_on(PgStore::connect(&url))).judge_by(JudgeClock::Caller);
    let counter = store.clone();
    let costs = block_on(tick_costs_follow_due_work(&store, "pg", n, 0, move || {
        let s = counter.requests();
        s.reads + s.writes
    }));
    report("postgres", n, costs, "requests");

    let redis = cronslot_tests::redis::shared();
    let store =
        ok(block_on(RedisStore::connect(&redis.url("bench-ticks")))).judge_by(JudgeClock::Caller);
    let counter = store.clone();
    let costs = block_on(tick_costs_follow_due_work(
        &store,
        "redis",
        n,
        1,
        move || {
            let s = counter.requests();
            s.reads + s.writes
        },
    ));
    report("redis", n, costs, "requests");
    let _ = std::fs::remove_dir_all(&dir);
}
