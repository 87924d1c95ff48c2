//! Throughput of keyed one-off runs, shaped like the peers' benchmark
//! (`bench/peers`: pg-boss and Graphile Worker on PostgreSQL, BullMQ on
//! Redis) so that one run of `bench/peers/run.sh` puts cronslot beside
//! them on the same servers, with the same job and the same knobs.
//!
//! For each store and workload: `ENQUEUERS` (8) threads, each with a store
//! handle of its own and awaiting one call at a time, enqueue `RUNS`
//! (10,000) keyed runs of one dynamic job, run *i* under the key
//! `order-<i>`, while a `Runner` woken by its store runs them: `WORKERS`
//! claim loops (threads; as many as `CONCURRENCY` by default, as the
//! peers have as many fetch loops or job slots), at most `CONCURRENCY` (8)
//! runs at once in the process (`Runner::max_running`, the peers' worker
//! concurrency). The
//! job's function is the workload: `noop` returns at once, `sleep10`
//! waits 10 ms. It counts runs per key, so a second run of a key would
//! show.
//!
//! Prints one JSON line per (store, workload) in the peers' format
//! (`kind: "bench"`, `peer`, `version`, `enqueue_jobs_per_s`,
//! `e2e_jobs_per_s`, `start_latency_ms`, `duplicate_runs`, `settings`
//! …), which `bench/peers/report.mjs` tabulates, and a readable line on
//! stderr.
//!
//! `cargo bench -p cronslot-tests --bench keyed_run_throughput`; `STORES`
//! (`postgres,redis`), `WORKLOADS` (`noop,sleep10`), `RUNS`,
//! `CONCURRENCY`, `ENQUEUERS`, `WORKERS`; `PG_URL` and `REDIS_URL` use
//! those servers (as `bench/peers/run.sh` passes its own) instead of
//! starting them as the tests do. Each run writes to a schema or key
//! prefix of its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cronslot_core::coord::StateStore;
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, RunQuery, Runs};
use cronslot_core::manifest::JobTemplate;
use cronslot_core::schedules::RunStatus;
use cronslot_postgres::PgStore;
use cronslot_redis::RedisStore;
use cronslot_runner::{Clock, Jobs, Runner, RunnerStore, WakeSignal};
use cronslot_store_kit::RequestCounts;
use cronslot_tests::keyed_bench::{UNSET, dynamic_template, enqueue_from_threads, since, unset};
use jiff::Timestamp;
use serde_json::json;

struct Knobs {
    runs: usize,
    concurrency: u32,
    enqueuers: usize,
    workers: u32,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `p`th percentile (0 to 100) of sorted milliseconds, nearest rank.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p / 100.0).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Every run of the job that the store says succeeded, page by page.
