//! The `cronslot.toml` manifest: defaults, overrides, every error with its
//! exact position, warnings, and no panics on any input.

use std::collections::BTreeMap;
use std::time::Duration;

use cronslot_core::manifest::{
    Action, CatchUp, Defaults, Delivery, Diagnostic, HistoryLimits, HttpMethod, JobName,
    JobNameErrorKind, JobSpec, Manifest, Overlap, RetryPolicy, Severity, Trigger, format_duration,
    parse_duration, parse_manifest, spec_hash, validate_job_name,
};
use cronslot_core::{DstGap, DstOverlap, DstPolicy};
use jiff::Timestamp;
use proptest::prelude::*;

const FILE: &str = "cronslot.toml";

/// The example of docs/design.md §5, verbatim.
const DESIGN_EXAMPLE: &str = r#"[defaults]
timezone = "UTC"
lease = "15m"                 # max run time; must cover the platform timeout
starting_deadline = "10m"     # a slot older than this when planned is missed
catch_up = "latest"           # latest | all | none
max_catch_up = 10
overlap = "forbid"            # forbid | allow (max_concurrency) | replace
retry = { max_attempts = 3, backoff = "30s", max_backoff = "10m" }

[[job]]
name = "daily-report"
schedule = "0 9 * * MON-FRI"
timezone = "America/New_York"
trigger = "dedicated"         # tick (default) | dedicated

[[job]]
name = "invoice-run"
schedule = "0 0 L * *"
catch_up = "all"

[[job]]                       # jobs the local runner (and the adapters) can run without Rust code
name = "cleanup"
schedule = "*/5 * * * *"
command = ["./scripts/cleanup.sh", "--fast"]

[[job]]
name = "ping"
schedule = "0 * * * *"
http = { url = "https://example.com/hook", method = "POST" }
"#;

/// A copy of `examples/cronslot.toml`, a seed for the mutation test (the
/// example itself is tested by `cronslot-tests`, `examples::`).
const EXAMPLE_FILE: &str = include_str!("../fixtures/seeds/examples.toml");

fn parse(text: &str) -> Manifest {
    match parse_manifest(text, FILE) {
        Ok(m) => m,
        Err(e) => panic!("manifest refused:\n{e}\n--- text:\n{text}"),
    }
}

fn errors(text: &str) -> Vec<Diagnostic> {
    match parse_manifest(text, FILE) {
        Ok(_) => panic!("manifest accepted:\n{text}"),
        Err(e) => e.errors,
    }
}

/// Exactly one error, at `line:column`, whose message contains `needle`.
#[track_caller]
fn one_error(text: &str, line: usize, column: usize, needle: &str) -> Diagnostic {
    let errs = errors(text);
    assert_eq!(errs.len(), 1, "expected one error, got:\n{}", show(&errs));
    let e = errs.into_iter().next().unwrap();
    assert_at(&e, line, column, needle);
    e
}

#[track_caller]
fn assert_at(d: &Diagnostic, line: usize, column: usize, needle: &str) {
    assert_eq!(
        (d.line, d.column),
        (line, column),
        "position of: {}",
        d.message
    );
    assert!(
        d.message.contains(needle),
        "{:?} does not contain {needle:?}",
        d.message
    );
}

fn show(ds: &[Diagnostic]) -> String {
    ds.iter().map(|d| format!("{d}\n")).collect()
}

fn job(body: &str) -> String {
    format!("[[job]]\nname = \"j\"\nschedule = \"0 9 * * *\"\n{body}")
}

fn only_job(text: &str) -> JobSpec {
    let m = parse(text);
    assert_eq!(m.jobs.len(), 1);
    m.jobs.into_iter().next().unwrap()
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

const fn mins(n: u64) -> Duration {
    Duration::from_secs(n * 60)
}

// ---------------------------------------------------------------- positive

#[test]
fn design_example_parses_with_documented_defaults_and_overrides() {
    let m = parse(DESIGN_EXAMPLE);
    assert!(m.warnings.is_empty(), "{}", show(&m.warnings));
    assert_eq!(m.defaults, Defaults::default());
    let names: Vec<&str> = m.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["daily-report", "invoice-run", "cleanup", "ping"]);

    let daily = &m.jobs[0];
    assert_eq!(daily.schedule_text, "0 9 * * MON-FRI");
    assert_eq!(daily.timezone, "America/New_York");
    assert_eq!(daily.schedule.zone().name(), "America/New_York");
    assert_eq!(daily.trigger, Trigger::Dedicated);
    assert_eq!(daily.lease, mins(15));
    assert_eq!(daily.starting_deadline, mins(10));
    assert_eq!(daily.catch_up, CatchUp::Latest);
    assert_eq!(daily.max_catch_up, 10);
    assert_eq!(daily.overlap, Overlap::Forbid);
    assert_eq!(
        daily.retry,
        RetryPolicy {
            max_attempts: 3,
            backoff: Duration::from_secs(30),
            max_backoff: mins(10),
            past_next_slot: false,
        }
    );
    assert_eq!(daily.delivery, Delivery::AtLeastOnce);
    assert_eq!(
        daily.dst_policy(),
        DstPolicy {
            gap: DstGap::Shift,
            overlap: DstOverlap::Once
        }
    );
    assert_eq!(daily.skew_margin, Duration::from_secs(5));
    assert!(!daily.paused);
    assert_eq!(
        (daily.start_at, daily.end_at, daily.stale_after),
        (None, None, None)
    );
    assert_eq!(
        daily.history,
        HistoryLimits {
            succeeded: 3,
            failed: 1
        }
    );
    assert_eq!(daily.action, Action::Function);
    // 09:00 New York on a weekday, as 13:00 or 14:00 UTC.
    let next = daily.schedule.next_after(ts("2026-03-06T00:00:00Z"));
    assert_eq!(next, Some(ts("2026-03-06T14:00:00Z")));

    let invoice = &m.jobs[1];
    assert_eq!(invoice.catch_up, CatchUp::All);
    assert_eq!(invoice.trigger, Trigger::Tick);
    assert_eq!(invoice.timezone, "UTC");

    assert_eq!(
        m.jobs[2].action,
        Action::Command {
            argv: vec!["./scripts/cleanup.sh".into(), "--fast".into()],
            timeout: mins(15),
            env: BTreeMap::new(),
        }
    );
    assert_eq!(
        m.jobs[3].action,
        Action::Http {
            url: "https://example.com/hook".into(),
            method: HttpMethod::Post,
            headers: BTreeMap::new(),
            timeout: mins(15),
        }
    );
    assert!(m.job("ping").is_some() && m.job("nope").is_none());
}

