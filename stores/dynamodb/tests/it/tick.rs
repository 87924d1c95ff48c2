//! The tick index on DynamoDB (docs/design.md §11): each job item carries
//! its wake in the sparse global secondary index `wakes`, and the tick mark
//! is one item in that index, so a tick's start is one `Query` and its end
//! one conditional `PutItem`, whatever the number of jobs. On moto, with
//! requests counted by the SDK interceptor.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, IndexStatus, KeySchemaElement, KeyType,
    Projection, ProjectionType, PutRequest, ScalarAttributeType, WriteRequest,
};
use cronslot_core::conformance::{HOUR, MIN, at, create, job, t0};
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, JobState, Origin, PendingRun, StateStore, StoreErrorKind,
    TickIndex, Trigger, encode_state,
};
use cronslot_dynamodb::{DynamoStore, MARK, NAME_SPACE, NAMES_INDEX, WAKE, WAKE_INDEX, WAKE_SHARD};
use cronslot_runtime::{Jobs, Platform, TickOptions, TickPlan, VirtualPlatform, tick};
use jiff::{SignedDuration, Timestamp};
use support::{Fault, Setup, s};

/// The raw item of a key of the store's table (empty if there is none).
async fn raw_item(client: &Client, table: &str, pk: &str) -> HashMap<String, AttributeValue> {
    support::raw_item(client, table, "pk", pk)
        .await
        .unwrap_or_default()
}

/// The index's contract, as memory, SQLite and PostgreSQL pass it.
#[tokio::test(flavor = "current_thread")]
async fn tick_index_contract() {
    let setup = Setup::new();
    let store = setup.fresh_store("tick-contract").await;
    cronslot_core::conformance::tick_index_contract(store, "dynamo").await;
}

/// The wake goes into the item with the record's own write (floored
/// milliseconds, with the shard attribute) and leaves with it.
#[tokio::test(flavor = "current_thread")]
async fn the_wake_travels_with_the_record() {
    let setup = Setup::new();
    let store = setup.fresh_store("tick-wake").await;
    let mut state = JobState::new("w", "hash", t0(), false);
    let wake: Timestamp = "2026-01-05T01:00:00.0019999Z".parse().unwrap();
    state.wake_at = Some(wake);
    store.put("w", &state, None).await.unwrap();
    let item = raw_item(&setup.client, store.table(), "job#w").await;
    assert_eq!(item.get(WAKE_SHARD), Some(&s("w")));
    assert_eq!(
        item.get(WAKE),
        Some(&AttributeValue::N((wake.as_millisecond()).to_string()))
    );
    assert_eq!(wake.as_millisecond() % 1000, 1, "floored, not rounded");
    // The wake's own millisecond counts as come (early by < 1 ms at most).
    let woken = store
        .tick_start("2026-01-05T01:00:00.001Z".parse().unwrap(), 10)
        .await
        .unwrap()
        .woken;
    assert_eq!(woken, vec!["w".to_string()]);
    let woken = store
        .tick_start("2026-01-05T01:00:00.0009999Z".parse().unwrap(), 10)
        .await
        .unwrap()
        .woken;
    assert!(woken.is_empty(), "{woken:?}");

    state.wake_at = None;
    store.put("w", &state, Some(1)).await.unwrap();
    let item = raw_item(&setup.client, store.table(), "job#w").await;
    assert!(
        !item.contains_key(WAKE) && !item.contains_key(WAKE_SHARD),
        "{item:?}"
    );
    assert!(
        store
            .tick_start(at(2 * HOUR), 10)
            .await
            .unwrap()
            .woken
            .is_empty()
    );

    // A transactional write (`put_with`) carries it the same way.
    state.wake_at = Some(wake);
    store
        .put_with("w", &state, Some(2), Vec::new())
        .await
        .unwrap();
    let item = raw_item(&setup.client, store.table(), "job#w").await;
    assert!(item.contains_key(WAKE), "{item:?}");
    // The mark's item is no job.
    store.tick_end(at(HOUR)).await.unwrap();
    assert_eq!(store.jobs().await.unwrap(), vec!["w".to_string()]);
}

