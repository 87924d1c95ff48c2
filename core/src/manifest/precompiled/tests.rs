//! The precompiled form against the TOML path: round trips, and every
//! value the TOML path refuses refused here too.

use std::time::Duration;

use super::*;
use crate::manifest::parse_manifest;
use crate::manifest::{Action, HttpMethod, Overlap};
use crate::schedule::{DstGap, DstOverlap, DstPolicy};

/// Every kind of value the manifest has, warnings included.
const RICH: &str = r#"[defaults]
timezone = "Europe/Berlin"
trigger = "dedicated"
lease = "20m"
starting_deadline = "1h30m"
catch_up = "all"
max_catch_up = 500
overlap = "allow"
max_concurrency = 4
retry = { max_attempts = 5, backoff = "10s", max_backoff = "2m", past_next_slot = true }
delivery = "at_most_once"
dst_gap = "skip"
dst_overlap = "twice"
skew_margin = "7s"
paused = true
stale_after = "2d"
history = { succeeded = 9, failed = 0 }
timeout = "3m"

[[job]]
name = "night-batch"
schedule = "30  2 * * mon-FRI"
start_at = 2026-01-01T00:00:00.5Z
end_at = "2027-06-30T12:00:00+02:00"
command = ["./batch.sh", "--fast", "ünïcode"]
env = { REGION = "eu", EMPTY = "" }

[[job]]
name = "ping"
schedule = "* * * * *"
trigger = "dedicated"
timezone = "America/New_York"
overlap = "replace"
retry = { max_attempts = 1 }
http = { url = "https://example.com/hook?x=1", method = "put", headers = { "X-Source" = "cronslot", Authorization = "Bearer t" } }

[[job]]
name = "report"
schedule = "0 0 L * *"
timezone = "UTC"
overlap = "forbid"
catch_up = "latest"
paused = false
dst_gap = "shift_always"
"#;

const DESIGN: &str = r#"[defaults]
timezone = "UTC"
lease = "15m"
starting_deadline = "10m"
catch_up = "latest"
max_catch_up = 10
overlap = "forbid"
retry = { max_attempts = 3, backoff = "30s", max_backoff = "10m" }

[[job]]
name = "daily-report"
schedule = "0 9 * * MON-FRI"
timezone = "America/New_York"
trigger = "dedicated"

[[job]]
name = "invoice-run"
schedule = "0 0 L * *"
catch_up = "all"

[[job]]
name = "cleanup"
schedule = "*/5 * * * *"
command = ["./scripts/cleanup.sh", "--fast"]

[[job]]
name = "ping"
schedule = "0 * * * *"
http = { url = "https://example.com/hook", method = "POST" }
"#;

fn manifests() -> Vec<(&'static str, &'static str)> {
    vec![("rich.toml", RICH), ("design.toml", DESIGN)]
}

fn parse(file: &str, text: &str) -> Manifest {
    parse_manifest(text, file).unwrap_or_else(|e| panic!("{file}:\n{e}"))
}

fn rich_json() -> String {
    parse("rich.toml", RICH).to_precompiled("rich.toml")
}

fn problems(json: &str) -> Vec<String> {
    match load_precompiled(json) {
        Ok(m) => panic!("accepted: {m:?}\n{json}"),
        Err(e) => {
            // Display never panics and names the file kind.
            assert!(e.to_string().starts_with("invalid precompiled manifest"));
            e.problems
        }
    }
}

fn assert_problem(json: &str, needle: &str) {
    let found = problems(json);
    assert!(
        found.iter().any(|p| p.contains(needle)),
        "no problem mentions {needle:?}: {found:#?}"
    );
}

#[test]
fn round_trip_gives_the_parsed_manifest_and_its_spec_hashes() {
    for (file, text) in manifests() {
        let parsed = parse(file, text);
        let json = parsed.to_precompiled(file);
        let loaded = load_precompiled(&json).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(loaded, parsed, "{file}");
        assert_eq!(loaded.jobs.len(), parsed.jobs.len());
        for (l, p) in loaded.jobs.iter().zip(&parsed.jobs) {
            assert_eq!(l.spec_hash(), p.spec_hash(), "{file}: {}", p.name.as_str());
            assert_eq!(l.schedule_text, p.schedule_text);
            assert_eq!(l.action, p.action);
        }
        // Writing the loaded manifest again gives the same text.
        assert_eq!(loaded.to_precompiled(file), json, "{file}");
    }
}

