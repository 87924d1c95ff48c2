//! The deterministic simulation (issue 7) on the PostgreSQL store, on this
//! binary's private server (`cronslot_tests::postgres`), each run in a
//! schema of its own. As in `simulation_stores.rs`, every store operation
//! runs to completion once the simulation's fault store lets it start
//! ([`OnTokio`]; the store's work happens on its own thread), so a seed
//! must give the same trace as on the memory store: each run is a
//! differential test of the store as well as a check against the model.
//!
//! The simulation drives virtual time, so the store judges leases by the
//! caller's clock (`JudgeClock::Caller`).
//!
//! `CRONSLOT_SIM_SLOTS=N` sets the virtual slots; `CRONSLOT_SIM_SEED=S`
//! replays one seed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::rc::Rc;
use std::time::Instant;

use cronslot_core::coord::MemoryStore;
use cronslot_postgres::{JudgeClock, PgOptions, PgStore, parse_postgres_location_with_env};
use cronslot_tests::postgres::{shared, unique};
use cronslot_tests::sim::{SimConfig, SimReport, simulate, slots_from_env};
use cronslot_tests::sim_backends::OnTokio;

fn runtime() -> Rc<tokio::runtime::Runtime> {
    Rc::new(
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime"),
    )
}

/// One simulation on a new, empty schema of the shared server.
fn simulate_on_postgres(cfg: &SimConfig) -> (SimReport, PgStore, f64) {
    let runtime = runtime();
    let url = format!("{}&schema={}", shared().url("postgres"), unique("sim"));
    let location = parse_postgres_location_with_env(&url, |_| None).expect("the test URL");
    let store = runtime
        .block_on(PgStore::connect_with(location, PgOptions::default()))
        .expect("opening the simulation's store")
        .judge_by(JudgeClock::Caller);
    let t = Instant::now();
    let r = simulate(OnTokio::new(store.clone(), runtime), cfg);
    (r, store, t.elapsed().as_secs_f64())
}

fn replay(test: &str, cfg: &SimConfig) -> String {
    format!(
        "replay with CRONSLOT_SIM_SEED={} CRONSLOT_SIM_SLOTS={} cargo test -p cronslot-tests \
         --test it simulation_postgres::{test}",
        cfg.seed, cfg.slots
    )
}

/// The PostgreSQL store through the generic coordinator, under the
/// simulation's faults (on top of the server, which injects none), for a
/// few seeds: no violation, something ran, faults were injected, and the
/// same trace as on the memory store. About 2.5 s per seed of 300 slots.
#[test]
fn simulation_on_postgres() {
    let slots = slots_from_env(300);
    let seeds = match std::env::var("CRONSLOT_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(seed) => vec![seed],
        None => vec![51, 52, 53],
    };
    let test = "simulation_on_postgres";
    for seed in seeds {
        let cfg = SimConfig::new(seed, slots);
        let (r, store, secs) = simulate_on_postgres(&cfg);
        eprintln!("{}", r.summary("postgres", secs));
        assert!(
            r.violations.is_empty(),
            "simulation on postgres failed; {}\n{}",
            replay(test, &cfg),
            r.violations.join("\n")
        );
        assert!(
            r.claims > 0 && r.succeeded > 0 && r.store.unavailable > 0 && r.store.ambiguous > 0,
            "simulation on postgres with seed {}: it ran nothing or injected no store faults",
            r.seed
        );
        let counts = store.requests();
        eprintln!(
            "postgres statements: {} reads, {} writes, {} connections",
            counts.reads, counts.writes, counts.connections
        );
        let t = Instant::now();
        let m = simulate(MemoryStore::new(), &cfg);
        eprintln!(
            "{}",
            m.summary("memory (reference)", t.elapsed().as_secs_f64())
        );
        assert_eq!(
            (r.trace_hash, r.claims, &r.store),
            (m.trace_hash, m.claims, &m.store),
            "postgres and the memory store ran differently (trace hash, claims, store \
             operations); {}",
            replay(test, &cfg)
        );
    }
}
