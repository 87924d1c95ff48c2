//! Enqueue-to-start latency of keyed runs (issue 27, point 5) on a running
//! runner woken by its store: SQLite (the watcher of `data_version`),
//! PostgreSQL (`LISTEN`/`NOTIFY`) and Redis (`SUBSCRIBE`/`PUBLISH`), the
//! servers started as the tests start them.
//!
//! A `Runner` with four workers on the real clock serves one dynamic job;
//! four enqueuers, each with a store handle of its own (as other processes
//! would have), enqueue `RUNS` keyed runs between them as fast as they
//! can. Each run's wait is measured from its enqueue's return to its
//! start (the job's function). Then one at a time: `SINGLE` runs (default
//! 200), each enqueued once the previous has started, the latency of a run
//! enqueued into an idle runner. The runner is stopped once every run has
//! started, and returns once each is recorded. Last, a steady stream:
//! `STEADY` runs (default 10,000) enqueued one every `1/RATE` s (default
//! 200 a second), as orders arrive, each run's wait measured as above.
//!
//! Run with `cargo bench -p cronslot-tests --bench keyed_run_latency`
//! (`RUNS=N`, default 10,000; `SINGLE=N`, default 200; `STEADY=N`,
//! `RATE=N`). Prints, per store,
//! the burst's latency p50, p99 and maximum and its runs completed per
//! second (from the first enqueue to the last run's start), then the
//! one-at-a-time latency p50, p99 and maximum.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, Runs, StateStore};
use cronslot_core::schedules::{RunRequest, ScheduleKey};
use cronslot_postgres::PgStore;
use cronslot_redis::RedisStore;
use cronslot_runner::{Clock, Jobs, Runner, RunnerStore, WakeSignal};
use cronslot_sqlite::SqliteStore;
use cronslot_tests::keyed_bench::{
    UNSET, dynamic_template, enqueue_from_threads, parked, since, unset,
};
use jiff::Timestamp;

