//! Fuzzing with proptest (stable toolchain, runs in `cargo test`) and a
//! table of bad inputs (issue 7) for the stored-record decoder
//! (`decode_state`) and the precompiled manifest loader
//! (`load_precompiled`). The cron parser, the TOML manifest and the admin
//! routes have their own properties (`core/tests/it/parse_props.rs`,
//! `core/tests/it/manifest.rs`, `runtime/tests/it/admin.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cronslot_core::coord::Operator;
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, MemoryStore, Trigger, decode_state, encode_state,
};
use cronslot_core::manifest::{load_precompiled, parse_manifest};
use cronslot_tests::sim::{MANIFEST, specs, t0};
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;

/// A realistic record: a job that ran, failed, retried and died a little.
fn valid_record() -> String {
    let store = MemoryStore::new();
    let c = CasCoordinator::new(store, 5);
    let spec = &specs()[0];
    let at = |s: i64| t0().checked_add(SignedDuration::from_secs(s)).unwrap();
    block_on(c.claim(spec, t0(), Trigger::Tick, "w")).unwrap();
    for m in 1..6 {
        let now: Timestamp = at(m * 60);
        if let Ok(Claim::Claimed(l)) = block_on(c.claim(spec, now, Trigger::Tick, "w")) {
            if m % 2 == 0 {
                block_on(c.fail(
                    spec,
                    l.fence,
                    "boom \u{1F4A5} \"quoted\"",
                    m == 4,
                    at(m * 60 + 5),
                ))
                .unwrap();
            } else {
                block_on(c.complete(spec, l.fence, Some("ok"), at(m * 60 + 5))).unwrap();
            }
        }
    }
    let state = block_on(c.status(spec, at(400))).unwrap();
    encode_state(&state)
}

fn valid_precompiled() -> String {
    parse_manifest(MANIFEST, "sim.toml")
        .unwrap()
        .to_precompiled("sim.toml")
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, byte: u8 },
    Delete { at: usize, len: usize },
    Insert { at: usize, text: String },
    Truncate { at: usize },
    Duplicate { at: usize, len: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Flip { at, byte }),
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (
            any::<usize>(),
            prop_oneof![
                Just("null".to_string()),
                Just("-1".to_string()),
                Just("18446744073709551616".to_string()),
                Just("\"\"".to_string()),
                Just("{}".to_string()),
                Just("[]".to_string()),
                Just("\"9999-99-99T99:99:99Z\"".to_string()),
                Just("1e999".to_string()),
                Just("\\u0000".to_string()),
                ".{0,12}",
            ]
        )
            .prop_map(|(at, text)| Mutation::Insert { at, text }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), 1usize..200).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
    ]
}