/// The zones travel with the file: a program without the tz database
/// (a Worker) builds them from the file's TZif data, not by name.
#[test]
fn zones_are_carried_as_tzif_data_and_used_when_loading() {
    let json = rich_json();
    let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    let zones = doc["zones"].as_object().expect("a zones table");
    let names: Vec<&str> = zones.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["America/New_York", "Europe/Berlin"],
        "UTC needs none"
    );
    let data = base64::decode(zones["America/New_York"].as_str().expect("text")).expect("b64");
    assert_eq!(&data[..4], b"TZif");

    // Proof that loading uses the carried data: give New York Tokyo's
    // rules under New York's name, and the job's offsets are Tokyo's.
    let tokyo = Zone::get("Asia/Tokyo").expect("zone");
    let mut swapped = doc.clone();
    swapped["zones"]["America/New_York"] = base64::encode(tokyo.tzif().expect("data")).into();
    let loaded = load_precompiled(&swapped.to_string()).expect("loads");
    let ping = loaded.job("ping").expect("job");
    assert_eq!(ping.schedule.zone().name(), "America/New_York");
    assert_eq!(ping.schedule.zone().offset_at(1_780_000_000), 9 * 3600);

    for (bad, expected) in [
        (
            "not base64!",
            "zones.\"America/New_York\": not base64 TZif data",
        ),
        (
            "VFppZg==",
            "zones.\"America/New_York\": \"America/New_York\" is not an IANA time zone; its TZif data does not parse",
        ),
    ] {
        let mut broken = doc.clone();
        broken["zones"]["America/New_York"] = bad.into();
        let e = load_precompiled(&broken.to_string()).expect_err(bad);
        assert!(
            e.problems.iter().any(|p| p.starts_with(expected)),
            "{bad}: {e}"
        );
    }
}

/// Jobs in one zone share the zone built from the file's data, and a
/// zone looked up by name (UTC, or any zone of a file without a zones
/// table) is looked up once too.
#[test]
fn jobs_in_one_zone_share_one_loaded_zone() {
    let job = |name: &str, zone: &str| {
        format!("[[job]]\nname = \"{name}\"\nschedule = \"0 9 * * *\"\ntimezone = \"{zone}\"\n\n")
    };
    let text = [
        job("a", "America/New_York"),
        job("b", "UTC"),
        job("c", "America/New_York"),
        job("d", "UTC"),
    ]
    .concat();
    let json = parse("zones.toml", &text).to_precompiled("zones.toml");
    let mut without_zones: serde_json::Value = serde_json::from_str(&json).expect("json");
    let doc = without_zones.as_object_mut().expect("an object");
    assert!(doc.remove("zones").is_some());
    let without_zones = without_zones.to_string();
    for json in [json, without_zones] {
        let m = load_precompiled(&json).expect("loads");
        let data = |i: usize| m.jobs[i].schedule.zone().tzif().map(<[u8]>::as_ptr);
        assert!(data(0).is_some());
        assert_eq!(data(0), data(2), "one New York for both jobs");
        let name = |i: usize| m.jobs[i].schedule.zone().name().as_ptr();
        assert_eq!(name(1), name(3), "one UTC for both jobs");
        assert_eq!(
            m.jobs[2].schedule.zone().offset_at(1_780_000_000),
            -4 * 3600
        );
    }
}

#[test]
fn rich_manifest_keeps_every_value() {
    let parsed = parse("rich.toml", RICH);
    assert!(!parsed.warnings.is_empty(), "RICH is meant to warn");
    let loaded = load_precompiled(&rich_json()).expect("loads");
    let batch = loaded.job("night-batch").expect("job");
    assert_eq!(batch.schedule_text, "30  2 * * mon-FRI");
    assert_eq!(
        batch.start_at.map(|t| t.subsec_nanosecond()),
        Some(500_000_000)
    );
    assert_eq!(batch.overlap, Overlap::Allow { max_concurrency: 4 });
    assert_eq!(
        batch.dst_policy(),
        DstPolicy {
            gap: DstGap::Skip,
            overlap: DstOverlap::Twice,
        }
    );
    assert_eq!(loaded.defaults, parsed.defaults);
    assert_eq!(loaded.warnings, parsed.warnings);
    let ping = loaded.job("ping").expect("job");
    assert_eq!(ping.schedule.zone().name(), "America/New_York");
    assert!(matches!(
        &ping.action,
        Action::Http { method: HttpMethod::Put, headers, .. } if headers.len() == 2
    ));
    // Pinned: the spec hash of a job does not depend on the form it was
    // loaded from (it is stored in every job's state record).
    let report = loaded.job("report").expect("job");
    assert_eq!(report.dst_policy().gap, DstGap::ShiftAlways);
    let reparsed = parse("rich.toml", RICH);
    assert_eq!(
        report.spec_hash(),
        reparsed.job("report").expect("job").spec_hash()
    );
}

