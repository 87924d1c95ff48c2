//! Fault injection on top of moto (moto itself never throttles, fails or
//! times out): throttling and 5xx are retried; a timeout after a write was
//! applied is resolved by reading back; two coordinators racing lose no
//! slot and run none twice; and 8 coordinators over 60 virtual minutes
//! with random faults run every slot exactly once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use cronslot_core::conformance::{HOUR, MIN, at, create, job, t0};
use cronslot_core::coord::Operator;
use cronslot_core::coord::exec::join_all;
use cronslot_core::coord::{
    CasCoordinator, Claim, CoordError, Coordinator, EffectBegin, EffectFinish, EffectLedger,
    EffectRecord, Idle, JobState, PutResult, StateStore, StoreError, StoreErrorKind, Trigger,
    Version, Versioned,
};
use cronslot_core::manifest::JobSpec;
use cronslot_dynamodb::DynamoStore;
use jiff::{SignedDuration, Timestamp};
use support::{Fault, Setup};

async fn claimed(
    c: &CasCoordinator<DynamoStore>,
    spec: &JobSpec,
    now: Timestamp,
    trigger: Trigger,
    owner: &str,
) -> cronslot_core::coord::Lease {
    match c.claim(spec, now, trigger, owner).await {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("{owner}: expected a claim, got {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn throttling_and_server_errors_are_retried() {
    let setup = Setup::new();
    let store = setup.fresh_store("throttle").await;
    let spec = job("faults", "throttle", "schedule = \"0 * * * *\"");
    let c = CasCoordinator::new(store.clone(), 1);
    create(&c, &spec, t0()).await;
    setup.counts.reset();
    for (op, fault) in [
        ("GetItem", Fault::Throttle),
        ("GetItem", Fault::ServerError),
        ("PutItem", Fault::Throttle),
        ("PutItem", Fault::ServerError),
        ("PutItem", Fault::Throttle),
    ] {
        setup.faults.script(op, fault);
    }
    let lease = claimed(&c, &spec, at(HOUR + 1), Trigger::Tick, "a").await;
    c.complete(&spec, lease.fence, None, at(HOUR + 2))
        .await
        .unwrap();
    assert_eq!(setup.faults.pending(), 0);
    let counts = setup.counts.snapshot();
    println!("requests with 2 faulty reads and 3 faulty writes: {counts:?}");
    assert_eq!(counts.get("GetItem"), Some(&3));
    assert_eq!(counts.get("PutItem"), Some(&5));
    let state = c.status(&spec, at(HOUR + 3)).await.unwrap();
    assert_eq!((state.fence, state.counters.succeeded), (1, 1));

    // A transaction cancelled by throttling is retried too.
    setup.faults.script("TransactWriteItems", Fault::Throttle);
    let current = store.get(spec.name.as_str()).await.unwrap().unwrap();
    let mut next = current.value.clone();
    next.paused = true;
    assert_eq!(
        store
            .put_with(spec.name.as_str(), &next, Some(current.version), Vec::new())
            .await
            .unwrap(),
        PutResult::Written(current.version + 1)
    );
}

#[tokio::test(flavor = "current_thread")]
async fn persistent_throttling_is_unavailable_within_the_budget() {
    let setup = Setup::new();
    let store = setup
        .fresh_store("budget")
        .await
        .with_retry_budget(Duration::from_millis(400));
    for _ in 0..1000 {
        setup.faults.script("GetItem", Fault::Throttle);
    }
    let started = Instant::now();
    let err = store.get("a").await.unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Unavailable, "{err}");
    assert!(
        err.message
            .contains("ProvisionedThroughputExceededException"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    println!(
        "gave up after {} throttled reads in {:?}: {err}",
        setup.counts.get("GetItem"),
        started.elapsed()
    );
    assert!(setup.counts.get("GetItem") >= 2);
    setup.faults.stop();
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_that_timed_out_is_ambiguous_at_the_store() {
    let setup = Setup::new();
    let store = setup.fresh_store("ambiguous").await;
    let st = JobState::new("a", "h", t0(), false);
    setup.faults.script("PutItem", Fault::AppliedThenTimeout);
    let err = store.put("a", &st, None).await.unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Ambiguous, "{err}");
    assert_eq!(
        store.get("a").await.unwrap(),
        Some(Versioned {
            value: st.clone(),
            version: 1
        }),
        "it was applied"
    );
    setup.faults.script("PutItem", Fault::TimeoutUnapplied);
    let mut next = st.clone();
    next.fence = 1;
    let err = store.put("a", &next, Some(1)).await.unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Ambiguous, "{err}");
    assert_eq!(
        store.get("a").await.unwrap().unwrap().version,
        1,
        "it was not"
    );

    // A 500 after the write landed: the retry's condition fails on our own
    // record, which the store recognises (no read needed).
    setup.counts.reset();
    setup
        .faults
        .script("PutItem", Fault::AppliedThenServerError);
    assert_eq!(
        store.put("a", &next, Some(1)).await.unwrap(),
        PutResult::Written(2)
    );
    assert_eq!(
        setup.counts.snapshot(),
        BTreeMap::from([("PutItem".to_string(), 2)])
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_timeout_after_the_claim_landed_is_resolved_by_reading_back() {
    let setup = Setup::new();
    let store = setup.fresh_store("readback").await;
    let spec = job("faults", "readback", "schedule = \"0 * * * *\"");
    let c = CasCoordinator::new(store.clone(), 1);
    create(&c, &spec, t0()).await;
    let slot = at(HOUR);

    setup.counts.reset();
    setup.faults.script("PutItem", Fault::AppliedThenTimeout);
    let lease = claimed(&c, &spec, at(HOUR + 1), Trigger::Slot(slot), "a").await;
    assert_eq!(lease.fence, 1);
    assert_eq!(
        setup.counts.snapshot(),
        BTreeMap::from([("GetItem".to_string(), 2), ("PutItem".to_string(), 1)]),
        "one claim write, resolved by one read-back"
    );
    let other = CasCoordinator::new(store.clone(), 2);
    assert_eq!(
        other
            .claim(&spec, at(HOUR + 2), Trigger::Slot(slot), "b")
            .await
            .unwrap(),
        Claim::Idle(Idle::InProgress { slot, fence: 1 }),
        "no second claim"
    );

    // The completion's response is lost too.
    setup.faults.script("PutItem", Fault::AppliedThenTimeout);
    c.complete(&spec, lease.fence, None, at(HOUR + 3))
        .await
        .unwrap();
    let state = c.status(&spec, at(HOUR + 4)).await.unwrap();
    assert_eq!(state.fence, 1, "fence +1 only");
    assert_eq!((state.counters.runs, state.counters.succeeded), (1, 1));
    assert!(state.leases.is_empty());

    // A timeout where the claim did not land: the read-back shows the old
    // record, the coordinator re-plans and claims once.
    setup.faults.script("PutItem", Fault::TimeoutUnapplied);
    let lease = claimed(&c, &spec, at(2 * HOUR + 1), Trigger::Tick, "a").await;
    assert_eq!(lease.fence, 2);
    let state = c.status(&spec, at(2 * HOUR + 2)).await.unwrap();
    assert_eq!((state.fence, state.leases.len()), (2, 1));
}

#[tokio::test(flavor = "current_thread")]
async fn ledger_writes_whose_answer_was_lost_are_recognised() {
    let setup = Setup::new();
    let store = setup.fresh_store("ledger-faults").await;
    let key = "job@2026-01-05T01:00:00Z/charge";
    let hold = Duration::from_secs(60);
    setup.faults.script("PutItem", Fault::AppliedThenTimeout);
    assert_eq!(
        store.begin_effect(key, "a", 1, t0(), hold).await.unwrap(),
        EffectBegin::Acquired
    );
    setup
        .faults
        .script("PutItem", Fault::AppliedThenServerError);
    assert_eq!(
        store.finish_effect(key, 1, "charged", at(1)).await.unwrap(),
        EffectFinish::Recorded
    );
    setup.faults.script("PutItem", Fault::AppliedThenTimeout);
    // Already done: no write, so the fault stays queued.
    assert_eq!(
        store.begin_effect(key, "b", 2, at(2), hold).await.unwrap(),
        EffectBegin::AlreadyDone {
            result: "charged".into()
        }
    );
    assert_eq!(setup.faults.pending(), 1);
    setup.faults.stop();
    // A lost finish that did not land is simply done again.
    let other = "job@2026-01-05T01:00:00Z/email";
    store.begin_effect(other, "a", 1, t0(), hold).await.unwrap();
    setup.faults.script("PutItem", Fault::TimeoutUnapplied);
    assert_eq!(
        store.finish_effect(other, 1, "sent", at(1)).await.unwrap(),
        EffectFinish::Recorded
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_lost_transaction_answer_is_retried_with_its_token() {
    let setup = Setup::new();
    let store = setup.fresh_store("tx-faults").await;
    let st = JobState::new("a", "h", t0(), false);
    store.put("a", &st, None).await.unwrap();
    let mut next = st.clone();
    next.fence = 1;
    // The user's item lives in the same table here (any table works).
    let extra = TransactWriteItem::builder()
        .put(
            Put::builder()
                .table_name(store.table())
                .item("pk", AttributeValue::S("user#1".into()))
                .item("n", AttributeValue::N("1".into()))
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", "pk")
                .build()
                .unwrap(),
        )
        .build();
    setup.counts.reset();
    setup
        .faults
        .script("TransactWriteItems", Fault::AppliedThenTimeout);
    assert_eq!(
        store
            .put_with("a", &next, Some(1), vec![extra])
            .await
            .unwrap(),
        PutResult::Written(2)
    );
    assert_eq!(setup.counts.get("TransactWriteItems"), 2);
    assert_eq!(store.get("a").await.unwrap().unwrap().value, next);
}

#[tokio::test(flavor = "current_thread")]
async fn two_coordinators_racing_lose_no_slot_and_run_none_twice() {
    let setup = Setup::new();
    let store = setup.fresh_store("race").await;
    let spec = job(
        "faults",
        "race",
        "schedule = \"*/10 * * * *\"\ncatch_up = \"all\"\nmax_catch_up = 10\nstarting_deadline = \"1d\"\noverlap = \"allow\"\nmax_concurrency = 10",
    );
    create(&CasCoordinator::new(store.clone(), 0), &spec, t0()).await;
    // Both read the same record, then both write: the second write loses
    // its condition, re-plans on the record DynamoDB returned (no read)
    // and takes the next slot instead. The gate holds each of the first two
    // reads' answers until both are in, so the race is the same however
    // the two requests travel (on a busy machine the second could
    // otherwise be read after the first's write, and no race happen).
    let gate = Rc::new(Cell::new(0));
    let a = CasCoordinator::new(ReadTogether::new(store.clone(), &gate), 1);
    let b = CasCoordinator::new(ReadTogether::new(store.clone(), &gate), 2);
    setup.counts.reset();
    let now = at(HOUR + 1);
    let both = join_all(vec![
        a.claim(&spec, now, Trigger::Tick, "a"),
        b.claim(&spec, now, Trigger::Tick, "b"),
    ])
    .await;
    let leases: Vec<_> = both
        .into_iter()
        .map(|r| match r {
            Ok(Claim::Claimed(l)) => l,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_ne!(leases[0].slot, leases[1].slot);
    assert_ne!(leases[0].fence, leases[1].fence);
    assert_eq!(a.conflicts() + b.conflicts(), 1, "one lost race");
    assert_eq!(
        setup.counts.snapshot(),
        BTreeMap::from([("GetItem".to_string(), 2), ("PutItem".to_string(), 3)]),
        "the loser re-planned on ALL_OLD, without reading again"
    );
    // The rest, by both, with no slot twice and none lost.
    let mut ran: BTreeMap<Timestamp, u32> = BTreeMap::new();
    for l in &leases {
        *ran.entry(l.slot).or_default() += 1;
    }
    a.complete(&spec, leases[0].fence, None, now).await.unwrap();
    b.complete(&spec, leases[1].fence, None, now).await.unwrap();
    loop {
        let both = join_all(vec![
            a.claim(&spec, now, Trigger::Tick, "a"),
            b.claim(&spec, now, Trigger::Tick, "b"),
        ])
        .await;
        let mut any = false;
        for (c, r) in [&a, &b].into_iter().zip(both) {
            if let Ok(Claim::Claimed(l)) = r {
                any = true;
                *ran.entry(l.slot).or_default() += 1;
                c.complete(&spec, l.fence, None, now).await.unwrap();
            }
        }
        if !any {
            break;
        }
    }
    let expected: Vec<Timestamp> = (1..=6).map(|i| at(i * 10 * MIN)).collect();
    assert_eq!(ran.keys().copied().collect::<Vec<_>>(), expected);
    assert!(ran.values().all(|n| *n == 1), "{ran:?}");
}

/// The store, with its first two reads (counted across every clone that
/// shares the counter) held until both have answered: fault injection on
/// top of the real store, to make two claims read the same record.
struct ReadTogether {
    inner: DynamoStore,
    reads: Rc<Cell<u32>>,
}

impl ReadTogether {
    fn new(inner: DynamoStore, reads: &Rc<Cell<u32>>) -> ReadTogether {
        ReadTogether {
            inner,
            reads: Rc::clone(reads),
        }
    }
}

impl StateStore for ReadTogether {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        let record = self.inner.get(job).await;
        self.reads.set(self.reads.get() + 1);
        while self.reads.get() < 2 {
            tokio::task::yield_now().await;
        }
        record
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        self.inner.put(job, state, expected).await
    }

    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        self.inner.delete(job, expected).await
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.jobs().await
    }
}

impl EffectLedger for ReadTogether {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        self.inner.begin_effect(key, owner, fence, now, hold).await
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        self.inner.finish_effect(key, fence, result, now).await
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        self.inner.read_effect(key).await
    }
}

/// One delivery handled like the Lambda runner does: claim; if claimed,
/// "run" (recorded) and complete, retrying transient store errors as the
/// platform's redelivery would.
async fn deliver(
    c: &CasCoordinator<DynamoStore>,
    spec: &JobSpec,
    now: Timestamp,
    trigger: Trigger,
    owner: &str,
    runs: &RefCell<BTreeMap<Timestamp, Vec<String>>>,
    transient: &RefCell<u64>,
) {
    for _ in 0..50 {
        match c.claim(spec, now, trigger, owner).await {
            Ok(Claim::Claimed(lease)) => {
                runs.borrow_mut()
                    .entry(lease.slot)
                    .or_default()
                    .push(owner.to_string());
                let done = now + SignedDuration::from_secs(20);
                let mut retried = false;
                loop {
                    match c.complete(spec, lease.fence, None, done).await {
                        Ok(()) => return,
                        Err(e) if e.is_transient() => {
                            *transient.borrow_mut() += 1;
                            retried = true;
                        }
                        // An earlier attempt whose outcome was unknown
                        // may have completed it: then the lease is gone.
                        Err(CoordError::Refused(_)) if retried => {
                            let state = c.status(spec, done).await.unwrap();
                            assert!(state.slot_resolved(lease.slot), "{state:?}");
                            return;
                        }
                        Err(e) => panic!("{owner}: completion of {} refused: {e}", lease.slot),
                    }
                }
            }
            Ok(Claim::Idle(_)) => return,
            Err(e) if e.is_transient() => *transient.borrow_mut() += 1,
            Err(e) => panic!("{owner}: claim failed: {e}"),
        }
    }
    panic!("{owner}: no definite answer after 50 deliveries");
}

#[tokio::test(flavor = "current_thread")]
async fn eight_coordinators_with_random_faults_run_every_slot_once() {
    let setup = Setup::new();
    let store = setup.fresh_store("contention").await;
    let spec = job(
        "faults",
        "minutely",
        "schedule = \"* * * * *\"\nlease = \"2m\"",
    );
    let coordinators: Vec<_> = (0..8)
        .map(|i| CasCoordinator::new(store.clone(), 100 + i))
        .collect();
    create(&coordinators[0], &spec, t0()).await;
    setup.counts.reset();
    setup.faults.random(
        0xC0FFEE,
        12,
        &[
            Fault::Throttle,
            Fault::ServerError,
            Fault::AppliedThenServerError,
            Fault::AppliedThenTimeout,
            Fault::TimeoutUnapplied,
        ],
        &["GetItem", "PutItem"],
    );
    let runs = RefCell::new(BTreeMap::new());
    let transient = RefCell::new(0u64);
    let started = Instant::now();
    for minute in 1..=60 {
        let slot = at(minute * MIN);
        // Every coordinator gets the minute's delivery within a few
        // seconds: half as the slot's dedicated trigger, half as a tick.
        let deliveries: Vec<_> = coordinators
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let spec = &spec;
                let (runs, transient) = (&runs, &transient);
                async move {
                    let now = slot + SignedDuration::from_secs(i as i64);
                    let trigger = if i % 2 == 0 {
                        Trigger::Slot(slot)
                    } else {
                        Trigger::Tick
                    };
                    deliver(c, spec, now, trigger, &format!("w{i}"), runs, transient).await;
                }
            })
            .collect();
        join_all(deliveries).await;
    }
    setup.faults.stop();
    let elapsed = started.elapsed();

    let runs = runs.into_inner();
    let expected: Vec<Timestamp> = (1..=60).map(|m| at(m * MIN)).collect();
    assert_eq!(
        runs.keys().copied().collect::<Vec<_>>(),
        expected,
        "every slot ran"
    );
    for (slot, owners) in &runs {
        assert_eq!(owners.len(), 1, "{slot} ran {owners:?}");
    }
    let state = coordinators[0].status(&spec, at(61 * MIN)).await.unwrap();
    assert_eq!(state.fence, 60, "one fence per slot: no double claim");
    assert_eq!(state.counters.runs, 60);
    assert_eq!(state.counters.succeeded, 60);
    assert_eq!(state.counters.failed, 0);
    assert_eq!(state.counters.missed_total(), 0);
    assert!(state.leases.is_empty() && state.pending.is_empty());

    let injected = setup.faults.injected();
    let mut by_kind: BTreeMap<Fault, u64> = BTreeMap::new();
    for ((_, kind), n) in &injected {
        *by_kind.entry(*kind).or_default() += n;
    }
    let conflicts: u64 = coordinators.iter().map(|c| c.conflicts()).sum();
    println!(
        "8 coordinators x 60 minutes in {elapsed:?}: requests {:?}; faults injected {by_kind:?} ({} total); lost CAS races {conflicts}; transient errors surfaced to the caller {}",
        setup.counts.snapshot(),
        setup.faults.injected_total(),
        transient.into_inner()
    );
    for kind in [
        Fault::Throttle,
        Fault::ServerError,
        Fault::AppliedThenServerError,
        Fault::AppliedThenTimeout,
        Fault::TimeoutUnapplied,
    ] {
        assert!(
            by_kind.get(&kind).copied().unwrap_or(0) > 0,
            "no {kind:?} injected"
        );
    }
}
