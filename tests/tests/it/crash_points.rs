//! Crash-point tests (issue 7): a run is killed at each point of its life —
//! before its claim, after its claim, after its effect, during its
//! completion (an ambiguous write), after its completion before the
//! response — and the next worker proves: the slot is retried with a higher
//! fence (or is already resolved, when the completion was applied), an
//! effect recorded in the ledger is not done again, no slot is lost, and
//! nothing stays stuck. Against the memory store and SQLite.
//!
//! A kill is the run's future dropped between two polls: every store
//! operation is an await point (`FaultStore` yields once per operation).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use cronslot_core::conformance::{at, job, t0};
use cronslot_core::coord::Operator;
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, CoordError, Coordinator, EffectLedger, Fault, Idle, JobContext, Lease,
    MemoryStore, RunOutcome, StateStore, StoreErrorKind, Trigger,
};
use cronslot_core::manifest::JobSpec;
use cronslot_runner::SqliteStore;
use cronslot_tests::sim::{FaultPlan, FaultStore};
use jiff::Timestamp;

/// Polls `fut` at most `n` times; `None` if it is still pending (then it
/// is dropped: the process died there).
fn poll_n<F: Future>(fut: F, n: usize) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..n {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return Some(out);
        }
    }
    None
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    BeforeClaim,
    AfterClaim,
    AfterEffect,
    DuringCompletion,
    AfterCompletionBeforeResponse,
}

const POINTS: [Point; 5] = [
    Point::BeforeClaim,
    Point::AfterClaim,
    Point::AfterEffect,
    Point::DuringCompletion,
    Point::AfterCompletionBeforeResponse,
];

fn spec(name: &str, schedule: &str) -> JobSpec {
    job(
        "crash",
        name,
        &format!(
            "schedule = \"{schedule}\"\nlease = \"1m\"\nskew_margin = \"5s\"\n\
         retry = {{ max_attempts = 3, backoff = \"1s\", max_backoff = \"1s\" }}"
        ),
    )
}

/// One crash point on one store: worker A is killed at `point`, worker B
/// (another process) comes after.
fn crash_at<S: StateStore + EffectLedger + Clone>(store: S, point: Point) {
    // Every five minutes: the retry of a crashed run (after its one-minute
    // lease) still starts before the next slot.
    let spec = spec(&format!("{point:?}").to_lowercase(), "*/5 * * * *");
    let plan = Rc::new(RefCell::new(FaultPlan::quiet()));
    let fs = FaultStore {
        inner: store.clone(),
        plan: plan.clone(),
    };
    let a = CasCoordinator::new(fs.clone(), 1);
    let b = CasCoordinator::new(fs.clone(), 2);
    let raw = CasCoordinator::new(store.clone(), 3);
    block_on(raw.claim(&spec, t0(), Trigger::Tick, "creator")).unwrap();
    let slot = at(300);
    let effects = Cell::new(0u32);
    let run_effect = |c: &CasCoordinator<FaultStore<S>>, lease: Lease, now: Timestamp| {
        let clock = move || now;
        let ctx = JobContext::new(c, &spec, lease, &clock);
        block_on(ctx.effect("send", || async {
            effects.set(effects.get() + 1);
            Ok("sent".to_string())
        }))
    };

    // Worker A, at slot + 1 s.
    let a_now = at(301);
    let mut a_fence = None;
    match point {
        Point::BeforeClaim => {
            // Killed before its claim reached the store.
            assert!(poll_n(a.claim(&spec, a_now, Trigger::Slot(slot), "a"), 1).is_none());
        }
        _ => {
            let Claim::Claimed(lease) =
                block_on(a.claim(&spec, a_now, Trigger::Slot(slot), "a")).unwrap()
            else {
                panic!("A must claim the slot")
            };
            assert_eq!(lease.slot, slot);
            a_fence = Some(lease.fence);
            if point != Point::AfterClaim {
                assert_eq!(run_effect(&a, lease.clone(), at(310)).unwrap(), "sent");
            }
            match point {
                Point::DuringCompletion => {
                    // The write is applied, its response lost; A dies while
                    // reading back to resolve it.
                    plan.borrow_mut()
                        .forced
                        .push_back(Some(StoreErrorKind::Ambiguous));
                    let out = poll_n(a.complete(&spec, lease.fence, Some("ok"), at(320)), 2);
                    assert!(out.is_none(), "A must die during its completion");
                }
                Point::AfterCompletionBeforeResponse => {
                    block_on(a.complete(&spec, lease.fence, Some("ok"), at(320))).unwrap();
                    // ...and A dies before telling the platform: the
                    // platform delivers the slot again.
                }
                _ => {}
            }
        }
    }

    // Worker B: a redelivery of the slot, after A's lease is past its
    // expiry plus the skew margin (301 + 60 + 5 < 370).
    let b_now = at(370);
    let completed = matches!(
        point,
        Point::DuringCompletion | Point::AfterCompletionBeforeResponse
    );
    match block_on(b.claim(&spec, b_now, Trigger::Slot(slot), "b")).unwrap() {
        Claim::Claimed(lease) => {
            assert!(!completed, "{point:?}: a completed slot ran again");
            assert_eq!(lease.slot, slot, "{point:?}: B runs the same slot");
            if let Some(f) = a_fence {
                assert!(lease.fence > f, "{point:?}: B's fence must be higher");
                assert_eq!(lease.attempt, 2, "{point:?}: a retry of the slot");
            }
            assert_eq!(run_effect(&b, lease.clone(), at(371)).unwrap(), "sent");
            block_on(b.complete(&spec, lease.fence, Some("ok"), at(372))).unwrap();
            // A's late completion (a paused A) is refused.
            if let Some(f) = a_fence {
                let late = block_on(a.complete(&spec, f, Some("late"), at(373)));
                assert!(
                    matches!(late, Err(CoordError::Refused(_))),
                    "{point:?}: a superseded fence completed: {late:?}"
                );
            }
        }
        Claim::Idle(Idle::AlreadyResolved { slot: s }) => {
            assert!(
                completed,
                "{point:?}: the slot was resolved without running"
            );
            assert_eq!(s, slot);
        }
        other => panic!("{point:?}: B got {other:?}"),
    }

    // The effect happened exactly once (where A did it, B got its result).
    let expected = u32::from(point != Point::BeforeClaim && point != Point::AfterClaim).max(1);
    assert_eq!(effects.get(), expected, "{point:?}: effect count");

    // No slot lost, nothing stuck: long after, the slot has one success and
    // the record holds no lease or retry.
    let state = block_on(raw.status(&spec, at(3600))).unwrap();
    assert!(
        state.leases.is_empty() && state.pending.is_empty(),
        "{point:?}: stuck: {state:?}"
    );
    let wins: Vec<_> = state
        .history
        .iter()
        .filter(|r| r.slot == slot && matches!(r.outcome, RunOutcome::Succeeded { .. }))
        .collect();
    assert_eq!(
        wins.len(),
        1,
        "{point:?}: one success of the slot: {:?}",
        state.history
    );
    if point == Point::AfterClaim || point == Point::AfterEffect {
        assert!(
            state.history.iter().any(|r| r.slot == slot
                && Some(r.fence) == a_fence
                && r.outcome == RunOutcome::LeaseExpired),
            "{point:?}: A's run is recorded as a failed attempt"
        );
    }
    assert!(state.cursor >= slot);
    assert!(state.dead.is_empty(), "{point:?}: {:?}", state.dead);
}

