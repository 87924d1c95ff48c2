//! What an operator does: pause and resume, a manual trigger, a
//! backfill, and a changed schedule.

use super::*;

/// Paused: due slots are skipped (reason: paused); after resume the next
/// slot runs, not the skipped ones.
pub async fn pause_and_resume<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(ns, "pause", "schedule = \"0 * * * *\"");
    create(c, &spec, t0()).await;
    c.pause(&spec, at(1)).await.expect("pause");
    let paused = idle(c, &spec, at(HOUR + 1), Trigger::Tick, "a").await;
    assert_eq!(paused, Idle::Paused);
    c.resume(&spec, at(3 * HOUR + 2)).await.expect("resume");
    let state = c.status(&spec, at(3 * HOUR + 3)).await.expect("status");
    assert_eq!(state.counters.skipped.get(&SkipReason::Paused), Some(&3));
    assert!(!state.paused);
    let nothing = idle(c, &spec, at(3 * HOUR + 4), Trigger::Tick, "a").await;
    assert!(matches!(nothing, Idle::NothingDue { .. }));
    let a = claimed(c, &spec, at(4 * HOUR + 1), Trigger::Tick, "a").await;
    assert_eq!(a.slot, at(4 * HOUR));
}

/// A changed schedule is noticed (spec hash), the cursor is kept, and the
/// next slots follow the new schedule.
pub async fn schedule_change_keeps_cursor<C: Coordinator>(c: &C, ns: &str) {
    let old = job(ns, "change", "schedule = \"0 * * * *\"");
    let new = job(ns, "change", "schedule = \"30 * * * *\"");
    assert_ne!(old.spec_hash(), new.spec_hash());
    create(c, &old, t0()).await;
    let a = claimed(c, &old, at(HOUR + 1), Trigger::Tick, "a").await;
    c.complete(&old, a.fence, None, at(HOUR + 2))
        .await
        .expect("complete");
    let b = claimed(c, &new, at(HOUR + 30 * MIN + 1), Trigger::Tick, "a").await;
    assert_eq!(b.slot, at(HOUR + 30 * MIN));
    let state = c
        .status(&new, at(HOUR + 30 * MIN + 2))
        .await
        .expect("status");
    let change = state.last_schedule_change.expect("change recorded");
    assert_eq!(change.from_hash, old.spec_hash());
    assert_eq!(change.to_hash, new.spec_hash());
    assert_eq!(state.cursor, at(HOUR + 30 * MIN));
}

/// An operator's trigger runs a job's current slot once. For a job that
/// never ran, that slot may predate the job's record, and then it is queued
/// although the cursor passed it; but a slot the job's record has already
/// given a fate (here missed under `catch_up = "none"`, before any run) is
/// resolved, as it is for a job that ran: running it would give it a second
/// fate, and `status` would count one slot twice (found while extending the
/// simulation's model of slot fates).
pub async fn manual_trigger_keeps_fates<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(ns, "fated", "schedule = \"0 * * * *\"\ncatch_up = \"none\"");
    create(c, &spec, t0()).await;
    // 01:00 is five minutes late when first planned: missed, nothing ran.
    let nothing = idle(c, &spec, at(HOUR + 5 * MIN), Trigger::Tick, "a").await;
    assert!(matches!(nothing, Idle::NothingDue { .. }), "{nothing:?}");
    let again = idle(c, &spec, at(HOUR + 10 * MIN), Trigger::Manual, "op").await;
    assert_eq!(again, Idle::AlreadyResolved { slot: at(HOUR) });
    let state = c.status(&spec, at(HOUR + 11 * MIN)).await.expect("status");
    assert_eq!(state.counters.missed_total(), 1);
    assert_eq!(state.counters.runs, 0);
    assert!(state.pending.is_empty(), "{:?}", state.pending);
    // A new job's current slot, older than its record, still runs.
    let fresh = job(ns, "new", "schedule = \"0 * * * *\"");
    let lease = claimed(c, &fresh, at(HOUR + 10 * MIN), Trigger::Manual, "op").await;
    assert_eq!((lease.slot, lease.origin), (at(HOUR), Origin::Manual));
}

/// Backfill queues past slots (missed ones included) and they run oldest
/// first; a dry run changes nothing.
pub async fn backfill_runs_past_slots<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "backfill",
        "schedule = \"0 * * * *\"\ncatch_up = \"none\"",
    );
    create(c, &spec, t0()).await;
    // Three slots pass with nobody running them: missed.
    let now = at(3 * HOUR + 30 * MIN);
    let nothing = idle(c, &spec, now, Trigger::Tick, "a").await;
    assert!(matches!(nothing, Idle::NothingDue { .. }));
    let planned = c
        .backfill(&spec, at(HOUR), at(2 * HOUR), now, true)
        .await
        .expect("dry run");
    assert_eq!(planned, vec![at(HOUR), at(2 * HOUR)]);
    assert!(
        c.status(&spec, now)
            .await
            .expect("status")
            .pending
            .is_empty()
    );
    let queued = c
        .backfill(&spec, at(HOUR), at(2 * HOUR), now, false)
        .await
        .expect("backfill");
    assert_eq!(queued, planned);
    let future = c.backfill(&spec, at(HOUR), at(10 * HOUR), now, false).await;
    assert!(matches!(future, Err(CoordError::Backfill(_))), "{future:?}");
    let mut ran = Vec::new();
    for _ in 0..2 {
        let l = claimed(c, &spec, now, Trigger::Tick, "a").await;
        assert_eq!(l.origin, Origin::Backfill);
        ran.push(l.slot);
        c.complete(&spec, l.fence, None, now)
            .await
            .expect("complete");
    }
    assert_eq!(ran, planned);
}
