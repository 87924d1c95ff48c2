//! DynamoDB requests per run, counted by an interceptor on the SDK client
//! (one per request sent): a run (claim + complete) costs at most one read
//! and two writes; a duplicate delivery of a resolved slot one read and no
//! write. The printed table goes into docs/performance.md
//! (`cargo test -p cronslot-dynamodb --test it -- requests:: --nocapture`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use cronslot_core::conformance::{HOUR, MIN, at, create, job, t0};
use cronslot_core::coord::{CasCoordinator, Claim, Coordinator, EffectBegin, Idle, Trigger};
use cronslot_dynamodb::DynamoStore;
use support::Setup;

const MINUTE: std::time::Duration = std::time::Duration::from_secs(60);

fn row(what: &str, counts: &BTreeMap<String, u64>) -> String {
    let get = counts.get("GetItem").copied().unwrap_or(0);
    let put = counts.get("PutItem").copied().unwrap_or(0);
    let other: u64 = counts
        .iter()
        .filter(|(k, _)| *k != "GetItem" && *k != "PutItem")
        .map(|(_, v)| v)
        .sum();
    format!("| {what} | {get} | {put} | {other} |")
}

/// A fresh coordinator per delivery, as a cold Lambda has: nothing
/// remembered from earlier invocations.
fn lambda(store: &DynamoStore, seed: u64) -> CasCoordinator<DynamoStore> {
    CasCoordinator::new(store.clone(), seed)
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_costs_one_read_and_two_writes_a_duplicate_one_read() {
    let setup = Setup::new();
    let store = setup.fresh_store("requests").await;
    let spec = job("req", "hourly", "schedule = \"0 * * * *\"");
    create(&lambda(&store, 1), &spec, t0()).await;
    let mut table = vec![
        "| delivery | GetItem | PutItem | other |".to_string(),
        "|---|---|---|---|".to_string(),
    ];

    // A scheduled delivery: claim, run, complete.
    let slot = at(HOUR);
    setup.counts.reset();
    let c = lambda(&store, 2);
    let Ok(Claim::Claimed(lease)) = c
        .claim(&spec, at(HOUR + 1), Trigger::Slot(slot), "lambda-1")
        .await
    else {
        panic!("no claim");
    };
    let claim = setup.counts.snapshot();
    c.complete(&spec, lease.fence, Some("ok"), at(HOUR + 2))
        .await
        .unwrap();
    let run = setup.counts.snapshot();
    table.push(row("claim", &claim));
    table.push(row("claim + complete (one run)", &run));
    assert_eq!(setup.counts.reads_writes(), (1, 2), "{run:?}");
    assert_eq!(run.len(), 2, "only GetItem and PutItem: {run:?}");

    // The same delivery again (EventBridge delivers at least once).
    setup.counts.reset();
    let dup = lambda(&store, 3)
        .claim(&spec, at(HOUR + 3), Trigger::Slot(slot), "lambda-2")
        .await
        .unwrap();
    assert_eq!(dup, Claim::Idle(Idle::AlreadyResolved { slot }));
    table.push(row(
        "duplicate delivery of the resolved slot",
        &setup.counts.snapshot(),
    ));
    assert_eq!(setup.counts.reads_writes(), (1, 0));

    // A duplicate while the run is still going.
    let slot2 = at(2 * HOUR);
    let Ok(Claim::Claimed(lease2)) = lambda(&store, 4)
        .claim(&spec, at(2 * HOUR + 1), Trigger::Slot(slot2), "lambda-3")
        .await
    else {
        panic!("no claim");
    };
    setup.counts.reset();
    let dup = lambda(&store, 5)
        .claim(&spec, at(2 * HOUR + 2), Trigger::Slot(slot2), "lambda-4")
        .await
        .unwrap();
    assert_eq!(
        dup,
        Claim::Idle(Idle::InProgress {
            slot: slot2,
            fence: lease2.fence
        })
    );
    table.push(row(
        "duplicate delivery while the slot runs",
        &setup.counts.snapshot(),
    ));
    assert_eq!(setup.counts.reads_writes(), (1, 0));

    // An effect of that run, through the ledger: the coordinator checks
    // the run's lease (a read), then the ledger reads and writes the entry.
    let c = lambda(&store, 8);
    let key = format!("{}@{}/charge", spec.name.as_str(), slot2);
    setup.counts.reset();
    let begin = c
        .begin_effect(
            &spec,
            &key,
            "lambda-3",
            lease2.fence,
            at(2 * HOUR + 2),
            MINUTE,
        )
        .await
        .unwrap();
    assert_eq!(begin, EffectBegin::Acquired);
    table.push(row("effect: begin", &setup.counts.snapshot()));
    assert_eq!(setup.counts.reads_writes(), (2, 1));
    setup.counts.reset();
    c.finish_effect(&key, lease2.fence, "charged", at(2 * HOUR + 3))
        .await
        .unwrap();
    table.push(row("effect: finish", &setup.counts.snapshot()));
    assert_eq!(setup.counts.reads_writes(), (1, 1));
    setup.counts.reset();
    let again = c
        .begin_effect(
            &spec,
            &key,
            "lambda-3",
            lease2.fence,
            at(2 * HOUR + 4),
            MINUTE,
        )
        .await
        .unwrap();
    assert!(
        matches!(again, EffectBegin::AlreadyDone { .. }),
        "{again:?}"
    );
    table.push(row(
        "effect: begin of a done effect",
        &setup.counts.snapshot(),
    ));
    assert_eq!(setup.counts.reads_writes(), (2, 0));

    c.complete(&spec, lease2.fence, None, at(2 * HOUR + 5))
        .await
        .unwrap();

    // A tick with nothing due.
    setup.counts.reset();
    let idle = lambda(&store, 6)
        .claim(&spec, at(2 * HOUR + 30 * MIN), Trigger::Tick, "lambda-5")
        .await
        .unwrap();
    assert!(matches!(idle, Claim::Idle(_)), "{idle:?}");
    table.push(row("tick with nothing due", &setup.counts.snapshot()));
    assert_eq!(setup.counts.reads_writes(), (1, 0));

    // The first delivery of a job that has no record yet: the claim reads
    // nothing and writes the new record (with the claim, if core runs the
    // slot); a run costs no more than for a known job.
    let fresh = job("req", "new", "schedule = \"0 * * * *\"");
    setup.counts.reset();
    let c = lambda(&store, 7);
    let first = c
        .claim(&fresh, at(HOUR + 1), Trigger::Slot(at(HOUR)), "lambda-6")
        .await
        .unwrap();
    let label = match &first {
        Claim::Claimed(lease) => {
            c.complete(&fresh, lease.fence, None, at(HOUR + 2))
                .await
                .unwrap();
            "first delivery of a job with no record (claim + complete)".to_string()
        }
        // Core creates the record at the first contact with its cursor
        // at `now`, so a slot delivered late by a second is "before the
        // job existed": the write creates the record and nothing runs.
        Claim::Idle(Idle::AlreadyResolved { .. }) => {
            "first delivery of a job with no record (creates it; the slot predates it, nothing runs)"
                .to_string()
        }
        Claim::Idle(idle) => format!("first delivery of a job with no record (idle: {idle:?})"),
    };
    table.push(row(&label, &setup.counts.snapshot()));
    let (reads, writes) = setup.counts.reads_writes();
    assert!(reads <= 1 && writes <= 2, "{:?}", setup.counts.snapshot());

    // An atomic completion: the run's own item and the completion in one
    // transaction. `complete_with` is given no remembered record here (the
    // coordinator does not expose its own), so it reads once more.
    let atomic = job("req", "atomic", "schedule = \"0 * * * *\"");
    create(&lambda(&store, 9), &atomic, t0()).await;
    setup.counts.reset();
    let Ok(Claim::Claimed(lease)) = lambda(&store, 10)
        .claim(&atomic, at(HOUR + 1), Trigger::Slot(at(HOUR)), "lambda-7")
        .await
    else {
        panic!("no claim");
    };
    let own_write = TransactWriteItem::builder()
        .put(
            Put::builder()
                .table_name(store.table())
                .item("pk", AttributeValue::S("user#report-1".into()))
                .build()
                .unwrap(),
        )
        .build();
    store
        .complete_with(
            &atomic,
            lease.fence,
            None,
            at(HOUR + 2),
            vec![own_write],
            None,
        )
        .await
        .unwrap();
    table.push(row(
        "claim + complete_with (atomic completion with one item of the job's)",
        &setup.counts.snapshot(),
    ));
    assert_eq!(setup.counts.reads_writes(), (2, 2));
    assert_eq!(setup.counts.get("TransactWriteItems"), 1);

    println!("\nDynamoDB requests per delivery (CasCoordinator over DynamoStore, moto):\n");
    for line in &table {
        println!("{line}");
    }
}

/// The same figures, step by step, as PostgreSQL and Redis count them
/// (`cronslot_tests::server_store::request_counts_per_step`): one
/// coordinator throughout, the ledger's own begin and finish, and the
/// writes that lose their condition, each hand back what is there.
#[tokio::test(flavor = "current_thread")]
async fn request_counts_are_exact() {
    let setup = Setup::new();
    let store = setup.fresh_store("counts").await;
    cronslot_tests::server_store::request_counts_per_step(&store, "req", || {
        setup.counts.reads_writes()
    })
    .await;
    let all: u64 = setup.counts.snapshot().values().sum();
    let (reads, writes) = setup.counts.reads_writes();
    assert_eq!(
        all,
        reads + writes,
        "only reads and writes: {:?}",
        setup.counts.snapshot()
    );
}

/// A tick among schedules of a dynamic job costs what is due: with 10 due,
/// 32 requests (the mark's read and write, each due record's read, each
/// run's claim and completion); with nothing due, 2. The index finds them,
/// so the figure is the same with 100,000 (moto is too slow to load those
/// in a test: `cronslot_tests::schedule_counts`).
#[tokio::test(flavor = "current_thread")]
async fn a_tick_among_schedules_costs_what_is_due() {
    let setup = Setup::new();
    let store = setup.fresh_store("schedule-ticks").await;
    cronslot_tests::schedule_counts::tick_costs_follow_due_work(&store, "req", 500, 1, || {
        let (reads, writes) = setup.counts.reads_writes();
        reads + writes
    })
    .await;
}

/// A keyed run's costs on DynamoDB, as on every store
/// (`cronslot_tests::schedule_counts::keyed_run_costs`): an enqueue one
/// read and one write, a duplicate one read, a run one read and two
/// writes, a status read one read, and forgetting the key once its
/// retention has passed the woken record's read and one conditional delete.
#[tokio::test(flavor = "current_thread")]
async fn keyed_run_costs_are_exact() {
    let setup = Setup::new();
    let store = setup.fresh_store("keyed-runs").await;
    cronslot_tests::schedule_counts::keyed_run_costs(
        &store,
        "req",
        1,
        || setup.counts.reads_writes(),
        true,
    )
    .await;
}

/// A page of a dynamic job's records is one `Query` of the names index and
/// one consistent `BatchGetItem` per hundred records, whatever else the
/// table holds: in name order, within the prefix, from the cursor on.
#[tokio::test(flavor = "current_thread")]
async fn a_page_of_records_is_one_query_and_a_batch_read_per_hundred() {
    use cronslot_core::coord::{JobState, StateStore};
    let setup = Setup::new();
    let store = setup.fresh_store("requests-page").await;
    let name = |i: usize| format!("dyn/k-{i:03}");
    // Written out of order, beside a static job and another dynamic job
    // whose name starts the same way.
    for i in (0..250).rev() {
        let state = JobState::new(&name(i), "hash", t0(), false);
        store.put(&name(i), &state, None).await.unwrap();
    }
    for other in ["dyn", "dynamo/k-000", "dyn0/x"] {
        let state = JobState::new(other, "hash", t0(), false);
        store.put(other, &state, None).await.unwrap();
    }
    let names = |page: &[(String, cronslot_core::coord::Versioned<JobState>)]| -> Vec<String> {
        page.iter().map(|(n, _)| n.clone()).collect()
    };

    setup.counts.reset();
    let first = store.records_page("dyn/", None, 200).await.unwrap();
    assert_eq!(names(&first), (0..200).map(name).collect::<Vec<_>>());
    assert_eq!(
        setup.counts.snapshot().into_iter().collect::<Vec<_>>(),
        [("BatchGetItem".to_string(), 2), ("Query".to_string(), 1)]
    );
    assert!(
        first
            .iter()
            .all(|(n, r)| r.version == 1 && r.value.job == *n)
    );

    setup.counts.reset();
    let last = first.last().map(|(n, _)| n.as_str());
    let rest = store.records_page("dyn/", last, 200).await.unwrap();
    assert_eq!(names(&rest), (200..250).map(name).collect::<Vec<_>>());
    assert_eq!(setup.counts.get("Query"), 1);

    // A prefix of the keys: a range of the partition.
    let keys = store.records_page("dyn/k-1", None, 1000).await.unwrap();
    assert_eq!(names(&keys), (100..200).map(name).collect::<Vec<_>>());
    // The cursor before the prefix starts at the prefix.
    let keys = store
        .records_page("dyn/k-24", Some("dyn/k-0"), 3)
        .await
        .unwrap();
    assert_eq!(names(&keys), ["dyn/k-240", "dyn/k-241", "dyn/k-242"]);
    // A record deleted is gone from the page.
    let gone = store.get(&name(241)).await.unwrap().unwrap();
    assert!(store.delete(&name(241), gone.version).await.unwrap());
    let keys = store.records_page("dyn/k-24", None, 3).await.unwrap();
    assert_eq!(names(&keys), ["dyn/k-240", "dyn/k-242", "dyn/k-243"]);
    // Static jobs' records are in no partition: read from a scan.
    let statics = store.records_page("dy", None, 10).await.unwrap();
    assert_eq!(
        names(&statics)[..2],
        ["dyn".to_string(), "dyn/k-000".to_string()]
    );
}
