//! One harness for the deterministic simulation on every store (issue 25):
//! a store describes itself as a [`SimStore`] (how to open a fresh, empty
//! one, its default seeds and slots, whether it must run as the memory
//! store runs, and what is particular to it to check after a run), and
//! [`run`] gives every store the same checks.
//!
//! The descriptions of the stores live next to their tests
//! (`tests/tests/it/simulation_stores.rs`): most stores are only
//! dev-dependencies of this crate, because their own tests depend on this
//! library.
//!
//! The environment sets what runs: `CRONSLOT_SIM_SLOTS=N` the virtual slots
//! per seed (a soak), `CRONSLOT_SIM_SEED=S` one seed to replay,
//! `CRONSLOT_SIM_SEEDS=K` K seeds instead of the store's defaults.

use std::any::Any;
use std::time::Instant;

use cronslot_core::coord::{EffectLedger, MemoryStore, StateStore};

use super::{SimConfig, SimReport, simulate, slots_from_env};

/// A store the simulation runs on.
///
/// Implemented on a type of the test's own that only names the store:
/// everything here is associated, so that the seeds of a store can run on
/// threads of their own while each store (often `Rc`-based, not `Send`) is
/// opened and dropped inside its thread.
pub trait SimStore {
    /// The store as the simulation drives it (clones share the data).
    type Store: StateStore + EffectLedger + Clone + 'static;

    /// The store's name in summaries and failure messages.
    const NAME: &'static str;

    /// Virtual slots per seed, unless `CRONSLOT_SIM_SLOTS` says otherwise.
    const SLOTS: u64;

    /// The seeds run, unless `CRONSLOT_SIM_SEED` or `CRONSLOT_SIM_SEEDS`
    /// say otherwise.
    const SEEDS: &'static [u64];

    /// Whether a seed must give the same run (trace hash, claims, store
    /// operations) as on the plain [`MemoryStore`]. True of a store that
    /// adds no await point of its own: each of its operations runs to
    /// completion once the simulation's fault store lets it start, so the
    /// simulation interleaves it exactly as the memory store, and each run
    /// is a differential test of the store besides the check against the
    /// model.
    const SAME_AS_MEMORY: bool;

    /// Whether the seeds run on threads of their own, at once (each
    /// simulation is single-threaded and deterministic by itself). For a
    /// store whose runs are long enough that the time matters.
    const PARALLEL_SEEDS: bool = false;

    /// Whether the store's default runs must have exercised every kind of
    /// operator event ([`check_operator_events`]), checked when each seed
    /// runs at least [`EVENTS_MIN_SLOTS`] slots: the runs that are long
    /// enough to promise it.
    const OPERATOR_EVENTS: bool = false;

    /// A new, empty store for the run of `cfg`.
    fn open(cfg: &SimConfig) -> Fresh<Self::Store>;

    /// What is particular to the store, checked after every run (after the
    /// checks every store gets): `store` is the store the run used.
    fn after_run(_store: &Self::Store, _report: &SimReport) {}
}

/// A fresh store for one run, with what must outlive the run (a temporary
/// directory holding its file).
pub struct Fresh<S> {
    pub store: S,
    // Declared after the store, so dropped after it: a directory goes only
    // once the store's file is closed.
    _keep: Option<Box<dyn Any>>,
}

impl<S> Fresh<S> {
    /// A store that needs nothing else kept.
    pub fn new(store: S) -> Fresh<S> {
        Fresh { store, _keep: None }
    }

    /// A store that needs `keep` alive until the run ends.
    pub fn keeping(store: S, keep: impl Any) -> Fresh<S> {
        Fresh {
            store,
            _keep: Some(Box::new(keep)),
        }
    }
}