fn mutate(text: &str, ms: &[Mutation]) -> String {
    let mut b = text.as_bytes().to_vec();
    for m in ms {
        let n = b.len().max(1);
        match m {
            Mutation::Flip { at, byte } => {
                if !b.is_empty() {
                    b[at % n] = *byte;
                }
            }
            Mutation::Delete { at, len } => {
                let s = at % n;
                let e = (s + len).min(b.len());
                if s < e {
                    b.drain(s..e);
                }
            }
            Mutation::Insert { at, text } => {
                let s = (at % n).min(b.len());
                b.splice(s..s, text.bytes());
            }
            Mutation::Truncate { at } => b.truncate(at % n),
            Mutation::Duplicate { at, len } => {
                let s = (at % n).min(b.len());
                let e = (s + len).min(b.len());
                let piece = b[s..e].to_vec();
                b.splice(e..e, piece);
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// A decoded record re-encodes to a record that decodes to itself.
fn check_decode(text: &str) {
    let job = "forbid-latest";
    if let Ok(state) = decode_state(job, text) {
        let again = encode_state(&state);
        assert_eq!(decode_state(job, &again).unwrap(), state);
    }
}

fn check_precompiled(text: &str) {
    if let Ok(m) = load_precompiled(text) {
        // What loads is a usable manifest: it round-trips.
        let again = m.to_precompiled("again");
        load_precompiled(&again).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn decode_state_never_panics_on_arbitrary_text(text in ".{0,600}") {
        check_decode(&text);
    }

    #[test]
    fn decode_state_never_panics_on_mutated_records(ms in prop::collection::vec(mutation(), 1..6)) {
        check_decode(&mutate(&valid_record(), &ms));
    }

    #[test]
    fn load_precompiled_never_panics_on_arbitrary_text(text in "\\{.{0,600}") {
        check_precompiled(&text);
    }

    #[test]
    fn load_precompiled_never_panics_on_mutated_manifests(ms in prop::collection::vec(mutation(), 1..6)) {
        check_precompiled(&mutate(&valid_precompiled(), &ms));
    }
}

/// Bad inputs and the error each gets (the table in docs/reliability.md).
#[test]
fn bad_records_get_clear_errors() {
    let valid = valid_record();
    let other_job = valid.replace("\"job\":\"forbid-latest\"", "\"job\":\"other\"");
    let newer = valid.replace("\"schema\":1", "\"schema\":2");
    let zero = valid.replace("\"schema\":1", "\"schema\":0");
    let cursor_back = {
        let mut v: serde_json::Value = serde_json::from_str(&valid).unwrap();
        v["cursor"] = serde_json::Value::String("2000-01-01T00:00:00Z".into());
        v.to_string()
    };
    let bad_fence = valid.replace("\"fence\":", "\"fence\":-");
    let huge_fence = {
        let mut v: serde_json::Value = serde_json::from_str(&valid).unwrap();
        v["fence"] = serde_json::json!(1e300);
        v.to_string()
    };
    let bad_time = {
        let mut v: serde_json::Value = serde_json::from_str(&valid).unwrap();
        v["cursor"] = serde_json::Value::String("yesterday".into());
        v.to_string()
    };
    let table: Vec<(&str, String, &str)> = vec![
        ("empty", String::new(), "not JSON"),
        (
            "truncated",
            valid[..valid.len() / 2].to_string(),
            "not JSON",
        ),
        ("not an object", "[1,2,3]".into(), "no schema version"),
        (
            "no schema",
            "{\"job\":\"forbid-latest\"}".into(),
            "no schema version",
        ),
        ("schema from a newer cronslot", newer, "newer cronslot"),
        ("schema 0", zero, "schema 0 does not exist"),
        (
            "another job's record",
            other_job,
            "belongs to job \"other\"",
        ),
        (
            "cursor before creation",
            cursor_back,
            "cursor is before the job's creation",
        ),
        ("negative fence", bad_fence, "malformed record"),
        ("fence out of range", huge_fence, "malformed record"),
        ("unparseable instant", bad_time, "malformed record"),
    ];
    for (what, input, expected) in &table {
        let err = decode_state("forbid-latest", input)
            .expect_err(what)
            .to_string();
        eprintln!("| record: {what} | {err} |");
        assert!(err.contains(expected), "{what}: {err}");
    }
}

#[test]
fn bad_precompiled_manifests_get_clear_errors() {
    let valid = valid_precompiled();
    let v: serde_json::Value = serde_json::from_str(&valid).unwrap();
    let with = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = v.clone();
        f(&mut v);
        v.to_string()
    };
    let table: Vec<(&str, String, &str)> = vec![
        (
            "TOML instead of JSON",
            MANIFEST.to_string(),
            "not a precompiled cronslot manifest",
        ),
        ("broken JSON", "{\"format\":".into(), "not valid JSON"),
        (
            "wrong format",
            with(&|v| v["format"] = "something-else".into()),
            "\"format\" is \"something-else\"",
        ),
        (
            "no format",
            with(&|v| {
                v.as_object_mut().unwrap().remove("format");
            }),
            "\"format\" is missing",
        ),
        (
            "newer version",
            with(&|v| v["version"] = 99.into()),
            "has version 99",
        ),
        (
            "no jobs",
            with(&|v| v["jobs"] = serde_json::json!([])),
            "there is no job",
        ),
        (
            "duplicate job",
            with(&|v| {
                let first = v["jobs"][0].clone();
                v["jobs"].as_array_mut().unwrap().push(first);
            }),
            "duplicate job name",
        ),
        (
            "bad schedule",
            with(&|v| v["jobs"][0]["schedule"] = "61 * * * *".into()),
            "61",
        ),
        (
            "unknown job field",
            with(&|v| v["jobs"][0]["timezone"] = "UTC".into()),
            "unknown field `timezone`",
        ),
        (
            "jobs not a list",
            with(&|v| v["jobs"] = 3.into()),
            "invalid type",
        ),
    ];
    for (what, input, expected) in &table {
        let err = load_precompiled(input).expect_err(what).to_string();
        eprintln!("| precompiled: {what} | {} |", err.replace('\n', " "));
        assert!(err.contains(expected), "{what}: {err}");
    }
}