#[test]
fn a_job_with_only_name_and_schedule_gets_the_builtin_defaults() {
    let m = parse("[[job]]\nname = \"a\"\nschedule = \"@daily\"\n");
    assert_eq!(m.defaults, Defaults::default());
    let j = &m.jobs[0];
    let d = Defaults::default();
    assert_eq!(j.timezone, "UTC");
    assert_eq!(j.trigger, d.trigger);
    assert_eq!(j.lease, mins(15));
    assert_eq!(j.starting_deadline, mins(10));
    assert_eq!((j.catch_up, j.max_catch_up), (CatchUp::Latest, 10));
    assert_eq!(j.overlap, Overlap::Forbid);
    assert_eq!(j.retry, RetryPolicy::default());
    assert_eq!(j.delivery, Delivery::AtLeastOnce);
    assert_eq!(j.dst_policy(), DstPolicy::default());
    assert_eq!(j.skew_margin, Duration::from_secs(5));
    assert_eq!(j.history, HistoryLimits::default());
    assert_eq!(j.action, Action::Function);
}

#[test]
fn every_policy_value_round_trips() {
    for (text, value) in [("tick", Trigger::Tick), ("dedicated", Trigger::Dedicated)] {
        let j = only_job(&job(&format!("trigger = \"{text}\"\n")));
        assert_eq!(j.trigger, value);
        assert_eq!(j.trigger.to_string(), text);
    }
    for (text, value) in [
        ("latest", CatchUp::Latest),
        ("all", CatchUp::All),
        ("none", CatchUp::None),
    ] {
        let j = only_job(&job(&format!("catch_up = \"{text}\"\n")));
        assert_eq!(j.catch_up, value);
        assert_eq!(j.catch_up.as_str(), text);
    }
    for (text, value) in [
        ("forbid", Overlap::Forbid),
        (
            "allow",
            Overlap::Allow {
                max_concurrency: 10,
            },
        ),
        ("replace", Overlap::Replace),
    ] {
        let j = only_job(&job(&format!("overlap = \"{text}\"\n")));
        assert_eq!(j.overlap, value);
        assert_eq!(j.overlap.as_str(), text);
    }
    let j = only_job(&job("overlap = \"allow\"\nmax_concurrency = 3\n"));
    assert_eq!(j.overlap, Overlap::Allow { max_concurrency: 3 });
    for (text, value) in [
        ("at_least_once", Delivery::AtLeastOnce),
        ("at_most_once", Delivery::AtMostOnce),
    ] {
        let j = only_job(&job(&format!("delivery = \"{text}\"\n")));
        assert_eq!(j.delivery, value);
        assert_eq!(j.delivery.to_string(), text);
    }
    for (gap_text, gap) in [
        ("shift", DstGap::Shift),
        ("skip", DstGap::Skip),
        ("shift_always", DstGap::ShiftAlways),
    ] {
        for (ov_text, overlap) in [("once", DstOverlap::Once), ("twice", DstOverlap::Twice)] {
            let j = only_job(&job(&format!(
                "dst_gap = \"{gap_text}\"\ndst_overlap = \"{ov_text}\"\n"
            )));
            assert_eq!(j.dst_policy(), DstPolicy { gap, overlap });
        }
        assert_eq!(gap.as_str(), gap_text);
    }
    for method in HttpMethod::ALL {
        let j = only_job(&job(&format!(
            "http = {{ url = \"http://localhost:8080/x\", method = \"{}\" }}\n",
            method.as_str().to_lowercase()
        )));
        match j.action {
            Action::Http { method: m, .. } => assert_eq!(m, method),
            other => panic!("{other:?}"),
        }
    }
    for text in ["1m", "90s", "1h30m", "2d", "1d2h3m4s"] {
        let j = only_job(&job(&format!("stale_after = \"{text}\"\n")));
        let d = j.stale_after.unwrap();
        assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        assert_eq!(parse_duration(text), Ok(d));
    }
    for (text, paused) in [("true", true), ("false", false)] {
        assert_eq!(only_job(&job(&format!("paused = {text}\n"))).paused, paused);
    }
}

#[test]
fn every_default_is_overridable_per_job() {
    let text = r#"
[defaults]
timezone = "Europe/Berlin"
trigger = "dedicated"
lease = "20m"
starting_deadline = "3m"
catch_up = "all"
max_catch_up = 7
overlap = "allow"
max_concurrency = 4
retry = { max_attempts = 5, backoff = "1m", max_backoff = "30m", past_next_slot = true }
delivery = "at_most_once"
dst_gap = "skip"
dst_overlap = "twice"
skew_margin = "10s"
paused = true
stale_after = "2d"
history = { succeeded = 9, failed = 8 }
timeout = "15m"

[[job]]
name = "inherits"
schedule = "0 3 * * *"
command = ["true"]

[[job]]
name = "overrides"
schedule = "0 4 * * *"
timezone = "Asia/Tokyo"
trigger = "tick"
lease = "30m"
starting_deadline = "1m"
catch_up = "none"
max_catch_up = 2
overlap = "replace"
retry = { max_attempts = 1, backoff = "0s", max_backoff = "0s", past_next_slot = false }
delivery = "at_least_once"
dst_gap = "shift"
dst_overlap = "once"
skew_margin = "0s"
paused = false
stale_after = "3d"
history = { succeeded = 0, failed = 0 }
timeout = "20m"
command = ["true"]
"#;
    let m = parse(text);
    let d = &m.defaults;
    assert_eq!(d.timezone, "Europe/Berlin");
    assert_eq!(d.overlap, Overlap::Allow { max_concurrency: 4 });
    assert_eq!(d.timeout, Some(mins(15)));

    let a = &m.jobs[0];
    assert_eq!(a.timezone, "Europe/Berlin");
    assert_eq!(a.trigger, Trigger::Dedicated);
    assert_eq!((a.lease, a.starting_deadline), (mins(20), mins(3)));
    assert_eq!((a.catch_up, a.max_catch_up), (CatchUp::All, 7));
    assert_eq!(a.overlap, Overlap::Allow { max_concurrency: 4 });
    assert_eq!(
        a.retry,
        RetryPolicy {
            max_attempts: 5,
            backoff: mins(1),
            max_backoff: mins(30),
            past_next_slot: true
        }
    );
    assert_eq!(a.delivery, Delivery::AtMostOnce);
    assert_eq!(
        a.dst_policy(),
        DstPolicy {
            gap: DstGap::Skip,
            overlap: DstOverlap::Twice
        }
    );
    assert_eq!(a.skew_margin, Duration::from_secs(10));
    assert!(a.paused);
    assert_eq!(a.stale_after, Some(mins(2 * 24 * 60)));
    assert_eq!(
        a.history,
        HistoryLimits {
            succeeded: 9,
            failed: 8
        }
    );
    assert_eq!(a.action.timeout(), Some(mins(15)));

    let b = &m.jobs[1];
    assert_eq!(b.timezone, "Asia/Tokyo");
    assert_eq!(b.trigger, Trigger::Tick);
    assert_eq!((b.lease, b.starting_deadline), (mins(30), mins(1)));
    assert_eq!((b.catch_up, b.max_catch_up), (CatchUp::None, 2));
    assert_eq!(b.overlap, Overlap::Replace);
    assert_eq!(
        b.retry,
        RetryPolicy {
            max_attempts: 1,
            backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
            past_next_slot: false
        }
    );
    assert_eq!(b.delivery, Delivery::AtLeastOnce);
    assert_eq!(b.dst_policy(), DstPolicy::default());
    assert_eq!(b.skew_margin, Duration::ZERO);
    assert!(!b.paused);
    assert_eq!(b.stale_after, Some(mins(3 * 24 * 60)));
    assert_eq!(
        b.history,
        HistoryLimits {
            succeeded: 0,
            failed: 0
        }
    );
    assert_eq!(b.action.timeout(), Some(mins(20)));
}

