//! Fuzzing the TOML manifest reader (issue 7, "Reliability").
//!
//! `manifest.rs` already feeds `parse_manifest` arbitrary text, bytes and
//! character-level mutations of two manifests (256 cases each) and checks
//! line and column ranges. This file adds what that leaves out:
//!
//! - key-aware manifests: `[defaults]` and `[[job]]` tables built from the
//!   real keys with values of the right type, the wrong type, and the edge
//!   values (zero, negative, `u32::MAX + 1`, 100-year durations, years
//!   -9999 and 9999, empty and huge strings), so validation is exercised
//!   past the TOML syntax;
//! - line-level mutations (drop, swap, duplicate, splice a key line) of
//!   every real manifest in the repository;
//!
//! and stronger properties: every diagnostic names the file, a line of the
//! text, a column within that line and a byte span inside the text, and
//! displays as `file:line:column: message`; an accepted manifest survives
//! the precompiled round trip unchanged, and each job computes its next
//! and previous slots within [`CASE_BUDGET`].
//!
//! Case counts keep the file under ~20 s in a debug build; set
//! `PROPTEST_CASES` for a long run.

use std::time::{Duration, Instant};

use cronslot_core::manifest::{Diagnostic, load_precompiled, parse_manifest};
use jiff::Timestamp;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngSeed};

const FILE: &str = "fuzz/cronslot.toml";
const CASE_BUDGET: Duration = Duration::from_secs(5);

/// Seeds: copies of the repository's manifests as they were when they were
/// taken (the crate reads nothing outside its directory, so that it can be
/// published). That the examples themselves parse is tested by
/// `cronslot-tests` (`examples::`), on the files as they are now.
const REAL: [&str; 4] = [
    include_str!("../fixtures/seeds/examples.toml"),
    include_str!("../fixtures/seeds/aws-jobs.toml"),
    include_str!("../fixtures/seeds/cf-jobs.toml"),
    include_str!("../fixtures/seeds/aws-fixture.toml"),
];

fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x7_F022_3A11),
        failure_persistence: None,
        max_shrink_iters: 1_000,
        ..Config::default()
    }
}

// ------------------------------------------------------------ checks

fn check_diagnostic(text: &str, d: &Diagnostic) -> Result<(), TestCaseError> {
    let lines: Vec<&str> = text.split('\n').collect();
    prop_assert_eq!(&d.file, FILE, "{:?}", d);
    prop_assert!(
        d.line >= 1 && d.line <= lines.len(),
        "line out of range: {d:?}"
    );
    let line = lines[d.line - 1].trim_end_matches('\r');
    prop_assert!(d.column >= 1, "column 0: {d:?}");
    prop_assert!(
        d.column <= line.chars().count() + 1,
        "column past the line's end: {d:?}"
    );
    prop_assert!(
        d.span.start <= d.span.end && d.span.end <= text.len(),
        "span outside the text: {d:?}"
    );
    prop_assert!(!d.message.is_empty(), "no message: {d:?}");
    let shown = d.to_string();
    let header = format!("{FILE}:{}:{}: ", d.line, d.column);
    prop_assert!(
        shown.starts_with(&header),
        "{shown:?} does not start {header:?}"
    );
    Ok(())
}

/// The outcome of any text, checked; returns whether it was accepted.
fn check(text: &str) -> Result<bool, TestCaseError> {
    let started = Instant::now();
    let accepted = match parse_manifest(text, FILE) {
        Err(e) => {
            prop_assert!(!e.errors.is_empty(), "refused without an error");
            for d in e.errors.iter().chain(&e.warnings) {
                check_diagnostic(text, d)?;
            }
            let _ = e.to_string();
            false
        }
        Ok(m) => {
            for w in &m.warnings {
                check_diagnostic(text, w)?;
            }
            // The precompiled form carries the same jobs and defaults.
            let json = m.to_precompiled(FILE);
            let back =
                load_precompiled(&json).map_err(|e| TestCaseError::fail(format!("{json}\n{e}")))?;
            prop_assert_eq!(&back.jobs, &m.jobs);
            prop_assert_eq!(&back.defaults, &m.defaults);
            let t: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
            for job in &m.jobs {
                if let Some(n) = job.schedule.next_after(t) {
                    prop_assert!(n > t && job.schedule.is_slot(n));
                }
                if let Some(p) = job.schedule.prev_before(t) {
                    prop_assert!(p < t && job.schedule.is_slot(p));
                }
                let _ = job.in_window(t);
                let _ = job.stale_after_at(t);
                let _ = job.spec_hash();
            }
            true
        }
    };
    let took = started.elapsed();
    prop_assert!(took < CASE_BUDGET, "{text:?} took {took:?}");
    Ok(accepted)
}

