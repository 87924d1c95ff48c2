//! Deterministic simulation (issue 7) against the memory and SQLite stores.
//! `CRONSLOT_SIM_SLOTS=N` sets the virtual slots per seed (a soak);
//! `CRONSLOT_SIM_SEED=S` replays one seed; `CRONSLOT_SIM_SEEDS=K` runs K seeds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use cronslot_core::coord::MemoryStore;
use cronslot_runner::SqliteStore;
use cronslot_tests::sim::{SimConfig, SimReport, simulate, slots_from_env};

fn seeds(default: &[u64]) -> Vec<u64> {
    if let Some(s) = std::env::var("CRONSLOT_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![s];
    }
    match std::env::var("CRONSLOT_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(k) => (0..k).map(|i| 0x5EED_0000 + i).collect(),
        None => default.to_vec(),
    }
}

fn print(store: &str, r: &SimReport, secs: f64) {
    eprintln!("{}", r.summary(store, secs));
}

fn check(store: &str, r: &SimReport) {
    assert!(
        r.violations.is_empty(),
        "simulation on {store} failed with seed {seed}; replay with \
         CRONSLOT_SIM_SEED={seed} CRONSLOT_SIM_SLOTS=<same> cargo test -p cronslot-tests \
         --test it simulation::\n{}",
        r.violations.join("\n"),
        seed = r.seed,
    );
    assert!(
        r.claims > 0 && r.succeeded > 0,
        "the simulation ran nothing"
    );
}

/// The default runs must exercise the operator's events, or they check
/// nothing about them.
fn check_events(store: &str, reports: &[&SimReport]) {
    let sum = |f: fn(&SimReport) -> u64| reports.iter().map(|r| f(r)).sum::<u64>();
    let seen = [
        ("pauses applied", sum(|r| r.job_pauses_applied)),
        ("resumes applied", sum(|r| r.job_resumes_applied)),
        ("slots skipped while paused", sum(|r| r.skipped_paused)),
        ("backfilled slots", sum(|r| r.backfilled_slots)),
        (
            "backfilled slots that succeeded",
            sum(|r| r.backfill_succeeded),
        ),
        ("schedule changes stored", sum(|r| r.spec_changes_applied)),
        ("redriven slots", sum(|r| r.redriven_slots)),
        (
            "redriven slots that succeeded",
            sum(|r| r.redrive_succeeded),
        ),
    ];
    for (what, n) in seen {
        assert!(n > 0, "simulation on {store}: no {what}");
    }
}

#[test]
fn simulation_on_memory_store() {
    let slots = slots_from_env(1_500);
    // Seeds run on their own threads (each simulation is single-threaded
    // and deterministic by itself).
    let reports: Vec<(SimReport, f64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = seeds(&[1, 2])
            .into_iter()
            .map(|seed| {
                scope.spawn(move || {
                    let t = Instant::now();
                    let r = simulate(MemoryStore::new(), &SimConfig::new(seed, slots));
                    (r, t.elapsed().as_secs_f64())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut total = 0;
    for (r, secs) in &reports {
        print("memory", r, *secs);
        total += r.slots;
    }
    for (r, _) in &reports {
        check("memory", r);
    }
    if slots >= 1_000 {
        check_events(
            "memory",
            &reports.iter().map(|(r, _)| r).collect::<Vec<_>>(),
        );
    }
    eprintln!("sim memory: {total} virtual slots in total");
}

#[test]
fn simulation_on_sqlite_store() {
    let slots = slots_from_env(1_000);
    let mut total = 0;
    for seed in seeds(&[11]) {
        // tmpfs when there is one: every write is fsynced (synchronous=FULL).
        let dir = if std::path::Path::new("/dev/shm").is_dir() {
            tempfile::tempdir_in("/dev/shm").unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        let store = SqliteStore::open(dir.path().join("sim.db")).unwrap();
        let t = Instant::now();
        let r = simulate(store, &SimConfig::new(seed, slots));
        print("sqlite", &r, t.elapsed().as_secs_f64());
        check("sqlite", &r);
        total += r.slots;
    }
    eprintln!("sim sqlite: {total} virtual slots in total");
}

/// Same seed, same run: the trace hash (every delivery, crash, pause, claim,
/// completion, record version and effect) is identical.
#[test]
fn same_seed_same_run() {
    let cfg = SimConfig::new(42, 500);
    let a = simulate(MemoryStore::new(), &cfg);
    let b = simulate(MemoryStore::new(), &cfg);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.claims, b.claims);
    assert_eq!(a.store, b.store);
    let c = simulate(MemoryStore::new(), &SimConfig::new(43, 500));
    assert_ne!(a.trace_hash, c.trace_hash, "another seed, another run");
}