#[test]
fn not_a_precompiled_manifest() {
    assert_problem(RICH, "not a precompiled cronslot manifest");
    assert_problem("", "not a precompiled cronslot manifest");
    assert_problem("[1, 2]", "not a precompiled cronslot manifest");
    assert_problem("{}", "\"format\" is missing");
    assert_problem(r#"{"format": "other"}"#, "\"format\" is \"other\"");
    let json = rich_json().replace("\"version\":2", "\"version\":99");
    assert_problem(&json, "version 99, and this cronslot reads versions 1 to 2");
}

#[test]
fn damaged_json_is_refused_with_its_position() {
    let json = rich_json();
    assert_problem(
        &json[..json.len() / 2],
        "is not valid JSON: EOF while parsing",
    );
    let renamed = json.replacen("\"lease\"", "\"leese\"", 1);
    assert_problem(&renamed, "unknown field `leese`");
    let typed = json.replacen("\"max_catch_up\":500", "\"max_catch_up\":\"500\"", 1);
    assert_problem(&typed, "line ");
    // Every prefix is refused, none panics.
    for end in (0..json.len()).filter(|i| json.is_char_boundary(*i)) {
        assert!(load_precompiled(&json[..end]).is_err());
    }
}

#[test]
fn values_the_toml_path_refuses_are_refused() {
    let json = rich_json();
    let cases = [
        (
            "\"30  2 * * mon-FRI\"",
            "\"61 2 * * *\"",
            "invalid schedule \"61 2 * * *\"",
        ),
        ("\"30  2 * * mon-FRI\"", "\"0 0 31 2 *\"", "never fires"),
        (
            "\"name\":\"ping\"",
            "\"name\":\"Ping\"",
            "invalid job name \"Ping\"",
        ),
        (
            "\"name\":\"ping\"",
            "\"name\":\"night-batch\"",
            "duplicate job name",
        ),
        (
            "\"America/New_York\"",
            "\"Mars/Olympus\"",
            "unknown time zone",
        ),
        (
            "\"America/New_York\"",
            "\"america/new_york\"",
            "canonical name",
        ),
        (
            "\"lease\":\"20m\"",
            "\"lease\":\"30s\"",
            "shorter than the minimum",
        ),
        ("\"lease\":\"20m\"", "\"lease\":\"20 minutes\"", "lease:"),
        (
            "\"max_concurrency\":4",
            "\"max_concurrency\":0",
            "max_concurrency must be at least 1",
        ),
        (
            "\"max_concurrency\":4",
            "\"max_concurrency\":101",
            "max_concurrency 101 is above the limit of 100",
        ),
        (
            "\"max_attempts\":5",
            "\"max_attempts\":0",
            "max_attempts must be at least 1",
        ),
        (
            "\"backoff\":\"10s\"",
            "\"backoff\":\"1h\"",
            "longer than retry.max_backoff",
        ),
        (
            "\"skew_margin\":\"7s\"",
            "\"skew_margin\":\"1h\"",
            "shorter than the lease",
        ),
        ("\"succeeded\":9", "\"succeeded\":101", "above the limit"),
        (
            "\"max_catch_up\":500",
            "\"max_catch_up\":0",
            "catches up nothing",
        ),
        (
            "\"stale_after\":\"2d\"",
            "\"stale_after\":\"0s\"",
            "stale_after must be longer",
        ),
        (
            "\"timeout\":\"3m\"",
            "\"timeout\":\"3h\"",
            "longer than the lease",
        ),
        (
            "\"method\":\"PUT\"",
            "\"method\":\"FETCH\"",
            "unknown HTTP method \"FETCH\"",
        ),
        (
            "https://example.com/hook?x=1",
            "ftp://example.com",
            "is not an http:// or https:// URL",
        ),
        ("\"X-Source\"", "\"Idempotency-Key\"", "set by cronslot"),
        ("\"REGION\"", "\"CRONSLOT_REGION\"", "is reserved"),
        ("\"./batch.sh\"", "\"\"", "the program to run, is empty"),
        (
            "2027-06-30T10:00:00Z",
            "2025-01-01T00:00:00Z",
            "is not before end_at",
        ),
        ("\"Europe/Berlin\"", "\"EST\"", "unknown time zone"),
    ];
    for (from, to, needle) in cases {
        assert!(json.contains(from), "the fixture has no {from}:\n{json}");
        assert_problem(&json.replacen(from, to, 1), needle);
    }
    let no_jobs = {
        let mut doc: serde_json::Value = serde_json::from_str(&json).expect("json");
        doc["jobs"] = serde_json::json!([]);
        doc.to_string()
    };
    assert_problem(&no_jobs, "there is no job");
}

#[test]
fn every_problem_is_reported_with_its_job() {
    let json = rich_json()
        .replacen("\"30  2 * * mon-FRI\"", "\"61 2 * * *\"", 1)
        .replacen("\"America/New_York\"", "\"Nowhere\"", 1);
    let found = problems(&json);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].starts_with("job \"night-batch\" (jobs[0]): invalid schedule"));
    assert!(found[1].starts_with("job \"ping\" (jobs[1]): unknown time zone"));
}

