//! The deterministic simulation (issue 7) on the Redis store, on this
//! binary's private server (`cronslot_tests::redis`), each run under a key
//! prefix of its own. As in `simulation_postgres.rs`, every store
//! operation runs to completion once the simulation's fault store lets it
//! start ([`OnTokio`]; the store's work happens on its own thread), so a
//! seed must give the same trace as on the memory store: each run is a
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
use cronslot_redis::{JudgeClock, RedisOptions, RedisStore, parse_redis_location_with_env};
use cronslot_tests::redis::{shared, unique};
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

/// One simulation under a new, empty prefix of the shared server.
fn simulate_on_redis(cfg: &SimConfig) -> (SimReport, RedisStore, f64) {
    let runtime = runtime();
    let url = shared().url(&unique("sim"));
    let location = parse_redis_location_with_env(&url, |_| None).expect("the test URL");
    let store = runtime
        .block_on(RedisStore::connect_with(location, RedisOptions::default()))
        .expect("opening the simulation's store")
        .judge_by(JudgeClock::Caller);
    let t = Instant::now();
    let r = simulate(OnTokio::new(store.clone(), runtime), cfg);
    (r, store, t.elapsed().as_secs_f64())
}

fn replay(test: &str, cfg: &SimConfig) -> String {
    format!(
        "replay with CRONSLOT_SIM_SEED={} CRONSLOT_SIM_SLOTS={} cargo test -p cronslot-tests \
         --test it simulation_redis::{test}",
        cfg.seed, cfg.slots
    )
}

/// The Redis store through the generic coordinator, under the
/// simulation's faults (on top of the server, which injects none), for a
/// few seeds: no violation, something ran, faults were injected, and the
/// same trace as on the memory store.
#[test]
fn simulation_on_redis() {
    let slots = slots_from_env(300);
    let seeds = match std::env::var("CRONSLOT_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(seed) => vec![seed],
        None => vec![61, 62, 63],
    };
    let test = "simulation_on_redis";
    for seed in seeds {
        let cfg = SimConfig::new(seed, slots);
        let (r, store, secs) = simulate_on_redis(&cfg);
        eprintln!("{}", r.summary("redis", secs));
        assert!(
            r.violations.is_empty(),
            "simulation on redis failed; {}\n{}",
            replay(test, &cfg),
            r.violations.join("\n")
        );
        assert!(
            r.claims > 0 && r.succeeded > 0 && r.store.unavailable > 0 && r.store.ambiguous > 0,
            "simulation on redis with seed {}: it ran nothing or injected no store faults",
            r.seed
        );
        let counts = store.requests();
        eprintln!(
            "redis requests: {} reads, {} writes, {} connections",
            counts.reads, counts.writes, counts.connections
        );
        assert_eq!(counts.connections, 1, "one connection for the whole run");
        let t = Instant::now();
        let m = simulate(MemoryStore::new(), &cfg);
        eprintln!(
            "{}",
            m.summary("memory (reference)", t.elapsed().as_secs_f64())
        );
        assert_eq!(
            (r.trace_hash, r.claims, &r.store),
            (m.trace_hash, m.claims, &m.store),
            "redis and the memory store ran differently (trace hash, claims, store \
             operations); {}",
            replay(test, &cfg)
        );
    }
}
