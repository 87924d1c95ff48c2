//! Differential test of cronslot's time engine against croner 4.0.3.
//!
//! croner's `jiff` feature links jiff 0.2 (without a time zone database),
//! while cronslot uses jiff 1.0. croner searches over any type implementing
//! its public `CronDateTime` trait, so this file implements that trait for a
//! jiff 1.0 `ZonedDateTime` (`Zt` below, a line-for-line port of croner's own
//! `time/jiff_impl.rs`). Both engines then see the same instants and the same
//! bundled tz database; results are compared as Unix seconds.
//!
//! croner is configured to match cronslot where it can: five fields (its
//! optional seconds field defaults to 0), `sloppy_ranges` so that `a/s`
//! means `a-max/s` as in cronslot, POSIX weekdays (Sunday 0 or 7).
//!
//! # Intended differences (each asserted by a dedicated test below)
//!
//! 1. **Star-prefixed day fields.** cronslot follows Vixie cron: a day field
//!    whose text *begins* with `*` (`*/2`) does not restrict days, so
//!    `0 0 */2 * MON` is odd days AND Mondays. croner treats only the exact
//!    text `*` (or `?`) as unrestricted and ORs `*/2` with `MON`. In the random
//!    comparison croner is given `dom_and_dow(true)` exactly for those
//!    expressions (both day fields restricted in croner's sense, but one of
//!    them begins with `*`, or `+` is present), which is cronslot's meaning.
//!    Test: `star_prefixed_day_field_is_unrestricted`.
//! 2. **Which expressions are fixed-time.** cronslot: an expression is
//!    interval-like iff its minute or hour field begins with `*`; all others
//!    are fixed-time (docs/design.md §5). croner: fixed-time iff minute and hour
//!    (and seconds) are each a single value without a step. So `0,30 2 * * *`,
//!    `0 1-3 * * *` or `5/20 2 * * *` are fixed-time for cronslot and
//!    interval-like for croner. At DST changes this differs: in a gap,
//!    cronslot (default `dst_gap = "shift"`) runs the first gap slot at the
//!    end of the gap while croner drops it; in an overlap, cronslot
//!    (`dst_overlap = "once"`) runs only in the first pass while croner runs
//!    both. Tests: `fixed_time_classification_in_gap`,
//!    `fixed_time_classification_in_overlap`. The random comparison accounts
//!    for exactly these cases: for such expressions every instant croner has
//!    and cronslot lacks must be a second-pass slot (cronslot with
//!    `dst_overlap = "twice"` has it, as `SlotKind::SecondPass`), and every
//!    instant cronslot has and croner lacks must be a `ShiftedFromGap` slot
//!    at a forward transition. Everywhere else they must agree exactly.
//! 3. **Several gap slots collapse into one shifted run.** Follows from 2:
//!    cronslot's shift policy runs the *first* slot of a gap at its end
//!    (`0,30 2 * * *` → one run at 03:00), croner none. Covered by the same test.
//! 4. **`dst_gap = "skip"`** (EventBridge's behaviour) has no croner
//!    counterpart: croner always shifts single-valued fixed times. Test:
//!    `skip_policy_has_no_croner_counterpart`.
//! 5. **Day-long gaps** (Pacific/Apia skipped 2011-12-30): this crate scans a
//!    gap second by second for at most two hours and then fails with
//!    `TimeSearchLimitExceeded`, which is not a behaviour to compare with.
//!    There the reference is croner on npm, which `croner_npm.rs` runs: the
//!    skipped day's fixed-time slots do not run (a jump of three hours or
//!    more is a clock change), and cronslot agrees. This file compares only
//!    what the crate can compute there, the interval-like schedules. Test:
//!    `day_long_gap`.
//! 6. **Dialect acceptance.** croner accepts `MON-SUN` (it rewrites `-SUN` to
//!    `-7`), seconds fields, `MON-FRI#2`, a bare `L` in day-of-week; cronslot refuses them (Sunday is 0 in a range; seconds
//!    are not supported; `#` takes one weekday). croner refuses `*` inside a
//!    list (`*,5`), which cronslot accepts. Never-firing expressions: croner
//!    searches until its year limit and errors; cronslot reports
//!    `never_fires()` without searching. Test: `dialect_acceptance`.
//!
//! Not a difference but a croner bug, excluded from the random corpus and
//! asserted: `L,LW` in one day-of-month field fires only on the last weekday
//! in croner (the `LW` feature flag replaces `L`), on both days in cronslot.
//! Test: `croner_drops_l_next_to_lw`.
//!
//! W, L, `#n`, `#L`/`nL`, `?` and `+` otherwise have the same meaning in both
//! and are compared in the random corpus.

