//! Property tests of the parser and the schedule search.
//!
//! - `CronExpr::parse` never panics: on arbitrary strings, on strings over
//!   the cron alphabet, on mutated valid expressions; its errors always carry
//!   a column inside the text and a one-line message.
//! - Every expression of the generated dialect parses.
//! - `next_after`/`prev_before` never panic, return strictly later/earlier
//!   slots that `is_slot` accepts, and are consistent with each other, in
//!   zones with unusual DST (30- and 45-minute offsets, Ramadan, a skipped day).
//! - The search agrees with a minute-by-minute scan of the timeline built
//!   from jiff's offsets and `CronExpr::matches` (an oracle that shares none
//!   of the segment logic of `schedule.rs`), for every DST policy.
//! - Never-firing expressions return `None` at once.
//!
//! The runner uses a fixed seed, so runs are reproducible.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cronslot_core::{Civil, CronExpr, DstGap, DstOverlap, DstPolicy, Schedule, Zone};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

const ZONES: [&str; 8] = [
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Pacific/Chatham",
    "Africa/Casablanca",
    "Pacific/Apia",
    "UTC",
];

const POLICIES: [DstPolicy; 6] = [
    DstPolicy {
        gap: DstGap::Shift,
        overlap: DstOverlap::Once,
    },
    DstPolicy {
        gap: DstGap::Skip,
        overlap: DstOverlap::Once,
    },
    DstPolicy {
        gap: DstGap::Shift,
        overlap: DstOverlap::Twice,
    },
    DstPolicy {
        gap: DstGap::Skip,
        overlap: DstOverlap::Twice,
    },
    DstPolicy {
        gap: DstGap::ShiftAlways,
        overlap: DstOverlap::Once,
    },
    DstPolicy {
        gap: DstGap::ShiftAlways,
        overlap: DstOverlap::Twice,
    },
];

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x00C0_FFEE_2026),
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    }
}

fn ts(second: i64) -> Timestamp {
    Timestamp::from_second(second).expect("in range")
}

fn sec(s: &str) -> i64 {
    s.parse::<Timestamp>().expect("timestamp").as_second()
}

// ------------------------------------------------------------ strategies

fn names_case(name: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![
        Just(name.to_string()),
        Just(name.to_ascii_lowercase()),
        Just(format!("{}{}", &name[..1], name[1..].to_ascii_lowercase())),
    ]
}