/// The manifest of `precompiled-v1.json`, written by cronslot 0.1's
/// version 1 writer (every policy on every job, pretty-printed).
const V1_SOURCE: &str = r#"[defaults]
timeout = "2m"
stale_after = "3h"

[[job]]
name = "daily-report"
schedule = "0 9 * * MON-FRI"
timezone = "America/New_York"
command = ["./report.sh"]
overlap = "allow"
max_concurrency = 2

[[job]]
name = "ping"
schedule = "*/5 * * * *"
http = { url = "https://example.com/hook" }
"#;

#[test]
fn a_version_1_file_still_loads_as_the_same_manifest() {
    let v1 = include_str!("../testdata/precompiled-v1.json");
    let loaded = load_precompiled(v1).expect("version 1 loads");
    let parsed = parse("v1.toml", V1_SOURCE);
    assert_eq!(loaded, parsed);
    for (l, p) in loaded.jobs.iter().zip(&parsed.jobs) {
        assert_eq!(l.spec_hash(), p.spec_hash());
    }
    // And it is written again as version 2.
    let v2 = loaded.to_precompiled("v1.toml");
    assert!(v2.contains("\"version\":2"), "{v2}");
    assert_eq!(load_precompiled(&v2).expect("v2 loads"), parsed);
}

/// A job that keeps every default is its name, schedule and action;
/// what differs is written, and only that.
#[test]
fn version_2_writes_only_what_a_job_changes() {
    let m = parse("v1.toml", V1_SOURCE);
    let json = m.to_precompiled("v1.toml");
    let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(
        doc["jobs"][1],
        serde_json::json!({
            "name": "ping",
            "schedule": "*/5 * * * *",
            "action": {"http": {"url": "https://example.com/hook", "method": "POST"}},
        })
    );
    assert_eq!(
        doc["jobs"][0]["policy"],
        serde_json::json!({
            "timezone": "America/New_York",
            "overlap": "allow",
            "max_concurrency": 2,
        })
    );
    assert_eq!(
        doc["jobs"][0]["action"],
        serde_json::json!({"command": {"argv": ["./report.sh"]}})
    );
    assert!(!json.contains('\n'), "one line");
}

/// Values no TOML file writes, but a program may build: a job without
/// the defaults' `stale_after` (written `null`), another concurrency
/// under the same overlap mode, no default timeout.
#[test]
fn every_difference_from_the_defaults_round_trips() {
    let mut m = parse("v1.toml", V1_SOURCE);
    m.jobs[0].stale_after = None;
    m.jobs[0].overlap = Overlap::Allow { max_concurrency: 7 };
    m.defaults.overlap = Overlap::Allow { max_concurrency: 2 };
    m.jobs[1].stale_after = Some(Duration::from_secs(60));
    let json = m.to_precompiled("v1.toml");
    let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(
        doc["jobs"][0]["policy"]["stale_after"],
        serde_json::Value::Null
    );
    assert!(doc["jobs"][0]["policy"].get("stale_after").is_some());
    assert_eq!(load_precompiled(&json).expect("loads"), m);

    m.defaults.timeout = None;
    let json = m.to_precompiled("v1.toml");
    let loaded = load_precompiled(&json).expect("loads");
    assert_eq!(loaded, m);
    // A timeout left out, with none in [defaults], is a problem.
    let mut doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    doc["jobs"][0]["action"]["command"]
        .as_object_mut()
        .expect("command")
        .remove("timeout");
    assert_problem(
        &doc.to_string(),
        "timeout is missing, and [defaults] has none",
    );

    // [defaults] writes every policy: one left out is a problem.
    let mut doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    doc["defaults"]["policy"]
        .as_object_mut()
        .expect("policy")
        .remove("lease");
    assert_problem(&doc.to_string(), "[defaults]: lease is missing");
}