use std::collections::BTreeSet;

use croner::parser::CronParser;
use croner::{Cron, JobType};
use cronslot_core::{
    CronExpr, DstGap, DstOverlap, DstPolicy, Occurrence, Schedule, SlotKind, Zone,
};
use jiff::Timestamp;
use jiff::tz::TimeZone;

// ------------------------------------------------------------ croner adapter

#[path = "../common/croner_jiff.rs"]
mod croner_jiff;
use croner_jiff::Zt;

fn croner_parser(dom_and_dow: bool) -> CronParser {
    CronParser::builder()
        .sloppy_ranges(true)
        .dom_and_dow(dom_and_dow)
        .build()
}

fn croner(text: &str) -> Cron {
    croner_parser(false)
        .parse(text)
        .unwrap_or_else(|e| panic!("croner refuses {text:?}: {e:?}"))
}

/// croner's fire instants (Unix seconds) strictly after `start`: at most `n`,
/// stopping after the first one past `horizon` or at an error.
fn croner_fires(cron: &Cron, tz: &TimeZone, start: i64, n: usize, horizon: i64) -> Vec<i64> {
    let mut at = Zt(ts(start).to_zoned_datetime(tz.clone()));
    let mut out = Vec::new();
    while out.len() < n {
        match cron.find_next_occurrence(&at, false) {
            Ok(next) => {
                let s = next.0.timestamp().as_second();
                out.push(s);
                if s > horizon {
                    break;
                }
                at = next;
            }
            Err(_) => break,
        }
    }
    out
}

// ------------------------------------------------------------ cronslot side

fn ts(second: i64) -> Timestamp {
    Timestamp::from_second(second).expect("in range")
}

fn t(s: &str) -> i64 {
    s.parse::<Timestamp>().expect("valid timestamp").as_second()
}

fn schedule(text: &str, zone: &str, policy: DstPolicy) -> Schedule {
    Schedule::new(
        CronExpr::parse(text).unwrap_or_else(|e| panic!("cronslot refuses {text:?}: {e}")),
        Zone::get(zone).expect("zone"),
        policy,
    )
}

fn cronslot_fires(s: &Schedule, start: i64, n: usize, horizon: i64) -> Vec<Occurrence> {
    let mut out = Vec::new();
    for o in s.iter_after(ts(start)) {
        let sec = o.instant.as_second();
        out.push(o);
        if out.len() >= n || sec > horizon {
            break;
        }
    }
    out
}

fn seconds(v: &[Occurrence]) -> Vec<i64> {
    v.iter().map(|o| o.instant.as_second()).collect()
}

fn utc(v: &[i64]) -> Vec<String> {
    v.iter().map(|s| ts(*s).to_string()).collect()
}

// ------------------------------------------------------------ intended differences

