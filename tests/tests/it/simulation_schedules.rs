//! The simulation of schedules as data (`cronslot_tests::sim::schedules`):
//! clients write, change, pause, delete and re-create schedules while
//! workers tick and the store fails now and then; every seed is checked
//! for once per slot, no slot after an acknowledged delete, no lost
//! conditional update, increasing fences and nothing stuck.
//! `CRONSLOT_SIM_SEEDS=N` runs more seeds.

use cronslot_tests::sim::schedules::run_schedule_sim;

fn seeds() -> u64 {
    std::env::var("CRONSLOT_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24)
}

#[test]
fn schedules_change_under_runs_and_faults_without_a_lost_or_doubled_slot() {
    let mut totals = (0, 0, 0, 0, 0);
    for seed in 1..=seeds() {
        let r = run_schedule_sim(seed, 90);
        totals.0 += r.changes;
        totals.1 += r.deletes;
        totals.2 += r.refused;
        totals.3 += r.failed_writes;
        totals.4 += r.runs;
    }
    eprintln!(
        "changes {}, deletes {}, refused {}, failed writes {}, runs {}",
        totals.0, totals.1, totals.2, totals.3, totals.4
    );
    // The seeds exercise what they claim to: every kind of write, refusals
    // of stale conditional writes, store failures, and runs.
    assert!(
        totals.0 > 0 && totals.1 > 0 && totals.2 > 0 && totals.3 > 0 && totals.4 > 0,
        "{totals:?}"
    );
}

#[test]
fn a_seed_replays_exactly() {
    assert_eq!(run_schedule_sim(7, 60), run_schedule_sim(7, 60));
}
