//! Catching up after an outage: the `latest`, `all` and `none` policies
//! on one shared outage, and what each slot is recorded as.

use super::*;

/// The outage shared by the catch-up tests: a `*/10` job created at t0,
/// nothing runs for two hours (12 due slots), starting deadline 30 minutes.
fn outage_job(ns: &str, name: &str, policy: &str) -> JobSpec {
    job(
        ns,
        name,
        &format!("schedule = \"*/10 * * * *\"\nstarting_deadline = \"30m\"\n{policy}"),
    )
}

/// `latest`: only the newest due slot runs; the other eleven are missed
/// (nine past the deadline: downtime; two within it: catch-up).
pub async fn catch_up_latest_after_outage<C: Coordinator>(c: &C, ns: &str) {
    let spec = outage_job(ns, "latest", "catch_up = \"latest\"");
    create(c, &spec, t0()).await;
    let now = at(2 * HOUR + 1);
    let a = claimed(c, &spec, now, Trigger::Tick, "a").await;
    assert_eq!(a.slot, at(2 * HOUR));
    c.complete(&spec, a.fence, None, now)
        .await
        .expect("complete");
    let nothing = idle(c, &spec, now, Trigger::Tick, "a").await;
    assert!(matches!(nothing, Idle::NothingDue { .. }));
    let state = c.status(&spec, now).await.expect("status");
    assert_eq!(state.counters.missed.get(&MissReason::Downtime), Some(&9));
    assert_eq!(state.counters.missed.get(&MissReason::CatchUp), Some(&2));
    assert_eq!(state.counters.runs, 1);
}

/// `all` with `max_catch_up = 2`: the two newest late slots run, oldest
/// first; the rest are missed with their reasons.
pub async fn catch_up_all_after_outage<C: Coordinator>(c: &C, ns: &str) {
    let spec = outage_job(ns, "all", "catch_up = \"all\"\nmax_catch_up = 2");
    create(c, &spec, t0()).await;
    let now = at(2 * HOUR + 1);
    let mut slots = Vec::new();
    for _ in 0..2 {
        let l = claimed(c, &spec, now, Trigger::Tick, "a").await;
        slots.push(l.slot);
        c.complete(&spec, l.fence, None, now)
            .await
            .expect("complete");
    }
    assert_eq!(slots, vec![at(110 * MIN), at(120 * MIN)]);
    let nothing = idle(c, &spec, now, Trigger::Tick, "a").await;
    assert!(matches!(nothing, Idle::NothingDue { .. }));
    let state = c.status(&spec, now).await.expect("status");
    assert_eq!(state.counters.missed.get(&MissReason::Downtime), Some(&9));
    assert_eq!(state.counters.missed.get(&MissReason::CatchUp), Some(&1));
    assert_eq!(state.counters.missed_total() + state.counters.runs, 12);
}

/// `none`: nothing late runs. The newest slot is five minutes old here,
/// so all twelve are missed.
pub async fn catch_up_none_after_outage<C: Coordinator>(c: &C, ns: &str) {
    let spec = outage_job(ns, "none", "catch_up = \"none\"");
    create(c, &spec, t0()).await;
    let now = at(2 * HOUR + 5 * MIN);
    let nothing = idle(c, &spec, now, Trigger::Tick, "a").await;
    assert!(matches!(nothing, Idle::NothingDue { .. }), "{nothing:?}");
    let state = c.status(&spec, now).await.expect("status");
    assert_eq!(state.counters.missed.get(&MissReason::Downtime), Some(&9));
    assert_eq!(state.counters.missed.get(&MissReason::CatchUp), Some(&3));
    // On time, the next slot runs.
    let a = claimed(c, &spec, at(130 * MIN + 2), Trigger::Tick, "a").await;
    assert_eq!(a.slot, at(130 * MIN));
}