/// Requests per tick: `tick_start` one `Query`, `tick_end` one `PutItem`,
/// a run still one read and two writes, a whole tick with nothing due two
/// requests. The table goes into docs/performance.md
/// (`cargo test -p cronslot-dynamodb --test it -- tick:: --nocapture`).
#[tokio::test(flavor = "current_thread")]
async fn tick_requests() {
    let setup = Setup::new();
    let store = setup.fresh_store("tick-requests").await;
    let mut rows = vec![
        "| step | Query | GetItem | PutItem | all |".to_string(),
        "|---|---|---|---|---|".to_string(),
    ];
    let mut row = |what: &str, extra: Option<(u64, u64)>| {
        let c = setup.counts.snapshot();
        let get = |op: &str| c.get(op).copied().unwrap_or(0);
        let (g, p) = extra.unwrap_or((0, 0));
        rows.push(format!(
            "| {what} | {} | {} | {} | {} |",
            get("Query"),
            get("GetItem") + g,
            get("PutItem") + p,
            c.values().sum::<u64>() + g + p
        ));
        setup.counts.reset();
        c
    };

    // A store that never ticked: the index shows no mark, so the mark's
    // item is read consistently (until the first mark reaches the index).
    let first = store.tick_start(at(0), 1000).await.unwrap();
    assert_eq!(first.mark, None);
    let c = row(
        "tick_start, store never ticked (no mark in the index)",
        None,
    );
    assert_eq!(
        (c.get("Query"), c.get("GetItem"), c.len()),
        (Some(&1), Some(&1), 2),
        "{c:?}"
    );

    store.tick_end(at(MIN)).await.unwrap();
    let c = row("tick_end", None);
    assert_eq!(c.get("PutItem"), Some(&1));
    assert_eq!(c.len(), 1, "{c:?}");

    let start = store.tick_start(at(2 * MIN), 1000).await.unwrap();
    assert_eq!(start.mark, Some(at(MIN)));
    let c = row("tick_start", None);
    assert_eq!(c.get("Query"), Some(&1));
    assert_eq!(c.len(), 1, "{c:?}");

    store.tick_end(at(30)).await.unwrap();
    let c = row(
        "tick_end with an earlier mark (refused by its condition: success)",
        None,
    );
    assert_eq!((c.get("PutItem"), c.len()), (Some(&1), 1), "{c:?}");
    assert_eq!(
        store.tick_start(at(2 * MIN), 10).await.unwrap().mark,
        Some(at(MIN))
    );
    setup.counts.reset();

    // A run of a job: the claim's write carries the lease's wake, the
    // completion's removes it; still one read and two writes.
    let spec = job("tick", "hourly", "schedule = \"0 * * * *\"");
    create(&CasCoordinator::new(store.clone(), 1), &spec, t0()).await;
    let pk = format!("job#{}", spec.name.as_str());
    setup.counts.reset();
    let c = CasCoordinator::new(store.clone(), 2);
    let Ok(Claim::Claimed(lease)) = c
        .claim(&spec, at(HOUR + 1), Trigger::Slot(at(HOUR)), "w")
        .await
    else {
        panic!("no claim");
    };
    let claim = (setup.counts.get("GetItem"), setup.counts.get("PutItem"));
    assert_eq!(
        setup.counts.reads_writes(),
        claim,
        "only GetItem and PutItem"
    );
    assert!(
        raw_item(&setup.client, store.table(), &pk)
            .await
            .contains_key(WAKE)
    );
    setup.counts.reset();
    c.complete(&spec, lease.fence, None, at(HOUR + 2))
        .await
        .unwrap();
    let c = row("claim + complete (one run)", Some(claim));
    assert!(c.keys().all(|k| k == "GetItem" || k == "PutItem"), "{c:?}");
    let run = (
        claim.0 + c.get("GetItem").copied().unwrap_or(0),
        claim.1 + c.get("PutItem").copied().unwrap_or(0),
    );
    assert_eq!(run, (1, 2));
    assert!(
        !raw_item(&setup.client, store.table(), &pk)
            .await
            .contains_key(WAKE)
    );
    setup.counts.reset();

    // A whole tick through the runtime's tick (the one the Lambda, the
    // runner and the Worker all run) with nothing due: three hourly jobs,
    // the mark at their last slot, now half an hour later.
    let specs: Vec<Rc<_>> = ["a", "b", "c"]
        .iter()
        .map(|n| Rc::new(job("tick-idle", n, "schedule = \"0 * * * *\"")))
        .collect();
    let mut jobs = Jobs::new();
    for spec in &specs {
        jobs = jobs.register(spec.name.as_str(), |_| async { Ok(()) });
    }
    let plan = TickPlan::new(specs.clone(), |_| true);
    store.tick_end(at(3 * HOUR)).await.unwrap();
    setup.counts.reset();
    let platform: Rc<dyn Platform> = Rc::new(VirtualPlatform::new(at(3 * HOUR + 30 * MIN)));
    let coordinator = Rc::new(CasCoordinator::new(store.clone(), 5));
    let options = TickOptions {
        owner: "tick-test",
        max_jobs: None,
        retry_within: Duration::from_secs(60),
        more_due: None,
    };
    let report = tick(&plan, &coordinator, &store, &jobs, &platform, &options)
        .await
        .unwrap();
    assert!(report.work.jobs.is_empty(), "{:?}", report.work.jobs);
    assert!(report.mark_error.is_none(), "{:?}", report.mark_error);
    let c = row(
        "a tick with nothing due (runtime `tick`, 3 jobs held)",
        None,
    );
    assert_eq!(
        (c.get("Query"), c.get("PutItem"), c.values().sum::<u64>()),
        (Some(&1), Some(&1), 2),
        "{c:?}"
    );

    println!("\nDynamoDB requests per tick step (DynamoStore on moto):\n");
    for line in &rows {
        println!("{line}");
    }
}

