//! `DynamoStore` on moto: compare-and-set semantics, the item layout, the
//! effect ledger, corrupt and oversized records, reserved words, table
//! setup, the fencing helper and the transactional completion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, BillingMode, Put, TimeToLiveStatus, TransactWriteItem,
};
use cronslot_core::conformance::{HOUR, at, create, job, t0};
use cronslot_core::coord::exec::join_all;
use cronslot_core::coord::{
    CasCoordinator, Claim, CoordError, Coordinator, DeadLetter, EffectBegin, EffectFinish,
    EffectLedger, EffectState, JobState, PutResult, Refusal, StateStore, StoreErrorKind, Trigger,
    Versioned, encode_state,
};
use cronslot_dynamodb::{DynamoStore, MAX_ITEM_BYTES, fence_condition};
use jiff::{SignedDuration, Timestamp};
use support::{Setup, s};

fn state(job: &str) -> JobState {
    JobState::new(job, "spec-hash", t0(), false)
}

fn n(number: u64) -> AttributeValue {
    AttributeValue::N(number.to_string())
}

/// The raw item of a key of the store's table (`job#…`, `effect#…`).
async fn raw_item(
    client: &Client,
    table: &str,
    pk: &str,
) -> Option<std::collections::HashMap<String, AttributeValue>> {
    support::raw_item(client, table, "pk", pk).await
}

/// A table of the job's own (key `id`), as a user's destination would be.
async fn destination_table(client: &Client) -> String {
    support::table_keyed_by(client, "destination", "id").await
}

/// An item of a destination table.
async fn destination_item(
    client: &Client,
    table: &str,
    id: &str,
) -> Option<std::collections::HashMap<String, AttributeValue>> {
    support::raw_item(client, table, "id", id).await
}

#[tokio::test(flavor = "current_thread")]
async fn put_and_get_follow_compare_and_set() {
    let setup = Setup::new();
    let store = setup.fresh_store("cas").await;
    assert_eq!(store.get("a").await.unwrap(), None);

    let first = state("a");
    assert_eq!(
        store.put("a", &first, None).await.unwrap(),
        PutResult::Written(1)
    );
    assert_eq!(
        store.get("a").await.unwrap(),
        Some(Versioned {
            value: first.clone(),
            version: 1
        })
    );
    let mut second = first.clone();
    second.fence = 1;
    assert_eq!(
        store.put("a", &second, Some(1)).await.unwrap(),
        PutResult::Written(2)
    );
    let current = PutResult::Conflict(Some(Box::new(Versioned {
        value: second.clone(),
        version: 2,
    })));

    // A stale writer's conflict carries the current record (ALL_OLD): one
    // PutItem, no GetItem.
    setup.counts.reset();
    let mut stale = first.clone();
    stale.fence = 9;
    assert_eq!(store.put("a", &stale, Some(1)).await.unwrap(), current);
    assert_eq!(
        setup.counts.snapshot(),
        BTreeMap::from([("PutItem".to_string(), 1)])
    );
    // A second "first write" conflicts the same way.
    assert_eq!(store.put("a", &stale, None).await.unwrap(), current);
    // An expected version where there is no record: no record to return.
    assert_eq!(
        store.put("b", &state("b"), Some(3)).await.unwrap(),
        PutResult::Conflict(None)
    );
    assert_eq!(store.get("b").await.unwrap(), None);
    // The state of another job is never stored under this name.
    let err = store.put("c", &state("a"), None).await.unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Other);
    assert_eq!(store.get("c").await.unwrap(), None);
}

#[tokio::test(flavor = "current_thread")]
async fn job_items_have_the_documented_layout() {
    let setup = Setup::new();
    let store = setup.fresh_store("layout").await;
    let mut st = state("layout");
    store.put("layout", &st, None).await.unwrap();
    st.fence = 3;
    store.put("layout", &st, Some(1)).await.unwrap();
    let item = raw_item(&setup.client, store.table(), "job#layout")
        .await
        .unwrap();
    let names: BTreeSet<&str> = item.keys().map(String::as_str).collect();
    assert_eq!(names, BTreeSet::from(["pk", "ver", "state", "updated_at"]));
    assert_eq!(item["ver"], n(2));
    assert_eq!(item["state"], s(&encode_state(&st)));
    let updated: Timestamp = item["updated_at"].as_s().unwrap().parse().unwrap();
    assert!(updated.duration_until(Timestamp::now()) < SignedDuration::from_secs(600));
}