#[test]
fn retry_and_history_merge_key_by_key() {
    let m = parse(
        "[defaults]\nretry = { max_attempts = 4, backoff = \"10s\" }\nhistory = { failed = 5 }\n\
         [[job]]\nname = \"a\"\nschedule = \"@hourly\"\nretry = { max_attempts = 2 }\nhistory = { succeeded = 7 }\n",
    );
    let j = &m.jobs[0];
    assert_eq!(
        j.retry,
        RetryPolicy {
            max_attempts: 2,
            backoff: Duration::from_secs(10),
            max_backoff: mins(10),
            past_next_slot: false
        }
    );
    assert_eq!(
        j.history,
        HistoryLimits {
            succeeded: 7,
            failed: 5
        }
    );
}

#[test]
fn actions_carry_env_headers_and_timeouts() {
    let j = only_job(&job(
        "command = [\"./run.sh\", \"a b\"]\nenv = { MODE = \"fast\", EMPTY = \"\" }\ntimeout = \"2m\"\n",
    ));
    assert_eq!(
        j.action,
        Action::Command {
            argv: vec!["./run.sh".into(), "a b".into()],
            timeout: mins(2),
            env: BTreeMap::from([
                ("EMPTY".into(), String::new()),
                ("MODE".into(), "fast".into())
            ]),
        }
    );
    let j = only_job(&job(
        "http = { url = \"https://api.example.com:8443/v1/run?x=1\", headers = { Authorization = \"Bearer t\" } }\n",
    ));
    assert_eq!(
        j.action,
        Action::Http {
            url: "https://api.example.com:8443/v1/run?x=1".into(),
            method: HttpMethod::Post,
            headers: BTreeMap::from([("Authorization".into(), "Bearer t".into())]),
            timeout: mins(15),
        }
    );
    // Table form of the same http job.
    let j = only_job(&job(
        "[job.http]\nurl = \"http://[::1]:9000/\"\nmethod = \"GET\"\n",
    ));
    assert!(matches!(
        j.action,
        Action::Http {
            method: HttpMethod::Get,
            ..
        }
    ));
}

#[test]
fn active_window_accepts_strings_and_toml_datetimes() {
    let j = only_job(&job(
        "start_at = \"2026-01-01T00:00:00+01:00\"\nend_at = 2027-01-01T00:00:00Z\n",
    ));
    assert_eq!(j.start_at, Some(ts("2025-12-31T23:00:00Z")));
    assert_eq!(j.end_at, Some(ts("2027-01-01T00:00:00Z")));
    assert!(j.in_window(ts("2026-06-01T00:00:00Z")));
    assert!(!j.in_window(ts("2027-01-01T00:00:00Z")));
    assert!(!j.in_window(ts("2025-12-31T22:59:59Z")));
}

#[test]
fn spec_hash_is_stable_and_covers_only_slot_fields() {
    let base = only_job(&job(""));
    // Pinned: the hash must never change between versions.
    assert_eq!(spec_hash(&base), "3be913b1e1fbb0df");
    assert_eq!(base.spec_hash(), spec_hash(&base));
    assert_eq!(spec_hash(&base).len(), 16);

    let same = [
        "[[job]]\nname = \"other\"\nschedule = \" 0  9 * *  * \"\nlease = \"1h\"\nretry = { max_attempts = 9 }\n",
        "[[job]]\nname = \"j\"\nschedule = \"0 9 * * *\"\ncatch_up = \"all\"\ncommand = [\"x\"]\n",
    ];
    for text in same {
        assert_eq!(spec_hash(&only_job(text)), spec_hash(&base), "{text}");
    }
    let different = [
        job("").replace("0 9 * * *", "0 10 * * *"),
        job("timezone = \"Europe/Paris\"\n"),
        job("dst_gap = \"skip\"\n"),
        job("dst_overlap = \"twice\"\n"),
        job("start_at = \"2026-01-01T00:00:00Z\"\n"),
        job("end_at = \"2030-01-01T00:00:00Z\"\n"),
    ];
    let mut seen = vec![spec_hash(&base)];
    for text in different {
        let h = spec_hash(&only_job(&text));
        assert!(!seen.contains(&h), "{text}");
        seen.push(h);
    }
    // Letter case of names does not matter.
    let upper = only_job("[[job]]\nname = \"j\"\nschedule = \"0 9 * * MON\"\n");
    let lower = only_job("[[job]]\nname = \"j\"\nschedule = \"0 9 * * mon\"\n");
    assert_eq!(spec_hash(&upper), spec_hash(&lower));
}