/// `tick_end` is safe to repeat: a write that landed but whose answer was
/// lost is sent again, and the repeat's failed condition is success.
#[tokio::test(flavor = "current_thread")]
async fn tick_end_survives_a_lost_answer() {
    let setup = Setup::new();
    let store = setup.fresh_store("tick-faults").await;
    setup.faults.script("PutItem", Fault::AppliedThenTimeout);
    setup
        .faults
        .script("PutItem", Fault::AppliedThenServerError);
    store.tick_end(at(MIN)).await.unwrap();
    assert_eq!(setup.faults.pending(), 0);
    assert_eq!(
        store.tick_start(at(MIN), 10).await.unwrap().mark,
        Some(at(MIN))
    );
    // A throttled query is retried.
    setup.faults.script("Query", Fault::Throttle);
    setup.faults.script("Query", Fault::ServerError);
    assert_eq!(
        store.tick_start(at(MIN), 10).await.unwrap().mark,
        Some(at(MIN))
    );
    assert_eq!(setup.faults.pending(), 0);
}

/// A table made by an older cronslot (key `pk`, no index, no TTL) gets
/// the wake and names indexes from `create_table` (what `cronslot init`
/// calls), keeps its items, gives each the attributes the indexes read,
/// and works; a second call changes nothing.
#[tokio::test(flavor = "current_thread")]
async fn create_table_adds_the_indexes_to_an_older_table() {
    let setup = Setup::new();
    let table = support::table_keyed_by(&setup.client, "tick-upgrade", "pk").await;
    let store = DynamoStore::new(setup.client.clone(), &table);
    let old = JobState::new("old", "hash", t0(), false);
    store.put("old", &old, None).await.unwrap();
    // A record with a retry waiting, written without a wake (as an older
    // cronslot wrote every record): the upgrade gives it one.
    let mut retrying = JobState::new("retrying", "hash", t0(), false);
    retrying.pending.push(PendingRun {
        slot: t0(),
        attempt: 2,
        not_before: at(HOUR),
        retry_until: None,
        last_error: None,
        checkpoint: None,
        origin: Origin::Schedule,
        version: None,
    });
    store.put("retrying", &retrying, None).await.unwrap();
    // A schedule's record, as an older cronslot wrote it: without the
    // names index's attribute.
    let schedule = JobState::new("tenant-invoice/acme", "hash", t0(), false);
    store
        .put("tenant-invoice/acme", &schedule, None)
        .await
        .unwrap();
    setup
        .client
        .update_item()
        .table_name(&table)
        .key("pk", s("job#tenant-invoice/acme"))
        .update_expression("REMOVE #ns")
        .expression_attribute_names("#ns", NAME_SPACE)
        .send()
        .await
        .unwrap();
    // Before the upgrade, the tick's query and the listing's name a
    // missing index.
    let err = store.tick_start(at(0), 10).await.unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Other, "{err}");
    let err = store
        .records_page("tenant-invoice/", None, 10)
        .await
        .unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Other, "{err}");

    store.create_table().await.expect("upgrade");
    for name in [WAKE_INDEX, NAMES_INDEX] {
        let index = index(&setup.client, &table, name).await;
        assert_eq!(index.index_status(), Some(&IndexStatus::Active), "{name}");
    }
    let item = raw_item(&setup.client, &table, "job#tenant-invoice/acme").await;
    assert_eq!(item.get(NAME_SPACE), Some(&s("tenant-invoice")));
    assert_eq!(item.get("ver"), Some(&AttributeValue::N("1".into())));
    let listed: Vec<String> = store
        .records_page("tenant-invoice/", None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|(name, record)| {
            assert_eq!(record.version, 1);
            name
        })
        .collect();
    assert_eq!(listed, ["tenant-invoice/acme"]);
    store.create_table().await.expect("again: nothing to do");
    let old = store.get("old").await.unwrap().unwrap();
    assert_eq!((old.version, old.value.wake_at), (1, None));
    let repaired = store.get("retrying").await.unwrap().unwrap();
    assert_eq!(
        (repaired.version, repaired.value.wake_at),
        (2, Some(at(HOUR)))
    );

    let mut woken = JobState::new("new", "hash", t0(), false);
    woken.wake_at = Some(at(HOUR));
    store.put("new", &woken, None).await.unwrap();
    store.tick_end(at(MIN)).await.unwrap();
    let start = store.tick_start(at(HOUR), 10).await.unwrap();
    assert_eq!(start.mark, Some(at(MIN)));
    let mut woken = start.woken;
    woken.sort();
    assert_eq!(woken, ["new", "retrying"]);
    let ttl = setup
        .client
        .describe_time_to_live()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    assert_eq!(
        ttl.time_to_live_description()
            .and_then(|d| d.attribute_name()),
        Some("ttl")
    );
}