/// Difference 1: `*/2` in day-of-month does not restrict days for cronslot
/// (Vixie), so `0 0 */2 * MON` is AND; croner ORs it unless told
/// `dom_and_dow(true)`.
#[test]
fn star_prefixed_day_field_is_unrestricted() {
    let zone = "UTC";
    let start = t("2025-10-31T12:00:00Z");
    let end = t("2025-11-30T12:00:00Z");
    let tz = TimeZone::get(zone).unwrap();
    let ours = seconds(&cronslot_fires(
        &schedule("0 0 */2 * MON", zone, DstPolicy::default()),
        start,
        40,
        end,
    ));
    let ours: Vec<i64> = ours.into_iter().filter(|s| *s <= end).collect();
    // Mondays on odd days of November 2025: the 3rd and the 17th.
    assert_eq!(utc(&ours), ["2025-11-03T00:00:00Z", "2025-11-17T00:00:00Z"]);

    let theirs: Vec<i64> = croner_fires(&croner("0 0 */2 * MON"), &tz, start, 40, end)
        .into_iter()
        .filter(|s| *s <= end)
        .collect();
    // croner: odd days OR Mondays.
    assert_eq!(theirs.len(), 15 + 2, "{:?}", utc(&theirs));
    assert!(theirs.contains(&t("2025-11-10T00:00:00Z")));
    assert!(theirs.contains(&t("2025-11-05T00:00:00Z")));

    // croner with dom_and_dow(true) is cronslot's meaning.
    let and = croner_parser(true).parse("0 0 */2 * MON").unwrap();
    let theirs_and: Vec<i64> = croner_fires(&and, &tz, start, 40, end)
        .into_iter()
        .filter(|s| *s <= end)
        .collect();
    assert_eq!(theirs_and, ours);

    // The same on the day-of-week side, and no difference for 1-31.
    let ours = seconds(&cronslot_fires(
        &schedule("0 0 1 * */2", zone, DstPolicy::default()),
        start,
        3,
        i64::MAX,
    ));
    // The 1st when it is a Sunday, Tuesday, Thursday or Saturday.
    assert_eq!(
        utc(&ours),
        [
            "2025-11-01T00:00:00Z",
            "2026-01-01T00:00:00Z",
            "2026-02-01T00:00:00Z"
        ]
    );
    let theirs = croner_fires(&croner("0 0 1 * */2"), &tz, start, 3, i64::MAX);
    assert_eq!(
        utc(&theirs),
        [
            "2025-11-01T00:00:00Z",
            "2025-11-02T00:00:00Z",
            "2025-11-04T00:00:00Z"
        ]
    );
    let ours = seconds(&cronslot_fires(
        &schedule("0 0 1-31 * MON", zone, DstPolicy::default()),
        start,
        10,
        i64::MAX,
    ));
    assert_eq!(
        ours,
        croner_fires(&croner("0 0 1-31 * MON"), &tz, start, 10, i64::MAX)
    );
}

/// Difference 2 (gap): `0,30 2 * * *` is fixed-time for cronslot and
/// interval-like for croner. New York, 2026-03-08: 02:00-03:00 does not exist.
#[test]
fn fixed_time_classification_in_gap() {
    let zone = "America/New_York";
    let tz = TimeZone::get(zone).unwrap();
    let start = t("2026-03-07T12:00:00Z");
    assert!(!CronExpr::parse("0,30 2 * * *").unwrap().is_interval_like());
    assert_eq!(
        croner("0,30 2 * * *").determine_job_type(),
        JobType::IntervalWildcard
    );

    let s = schedule("0,30 2 * * *", zone, DstPolicy::default());
    let ours = cronslot_fires(&s, start, 3, i64::MAX);
    // One shifted run at 03:00 EDT (07:00Z) for the gap, then 02:00 EDT.
    assert_eq!(
        utc(&seconds(&ours)),
        [
            "2026-03-08T07:00:00Z",
            "2026-03-09T06:00:00Z",
            "2026-03-09T06:30:00Z"
        ]
    );
    assert_eq!(ours[0].kind, SlotKind::ShiftedFromGap);
    // croner: the gap times do not exist, nothing runs on the 8th.
    let theirs = croner_fires(&croner("0,30 2 * * *"), &tz, start, 3, i64::MAX);
    assert_eq!(
        utc(&theirs),
        [
            "2026-03-09T06:00:00Z",
            "2026-03-09T06:30:00Z",
            "2026-03-10T06:00:00Z"
        ]
    );

    // A range in the hour field: fixed-time for cronslot as well.
    let s = schedule("30 1-3 * * *", zone, DstPolicy::default());
    let ours = seconds(&cronslot_fires(&s, t("2026-03-08T05:00:00Z"), 3, i64::MAX));
    // 01:30 EST, 02:30 → 03:00 EDT (shift), 03:30 EDT.
    assert_eq!(
        utc(&ours),
        [
            "2026-03-08T06:30:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-08T07:30:00Z"
        ]
    );
    let theirs = croner_fires(
        &croner("30 1-3 * * *"),
        &tz,
        t("2026-03-08T05:00:00Z"),
        2,
        i64::MAX,
    );
    assert_eq!(
        utc(&theirs),
        ["2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z"]
    );

    // Single values: fixed-time in both, both shift: no difference.
    let ours = seconds(&cronslot_fires(
        &schedule("30 2 * * *", zone, DstPolicy::default()),
        start,
        3,
        i64::MAX,
    ));
    assert_eq!(
        ours,
        croner_fires(&croner("30 2 * * *"), &tz, start, 3, i64::MAX)
    );
    assert_eq!(ours[0], t("2026-03-08T07:00:00Z"));
}