#[test]
fn default_stale_after_follows_the_schedule() {
    let now = ts("2026-01-01T00:00:00Z");
    let slack = mins(15 + 10);
    let cases = [
        ("* * * * *", mins(1)),
        ("*/5 * * * *", mins(5)),
        ("0 9 * * MON-FRI", mins(3 * 24 * 60)),
        ("* 9-17 * * MON-FRI", mins((2 * 24 + 15) * 60 + 1)),
        ("0 0 1 1 *", mins(365 * 24 * 60)),
        ("0 0 29 2 *", mins(1461 * 24 * 60)),
    ];
    for (expr, gap) in cases {
        let j = only_job(&format!("[[job]]\nname = \"a\"\nschedule = \"{expr}\"\n"));
        assert_eq!(j.default_stale_after(now), Some(gap + slack), "{expr}");
        assert_eq!(j.stale_after_at(now), Some(gap + slack), "{expr}");
    }
    // DST: a fixed-time daily job in New York has a 25-hour gap in November.
    let j = only_job(
        "[[job]]\nname = \"a\"\nschedule = \"30 2 * * *\"\ntimezone = \"America/New_York\"\n",
    );
    assert_eq!(j.default_stale_after(now), Some(mins(25 * 60) + slack));
    // An explicit bound wins; a job past its end has no bound.
    let j = only_job(&job(
        "stale_after = \"6h\"\nend_at = \"2026-01-02T00:00:00Z\"\n",
    ));
    assert_eq!(j.stale_after_at(now), Some(mins(360)));
    assert_eq!(j.default_stale_after(ts("2026-01-05T00:00:00Z")), None);
}

#[test]
fn job_names_are_validated_publicly() {
    assert!(validate_job_name("daily-report_2").is_ok());
    assert_eq!(JobName::new("ok-1").unwrap().as_str(), "ok-1");
    let e = JobName::new("Daily").unwrap_err();
    assert_eq!(
        (e.kind.clone(), e.column),
        (JobNameErrorKind::BadChar { ch: 'D' }, 1)
    );
    assert!(e.to_string().contains("\"daily\""), "{e}");
    assert!(matches!(
        validate_job_name(&"x".repeat(65)).unwrap_err().kind,
        JobNameErrorKind::TooLong { chars: 65 }
    ));
    assert!(matches!(
        validate_job_name("_x").unwrap_err().kind,
        JobNameErrorKind::BadStart { ch: '_' }
    ));
    // Round trip through serde, as stores will use it.
    let name: JobName = serde_json::from_str("\"nightly\"").unwrap();
    assert_eq!(serde_json::to_string(&name).unwrap(), "\"nightly\"");
    assert!(serde_json::from_str::<JobName>("\"Nightly\"").is_err());
}

// ---------------------------------------------------------------- display

#[test]
fn errors_display_like_rustc_with_line_and_caret() {
    let text = "# line 1\n\n\n\n\n\n\n\n\n[[job]]\nname = \"nightly\"\ntimezone = \"America/NewYork\"\nschedule = \"0 9 * * *\"\n";
    let errs = match parse_manifest(text, FILE) {
        Err(e) => e,
        Ok(_) => panic!("accepted"),
    };
    assert_eq!(errs.errors.len(), 1);
    assert_eq!(
        errs.to_string(),
        "cronslot.toml:12:12: unknown time zone \"America/NewYork\"; did you mean America/New_York?\n   |\n12 | timezone = \"America/NewYork\"\n   |            ^"
    );
    let d = &errs.errors[0];
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.file, FILE);
    assert_eq!(d.source_line, "timezone = \"America/NewYork\"");
}

#[test]
fn warnings_display_with_their_level() {
    let m = parse(&job("trigger = \"dedicated\"\n").replace("0 9 * * *", "* * * * *"));
    let w = m
        .warnings
        .iter()
        .find(|w| w.message.contains("dedicated"))
        .unwrap();
    assert_eq!(w.severity, Severity::Warning);
    assert!(
        w.to_string()
            .starts_with("cronslot.toml:4:11: warning: job \"j\" is dedicated"),
        "{w}"
    );
}

// ---------------------------------------------------------------- errors

#[test]
fn toml_syntax_error() {
    one_error(
        "[[job]]\nname = \"a\nschedule = \"* * * * *\"\n",
        2,
        10,
        "invalid TOML",
    );
    one_error("[[job]\n", 1, 7, "invalid TOML");
}

/// The manifest is parsed a job at a time: what it means and where its
/// problems are reported must be what the whole document says.
#[test]
fn a_manifest_read_job_by_job_means_what_the_whole_document_says() {
    // [defaults] after the jobs still applies to every job; a job's
    // sub-table belongs to it.
    let m = parse(
        "[[job]]\nname = \"a\"\nschedule = \"0 9 * * *\"\n[job.http]\nurl = \"https://example.com/a\"\n\n[[job]]\nname = \"b\"\nschedule = \"0 9 * * *\"\n\n[defaults]\nlease = \"7m\"\n[defaults.retry]\nmax_attempts = 1\n",
    );
    assert_eq!(m.jobs.len(), 2);
    assert!(
        m.jobs
            .iter()
            .all(|j| j.lease == mins(7) && j.retry.max_attempts == 1)
    );
    assert!(matches!(m.jobs[0].action, Action::Http { .. }));
    assert!(matches!(m.jobs[1].action, Action::Function));

    // A problem in a later job is reported at its own line; one that
    // involves [defaults] at the defaults' line.
    let text = format!(
        "[defaults]\nlease = \"2m\"\n\n{}\n{}",
        job(""),
        "[[job]]\nname = \"k\"\nschedule = \"0 9 * * *\"\ntimeout = \"1h\"\nnote = 1\ncommand = [\"true\"]\n"
    );
    let errs = errors(&text);
    assert_eq!(errs.len(), 2, "{}", show(&errs));
    assert_at(&errs[0], 11, 11, "timeout 1h is longer than the lease 2m");
    assert_at(&errs[1], 12, 1, "unknown key `note`");

    // A syntax error in any job leaves only syntax errors in the report.
    let text = format!(
        "{}\n[[job]]\nname = \"k\"\nschedule = \"0 9 * * *\"\nleese = \"1m\"\n\n[[job]]\nname = \"broken\nschedule = \"* * * * *\"\n",
        job("")
    );
    one_error(&text, 11, 15, "invalid TOML");

    // [defaults] written in two places is refused at the second.
    let text = format!(
        "[defaults]\nlease = \"2m\"\n\n{}\n[defaults]\npaused = true\n",
        job("")
    );
    one_error(&text, 8, 1, "[defaults] is already written on line 1");

    // Duplicate names across pieces, also when the first job has errors.
    let text = format!("{}\n{}", job(""), job(""));
    one_error(
        &text,
        6,
        8,
        "duplicate job name \"j\"; the first is on line 2",
    );
    let text = format!("{}\n{}\n{}", job("lease = \"1s\"\n"), job(""), job(""));
    let errs = errors(&text);
    assert_eq!(errs.len(), 3, "{}", show(&errs));
    assert_at(
        &errs[1],
        7,
        8,
        "duplicate job name \"j\"; the first is on line 2",
    );
    assert_at(
        &errs[2],
        11,
        8,
        "duplicate job name \"j\"; the first is on line 2",
    );
}