// ------------------------------------------------------------ strategies

fn pick(values: &'static [&'static str]) -> BoxedStrategy<String> {
    prop::sample::select(values)
        .prop_map(str::to_string)
        .boxed()
}

/// Any TOML value, mostly the wrong type for the key it lands on.
fn any_value() -> BoxedStrategy<String> {
    pick(&[
        "0",
        "-1",
        "1",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "-9223372036854775808",
        "1.5",
        "nan",
        "inf",
        "true",
        "false",
        "\"\"",
        "\"x\"",
        "[]",
        "[1, \"a\"]",
        "{}",
        "{ a = 1 }",
        "2026-01-01T00:00:00Z",
        "2026-01-01",
        "12:00:00",
        "'''\nmulti\n'''",
        "\"\\u0000\"",
        "\"\\uD800\"",
    ])
}

fn duration() -> BoxedStrategy<String> {
    pick(&[
        "\"2m\"",
        "\"0s\"",
        "\"1s\"",
        "\"59s\"",
        "\"1h30m\"",
        "\"10m\"",
        "\"36500d\"",
        "\"36501d\"",
        "\"99999999999999999999d\"",
        "\"18446744073709551615s\"",
        "\"-5m\"",
        "\"1.5h\"",
        "\"5\"",
        "\"m\"",
        "\"\"",
        "\"1w\"",
        "\"1h 1h\"",
        "300",
    ])
}

fn count() -> BoxedStrategy<String> {
    prop_oneof![
        3 => (0u32..20).prop_map(|n| n.to_string()),
        2 => pick(&["0", "100", "101", "1000", "1000000", "4294967295", "4294967296", "-1", "1e9"]),
    ]
    .boxed()
}

fn schedule() -> BoxedStrategy<String> {
    pick(&[
        "\"* * * * *\"",
        "\"*/5 * * * *\"",
        "\"0 9 * * MON-FRI\"",
        "\"30 2 * * *\"",
        "\"0 0 29 2 *\"",
        "\"0 0 31 2 *\"",
        "\"0 0 L * *\"",
        "\"0 0 15W * 5#3\"",
        "\"0 0 * * +1-5\"",
        "\"@daily\"",
        "\"@reboot\"",
        "\"1-1000000000 * * * *\"",
        "\"cron(0 12 * * ? *)\"",
        "\"rate(5 minutes)\"",
        "\"CRON_TZ=UTC 0 0 * * *\"",
        "\"0 0 * * * 2026\"",
        "\"\"",
        "\"*/0 * * * *\"",
    ])
}

fn instant() -> BoxedStrategy<String> {
    pick(&[
        "\"2026-01-01T00:00:00Z\"",
        "2026-01-01T00:00:00Z",
        "2026-01-01T00:00:00",
        "2026-01-01",
        "\"9999-12-31T23:59:59Z\"",
        "\"-009999-01-01T00:00:00Z\"",
        "\"1970-01-01T00:00:00+14:00\"",
        "\"2026-02-30T00:00:00Z\"",
        "\"yesterday\"",
    ])
}

fn text_value() -> BoxedStrategy<String> {
    prop_oneof![
        pick(&[
            "\"\"",
            "\"a\"",
            "\"ünï\"",
            "\"a b\"",
            "\"\\t\"",
            "\"$(rm -rf /)\""
        ]),
        (1usize..300).prop_map(|n| format!("\"{}\"", "x".repeat(n))),
    ]
    .boxed()
}