/// Difference 2 (overlap): New York, 2026-11-01, 01:00-02:00 happens twice.
#[test]
fn fixed_time_classification_in_overlap() {
    let zone = "America/New_York";
    let tz = TimeZone::get(zone).unwrap();
    let start = t("2026-11-01T04:00:00Z");
    let once = schedule("0,30 1 * * *", zone, DstPolicy::default());
    let ours = seconds(&cronslot_fires(&once, start, 3, i64::MAX));
    assert_eq!(
        utc(&ours),
        [
            "2026-11-01T05:00:00Z",
            "2026-11-01T05:30:00Z",
            "2026-11-02T06:00:00Z"
        ]
    );
    let theirs = croner_fires(&croner("0,30 1 * * *"), &tz, start, 5, i64::MAX);
    assert_eq!(
        utc(&theirs),
        [
            "2026-11-01T05:00:00Z",
            "2026-11-01T05:30:00Z",
            "2026-11-01T06:00:00Z",
            "2026-11-01T06:30:00Z",
            "2026-11-02T06:00:00Z"
        ]
    );
    // cronslot with dst_overlap = "twice" is croner's behaviour here.
    let twice = schedule(
        "0,30 1 * * *",
        zone,
        DstPolicy {
            gap: DstGap::Shift,
            overlap: DstOverlap::Twice,
        },
    );
    let both = cronslot_fires(&twice, start, 5, i64::MAX);
    assert_eq!(seconds(&both), theirs);
    assert_eq!(both[2].kind, SlotKind::SecondPass);
    // Single values: once in both.
    let ours = seconds(&cronslot_fires(
        &schedule("30 1 * * *", zone, DstPolicy::default()),
        start,
        2,
        i64::MAX,
    ));
    assert_eq!(
        ours,
        croner_fires(&croner("30 1 * * *"), &tz, start, 2, i64::MAX)
    );
    assert_eq!(utc(&ours), ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]);
}

/// Difference 4: `dst_gap = "skip"` drops the slot; croner shifts it.
#[test]
fn skip_policy_has_no_croner_counterpart() {
    let zone = "Europe/Berlin";
    let tz = TimeZone::get(zone).unwrap();
    let start = t("2026-03-28T12:00:00Z");
    // Berlin 2026-03-29: 02:00 CET → 03:00 CEST at 01:00Z.
    let skip = schedule("30 2 * * *", zone, DstPolicy::SKIP_ONCE);
    let ours = seconds(&cronslot_fires(&skip, start, 2, i64::MAX));
    assert_eq!(utc(&ours), ["2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"]);
    let skipped = skip.gap_skips(ts(start), ts(t("2026-03-31T00:00:00Z")));
    assert_eq!(skipped.len(), 1);
    let theirs = croner_fires(&croner("30 2 * * *"), &tz, start, 2, i64::MAX);
    assert_eq!(
        utc(&theirs),
        ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]
    );
    let shift = schedule("30 2 * * *", zone, DstPolicy::default());
    assert_eq!(seconds(&cronslot_fires(&shift, start, 2, i64::MAX)), theirs);
}

/// Difference 5: Pacific/Apia skipped 2011-12-30 entirely. Fixed-time
/// slots are compared with croner on npm in `croner_npm.rs`; here, the
/// interval-like ones.
#[test]
fn day_long_gap() {
    let zone = "Pacific/Apia";
    let tz = TimeZone::get(zone).unwrap();
    let start = t("2011-12-29T20:00:00Z"); // 2011-12-29 10:00 local (-10)
    // Interval-like: both skip the missing day.
    let ours = seconds(&cronslot_fires(
        &schedule("0 */6 * * *", zone, DstPolicy::default()),
        start,
        3,
        i64::MAX,
    ));
    assert_eq!(
        ours,
        croner_fires(&croner("0 */6 * * *"), &tz, start, 3, i64::MAX)
    );
    assert_eq!(
        utc(&ours),
        [
            "2011-12-29T22:00:00Z",
            "2011-12-30T04:00:00Z",
            "2011-12-30T10:00:00Z"
        ]
    );
}