/// Runs the simulation on `S`, each of its seeds on a fresh store, and
/// checks each run: no violation, something ran, store faults were
/// injected (the simulation wraps every store in its fault store), the
/// memory store's run where [`SimStore::SAME_AS_MEMORY`], then the store's
/// own [`SimStore::after_run`]; and, where [`SimStore::OPERATOR_EVENTS`],
/// the operator's events over all seeds.
///
/// `test` is the test's path as `module_path!()` and the test's name give
/// it (the crate's name first), for the replay command of a failure.
pub fn run<S: SimStore>(test: &str) -> Vec<SimReport> {
    let test = test_filter(test);
    let slots = slots_from_env(S::SLOTS);
    let seeds = seeds_from_env(S::SEEDS);
    let one = |seed: u64| {
        let cfg = SimConfig::new(seed, slots);
        let r = run_once::<S>(test, &cfg, S::NAME);
        if S::SAME_AS_MEMORY {
            same_as_memory(S::NAME, test, &cfg, &r);
        }
        r
    };
    let reports: Vec<SimReport> = if S::PARALLEL_SEEDS {
        std::thread::scope(|scope| {
            let handles: Vec<_> = seeds
                .iter()
                .map(|&seed| scope.spawn(move || one(seed)))
                .collect();
            handles
                .into_iter()
                // A failed seed's own panic, not a bare "thread panicked".
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    } else {
        seeds.iter().map(|&seed| one(seed)).collect()
    };
    if S::OPERATOR_EVENTS && slots >= EVENTS_MIN_SLOTS {
        check_operator_events(S::NAME, &reports);
    }
    let total: u64 = reports.iter().map(|r| r.slots).sum();
    eprintln!("sim {}: {total} virtual slots in total", S::NAME);
    reports
}

/// Two runs of one seed (`CRONSLOT_SIM_SEED`, else `seed`), each on a
/// fresh store, each checked as [`run`] checks a run (but against each
/// other rather than against the memory store): they must give the same
/// trace, claims and store operations. Answers the first run.
pub fn replays<S: SimStore>(test: &str, seed: u64, slots: u64) -> SimReport {
    let test = test_filter(test);
    let cfg = SimConfig::new(seed_from_env(seed), slots);
    let a = run_once::<S>(test, &cfg, &format!("{} (1st)", S::NAME));
    let b = run_once::<S>(test, &cfg, &format!("{} (2nd)", S::NAME));
    assert_eq!(
        (a.trace_hash, a.claims, &a.store),
        (b.trace_hash, b.claims, &b.store),
        "seed {}: two runs on {} differ; {}",
        cfg.seed,
        S::NAME,
        replay(test, &cfg),
    );
    a
}

/// Each seed runs at least this many slots before
/// [`check_operator_events`] holds a store's runs to it.
pub const EVENTS_MIN_SLOTS: u64 = 1_000;

/// The runs must have exercised every kind of the operator's events, or
/// they checked nothing about them.
pub fn check_operator_events(store: &str, reports: &[SimReport]) {
    let sum = |f: fn(&SimReport) -> u64| reports.iter().map(f).sum::<u64>();
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

/// The seeds to run: `CRONSLOT_SIM_SEED` alone, or `CRONSLOT_SIM_SEEDS`
/// seeds from a fixed base (the same for every store, so a soak's seeds
/// can be named), or `default`.
pub fn seeds_from_env(default: &[u64]) -> Vec<u64> {
    if let Some(seed) = env_u64("CRONSLOT_SIM_SEED") {
        return vec![seed];
    }
    match env_u64("CRONSLOT_SIM_SEEDS") {
        Some(k) => (0..k).map(|i| 0x5EED_0000 + i).collect(),
        None => default.to_vec(),
    }
}

/// `CRONSLOT_SIM_SEED`, or `default`.
pub fn seed_from_env(default: u64) -> u64 {
    env_u64("CRONSLOT_SIM_SEED").unwrap_or(default)
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

/// One run on a fresh store, printed and checked, with the store's own
/// after-check.
fn run_once<S: SimStore>(test: &str, cfg: &SimConfig, label: &str) -> SimReport {
    // Opening (creating a table, a schema) is not the run: not timed.
    let fresh = S::open(cfg);
    let t = Instant::now();
    let r = simulate(fresh.store.clone(), cfg);
    eprintln!("{}", r.summary(label, t.elapsed().as_secs_f64()));
    check(S::NAME, test, cfg, &r);
    S::after_run(&fresh.store, &r);
    r
}

/// No violation; something ran; the fault store injected faults of both
/// kinds (else the run checked nothing about them). The message says how
/// to replay.
fn check(store: &str, test: &str, cfg: &SimConfig, r: &SimReport) {
    assert!(
        r.violations.is_empty(),
        "simulation on {store} failed with seed {}; {}\n{}",
        r.seed,
        replay(test, cfg),
        r.violations.join("\n"),
    );
    assert!(
        r.claims > 0 && r.succeeded > 0 && r.store.unavailable > 0 && r.store.ambiguous > 0,
        "simulation on {store} with seed {}: it ran nothing or injected no store faults \
         ({} claims, {} succeeded, {} unavailable, {} ambiguous); {}",
        r.seed,
        r.claims,
        r.succeeded,
        r.store.unavailable,
        r.store.ambiguous,
        replay(test, cfg),
    );
}

/// The same run on the plain memory store: equal traces, or the store
/// under test behaved differently from it somewhere.
fn same_as_memory(store: &str, test: &str, cfg: &SimConfig, r: &SimReport) {
    let t = Instant::now();
    let m = simulate(MemoryStore::new(), cfg);
    eprintln!(
        "{}",
        m.summary("memory (reference)", t.elapsed().as_secs_f64())
    );
    assert_eq!(
        (r.trace_hash, r.claims, &r.store),
        (m.trace_hash, m.claims, &m.store),
        "seed {}: {store} and the memory store ran differently (trace hash, claims, store \
         operations); {}",
        cfg.seed,
        replay(test, cfg),
    );
}

/// The command that runs `cfg` again, in the test `test`.
fn replay(test: &str, cfg: &SimConfig) -> String {
    format!(
        "replay with CRONSLOT_SIM_SEED={} CRONSLOT_SIM_SLOTS={} cargo test -p cronslot-tests \
         --test it {test}",
        cfg.seed, cfg.slots
    )
}

/// The test's name as `cargo test` filters it: its path without the
/// crate's name (`it::simulation_stores::x` is `simulation_stores::x`).
fn test_filter(path: &str) -> &str {
    path.split_once("::").map_or(path, |(_, rest)| rest)
}

#[cfg(test)]
mod tests {
    use super::test_filter;

    #[test]
    fn the_filter_drops_the_crate() {
        assert_eq!(
            test_filter("it::simulation_stores::simulation_on_redis"),
            "simulation_stores::simulation_on_redis"
        );
        assert_eq!(test_filter("plain"), "plain");
    }
}