/// One `key = value` line for a `[defaults]` or `[[job]]` table.
fn entry() -> BoxedStrategy<String> {
    let typed = prop_oneof![
        text_value().prop_map(|v| format!("name = {v}")),
        pick(&["\"daily-report\"", "\"a\"", "\"-x\"", "\"a.b\"", "\"Ω\""])
            .prop_map(|v| format!("name = {v}")),
        schedule().prop_map(|v| format!("schedule = {v}")),
        pick(&[
            "\"UTC\"",
            "\"Europe/Berlin\"",
            "\"America/New_York\"",
            "\"Australia/Lord_Howe\"",
            "\"Mars/Phobos\"",
            "\"utc\"",
            "\"+05:00\"",
            "\"\"",
        ])
        .prop_map(|v| format!("timezone = {v}")),
        pick(&["\"tick\"", "\"dedicated\"", "\"Tick\""]).prop_map(|v| format!("trigger = {v}")),
        (
            pick(&["lease", "starting_deadline", "skew_margin", "stale_after", "timeout"]),
            duration()
        )
            .prop_map(|(k, v)| format!("{k} = {v}")),
        pick(&["\"none\"", "\"latest\"", "\"all\"", "\"ALL\""])
            .prop_map(|v| format!("catch_up = {v}")),
        (pick(&["max_catch_up", "max_concurrency"]), count()).prop_map(|(k, v)| format!("{k} = {v}")),
        pick(&["\"forbid\"", "\"allow\"", "\"replace\"", "\"queue\""])
            .prop_map(|v| format!("overlap = {v}")),
        pick(&["\"at_least_once\"", "\"at_most_once\"", "\"exactly_once\""])
            .prop_map(|v| format!("delivery = {v}")),
        pick(&["\"shift\"", "\"skip\"", "\"shift_always\"", "\"twice\""]).prop_map(|v| format!("dst_gap = {v}")),
        pick(&["\"once\"", "\"twice\"", "\"skip\""]).prop_map(|v| format!("dst_overlap = {v}")),
        pick(&["true", "false", "\"true\""]).prop_map(|v| format!("paused = {v}")),
        (pick(&["start_at", "end_at"]), instant()).prop_map(|(k, v)| format!("{k} = {v}")),
        (count(), duration(), duration(), pick(&["true", "false", "1"])).prop_map(
            |(n, b, m, p)| format!(
                "retry = {{ max_attempts = {n}, backoff = {b}, max_backoff = {m}, past_next_slot = {p} }}"
            )
        ),
        (count(), count())
            .prop_map(|(s, f)| format!("history = {{ succeeded = {s}, failed = {f} }}")),
        prop::collection::vec(text_value(), 0..4)
            .prop_map(|v| format!("command = [{}]", v.join(", "))),
        (
            pick(&[
                "\"https://example.com/h\"",
                "\"http://localhost:8080/x?a=1\"",
                "\"ftp://x\"",
                "\"not a url\"",
                "\"\"",
            ]),
            pick(&["\"GET\"", "\"POST\"", "\"put\"", "\"BREW\"", "\"\""]),
            pick(&["{}", "{ A = \"b\" }", "{ \"\" = \"b\" }", "{ \"A\\nB\" = \"c\" }", "{ A = 1 }"]),
        )
            .prop_map(|(u, m, h)| format!("http = {{ url = {u}, method = {m}, headers = {h} }}")),
        pick(&["{}", "{ MODE = \"fast\" }", "{ \"\" = \"x\" }", "{ \"A=B\" = \"x\" }", "{ A = 1 }"])
            .prop_map(|v| format!("env = {v}")),
    ];
    let key = pick(&[
        "name",
        "schedule",
        "timezone",
        "lease",
        "max_catch_up",
        "retry",
        "history",
        "command",
        "http",
        "env",
        "start_at",
        "unknown_key",
        "retry.max_attempts",
        "\"\"",
    ]);
    prop_oneof![
        6 => typed,
        1 => (key, any_value()).prop_map(|(k, v)| format!("{k} = {v}")),
    ]
    .boxed()
}