/// Difference 6: what each parser accepts.
#[test]
fn dialect_acceptance() {
    let croner_only = [
        "0 0 * * MON-SUN",
        "0 0 0 * * *",
        "0 0 * * MON-FRI#2",
        "0 0 * * L",
    ];
    for text in croner_only {
        assert!(
            croner_parser(false).parse(text).is_ok(),
            "croner refuses {text}"
        );
        assert!(CronExpr::parse(text).is_err(), "cronslot accepts {text}");
    }
    // MON-7 is the same range in both.
    let tz = TimeZone::get("UTC").unwrap();
    let start = t("2026-01-01T00:00:00Z");
    assert_eq!(
        seconds(&cronslot_fires(
            &schedule("0 0 * * MON-7", "UTC", DstPolicy::default()),
            start,
            14,
            i64::MAX
        )),
        croner_fires(&croner("0 0 * * MON-SUN"), &tz, start, 14, i64::MAX)
    );
    assert!(croner_parser(false).parse("*,5 * * * *").is_err());
    assert!(CronExpr::parse("*,5 * * * *").is_ok());
    // Never firing: cronslot says so; croner parses it too.
    let never = CronExpr::parse("0 0 31 2 *").unwrap();
    assert!(never.never_fires());
    assert!(croner_parser(false).parse("0 0 31 2 *").is_ok());
}

/// croner bug, not an intended difference: `L,LW` loses `L`.
#[test]
fn croner_drops_l_next_to_lw() {
    let tz = TimeZone::get("UTC").unwrap();
    let start = t("2025-11-01T00:00:00Z");
    // 2025-11-30 is a Sunday: LW is Friday the 28th, L the 30th.
    let ours = seconds(&cronslot_fires(
        &schedule("0 0 L,LW * *", "UTC", DstPolicy::default()),
        start,
        2,
        i64::MAX,
    ));
    assert_eq!(utc(&ours), ["2025-11-28T00:00:00Z", "2025-11-30T00:00:00Z"]);
    let theirs = croner_fires(&croner("0 0 L,LW * *"), &tz, start, 2, i64::MAX);
    assert_eq!(
        utc(&theirs),
        ["2025-11-28T00:00:00Z", "2025-12-31T00:00:00Z"]
    );
}

// ------------------------------------------------------------ random corpus

const ZONES: [&str; 6] = [
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Pacific/Chatham",
    "Africa/Casablanca",
];

/// xorshift64*: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.below(u64::from(hi - lo + 1)) as u32
    }
    fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

fn random_case(rng: &mut Rng, s: &str) -> String {
    match rng.below(3) {
        0 => s.to_ascii_lowercase(),
        1 => s.to_string(),
        _ => s
            .chars()
            .enumerate()
            .map(|(i, c)| if i == 0 { c } else { c.to_ascii_lowercase() })
            .collect(),
    }
}

/// A field: how to spell its values.
#[derive(Clone, Copy)]
struct Spec {
    min: u32,
    max: u32,
    /// Values to prefer (half the time).
    bias: &'static [u32],
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Number,
    Month,
    Weekday,
}

impl Spec {
    fn value(&self, rng: &mut Rng) -> u32 {
        if !self.bias.is_empty() && rng.percent(50) {
            rng.pick(self.bias)
        } else {
            rng.range(self.min, self.max)
        }
    }

    /// A value as text; `range_end` forbids writing Sunday as SUN (croner
    /// reads `-SUN` as 7, cronslot as 0).
    fn spell(&self, rng: &mut Rng, v: u32, range_end: bool) -> String {
        match self.kind {
            Kind::Month if rng.percent(30) => random_case(rng, MONTHS[v as usize - 1]),
            Kind::Weekday if v <= 6 && !(v == 0 && range_end) && rng.percent(30) => {
                random_case(rng, DAYS[v as usize])
            }
            _ => v.to_string(),
        }
    }

    fn step(&self, rng: &mut Rng) -> u32 {
        let span = self.max - self.min + 1;
        // 1 ..= span-1 (a step as wide as the field is refused by cronslot).
        if rng.percent(70) {
            rng.range(2, (span / 2).max(2))
        } else {
            rng.range(1, span - 1)
        }
    }

