//! The 09:00 burst (issue 28): `SLOTS` (100,000) schedules of one dynamic
//! job fall due in the same minute, and a fleet of `RUNNERS` (3) runner
//! processes on one store starts each slot once; each run sleeps 10 ms.
//! On PostgreSQL and Redis (the servers the tests start), without and with
//! `jitter = "10m"` (`JITTER=0` leaves the jittered runs out: they take
//! ten minutes each).
//!
//! Prints one line per run: schedules written per second, then the start
//! lag (from each slot's start, its instant or its jittered start, to its
//! claim) at p50, p99 and max, claims per second from the first start to
//! the last, and the checks (every slot once, none twice, no lease left).
//! The same burst of 10,000 is a CI test (`tests/it/burst.rs`).
//!
//! `cargo bench -p cronslot-tests --bench burst`; `STORES`
//! (`postgres,redis`), `SLOTS`, `RUNNERS`, `WORKERS` (claim loops per
//! process, 2), `MAX_RUNNING` (per process, 64), `JITTER` (1 or 0).

// For its runner process (`run_child`); its tests are the CI test's.
#[allow(dead_code)]
#[path = "../tests/it/burst.rs"]
mod fleet_child;

use std::process::Command;
use std::time::Duration;

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{StateStore, TickIndex};
use cronslot_postgres::PgStore;
use cronslot_redis::RedisStore;
use cronslot_tests::burst::{self, Burst, Fleet, Outcome};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run<S: StateStore + TickIndex + Clone>(name: &str, store: S, url: &str, burst: &Burst) {
    let dir = std::env::temp_dir().join(format!("cronslot-burst-{}-{name}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let (at, wrote) = burst::prepare(store.clone(), burst, Duration::from_secs(20));
    let fleet = Fleet::spawn(url, burst, &dir, || {
        Command::new(std::env::current_exe().expect("this benchmark"))
    });
    let window = burst.jitter + Duration::from_secs(900);
    let drained = burst::wait_until_drained(&store, at + burst.jitter, window);
    fleet.stop();
    let outcome = burst::check(store, burst, at);
    let p = |sorted: &[f64], q: f64| Outcome::percentile(sorted, q) / 1e3;
    println!(
        "{name:<9} {} slots at {at}, jitter {:>4}s, {} runners: wrote {:.0} schedules/s; \
         start lag p50 {:.2}s p99 {:.2}s max {:.2}s (from the instant: p50 {:.1}s max {:.1}s); \
         {:.0} claims/s; once {} twice {} not run {} stuck {}{}",
        burst.slots,
        burst.jitter.as_secs(),
        burst.runners,
        burst.slots as f64 / wrote,
        p(&outcome.lags_ms, 50.0),
        p(&outcome.lags_ms, 99.0),
        p(&outcome.lags_ms, 100.0),
        p(&outcome.lags_from_instant_ms, 50.0),
        p(&outcome.lags_from_instant_ms, 100.0),
        outcome.claims_per_second(),
        outcome.once,
        outcome.twice,
        outcome.not_run,
        outcome.stuck,
        if drained { "" } else { " (gave up waiting)" }
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    if burst::is_child() {
        fleet_child::run_child();
        return;
    }
    let stores: String = env_or("STORES", "postgres,redis".to_string());
    let with_jitter: u32 = env_or("JITTER", 1);
    let mut bursts = vec![Duration::ZERO];
    if with_jitter == 1 {
        bursts.push(Duration::from_secs(600));
    }
    for jitter in bursts {
        let burst = Burst {
            slots: env_or("SLOTS", 100_000),
            jitter,
            runners: env_or("RUNNERS", 3),
            workers: env_or("WORKERS", 2),
            max_running: env_or("MAX_RUNNING", 64),
            work: Duration::from_millis(10),
        };
        let tag = format!("burst{}", jitter.as_secs());
        if stores.contains("postgres") {
            let pg = cronslot_tests::postgres::shared();
            let url = pg.url(&pg.fresh_database(&tag));
            let store = block_on(PgStore::connect(&url)).expect("PostgreSQL");
            run("postgres", store, &url, &burst);
        }
        if stores.contains("redis") {
            let redis = cronslot_tests::redis::shared();
            let url = redis.url(&tag);
            let store = block_on(RedisStore::connect(&url)).expect("Redis");
            run("redis", store, &url, &burst);
        }
    }
}