/// A fresh table has the indexes, with the keys and projections their
/// queries need; an index of that name with another shape is refused,
/// saying what to do.
#[tokio::test(flavor = "current_thread")]
async fn the_indexes_have_their_shape_or_are_refused() {
    let setup = Setup::new();
    let store = setup.fresh_store("tick-shape").await;
    let names = index(&setup.client, store.table(), NAMES_INDEX).await;
    let key: Vec<(&str, &KeyType)> = names
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name(), k.key_type()))
        .collect();
    assert_eq!(key, [(NAME_SPACE, &KeyType::Hash), ("pk", &KeyType::Range)]);
    assert_eq!(
        names.projection().and_then(|p| p.projection_type()),
        Some(&ProjectionType::KeysOnly)
    );
    let index = index(&setup.client, store.table(), WAKE_INDEX).await;
    let key: Vec<(&str, &KeyType)> = index
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name(), k.key_type()))
        .collect();
    assert_eq!(key, [(WAKE_SHARD, &KeyType::Hash), (WAKE, &KeyType::Range)]);
    let projection = index.projection().unwrap();
    assert_eq!(projection.projection_type(), Some(&ProjectionType::Include));
    assert_eq!(projection.non_key_attributes(), [MARK.to_string()]);

    let table = support::unique_table("tick-foreign-index");
    let element = |name: &str, kind: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
            .unwrap()
    };
    let definition = |name: &str, kind: ScalarAttributeType| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(kind)
            .build()
            .unwrap()
    };
    setup
        .client
        .create_table()
        .table_name(&table)
        .attribute_definitions(definition("pk", ScalarAttributeType::S))
        .attribute_definitions(definition("other", ScalarAttributeType::S))
        .key_schema(element("pk", KeyType::Hash))
        .global_secondary_indexes(
            aws_sdk_dynamodb::types::GlobalSecondaryIndex::builder()
                .index_name(WAKE_INDEX)
                .key_schema(element("other", KeyType::Hash))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::KeysOnly)
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap();
    let err = DynamoStore::new(setup.client.clone(), &table)
        .create_table()
        .await
        .unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Other);
    assert!(
        err.message.contains("not cronslot's wake index") && err.message.contains("cronslot init"),
        "{err}"
    );
}