const WORKERS: u32 = 4;
const ENQUEUERS: usize = 4;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn measure<S: RunnerStore, E: StateStore + Clone + Send + 'static>(
    name: &str,
    store: S,
    signal: Option<WakeSignal>,
    enqueuers: Vec<E>,
    n: usize,
    single: usize,
    steady: Steady,
) {
    assert!(signal.is_some(), "{name}: the store gives a wake signal");
    let job = format!("bench-{name}");
    let template = dynamic_template(&job);
    let base = Instant::now();
    let (enqueued, started) = (unset(n), unset(n));
    let count = Arc::new(AtomicU64::new(0));
    let steady_started = unset(steady.runs);
    let steady_count = Arc::new(AtomicU64::new(0));
    let (single_tx, single_rx) = std::sync::mpsc::channel::<(String, Instant)>();
    let jobs = {
        let (started, count) = (Arc::clone(&started), Arc::clone(&count));
        let (steady_started, steady_count) =
            (Arc::clone(&steady_started), Arc::clone(&steady_count));
        Jobs::new().register(&job, move |ctx| {
            let at = since(base);
            let key = ctx.key().unwrap_or_default();
            if let Some(i) = key.strip_prefix('r').and_then(|k| k.parse::<usize>().ok()) {
                if let Some(slot) = started.get(i) {
                    slot.store(at, Ordering::SeqCst);
                }
                count.fetch_add(1, Ordering::SeqCst);
            } else if let Some(i) = key.strip_prefix('t').and_then(|k| k.parse::<usize>().ok()) {
                if let Some(slot) = steady_started.get(i) {
                    slot.store(at, Ordering::SeqCst);
                }
                steady_count.fetch_add(1, Ordering::SeqCst);
            } else {
                let _ = single_tx.send((key.to_string(), Instant::now()));
            }
            async { Ok(()) }
        })
    };
    let runner = Runner::new(store, Vec::new(), Clock::real())
        .with_templates(vec![template.clone()])
        .with_jobs(jobs)
        .workers(WORKERS)
        .woken_by(signal);
    let stop = runner.stop_handle();
    let running = std::thread::spawn(move || runner.run());
    // Idle first: the runner's first tick and the listener's connection.
    std::thread::sleep(Duration::from_millis(1500));
    let first = Instant::now();
    let last = enqueuers.last().cloned();
    enqueue_from_threads(
        enqueuers,
        &template,
        n,
        |i| format!("r{i:07}"),
        base,
        &enqueued,
    );
    let enqueue_secs = first.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(600);
    while (count.load(Ordering::SeqCst) as usize) < n {
        if Instant::now() > deadline {
            panic!(
                "{name}: only {} of {n} runs started within 10 minutes",
                count.load(Ordering::SeqCst)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let total = first.elapsed().as_secs_f64();
    // One at a time, into an idle runner.
    std::thread::sleep(Duration::from_millis(500));
    let mut singles = Vec::with_capacity(single);
    let mut steady_waits = Vec::with_capacity(steady.runs);
    if let Some(store) = last {
        let writer = CasCoordinator::new(store, 99);
        let request = RunRequest {
            payload: None,
            at: None,
        };
        for i in 0..single {
            let key = match ScheduleKey::new(format!("s{i:07}")) {
                Ok(k) => k,
                Err(e) => panic!("{e}"),
            };
            if let Err(e) = parked(writer.enqueue_run(&template, &key, &request, Timestamp::now()))
            {
                panic!("enqueue {key}: {e}");
            }
            let enqueued = Instant::now();
            match single_rx.recv_timeout(Duration::from_secs(30)) {
                Ok((ran, at)) if ran == key.as_str() => {
                    singles.push(at.saturating_duration_since(enqueued));
                }
                Ok((ran, _)) => panic!("{name}: {ran} started, not {key}"),
                Err(e) => panic!("{name}: {key} did not start: {e}"),
            }
        }
        // A steady stream, as orders arrive: one enqueue every 1/rate s,
        // on time whatever the runner does.
        let steady_enqueued: Vec<u64> = {
            let began = Instant::now();
            let gap = Duration::from_secs_f64(1.0 / steady.rate);
            (0..steady.runs)
                .map(|i| {
                    let due = began + gap.mul_f64(i as f64);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    let key = match ScheduleKey::new(format!("t{i:07}")) {
                        Ok(k) => k,
                        Err(e) => panic!("{e}"),
                    };
                    if let Err(e) =
                        parked(writer.enqueue_run(&template, &key, &request, Timestamp::now()))
                    {
                        panic!("enqueue {key}: {e}");
                    }
                    since(base)
                })
                .collect()
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        while (steady_count.load(Ordering::SeqCst) as usize) < steady.runs {
            assert!(
                Instant::now() < deadline,
                "{name}: only {} of {} steady runs started",
                steady_count.load(Ordering::SeqCst),
                steady.runs
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        steady_waits = steady_enqueued
            .iter()
            .zip(steady_started.iter())
            .map(|(e, s)| Duration::from_nanos(s.load(Ordering::SeqCst).saturating_sub(*e)))
            .collect();
    }
    stop.stop();
    let summary = match running.join() {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => panic!("{name}: {e}"),
        Err(_) => panic!("{name}: the runner panicked"),
    };
    assert!(summary.ok(), "{name}: {summary}");
    let mut waits: Vec<Duration> = (0..n)
        .map(|i| {
            let (e, s) = (
                enqueued[i].load(Ordering::SeqCst),
                started[i].load(Ordering::SeqCst),
            );
            assert!(e != UNSET && s != UNSET, "{name}: run {i} not seen");
            Duration::from_nanos(s.saturating_sub(e))
        })
        .collect();
    waits.sort();
    println!(
        "{name:>8}: {n} runs, enqueued in {enqueue_secs:.2} s ({:.0}/s); enqueue to start \
         p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {:.0} runs completed/s (to the last start)",
        n as f64 / enqueue_secs,
        percentile(&waits, 0.50).as_secs_f64() * 1e3,
        percentile(&waits, 0.99).as_secs_f64() * 1e3,
        waits[waits.len() - 1].as_secs_f64() * 1e3,
        n as f64 / total,
    );
    if !steady_waits.is_empty() {
        steady_waits.sort();
        println!(
            "{name:>8}: {} runs at {}/s; enqueue to start p50 {:.1} ms, p99 {:.1} ms, \
             max {:.1} ms",
            steady_waits.len(),
            steady.rate,
            percentile(&steady_waits, 0.50).as_secs_f64() * 1e3,
            percentile(&steady_waits, 0.99).as_secs_f64() * 1e3,
            steady_waits[steady_waits.len() - 1].as_secs_f64() * 1e3,
        );
    }
    if !singles.is_empty() {
        singles.sort();
        println!(
            "{name:>8}: {} runs one at a time; enqueue to start p50 {:.1} ms, p99 {:.1} ms, \
             max {:.1} ms",
            singles.len(),
            percentile(&singles, 0.50).as_secs_f64() * 1e3,
            percentile(&singles, 0.99).as_secs_f64() * 1e3,
            singles[singles.len() - 1].as_secs_f64() * 1e3,
        );
    }
}

/// The steady stream: `runs` enqueued one every `1 / rate` seconds.
#[derive(Clone, Copy)]
struct Steady {
    runs: usize,
    rate: f64,
}

fn main() {
    let n: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
        .max(1);
    let single: usize = std::env::var("SINGLE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let steady = Steady {
        runs: std::env::var("STEADY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10_000),
        rate: std::env::var("RATE")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|r| *r > 0.0)
            .unwrap_or(200.0),
    };
    println!(
        "keyed runs: {n} enqueued by {ENQUEUERS} enqueuers into a runner of {WORKERS} workers"
    );

    let dir = std::env::temp_dir().join(format!("cronslot-bench-wake-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("{}: {e}", dir.display());
    }
    let path = dir.join("bench.db");
    let open_sqlite = || match SqliteStore::open(&path) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let store = open_sqlite();
    let signal = store.wake_signal();
    measure(
        "sqlite",
        store,
        signal,
        (0..ENQUEUERS).map(|_| open_sqlite()).collect(),
        n,
        single,
        steady,
    );
    let _ = std::fs::remove_dir_all(&dir);

    let pg = cronslot_tests::postgres::shared();
    let url = format!(
        "{}&schema={}",
        pg.url("postgres"),
        cronslot_tests::postgres::unique("bench_wake")
    );
    let connect_pg = || match block_on(PgStore::connect(&url)) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let store = connect_pg();
    let signal = Some(store.wake_signal());
    measure(
        "postgres",
        store,
        signal,
        (0..ENQUEUERS).map(|_| connect_pg()).collect(),
        n,
        single,
        steady,
    );

    let redis = cronslot_tests::redis::shared();
    let url = redis.url(&cronslot_tests::redis::unique("bench-wake"));
    let connect_redis = || match block_on(RedisStore::connect(&url)) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let store = connect_redis();
    let signal = Some(store.wake_signal());
    measure(
        "redis",
        store,
        signal,
        (0..ENQUEUERS).map(|_| connect_redis()).collect(),
        n,
        single,
        steady,
    );
}
