//! Fuzzing the Lambda event decoder (issue 7, "Reliability").
//!
//! `event::decode` is documented as total: every payload gives an event or
//! an error naming the JSON path that is wrong. This file feeds it, and
//! `event::resolve` against the fixture manifest:
//!
//! - arbitrary JSON values (a recursive strategy whose object keys lean on
//!   the keys the decoder reads, so it gets past the first check),
//! - event-shaped payloads (Scheduler inputs and Rule events) with each
//!   field drawn from good, edge (years -9999 and 9999, leap seconds,
//!   nanoseconds, offsets, `u32::MAX + 1` attempts) and wrongly typed values,
//! - structural mutations of every fixture in `tests/fixtures`, and
//!   character mutations of their text.
//!
//! Properties: no panic, no case slower than [`CASE_BUDGET`]; an error's
//! path names a value of the payload, or a known key directly under an
//! object of it (for "missing"), and its message is one non-empty line; an
//! accepted event's slot is a slot of the job it names, its job exists, a
//! Rule's time is cut to the minute.
//!
//! Case counts keep the file under ~20 s in a debug build; set
//! `PROPTEST_CASES` for a long run.

use std::collections::BTreeSet;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cronslot_aws::lambda::event::{self, EventError, Source, Target, Work};
use cronslot_core::manifest::{Manifest, parse_manifest};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{Map, Value, json};

const CASE_BUDGET: Duration = Duration::from_secs(5);

/// Keys the decoder reads anywhere.
const KEYS: [&str; 16] = [
    "cronslot",
    "job",
    "tick",
    "scheduled_time",
    "execution_id",
    "attempt",
    "schedule_arn",
    "source",
    "detail-type",
    "time",
    "id",
    "detail",
    "resources",
    "version",
    "region",
    "",
];

const FIXTURES: [&str; 16] = [
    include_str!("../fixtures/malformed-attempt.json"),
    include_str!("../fixtures/malformed-bad-time.json"),
    include_str!("../fixtures/malformed-job-type.json"),
    include_str!("../fixtures/malformed-no-target.json"),
    include_str!("../fixtures/malformed-no-time.json"),
    include_str!("../fixtures/malformed-not-object.json"),
    include_str!("../fixtures/malformed-placeholder.json"),
    include_str!("../fixtures/malformed-rule-name.json"),
    include_str!("../fixtures/malformed-rule-source.json"),
    include_str!("../fixtures/malformed-unknown-key.json"),
    include_str!("../fixtures/not-a-slot.json"),
    include_str!("../fixtures/rule.json"),
    include_str!("../fixtures/scheduler.json"),
    include_str!("../fixtures/tick-rule.json"),
    include_str!("../fixtures/tick-scheduler.json"),
    include_str!("../fixtures/unknown-job.json"),
];

fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x7_F022_E7E7),
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    }
}

fn manifest() -> &'static Manifest {
    static M: OnceLock<Manifest> = OnceLock::new();
    M.get_or_init(|| {
        parse_manifest(include_str!("../fixtures/cronslot.toml"), "cronslot.toml")
            .expect("fixture manifest")
    })
}

// ------------------------------------------------------------ paths

/// `key` under `path`, written the way the decoder writes it.
fn child(path: &str, key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{key:?}]")
    }
}

