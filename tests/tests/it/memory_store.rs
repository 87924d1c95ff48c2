//! Behaviour of the generic coordinator that needs a look inside the store:
//! what it writes, how it survives faults, and what it reads.

use cronslot_core::conformance::{HOUR, at, create, job, t0};
use cronslot_core::coord::Operator;
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, CoordError, Coordinator, Fault, Idle, JobState, MemoryStore,
    SCHEMA_VERSION, StoreErrorKind, Trigger, decode_state,
};

fn coordinator() -> (MemoryStore, CasCoordinator<MemoryStore>) {
    let store = MemoryStore::new();
    (store.clone(), CasCoordinator::new(store, 1))
}

#[test]
fn duplicate_delivery_of_a_resolved_slot_writes_nothing() {
    let (store, c) = coordinator();
    let spec = job("dup", "hourly", "schedule = \"0 * * * *\"");
    block_on(async {
        create(&c, &spec, t0()).await;
        let Ok(Claim::Claimed(lease)) = c
            .claim(&spec, at(HOUR + 1), Trigger::Slot(at(HOUR)), "a")
            .await
        else {
            panic!("expected a claim");
        };
        c.complete(&spec, lease.fence, None, at(HOUR + 2))
            .await
            .expect("complete");
        let writes = store.writes();
        for owner in ["b", "c", "d"] {
            let again = c
                .claim(&spec, at(HOUR + 3), Trigger::Slot(at(HOUR)), owner)
                .await;
            assert_eq!(
                again,
                Ok(Claim::Idle(Idle::AlreadyResolved { slot: at(HOUR) }))
            );
        }
        assert_eq!(store.writes(), writes, "duplicates cost reads only");
    });
}

#[test]
fn ambiguous_write_is_resolved_by_reading_back() {
    let (store, c) = coordinator();
    let spec = job("ambiguous", "hourly", "schedule = \"0 * * * *\"");
    block_on(async {
        create(&c, &spec, t0()).await;
        // The claim's write is applied, then reported as a timeout.
        store.inject(&[Fault::AppliedThenTimeout]);
        let claim = c.claim(&spec, at(HOUR + 1), Trigger::Tick, "a").await;
        let Ok(Claim::Claimed(lease)) = claim else {
            panic!("the applied write must be recognised, got {claim:?}");
        };
        let state = c.status(&spec, at(HOUR + 2)).await.expect("status");
        assert_eq!(state.leases.len(), 1);
        assert_eq!(state.leases[0].fence, lease.fence);
        assert_eq!(state.fence, 1, "no second claim was made");
    });
}

#[test]
fn unavailable_store_is_a_transient_error_and_changes_nothing() {
    let (store, c) = coordinator();
    let spec = job("unavailable", "hourly", "schedule = \"0 * * * *\"");
    block_on(async {
        create(&c, &spec, t0()).await;
        let before = store.writes();
        store.inject(&[Fault::Unavailable]);
        let err = c
            .claim(&spec, at(HOUR + 1), Trigger::Tick, "a")
            .await
            .expect_err("injected fault");
        assert!(err.is_transient(), "{err}");
        assert!(matches!(&err, CoordError::Store(e) if e.kind == StoreErrorKind::Unavailable));
        assert_eq!(store.writes(), before);
        // The next attempt works and claims the slot once.
        let ok = c.claim(&spec, at(HOUR + 2), Trigger::Tick, "a").await;
        assert!(matches!(ok, Ok(Claim::Claimed(_))), "{ok:?}");
    });
}

#[test]
fn state_from_schema_1_loads_and_runs_on() {
    assert_eq!(
        SCHEMA_VERSION, 1,
        "when the schema moves on, keep the schema-1 fixture and add one"
    );
    let (store, c) = coordinator();
    block_on(cronslot_core::conformance::schema_1_record_loads(
        &c,
        "mem",
        |job, text| {
            store.put_raw(&job, &text);
            std::future::ready(())
        },
    ));
}