/// One list item over `min..=max`: value, range, stepped range, `a/s`, `*`,
/// `*/s`. Steps stay below the field's width (wider ones are refused).
fn item(min: u32, max: u32) -> BoxedStrategy<String> {
    let span = max - min;
    prop_oneof![
        4 => (min..=max).prop_map(|v| v.to_string()),
        2 => (min..=max, min..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        1 => (min..=max, min..=max, 1..=span)
            .prop_map(|(a, b, s)| format!("{}-{}/{s}", a.min(b), a.max(b))),
        1 => (min..=max, 1..=span).prop_map(|(a, s)| format!("{a}/{s}")),
        1 => Just("*".to_string()),
        1 => (1..=span).prop_map(|s| format!("*/{s}")),
    ]
    .boxed()
}

fn list(item: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop::collection::vec(item, 1..=3)
        .prop_map(|v| v.join(","))
        .boxed()
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

fn month_name() -> BoxedStrategy<String> {
    prop::sample::select(&MONTHS[..])
        .prop_flat_map(names_case)
        .boxed()
}

fn day_name() -> BoxedStrategy<String> {
    prop::sample::select(&DAYS[..])
        .prop_flat_map(names_case)
        .boxed()
}

fn minute_field() -> BoxedStrategy<String> {
    prop_oneof![
        3 => list(item(0, 59)),
        1 => (0u32..60).prop_map(|m| m.to_string()),
    ]
    .boxed()
}

fn hour_field() -> BoxedStrategy<String> {
    prop_oneof![
        3 => list(item(0, 23)),
        // DST changes happen between 00:00 and 04:00 local in these zones.
        2 => (0u32..5).prop_map(|h| h.to_string()),
    ]
    .boxed()
}

fn dom_field() -> BoxedStrategy<String> {
    let special = prop_oneof![
        Just("L".to_string()),
        Just("LW".to_string()),
        Just("lw".to_string()),
        (1u32..=31, prop::bool::ANY)
            .prop_map(|(d, up)| format!("{d}{}", if up { "W" } else { "w" })),
    ];
    prop_oneof![
        4 => Just("*".to_string()),
        1 => Just("?".to_string()),
        4 => list(prop_oneof![3 => item(1, 31), 2 => special].boxed()),
    ]
    .boxed()
}

fn month_field() -> BoxedStrategy<String> {
    let named_range = (0usize..12, 0usize..12).prop_flat_map(|(a, b)| {
        let (a, b) = (a.min(b), a.max(b));
        (names_case(MONTHS[a]), names_case(MONTHS[b])).prop_map(|(x, y)| format!("{x}-{y}"))
    });
    prop_oneof![
        4 => Just("*".to_string()),
        3 => list(prop_oneof![3 => item(1, 12), 1 => month_name(), 1 => named_range.boxed()].boxed()),
    ]
    .boxed()
}

fn dow_field() -> BoxedStrategy<String> {
    // Names in a range go upwards and never end in SUN (Sunday is 0).
    let named_range = (1usize..7, 1usize..7).prop_flat_map(|(a, b)| {
        let (a, b) = (a.min(b), a.max(b));
        (names_case(DAYS[a]), names_case(DAYS[b])).prop_map(|(x, y)| format!("{x}-{y}"))
    });
    let weekday = prop_oneof![(0u32..=7).prop_map(|w| w.to_string()), day_name()];
    let special = prop_oneof![
        (weekday.clone(), 1u32..=5).prop_map(|(w, n)| format!("{w}#{n}")),
        (weekday.clone(), prop::bool::ANY)
            .prop_map(|(w, up)| format!("{w}#{}", if up { "L" } else { "l" })),
        weekday.prop_map(|w| format!("{w}L")),
    ];
    let items = list(
        prop_oneof![
            3 => item(0, 7),
            1 => day_name(),
            1 => named_range.boxed(),
            2 => special,
        ]
        .boxed(),
    );
    prop_oneof![
        4 => Just("*".to_string()),
        1 => Just("?".to_string()),
        3 => items.clone(),
        1 => items.prop_map(|l| format!("+{l}")),
    ]
    .boxed()
}

/// A valid expression of the input dialect.
fn valid_expr() -> BoxedStrategy<String> {
    let fields = (
        minute_field(),
        hour_field(),
        dom_field(),
        month_field(),
        dow_field(),
    )
        .prop_map(|(mi, h, dom, mo, dow)| format!("{mi} {h} {dom} {mo} {dow}"));
    prop_oneof![
        12 => fields,
        1 => prop::sample::select(&[
            "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
        ][..])
        .prop_map(str::to_string),
    ]
    .boxed()
}

/// Expressions that can never fire: days the chosen months never have.
fn never_expr() -> BoxedStrategy<String> {
    let impossible = prop_oneof![
        (
            prop::sample::select(&["30", "31", "30,31", "30W", "31W", "30-31"][..]),
            Just("2")
        ),
        (
            prop::sample::select(&["31", "31W"][..]),
            prop::sample::select(&["4", "6", "9", "11", "4,6", "APR,JUN,SEP,NOV", "2,4"][..])
        ),
    ];
    (
        minute_field(),
        hour_field(),
        impossible,
        prop::sample::select(&["*", "?", "+MON", "+*", "+1-5", "+SUN#1"][..]),
    )
        .prop_map(|(mi, h, (dom, mo), dow)| format!("{mi} {h} {dom} {mo} {dow}"))
        .boxed()
}

const ALPHABET: &[char] = &[
    '0', '1', '2', '3', '5', '7', '9', '*', '/', ',', '-', '#', '?', 'L', 'W', 'l', 'w', '+', '@',
    ' ', '\t', 'M', 'O', 'N', 'J', 'A', 'x', 'é',
];

fn cron_alphabet() -> BoxedStrategy<String> {
    let token = prop_oneof![
        prop::sample::select(ALPHABET).prop_map(|c| c.to_string()),
        prop::sample::select(
            &[
                "MON",
                "sun",
                "JAN",
                "dec",
                "LW",
                "L",
                "5#3",
                "1-5",
                "*/15",
                "@daily",
                "@reboot",
                "@hourly",
                "?",
                "+",
                " ",
                "  ",
                "99999999999",
                "0",
                "60",
                "cron(",
            ][..]
        )
        .prop_map(str::to_string),
    ];
    prop_oneof![
        prop::collection::vec(token, 0..16).prop_map(|v| v.concat()),
        "[0-9*/,#?LlWw+@ \t-]{0,30}",
    ]
    .boxed()
}

#[derive(Debug, Clone)]
enum Edit {
    Delete(usize),
    Insert(usize, char),
    Replace(usize, char),
    Duplicate(usize, usize),
}

fn mutated_expr() -> BoxedStrategy<String> {
    let edit = prop_oneof![
        (0usize..64).prop_map(Edit::Delete),
        (0usize..64, prop::sample::select(ALPHABET)).prop_map(|(i, c)| Edit::Insert(i, c)),
        (0usize..64, prop::sample::select(ALPHABET)).prop_map(|(i, c)| Edit::Replace(i, c)),
        (0usize..64, 1usize..8).prop_map(|(i, n)| Edit::Duplicate(i, n)),
    ];
    (valid_expr(), prop::collection::vec(edit, 1..4))
        .prop_map(|(text, edits)| {
            let mut chars: Vec<char> = text.chars().collect();
            for e in edits {
                let n = chars.len().max(1);
                match e {
                    Edit::Delete(i) if !chars.is_empty() => {
                        chars.remove(i % n);
                    }
                    Edit::Delete(_) => {}
                    Edit::Insert(i, c) => chars.insert(i % (chars.len() + 1), c),
                    Edit::Replace(i, c) if !chars.is_empty() => chars[i % n] = c,
                    Edit::Replace(..) => {}
                    Edit::Duplicate(i, len) => {
                        let start = i % n;
                        let end = (start + len).min(chars.len());
                        let piece: Vec<char> = chars[start.min(end)..end].to_vec();
                        for (k, c) in piece.into_iter().enumerate() {
                            chars.insert(end + k, c);
                        }
                    }
                }
            }
            chars.into_iter().collect()
        })
        .boxed()
}

/// Transitions of each zone in 1850-2100 (UTC has none): the local mean
/// times with offsets in seconds, Apia's repeated day of 1892 and skipped
/// day of 2011, today's rules and their continuation.
fn transitions(zone: usize) -> &'static [i64] {
    static ALL: OnceLock<Vec<Vec<i64>>> = OnceLock::new();
    &ALL.get_or_init(|| {
        let (lo, hi) = (sec("1850-01-01T00:00:00Z"), sec("2100-01-01T00:00:00Z"));
        ZONES
            .iter()
            .map(|z| {
                TimeZone::get(z)
                    .unwrap()
                    .following(ts(lo))
                    .map(|t| t.timestamp().as_second())
                    .take_while(|s| *s < hi)
                    .collect()
            })
            .collect()
    })[zone]
}

/// A zone and an instant in it: near a transition (exactly, a second
/// either side, within three hours) or anywhere in 1850-2100.
fn zone_and_instant() -> BoxedStrategy<(usize, i64)> {
    let (lo, hi) = (sec("1850-01-01T00:00:00Z"), sec("2100-01-01T00:00:00Z"));
    (
        0..ZONES.len(),
        0u8..4,
        any::<prop::sample::Index>(),
        -3 * 3600i64..3 * 3600,
        lo..hi,
    )
        .prop_map(|(zone, how, index, delta, anywhere)| {
            let tr = transitions(zone);
            let at = match (how, tr.is_empty()) {
                (_, true) | (0, _) => anywhere,
                (1, _) => tr[index.index(tr.len())],
                (2, _) => tr[index.index(tr.len())] + if delta < 0 { -1 } else { 1 },
                _ => tr[index.index(tr.len())] + delta,
            };
            (zone, at)
        })
        .boxed()
}

fn schedule(text: &str, zone: usize, policy: usize) -> Schedule {
    Schedule::new(
        CronExpr::parse(text).unwrap_or_else(|e| panic!("valid {text:?} refused: {e}")),
        Zone::get(ZONES[zone]).unwrap(),
        POLICIES[policy],
    )
}

/// Checks an error's shape for any refused input.
fn check_error(text: &str, e: &cronslot_core::CronError) -> Result<(), TestCaseError> {
    let shown = e.to_string();
    prop_assert!(!shown.contains('\n'), "{text:?}: {shown:?}");
    prop_assert!(e.column >= 1, "{text:?}: column {}", e.column);
    prop_assert!(
        e.column <= text.chars().count() + 1,
        "{text:?}: column {} past the end",
        e.column
    );
    Ok(())
}

// ------------------------------------------------------------ parser

proptest! {
    #![proptest_config(config(3_000))]

    #[test]
    fn parse_never_panics_on_arbitrary_strings(text in any::<String>()) {
        if let Err(e) = CronExpr::parse(&text) {
            check_error(&text, &e)?;
        }
    }

    #[test]
    fn parse_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..48)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = CronExpr::parse(&text) {
            check_error(&text, &e)?;
        }
    }

    #[test]
    fn parse_never_panics_on_the_cron_alphabet(text in cron_alphabet()) {
        match CronExpr::parse(&text) {
            Err(e) => check_error(&text, &e)?,
            // Whatever parses can be searched.
            Ok(expr) => {
                let s = Schedule::utc(expr);
                let t = ts(sec("2026-06-01T00:00:00Z"));
                if let Some(n) = s.next_after(t) {
                    prop_assert!(n > t);
                }
                if let Some(p) = s.prev_before(t) {
                    prop_assert!(p < t);
                }
            }
        }
    }

    #[test]
    fn parse_never_panics_on_mutated_expressions(text in mutated_expr()) {
        match CronExpr::parse(&text) {
            Err(e) => check_error(&text, &e)?,
            Ok(expr) => {
                let s = Schedule::new(expr, Zone::get("America/New_York").unwrap(), DstPolicy::default());
                let t = ts(sec("2026-03-08T06:30:00Z"));
                if let Some(n) = s.next_after(t) {
                    prop_assert!(n > t && s.is_slot(n));
                }
                if let Some(p) = s.prev_before(t) {
                    prop_assert!(p < t && s.is_slot(p));
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(config(1_000))]

    #[test]
    fn generated_expressions_parse(text in valid_expr()) {
        let e = CronExpr::parse(&text);
        prop_assert!(e.is_ok(), "{text:?}: {}", e.unwrap_err());
        // Parsing is deterministic and keeps the source.
        let e = e.unwrap();
        prop_assert_eq!(e.source(), text.trim());
        prop_assert_eq!(CronExpr::parse(&text).unwrap(), e);
    }
}

// ------------------------------------------------------------ search

proptest! {
    #![proptest_config(config(400))]

    #[test]
    fn search_is_ordered_and_consistent(
        text in valid_expr(),
        (zone, at) in zone_and_instant(),
        policy in 0..POLICIES.len(),
        frac in 0u32..3,
    ) {
        let s = schedule(&text, zone, policy);
        // Whole seconds, and instants with a fraction of a second.
        let t = ts(at).checked_add(jiff::SignedDuration::from_millis(i64::from(frac) * 400)).unwrap();
        let next = s.next_after(t);
        let prev = s.prev_before(t);
        if let Some(n) = next {
            prop_assert!(n > t, "next {n} not after {t}");
            prop_assert!(s.is_slot(n), "next {n} is not a slot");
            prop_assert_eq!(n.subsec_nanosecond(), 0);
            // No slot between t and next: the slot before next is at or before t.
            if let Some(p) = s.prev_before(n) {
                prop_assert!(p <= t, "prev_before(next_after({t})) = {p}");
            }
        }
        if let Some(p) = prev {
            prop_assert!(p < t, "prev {p} not before {t}");
            prop_assert!(s.is_slot(p), "prev {p} is not a slot");
            let after = s.next_after(p);
            prop_assert!(after.is_some());
            prop_assert!(after.unwrap() >= t, "next_after(prev_before({t})) = {:?}", after);
            if s.is_slot(t) {
                prop_assert_eq!(after, Some(t));
            }
        }
        // A schedule that fires fires on both sides of any instant in range.
        prop_assert_eq!(next.is_some() || prev.is_some(), !s.never_fires());
        // Iteration is strictly increasing, and the same as stepping next_after.
        let mut last = t;
        for o in s.iter_after(t).take(30) {
            prop_assert!(o.instant > last);
            prop_assert_eq!(s.next_after(last), Some(o.instant));
            last = o.instant;
        }
    }

    #[test]
    fn search_agrees_with_a_minute_scan(
        text in valid_expr(),
        (zone, at) in zone_and_instant(),
        policy in 0..POLICIES.len(),
    ) {
        let s = schedule(&text, zone, policy);
        let tz = TimeZone::get(ZONES[zone]).unwrap();
        let window = 36 * 3600;
        let timeline = Timeline::new(&tz, at - window - 3600, at + window + 3600);
        let candidates = timeline.candidates(at - window, at + window);
        let is_slot = |i: &&i64| timeline.is_slot(s.cron(), POLICIES[policy], **i);
        let expected_next = candidates.iter().filter(|i| **i > at).find(is_slot).copied();
        let next = s.next_after(ts(at)).map(|n| n.as_second());
        match expected_next {
            Some(e) => prop_assert_eq!(next, Some(e), "next after {}", ts(at)),
            None => prop_assert!(next.is_none_or(|n| n > at + window), "next after {}: {:?}", ts(at), next),
        }
        let expected_prev = candidates.iter().rev().filter(|i| **i < at).find(is_slot).copied();
        let prev = s.prev_before(ts(at)).map(|p| p.as_second());
        match expected_prev {
            Some(e) => prop_assert_eq!(prev, Some(e), "prev before {}", ts(at)),
            None => prop_assert!(prev.is_none_or(|p| p < at - window), "prev before {}: {:?}", ts(at), prev),
        }
    }

    #[test]
    fn never_firing_returns_none_at_once(
        text in never_expr(),
        (zone, at) in zone_and_instant(),
        policy in 0..POLICIES.len(),
    ) {
        let started = Instant::now();
        let s = schedule(&text, zone, policy);
        prop_assert!(s.never_fires(), "{text}");
        prop_assert_eq!(s.next_after(ts(at)), None);
        prop_assert_eq!(s.prev_before(ts(at)), None);
        prop_assert_eq!(s.iter_after(ts(at)).next(), None);
        prop_assert!(s.gap_skips(ts(at), ts(at + 10 * 365 * 86_400)).is_empty());
        prop_assert!(started.elapsed() < Duration::from_millis(500), "{text}: {:?}", started.elapsed());
    }
}

/// Rare but possible schedules are found (the search is bounded, not short).
#[test]
fn rare_schedules_are_found() {
    for (text, after, expected) in [
        ("0 0 29 2 *", "2097-01-01T00:00:00Z", "2104-02-29T00:00:00Z"),
        (
            "0 0 29 2 +MON",
            "2016-03-01T00:00:00Z",
            "2044-02-29T00:00:00Z",
        ),
        (
            "0 0 29 2 +SUN#5",
            "2004-03-01T00:00:00Z",
            "2032-02-29T00:00:00Z",
        ),
        (
            "59 23 31 12 +FRI#L",
            "2026-01-01T00:00:00Z",
            "2027-12-31T23:59:00Z",
        ),
    ] {
        let s = Schedule::utc(CronExpr::parse(text).unwrap());
        let started = Instant::now();
        assert_eq!(
            s.next_after(after.parse().unwrap()).map(|t| t.to_string()),
            Some(expected.to_string()),
            "{text}"
        );
        assert!(started.elapsed() < Duration::from_millis(500));
    }
}

// ------------------------------------------------------------ the oracle

/// A zone's offsets over a window, from jiff, and the slot rule of
/// docs/design.md §5 stated per minute:
/// - a minute-aligned instant whose local time matches is a slot, except
///   that a fixed-time expression under `once` skips the second pass of an
///   overlap;
/// - under `shift`, a forward transition is a slot of a fixed-time
///   expression when some local minute inside its gap matches.
struct Timeline {
    /// `(from, offset)`: the offset in force from `from` on; sorted.
    segments: Vec<(i64, i32)>,
}

impl Timeline {
    fn new(tz: &TimeZone, lo: i64, hi: i64) -> Timeline {
        let mut segments = vec![(i64::MIN, tz.to_offset(ts(lo)).seconds())];
        for tr in tz.following(ts(lo)) {
            let at = tr.timestamp().as_second();
            if at > hi {
                break;
            }
            segments.push((at, tr.offset().seconds()));
        }
        Timeline { segments }
    }

    /// The instants in `lo..=hi` that can be slots, in order: those on a
    /// local minute boundary (not always a UTC one: local mean times have
    /// offsets in seconds) and the transitions.
    fn candidates(&self, lo: i64, hi: i64) -> Vec<i64> {
        let mut out = Vec::new();
        for (k, &(from, offset)) in self.segments.iter().enumerate() {
            let end = self.segments.get(k + 1).map_or(i64::MAX, |s| s.0);
            let start = from.max(lo);
            if start > hi || end <= start {
                continue;
            }
            if from >= lo {
                out.push(from);
            }
            let mut i = start + (-(start + i64::from(offset))).rem_euclid(60);
            while i < end && i <= hi {
                out.push(i);
                i += 60;
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The segment index in force at `i`.
    fn segment(&self, i: i64) -> usize {
        self.segments.partition_point(|(from, _)| *from <= i) - 1
    }

    fn is_slot(&self, expr: &CronExpr, policy: DstPolicy, i: i64) -> bool {
        let k = self.segment(i);
        let (from, offset) = self.segments[k];
        let local = i + i64::from(offset);
        let fixed = !expr.is_interval_like();
        if local.rem_euclid(60) == 0 && expr.matches(Civil::from_minutes(local.div_euclid(60))) {
            // Second pass: the previous segment had a larger offset and its
            // wall clock already showed this local time.
            let second_pass = k > 0 && {
                let before = self.segments[k - 1].1;
                before > offset && local < from + i64::from(before)
            };
            if !(second_pass && fixed && policy.overlap == DstOverlap::Once) {
                return true;
            }
        }
        if fixed && policy.gap != DstGap::Skip && from == i && k > 0 {
            let before = self.segments[k - 1].1;
            // Vixie's rule: a jump of three hours or more is a clock change,
            // whose slots only shift_always runs.
            let clock_change = offset - before >= 3 * 3600;
            if offset > before && (policy.gap == DstGap::ShiftAlways || !clock_change) {
                let ceil = |x: i64| -(-x).div_euclid(60);
                let first = ceil(i + i64::from(before));
                let end = ceil(i + i64::from(offset));
                return (first..end).any(|m| expr.matches(Civil::from_minutes(m)));
            }
        }
        false
    }
}

/// At the ends of `Timestamp`'s range the search returns `None` instead of
/// a clamped instant that is not a slot (and never panics).
#[test]
fn extreme_instants() {
    let max = Timestamp::MAX.as_second();
    let min = Timestamp::MIN.as_second();
    let edges = [
        Timestamp::MIN,
        Timestamp::MAX,
        ts(min + 1),
        ts(max - 1),
        ts(min + 86_400),
        ts(max - 86_400),
        ts(max - 30 * 3600),
    ];
    let exprs = [
        "* * * * *",
        "0 0 * * *",
        "30 2 * * *",
        "0 0 L * *",
        "0 0 29 2 *",
        "59 23 31 12 *",
        "*/7 */5 * * *",
    ];
    let zones = [
        "UTC",
        "America/New_York",
        "Pacific/Apia",
        "Pacific/Kiritimati",
        "Etc/GMT+12",
        "Australia/Lord_Howe",
    ];
    for text in exprs {
        for zone in zones {
            for policy in POLICIES {
                let s = Schedule::new(
                    CronExpr::parse(text).unwrap(),
                    Zone::get(zone).unwrap(),
                    policy,
                );
                for t in edges {
                    if let Some(n) = s.next_after(t) {
                        assert!(
                            n > t && s.is_slot(n),
                            "{text} {zone}: next_after({t}) = {n}"
                        );
                    }
                    if let Some(p) = s.prev_before(t) {
                        assert!(
                            p < t && s.is_slot(p),
                            "{text} {zone}: prev_before({t}) = {p}"
                        );
                    }
                    let week = ts((t.as_second() + 7 * 86_400).min(max));
                    for g in s.gap_skips(t, week) {
                        assert!(g.transition > t && g.transition <= week);
                    }
                }
            }
        }
    }
    // Every minute: the last representable minute is found, nothing after it.
    let s = Schedule::utc(CronExpr::parse("* * * * *").unwrap());
    assert_eq!(s.next_after(Timestamp::MAX), None);
    assert_eq!(s.prev_before(Timestamp::MIN), None);
    assert_eq!(
        s.next_after(ts(max - 90)).map(|n| n.as_second()),
        Some(max - max.rem_euclid(60) - 60)
    );
}