    /// One list item: value, range, stepped range or `a/s`.
    fn item(&self, rng: &mut Rng) -> String {
        match rng.below(10) {
            0..=4 => {
                let v = self.value(rng);
                self.spell(rng, v, false)
            }
            5..=6 => {
                let (a, b) = (self.value(rng), self.value(rng));
                let (a, b) = (a.min(b), a.max(b));
                format!("{}-{}", self.spell(rng, a, false), self.spell(rng, b, true))
            }
            7..=8 => {
                let (a, b) = (self.value(rng), self.value(rng));
                let (a, b) = (a.min(b), a.max(b));
                let s = self.step(rng);
                format!(
                    "{}-{}/{s}",
                    self.spell(rng, a, false),
                    self.spell(rng, b, true)
                )
            }
            _ => {
                let a = self.value(rng);
                let s = self.step(rng);
                format!("{}/{s}", self.spell(rng, a, false))
            }
        }
    }

    fn list(&self, rng: &mut Rng, item: &mut dyn FnMut(&mut Rng) -> String) -> String {
        let n = 1 + usize::from(rng.percent(40)) + usize::from(rng.percent(20));
        (0..n).map(|_| item(rng)).collect::<Vec<_>>().join(",")
    }

    /// A whole plain field.
    fn field(&self, rng: &mut Rng, star: u64, star_step: u64) -> String {
        let r = rng.below(100);
        if r < star {
            "*".into()
        } else if r < star + star_step {
            format!("*/{}", self.step(rng))
        } else {
            let spec = *self;
            self.list(rng, &mut |rng| spec.item(rng))
        }
    }

    fn single(&self, rng: &mut Rng) -> String {
        let v = self.value(rng);
        self.spell(rng, v, false)
    }
}

const MINUTE: Spec = Spec {
    min: 0,
    max: 59,
    bias: &[0, 15, 30, 45, 59],
    kind: Kind::Number,
};
// DST changes happen at local 00:00-04:00 in these zones.
const HOUR: Spec = Spec {
    min: 0,
    max: 23,
    bias: &[0, 1, 2, 3, 23],
    kind: Kind::Number,
};
const DOM: Spec = Spec {
    min: 1,
    max: 31,
    bias: &[1, 15, 28, 29, 30, 31],
    kind: Kind::Number,
};
const MONTH: Spec = Spec {
    min: 1,
    max: 12,
    bias: &[3, 4, 9, 10, 11],
    kind: Kind::Month,
};
const DOW: Spec = Spec {
    min: 0,
    max: 7,
    bias: &[],
    kind: Kind::Weekday,
};

struct Generated {
    text: String,
    /// cronslot's day rule is AND where croner's default is not.
    needs_and: bool,
}

fn generate(rng: &mut Rng) -> Generated {
    // The time fields: fixed (single values), interval-like, or anything.
    let (minute, hour) = match rng.below(10) {
        0..=3 => (MINUTE.single(rng), HOUR.single(rng)),
        4..=6 => {
            if rng.percent(50) {
                (MINUTE.field(rng, 25, 35), "*".to_string())
            } else {
                (
                    if rng.percent(50) {
                        MINUTE.single(rng)
                    } else {
                        MINUTE.field(rng, 0, 0)
                    },
                    format!("*/{}", HOUR.step(rng)),
                )
            }
        }
        _ => (MINUTE.field(rng, 15, 15), HOUR.field(rng, 15, 10)),
    };

    let dom = {
        let r = rng.below(100);
        if r < 45 {
            "*".to_string()
        } else if r < 50 {
            "?".to_string()
        } else if r < 58 {
            format!("*/{}", DOM.step(rng))
        } else {
            let mut has_l = false;
            let mut has_lw = false;
            let mut item = |rng: &mut Rng| match rng.below(20) {
                0..=10 => DOM.item(rng),
                11..=13 if !has_lw => {
                    has_l = true;
                    random_case(rng, "L")
                }
                14..=15 if !has_l => {
                    has_lw = true;
                    random_case(rng, "LW")
                }
                _ => format!("{}{}", DOM.value(rng), random_case(rng, "W")),
            };
            DOM.list(rng, &mut item)
        }
    };

    let month = MONTH.field(rng, 65, 5);

    let dow = {
        let r = rng.below(100);
        if r < 45 {
            "*".to_string()
        } else if r < 50 {
            "?".to_string()
        } else if r < 58 {
            format!("*/{}", DOW.step(rng))
        } else {
            let mut item = |rng: &mut Rng| {
                let w = DOW.value(rng);
                let w_text = DOW.spell(rng, w, false);
                match rng.below(20) {
                    0..=10 => DOW.item(rng),
                    11..=14 => format!("{w_text}#{}", rng.range(1, 5)),
                    15..=16 => format!("{w_text}#{}", random_case(rng, "L")),
                    _ => format!("{w_text}{}", random_case(rng, "L")),
                }
            };
            let list = DOW.list(rng, &mut item);
            if rng.percent(25) {
                format!("+{list}")
            } else {
                list
            }
        }
    };

    // croner's unrestricted fields are exactly `*` (after `?` → `*`).
    let croner_star = |f: &str| f == "*" || f == "?";
    let cronslot_star = |f: &str| f.starts_with('*') || f == "?";
    let plus = dow.starts_with('+');
    let needs_and = !croner_star(&dom)
        && !croner_star(&dow)
        && (plus || cronslot_star(&dom) || cronslot_star(&dow));
    Generated {
        text: format!("{minute} {hour} {dom} {month} {dow}"),
        needs_and,
    }
}

