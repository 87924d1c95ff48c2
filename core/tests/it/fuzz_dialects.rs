//! Fuzzing every dialect parser (issue 7, "Reliability").
//!
//! `parse_props.rs` fuzzes the input dialect through `CronExpr::parse`; this
//! file drives `CronExpr::parse_dialect` for all three dialects
//! (Standard, EventBridge, Cloudflare) with:
//!
//! - arbitrary strings and bytes,
//! - strings over the cron alphabet plus each dialect's own tokens
//!   (`cron(`, `rate(`, `at(`, `?`, years, `CRON_TZ=`, huge numbers),
//! - mutated valid expressions of each dialect (a generator per dialect).
//!
//! Properties: no panic; an `Err` carries a column inside the text (1-based,
//! at most one past the end), a one-line message, and a token taken from the
//! text; an `Ok` re-parses from its source to the same expression, and its
//! next and previous fire times are found by a bounded search that returns
//! matching minutes (civil and UTC); every case finishes within
//! [`CASE_BUDGET`]. Two semantic properties tie the dialects together:
//! Cloudflare's weekdays 1-7 are the input dialect's 0-6, and EventBridge
//! reads `cron(f)` as `f`.
//!
//! Case counts keep the file under ~20 s in a debug build; set
//! `PROPTEST_CASES` for a long run (it overrides every block's count).

use std::time::{Duration, Instant};

use cronslot_core::{Civil, CronError, CronExpr, Dialect, Schedule};
use jiff::Timestamp;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

const DIALECTS: [Dialect; 3] = [Dialect::Standard, Dialect::EventBridge, Dialect::Cloudflare];

/// A parse plus the bounded searches must finish within this (debug build,
/// shared machine); a hang shows as a failure, not a stuck CI job.
const CASE_BUDGET: Duration = Duration::from_secs(5);

/// `cases` unless `PROPTEST_CASES` is set (a long run).
fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x7_F022_D1A1),
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    }
}

fn dialect() -> impl Strategy<Value = Dialect> {
    prop::sample::select(&DIALECTS[..])
}

// ------------------------------------------------------------ checks

/// The shape every refusal has, whatever the input.
fn check_error(text: &str, dialect: Dialect, e: &CronError) -> Result<(), TestCaseError> {
    let shown = e.to_string();
    let ctx = || format!("{dialect:?} {text:?}: {e:?}");
    prop_assert!(!shown.contains('\n'), "multi-line message: {}", ctx());
    prop_assert!(!e.message.is_empty(), "no message: {}", ctx());
    prop_assert!(e.column >= 1, "column 0: {}", ctx());
    prop_assert!(
        e.column <= text.chars().count() + 1,
        "column past the end: {}",
        ctx()
    );
    // The token is quoted from the text, so the user can find it.
    prop_assert!(text.contains(&e.token), "token not in the text: {}", ctx());
    Ok(())
}

/// What an accepted expression must do: re-parse to itself and search
/// without panicking or hanging, returning matching minutes.
fn check_expr(text: &str, dialect: Dialect, expr: CronExpr) -> Result<(), TestCaseError> {
    prop_assert_eq!(expr.dialect(), dialect);
    let again = CronExpr::parse_dialect(expr.source(), dialect);
    prop_assert_eq!(again.as_ref(), Ok(&expr), "{:?} {:?}", dialect, text);

    // Civil search, bounded to ten years either side of a fixed minute.
    let from = Civil::new(2026, 6, 1, 0, 0);
    let (lo, hi) = (
        Civil::new(2016, 1, 1, 0, 0),
        Civil::new(2036, 12, 31, 23, 59),
    );
    if let Some(n) = expr.next_civil(from, hi) {
        prop_assert!(
            n >= from && n < hi && expr.matches(n),
            "next {n:?} of {text:?}"
        );
    }
    if let Some(p) = expr.prev_civil(from, lo) {
        prop_assert!(
            p <= from && p >= lo && expr.matches(p),
            "prev {p:?} of {text:?}"
        );
    }
    if expr.never_fires() {
        prop_assert_eq!(expr.next_civil(Civil::MIN, Civil::MAX), None);
    }

    // The real-time search (unbounded API, bounded by the calendar cycle).
    let s = Schedule::utc(expr);
    let t: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    if let Some(n) = s.next_after(t) {
        prop_assert!(n > t && s.is_slot(n), "next_after {n} of {text:?}");
    }
    if let Some(p) = s.prev_before(t) {
        prop_assert!(p < t && s.is_slot(p), "prev_before {p} of {text:?}");
    }
    Ok(())
}