/// The rules are written once (`rules.rs`): the same mistake, made in the
/// TOML manifest or in its precompiled form, is the same sentence, and is
/// reported once, where it is written. A job that inherits a bad value
/// from `[defaults]` is not blamed for it, and a value refused on its own
/// keeps the checks across keys that involve it quiet.
#[test]
fn the_precompiled_form_says_what_the_toml_path_says() {
    let json = rich_json();
    let cases: [&[(&str, &str, &str, &str)]; 17] = [
        // Out of range under any overlap; refused, it is not also told it
        // needs overlap = "allow".
        &[
            (
                "overlap = \"allow\"",
                "overlap = \"forbid\"",
                "\"overlap\":\"allow\"",
                "\"overlap\":\"forbid\"",
            ),
            (
                "max_concurrency = 4",
                "max_concurrency = 0",
                "\"max_concurrency\":4",
                "\"max_concurrency\":0",
            ),
        ],
        &[(
            "\"30  2 * * mon-FRI\"",
            "\"61 2 * * *\"",
            "\"30  2 * * mon-FRI\"",
            "\"61 2 * * *\"",
        )],
        &[(
            "\"30  2 * * mon-FRI\"",
            "\"0 0 31 2 *\"",
            "\"30  2 * * mon-FRI\"",
            "\"0 0 31 2 *\"",
        )],
        &[(
            "timezone = \"America/New_York\"",
            "timezone = \"America/NewYork\"",
            "\"timezone\":\"America/New_York\"",
            "\"timezone\":\"America/NewYork\"",
        )],
        &[(
            "lease = \"20m\"",
            "lease = \"30s\"",
            "\"lease\":\"20m\"",
            "\"lease\":\"30s\"",
        )],
        // The short lease is refused; skew_margin against it stays quiet.
        &[
            (
                "lease = \"20m\"",
                "lease = \"30s\"",
                "\"lease\":\"20m\"",
                "\"lease\":\"30s\"",
            ),
            (
                "skew_margin = \"7s\"",
                "skew_margin = \"40s\"",
                "\"skew_margin\":\"7s\"",
                "\"skew_margin\":\"40s\"",
            ),
        ],
        &[(
            "max_catch_up = 500",
            "max_catch_up = 0",
            "\"max_catch_up\":500",
            "\"max_catch_up\":0",
        )],
        &[(
            "max_concurrency = 4",
            "max_concurrency = 0",
            "\"max_concurrency\":4",
            "\"max_concurrency\":0",
        )],
        &[(
            "overlap = \"allow\"",
            "overlap = \"replace\"",
            "\"overlap\":\"allow\"",
            "\"overlap\":\"replace\"",
        )],
        &[(
            "backoff = \"10s\"",
            "backoff = \"1h\"",
            "\"backoff\":\"10s\"",
            "\"backoff\":\"1h\"",
        )],
        &[(
            "skew_margin = \"7s\"",
            "skew_margin = \"1h\"",
            "\"skew_margin\":\"7s\"",
            "\"skew_margin\":\"1h\"",
        )],
        &[(
            "stale_after = \"2d\"",
            "stale_after = \"0s\"",
            "\"stale_after\":\"2d\"",
            "\"stale_after\":\"0s\"",
        )],
        // Both jobs with an action inherit this timeout: [defaults] alone
        // is blamed.
        &[(
            "timeout = \"3m\"",
            "timeout = \"3h\"",
            "\"timeout\":\"3m\"",
            "\"timeout\":\"3h\"",
        )],
        &[(
            "succeeded = 9",
            "succeeded = 101",
            "\"succeeded\":9",
            "\"succeeded\":101",
        )],
        &[(
            "max_attempts = 5",
            "max_attempts = 0",
            "\"max_attempts\":5",
            "\"max_attempts\":0",
        )],
        &[(
            "method = \"put\"",
            "method = \"fetch\"",
            "\"method\":\"PUT\"",
            "\"method\":\"fetch\"",
        )],
        &[(
            "\"./batch.sh\", \"--fast\"",
            "\"\", \"a\\u0000b\"",
            "\"./batch.sh\",\"--fast\"",
            "\"\",\"a\\u0000b\"",
        )],
    ];
    for case in cases {
        let (mut toml, mut doc) = (RICH.to_string(), json.clone());
        for (toml_from, toml_to, json_from, json_to) in case {
            assert!(toml.contains(toml_from), "RICH has no {toml_from}");
            assert!(doc.contains(json_from), "the fixture has no {json_from}");
            toml = toml.replacen(toml_from, toml_to, 1);
            doc = doc.replacen(json_from, json_to, 1);
        }
        let said: Vec<String> = parse_manifest(&toml, "rich.toml")
            .expect_err("refused")
            .errors
            .into_iter()
            .map(|e| e.message)
            .collect();
        // The precompiled form says where as "[defaults]: " or
        // "job \"x\" (jobs[i]): ".
        let found: Vec<String> = problems(&doc)
            .into_iter()
            .map(|p| {
                let message = p
                    .strip_prefix("[defaults]: ")
                    .or_else(|| p.split_once("]): ").map(|(_, m)| m));
                message.unwrap_or(&p).to_string()
            })
            .collect();
        assert_eq!(found, said, "{case:?}");
    }
}