/// Entries with valid values only (each valid alone; combinations may
/// still be refused by the cross-checks).
fn good_entry() -> BoxedStrategy<String> {
    pick(&[
        "timezone = \"Europe/Berlin\"",
        "timezone = \"America/New_York\"",
        "timezone = \"Australia/Lord_Howe\"",
        "trigger = \"dedicated\"",
        "trigger = \"tick\"",
        "lease = \"10m\"",
        "starting_deadline = \"1h\"",
        "stale_after = \"3d\"",
        "catch_up = \"none\"",
        "catch_up = \"latest\"",
        "overlap = \"replace\"",
        "delivery = \"at_most_once\"",
        "dst_gap = \"skip\"",
        "dst_overlap = \"twice\"",
        "paused = true",
        "start_at = 2026-01-01T00:00:00Z",
        "end_at = \"9999-12-31T23:59:59Z\"",
        "history = { succeeded = 4294967295, failed = 0 }",
        "retry = { max_attempts = 1 }",
        "command = [\"sh\", \"-c\", \"true\"]",
        "env = { MODE = \"fast\" }",
    ])
}

fn good_schedule() -> BoxedStrategy<String> {
    pick(&[
        "\"* * * * *\"",
        "\"*/5 * * * *\"",
        "\"0 9 * * MON-FRI\"",
        "\"30 2 * * *\"",
        "\"0 0 29 2 *\"",
        "\"0 0 L * *\"",
        "\"0 0 15W * 5#3\"",
        "\"0 0 * * +1-5\"",
        "\"@daily\"",
    ])
}

/// A job table: usually a name (unique, from its index) and a schedule,
/// then entries, mostly valid ones; a key repeated in a table is dropped
/// (TOML refuses it, and that is tested enough by the mutations).
fn job() -> BoxedStrategy<(bool, String, Vec<String>)> {
    (
        prop::bool::weighted(0.9),
        prop_oneof![4 => good_schedule(), 1 => schedule()],
        prop::collection::vec(prop_oneof![3 => good_entry(), 1 => entry()], 0..6),
    )
        .boxed()
}

fn table(header: &str, basic: Option<(usize, &str)>, entries: &[String]) -> String {
    let mut out = format!("{header}\n");
    let mut seen = std::collections::BTreeSet::new();
    if let Some((i, schedule)) = basic {
        out.push_str(&format!("name = \"job-{i}\"\nschedule = {schedule}\n"));
        seen.extend(["name", "schedule"]);
    }
    for e in entries {
        let key = e.split(" = ").next().unwrap_or_default();
        if seen.insert(key) {
            out.push_str(e);
            out.push('\n');
        }
    }
    out
}

fn manifest() -> BoxedStrategy<String> {
    (
        prop::option::of(prop::collection::vec(
            prop_oneof![2 => good_entry(), 1 => entry()],
            0..5,
        )),
        prop::collection::vec(job(), 0..4),
        prop::option::weighted(
            0.2,
            pick(&[
                "[unknown]\n",
                "[defaults]\n",
                "[[defaults]]\n",
                "[job]\n",
                "job = 1\n",
                "[[job]]\n",
                "[[job.x]]\n",
            ]),
        ),
    )
        .prop_map(|(defaults, jobs, extra)| {
            let mut out = String::new();
            if let Some(entries) = defaults {
                out.push_str(&table("[defaults]", None, &entries));
            }
            for (i, (basic, schedule, entries)) in jobs.iter().enumerate() {
                let basic = basic.then_some((i, schedule.as_str()));
                out.push_str(&table("[[job]]", basic, entries));
            }
            if let Some(x) = extra {
                out.push_str(&x);
            }
            out
        })
        .boxed()
}

#[derive(Debug, Clone)]
enum LineEdit {
    Drop(usize),
    Swap(usize, usize),
    Duplicate(usize),
    Splice(usize, String),
    Truncate(usize, usize),
}