#[test]
fn empty_manifest_has_no_jobs() {
    one_error("", 1, 1, "no [[job]]");
    one_error(
        "# only a comment\n[defaults]\nlease = \"5m\"\n",
        1,
        1,
        "no [[job]]",
    );
    one_error("job = []\n", 1, 7, "no [[job]]");
}

#[test]
fn unknown_keys_everywhere() {
    one_error(
        &job("leese = \"5m\"\n"),
        4,
        1,
        "unknown key `leese` in [[job]]; did you mean `lease`?",
    );
    one_error(
        "[defaults]\ntimezon = \"UTC\"\n[[job]]\nname = \"a\"\nschedule = \"@daily\"\n",
        2,
        1,
        "unknown key `timezon` in [defaults]; did you mean `timezone`?",
    );
    one_error(
        &job("retry = { max_attempts = 2, backof = \"1s\" }\n"),
        4,
        29,
        "unknown key `backof` in retry; did you mean `backoff`?",
    );
    one_error(
        &job("[job.retry]\nmax_attempts = 2\njitter = true\n"),
        6,
        1,
        "unknown key `jitter` in retry",
    );
    one_error(
        &job("http = { url = \"https://x.io\", verb = \"GET\" }\n"),
        4,
        32,
        "unknown key `verb` in http",
    );
    one_error(
        &job("history = { success = 1 }\n"),
        4,
        13,
        "did you mean `succeeded`?",
    );
    one_error(
        &format!("{}[[jobs]]\n", job("")),
        4,
        3,
        "unknown top-level key `jobs`; did you mean [[job]]?",
    );
    let e = one_error(&job("color = \"red\"\n"), 4, 1, "unknown key `color`");
    assert!(
        e.message.contains("the keys are name, schedule"),
        "{}",
        e.message
    );
}

#[test]
fn wrong_types() {
    one_error(
        &job("max_catch_up = \"ten\"\n"),
        4,
        16,
        "max_catch_up must be a whole number",
    );
    one_error(
        &job("paused = \"yes\"\n"),
        4,
        10,
        "paused must be true or false",
    );
    one_error(
        &job("command = \"./x.sh\"\n"),
        4,
        11,
        "command must be an array",
    );
    one_error(&job("retry = 3\n"), 4, 9, "retry must be a table");
    one_error(
        &job("command = [\"a\", 5]\n"),
        4,
        17,
        "command[1] must be a string, not integer 5",
    );
    one_error(&job("catch_up = 1\n"), 4, 12, "catch_up must be a string");
    one_error(
        &job("max_catch_up = 99999999999\n"),
        4,
        16,
        "max_catch_up 99999999999 is too large",
    );
    one_error(
        "[[job]]\nname = 5\nschedule = \"@daily\"\n",
        2,
        8,
        "name must be a string",
    );
    one_error(
        &job("max_catch_up = -1\n"),
        4,
        16,
        "max_catch_up must be a whole number (0 or more), not integer -1",
    );
    one_error(
        "[defaults]\n[[job]]\nname = \"a\"\nschedule = \"@daily\"\n[job]\n",
        5,
        2,
        "invalid TOML",
    );
    one_error("job = 5\n", 1, 7, "job must be an array of tables");
    one_error("[job]\nname = \"a\"\n", 1, 1, "write [[job]], not [job]");
    one_error(
        "[[defaults]]\n[[job]]\nname = \"a\"\nschedule = \"@daily\"\n",
        1,
        1,
        "defaults must be a single table",
    );
}

#[test]
fn unknown_policy_values_suggest_the_right_one() {
    one_error(
        &job("catch_up = \"alll\"\n"),
        4,
        12,
        "unknown catch_up \"alll\"; expected latest, all or none; did you mean \"all\"?",
    );
    one_error(
        &job("overlap = \"alow\"\n"),
        4,
        11,
        "did you mean \"allow\"?",
    );
    one_error(
        &job("trigger = \"cron\"\n"),
        4,
        11,
        "expected tick or dedicated",
    );
    one_error(
        &job("delivery = \"exactly_once\"\n"),
        4,
        12,
        "expected at_least_once or at_most_once",
    );
    one_error(
        &job("dst_gap = \"jump\"\n"),
        4,
        11,
        "expected shift, skip or shift_always",
    );
    one_error(
        &job("dst_gap = \"shift-always\"\n"),
        4,
        11,
        "did you mean \"shift_always\"?",
    );
    one_error(
        &job("dst_overlap = \"thrice\"\n"),
        4,
        15,
        "did you mean \"twice\"?",
    );
}

#[test]
fn invalid_cron_points_into_the_schedule_string() {
    // `schedule = "` is 12 characters; the 9th character of the expression
    // is column 12 + 1 + 8 = 21.
    one_error(
        "[[job]]\nname = \"a\"\nschedule = \"0 0 * * 8\"\n",
        3,
        21,
        "invalid schedule \"0 0 * * 8\"",
    );
    one_error(
        "[[job]]\nname = \"a\"\nschedule = '0 60 * * *'\n",
        3,
        15,
        "hour",
    );
    one_error(
        "[[job]]\nname = \"a\"\n  schedule   =   \"0 0 * * * *\"\n",
        3,
        29,
        "does not support seconds",
    );
    // With escapes the text differs from the source: point at the string.
    one_error(
        "[[job]]\nname = \"a\"\nschedule = \"0 0 * * \\u0038\"\n",
        3,
        12,
        "invalid schedule \"0 0 * * 8\"",
    );
    // Multi-byte characters before the column are counted as one each.
    let e = one_error(
        "[[job]]\nname = \"a\"\nschedule = \"0 0 * * é\"\n",
        3,
        21,
        "invalid schedule",
    );
    assert!(e.message.contains("day-of-week"), "{}", e.message);
}