/// Parses `text` in `dialect` and checks whichever outcome, within budget.
fn check(text: &str, dialect: Dialect) -> Result<(), TestCaseError> {
    let started = Instant::now();
    match CronExpr::parse_dialect(text, dialect) {
        Err(e) => check_error(text, dialect, &e)?,
        Ok(expr) => check_expr(text, dialect, expr)?,
    }
    let took = started.elapsed();
    prop_assert!(
        took < CASE_BUDGET,
        "{dialect:?} {text:?} took {took:?} (budget {CASE_BUDGET:?})"
    );
    Ok(())
}

// ------------------------------------------------------------ strategies

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

fn any_case(name: &'static str) -> BoxedStrategy<String> {
    prop_oneof![
        Just(name.to_string()),
        Just(name.to_ascii_lowercase()),
        Just(format!("{}{}", &name[..1], name[1..].to_ascii_lowercase())),
    ]
    .boxed()
}

/// One list item over `min..=max`; `steps` allows `a/s` and `*/s`.
fn item(min: u32, max: u32, steps: bool) -> BoxedStrategy<String> {
    let span = max - min;
    let plain = prop_oneof![
        4 => (min..=max).prop_map(|v| v.to_string()),
        2 => (min..=max, min..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        1 => Just("*".to_string()),
    ];
    if !steps {
        return plain.boxed();
    }
    prop_oneof![
        6 => plain,
        1 => (min..=max, min..=max, 1..=span)
            .prop_map(|(a, b, s)| format!("{}-{}/{s}", a.min(b), a.max(b))),
        1 => (min..=max, 1..=span).prop_map(|(a, s)| format!("{a}/{s}")),
        1 => (1..=span).prop_map(|s| format!("*/{s}")),
    ]
    .boxed()
}

fn list(item: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop::collection::vec(item, 1..=3)
        .prop_map(|v| v.join(","))
        .boxed()
}

fn month_field() -> BoxedStrategy<String> {
    let name = prop::sample::select(&MONTHS[..]).prop_flat_map(any_case);
    prop_oneof![
        3 => Just("*".to_string()),
        3 => list(prop_oneof![3 => item(1, 12, true), 1 => name].boxed()),
    ]
    .boxed()
}

/// Day-of-month items every dialect accepts (`L`, `LW`, `nW` included).
fn dom_items() -> BoxedStrategy<String> {
    let special = prop_oneof![
        Just("L".to_string()),
        Just("LW".to_string()),
        (1u32..=31).prop_map(|d| format!("{d}W")),
    ];
    list(prop_oneof![4 => item(1, 31, true), 1 => special].boxed())
}

/// Day-of-week items in a dialect numbering Sunday `sunday` (0 or 1).
fn dow_items(sunday: u32, steps: bool) -> BoxedStrategy<String> {
    let weekday = prop_oneof![
        (sunday..=sunday + 6).prop_map(|w| w.to_string()),
        prop::sample::select(&DAYS[..]).prop_flat_map(any_case),
    ];
    let special = prop_oneof![
        (weekday.clone(), 1u32..=5).prop_map(|(w, n)| format!("{w}#{n}")),
        weekday.clone().prop_map(|w| format!("{w}#L")),
        weekday.clone().prop_map(|w| format!("{w}L")),
    ];
    list(
        prop_oneof![
            4 => item(sunday, 7, steps),
            1 => weekday,
            1 => special,
        ]
        .boxed(),
    )
}

fn minute_hour() -> BoxedStrategy<(String, String)> {
    (
        prop_oneof![3 => list(item(0, 59, true)), 1 => (0u32..60).prop_map(|m| m.to_string())],
        prop_oneof![3 => list(item(0, 23, true)), 1 => (0u32..24).prop_map(|h| h.to_string())],
    )
        .boxed()
}

/// The input dialect: five fields, Sunday 0 (or 7), `?`, `+`, macros.
fn standard_expr() -> BoxedStrategy<String> {
    let dom = prop_oneof![3 => Just("*".to_string()), 1 => Just("?".to_string()), 3 => dom_items()];
    let dow = prop_oneof![
        3 => Just("*".to_string()),
        1 => Just("?".to_string()),
        3 => dow_items(0, true),
        1 => dow_items(0, true).prop_map(|l| format!("+{l}")),
    ];
    prop_oneof![
        12 => (minute_hour(), dom, month_field(), dow)
            .prop_map(|((mi, h), dom, mo, dow)| format!("{mi} {h} {dom} {mo} {dow}")),
        1 => prop::sample::select(&["@yearly", "@monthly", "@weekly", "@daily", "@hourly"][..])
            .prop_map(str::to_string),
    ]
    .boxed()
}

/// EventBridge: six fields, exactly one day field `?`, Sunday 1, no steps
/// in day-of-week, a year field; written bare or as `cron(...)`.
fn eventbridge_expr() -> BoxedStrategy<String> {
    let year_item = prop_oneof![
        3 => (1970u32..=2199).prop_map(|y| y.to_string()),
        2 => (2020u32..=2199, 2020u32..=2199)
            .prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        1 => (1970u32..=2199, 1u32..50).prop_map(|(a, s)| format!("{a}/{s}")),
        1 => (1u32..50).prop_map(|s| format!("*/{s}")),
    ];
    let year = prop_oneof![3 => Just("*".to_string()), 2 => list(year_item.boxed())];
    let days = prop_oneof![
        (
            prop_oneof![Just("*".to_string()), dom_items()],
            Just("?".to_string())
        ),
        (
            Just("?".to_string()),
            prop_oneof![
                Just("*".to_string()),
                Just("L".to_string()),
                dow_items(1, false)
            ]
        ),
    ];
    (minute_hour(), days, month_field(), year, any::<bool>())
        .prop_map(|((mi, h), (dom, dow), mo, y, wrapped)| {
            let body = format!("{mi} {h} {dom} {mo} {dow} {y}");
            if wrapped {
                format!("cron({body})")
            } else {
                body
            }
        })
        .boxed()
}

/// Cloudflare: five fields, Sunday 1 (weekdays 1-7), no `?`, no macros.
fn cloudflare_expr() -> BoxedStrategy<String> {
    let dom = prop_oneof![2 => Just("*".to_string()), 3 => dom_items()];
    let dow = prop_oneof![2 => Just("*".to_string()), 3 => dow_items(1, true)];
    (minute_hour(), dom, month_field(), dow)
        .prop_map(|((mi, h), dom, mo, dow)| format!("{mi} {h} {dom} {mo} {dow}"))
        .boxed()
}

fn valid_expr(d: Dialect) -> BoxedStrategy<String> {
    match d {
        Dialect::Standard => standard_expr(),
        Dialect::EventBridge => eventbridge_expr(),
        Dialect::Cloudflare => cloudflare_expr(),
    }
}

const ALPHABET: &[char] = &[
    '0', '1', '2', '5', '7', '9', '*', '/', ',', '-', '#', '?', 'L', 'W', 'l', 'w', '+', '@', '(',
    ')', ' ', '\t', '\n', 'M', 'O', 'N', 'J', 'A', 'x', 'é', '\u{0}', '\u{a0}',
];

const TOKENS: &[&str] = &[
    "MON",
    "sun",
    "JAN",
    "dec",
    "LW",
    "L",
    "5#3",
    "7#L",
    "1-5",
    "1-7",
    "*/15",
    "@daily",
    "@reboot",
    "?",
    "+",
    " ",
    "0",
    "7",
    "8",
    "60",
    "1970",
    "2199",
    "2200",
    "1-1000000000",
    "99999999999",
    "4294967296",
    "*/4294967295",
    "cron(",
    "cron(0 12 * * ? *)",
    "rate(5 minutes)",
    "rate(",
    "at(2026-01-01T00:00:00)",
    "CRON_TZ=Europe/Berlin ",
    "TZ=UTC ",
    ")",
];

fn cron_alphabet() -> BoxedStrategy<String> {
    let token = prop_oneof![
        prop::sample::select(ALPHABET).prop_map(|c| c.to_string()),
        prop::sample::select(TOKENS).prop_map(str::to_string),
    ];
    prop_oneof![
        prop::collection::vec(token, 0..20).prop_map(|v| v.concat()),
        "[0-9*/,#?LlWw+@() \t-]{0,40}",
    ]
    .boxed()
}

#[derive(Debug, Clone)]
enum Edit {
    Delete(usize),
    Insert(usize, char),
    Replace(usize, char),
    InsertToken(usize, &'static str),
    Duplicate(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0usize..80).prop_map(Edit::Delete),
        (0usize..80, prop::sample::select(ALPHABET)).prop_map(|(i, c)| Edit::Insert(i, c)),
        (0usize..80, prop::sample::select(ALPHABET)).prop_map(|(i, c)| Edit::Replace(i, c)),
        (0usize..80, prop::sample::select(TOKENS)).prop_map(|(i, t)| Edit::InsertToken(i, t)),
        (0usize..80, 1usize..10).prop_map(|(i, n)| Edit::Duplicate(i, n)),
    ]
}

fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        let n = chars.len().max(1);
        match *e {
            Edit::Delete(i) if !chars.is_empty() => {
                chars.remove(i % n);
            }
            Edit::Insert(i, c) => chars.insert(i % (chars.len() + 1), c),
            Edit::Replace(i, c) if !chars.is_empty() => chars[i % n] = c,
            Edit::InsertToken(i, t) => {
                let at = i % (chars.len() + 1);
                chars.splice(at..at, t.chars());
            }
            Edit::Duplicate(i, len) => {
                let start = (i % n).min(chars.len());
                let end = (start + len).min(chars.len());
                let piece = chars[start..end].to_vec();
                chars.splice(end..end, piece);
            }
            Edit::Delete(_) | Edit::Replace(..) => {}
        }
    }
    chars.into_iter().collect()
}