/// Every path an error may name: each value of the payload, and each known
/// key under each object (a missing key is named where it should be).
fn nameable(value: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, path: String, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                for k in KEYS {
                    out.insert(child(&path, k));
                }
                for (k, v) in map {
                    walk(v, child(&path, k), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
        out.insert(path);
    }
    let mut out = BTreeSet::new();
    walk(value, "$".to_string(), &mut out);
    out
}

fn check_error(payload: &Value, e: &EventError) -> Result<(), TestCaseError> {
    prop_assert!(
        nameable(payload).contains(&e.path),
        "path {:?} names nothing in {payload}: {e}",
        e.path
    );
    prop_assert!(!e.message.is_empty(), "{e:?}");
    prop_assert!(!e.to_string().contains('\n'), "{e:?}");
    Ok(())
}

/// Decodes and resolves `payload`, checking whichever outcome.
fn check(payload: &Value) -> Result<(), TestCaseError> {
    let started = Instant::now();
    match event::decode(payload) {
        Err(e) => check_error(payload, &e)?,
        Ok(ev) => {
            if let Target::Job(job) = &ev.target {
                prop_assert!(!job.is_empty(), "empty job from {payload}");
            }
            if let Source::Rule { .. } = ev.source {
                prop_assert_eq!(ev.time.as_second().rem_euclid(60), 0);
                prop_assert_eq!(ev.time.subsec_nanosecond(), 0);
            }
            prop_assert!(nameable(payload).contains(&ev.target_path), "{ev:?}");
            match event::resolve(&ev, manifest()) {
                Err(e) => check_error(payload, &e)?,
                Ok(Work::Tick { time }) => {
                    prop_assert_eq!(&ev.target, &Target::Tick);
                    prop_assert_eq!(time, ev.time);
                }
                Ok(Work::Slot { spec, slot }) => {
                    prop_assert_eq!(ev.job(), Some(spec.name.as_str()));
                    prop_assert_eq!(slot, ev.time);
                    prop_assert!(spec.schedule.is_slot(slot), "{slot} from {payload}");
                }
                Ok(other) => prop_assert!(false, "work this test does not know: {other:?}"),
            }
        }
    }
    let took = started.elapsed();
    prop_assert!(took < CASE_BUDGET, "{payload} took {took:?}");
    Ok(())
}

// ------------------------------------------------------------ strategies

const TIMES: &[&str] = &[
    "2026-03-08T14:00:00Z",
    "2026-03-08T14:05:00Z",
    "2026-03-08T14:00:59Z",
    "2026-03-08T14:00:00.999999999Z",
    "2026-03-08T15:00:00+01:00",
    "2026-06-30T23:59:60Z",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:00Z",
    "-009999-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "1970-01-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-03-08 14:00:00Z",
    "2026-03-08T14:00:00",
    "<aws.scheduler.scheduled-time>",
    "<aws.events.event.ingestion-time>",
    "",
    "now",
];

const STRINGS: &[&str] = &[
    "report",
    "sweep",
    "rollup",
    "nope",
    "",
    "cronslot-tick",
    "cronslot-report",
    "cronslot-",
    "aws.events",
    "Scheduled Event",
    "arn:aws:events:us-east-1:123456789012:rule/cronslot-report",
    "arn:aws:events:us-east-1:123456789012:rule/bus/cronslot-tick",
    "arn:aws:events:us-east-1:123456789012:rule/",
    "arn:aws:events::::rule/cronslot-sweep",
    "arn:aws:lambda:us-east-1:1:function:f",
    "1",
    "0",
    "4294967296",
    "-1",
    "ünïcode \u{0} \u{202e}",
];

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::sample::select(&[0u64, 1, 2, 4_294_967_295, 4_294_967_296][..]).prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(TIMES).prop_map(|s| Value::String(s.into())),
        prop::sample::select(STRINGS).prop_map(|s| Value::String(s.into())),
        ".{0,20}".prop_map(Value::String),
    ]
    .boxed()
}

fn key() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(&KEYS[..]).prop_map(str::to_string),
        1 => ".{0,8}",
    ]
    .boxed()
}

fn any_json() -> BoxedStrategy<Value> {
    cronslot_tests::fuzz::json_tree(leaf(), key(), 48, 6)
}

/// A value for a field: usually the right type, sometimes anything.
fn field(good: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop_oneof![4 => good, 1 => any_json()].boxed()
}

fn text(values: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop::sample::select(values)
        .prop_map(|s| Value::String(s.into()))
        .boxed()
}

/// Mostly one of `good`, sometimes any of `edge`.
fn good_or(good: &'static [&'static str], edge: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop_oneof![3 => text(good), 1 => text(edge)].boxed()
}

const JOBS: &[&str] = &["report", "sweep", "rollup"];
const GOOD_TIMES: &[&str] = &[
    "2026-03-08T14:00:00Z",
    "2026-03-08T14:05:00Z",
    "2026-03-08T14:00:59Z",
    "2026-03-08T15:00:00+01:00",
];