#[test]
fn schedule_that_never_fires() {
    one_error(
        "[[job]]\nname = \"a\"\nschedule = \"0 0 31 2 *\"\n",
        3,
        12,
        "never fires",
    );
}

#[test]
fn missing_name_or_schedule() {
    one_error("[[job]]\nschedule = \"@daily\"\n", 1, 1, "has no name");
    one_error("[[job]]\nname = \"a\"\n", 1, 1, "job \"a\" has no schedule");
}

#[test]
fn unknown_zone_uses_the_zone_hint() {
    one_error(
        &job("timezone = \"CEST\"\n"),
        4,
        12,
        "unknown time zone \"CEST\"; abbreviations do not say which DST rules apply: did you mean Europe/Berlin?",
    );
    one_error(
        &job("timezone = \"Mars/Olympus\"\n"),
        4,
        12,
        "unknown time zone \"Mars/Olympus\"",
    );
    one_error(
        "[defaults]\ntimezone = \"Europe/Berln\"\n[[job]]\nname = \"a\"\nschedule = \"@daily\"\n",
        2,
        12,
        "unknown time zone",
    );
}

#[test]
fn bad_job_names_point_at_the_character() {
    one_error(
        "[[job]]\nname = \"Daily Report\"\nschedule = \"@daily\"\n",
        2,
        9,
        "did you mean \"daily-report\"?",
    );
    one_error(
        "[[job]]\nname = \"ok.not\"\nschedule = \"@daily\"\n",
        2,
        11,
        "'.' is not allowed",
    );
    one_error(
        "[[job]]\nname = \"-x\"\nschedule = \"@daily\"\n",
        2,
        9,
        "start with a letter or a digit",
    );
    one_error(
        "[[job]]\nname = \"\"\nschedule = \"@daily\"\n",
        2,
        9,
        "it is empty",
    );
    let long = "a".repeat(65);
    one_error(
        &format!("[[job]]\nname = \"{long}\"\nschedule = \"@daily\"\n"),
        2,
        73,
        "the limit is 64",
    );
}

#[test]
fn duplicate_job_names_point_at_the_second() {
    let text = "[[job]]\nname = \"a\"\nschedule = \"@daily\"\n\n[[job]]\nname = \"b\"\nschedule = \"@daily\"\n\n[[job]]\nname = \"a\"\nschedule = \"@hourly\"\n";
    one_error(
        text,
        10,
        8,
        "duplicate job name \"a\"; the first is on line 2",
    );
}

#[test]
fn durations_are_checked_with_the_accepted_units() {
    one_error(&job("lease = \"15\"\n"), 4, 9, "has no unit");
    one_error(&job("lease = 90\n"), 4, 9, "bare number");
    one_error(&job("lease = \"-5m\"\n"), 4, 9, "negative");
    one_error(
        &job("lease = \"5w\"\n"),
        4,
        9,
        "unknown unit \"w\"; the units are d, h, m and s",
    );
    one_error(&job("lease = \"1.5h\"\n"), 4, 9, "fraction");
    one_error(
        &job("retry = { backoff = \"30 s\" }\n"),
        4,
        21,
        "invalid retry.backoff",
    );
}

#[test]
fn lease_shorter_than_a_minute() {
    one_error(
        &job("lease = \"59s\"\n"),
        4,
        9,
        "lease 59s is shorter than the minimum of 1m",
    );
}

#[test]
fn zero_where_zero_makes_no_sense() {
    one_error(
        &job("starting_deadline = \"0s\"\n"),
        4,
        21,
        "starting_deadline must be longer than 0s",
    );
    one_error(
        &job("command = [\"x\"]\ntimeout = \"0m\"\n"),
        5,
        11,
        "timeout must be longer than 0s",
    );
    one_error(
        &job("stale_after = \"0s\"\n"),
        4,
        15,
        "stale_after must be longer than 0s",
    );
    // Zero backoff and skew margin are meaningful.
    parse(&job("retry = { backoff = \"0s\" }\nskew_margin = \"0s\"\n"));
}

#[test]
fn catch_up_all_needs_max_catch_up() {
    one_error(
        &job("catch_up = \"all\"\nmax_catch_up = 0\n"),
        5,
        16,
        "max_catch_up = 0 with catch_up = \"all\"",
    );
    // The combination across [defaults] and the job points at the job's key.
    one_error(
        "[defaults]\nmax_catch_up = 0\n[[job]]\nname = \"a\"\nschedule = \"@daily\"\ncatch_up = \"all\"\n",
        6,
        12,
        "catches up nothing",
    );
    // max_catch_up = 0 is fine with latest.
    parse(&job("max_catch_up = 0\n"));
}

#[test]
fn max_concurrency_needs_overlap_allow() {
    one_error(
        &job("max_concurrency = 3\n"),
        4,
        19,
        "max_concurrency applies only to overlap = \"allow\", and overlap is \"forbid\" (the default)",
    );
    one_error(
        &job("overlap = \"replace\"\nmax_concurrency = 3\n"),
        5,
        19,
        "overlap is \"replace\"",
    );
    one_error(
        &job("overlap = \"allow\"\nmax_concurrency = 0\n"),
        5,
        19,
        "max_concurrency must be at least 1",
    );
    one_error(
        &job("overlap = \"allow\"\nmax_concurrency = 101\n"),
        5,
        19,
        "above the limit of 100",
    );
    // A job that overrides overlap does not inherit the defaults' concurrency problem.
    parse(
        "[defaults]\noverlap = \"allow\"\nmax_concurrency = 2\n[[job]]\nname = \"a\"\nschedule = \"@daily\"\noverlap = \"forbid\"\n",
    );
}

#[test]
fn active_window_errors() {
    one_error(
        &job("start_at = \"2026-13-01T00:00:00Z\"\n"),
        4,
        12,
        "is not an RFC 3339 instant",
    );
    one_error(
        &job("end_at = 2026-01-01T00:00:00\n"),
        4,
        10,
        "has no offset",
    );
    one_error(
        &job("end_at = 2026-01-01\n"),
        4,
        10,
        "\"2026-01-01\" is not an RFC 3339 instant",
    );
    one_error(
        &job("end_at = 5\n"),
        4,
        10,
        "end_at must be an RFC 3339 instant",
    );
    one_error(
        &job("start_at = \"2026-03-01T00:00:00Z\"\nend_at = \"2026-03-01T00:00:00Z\"\n"),
        4,
        12,
        "start_at 2026-03-01T00:00:00Z is not before end_at",
    );
}

