//! One conformance suite for every coordinator (docs/design.md §5), in the manner
//! of `object_store`'s `integration` module: async functions that take any
//! [`Coordinator`] and assert the guarantees of docs/design.md §3. Memory and
//! SQLite run it in `cargo test`; DynamoDB (moto) and the Durable Object
//! (workerd) run the same functions.
//!
//! Each function uses its own job names under a namespace `ns` (lowercase
//! letters, digits, `-`), so one store can host every test, and a rerun
//! against a persistent store can pick a new namespace. Time is virtual:
//! every instant is passed in.
//!
//! This is test code: a failed expectation panics, which fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::coord::exec::join_all;
use crate::coord::{
    Claim, CoordError, Coordinator, EffectBegin, FailOutcome, Idle, JobContext, Lease, MissReason,
    Origin, Refusal, SkipReason, Trigger, TriggerError,
};
use crate::manifest::{JobSpec, parse_manifest};

/// Every test of the suite, named once. [`TESTS`](crate::conformance::TESTS),
/// [`run`](crate::conformance::run) and the `#[test]` functions of
/// [`conformance_suite!`](crate::conformance_suite) are generated from this
/// list, so they cannot disagree; a store's test file names no test (it
/// invokes `conformance_suite!`), so it cannot miss one. A unit test of this
/// module checks that every `pub async fn name<C: Coordinator>(c: &C, ns:
/// &str)` of the module is on the list.
///
/// `conformance_tests!([path::to::callback] args…)` expands to
/// `path::to::callback! { args…; first_claim_wins, …, manual_trigger_keeps_fates }`:
/// the tokens in brackets name the macro to call, and whatever follows them
/// is handed back before the `;`.
#[macro_export]
macro_rules! conformance_tests {
    ([$($callback:tt)*] $($args:tt)*) => {
        $($callback)*! {
            $($args)*;
            first_claim_wins,
            concurrent_claimers_run_each_slot_once,
            overlap_forbid,
            overlap_allow,
            overlap_replace,
            lease_expiry_takeover_with_higher_fence,
            redelivery_after_lease_expiry_retries,
            superseded_completion_refused,
            transient_failure_retries_same_slot,
            exhausted_retries_dead_then_redrive,
            catch_up_latest_after_outage,
            catch_up_all_after_outage,
            catch_up_none_after_outage,
            pause_and_resume,
            at_most_once,
            effect_ledger_skips_recorded_effect,
            checkpoint_resumes_on_retry,
            schedule_change_keeps_cursor,
            dedicated_trigger_for_non_slot_is_refused,
            backfill_runs_past_slots,
            heartbeat_extends_lease,
            manual_trigger_keeps_fates,
        }
    };
}

/// `TESTS` and `run`, from the list of [`conformance_tests!`](crate::conformance_tests).
macro_rules! tests_and_run {
    (; $($name:ident),* $(,)?) => {
        /// Every test of the suite, by name, for runners that iterate.
        pub const TESTS: &[&str] = &[$(stringify!($name)),*];

        /// Runs the named test; `false` when the name is unknown.
        pub async fn run<C: Coordinator>(name: &str, c: &C, ns: &str) -> bool {
            match name {
                $(stringify!($name) => $name(c, ns).await,)*
                _ => return false,
            }
            true
        }
    };
}

crate::conformance_tests!([tests_and_run]);

/// A Monday, 00:00 UTC: the suite's time zero.
pub fn t0() -> Timestamp {
    "2026-01-05T00:00:00Z".parse().expect("valid instant")
}

/// `t0` plus whole seconds.
pub fn at(seconds: i64) -> Timestamp {
    t0().checked_add(SignedDuration::from_secs(seconds))
        .expect("in range")
}

/// A minute, in seconds (for [`at`]).
pub const MIN: i64 = 60;
/// An hour, in seconds (for [`at`]).
pub const HOUR: i64 = 3600;

/// A job spec from manifest lines (`name` and `schedule` included).
pub fn job(ns: &str, name: &str, body: &str) -> JobSpec {
    let text = format!("[[job]]\nname = \"{ns}-{name}\"\n{body}\n");
    let manifest = parse_manifest(&text, "conformance.toml")
        .unwrap_or_else(|e| panic!("conformance manifest is invalid:\n{e}"));
    manifest.jobs.into_iter().next().expect("one job")
}