#[test]
fn crash_points_on_memory_store() {
    for point in POINTS {
        crash_at(MemoryStore::new(), point);
    }
}

#[test]
fn crash_points_on_sqlite_store() {
    for point in POINTS {
        let dir = tempfile::tempdir().unwrap();
        crash_at(SqliteStore::open(dir.path().join("c.db")).unwrap(), point);
    }
}

/// The ambiguous completion with `MemoryStore`'s own fault (applied, then a
/// timeout): the coordinator reads back, finds its write, and reports the
/// completion; a redelivery finds the slot resolved.
#[test]
fn ambiguous_completion_is_resolved_by_reading_back() {
    let store = MemoryStore::new();
    let spec = spec("ambiguous", "* * * * *");
    let c = CasCoordinator::new(store.clone(), 1);
    block_on(c.claim(&spec, t0(), Trigger::Tick, "creator")).unwrap();
    let Claim::Claimed(lease) = block_on(c.claim(&spec, at(61), Trigger::Tick, "a")).unwrap()
    else {
        panic!("claim")
    };
    store.inject(&[Fault::AppliedThenTimeout]);
    block_on(c.complete(&spec, lease.fence, Some("ok"), at(70))).unwrap();
    let other = CasCoordinator::new(store.clone(), 2);
    assert_eq!(
        block_on(other.claim(&spec, at(80), Trigger::Slot(at(60)), "b")).unwrap(),
        Claim::Idle(Idle::AlreadyResolved { slot: at(60) })
    );
    // A claim whose write was applied and reported as a timeout is the
    // worker's own claim after reading back.
    store.inject(&[Fault::AppliedThenTimeout]);
    let Claim::Claimed(l2) = block_on(c.claim(&spec, at(121), Trigger::Tick, "a")).unwrap() else {
        panic!("the ambiguous claim must resolve to the claim")
    };
    assert_eq!(l2.slot, at(120));
    assert!(l2.fence > lease.fence);
}

/// A run whose completion was applied but whose answer was lost, and whose
/// read-back failed too, retries its completion: completion is idempotent
/// per fence, so the retry succeeds (it is not "superseded": the slot
/// succeeded by this very fence) and writes nothing.
#[test]
fn retried_completion_after_lost_answer_succeeds() {
    let store = MemoryStore::new();
    let spec = spec("lost-answer", "* * * * *");
    let plan = Rc::new(RefCell::new(FaultPlan::quiet()));
    let fs = FaultStore {
        inner: store.clone(),
        plan: plan.clone(),
    };
    let c = CasCoordinator::new(fs, 1);
    block_on(c.claim(&spec, t0(), Trigger::Tick, "creator")).unwrap();
    let Claim::Claimed(lease) = block_on(c.claim(&spec, at(61), Trigger::Tick, "a")).unwrap()
    else {
        panic!("claim")
    };
    plan.borrow_mut().forced.extend([
        Some(StoreErrorKind::Ambiguous),
        Some(StoreErrorKind::Unavailable),
    ]);
    let first = block_on(c.complete(&spec, lease.fence, Some("ok"), at(70)));
    assert!(matches!(first, Err(ref e) if e.is_transient()), "{first:?}");
    let again = block_on(c.complete(&spec, lease.fence, Some("ok"), at(71)));
    let state = block_on(CasCoordinator::new(store, 9).status(&spec, at(72))).unwrap();
    assert!(
        state
            .history
            .iter()
            .any(|r| r.fence == lease.fence && r.outcome.succeeded())
    );
    // Completion is idempotent per fence: asking again is not "superseded".
    assert!(
        again.is_ok(),
        "retried completion after a lost answer: {again:?}"
    );
}