/// Each field present with its probability.
fn fields(
    entries: Vec<(&'static str, f64, BoxedStrategy<Value>)>,
) -> BoxedStrategy<Map<String, Value>> {
    let parts: Vec<_> = entries
        .into_iter()
        .map(|(k, p, v)| prop::option::weighted(p, v).prop_map(move |v| (k, v)))
        .collect();
    parts
        .prop_map(|kv| {
            kv.into_iter()
                .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
                .collect()
        })
        .boxed()
}

fn scheduler_input() -> BoxedStrategy<Value> {
    fields(vec![
        ("job", 0.8, field(good_or(JOBS, STRINGS))),
        (
            "tick",
            0.3,
            field(any::<bool>().prop_map(Value::Bool).boxed()),
        ),
        ("scheduled_time", 0.9, field(good_or(GOOD_TIMES, TIMES))),
        ("execution_id", 0.5, field(text(STRINGS))),
        (
            "attempt",
            0.5,
            field(
                prop_oneof![
                    good_or(&["1", "2"], STRINGS),
                    (0u64..5).prop_map(Value::from)
                ]
                .boxed(),
            ),
        ),
        ("schedule_arn", 0.5, field(text(STRINGS))),
    ])
    .prop_map(|m| json!({ "cronslot": Value::Object(m) }))
    .boxed()
}

fn rule_event() -> BoxedStrategy<Value> {
    let detail = prop_oneof![
        Just(json!({})),
        Just(Value::Null),
        fields(vec![
            ("job", 0.5, field(good_or(JOBS, STRINGS))),
            (
                "tick",
                0.3,
                field(any::<bool>().prop_map(Value::Bool).boxed())
            ),
        ])
        .prop_map(Value::Object),
    ];
    let arns = &[
        "arn:aws:events:us-east-1:123456789012:rule/cronslot-report",
        "arn:aws:events:us-east-1:123456789012:rule/bus/cronslot-tick",
        "arn:aws:events:us-east-1:123456789012:rule/cronslot-sweep",
    ];
    fields(vec![
        ("version", 0.5, text(&["0"])),
        ("id", 0.5, field(text(STRINGS))),
        (
            "detail-type",
            0.95,
            field(good_or(&["Scheduled Event"], &["Other", ""])),
        ),
        (
            "source",
            0.95,
            field(good_or(&["aws.events"], &["aws.scheduler", ""])),
        ),
        ("time", 0.9, field(good_or(GOOD_TIMES, TIMES))),
        (
            "resources",
            0.9,
            field(
                prop::collection::vec(good_or(arns, STRINGS), 0..4)
                    .prop_map(Value::Array)
                    .boxed(),
            ),
        ),
        ("detail", 0.5, field(detail.boxed())),
    ])
    .prop_map(Value::Object)
    .boxed()
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the n-th node (pre-order) with a value.
    Replace(usize, Value),
    /// Remove a key of the n-th object.
    Remove(usize, usize),
    /// Add a key to the n-th object.
    Add(usize, String, Value),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any_json()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, k)| Mutation::Remove(i, k)),
        (any::<usize>(), key(), leaf()).prop_map(|(i, k, v)| Mutation::Add(i, k, v)),
    ]
}

fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Object(m) => m.values().map(count_nodes).sum(),
        Value::Array(a) => a.iter().map(count_nodes).sum(),
        _ => 0,
    }
}

/// The n-th node in pre-order (n < count_nodes(v)).
fn nth_node(v: &mut Value, mut n: usize) -> &mut Value {
    if n == 0 {
        return v;
    }
    n -= 1;
    let children: Vec<&mut Value> = match v {
        Value::Object(m) => m.values_mut().collect(),
        Value::Array(a) => a.iter_mut().collect(),
        _ => unreachable!("n < count_nodes"),
    };
    for c in children {
        let size = count_nodes(c);
        if n < size {
            return nth_node(c, n);
        }
        n -= size;
    }
    unreachable!("n < count_nodes")
}

fn apply(mut v: Value, mutations: &[Mutation]) -> Value {
    for m in mutations {
        let total = count_nodes(&v);
        match m {
            Mutation::Replace(i, new) => *nth_node(&mut v, i % total) = new.clone(),
            Mutation::Remove(i, k) => {
                if let Value::Object(map) = nth_node(&mut v, i % total) {
                    if let Some(key) = map.keys().nth(k % map.len().max(1)).cloned() {
                        map.remove(&key);
                    }
                }
            }
            Mutation::Add(i, k, new) => {
                if let Value::Object(map) = nth_node(&mut v, i % total) {
                    map.insert(k.clone(), new.clone());
                }
            }
        }
    }
    v
}