/// Creates the job's record at `now` (a claim with nothing due).
pub async fn create<C: Coordinator>(c: &C, spec: &JobSpec, now: Timestamp) {
    match c.claim(spec, now, Trigger::Tick, "creator").await {
        Ok(Claim::Idle(_)) => {}
        other => panic!(
            "creating {} claimed something: {other:?}",
            spec.name.as_str()
        ),
    }
}

async fn claimed<C: Coordinator>(
    c: &C,
    spec: &JobSpec,
    now: Timestamp,
    trigger: Trigger,
    owner: &str,
) -> Lease {
    match c.claim(spec, now, trigger, owner).await {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("{owner} expected a claim at {now}, got {other:?}"),
    }
}

async fn idle<C: Coordinator>(
    c: &C,
    spec: &JobSpec,
    now: Timestamp,
    trigger: Trigger,
    owner: &str,
) -> Idle {
    match c.claim(spec, now, trigger, owner).await {
        Ok(Claim::Idle(idle)) => idle,
        other => panic!("{owner} expected no claim at {now}, got {other:?}"),
    }
}

/// First claim wins; a duplicate delivery of the same slot is refused while
/// it runs and after it resolved.
pub async fn first_claim_wins<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "first",
        "schedule = \"* * * * *\"\noverlap = \"allow\"\nmax_concurrency = 10",
    );
    create(c, &spec, t0()).await;
    let slot = at(MIN);
    let a = claimed(c, &spec, at(MIN + 1), Trigger::Slot(slot), "a").await;
    assert_eq!(a.slot, slot);
    assert_eq!(a.attempt, 1);
    let dup = idle(c, &spec, at(MIN + 2), Trigger::Slot(slot), "b").await;
    assert_eq!(
        dup,
        Idle::InProgress {
            slot,
            fence: a.fence
        }
    );
    c.complete(&spec, a.fence, Some("ok"), at(MIN + 3))
        .await
        .expect("complete");
    let dup = idle(c, &spec, at(MIN + 4), Trigger::Slot(slot), "b").await;
    assert_eq!(dup, Idle::AlreadyResolved { slot });
    let tick = idle(c, &spec, at(MIN + 5), Trigger::Tick, "b").await;
    assert!(matches!(tick, Idle::NothingDue { .. }), "{tick:?}");
    let state = c.status(&spec, at(MIN + 6)).await.expect("status");
    assert_eq!(state.counters.runs, 1);
    assert_eq!(state.counters.succeeded, 1);
}

/// 32 concurrent claimers over 200 due slots: each slot runs exactly once.
pub async fn concurrent_claimers_run_each_slot_once<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "crowd",
        "schedule = \"* * * * *\"\ncatch_up = \"all\"\nmax_catch_up = 200\n\
         starting_deadline = \"1d\"\noverlap = \"allow\"\nmax_concurrency = 100",
    );
    create(c, &spec, t0()).await;
    let now = at(200 * MIN + 1);
    let workers: Vec<_> = (0..32)
        .map(|i| {
            let spec = &spec;
            async move {
                let owner = format!("worker-{i}");
                let mut mine = Vec::new();
                loop {
                    match c.claim(spec, now, Trigger::Tick, &owner).await {
                        Ok(Claim::Claimed(lease)) => {
                            mine.push(lease.slot);
                            // Contention is transient: a runner retries its
                            // report until the lease runs out, and so does
                            // this worker (32 writers on one record can
                            // outrun one of them 64 times on a slow store).
                            let mut tries = 0;
                            loop {
                                match c.complete(spec, lease.fence, None, now).await {
                                    Ok(()) => break,
                                    Err(CoordError::Contention { .. }) if tries < 1_000 => {
                                        tries += 1;
                                    }
                                    Err(e) => panic!("complete own lease: {e}"),
                                }
                            }
                        }
                        Ok(Claim::Idle(Idle::NothingDue { .. })) => break,
                        Ok(Claim::Idle(Idle::Busy { .. })) => continue,
                        Ok(Claim::Idle(other)) => panic!("unexpected idle {other:?}"),
                        Err(CoordError::Contention { .. }) => continue,
                        Err(e) => panic!("claim failed: {e}"),
                    }
                }
                mine
            }
        })
        .collect();
    let results = join_all(workers).await;
    let mut runs: BTreeMap<Timestamp, usize> = BTreeMap::new();
    for slot in results.iter().flatten() {
        *runs.entry(*slot).or_default() += 1;
    }
    assert_eq!(runs.len(), 200, "every slot runs");
    assert!(runs.values().all(|n| *n == 1), "no slot runs twice");
    assert_eq!(runs.keys().next(), Some(&at(MIN)));
    assert_eq!(runs.keys().last(), Some(&at(200 * MIN)));
    let state = c.status(&spec, now).await.expect("status");
    assert_eq!(state.counters.runs, 200);
    assert_eq!(state.fence, 200, "one fence per claim");
}

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