/// A dynamic job round trips with its policies, a manifest of dynamic jobs
/// alone is one, and its schedules may name the zones the file carries
/// (with the carried rules, as a Worker without a tz database has them).
#[test]
fn dynamic_jobs_round_trip_with_the_zones_their_schedules_may_name() {
    let text = r#"[defaults]
timezone = "Europe/Berlin"
lease = "5m"

[[job]]
name = "tenant-invoice"
dynamic = true
http = { url = "https://example.com/invoice", method = "post" }
timeout = "1m"
retry = { max_attempts = 4, backoff = "30s" }
overlap = "allow"
max_concurrency = 2
end_at = 2030-01-01T00:00:00Z
"#;
    let mut parsed = parse("dyn.toml", text);
    let tokyo = Zone::get("Asia/Tokyo").expect("zone");
    parsed.templates[0].zones = vec![tokyo.clone()];
    let json = parsed.to_precompiled("dyn.toml");
    let loaded = load_precompiled(&json).unwrap_or_else(|e| panic!("{e}\n{json}"));
    assert!(loaded.jobs.is_empty());
    let (mut want, got) = (parsed.templates[0].clone(), loaded.templates[0].clone());
    // The file carries Tokyo, and Berlin (its defaults' zone).
    let carried: Vec<&str> = got.zones.iter().map(Zone::name).collect();
    assert_eq!(carried, ["Asia/Tokyo", "Europe/Berlin"]);
    want.zones = got.zones.clone();
    assert_eq!(got, want);

    // A schedule in a carried zone plans with the carried rules: give
    // Tokyo's name New York's data, and the offsets are New York's.
    let new_york = Zone::get("America/New_York").expect("zone");
    let mut doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    doc["zones"]["Asia/Tokyo"] = base64::encode(new_york.tzif().expect("data")).into();
    let swapped = load_precompiled(&doc.to_string()).expect("loads");
    let key = crate::schedules::ScheduleKey::new("t1").expect("key");
    let spec = crate::schedules::ScheduleSpec::from_json(
        r#"{"cron": "0 9 * * *", "timezone": "Asia/Tokyo"}"#,
    )
    .expect("spec");
    let job = swapped.templates[0]
        .for_schedule(&key, &spec)
        .expect("plans");
    assert_eq!(job.schedule.zone().offset_at(1_780_000_000), -4 * 3600);

    // Two dynamic jobs of one name are refused like two jobs.
    let mut twice = doc.clone();
    let first = twice["templates"][0].clone();
    twice["templates"]
        .as_array_mut()
        .expect("templates")
        .push(first);
    assert_problem(&twice.to_string(), "duplicate job name \"tenant-invoice\"");
}
