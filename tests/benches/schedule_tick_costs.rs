//! What a tick costs among many schedules of a dynamic job (issues 26 and
//! 28, "cost follows due work"), on SQLite, PostgreSQL and Redis (the
//! servers started as the tests start them): the tests check the same
//! figures with 10,000 (CI's time), this run with `SCHEDULES` (default
//! 1,000,000) and, beside it, with 10. The counts are exact and asserted
//! (`schedule_counts::tick_costs_follow_due_work`): a tick with nothing due
//! costs 2 statements or requests whatever the number of schedules, one
//! with 10 due 32 (22 on PostgreSQL). Also printed: how long writing the
//! schedules took (in bulk, 1,000 a request), and how long the idle tick
//! took with `SCHEDULES` and with 10.
//!
//! Then the runner's memory (`RSS=1`, the default): a runner process on
//! the SQLite store of 10 schedules and on the one of `SCHEDULES`, ticking
//! with nothing due for 20 s, reports its peak resident set (`VmHWM`).
//!
//! Run with `cargo bench -p cronslot-tests --bench schedule_tick_costs`.

use std::process::Command;

use cronslot_core::coord::exec::block_on;
use cronslot_core::manifest::parse_manifest;
use cronslot_postgres::JudgeClock;
use cronslot_postgres::PgStore;
use cronslot_redis::RedisStore;
use cronslot_runner::{Clock, Runner};
use cronslot_sqlite::SqliteStore;
use cronslot_tests::schedule_counts::{DUE, TickCosts, tick_costs_follow_due_work};

fn report(store: &str, n: usize, costs: TickCosts, few: TickCosts, unit: &str) {
    let rate = n as f64 / costs.loaded_in.as_secs_f64();
    println!(
        "{store:<9} {n:>8} schedules written in {:>6.1} s ({rate:>7.0}/s); a tick with nothing \
         due: {} {unit} in {:.2} ms (with {DUE} schedules: {} {unit} in {:.2} ms); with {DUE} due: {}",
        costs.loaded_in.as_secs_f64(),
        costs.idle,
        costs.idle_time.as_secs_f64() * 1e3,
        few.idle,
        few.idle_time.as_secs_f64() * 1e3,
        costs.busy
    );
}

fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

const RSS_CHILD: &str = "CRONSLOT_BENCH_RSS_DB";

/// The child: a runner on the SQLite file for 20 s (nothing is due: the
/// schedules' slots are in 2030), then its peak resident set.
fn rss_child(path: &str) {
    let text = "[[job]]\nname = \"lite-many\"\ndynamic = true\nlease = \"5m\"\n";
    let template = ok(parse_manifest(text, "many.toml")).templates.remove(0);
    let store = ok(SqliteStore::open(path));
    let jobs = cronslot_runner::Jobs::new().register("lite-many", |_| async { Ok(()) });
    let runner = Runner::new(store, Vec::new(), Clock::real())
        .with_templates(vec![template])
        .with_jobs(jobs)
        .until(jiff::Timestamp::now() + jiff::SignedDuration::from_secs(20));
    let summary = ok(runner.run());
    assert!(summary.ok(), "{summary}");
    let status = ok(std::fs::read_to_string("/proc/self/status"));
    let peak = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .unwrap_or("VmHWM: ?");
    println!("{peak}");
}

fn rss_of(path: &std::path::Path) -> String {
    let out = ok(Command::new(ok(std::env::current_exe()))
        .env(RSS_CHILD, path)
        .output());
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .map(|l| l.trim_start_matches("VmHWM:").trim().to_string())
        .unwrap_or_default()
}

fn main() {
    if let Ok(path) = std::env::var(RSS_CHILD) {
        rss_child(&path);
        return;
    }
    let n: usize = std::env::var("SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::env::temp_dir().join(format!("cronslot-bench-ticks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    ok(std::fs::create_dir_all(&dir));

    let sqlite_costs = |file: &str, count: usize| {
        let sqlite = ok(SqliteStore::open(dir.join(file)));
        let counter = sqlite.clone();
        block_on(tick_costs_follow_due_work(
            &sqlite,
            "lite",
            count,
            1,
            move || counter.statements(),
        ))
    };
    let (many, few) = (sqlite_costs("many.db", n), sqlite_costs("few.db", DUE));
    report("sqlite", n, many, few, "statements");

    let pg = cronslot_tests::postgres::shared();
    let pg_costs = |tag: &str, count: usize| {
        let url = pg.url(&pg.fresh_database(tag));
        // The ticks run on a virtual clock in 2030: leases are judged by it.
        let store = ok(block_on(PgStore::connect(&url))).judge_by(JudgeClock::Caller);
        let counter = store.clone();
        block_on(tick_costs_follow_due_work(
            &store,
            "pg",
            count,
            0,
            move || {
                let s = counter.requests();
                s.reads + s.writes
            },
        ))
    };
    let (many, few) = (pg_costs("bench_ticks", n), pg_costs("bench_ticks_few", DUE));
    report("postgres", n, many, few, "requests");

    let redis = cronslot_tests::redis::shared();
    let redis_costs = |tag: &str, count: usize| {
        let store = ok(block_on(RedisStore::connect(&redis.url(tag)))).judge_by(JudgeClock::Caller);
        let counter = store.clone();
        block_on(tick_costs_follow_due_work(
            &store,
            "redis",
            count,
            1,
            move || {
                let s = counter.requests();
                s.reads + s.writes
            },
        ))
    };
    let (many, few) = (
        redis_costs("bench-ticks", n),
        redis_costs("bench-ticks-few", DUE),
    );
    report("redis", n, many, few, "requests");

    if std::env::var("RSS").map_or(true, |v| v != "0") {
        let (few_rss, many_rss) = (rss_of(&dir.join("few.db")), rss_of(&dir.join("many.db")));
        println!(
            "runner    peak resident set over 20 s with nothing due: {few_rss} with {DUE} \
             schedules stored, {many_rss} with {n}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