fn mutated_expr() -> BoxedStrategy<(Dialect, String)> {
    dialect()
        .prop_flat_map(|d| (Just(d), valid_expr(d), prop::collection::vec(edit(), 1..4)))
        .prop_map(|(d, text, edits)| (d, mutate(&text, &edits)))
        .boxed()
}

// ------------------------------------------------------------ properties

proptest! {
    #![proptest_config(config(1_500))]

    #[test]
    fn every_dialect_survives_arbitrary_strings(d in dialect(), text in any::<String>()) {
        check(&text, d)?;
    }

    #[test]
    fn every_dialect_survives_arbitrary_bytes(
        d in dialect(),
        bytes in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        check(&String::from_utf8_lossy(&bytes), d)?;
    }

    #[test]
    fn every_dialect_survives_the_cron_alphabet(d in dialect(), text in cron_alphabet()) {
        check(&text, d)?;
    }

    #[test]
    fn every_dialect_survives_mutated_expressions((d, text) in mutated_expr()) {
        check(&text, d)?;
    }

    /// Cross-dialect: any dialect's valid text, read by every dialect.
    #[test]
    fn every_dialect_survives_the_other_dialects(
        (src, text) in dialect().prop_flat_map(|d| (Just(d), valid_expr(d))),
        d in dialect(),
    ) {
        let _ = src;
        check(&text, d)?;
    }
}

