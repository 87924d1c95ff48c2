//! The overlap policies (`forbid`, `allow`, `replace`): what a new slot
//! does while a run of the job holds a lease.

use super::*;

/// `forbid`: a new slot waits while a run holds a lease.
pub async fn overlap_forbid<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "forbid",
        "schedule = \"* * * * *\"\ncatch_up = \"all\"\nmax_catch_up = 5",
    );
    create(c, &spec, t0()).await;
    let a = claimed(c, &spec, at(MIN + 1), Trigger::Tick, "a").await;
    assert_eq!(a.slot, at(MIN));
    let busy = idle(c, &spec, at(2 * MIN + 1), Trigger::Tick, "b").await;
    assert_eq!(busy, Idle::Busy { live: 1 });
    c.complete(&spec, a.fence, None, at(2 * MIN + 5))
        .await
        .expect("complete");
    let b = claimed(c, &spec, at(2 * MIN + 6), Trigger::Tick, "b").await;
    assert_eq!(b.slot, at(2 * MIN));
    assert!(b.fence > a.fence);
}

/// `allow`: up to `max_concurrency` live leases.
pub async fn overlap_allow<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "allow",
        "schedule = \"* * * * *\"\ncatch_up = \"all\"\nmax_catch_up = 5\n\
         overlap = \"allow\"\nmax_concurrency = 2",
    );
    create(c, &spec, t0()).await;
    let now = at(3 * MIN + 1);
    let a = claimed(c, &spec, now, Trigger::Tick, "a").await;
    let b = claimed(c, &spec, now, Trigger::Tick, "b").await;
    assert_eq!((a.slot, b.slot), (at(MIN), at(2 * MIN)));
    let busy = idle(c, &spec, now, Trigger::Tick, "c").await;
    assert_eq!(busy, Idle::Busy { live: 2 });
    c.complete(&spec, a.fence, None, now)
        .await
        .expect("complete");
    let third = claimed(c, &spec, now, Trigger::Tick, "c").await;
    assert_eq!(third.slot, at(3 * MIN));
}

/// `replace`: the new claim supersedes the old lease; the old run's
/// completion is refused and its slot counts as missed (overlap).
pub async fn overlap_replace<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "replace",
        "schedule = \"* * * * *\"\noverlap = \"replace\"",
    );
    create(c, &spec, t0()).await;
    let a = claimed(c, &spec, at(MIN + 1), Trigger::Tick, "a").await;
    let b = claimed(c, &spec, at(2 * MIN + 1), Trigger::Tick, "b").await;
    assert_eq!(b.slot, at(2 * MIN));
    assert!(b.fence > a.fence);
    let refused = c.complete(&spec, a.fence, None, at(2 * MIN + 2)).await;
    assert!(
        matches!(
            refused,
            Err(CoordError::Refused(Refusal::Superseded { .. }))
        ),
        "{refused:?}"
    );
    c.complete(&spec, b.fence, None, at(2 * MIN + 3))
        .await
        .expect("new lease completes");
    let state = c.status(&spec, at(2 * MIN + 4)).await.expect("status");
    assert_eq!(state.counters.missed.get(&MissReason::Overlap), Some(&1));
    assert_eq!(state.counters.succeeded, 1);
}