#[tokio::test(flavor = "current_thread")]
async fn corrupt_items_are_reported_as_corrupt_naming_the_job() {
    let setup = Setup::new();
    let store = setup.fresh_store("corrupt").await;
    let table = store.table().to_string();
    let good = encode_state(&state("other-job"));
    let newer = encode_state(&state("newer")).replace("\"schema\":1", "\"schema\":99");
    let own = encode_state(&state("bad-ver"));
    // (job, its attributes besides pk, what the error must mention)
    type Row<'a> = (&'a str, Vec<(&'a str, AttributeValue)>, &'a str);
    let rows: Vec<Row> = vec![
        (
            "bad-json",
            vec![("ver", n(1)), ("state", s("not json"))],
            "not JSON",
        ),
        (
            "bad-ver",
            vec![("ver", s("one")), ("state", s(&own))],
            "ver",
        ),
        ("no-state", vec![("ver", n(1))], "state"),
        (
            "wrong-job",
            vec![("ver", n(1)), ("state", s(&good))],
            "belongs to job",
        ),
        (
            "newer",
            vec![("ver", n(1)), ("state", s(&newer))],
            "newer cronslot",
        ),
    ];
    for (job, attributes, needle) in &rows {
        let mut put = setup
            .client
            .put_item()
            .table_name(&table)
            .item("pk", s(&format!("job#{job}")));
        for (name, value) in attributes {
            put = put.item(*name, value.clone());
        }
        put.send().await.unwrap();
        let err = store.get(job).await.unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Corrupt, "{job}: {err}");
        assert!(err.message.contains(job), "{job}: {err}");
        assert!(err.message.contains(needle), "{job}: {err}");
    }
    // A conflict whose current record is corrupt says so too.
    let err = store
        .put("bad-json", &state("bad-json"), Some(7))
        .await
        .unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");

    // Effect entries.
    setup
        .client
        .put_item()
        .table_name(&table)
        .item("pk", s("effect#garbled"))
        .item("record", s("{"))
        .item("rev", n(1))
        .send()
        .await
        .unwrap();
    let foreign = serde_json::json!({
        "key": "someone-else", "owner": "a", "fence": 1,
        "state": "in_progress", "expires_at": "2026-01-05T00:00:00Z"
    })
    .to_string();
    setup
        .client
        .put_item()
        .table_name(&table)
        .item("pk", s("effect#foreign"))
        .item("record", s(&foreign))
        .item("rev", n(1))
        .send()
        .await
        .unwrap();
    for key in ["garbled", "foreign"] {
        let err = store.read_effect(key).await.unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
        assert!(err.message.contains(key), "{err}");
        let err = store
            .begin_effect(key, "a", 1, t0(), Duration::from_secs(60))
            .await
            .unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Corrupt, "{err}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn reserved_words_go_through_placeholders() {
    let setup = Setup::new();
    let store = setup.fresh_store("reserved").await;
    // The control: moto refuses a reserved word used bare in an expression,
    // as DynamoDB does, so the store's successes below mean something.
    let err = setup
        .client
        .put_item()
        .table_name(store.table())
        .item("pk", s("control"))
        .condition_expression("attribute_not_exists(ttl)")
        .send()
        .await
        .unwrap_err();
    let message = aws_smithy_types::error::display::DisplayErrorContext(&err).to_string();
    assert!(message.contains("reserved keyword"), "{message}");

    // The store's own attribute names include reserved words (`state`,
    // `ttl`), and jobs and effects may be named after others.
    for name in ["status", "name", "ttl", "state", "owner", "key", "value"] {
        let mut st = state(name);
        assert_eq!(
            store.put(name, &st, None).await.unwrap(),
            PutResult::Written(1)
        );
        st.fence = 1;
        assert_eq!(
            store.put(name, &st, Some(1)).await.unwrap(),
            PutResult::Written(2)
        );
        assert!(matches!(
            store.put(name, &st, Some(1)).await.unwrap(),
            PutResult::Conflict(Some(_))
        ));
        let hold = Duration::from_secs(60);
        assert_eq!(
            store.begin_effect(name, "a", 1, t0(), hold).await.unwrap(),
            EffectBegin::Acquired
        );
        assert_eq!(
            store.begin_effect(name, "a", 1, at(1), hold).await.unwrap(),
            EffectBegin::Acquired
        );
        assert_eq!(
            store.finish_effect(name, 1, "done", at(2)).await.unwrap(),
            EffectFinish::Recorded
        );
    }
    assert_eq!(
        store.jobs().await.unwrap(),
        vec!["key", "name", "owner", "state", "status", "ttl", "value"]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_ledger_follows_the_shared_rules_and_sets_ttl() {
    let setup = Setup::new();
    let retention = Duration::from_secs(3600);
    let store = setup
        .fresh_store("ledger")
        .await
        .with_effect_retention(retention);
    let key = "ledger@2026-01-05T01:00:00Z/charge";
    let hold = Duration::from_secs(60);
    let now = at(0);

    assert_eq!(store.read_effect(key).await.unwrap(), None);
    assert_eq!(
        store.begin_effect(key, "a", 1, now, hold).await.unwrap(),
        EffectBegin::Acquired
    );
    let item = raw_item(&setup.client, store.table(), &format!("effect#{key}"))
        .await
        .unwrap();
    let names: BTreeSet<&str> = item.keys().map(String::as_str).collect();
    assert_eq!(names, BTreeSet::from(["pk", "record", "rev", "ttl"]));
    assert_eq!(item["rev"], n(1));
    assert_eq!(
        item["ttl"],
        AttributeValue::N(at(60).as_second().to_string()),
        "an in-progress entry expires with its hold"
    );

    assert_eq!(
        store.begin_effect(key, "b", 1, at(1), hold).await.unwrap(),
        EffectBegin::Held {
            owner: "a".into(),
            fence: 1,
            expires_at: at(60)
        }
    );
    assert_eq!(
        store.begin_effect(key, "a", 1, at(2), hold).await.unwrap(),
        EffectBegin::Acquired,
        "the holder trying again"
    );
    assert_eq!(
        store
            .begin_effect(key, "old", 0, at(3), hold)
            .await
            .unwrap(),
        EffectBegin::Superseded { fence: 1 }
    );
    assert_eq!(
        store.finish_effect(key, 2, "x", at(4)).await.unwrap(),
        EffectFinish::NotHeld
    );
    assert_eq!(
        store.finish_effect(key, 1, "charged", at(5)).await.unwrap(),
        EffectFinish::Recorded
    );
    let item = raw_item(&setup.client, store.table(), &format!("effect#{key}"))
        .await
        .unwrap();
    assert_eq!(item["rev"], n(3));
    assert_eq!(
        item["ttl"],
        AttributeValue::N((at(5).as_second() + 3600).to_string()),
        "a done entry is kept for the retention period"
    );
    assert_eq!(
        store.begin_effect(key, "b", 2, at(6), hold).await.unwrap(),
        EffectBegin::AlreadyDone {
            result: "charged".into()
        }
    );
    let record = store.read_effect(key).await.unwrap().unwrap();
    assert_eq!(record.fence, 1);
    assert!(matches!(record.state, EffectState::Done { .. }));

    // A lapsed hold is taken over (TTL deletion is not relied upon: moto
    // never deletes, DynamoDB deletes late).
    let other = "ledger@2026-01-05T01:00:00Z/email";
    store
        .begin_effect(other, "a", 1, at(0), Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(
        store
            .begin_effect(other, "b", 2, at(20), hold)
            .await
            .unwrap(),
        EffectBegin::Acquired
    );
    assert_eq!(
        store.finish_effect(other, 1, "late", at(21)).await.unwrap(),
        EffectFinish::NotHeld
    );
}

#[tokio::test(flavor = "current_thread")]
async fn racing_workers_never_both_acquire() {
    let setup = Setup::new();
    let store = setup.fresh_store("ledger-race").await;
    for round in 0..5 {
        let key = format!("race@2026-01-05T01:00:00Z/effect-{round}");
        let workers: Vec<_> = (0..8)
            .map(|i| {
                let store = &store;
                let key = &key;
                async move {
                    let owner = format!("worker-{i}");
                    store
                        .begin_effect(key, &owner, 1, at(i), Duration::from_secs(600))
                        .await
                        .unwrap()
                }
            })
            .collect();
        let answers = join_all(workers).await;
        let acquired = answers
            .iter()
            .filter(|a| **a == EffectBegin::Acquired)
            .count();
        assert_eq!(acquired, 1, "round {round}: {answers:?}");
        assert!(
            answers
                .iter()
                .all(|a| matches!(a, EffectBegin::Acquired | EffectBegin::Held { .. })),
            "{answers:?}"
        );
    }
}

/// Jobs only (the ledger's entries and the tick mark share the table),
/// in byte order, as every store lists them
/// (`cronslot_tests::server_store::jobs_are_listed_in_byte_order`).
#[tokio::test(flavor = "current_thread")]
async fn jobs_lists_only_jobs_sorted() {
    let setup = Setup::new();
    let store = setup.fresh_store("jobs").await;
    cronslot_tests::server_store::jobs_are_listed_in_byte_order(&store).await;
}

#[tokio::test(flavor = "current_thread")]
async fn an_oversized_state_is_refused_and_nothing_is_written() {
    let setup = Setup::new();
    let store = setup.fresh_store("size").await;
    let small = state("big");
    store.put("big", &small, None).await.unwrap();
    let mut big = small.clone();
    // More than core's caps allow, to reach the store's own check: 120
    // dead letters with the largest error and checkpoint.
    for i in 0..120 {
        big.dead.push(DeadLetter {
            slot: at(i * 60),
            attempts: 3,
            last_error: "e".repeat(1024),
            fence: i as u64,
            died_at: at(i * 60),
            checkpoint: Some("c".repeat(4096)),
        });
    }
    assert!(encode_state(&big).len() > MAX_ITEM_BYTES);
    setup.counts.reset();
    let err = store.put("big", &big, Some(1)).await.unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Other);
    assert!(err.message.contains("\"big\""), "{err}");
    assert!(err.message.contains("bytes"), "{err}");
    assert!(err.message.contains(&MAX_ITEM_BYTES.to_string()), "{err}");
    assert_eq!(setup.counts.get("PutItem"), 0, "nothing was sent");
    assert_eq!(
        store.get("big").await.unwrap(),
        Some(Versioned {
            value: small,
            version: 1
        })
    );
}

#[tokio::test(flavor = "current_thread")]
async fn create_table_is_idempotent_and_enables_ttl() {
    let setup = Setup::new();
    let store = setup.fresh_store("setup").await;
    store
        .create_table()
        .await
        .expect("an existing table is fine");
    let ttl = setup
        .client
        .describe_time_to_live()
        .table_name(store.table())
        .send()
        .await
        .unwrap();
    let ttl = ttl.time_to_live_description().unwrap();
    assert_eq!(ttl.time_to_live_status(), Some(&TimeToLiveStatus::Enabled));
    assert_eq!(ttl.attribute_name(), Some("ttl"));
    let table = setup
        .client
        .describe_table()
        .table_name(store.table())
        .send()
        .await
        .unwrap();
    assert_eq!(
        table
            .table()
            .and_then(|t| t.billing_mode_summary())
            .and_then(|b| b.billing_mode()),
        Some(&BillingMode::PayPerRequest)
    );

    // A table with another key is refused with the reason.
    let foreign = destination_table(&setup.client).await;
    let err = DynamoStore::new(setup.client.clone(), foreign)
        .create_table()
        .await
        .unwrap_err();
    assert!(err.message.contains("\"pk\""), "{err}");

    // A missing table: a clear error, not a panic or a silent None.
    let missing = DynamoStore::new(setup.client.clone(), "no-such-table");
    let err = missing.get("a").await.unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Other);
    assert!(err.message.contains("ResourceNotFoundException"), "{err}");
    assert!(err.message.contains("no-such-table"), "{err}");
}

#[tokio::test(flavor = "current_thread")]
async fn connect_builds_a_store_or_says_what_was_expected() {
    let store =
        DynamoStore::connect("dynamodb://my-table?region=eu-west-1&endpoint=http://127.0.0.1:9")
            .await
            .unwrap();
    assert_eq!(store.table(), "my-table");
    assert_eq!(
        store.client().config().region().map(|r| r.as_ref()),
        Some("eu-west-1")
    );
    for (url, needle) in [
        ("dynamodb://ab?region=us-east-1", "3 to 255"),
        (
            "sqlite:cronslot.db",
            "expected dynamodb://TABLE?region=REGION",
        ),
        ("dynamodb://t-1?zone=x", "unknown parameter"),
    ] {
        let err = DynamoStore::connect(url).await.unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Other);
        assert!(err.message.contains(needle), "{url}: {err}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_fence_condition_refuses_a_stale_writer() {
    let setup = Setup::new();
    let dest = destination_table(&setup.client).await;
    let write = |fence: u64, total: u64| {
        let put = setup
            .client
            .put_item()
            .table_name(&dest)
            .item("id", s("report-2026-01-05"))
            .item("total", n(total));
        // `status` is a reserved word: the helper's placeholders cope.
        fence_condition("status", fence)
            .apply_to_put_item(put)
            .send()
    };
    write(5, 50).await.expect("first write");
    write(5, 51).await.expect("the same run again");
    let stale = write(4, 40).await.unwrap_err();
    assert!(
        matches!(
            stale.as_service_error(),
            Some(PutItemError::ConditionalCheckFailedException(_))
        ),
        "{stale:?}"
    );
    let item = destination_item(&setup.client, &dest, "report-2026-01-05")
        .await
        .unwrap();
    assert_eq!(
        (item["total"].clone(), item["status"].clone()),
        (n(51), n(5))
    );
    write(6, 60).await.expect("a newer run");

    // Updates: the fence joins the SET clause and the condition.
    let update = |fence: u64, total: u64| {
        let b = setup
            .client
            .update_item()
            .table_name(&dest)
            .key("id", s("report-2026-01-05"))
            .update_expression("SET #t = :t")
            .condition_expression("attribute_exists(#id)")
            .expression_attribute_names("#t", "total")
            .expression_attribute_names("#id", "id")
            .expression_attribute_values(":t", n(total));
        fence_condition("status", fence)
            .apply_to_update_item(b)
            .send()
    };
    let stale = update(5, 1).await.unwrap_err();
    assert!(
        matches!(
            stale.as_service_error(),
            Some(UpdateItemError::ConditionalCheckFailedException(_))
        ),
        "{stale:?}"
    );
    update(7, 70).await.expect("a newer run's update");
    let item = destination_item(&setup.client, &dest, "report-2026-01-05")
        .await
        .unwrap();
    assert_eq!(
        (item["total"].clone(), item["status"].clone()),
        (n(70), n(7))
    );
}

fn fenced_put(dest: &str, id: &str, fence: u64) -> TransactWriteItem {
    let put = Put::builder()
        .table_name(dest)
        .item("id", s(id))
        .item("total", n(42));
    let put = fence_condition("fence", fence)
        .apply_to_put(put)
        .build()
        .unwrap();
    TransactWriteItem::builder().put(put).build()
}

#[tokio::test(flavor = "current_thread")]
async fn complete_with_commits_the_jobs_write_with_the_completion() {
    let setup = Setup::new();
    let store = setup.fresh_store("tx-complete").await;
    let dest = destination_table(&setup.client).await;
    let spec = job("tx", "report", "schedule = \"0 * * * *\"");
    let c = CasCoordinator::new(store.clone(), 1);
    create(&c, &spec, t0()).await;
    let Ok(Claim::Claimed(lease)) = c.claim(&spec, at(HOUR + 1), Trigger::Tick, "lambda").await
    else {
        panic!("no claim");
    };
    setup.counts.reset();
    let written = store
        .complete_with(
            &spec,
            lease.fence,
            Some("ok"),
            at(HOUR + 2),
            vec![fenced_put(&dest, "report-1", lease.fence)],
            None,
        )
        .await
        .unwrap();
    assert_eq!(setup.counts.get("TransactWriteItems"), 1);
    assert!(written.value.leases.is_empty());
    assert_eq!(written.value.counters.succeeded, 1);
    assert_eq!(store.get(spec.name.as_str()).await.unwrap(), Some(written));
    let item = destination_item(&setup.client, &dest, "report-1")
        .await
        .expect("the job's write landed with the completion");
    assert_eq!(item["fence"], n(lease.fence));

    // A superseded run: its completion is refused and its write with it.
    let spec = job(
        "tx",
        "takeover",
        "schedule = \"0 * * * *\"\nlease = \"1m\"\nretry = { backoff = \"1s\", max_backoff = \"1s\" }",
    );
    create(&c, &spec, t0()).await;
    let Ok(Claim::Claimed(old)) = c.claim(&spec, at(HOUR + 1), Trigger::Tick, "a").await else {
        panic!("no claim");
    };
    let Ok(Claim::Claimed(new)) = c.claim(&spec, at(HOUR + 3 * 60), Trigger::Tick, "b").await
    else {
        panic!("no takeover");
    };
    assert!(new.fence > old.fence);
    let refused = store
        .complete_with(
            &spec,
            old.fence,
            None,
            at(HOUR + 3 * 60 + 1),
            vec![fenced_put(&dest, "report-2", old.fence)],
            None,
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(CoordError::Refused(Refusal::Superseded { .. }))
        ),
        "{refused:?}"
    );
    assert_eq!(
        destination_item(&setup.client, &dest, "report-2").await,
        None
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_condition_in_the_transaction_writes_nothing() {
    let setup = Setup::new();
    let store = setup.fresh_store("tx-conflict").await;
    let dest = destination_table(&setup.client).await;
    let first = state("job");
    store.put("job", &first, None).await.unwrap();
    let mut second = first.clone();
    second.fence = 2;
    store.put("job", &second, Some(1)).await.unwrap();

    // The state's version condition fails: a conflict with the current
    // record (ALL_OLD, no extra read), and the user's item is not written.
    setup.counts.reset();
    let mut stale = first.clone();
    stale.fence = 1;
    let result = store
        .put_with("job", &stale, Some(1), vec![fenced_put(&dest, "d1", 1)])
        .await
        .unwrap();
    assert_eq!(
        result,
        PutResult::Conflict(Some(Box::new(Versioned {
            value: second.clone(),
            version: 2
        })))
    );
    assert_eq!(
        setup.counts.snapshot(),
        BTreeMap::from([("TransactWriteItems".to_string(), 1)])
    );
    assert_eq!(destination_item(&setup.client, &dest, "d1").await, None);

    // The user's condition fails (a newer fence wrote the destination): an
    // error naming the item, and the state is not written either.
    setup
        .client
        .put_item()
        .table_name(&dest)
        .item("id", s("d2"))
        .item("fence", n(10))
        .send()
        .await
        .unwrap();
    let mut next = second.clone();
    next.fence = 3;
    let err = store
        .put_with("job", &next, Some(2), vec![fenced_put(&dest, "d2", 3)])
        .await
        .unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Other);
    assert!(err.message.contains("item 1"), "{err}");
    assert!(err.message.contains(&dest), "{err}");
    assert_eq!(
        store.get("job").await.unwrap(),
        Some(Versioned {
            value: second.clone(),
            version: 2
        })
    );

    // Both succeed together.
    assert_eq!(
        store
            .put_with("job", &next, Some(2), vec![fenced_put(&dest, "d3", 3)])
            .await
            .unwrap(),
        PutResult::Written(3)
    );
    assert!(destination_item(&setup.client, &dest, "d3").await.is_some());
    // Too many items for one transaction: refused before sending.
    let many: Vec<_> = (0..100)
        .map(|i| fenced_put(&dest, &format!("m{i}"), 3))
        .collect();
    let err = store
        .put_with("job", &next, Some(3), many)
        .await
        .unwrap_err();
    assert!(err.message.contains("at most 99"), "{err}");
}

#[tokio::test(flavor = "current_thread")]
async fn the_deadline_bounds_every_operation() {
    let setup = Setup::new();
    let store = setup.fresh_store("deadline").await;
    let late = store.clone().with_deadline(Instant::now());
    let err = late.get("a").await.unwrap_err();
    assert_eq!(err.kind, StoreErrorKind::Unavailable, "{err}");
    assert!(err.message.contains("no time left"), "{err}");
    assert_eq!(setup.counts.get("GetItem"), 0);
}

#[test]
fn store_futures_are_send() {
    fn send<T: Send>(_: &T) {}
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .build();
    let store = DynamoStore::new(Client::from_conf(config), "t-1");
    let st = state("a");
    let spec = job("send", "a", "schedule = \"0 * * * *\"");
    send(&store.get("a"));
    send(&store.put("a", &st, None));
    send(&store.jobs());
    send(&store.begin_effect("k", "o", 1, t0(), Duration::from_secs(1)));
    send(&store.finish_effect("k", 1, "r", t0()));
    send(&store.read_effect("k"));
    send(&store.put_with("a", &st, None, Vec::new()));
    send(&store.complete_with(&spec, 1, None, t0(), Vec::new(), None));
    send(&store.create_table());
    send(&cronslot_core::coord::TickIndex::tick_start(
        &store,
        t0(),
        10,
    ));
    send(&cronslot_core::coord::TickIndex::tick_end(&store, t0()));
}