/// A retried run skips an effect an earlier run recorded as done, and a
/// superseded run cannot start a new effect.
pub async fn effect_ledger_skips_recorded_effect<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "ledger",
        "schedule = \"0 * * * *\"\nlease = \"1m\"\nretry = { backoff = \"1s\", max_backoff = \"1s\" }",
    );
    create(c, &spec, t0()).await;
    let charges = Cell::new(0);
    let now = Cell::new(at(HOUR + 1));
    let clock = || now.get();

    let a = claimed(c, &spec, now.get(), Trigger::Tick, "a").await;
    let ctx_a = JobContext::new(c, &spec, a.clone(), &clock);
    let charge = || async {
        charges.set(charges.get() + 1);
        Ok::<_, String>("charge-42".to_string())
    };
    assert_eq!(
        ctx_a.effect("charge", charge).await.expect("effect"),
        "charge-42"
    );
    // a crashes before completing; its lease expires; b takes the slot over.
    now.set(at(HOUR + 3 * MIN));
    let b = claimed(c, &spec, now.get(), Trigger::Tick, "b").await;
    assert_eq!(b.slot, a.slot);
    let ctx_b = JobContext::new(c, &spec, b.clone(), &clock);
    assert_eq!(ctx_b.idempotency_key(), ctx_a.idempotency_key());
    let again = ctx_b.effect("charge", charge).await.expect("effect");
    assert_eq!(again, "charge-42", "the recorded result comes back");
    assert_eq!(charges.get(), 1, "the effect was not repeated");
    // The superseded run may not start a new effect.
    let stale = ctx_a
        .effect("email", || async { Ok::<_, String>("sent".into()) })
        .await;
    assert!(
        matches!(stale, Err(crate::coord::EffectError::Superseded { .. })),
        "{stale:?}"
    );
    let begin = c
        .begin_effect(
            &spec,
            &ctx_a.effect_key("email"),
            "a",
            a.fence,
            now.get(),
            Duration::from_secs(60),
        )
        .await
        .expect("begin");
    assert!(matches!(begin, EffectBegin::Superseded { .. }), "{begin:?}");
    c.complete(&spec, b.fence, None, now.get())
        .await
        .expect("complete");
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

/// A dedicated trigger for an instant that is not a slot is refused, not
/// silently accepted.
pub async fn dedicated_trigger_for_non_slot_is_refused<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(ns, "notaslot", "schedule = \"0 * * * *\"");
    create(c, &spec, t0()).await;
    let result = c
        .claim(&spec, at(HOUR + 1), Trigger::Slot(at(HOUR + 90)), "a")
        .await;
    assert_eq!(
        result,
        Err(CoordError::Trigger(TriggerError::NotASlot {
            slot: at(HOUR + 90)
        }))
    );
    let early = idle(c, &spec, at(HOUR + 1), Trigger::Slot(at(2 * HOUR)), "a").await;
    assert_eq!(early, Idle::NotYetDue { slot: at(2 * HOUR) });
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

/// Runs every test of the suite, each in its own namespace under `ns`,
/// with `block_on` driving the futures.
pub fn run_all_blocking<C: Coordinator>(make: impl Fn() -> C, ns: &str) {
    for name in TESTS {
        let c = make();
        let ns = format!("{ns}-{}", name.replace('_', "-"));
        let future = run(name, &c, &ns);
        assert!(block_on_named(name, future), "unknown test {name}");
    }
}

fn block_on_named<F: Future<Output = bool>>(name: &str, f: F) -> bool {
    eprintln!("conformance: {name}");
    crate::coord::exec::block_on(f)
}

/// Declares one `#[test]` per conformance test (the list of
/// [`conformance_tests!`](crate::conformance_tests), so a failure names its
/// test) for a coordinator made by
/// `$make` (an expression evaluated afresh in each test), driven by
/// `$block_on` (`cronslot_core::coord::exec::block_on` for stores without a
/// runtime; a runtime's `block_on` otherwise).
#[macro_export]
macro_rules! conformance_suite {
    ($make:expr, $block_on:path, $ns:literal) => {
        $crate::conformance_tests!([$crate::conformance_suite] @each $make, $block_on, $ns);
    };
    (@each $make:expr, $block_on:path, $ns:literal; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let coordinator = $make;
                $block_on($crate::conformance::$name(
                    &coordinator,
                    concat!($ns, "-", stringify!($name)),
                ));
            }
        )*
    };
}

