//! Failures: a transient failure retries the same slot, exhausted
//! retries make it dead until a redrive, `at_most_once` never retries,
//! and a checkpoint reaches the retry.

use super::*;

/// A transient failure retries the same slot after a backoff, then succeeds.
pub async fn transient_failure_retries_same_slot<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "transient",
        "schedule = \"0 * * * *\"\nretry = { max_attempts = 3, backoff = \"30s\", max_backoff = \"30s\" }",
    );
    create(c, &spec, t0()).await;
    let a = claimed(c, &spec, at(HOUR + 1), Trigger::Tick, "a").await;
    let outcome = c
        .fail(&spec, a.fence, "upstream 503", false, at(HOUR + 2))
        .await
        .expect("fail");
    let FailOutcome::RetryAt(not_before) = outcome else {
        panic!("expected a retry, got {outcome:?}");
    };
    assert!(not_before >= at(HOUR + 2) && not_before <= at(HOUR + 32));
    let b = claimed(c, &spec, at(HOUR + 33), Trigger::Tick, "b").await;
    assert_eq!((b.slot, b.attempt), (a.slot, 2));
    assert!(b.fence > a.fence);
    c.complete(&spec, b.fence, None, at(HOUR + 40))
        .await
        .expect("complete");
    let state = c.status(&spec, at(HOUR + 41)).await.expect("status");
    assert_eq!((state.counters.failed, state.counters.succeeded), (1, 1));
    assert!(state.dead.is_empty());
}

/// Exhausted retries make the slot dead; redrive runs it again.
pub async fn exhausted_retries_dead_then_redrive<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "exhausted",
        "schedule = \"0 * * * *\"\nretry = { max_attempts = 2, backoff = \"10s\", max_backoff = \"10s\" }",
    );
    create(c, &spec, t0()).await;
    let a = claimed(c, &spec, at(HOUR + 1), Trigger::Tick, "a").await;
    c.fail(&spec, a.fence, "boom 1", false, at(HOUR + 2))
        .await
        .expect("fail");
    let b = claimed(c, &spec, at(HOUR + 20), Trigger::Tick, "a").await;
    assert_eq!(b.attempt, 2);
    let outcome = c
        .fail(&spec, b.fence, "boom 2", false, at(HOUR + 21))
        .await
        .expect("fail");
    assert_eq!(outcome, FailOutcome::Dead);
    let state = c.status(&spec, at(HOUR + 22)).await.expect("status");
    assert_eq!(state.dead.len(), 1);
    assert_eq!(state.dead[0].slot, at(HOUR));
    assert_eq!(state.dead[0].attempts, 2);
    assert!(state.dead[0].last_error.contains("boom 2"));
    assert_eq!(state.counters.dead, 1);

    let redriven = c
        .redrive(&spec, None, at(HOUR + 30))
        .await
        .expect("redrive");
    assert_eq!(redriven, vec![at(HOUR)]);
    let r = claimed(c, &spec, at(HOUR + 31), Trigger::Tick, "a").await;
    assert_eq!(
        (r.slot, r.attempt, r.origin),
        (at(HOUR), 1, Origin::Redrive)
    );
    c.complete(&spec, r.fence, None, at(HOUR + 32))
        .await
        .expect("complete");
    let state = c.status(&spec, at(HOUR + 33)).await.expect("status");
    assert!(state.dead.is_empty());
    assert_eq!(state.counters.redriven, 1);
}

/// `at_most_once`: a failed or crashed run is never retried; the slot is a
/// dead letter for an operator to look at.
pub async fn at_most_once<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "amo",
        "schedule = \"0 * * * *\"\ndelivery = \"at_most_once\"\nlease = \"1m\"",
    );
    create(c, &spec, t0()).await;
    let a = claimed(c, &spec, at(HOUR + 1), Trigger::Tick, "a").await;
    let outcome = c
        .fail(&spec, a.fence, "transient", false, at(HOUR + 2))
        .await
        .expect("fail");
    assert_eq!(outcome, FailOutcome::Dead);
    let b = claimed(c, &spec, at(2 * HOUR + 1), Trigger::Tick, "a").await;
    assert_eq!(b.slot, at(2 * HOUR));
    // b crashes: its lease expires, and the slot is not run again.
    let nothing = idle(c, &spec, at(2 * HOUR + 10 * MIN), Trigger::Tick, "b").await;
    assert!(matches!(nothing, Idle::NothingDue { .. }), "{nothing:?}");
    let state = c
        .status(&spec, at(2 * HOUR + 11 * MIN))
        .await
        .expect("status");
    assert_eq!(state.dead.len(), 2);
    assert_eq!(state.counters.runs, 2);
    assert!(state.pending.is_empty());
}

/// A checkpoint saved by a failed attempt reaches the retry.
pub async fn checkpoint_resumes_on_retry<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "checkpoint",
        "schedule = \"0 * * * *\"\nretry = { max_attempts = 3, backoff = \"10s\", max_backoff = \"10s\" }",
    );
    create(c, &spec, t0()).await;
    let a = claimed(c, &spec, at(HOUR + 1), Trigger::Tick, "a").await;
    assert_eq!(a.checkpoint, None);
    c.checkpoint(&spec, a.fence, "page=90", at(HOUR + 2))
        .await
        .expect("checkpoint");
    let too_big = "x".repeat(crate::coord::decide::MAX_PENDING * 10);
    let refused = c.checkpoint(&spec, a.fence, &too_big, at(HOUR + 2)).await;
    assert!(matches!(
        refused,
        Err(CoordError::Refused(Refusal::TooLarge { .. }))
    ));
    c.fail(&spec, a.fence, "disk full", false, at(HOUR + 3))
        .await
        .expect("fail");
    let b = claimed(c, &spec, at(HOUR + 20), Trigger::Tick, "b").await;
    assert_eq!(b.checkpoint.as_deref(), Some("page=90"));
    c.complete(&spec, b.fence, None, at(HOUR + 21))
        .await
        .expect("complete");
}