proptest! {
    #![proptest_config(config(600))]

    #[test]
    fn generated_expressions_of_each_dialect_parse(
        (d, text) in dialect().prop_flat_map(|d| (Just(d), valid_expr(d))),
    ) {
        prop_assert!(
            CronExpr::parse_dialect(&text, d).is_ok(),
            "{d:?} refused {text:?}: {}",
            CronExpr::parse_dialect(&text, d).unwrap_err()
        );
        check(&text, d)?;
    }

    /// Cloudflare numbers weekdays 1-7 from Sunday, the input dialect 0-6:
    /// the same days written in each numbering mean the same weekdays.
    #[test]
    fn cloudflare_weekdays_are_the_input_dialects_plus_one(
        (mi, h) in minute_hour(),
        items in prop::collection::vec(
            prop_oneof![
                (1u32..=7).prop_map(|w| (w, w, 1)),
                (1u32..=7, 1u32..=7).prop_map(|(a, b)| (a.min(b), a.max(b), 1)),
                (1u32..=7, 1u32..=7, 1u32..=6).prop_map(|(a, b, s)| (a.min(b), a.max(b), s)),
            ],
            1..=3,
        ),
    ) {
        let show = |shift: u32| {
            items
                .iter()
                .map(|&(a, b, s)| match (a == b, s) {
                    (true, _) => format!("{}", a - shift),
                    (false, 1) => format!("{}-{}", a - shift, b - shift),
                    (false, s) => format!("{}-{}/{s}", a - shift, b - shift),
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        let cf = format!("{mi} {h} * * {}", show(0));
        let std = format!("{mi} {h} * * {}", show(1));
        let a = CronExpr::parse_dialect(&cf, Dialect::Cloudflare);
        let b = CronExpr::parse_dialect(&std, Dialect::Standard);
        match (a, b) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(a.day_of_week(), b.day_of_week(), "{} vs {}", cf, std);
                prop_assert_eq!(a.minutes(), b.minutes());
                prop_assert_eq!(a.hours(), b.hours());
            }
            (a, b) => prop_assert!(false, "{cf:?} -> {a:?}, {std:?} -> {b:?}"),
        }
    }

    /// EventBridge reads `cron(f)` exactly as `f`, and refuses `rate(...)`
    /// and `at(...)` with a column and a hint instead of reading them.
    #[test]
    fn eventbridge_wrapper_is_transparent(text in eventbridge_expr()) {
        let body = text
            .strip_prefix("cron(")
            .and_then(|t| t.strip_suffix(')'))
            .unwrap_or(&text)
            .to_string();
        let wrapped = CronExpr::parse_dialect(&format!("cron({body})"), Dialect::EventBridge)
            .expect("wrapped");
        let bare = CronExpr::parse_dialect(&body, Dialect::EventBridge).expect("bare");
        prop_assert_eq!(wrapped.minutes(), bare.minutes());
        prop_assert_eq!(wrapped.hours(), bare.hours());
        prop_assert_eq!(wrapped.months(), bare.months());
        prop_assert_eq!(wrapped.day_of_month(), bare.day_of_month());
        prop_assert_eq!(wrapped.day_of_week(), bare.day_of_week());
        prop_assert_eq!(wrapped.years(), bare.years());
        for other in [format!("rate({body})"), format!("at({body})")] {
            let e = CronExpr::parse_dialect(&other, Dialect::EventBridge).unwrap_err();
            check_error(&other, Dialect::EventBridge, &e)?;
            prop_assert!(e.hint.is_some(), "{other:?}: {e}");
        }
    }
}

/// Numbers far outside a field are refused by value, never looped over or
/// allocated for (`1-1000000000`, `*/4294967296`, a 10,000-digit year), and
/// quickly.
#[test]
fn huge_numbers_are_refused_at_their_column() {
    let digits = "9".repeat(10_000);
    let cases: Vec<(Dialect, String, usize)> = vec![
        (Dialect::Standard, "1-1000000000 * * * *".into(), 3),
        (Dialect::Standard, "*/4294967296 * * * *".into(), 3),
        (Dialect::Cloudflare, format!("0 0 * * 1-{digits}"), 11),
        (Dialect::EventBridge, "0 0 ? * * 1970-4294967296".into(), 16),
        (Dialect::EventBridge, format!("0 0 ? * * {digits}"), 11),
        (Dialect::EventBridge, format!("0 0 ? * * 1970/{digits}"), 16),
    ];
    for (d, text, column) in cases {
        let started = Instant::now();
        let e = CronExpr::parse_dialect(&text, d).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(1), "{d:?} slow");
        assert_eq!(e.column, column, "{d:?} {e}");
        assert!(text.contains(&e.token), "{d:?} {e:?}");
    }
    // A year step as large as u32 allows selects its start only, at once.
    let e = CronExpr::parse_dialect("0 0 ? * * 2000/4294967295", Dialect::EventBridge).unwrap();
    assert!(
        e.years()
            .is_some_and(|y| y.contains(2000) && !y.contains(2001))
    );
}