/// A record written by schema version 1 (the first layout), for job `job`.
/// Every later cronslot must keep reading it: this text never changes.
pub fn schema_1_record(job: &str) -> String {
    format!(
        r#"{{
  "schema": 1,
  "job": "{job}",
  "spec_hash": "0000000000000000",
  "created_at": "2026-01-05T00:00:00Z",
  "cursor": "2026-01-05T01:00:00Z",
  "fence": 4,
  "leases": [],
  "pending": [],
  "dead": [{{"slot": "2026-01-05T00:30:00Z", "attempts": 3, "last_error": "boom", "fence": 3, "died_at": "2026-01-05T00:40:00Z"}}],
  "history": [{{"slot": "2026-01-05T01:00:00Z", "attempt": 1, "fence": 4, "owner": "w", "started_at": "2026-01-05T01:00:01Z", "finished_at": "2026-01-05T01:00:02Z", "outcome": "succeeded"}}],
  "counters": {{"runs": 4, "succeeded": 1, "failed": 3, "dead": 1, "missed": {{"downtime": 2}}, "skipped": {{}}}},
  "paused": false
}}"#
    )
}

/// A record stored by schema version 1 loads, and the job runs on from it:
/// its fence continues, its dead letter stays, the schedule change (the
/// fixture's spec hash is not the job's) is noticed. `put_raw(job, text)`
/// writes a raw record into the coordinator's store.
pub async fn schema_1_record_loads<C, F, Fut>(c: &C, ns: &str, put_raw: F)
where
    C: Coordinator,
    F: Fn(String, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let spec = job(ns, "legacy", "schedule = \"0 * * * *\"");
    let name = spec.name.as_str().to_string();
    put_raw(name.clone(), schema_1_record(&name)).await;
    let state = c
        .status(&spec, at(HOUR + 1))
        .await
        .expect("old record loads");
    assert_eq!(state.dead.len(), 1);
    assert_eq!(state.counters.missed_total(), 2);
    let a = claimed(c, &spec, at(2 * HOUR + 1), Trigger::Tick, "a").await;
    assert_eq!(a.slot, at(2 * HOUR));
    assert_eq!(a.fence, 5, "fences continue from the stored counter");
    c.complete(&spec, a.fence, None, at(2 * HOUR + 2))
        .await
        .expect("complete");
    let state = c.status(&spec, at(2 * HOUR + 3)).await.expect("status");
    assert_eq!(state.schema, crate::coord::SCHEMA_VERSION);
    assert!(
        state.last_schedule_change.is_some(),
        "the spec hash changed"
    );
    assert_eq!(state.dead.len(), 1);
}

#[cfg(test)]
mod tests {
    use super::TESTS;

    /// The tests of this file: every `pub async fn` that takes only a
    /// coordinator and a namespace.
    fn test_functions() -> Vec<String> {
        let source = include_str!("conformance.rs");
        let mut found = Vec::new();
        for (at, _) in source.match_indices("\npub async fn ") {
            let rest = &source[at + "\npub async fn ".len()..];
            let Some(end) = rest.find('{') else { continue };
            let signature: String = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
            if let Some(name) = signature.strip_suffix("<C: Coordinator>(c: &C, ns: &str)") {
                found.push(name.to_string());
            }
        }
        found
    }

    #[test]
    fn every_test_function_is_on_the_list() {
        let functions = test_functions();
        assert!(functions.len() > 10, "the scan found {functions:?}");
        let missing: Vec<_> = functions
            .iter()
            .filter(|f| !TESTS.contains(&f.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "conformance tests missing from `conformance_tests!`: {missing:?}"
        );
        // And the other way round (`run` would not compile otherwise, but
        // a name listed twice would).
        let mut listed: Vec<&str> = TESTS.to_vec();
        listed.sort_unstable();
        listed.dedup();
        assert_eq!(listed.len(), TESTS.len(), "a test is listed twice");
        assert_eq!(listed.len(), functions.len());
    }

    #[test]
    fn run_refuses_an_unknown_name() {
        use crate::coord::exec::block_on;
        use crate::coord::{CasCoordinator, MemoryStore};
        let c = CasCoordinator::new(MemoryStore::new(), 7);
        assert!(!block_on(super::run("no_such_test", &c, "x")));
    }
}