fn line_edit() -> impl Strategy<Value = LineEdit> {
    prop_oneof![
        any::<usize>().prop_map(LineEdit::Drop),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| LineEdit::Swap(a, b)),
        any::<usize>().prop_map(LineEdit::Duplicate),
        (any::<usize>(), entry()).prop_map(|(a, e)| LineEdit::Splice(a, e)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| LineEdit::Truncate(a, b)),
    ]
}

fn edit_lines(text: &str, edits: &[LineEdit]) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    for e in edits {
        let n = lines.len().max(1);
        match e {
            LineEdit::Drop(i) if lines.len() > 1 => {
                lines.remove(i % n);
            }
            LineEdit::Drop(_) => {}
            LineEdit::Swap(a, b) => lines.swap(a % n, b % n),
            LineEdit::Duplicate(i) => {
                let l = lines[i % lines.len()].clone();
                lines.insert(i % lines.len(), l);
            }
            LineEdit::Splice(i, entry) => lines.insert(i % (lines.len() + 1), entry.clone()),
            LineEdit::Truncate(i, at) => {
                let l = &mut lines[i % n];
                let cut = l.char_indices().map(|(i, _)| i).nth(at % (l.len() + 1));
                if let Some(cut) = cut {
                    l.truncate(cut);
                }
            }
        }
    }
    lines.join("\n")
}

// ------------------------------------------------------------ properties

proptest! {
    #![proptest_config(config(400))]

    #[test]
    fn key_aware_manifests_give_located_errors_or_round_trip(text in manifest()) {
        check(&text)?;
    }

    #[test]
    fn line_mutations_of_real_manifests(
        base in prop::sample::select(&REAL[..]),
        edits in prop::collection::vec(line_edit(), 1..5),
    ) {
        check(&edit_lines(base, &edits))?;
    }

    #[test]
    fn key_aware_manifests_with_crlf_and_tabs(text in manifest(), tabs in any::<bool>()) {
        let text = text.replace('\n', "\r\n");
        let text = if tabs { text.replace(" = ", "\t=\t") } else { text };
        check(&text)?;
    }
}

/// The repository's own manifests are accepted as they are, and the
/// generator reaches both outcomes (so the properties test something).
#[test]
fn real_manifests_are_accepted_and_the_generator_covers_both_outcomes() {
    for text in REAL {
        assert!(parse_manifest(text, FILE).is_ok());
    }
    let mut runner = proptest::test_runner::TestRunner::new(config(200));
    let (mut ok, mut err) = (0, 0);
    for _ in 0..200 {
        let text = manifest()
            .new_tree(&mut runner)
            .expect("a manifest")
            .current();
        match parse_manifest(&text, FILE) {
            Ok(_) => ok += 1,
            Err(_) => err += 1,
        }
    }
    assert!(ok > 20 && err > 20, "accepted {ok}, refused {err}");
}

/// Runs `parse_manifest` in a thread; `None` if it took over `budget`.
fn parse_bounded(text: &str, budget: Duration) -> Option<bool> {
    let text = text.to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(parse_manifest(&text, FILE).is_ok());
    });
    rx.recv_timeout(budget).ok()
}

/// Found by the long run of `key_aware_manifests_*` (issue 7):
/// `RetryPolicy::max_total_backoff` summed the delay of every retry one by
/// one, so `max_attempts = 4294967295` with `backoff = "0s"` looped 4.3
/// billion times (11–26 s per manifest in a release build) in
/// `cronslot check`, a build.rs precompile, a TOML-reading Worker or a local
/// runner at start. The sum now adds the constant tail at once. (The bound
/// detects a hang; the fixed code takes microseconds.)
#[test]
fn a_huge_max_attempts_is_read_quickly() {
    for (backoff, max_backoff) in [("0s", "2m"), ("1s", "1s")] {
        let text = format!(
            "[[job]]\nname = \"a\"\nschedule = \"0 0 1 1 *\"\nretry = {{ max_attempts = 4294967295, \
             backoff = \"{backoff}\", max_backoff = \"{max_backoff}\" }}\n"
        );
        assert!(
            parse_bounded(&text, Duration::from_secs(5)).is_some(),
            "parse_manifest took over 5 s with backoff {backoff}"
        );
    }
}
