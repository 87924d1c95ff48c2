//! Two versions of the function on one table (issue 29): the record rule
//! the function follows, on DynamoDB (moto). A job's record written by a
//! newer cronslot (its schema above this build's) is refused with an error
//! that names both versions, and the item is left exactly as it was; the
//! function's other jobs go on. What an older function does with this
//! build's records is the roll's subject (`infra/tests/it/roll.rs`: the
//! previous release's runners and this one's on one table, the record code
//! the function runs).

use std::rc::Rc;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::types::AttributeValue;
use cronslot_aws::dynamo::DynamoStore;
use cronslot_aws::lambda::{Handler, Host, Invocation, Jobs};
use cronslot_core::coord::{JobState, SCHEMA_VERSION, StateStore, encode_state};
use cronslot_core::manifest::parse_manifest;
use jiff::Timestamp;
use serde_json::json;

const MANIFEST: &str = r#"
[[job]]
name = "report"
schedule = "0 * * * *"
lease = "2m"

[[job]]
name = "sweep"
schedule = "0 * * * *"
lease = "2m"
"#;

#[tokio::test(flavor = "current_thread")]
async fn a_record_of_a_newer_cronslot_is_refused_naming_both_versions_and_left_alone() {
    let endpoint = cronslot_tests::moto::moto().endpoint.clone();
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "versions"))
        .endpoint_url(&endpoint)
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    let table = format!("versions-{}", std::process::id());
    let store = DynamoStore::new(client.clone(), &table);
    store.create_table().await.expect("table");

    let slot: Timestamp = "2026-03-08T14:00:00Z".parse().unwrap();
    let created: Timestamp = "2026-03-08T13:00:00Z".parse().unwrap();
    // The record as a newer cronslot would write it: the next schema, and
    // a field this build has never heard of.
    let mut state = JobState::new("report", "hash", created, false);
    state.schema = SCHEMA_VERSION + 1;
    let mut text: serde_json::Value = serde_json::from_str(&encode_state(&state)).unwrap();
    text["a_field_of_the_future"] = json!({"kept": true});
    let text = text.to_string();
    client
        .put_item()
        .table_name(&table)
        .item("pk", AttributeValue::S("job#report".into()))
        .item("ver", AttributeValue::N("7".into()))
        .item("state", AttributeValue::S(text.clone()))
        .send()
        .await
        .unwrap();
    let raw = || {
        let client = client.clone();
        let table = table.clone();
        async move {
            client
                .get_item()
                .table_name(&table)
                .key("pk", AttributeValue::S("job#report".into()))
                .consistent_read(true)
                .send()
                .await
                .unwrap()
                .item()
                .cloned()
                .unwrap()
        }
    };
    let before = raw().await;

    let manifest = parse_manifest(MANIFEST, "cronslot.toml").unwrap();
    let jobs = Jobs::new()
        .register("report", |_| async { Ok(()) })
        .register("sweep", |_| async { Ok(()) });
    let now = slot + jiff::SignedDuration::from_secs(5);
    let host = Host {
        clock: Rc::new(move || now),
        log: Rc::new(|_: &str| {}),
        seed: 3,
    };
    let shared = store.clone();
    let handler = Handler::new(manifest, jobs, move |_: &Invocation| shared.clone(), host).unwrap();
    let invocation = Invocation {
        request_id: "r-1".into(),
        deadline: now + jiff::SignedDuration::from_secs(60),
    };
    let event =
        |job: &str| json!({"cronslot": {"job": job, "scheduled_time": "2026-03-08T14:00:00Z"}});
    let refused = handler
        .handle(&event("report"), &invocation)
        .await
        .expect_err("the newer record is refused");
    let message = refused.to_string();
    assert!(
        message.contains(&format!("schema {}", SCHEMA_VERSION + 1))
            && message.contains(&format!("reads up to {SCHEMA_VERSION}"))
            && message.contains("upgrade cronslot"),
        "{message}"
    );
    assert_eq!(raw().await, before, "the item is left exactly as it was");
    // Another job's slot runs.
    let out = handler.handle(&event("sweep"), &invocation).await.unwrap();
    assert_eq!(out["runs"][0]["outcome"], "succeeded", "{out}");
    assert!(store.get("sweep").await.unwrap().is_some());
}
