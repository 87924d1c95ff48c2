//! Deterministic simulation of the tick path (issue 14): ticks over the
//! tick index on a faulty store, racing tickers, crashes, outages and an
//! operator; see `cronslot_tests::sim::ticks`.
//! `CRONSLOT_SIM_SLOTS=N` sets the slots per seed before the drain;
//! `CRONSLOT_SIM_SEED=S` replays one seed; `CRONSLOT_SIM_SEEDS=K` runs K
//! seeds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use cronslot_tests::sim::slots_from_env;
use cronslot_tests::sim::ticks::{TickSimConfig, TickSimReport, simulate_ticks};

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
        Some(k) => (0..k).map(|i| 0x71C4_0000 + i).collect(),
        None => default.to_vec(),
    }
}

fn check(r: &TickSimReport, slots: u64) {
    assert!(
        r.violations.is_empty(),
        "tick simulation failed with seed {seed}; replay with \
         CRONSLOT_SIM_SEED={seed} CRONSLOT_SIM_SLOTS={slots} cargo test -p cronslot-tests \
         --test it simulation_ticks::\n{}",
        r.violations.join("\n"),
        seed = r.seed,
    );
}

#[test]
fn ticks_over_the_index_leave_nothing_stuck() {
    let slots = slots_from_env(1_200);
    let reports: Vec<(TickSimReport, f64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = seeds(&[1, 2])
            .into_iter()
            .map(|seed| {
                scope.spawn(move || {
                    let t = Instant::now();
                    let r = simulate_ticks(&TickSimConfig::new(seed, slots));
                    (r, t.elapsed().as_secs_f64())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (r, secs) in &reports {
        eprintln!("{}", r.summary(*secs));
    }
    for (r, _) in &reports {
        check(r, slots);
    }
    // The runs must have exercised what the index carries, or the checks
    // above could pass without it.
    let sum = |f: fn(&TickSimReport) -> u64| reports.iter().map(|(r, _)| f(r)).sum::<u64>();
    let seen = [
        (
            "jobs brought by the wake index alone",
            sum(|r| r.woken_served),
        ),
        ("woken jobs that ran a slot", sum(|r| r.woken_ran)),
        ("tick_start failures", sum(|r| r.tick_start_errors)),
        ("tick_end answers lost", sum(|r| r.tick_end_ambiguous)),
        ("ticker crashes", sum(|r| r.ticker_crashes)),
        ("doubled ticks", sum(|r| r.double_ticks)),
        ("outages", sum(|r| r.outages)),
        ("backfilled slots", sum(|r| r.backfilled_slots)),
        ("redriven slots", sum(|r| r.redriven_slots)),
        ("calm waits watched", sum(|r| r.calm_waits_watched)),
        (
            "calm lease expiries watched",
            sum(|r| r.calm_expiries_watched),
        ),
    ];
    for (what, n) in seen {
        assert!(n > 0, "tick simulation: no {what}");
    }
}

/// Same seed, same run.
#[test]
fn tick_simulation_replays_by_seed() {
    let cfg = TickSimConfig::new(42, 300);
    let a = simulate_ticks(&cfg);
    let b = simulate_ticks(&cfg);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.store, b.store);
    let c = simulate_ticks(&TickSimConfig::new(43, 300));
    assert_ne!(a.trace_hash, c.trace_hash, "another seed, another run");
}