/// A start instant: uniform in 2020-2035, or near one of the zone's
/// transitions (exactly at it, a second either side, or within three hours).
fn start_instant(rng: &mut Rng, transitions: &[i64], near: bool) -> i64 {
    let lo = t("2020-01-01T00:00:00Z");
    let hi = t("2036-01-01T00:00:00Z");
    if !near || transitions.is_empty() {
        return lo + rng.below((hi - lo) as u64) as i64;
    }
    let at = transitions[rng.below(transitions.len() as u64) as usize];
    match rng.below(8) {
        0 => at,
        1 => at - 1,
        2 => at + 1,
        _ => at + rng.below(6 * 3600) as i64 - 3 * 3600,
    }
}

fn transitions(tz: &TimeZone) -> Vec<i64> {
    let end = t("2036-01-01T00:00:00Z");
    tz.following(ts(t("2020-01-01T00:00:00Z")))
        .map(|tr| tr.timestamp().as_second())
        .take_while(|s| *s < end)
        .collect()
}

#[derive(Default, Debug)]
struct Tally {
    expressions: usize,
    runs: usize,
    instants: usize,
    /// Compared instants that are DST-affected on cronslot's side.
    shifted: usize,
    second_pass: usize,
    /// Expressions croner needed `dom_and_dow(true)` for.
    star_rule: usize,
    /// Expressions whose fixed-time class differs (difference 2).
    class_differs: usize,
    /// Differences explained by difference 2.
    explained_gap: usize,
    explained_overlap: usize,
    never: usize,
    near_transition_runs: usize,
}

