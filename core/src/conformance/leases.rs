//! Leases and fences: an expired lease is taken over under a higher
//! fence (a redelivery or a manual trigger included), a superseded fence
//! is refused, and a heartbeat keeps a long run's lease.

use super::*;

/// A lease that expires (the worker crashed or paused) is taken over by a
/// later claim of the same slot with a higher fence.
pub async fn lease_expiry_takeover_with_higher_fence<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "takeover",
        "schedule = \"0 * * * *\"\nlease = \"1m\"\nretry = { max_attempts = 3, backoff = \"1s\", max_backoff = \"1s\" }",
    );
    create(c, &spec, t0()).await;
    let a = claimed(c, &spec, at(HOUR + 1), Trigger::Tick, "a").await;
    // Expiry is the stored expiry plus the skew margin (5 s): not yet.
    let early = idle(c, &spec, at(HOUR + MIN + 5), Trigger::Tick, "b").await;
    assert!(matches!(early, Idle::NothingDue { .. }), "{early:?}");
    let state = c.status(&spec, at(HOUR + MIN + 6)).await.expect("status");
    assert_eq!(state.leases.len(), 1, "the lease is still live");
    let b = claimed(c, &spec, at(HOUR + 2 * MIN), Trigger::Tick, "b").await;
    assert_eq!(b.slot, a.slot, "the same slot, retried");
    assert_eq!(b.attempt, 2);
    assert!(b.fence > a.fence);
    let late = c
        .complete(&spec, a.fence, None, at(HOUR + 2 * MIN + 1))
        .await;
    assert!(matches!(late, Err(CoordError::Refused(_))), "{late:?}");
    c.complete(&spec, b.fence, None, at(HOUR + 2 * MIN + 2))
        .await
        .expect("complete");
    let state = c.status(&spec, at(HOUR + 3 * MIN)).await.expect("status");
    assert!(state.leases.is_empty() && state.pending.is_empty());
    assert_eq!(state.counters.succeeded, 1);
    assert_eq!(
        state.counters.failed, 1,
        "the expired attempt counts as failed"
    );
}

/// A run that crashed holds a lease nobody renews: once it has expired, a
/// redelivery of the same slot (dedicated trigger) or an operator's manual
/// trigger retries the slot with a higher fence instead of answering "in
/// progress" forever. Before expiry both are duplicates.
pub async fn redelivery_after_lease_expiry_retries<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "redelivery",
        "schedule = \"0 * * * *\"\nlease = \"1m\"\ntrigger = \"dedicated\"\nretry = { max_attempts = 3, backoff = \"1s\", max_backoff = \"1s\" }",
    );
    let slot = at(HOUR);
    let a = claimed(c, &spec, at(HOUR + 1), Trigger::Slot(slot), "a").await;
    let early = idle(c, &spec, at(HOUR + MIN), Trigger::Slot(slot), "b").await;
    assert!(matches!(early, Idle::InProgress { .. }), "{early:?}");
    let early = idle(c, &spec, at(HOUR + MIN), Trigger::Manual, "b").await;
    assert!(matches!(early, Idle::InProgress { .. }), "{early:?}");
    // Past expiry plus the skew margin (5 s): the redelivery runs it again,
    // at once or after the retry's backoff (at most 1 s).
    let b = match c
        .claim(&spec, at(HOUR + 2 * MIN), Trigger::Slot(slot), "b")
        .await
    {
        Ok(Claim::Claimed(lease)) => lease,
        Ok(Claim::Idle(Idle::RetryLater { not_before, .. })) => {
            assert!(not_before <= at(HOUR + 2 * MIN + 1), "{not_before}");
            claimed(c, &spec, not_before, Trigger::Slot(slot), "b").await
        }
        other => panic!("the redelivery after expiry must retry the slot: {other:?}"),
    };
    assert_eq!((b.slot, b.attempt), (slot, 2));
    assert!(b.fence > a.fence);
    // The same through a manual trigger once b's lease has expired too.
    let m = claimed(c, &spec, at(HOUR + 4 * MIN), Trigger::Manual, "m").await;
    assert_eq!((m.slot, m.attempt), (slot, 3));
    assert!(m.fence > b.fence);
    c.complete(&spec, m.fence, None, at(HOUR + 4 * MIN + 1))
        .await
        .expect("complete");
}

/// Completion, heartbeat and checkpoint from a superseded fence are refused.
pub async fn superseded_completion_refused<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "superseded",
        "schedule = \"0 * * * *\"\nlease = \"1m\"\nretry = { backoff = \"1s\", max_backoff = \"1s\" }",
    );
    create(c, &spec, t0()).await;
    let a = claimed(c, &spec, at(HOUR + 1), Trigger::Tick, "a").await;
    let b = claimed(c, &spec, at(HOUR + 3 * MIN), Trigger::Tick, "b").await;
    assert!(b.fence > a.fence);
    for result in [
        c.complete(&spec, a.fence, None, at(HOUR + 3 * MIN + 1))
            .await,
        c.checkpoint(&spec, a.fence, "x", at(HOUR + 3 * MIN + 1))
            .await,
        c.heartbeat(&spec, a.fence, at(HOUR + 3 * MIN + 1))
            .await
            .map(|_| ()),
    ] {
        assert!(
            matches!(result, Err(CoordError::Refused(Refusal::Superseded { .. }))),
            "{result:?}"
        );
    }
    let failed = c
        .fail(&spec, a.fence, "late", false, at(HOUR + 3 * MIN + 1))
        .await;
    assert!(matches!(failed, Err(CoordError::Refused(_))), "{failed:?}");
}

/// A heartbeat extends a live lease, so a long run is not taken over.
pub async fn heartbeat_extends_lease<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(ns, "heartbeat", "schedule = \"0 * * * *\"\nlease = \"1m\"");
    create(c, &spec, t0()).await;
    let a = claimed(c, &spec, at(HOUR + 1), Trigger::Tick, "a").await;
    let extended = c
        .heartbeat(&spec, a.fence, at(HOUR + 50))
        .await
        .expect("heartbeat");
    assert_eq!(extended, at(HOUR + 50 + MIN));
    // Past the original expiry (HOUR + 66 s): still held, not taken over.
    let held = idle(c, &spec, at(HOUR + 100), Trigger::Tick, "b").await;
    assert!(matches!(held, Idle::NothingDue { .. }), "{held:?}");
    let state = c.status(&spec, at(HOUR + 101)).await.expect("status");
    assert_eq!(state.leases.len(), 1);
    assert_eq!(state.leases[0].fence, a.fence);
    c.complete(&spec, a.fence, None, at(HOUR + 105))
        .await
        .expect("complete");
}