#[test]
fn records_from_a_newer_cronslot_or_garbage_are_refused_cleanly() {
    let fixture = cronslot_core::conformance::schema_1_record("legacy");
    let newer = fixture.replace("\"schema\": 1", "\"schema\": 99");
    let err = decode_state("legacy", &newer).expect_err("newer schema");
    assert!(err.to_string().contains("newer cronslot"), "{err}");
    for bad in [
        "",
        "null",
        "[]",
        "{\"schema\": 1}",
        "{\"schema\": \"1\"}",
        "\u{0}\u{1}",
    ] {
        let err = decode_state("legacy", bad).expect_err(bad);
        assert!(err.to_string().contains("legacy"), "{err}");
    }
    let other_job = decode_state("someone-else", &fixture).expect_err("wrong job");
    assert!(
        other_job.to_string().contains("belongs to job"),
        "{other_job}"
    );

    let (store, c) = coordinator();
    let spec = job("corrupt", "legacy", "schedule = \"0 * * * *\"");
    store.put_raw(spec.name.as_str(), "{not json");
    block_on(async {
        let err = c
            .claim(&spec, at(HOUR), Trigger::Tick, "a")
            .await
            .expect_err("corrupt");
        assert!(
            matches!(&err, CoordError::Store(e) if e.kind == StoreErrorKind::Corrupt),
            "{err}"
        );
        assert!(!err.is_transient());
    });
}

#[test]
fn a_new_job_does_not_run_slots_from_before_its_creation() {
    let (_, c) = coordinator();
    let spec = job(
        "fresh",
        "minutely",
        "schedule = \"* * * * *\"\ncatch_up = \"all\"",
    );
    block_on(async {
        // First contact at 10:00:30: the 10:00 slot is before creation.
        let first = c.claim(&spec, at(10 * HOUR + 30), Trigger::Tick, "a").await;
        assert!(
            matches!(first, Ok(Claim::Idle(Idle::NothingDue { .. }))),
            "{first:?}"
        );
        let state: JobState = c.status(&spec, at(10 * HOUR + 31)).await.expect("status");
        assert_eq!(state.created_at, at(10 * HOUR + 30));
        assert_eq!(state.counters.missed_total(), 0);
    });
}

#[test]
fn a_normal_run_costs_one_read_and_two_writes() {
    let (store, c) = coordinator();
    let spec = job("cost", "hourly", "schedule = \"0 * * * *\"");
    block_on(async {
        create(&c, &spec, t0()).await;
        let (reads, writes) = (store.reads(), store.writes());
        let Ok(Claim::Claimed(lease)) = c
            .claim(&spec, at(HOUR + 1), Trigger::Slot(at(HOUR)), "a")
            .await
        else {
            panic!("expected a claim");
        };
        c.complete(&spec, lease.fence, None, at(HOUR + 2))
            .await
            .expect("complete");
        assert_eq!(store.reads() - reads, 1, "the claim reads once");
        assert_eq!(store.writes() - writes, 2, "claim and completion");
    });
}

#[test]
fn a_stale_remembered_record_costs_a_conflict_not_a_wrong_answer() {
    let store = MemoryStore::new();
    let a = CasCoordinator::new(store.clone(), 1);
    let b = CasCoordinator::new(store.clone(), 2);
    let spec = job(
        "stale",
        "minutely",
        "schedule = \"* * * * *\"\noverlap = \"allow\"\nmax_concurrency = 5\ncatch_up = \"all\"",
    );
    block_on(async {
        create(&a, &spec, t0()).await;
        let Ok(Claim::Claimed(first)) = a.claim(&spec, at(125), Trigger::Tick, "a").await else {
            panic!("expected a claim");
        };
        // b changes the record behind a's back.
        let Ok(Claim::Claimed(second)) = b.claim(&spec, at(125), Trigger::Tick, "b").await else {
            panic!("expected a claim");
        };
        assert_ne!(first.slot, second.slot);
        a.complete(&spec, first.fence, None, at(126))
            .await
            .expect("complete");
        assert_eq!(a.conflicts(), 1, "a's remembered record was stale");
        let state = b.status(&spec, at(127)).await.expect("status");
        assert_eq!(state.leases.len(), 1, "b's lease survived a's completion");
        assert_eq!(state.leases[0].fence, second.fence);
    });
}

#[test]
fn tick_index_contract() {
    block_on(cronslot_core::conformance::tick_index_contract(
        MemoryStore::new(),
        "mem",
    ));
}