async fn index(
    client: &Client,
    table: &str,
    name: &str,
) -> aws_sdk_dynamodb::types::GlobalSecondaryIndexDescription {
    let out = client
        .describe_table()
        .table_name(table)
        .send()
        .await
        .unwrap();
    out.table()
        .unwrap()
        .global_secondary_indexes()
        .iter()
        .find(|i| i.index_name() == Some(name))
        .cloned()
        .unwrap_or_else(|| panic!("no index {name} on {table}"))
}

/// Ten thousand job items, ten of them with wakes that have come and
/// twenty with wakes still to come: one `Query` returns exactly the ten,
/// earliest wake first (not in key order), and the limit keeps the
/// earliest.
#[tokio::test(flavor = "current_thread")]
async fn ten_thousand_jobs_ten_woken_one_query() {
    const JOBS: usize = 10_000;
    let setup = Setup::new();
    let store = setup.fresh_store("tick-10k").await;
    let now = at(HOUR);
    // Job index → wake: due ones in an order that is neither key order
    // nor its reverse, later ones after `now`.
    let due: Vec<usize> = (0..10).map(|k| 9_973 - k * 997).collect();
    let later: Vec<usize> = (0..20).map(|k| 13 + k * 491).collect();
    let wake_of = |i: usize| -> Option<Timestamp> {
        if let Some(k) = due.iter().position(|d| *d == i) {
            let second = (k as i64 * 7) % 10;
            return Some(at(10 * MIN) + SignedDuration::from_millis(1000 * second + 1));
        }
        if let Some(k) = later.iter().position(|d| *d == i) {
            return Some(now + SignedDuration::from_millis(1 + 7 * k as i64));
        }
        None
    };
    let name = |i: usize| format!("bulk-{i:05}");
    let started = std::time::Instant::now();
    let items: Vec<WriteRequest> = (0..JOBS)
        .map(|i| {
            let mut state = JobState::new(&name(i), "hash", t0(), false);
            state.wake_at = wake_of(i);
            let mut put = PutRequest::builder()
                .item("pk", s(&format!("job#{}", name(i))))
                .item("ver", AttributeValue::N("1".into()))
                .item("state", s(&encode_state(&state)))
                .item("updated_at", s(&t0().to_string()));
            if let Some(wake) = state.wake_at {
                put = put
                    .item(WAKE_SHARD, s("w"))
                    .item(WAKE, AttributeValue::N(wake.as_millisecond().to_string()));
            }
            WriteRequest::builder()
                .put_request(put.build().unwrap())
                .build()
        })
        .collect();
    for chunk in items.chunks(25) {
        let out = setup
            .client
            .batch_write_item()
            .request_items(store.table(), chunk.to_vec())
            .send()
            .await
            .unwrap();
        assert!(
            out.unprocessed_items().is_none_or(|u| u.is_empty()),
            "moto left items unprocessed"
        );
    }
    eprintln!("wrote {JOBS} items in {:?}", started.elapsed());
    // The raw items read back as the store's own.
    let spot = store.get(&name(due[0])).await.unwrap().unwrap();
    assert_eq!(spot.value.wake_at, wake_of(due[0]));
    store.tick_end(at(MIN)).await.unwrap();

    let mut expected: Vec<(Timestamp, String)> = due
        .iter()
        .map(|i| (wake_of(*i).unwrap(), name(*i)))
        .collect();
    expected.sort();
    let expected: Vec<String> = expected.into_iter().map(|(_, n)| n).collect();
    assert_ne!(
        expected,
        {
            let mut by_key = expected.clone();
            by_key.sort();
            by_key
        },
        "wake order differs from key order"
    );
    setup.counts.reset();
    let started = std::time::Instant::now();
    let start = store.tick_start(now, 1000).await.unwrap();
    eprintln!(
        "tick_start over {JOBS} jobs in {:?} (moto)",
        started.elapsed()
    );
    assert_eq!(
        setup.counts.snapshot().into_iter().collect::<Vec<_>>(),
        [("Query".to_string(), 1)]
    );
    assert_eq!(start.mark, Some(at(MIN)));
    assert_eq!(start.woken, expected);

    setup.counts.reset();
    let start = store.tick_start(now, 3).await.unwrap();
    assert_eq!(start.woken, expected[..3]);
    assert_eq!(setup.counts.get("Query"), 1);
}