#[test]
fn random_expressions_agree_with_croner() {
    const EXPRESSIONS: usize = 2_400;
    const FIRES: usize = 20;
    const YEARS: i64 = 30;
    let mut rng = Rng(0x5EED_C0FF_EE15_2026);
    let zones: Vec<(&str, TimeZone, Vec<i64>)> = ZONES
        .iter()
        .map(|z| {
            let tz = TimeZone::get(z).unwrap();
            let tr = transitions(&tz);
            assert!(tr.len() >= 10, "{z} has {} transitions", tr.len());
            (*z, tz, tr)
        })
        .collect();
    let twice = DstPolicy {
        gap: DstGap::Shift,
        overlap: DstOverlap::Twice,
    };
    let mut tally = Tally::default();
    let mut failures = Vec::new();

    for i in 0..EXPRESSIONS {
        let g = generate(&mut rng);
        let expr = CronExpr::parse(&g.text)
            .unwrap_or_else(|e| panic!("generated {:?} is refused: {e}", g.text));
        let parsed = croner_parser(g.needs_and)
            .parse(&g.text)
            .unwrap_or_else(|e| panic!("croner refuses generated {:?}: {e:?}", g.text));
        assert_eq!(
            g.needs_and,
            !expr.days_are_either() && !parsed_is_star(&g.text),
            "{}",
            g.text
        );
        tally.expressions += 1;
        tally.star_rule += usize::from(g.needs_and && !g.text.contains('+'));
        if expr.never_fires() {
            tally.never += 1;
            let s = Schedule::new(expr, Zone::utc(), DstPolicy::default());
            assert_eq!(s.next_after(ts(0)), None, "{}", g.text);
            continue;
        }
        let croner_fixed = parsed.determine_job_type() == JobType::FixedTime;
        if croner_fixed {
            assert!(
                !expr.is_interval_like(),
                "{}: croner fixed, cronslot not",
                g.text
            );
        }
        let class_differs = !croner_fixed && !expr.is_interval_like();
        tally.class_differs += usize::from(class_differs);

        let (zone, tz, trans) = &zones[i % zones.len()];
        let ours_s = Schedule::new(expr.clone(), Zone::get(zone).unwrap(), DstPolicy::default());
        let twice_s = Schedule::new(expr, Zone::get(zone).unwrap(), twice);
        for near in [false, true, true] {
            let start = start_instant(&mut rng, trans, near);
            tally.near_transition_runs += usize::from(near);
            let horizon = start + YEARS * 366 * 86_400;
            let ours = cronslot_fires(&ours_s, start, FIRES, horizon);
            let theirs = croner_fires(&parsed, tz, start, FIRES, horizon);
            tally.runs += 1;
            let ours_sec = seconds(&ours);
            // Compare up to the end of the shorter list.
            let end = *ours_sec
                .last()
                .unwrap_or(&i64::MIN)
                .min(theirs.last().unwrap_or(&i64::MIN));
            let a: BTreeSet<i64> = ours_sec.iter().copied().filter(|s| *s <= end).collect();
            let b: BTreeSet<i64> = theirs.iter().copied().filter(|s| *s <= end).collect();
            let head = format!(
                "{:?} in {zone} after {} (croner {}):\n  cronslot {:?}\n  croner   {:?}",
                g.text,
                ts(start),
                if croner_fixed { "fixed" } else { "interval" },
                utc(&ours_sec),
                utc(&theirs)
            );
            if ours_sec.is_empty() != theirs.is_empty() {
                failures.push(head);
                continue;
            }
            tally.instants += a.len();
            for o in &ours {
                if o.instant.as_second() <= end {
                    match o.kind {
                        SlotKind::ShiftedFromGap => tally.shifted += 1,
                        SlotKind::SecondPass => tally.second_pass += 1,
                        SlotKind::Regular => {}
                    }
                }
            }
            if a == b {
                continue;
            }
            if !class_differs {
                failures.push(head);
                continue;
            }
            // Difference 2: explain every instant on either side.
            let mut ok = true;
            for s in a.difference(&b) {
                let o = ours.iter().find(|o| o.instant.as_second() == *s).unwrap();
                let at_transition = ours_s.zone().prev_transition(*s).map(|(at, _)| at) == Some(*s);
                if o.kind == SlotKind::ShiftedFromGap && at_transition {
                    tally.explained_gap += 1;
                } else {
                    ok = false;
                }
            }
            for s in b.difference(&a) {
                let o = twice_s.next_occurrence(ts(s - 1));
                if o.map(|o| (o.instant.as_second(), o.kind)) == Some((*s, SlotKind::SecondPass)) {
                    tally.explained_overlap += 1;
                } else {
                    ok = false;
                }
            }
            if !ok {
                failures.push(head);
            }
        }
    }
    println!("differential vs croner: {tally:#?}");
    assert!(
        failures.is_empty(),
        "{} of {} runs differ from croner:\n{}",
        failures.len(),
        tally.runs,
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(tally.expressions >= 2_000);
    assert!(tally.instants >= 40_000, "{tally:?}");
    // The corpus exercises DST: shifted slots and second passes were compared.
    assert!(tally.shifted >= 50, "{tally:?}");
    assert!(tally.second_pass >= 50, "{tally:?}");
    assert!(tally.star_rule >= 50, "{tally:?}");
    assert!(tally.class_differs >= 100, "{tally:?}");
}

/// Both day fields are unrestricted in croner's sense (so no override is
/// needed whatever cronslot says).
fn parsed_is_star(text: &str) -> bool {
    let f: Vec<&str> = text.split(' ').collect();
    let star = |s: &str| s == "*" || s == "?";
    star(f[2]) || star(f[4])
}
