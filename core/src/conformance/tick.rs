//! The tick index contract ([`tick_index_contract`]), which needs a
//! store that has never ticked, so it is not on the list that
//! `conformance_suite!` runs.

use super::*;

/// The [`TickIndex`] contract, on a store that has never ticked (the mark
/// is per store, so this needs a fresh one), judging leases by the
/// caller's clock. Every instant is virtual and far from the real one.
///
/// - The first tick finds no mark and nothing woken; the mark only moves
///   forward.
/// - A claim's lease is woken once its expiry and the skew margin have
///   passed, not before; its completion clears the wake.
/// - A transient failure's retry is woken at its `not_before`.
/// - Woken jobs come earliest wake first, at most the limit.
/// - A second completion of one fence changes nothing, wake included.
pub async fn tick_index_contract<S>(store: S, ns: &str)
where
    S: crate::coord::StateStore + crate::coord::EffectLedger + crate::coord::TickIndex + Clone,
{
    use crate::coord::CasCoordinator;

    let first = store.tick_start(at(0), 10).await.expect("tick start");
    assert_eq!(first.mark, None, "a fresh store has no mark");
    assert!(first.woken.is_empty(), "{:?}", first.woken);
    store.tick_end(at(MIN)).await.expect("tick end");
    store
        .tick_end(at(30))
        .await
        .expect("an earlier mark is no error");
    let start = store.tick_start(at(2 * MIN), 10).await.expect("tick start");
    assert_eq!(start.mark, Some(at(MIN)), "the mark never moves back");
    store.tick_end(at(2 * MIN)).await.expect("tick end");
    let start = store.tick_start(at(2 * MIN), 10).await.expect("tick start");
    assert_eq!(start.mark, Some(at(2 * MIN)));

    let c = CasCoordinator::new(store.clone(), 11);
    let woken = |now: Timestamp, limit: usize| {
        let store = store.clone();
        async move {
            store
                .tick_start(now, limit)
                .await
                .expect("tick start")
                .woken
        }
    };
    let body = "schedule = \"0 * * * *\"\nlease = \"1m\"\nretry = { max_attempts = 3, backoff = \"10s\", max_backoff = \"10s\" }";
    let a = job(ns, "wake-a", body);
    let b = job(ns, "wake-b", body);
    let d = job(ns, "wake-d", body);
    for spec in [&a, &b, &d] {
        create(&c, spec, t0()).await;
    }
    assert!(
        woken(at(3 * HOUR), 10).await.is_empty(),
        "records without wakes"
    );

    // a: claimed at 1h + 1s, lease 1 m, skew margin 5 s.
    let lease = claimed(&c, &a, at(HOUR + 1), Trigger::Tick, "w").await;
    let expiry = lease.expires_at + SignedDuration::from_secs(5);
    assert!(
        woken(expiry, 10).await.is_empty(),
        "not before the skew margin has passed"
    );
    let after_expiry = expiry + SignedDuration::from_millis(1);
    // Where the store reads it with the index, the earliest wake after the
    // instant: the lease's expiry (none is earlier).
    let next = store
        .tick_start(at(HOUR + 2), 10)
        .await
        .expect("tick start")
        .next_wake;
    assert!(
        next.is_none_or(|t| t > at(HOUR + 2) && t <= after_expiry),
        "{next:?} is not the next wake ({after_expiry})"
    );
    assert_eq!(
        woken(after_expiry, 10).await,
        vec![a.name.as_str().to_string()]
    );
    c.complete(&a, lease.fence, None, at(HOUR + 30))
        .await
        .expect("complete");
    assert!(
        woken(at(3 * HOUR), 10).await.is_empty(),
        "completion clears the wake"
    );

    // b: fails transiently at 1h + 2s: its retry is woken at not_before.
    let lease = claimed(&c, &b, at(HOUR + 2), Trigger::Tick, "w").await;
    let not_before = match c.fail(&b, lease.fence, "flaky", false, at(HOUR + 3)).await {
        Ok(FailOutcome::RetryAt(t)) => t,
        other => panic!("expected a retry, got {other:?}"),
    };
    let just_before = not_before - SignedDuration::from_millis(1);
    assert!(
        woken(just_before, 10).await.is_empty(),
        "not before the retry's time"
    );
    assert_eq!(
        woken(not_before, 10).await,
        vec![b.name.as_str().to_string()]
    );

    // d: claimed after b failed, so its lease expires after b's retry.
    let lease_d = claimed(&c, &d, at(HOUR + 4), Trigger::Tick, "w").await;
    let late = lease_d.expires_at + SignedDuration::from_secs(60);
    let names = |specs: &[&JobSpec]| -> Vec<String> {
        specs.iter().map(|s| s.name.as_str().to_string()).collect()
    };
    assert_eq!(
        woken(late, 10).await,
        names(&[&b, &d]),
        "earliest wake first"
    );
    assert_eq!(woken(late, 1).await, names(&[&b]), "at most the limit");

    // Another coordinator completes d a second time: no wake comes back.
    let other = CasCoordinator::new(store.clone(), 12);
    c.complete(&d, lease_d.fence, None, at(HOUR + 6))
        .await
        .expect("complete");
    let again = other.complete(&d, lease_d.fence, None, at(HOUR + 7)).await;
    assert!(
        again.is_ok(),
        "completing twice with one fence is no error: {again:?}"
    );
    assert_eq!(
        woken(late, 10).await,
        names(&[&b]),
        "d's wake is gone with its lease"
    );
}