#[test]
fn command_and_http_errors() {
    one_error(
        &job("command = [\"x\"]\nhttp = { url = \"https://x.io\" }\n"),
        5,
        1,
        "not both",
    );
    one_error(&job("command = []\n"), 4, 11, "command is empty");
    one_error(
        &job("command = [\"\", \"-v\"]\n"),
        4,
        12,
        "command[0], the program to run, is empty",
    );
    one_error(
        &job("http = { url = \"ftp://x.io/a\" }\n"),
        4,
        16,
        "is not an http:// or https:// URL",
    );
    one_error(
        &job("http = { url = \"https:///path\" }\n"),
        4,
        16,
        "has no host",
    );
    one_error(
        &job("http = { url = \"https://x.io:99999/\" }\n"),
        4,
        16,
        "invalid port",
    );
    one_error(
        &job("http = { url = \"https://x.io/a b\" }\n"),
        4,
        16,
        "spaces",
    );
    one_error(
        &job("http = { method = \"GET\" }\n"),
        4,
        8,
        "http has no url",
    );
    one_error(
        &job("http = { url = \"https://x.io\", method = \"FETCH\" }\n"),
        4,
        41,
        "unknown HTTP method \"FETCH\"; expected GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS",
    );
    one_error(
        &job("http = { url = \"https://x.io\", headers = { \"Idempotency-Key\" = \"k\" } }\n"),
        4,
        44,
        "set by cronslot",
    );
    one_error(
        &job("http = { url = \"https://x.io\", headers = { \"a b\" = \"k\" } }\n"),
        4,
        44,
        "not a valid HTTP header name",
    );
    one_error(
        &job("http = { url = \"https://x.io\", headers = { a = \"x\\ny\" } }\n"),
        4,
        48,
        "line break",
    );
}

#[test]
fn env_and_timeout_errors() {
    one_error(
        &job("env = { A = \"1\" }\n"),
        4,
        1,
        "env applies only to command jobs",
    );
    one_error(
        &job("command = [\"x\"]\nenv = { CRONSLOT_SLOT = \"1\" }\n"),
        5,
        9,
        "reserved",
    );
    one_error(
        &job("command = [\"x\"]\nenv = { \"A=B\" = \"1\" }\n"),
        5,
        9,
        "not a valid environment variable name",
    );
    one_error(
        &job("timeout = \"1m\"\n"),
        4,
        1,
        "timeout applies only to command and http jobs",
    );
    one_error(
        &job("command = [\"x\"]\ntimeout = \"20m\"\n"),
        5,
        11,
        "timeout 20m is longer than the lease 15m",
    );
    // A timeout in [defaults] is fine for function jobs: it does not apply.
    parse("[defaults]\ntimeout = \"1m\"\n[[job]]\nname = \"a\"\nschedule = \"@daily\"\n");
}

#[test]
fn retry_errors() {
    one_error(
        &job("retry = { max_attempts = 0 }\n"),
        4,
        26,
        "retry.max_attempts must be at least 1",
    );
    one_error(
        &job("retry = { backoff = \"20m\" }\n"),
        4,
        21,
        "retry.backoff 20m is longer than retry.max_backoff 10m",
    );
    one_error(
        &job("retry = { backoff = \"2m\", max_backoff = \"1m\" }\n"),
        4,
        21,
        "longer than retry.max_backoff 1m",
    );
}

#[test]
fn other_cross_checks() {
    one_error(
        &job("skew_margin = \"1m\"\nlease = \"1m\"\n"),
        4,
        15,
        "skew_margin 1m must be shorter than the lease 1m",
    );
    one_error(
        &job("history = { succeeded = 500 }\n"),
        4,
        25,
        "history.succeeded 500 is above the limit of 100",
    );
}

#[test]
fn job_only_keys_in_defaults() {
    one_error(
        "[defaults]\nschedule = \"@daily\"\n[[job]]\nname = \"a\"\nschedule = \"@daily\"\n",
        2,
        1,
        "`schedule` belongs in a [[job]], not in [defaults]",
    );
}

#[test]
fn a_bad_default_is_reported_once_not_per_job() {
    let text = "[defaults]\nlease = \"10s\"\n\n[[job]]\nname = \"a\"\nschedule = \"@daily\"\n\n[[job]]\nname = \"b\"\nschedule = \"@hourly\"\n";
    one_error(text, 2, 9, "lease 10s is shorter");
}

#[test]
fn one_mistake_gives_one_error() {
    // The bad overlap value does not also make max_concurrency an error.
    one_error(
        &job("overlap = \"alow\"\nmax_concurrency = 3\n"),
        4,
        11,
        "unknown overlap",
    );
    // A bad lease does not also fail the skew check against it.
    one_error(
        &job("lease = \"1x\"\nskew_margin = \"2m\"\n"),
        4,
        9,
        "unknown unit",
    );
}

#[test]
fn every_error_is_reported_together_in_file_order() {
    let text = r#"[defaults]
lease = "30s"
catch_up = "sometimes"

[[job]]
name = "Report"
schedule = "0 25 * * *"
timezone = "Europe/Pariss"

[[job]]
name = "ok"
schedule = "@daily"
retry = { max_attempts = 0 }
command = []

[[job]]
name = "ok"
schedule = "@hourly"
start_at = "yesterday"
bogus = 1
"#;
    let errs = errors(text);
    let got: Vec<(usize, usize)> = errs.iter().map(|e| (e.line, e.column)).collect();
    assert_eq!(
        got,
        [
            (2, 9),
            (3, 12),
            (6, 9),
            (7, 15),
            (8, 12),
            (13, 26),
            (14, 11),
            (17, 8),
            (19, 12),
            (20, 1)
        ],
        "{}",
        show(&errs)
    );
    assert!(
        errs[7]
            .message
            .contains("duplicate job name \"ok\"; the first is on line 11")
    );
}

// ---------------------------------------------------------------- warnings

fn warnings(text: &str) -> Vec<Diagnostic> {
    parse(text).warnings
}

