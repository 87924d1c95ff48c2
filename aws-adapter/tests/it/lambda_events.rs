//! Decoding of every event form the function accepts, and the exact errors
//! for those it refuses (fixtures under tests/fixtures/).

use cronslot_aws::lambda::event::{self, Event, EventError, Source, Target, Work};
use cronslot_core::manifest::{Manifest, parse_manifest};
use jiff::Timestamp;
use serde_json::Value;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn manifest() -> Manifest {
    let path = format!(
        "{}/tests/fixtures/cronslot.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("manifest fixture");
    parse_manifest(&text, "cronslot.toml").expect("valid manifest")
}

fn at(text: &str) -> Timestamp {
    text.parse().expect("instant")
}

fn decoded(name: &str) -> Event {
    event::decode(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn refused(name: &str) -> EventError {
    match event::decode(&fixture(name)) {
        Ok(e) => match event::resolve(&e, &manifest()) {
            Ok(w) => panic!("{name} was accepted: {w:?}"),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

fn assert_refused(name: &str, path: &str, message: &str) {
    let e = refused(name);
    assert_eq!(
        (e.path.as_str(), e.message.as_str()),
        (path, message),
        "{name}"
    );
}

#[test]
fn scheduler_input_names_a_job_and_its_slot() {
    let e = decoded("scheduler.json");
    assert_eq!(e.target, Target::Job("report".into()));
    assert_eq!(e.time, at("2026-03-08T14:00:00Z"));
    assert_eq!(
        e.source,
        Source::Scheduler {
            execution_id: Some("6a3f9b8e-2c1d-4f5e-9a7b-1c2d3e4f5a6b".into()),
            attempt: Some(1),
            schedule_arn: None,
        }
    );
    let m = manifest();
    match event::resolve(&e, &m) {
        Ok(Work::Slot { spec, slot }) => {
            assert_eq!(spec.name.as_str(), "report");
            assert_eq!(slot, at("2026-03-08T14:00:00Z"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn rule_event_names_the_job_by_its_rule() {
    let e = decoded("rule.json");
    assert_eq!(e.target, Target::Job("report".into()));
    assert_eq!(e.time, at("2026-03-08T14:00:00Z"));
    assert_eq!(
        e.source,
        Source::Rule {
            rule: Some("cronslot-report".into()),
            id: Some("53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa".into()),
        }
    );
    assert!(matches!(
        event::resolve(&e, &manifest()),
        Ok(Work::Slot { .. })
    ));
}

#[test]
fn rule_detail_job_wins_over_the_rule_name() {
    let mut payload = fixture("rule.json");
    payload["detail"] = serde_json::json!({"job": "sweep"});
    payload["time"] = Value::from("2026-03-08T14:05:00Z");
    let e = event::decode(&payload).expect("decodes");
    assert_eq!(e.target, Target::Job("sweep".into()));
    assert_eq!(e.target_path, "$.detail.job");
}

#[test]
fn rule_time_is_cut_to_the_minute() {
    let mut payload = fixture("rule.json");
    payload["time"] = Value::from("2026-03-08T14:00:37Z");
    let e = event::decode(&payload).expect("decodes");
    assert_eq!(e.time, at("2026-03-08T14:00:00Z"));
    assert!(matches!(
        event::resolve(&e, &manifest()),
        Ok(Work::Slot { .. })
    ));
}

#[test]
fn rules_on_a_custom_bus_are_named_by_their_last_segment() {
    let mut payload = fixture("rule.json");
    payload["resources"] =
        serde_json::json!(["arn:aws:events:eu-west-1:123456789012:rule/ops-bus/cronslot-report"]);
    assert_eq!(
        event::decode(&payload).map(|e| e.target),
        Ok(Target::Job("report".into()))
    );
}

#[test]
fn ticks_from_scheduler_and_rule() {
    for name in ["tick-scheduler.json", "tick-rule.json"] {
        let e = decoded(name);
        assert_eq!(e.target, Target::Tick, "{name}");
        assert_eq!(e.time, at("2026-03-08T14:05:00Z"), "{name}");
        assert!(
            matches!(event::resolve(&e, &manifest()), Ok(Work::Tick { .. })),
            "{name}"
        );
    }
    let mut payload = fixture("rule.json");
    payload["detail"] = serde_json::json!({"tick": true});
    assert_eq!(event::decode(&payload).map(|e| e.target), Ok(Target::Tick));
}

#[test]
fn attempt_may_be_a_number() {
    let mut payload = fixture("scheduler.json");
    payload["cronslot"]["attempt"] = Value::from(3);
    match event::decode(&payload).map(|e| e.source) {
        Ok(Source::Scheduler { attempt, .. }) => assert_eq!(attempt, Some(3)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_job() {
    assert_refused(
        "unknown-job.json",
        "$.cronslot.job",
        "unknown job \"nightly-invoices\": the manifest's jobs are report, sweep, rollup",
    );
}

#[test]
fn time_that_is_not_a_slot() {
    assert_refused(
        "not-a-slot.json",
        "$.cronslot.scheduled_time",
        "2026-03-08T14:07:00Z is not a slot of job \"report\" (schedule \"0 * * * *\" in UTC); the nearest slots are 2026-03-08T14:00:00Z and 2026-03-08T15:00:00Z",
    );
}

#[test]
fn malformed_payloads() {
    let cases = [
        (
            "malformed-not-object.json",
            "$",
            "expected a JSON object (an EventBridge Scheduler input {\"cronslot\": {...}} or a Scheduled Event), found an array",
        ),
        (
            "malformed-no-time.json",
            "$.cronslot.scheduled_time",
            "missing; the input template must carry \"scheduled_time\": \"<aws.scheduler.scheduled-time>\"",
        ),
        (
            "malformed-bad-time.json",
            "$.cronslot.scheduled_time",
            BAD_TIME,
        ),
        (
            "malformed-placeholder.json",
            "$.cronslot.scheduled_time",
            "\"<aws.scheduler.scheduled-time>\" is a placeholder that was not filled in: only an EventBridge Scheduler target's input substitutes <aws.scheduler.*> (a Rule sends its own Scheduled Event)",
        ),
        (
            "malformed-unknown-key.json",
            "$.cronslot.schedule_time",
            "unknown key; expected job, tick, scheduled_time, execution_id, attempt, schedule_arn",
        ),
        (
            "malformed-job-type.json",
            "$.cronslot.job",
            "expected a string, found a number",
        ),
        (
            "malformed-attempt.json",
            "$.cronslot.attempt",
            "expected an attempt number (1, 2, …), found \"first\"",
        ),
        (
            "malformed-no-target.json",
            "$.cronslot",
            "names no job: add \"job\": \"<name>\" (a dedicated trigger) or \"tick\": true",
        ),
        (
            "malformed-rule-source.json",
            "$.source",
            "is \"aws.s3\"; a Scheduled Event has \"aws.events\"",
        ),
        (
            "malformed-rule-name.json",
            "$.resources",
            "found rule \"nightly-report\", and $.detail has no \"job\": name the rule \"cronslot-<job>\" (or \"cronslot-tick\"), or put \"job\" in the event's detail",
        ),
    ];
    for (name, path, message) in cases {
        assert_refused(name, path, message);
    }
}

/// jiff's own reason is part of the message: it says where parsing stopped.
const BAD_TIME: &str = "\"2026-03-08 14:00\" is not an RFC 3339 instant such as 2026-03-08T07:00:00Z: the seconds are missing (write HH:MM:SS)";

#[test]
fn more_malformed_shapes() {
    let cases: [(Value, &str, &str); 8] = [
        (
            Value::Null,
            "$",
            "expected a JSON object (an EventBridge Scheduler input {\"cronslot\": {...}} or a Scheduled Event), found null",
        ),
        (
            serde_json::json!({}),
            "$",
            "not a cronslot event: expected {\"cronslot\": {...}} (an EventBridge Scheduler input) or an EventBridge Scheduled Event (\"source\": \"aws.events\")",
        ),
        (
            serde_json::json!({"cronslot": "report"}),
            "$.cronslot",
            "expected an object, found a string",
        ),
        (
            serde_json::json!({"cronslot": {"job": "report", "scheduled_time": "2026-03-08T14:00:00Z"}, "extra": 1}),
            "$.extra",
            "unexpected key: a Scheduler input holds only \"cronslot\"",
        ),
        (
            serde_json::json!({"cronslot": {"job": "report", "tick": true, "scheduled_time": "2026-03-08T14:00:00Z"}}),
            "$.cronslot",
            "has both \"job\" and \"tick\": true; a trigger is either one job's or the tick",
        ),
        (
            serde_json::json!({"cronslot": {"job": "", "scheduled_time": "2026-03-08T14:00:00Z"}}),
            "$.cronslot.job",
            "is empty; expected a job name",
        ),
        (
            serde_json::json!({"source": "aws.events", "detail-type": "Scheduled Event", "time": "2026-03-08T14:00:00Z", "resources": "arn"}),
            "$.resources",
            "expected an array of rule ARNs, found a string",
        ),
        (
            serde_json::json!({"source": "aws.events", "detail-type": "Scheduled Event", "time": "2026-03-08T14:00:00Z", "resources": [], "detail": {"jobs": "x"}}),
            "$.detail.jobs",
            "unknown key; expected job, tick",
        ),
    ];
    for (payload, path, message) in cases {
        let e = event::decode(&payload).expect_err("refused");
        assert_eq!(
            (e.path.as_str(), e.message.as_str()),
            (path, message),
            "{payload}"
        );
    }
}

#[test]
fn display_names_the_path() {
    let e = refused("unknown-job.json");
    assert!(
        e.to_string()
            .starts_with("event $.cronslot.job: unknown job \"nightly-invoices\""),
        "{e}"
    );
}