fn succeeded<E: StateStore>(store: E, template: &JobTemplate) -> usize {
    let reader = CasCoordinator::new(store, 7);
    let mut query = RunQuery {
        status: Some(RunStatus::Succeeded),
        limit: cronslot_core::coord::MAX_RUN_PAGE,
        ..RunQuery::default()
    };
    let mut count = 0;
    loop {
        let page = match block_on(reader.list_runs(template, &query, Timestamp::now())) {
            Ok(p) => p,
            Err(e) => panic!("listing the runs: {e}"),
        };
        count += page.runs.len();
        match page.cursor {
            Some(c) => query.after = Some(c),
            None => return count,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn measure<S: RunnerStore, E: StateStore + Clone + Send + 'static>(
    store_name: &str,
    workload: &str,
    store: S,
    signal: Option<WakeSignal>,
    enqueuers: Vec<E>,
    knobs: &Knobs,
    requests: impl Fn() -> RequestCounts,
) {
    let n = knobs.runs;
    let sleep = match workload {
        "noop" => None,
        "sleep10" => Some(Duration::from_millis(10)),
        other => panic!("WORKLOADS: {other} is neither noop nor sleep10"),
    };
    let job = format!("order-mail-{workload}");
    let template = dynamic_template(&job);
    let base = Instant::now();
    let (enqueued, started) = (unset(n), unset(n));
    let runs_of: Arc<Vec<AtomicUsize>> = Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect());
    let finished = Arc::new(AtomicUsize::new(0));
    let last_done = Arc::new(AtomicU64::new(0));
    let jobs = {
        let (started, runs_of, finished, last_done) = (
            Arc::clone(&started),
            Arc::clone(&runs_of),
            Arc::clone(&finished),
            Arc::clone(&last_done),
        );
        Jobs::new().register(&job, move |ctx| {
            let at = since(base);
            let i = ctx
                .key()
                .and_then(|k| k.strip_prefix("order-"))
                .and_then(|k| k.parse::<usize>().ok());
            if let Some(i) = i.filter(|i| *i < n) {
                if runs_of[i].fetch_add(1, Ordering::SeqCst) == 0 {
                    started[i].store(at, Ordering::SeqCst);
                }
            }
            let (finished, last_done) = (Arc::clone(&finished), Arc::clone(&last_done));
            async move {
                if let Some(d) = sleep {
                    tokio::time::sleep(d).await;
                }
                last_done.fetch_max(since(base), Ordering::SeqCst);
                finished.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
    };
    let requests_before = requests();
    let runner = Runner::new(store, Vec::new(), Clock::real())
        .with_templates(vec![template.clone()])
        .with_jobs(jobs)
        .workers(knobs.workers)
        .max_running(knobs.concurrency)
        .woken_by(signal);
    let stop = runner.stop_handle();
    let running = std::thread::spawn(move || runner.run());
    // The runner's first tick and its listener's connection, not timed.
    std::thread::sleep(Duration::from_millis(1000));
    let t0 = since(base);
    let checker = enqueuers.first().cloned();
    enqueue_from_threads(
        enqueuers,
        &template,
        n,
        |i| format!("order-{i}"),
        base,
        &enqueued,
    );
    let enqueue_done = since(base);
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut timed_out = false;
    while finished.load(Ordering::SeqCst) < n {
        if Instant::now() > deadline {
            timed_out = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let done = last_done.load(Ordering::SeqCst);
    // The runner returns once every run it started is recorded: that is
    // when the store shows them all finished.
    stop.stop();
    let summary = match running.join() {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => panic!("{store_name}: {e}"),
        Err(_) => panic!("{store_name}: the runner panicked"),
    };
    let settled = since(base);
    let RequestCounts {
        reads,
        writes,
        grouped,
        signals,
        ..
    } = requests().since(&requests_before);
    let sent = reads + writes - grouped + signals;
    assert!(summary.ok(), "{store_name} {workload}: {summary}");
    let recorded = checker.map_or(0, |s| succeeded(s, &template));
    let finished = finished.load(Ordering::SeqCst);
    let duplicates: usize = runs_of
        .iter()
        .map(|c| c.load(Ordering::SeqCst).saturating_sub(1))
        .sum();
    let mut latencies: Vec<f64> = (0..n)
        .filter_map(|i| {
            let (e, s) = (
                enqueued[i].load(Ordering::SeqCst),
                started[i].load(Ordering::SeqCst),
            );
            (e != UNSET && s != UNSET).then(|| (s as f64 - e as f64) / 1e6)
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let enqueue_s = (enqueue_done - t0) as f64 / 1e9;
    let e2e_s = (done.saturating_sub(t0)) as f64 / 1e9;
    let peer = format!("cronslot ({store_name})");
    let line = json!({
        "kind": "bench",
        "peer": peer,
        "version": env!("CARGO_PKG_VERSION"),
        "workload": workload,
        "mode": "concurrent",
        "runs": n,
        "concurrency": knobs.concurrency,
        "enqueuers": knobs.enqueuers,
        "completed": finished,
        "recorded_succeeded": recorded,
        "timed_out": timed_out,
        "duplicate_runs": duplicates,
        "enqueue_null_ids": 0,
        "enqueue_s": (enqueue_s * 1e3).round() / 1e3,
        "enqueue_jobs_per_s": r1(n as f64 / enqueue_s),
        "e2e_s": (e2e_s * 1e3).round() / 1e3,
        "e2e_jobs_per_s": r1(finished as f64 / e2e_s),
        "start_latency_ms": {
            "p50": r1(percentile(&latencies, 50.0)),
            "p99": r1(percentile(&latencies, 99.0)),
            "max": r1(latencies.last().copied().unwrap_or(f64::NAN)),
            "min": r1(latencies.first().copied().unwrap_or(f64::NAN)),
        },
        "store_settled_after_last_run_ms": r1((settled.saturating_sub(done)) as f64 / 1e6),
        "settings": {
            "store": store_name,
            "workers": knobs.workers,
            "max_running": knobs.concurrency,
            "enqueuers": "one thread and store handle each, one call at a time",
            "wake": if store_name == "postgres" { "LISTEN/NOTIFY" } else { "SUBSCRIBE/PUBLISH" },
            "claim_conflicts": summary.claim_conflicts,
        },
        "runner_requests_per_run": {
            "reads": (reads as f64 / n as f64 * 100.0).round() / 100.0,
            "writes": (writes as f64 / n as f64 * 100.0).round() / 100.0,
            "sent": (sent as f64 / n as f64 * 100.0).round() / 100.0,
            "wake_notifications": (signals as f64 / n as f64 * 100.0).round() / 100.0,
        },
        "cpus": std::thread::available_parallelism().map_or(0, usize::from),
    });
    println!("{line}");
    eprintln!(
        "{peer} {workload}: {n} runs; enqueue {:.0}/s, end to end {:.0}/s; start latency p50 \
         {:.1} ms, p99 {:.1} ms; completed {finished}, recorded succeeded {recorded}, \
         duplicate runs {duplicates}; the runner's requests per run: {:.2} reads, {:.2} writes \
         ({:.2} requests sent: writes sent together count once, wake notifications count)",
        n as f64 / enqueue_s,
        finished as f64 / e2e_s,
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        reads as f64 / n as f64,
        writes as f64 / n as f64,
        sent as f64 / n as f64,
    );
    assert_eq!(duplicates, 0, "{peer} {workload}: a key ran twice");
    assert!(
        !timed_out,
        "{peer} {workload}: {finished} of {n} runs in 10 minutes"
    );
    assert_eq!(recorded, n, "{peer} {workload}: runs recorded as succeeded");
}

/// One (store, workload) run: the runner's store and one per enqueuer,
/// each a connection of its own; the runner woken by the store's signal,
/// its requests counted.
fn bench_store<S, E>(
    (name, workload): (&str, &str),
    knobs: &Knobs,
    connect: impl Fn() -> Result<S, E>,
    wake: fn(&S) -> WakeSignal,
    counts: fn(&S) -> RequestCounts,
) where
    S: RunnerStore,
    E: std::fmt::Display,
{
    let connect = || connect().unwrap_or_else(|e| panic!("{name}: {e}"));
    let store = connect();
    let signal = Some(wake(&store));
    let enqueuers = (0..knobs.enqueuers).map(|_| connect()).collect();
    let counted = store.clone();
    let requests = move || counts(&counted);
    measure(name, workload, store, signal, enqueuers, knobs, requests);
}

/// A unique suffix per (store, workload) run, so that runs do not share
/// records.
fn unique(what: &str) -> String {
    format!(
        "{what}_{}_{}",
        std::process::id(),
        Timestamp::now().as_millisecond()
    )
}

fn with_param(url: &str, param: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{param}")
}

fn main() {
    let knobs = Knobs {
        runs: env_or("RUNS", 10_000usize).max(1),
        concurrency: env_or("CONCURRENCY", 8u32).max(1),
        enqueuers: env_or("ENQUEUERS", 8usize).max(1),
        workers: 0,
    };
    // As many claim loops as the peers' concurrency gives them (pg-boss's
    // work() loops, Graphile Worker's concurrent jobs).
    let knobs = Knobs {
        workers: env_or("WORKERS", knobs.concurrency).max(1),
        ..knobs
    };
    let stores = std::env::var("STORES").unwrap_or_else(|_| "postgres,redis".into());
    let workloads = std::env::var("WORKLOADS").unwrap_or_else(|_| "noop,sleep10".into());
    for store in stores.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        for workload in workloads
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            match store {
                "postgres" => {
                    let url = match std::env::var("PG_URL").ok() {
                        Some(url) => url,
                        None => cronslot_tests::postgres::shared().url("postgres"),
                    };
                    let url = with_param(&url, &format!("schema={}", unique("bench_runs")));
                    bench_store(
                        ("postgres", workload),
                        &knobs,
                        || block_on(PgStore::connect(&url)),
                        PgStore::wake_signal,
                        PgStore::requests,
                    );
                }
                "redis" => {
                    let url = match std::env::var("REDIS_URL").ok() {
                        Some(url) => with_param(&url, &format!("prefix={}", unique("bench-runs"))),
                        None => cronslot_tests::redis::shared()
                            .url(&cronslot_tests::redis::unique("bench-runs")),
                    };
                    bench_store(
                        ("redis", workload),
                        &knobs,
                        || block_on(RedisStore::connect(&url)),
                        RedisStore::wake_signal,
                        RedisStore::requests,
                    );
                }
                other => panic!("STORES: {other} is neither postgres nor redis"),
            }
        }
    }
}