/// A very long list is read in time linear in its length.
#[test]
fn long_lists_are_linear() {
    for d in DIALECTS {
        let list = vec!["1"; 50_000].join(",");
        let text = match d {
            Dialect::EventBridge => format!("{list} 0 ? * * *"),
            _ => format!("{list} 0 * * *"),
        };
        let started = Instant::now();
        let e = CronExpr::parse_dialect(&text, d).expect("a long list of one minute");
        assert!(started.elapsed() < Duration::from_secs(2), "{d:?}");
        assert_eq!(e.minutes(), 1 << 1);
        let bad = format!("{text},");
        let started = Instant::now();
        assert!(CronExpr::parse_dialect(&bad, d).is_err());
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{d:?} error path"
        );
    }
}

/// Regression (found by `every_dialect_survives_mutated_expressions`): the
/// day of a lowercase `…w` item was quoted uppercased (`"L10"` for
/// `l10W`), a token the user never wrote.
#[test]
fn nearest_weekday_errors_quote_the_day_as_written() {
    for d in DIALECTS {
        let text = match d {
            Dialect::EventBridge => "0 0 l10W * ? *",
            _ => "0 0 l10W * *",
        };
        let e = CronExpr::parse_dialect(text, d).unwrap_err();
        assert_eq!((e.token.as_str(), e.column), ("l10", 5), "{d:?}: {e}");
    }
}