fn fixture() -> BoxedStrategy<Value> {
    prop::sample::select(&FIXTURES[..])
        .prop_map(|t| serde_json::from_str(t).expect("fixture is JSON"))
        .boxed()
}

const TEXT_ALPHABET: &[char] = &[
    '"', '{', '}', '[', ']', ':', ',', '0', '9', '-', '.', 'e', 'Z', 'T', ' ', '\\', 'n', 'u',
];

// ------------------------------------------------------------ properties

proptest! {
    #![proptest_config(config(1_500))]

    #[test]
    fn arbitrary_json_is_decoded_or_refused_at_a_path(v in any_json()) {
        check(&v)?;
    }

    #[test]
    fn arbitrary_objects_under_cronslot_or_detail(inner in any_json(), rule in any::<bool>()) {
        let v = if rule {
            json!({
                "source": "aws.events",
                "detail-type": "Scheduled Event",
                "time": "2026-03-08T14:00:00Z",
                "resources": ["arn:aws:events:us-east-1:1:rule/cronslot-report"],
                "detail": inner,
            })
        } else {
            json!({ "cronslot": inner })
        };
        check(&v)?;
    }

    #[test]
    fn scheduler_inputs(v in scheduler_input()) {
        check(&v)?;
    }

    #[test]
    fn rule_events(v in rule_event()) {
        check(&v)?;
    }

    #[test]
    fn mutated_fixtures(v in fixture(), ms in prop::collection::vec(mutation(), 1..4)) {
        check(&apply(v, &ms))?;
    }

    #[test]
    fn character_mutated_fixture_text(
        base in prop::sample::select(&FIXTURES[..]),
        edits in prop::collection::vec(
            (any::<usize>(), prop::option::of(prop::sample::select(TEXT_ALPHABET))),
            1..5,
        ),
    ) {
        let mut chars: Vec<char> = base.chars().collect();
        for (at, c) in edits {
            let i = at % (chars.len() + 1);
            match c {
                Some(c) => chars.insert(i, c),
                None if i < chars.len() => {
                    chars.remove(i);
                }
                None => {}
            }
        }
        let text: String = chars.into_iter().collect();
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            check(&v)?;
        }
    }
}

/// The strategies reach acceptance (both kinds of work), not only errors.
#[test]
fn the_generators_reach_every_outcome() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::new(config(1));
    let (mut slot, mut tick, mut refused) = (0, 0, 0);
    for _ in 0..400 {
        let strategy = prop_oneof![scheduler_input(), rule_event()];
        let v = strategy.new_tree(&mut runner).expect("a payload").current();
        match event::decode(&v).and_then(|e| {
            event::resolve(&e, manifest()).map(|w| match w {
                Work::Slot { .. } => 0,
                Work::Tick { .. } => 1,
                _ => 2,
            })
        }) {
            Ok(0) => slot += 1,
            Ok(1) => tick += 1,
            // Work of a kind this test does not know counts for nothing.
            Ok(_) => {}
            Err(_) => refused += 1,
        }
    }
    assert!(
        slot > 0 && tick > 0 && refused > 0,
        "slot {slot}, tick {tick}, refused {refused}"
    );
}

/// Deep nesting is refused by serde_json's recursion limit before it
/// reaches the decoder, and a deep `detail` is refused at its path.
#[test]
fn deep_and_wide_payloads() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(serde_json::from_str::<Value>(&deep).is_err());
    let mut detail = json!(1);
    for _ in 0..100 {
        detail = json!({ "job": detail });
    }
    let v = json!({
        "source": "aws.events",
        "detail-type": "Scheduled Event",
        "time": "2026-03-08T14:00:00Z",
        "resources": [],
        "detail": detail,
    });
    let e = event::decode(&v).unwrap_err();
    assert_eq!(e.path, "$.detail.job");
    let many: Vec<Value> = (0..100_000).map(|i| json!(format!("arn:x:{i}"))).collect();
    let v = json!({
        "source": "aws.events",
        "detail-type": "Scheduled Event",
        "time": "2026-03-08T14:00:00Z",
        "resources": many,
    });
    let started = Instant::now();
    let e = event::decode(&v).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(e.path, "$.resources");
}