#[test]
fn warns_about_a_dedicated_job_every_minute() {
    let w = warnings(
        "[[job]]\nname = \"a\"\nschedule = \"* * * * *\"\ntrigger = \"dedicated\"\nretry = { max_attempts = 1 }\n",
    );
    assert_eq!(w.len(), 1, "{}", show(&w));
    assert_at(&w[0], 4, 11, "is dedicated but fires every minute");
    assert!(warnings(&job("trigger = \"dedicated\"\n")).is_empty());
}

#[test]
fn warns_when_retries_outlive_the_next_slot() {
    let w = warnings(
        "[[job]]\nname = \"a\"\nschedule = \"*/2 * * * *\"\nretry = { max_attempts = 4, backoff = \"1m\" }\n",
    );
    assert_eq!(w.len(), 1, "{}", show(&w));
    // 1m + 2m + 4m of backoff against slots two minutes apart.
    assert_at(
        &w[0],
        4,
        9,
        "may wait up to 7m in all, which reaches the next slot when slots are 2m apart",
    );
    // Inherited retry settings point at the schedule.
    let w = warnings("[[job]]\nname = \"a\"\nschedule = \"* * * * *\"\n");
    assert_eq!(w.len(), 1, "{}", show(&w));
    assert_at(&w[0], 3, 12, "retry.past_next_slot = true");
    // Saying so silences it, and so does a single attempt.
    assert!(
        warnings(
            "[[job]]\nname = \"a\"\nschedule = \"* * * * *\"\nretry = { past_next_slot = true }\n"
        )
        .is_empty()
    );
    assert!(
        warnings("[[job]]\nname = \"a\"\nschedule = \"* * * * *\"\nretry = { max_attempts = 1 }\n")
            .is_empty()
    );
}

#[test]
fn warns_about_a_large_catch_up_all() {
    let w = warnings(&job("catch_up = \"all\"\nmax_catch_up = 500\n"));
    assert_eq!(w.len(), 1, "{}", show(&w));
    assert_at(
        &w[0],
        5,
        16,
        "max_catch_up = 500 can run that many late slots",
    );
    // In [defaults]: once, at the defaults.
    let w = warnings(
        "[defaults]\ncatch_up = \"all\"\nmax_catch_up = 1000\n[[job]]\nname = \"a\"\nschedule = \"@daily\"\n[[job]]\nname = \"b\"\nschedule = \"@weekly\"\n",
    );
    assert_eq!(w.len(), 1, "{}", show(&w));
    assert_at(&w[0], 3, 16, "1000");
    assert!(warnings(&job("catch_up = \"all\"\nmax_catch_up = 100\n")).is_empty());
}

#[test]
fn warns_about_a_window_without_slots() {
    let w = warnings(&job(
        "start_at = \"2026-01-01T10:00:00Z\"\nend_at = \"2026-01-02T08:59:00Z\"\n",
    ));
    assert_eq!(w.len(), 1, "{}", show(&w));
    assert_at(&w[0], 4, 12, "has no slot between start_at and end_at");
    assert!(
        warnings(&job(
            "start_at = \"2026-01-01T10:00:00Z\"\nend_at = \"2026-01-02T09:00:01Z\"\n"
        ))
        .is_empty()
    );
}

// ---------------------------------------------------------------- robustness

fn check_no_panic(text: &str) {
    match parse_manifest(text, FILE) {
        Ok(m) => {
            for w in &m.warnings {
                let _ = w.to_string();
            }
        }
        Err(e) => {
            assert!(!e.errors.is_empty());
            let lines = text.split('\n').count();
            for d in &e.errors {
                assert!(d.line >= 1 && d.line <= lines, "{d:?}");
                assert!(d.column >= 1, "{d:?}");
                assert!(!d.message.is_empty());
            }
            let _ = e.to_string();
        }
    }
}

#[test]
fn binary_input_gives_errors_not_panics() {
    for text in [
        "\0\0\0",
        "\u{feff}[[job]]\n",
        "[[job]]\nname = \"\u{0}\"\nschedule = \"\u{7f}\"\n",
        &"[".repeat(10_000),
        &"a = [".repeat(2_000),
        &"x = { y = ".repeat(2_000),
        "[[job]]\r\nname = \"a\"\r\nschedule = \"*/0 * * * *\"\r\n",
    ] {
        check_no_panic(text);
        assert!(parse_manifest(text, FILE).is_err());
    }
}

/// Characters that matter to TOML and to the manifest's values.
const MUTATION_ALPHABET: &[char] = &[
    '"', '\'', '[', ']', '{', '}', '=', ',', '.', '#', '\n', ' ', '\\', '0', '9', '*', '/', '-',
    'a', 'Z', 's', 'm', 'é', '\u{0}', 'L', 'W', '?', '+',
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, ch: usize },
    Replace { at: usize, ch: usize },
    DuplicateLine { line: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..8).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), any::<usize>()).prop_map(|(at, ch)| Mutation::Insert { at, ch }),
        (any::<usize>(), any::<usize>()).prop_map(|(at, ch)| Mutation::Replace { at, ch }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
    ]
}

fn apply(text: &str, mutations: &[Mutation]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for m in mutations {
        let n = chars.len().max(1);
        match *m {
            Mutation::Delete { at, len } => {
                let start = at % n;
                let end = (start + len).min(chars.len());
                if start < end {
                    chars.drain(start..end);
                }
            }
            Mutation::Insert { at, ch } => {
                let c = MUTATION_ALPHABET[ch % MUTATION_ALPHABET.len()];
                chars.insert(at % (chars.len() + 1), c);
            }
            Mutation::Replace { at, ch } => {
                if !chars.is_empty() {
                    let i = at % chars.len();
                    chars[i] = MUTATION_ALPHABET[ch % MUTATION_ALPHABET.len()];
                }
            }
            Mutation::DuplicateLine { line } => {
                let s: String = chars.iter().collect();
                let mut lines: Vec<&str> = s.split('\n').collect();
                let i = line % lines.len();
                lines.insert(i, lines[i]);
                chars = lines.join("\n").chars().collect();
            }
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_strings_never_panic(text in ".{0,400}") {
        check_no_panic(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        check_no_panic(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn mutated_manifests_never_panic(
        base in prop_oneof![Just(DESIGN_EXAMPLE), Just(EXAMPLE_FILE)],
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        check_no_panic(&apply(base, &mutations));
    }
}
