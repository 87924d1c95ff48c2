//! `Schedule::count_between` (docs/design.md §5: planning counts missed slots by
//! arithmetic) against enumeration with `iter_after`, over random
//! expressions, zones, DST policies and spans, plus fixed cases whose counts
//! are known by hand.
//!
//! The runner uses a fixed seed, so runs are reproducible.

use std::sync::OnceLock;

use cronslot_core::{CronExpr, Dialect, DstGap, DstOverlap, DstPolicy, Schedule, SlotKind, Zone};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

const ZONES: [&str; 8] = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Pacific/Chatham",
    "Pacific/Apia",
    "Asia/Kolkata",
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

/// Enumeration stops after this many slots; the comparison then ends at the
/// last slot enumerated.
const CAP: u64 = 20_000;

/// Random cases.
const CASES: u32 = 6_000;

const DAY: i64 = 86_400;

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(11),
        failure_persistence: None,
        max_shrink_iters: 1_000,
        ..Config::default()
    }
}

fn t(s: &str) -> Timestamp {
    s.parse().expect("valid timestamp")
}

fn zone(name: &str) -> Zone {
    Zone::get(name).expect("valid zone")
}

fn sched(expr: &str, zone_name: &str, policy: DstPolicy) -> Schedule {
    Schedule::new(
        CronExpr::parse(expr).expect("valid expression"),
        zone(zone_name),
        policy,
    )
}

/// The instant of a wall-clock time in a zone (the earlier one in a fold).
fn local(zone_name: &str, civil: &str) -> Timestamp {
    let tz = TimeZone::get(zone_name).expect("zone");
    let dt: jiff::civil::DateTime = civil.parse().expect("civil time");
    tz.to_ambiguous_timestamp(dt)
        .compatible()
        .expect("resolvable")
}

/// Slots in `[from, to)` local days: `(from - 1 s, to - 1 s]`.
fn count_local_days(s: &Schedule, zone_name: &str, from: &str, to: &str) -> u64 {
    let second = jiff::SignedDuration::from_secs(1);
    s.count_between(
        local(zone_name, from) - second,
        local(zone_name, to) - second,
    )
}

/// Enumerates `(after, until]` with `iter_after`, up to [`CAP`] slots.
/// Returns the number of slots, the instant the enumeration covers up to,
/// and how many slots were shifted out of a gap / second passes.
fn enumerate(s: &Schedule, after: Timestamp, until: Timestamp) -> (u64, Timestamp, (u64, u64)) {
    let mut n = 0u64;
    let mut kinds = (0, 0);
    let mut last = after;
    for o in s.iter_after(after) {
        assert!(
            o.instant > last,
            "iter_after not increasing at {}",
            o.instant
        );
        if o.instant > until {
            return (n, until, kinds);
        }
        n += 1;
        last = o.instant;
        match o.kind {
            SlotKind::ShiftedFromGap => kinds.0 += 1,
            SlotKind::SecondPass => kinds.1 += 1,
            SlotKind::Regular => {}
        }
        if n == CAP {
            return (n, last, kinds);
        }
    }
    (n, until, kinds)
}

// ------------------------------------------------------------ fixed cases

#[test]
fn every_minute_over_one_year() {
    let utc = sched("* * * * *", "UTC", DstPolicy::default());
    assert_eq!(
        utc.count_between(t("2027-01-01T00:00:00Z"), t("2028-01-01T00:00:00Z")),
        525_600
    );
    assert_eq!(
        utc.count_between(t("2028-01-01T00:00:00Z"), t("2029-01-01T00:00:00Z")),
        527_040
    );
    // Interval-like: follows real time, so a local year (EST to EST) has as
    // many minutes as a UTC one.
    let ny = "America/New_York";
    let from = local(ny, "2027-01-01T00:00");
    let to = local(ny, "2028-01-01T00:00");
    assert_eq!(
        sched("* * * * *", ny, DstPolicy::default()).count_between(from, to),
        525_600
    );
    // On the wall clock the 60 minutes of the gap are gone; the repeated 60
    // run once or twice; the shifted 02:00 lands on 03:00, the same instant.
    let wall = |gap, overlap| {
        Schedule::wall_clock(
            CronExpr::parse("* * * * *").expect("valid"),
            zone(ny),
            DstPolicy { gap, overlap },
        )
        .count_between(from, to)
    };
    assert_eq!(wall(DstGap::Skip, DstOverlap::Once), 525_540);
    assert_eq!(wall(DstGap::Shift, DstOverlap::Once), 525_540);
    assert_eq!(wall(DstGap::Skip, DstOverlap::Twice), 525_600);
    assert_eq!(wall(DstGap::Shift, DstOverlap::Twice), 525_600);
}

#[test]
fn hourly_in_new_york_on_dst_days() {
    let ny = "America/New_York";
    for policy in POLICIES {
        let s = sched("0 * * * *", ny, policy);
        assert_eq!(
            count_local_days(&s, ny, "2026-03-08T00:00", "2026-03-09T00:00"),
            23
        );
        assert_eq!(
            count_local_days(&s, ny, "2026-11-01T00:00", "2026-11-02T00:00"),
            25
        );
        assert_eq!(
            count_local_days(&s, ny, "2026-03-01T00:00", "2026-04-01T00:00"),
            31 * 24 - 1
        );
    }
}

#[test]
fn fixed_time_in_the_gap_shift_versus_skip() {
    let ny = "America/New_York";
    let (from, to) = ("2026-03-07T00:00", "2026-03-10T00:00");
    let shift = sched("30 2 * * *", ny, DstPolicy::default());
    let skip = sched("30 2 * * *", ny, DstPolicy::SKIP_ONCE);
    assert_eq!(count_local_days(&shift, ny, from, to), 3);
    assert_eq!(count_local_days(&skip, ny, from, to), 2);
    // What skip drops is exactly what gap_skips reports.
    let (a, b) = (local(ny, from), local(ny, to));
    assert_eq!(
        skip.count_between(a, b) + skip.gap_skips(a, b).len() as u64,
        shift.count_between(a, b)
    );
    // Over a whole year: one shifted slot in March; once in November.
    let (a, b) = (local(ny, "2026-01-01T00:00"), local(ny, "2027-01-01T00:00"));
    assert_eq!(shift.count_between(a, b), 365);
    assert_eq!(skip.count_between(a, b), 364);
    // 01:30 is repeated in November: once or twice.
    let once = sched("30 1 * * *", ny, DstPolicy::default());
    let twice = sched(
        "30 1 * * *",
        ny,
        DstPolicy {
            gap: DstGap::Shift,
            overlap: DstOverlap::Twice,
        },
    );
    assert_eq!(once.count_between(a, b), 365);
    assert_eq!(twice.count_between(a, b), 366);
}

#[test]
fn shifted_slot_and_the_next_minute_are_one_instant() {
    // 02:00-02:59 do not exist on 2026-03-08 in New York; with shift, the
    // gap's slot runs at 03:00 EDT, which is also the 03:00 slot.
    let ny = "America/New_York";
    let s = sched("0 2,3 * * *", ny, DstPolicy::default());
    assert_eq!(
        count_local_days(&s, ny, "2026-03-08T00:00", "2026-03-09T00:00"),
        1
    );
    let s = sched("30 2 * * *", ny, DstPolicy::default());
    let at = t("2026-03-08T07:00:00Z");
    assert_eq!(
        s.next_after(at - jiff::SignedDuration::from_secs(1)),
        Some(at)
    );
    assert_eq!(
        s.count_between(at - jiff::SignedDuration::from_secs(1), at),
        1
    );
    assert_eq!(
        s.count_between(at, at + jiff::SignedDuration::from_secs(DAY / 2)),
        0
    );
}

#[test]
fn leap_days_over_a_century() {
    for zone_name in ["UTC", "America/New_York", "Pacific/Apia"] {
        let s = sched("0 0 29 2 *", zone_name, DstPolicy::default());
        assert_eq!(
            count_local_days(&s, zone_name, "2000-01-01T00:00", "2101-01-01T00:00"),
            25,
            "{zone_name}"
        );
    }
}

#[test]
fn apia_skipped_a_whole_day() {
    // Samoa went from 2011-12-29 23:59:59 -10:00 to 2011-12-31 00:00 +14:00:
    // a clock change (24 hours), not DST. shift and skip both skip the
    // 30th's noon; shift_always runs it at the end of the jump.
    let apia = "Pacific/Apia";
    let (a, b) = (t("2011-12-29T00:00:00Z"), t("2012-01-02T00:00:00Z"));
    let shift = sched("0 12 * * *", apia, DstPolicy::default());
    let skip = sched("0 12 * * *", apia, DstPolicy::SKIP_ONCE);
    let always = sched(
        "0 12 * * *",
        apia,
        DstPolicy {
            gap: DstGap::ShiftAlways,
            overlap: DstOverlap::Once,
        },
    );
    // The 29th, 31st, 1st and 2nd (+14: 2012-01-01T22:00Z); shift_always
    // adds the 30th's, at the end of the jump.
    assert_eq!(shift.count_between(a, b), 4);
    assert_eq!(skip.count_between(a, b), 4);
    assert_eq!(always.count_between(a, b), 5);
    for s in [&shift, &skip] {
        assert_eq!(
            always.count_between(a, b),
            s.count_between(a, b) + s.gap_skips(a, b).len() as u64
        );
    }
    assert!(always.gap_skips(a, b).is_empty());
    // Interval-like: a day of wall-clock minutes never happened.
    let every = sched("* * * * *", apia, DstPolicy::default());
    assert_eq!(every.count_between(a, b), 4 * 1440);
}

#[test]
fn eventbridge_years() {
    let cron = CronExpr::parse_dialect("cron(0 12 ? * 2 2030,2032)", Dialect::EventBridge)
        .expect("valid EventBridge expression");
    let s = Schedule::wall_clock(cron, zone("America/New_York"), DstPolicy::SKIP_ONCE);
    // Mondays: 52 in 2030, 52 in 2032.
    assert_eq!(
        s.count_between(t("2029-01-01T00:00:00Z"), t("2034-01-01T00:00:00Z")),
        104
    );
    let after_last = t("2199-12-31T23:59:00Z");
    assert_eq!(s.count_between(after_last, Timestamp::MAX), 0);
}

#[test]
fn empty_and_reversed_spans() {
    let s = sched("* * * * *", "UTC", DstPolicy::default());
    let a = t("2026-05-01T12:00:00Z");
    assert_eq!(s.count_between(a, a), 0);
    assert_eq!(s.count_between(a, t("2026-04-01T00:00:00Z")), 0);
    // Fractions: slots are whole minutes, the span is half-open on the left.
    assert_eq!(
        s.count_between(t("2026-05-01T12:00:00.5Z"), t("2026-05-01T12:00:59.9Z")),
        0
    );
    assert_eq!(
        s.count_between(t("2026-05-01T11:59:59.9Z"), t("2026-05-01T12:00:00Z")),
        1
    );
    assert_eq!(
        s.count_between(t("1969-12-31T23:58:59.5Z"), t("1969-12-31T23:59:00.5Z")),
        1
    );
    let never = sched("0 0 31 2 *", "UTC", DstPolicy::default());
    assert_eq!(never.count_between(Timestamp::MIN, Timestamp::MAX), 0);
}

#[test]
fn whole_range_is_exact_and_cheap() {
    let start = std::time::Instant::now();
    let s = sched("* * * * *", "UTC", DstPolicy::default());
    let (min, max) = (Timestamp::MIN.as_second(), Timestamp::MAX.as_second());
    let expected = max.div_euclid(60) - min.div_euclid(60);
    assert_eq!(
        s.count_between(Timestamp::MIN, Timestamp::MAX),
        expected as u64
    );
    // With every transition New York ever had or will have under its rules.
    for policy in POLICIES {
        let n = sched("* * * * *", "America/New_York", policy)
            .count_between(Timestamp::MIN, Timestamp::MAX);
        let diff = n.abs_diff(expected as u64);
        assert!(diff <= 1, "{n} vs {expected}");
        let daily = sched("30 2 * * *", "America/New_York", policy)
            .count_between(Timestamp::MIN, Timestamp::MAX);
        // Skip drops the 02:30 of each spring-forward day (one a year from
        // 1918 on); shift keeps it.
        let days = expected as u64 / 1440;
        match policy.gap {
            // New York never jumped three hours: no clock change.
            DstGap::Shift | DstGap::ShiftAlways => {
                assert!(daily.abs_diff(days) <= 1, "{daily} vs {days}")
            }
            DstGap::Skip => assert!(
                (8_000..8_200).contains(&(days - daily)),
                "{daily} vs {days}"
            ),
        }
    }
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
}

/// Around a selection of every zone's transitions (LMT changes with
/// offsets in seconds, war time, Samoa's skipped day, half-hour and
/// 45-minute offsets, today's rules), every flavour, several expressions,
/// windows starting before, at and inside the change.
#[test]
fn around_transitions_agrees_with_enumeration() {
    let exprs = [
        "*/5 * * * *",
        "30 * * * *",
        "0,30 0-3 * * *",
        "45 2 * * *",
        "0 0 * * *",
        "15 1 * * *",
    ];
    let year = |at: i64| Timestamp::from_second(at).expect("in range").to_string()[..4].to_string();
    let mut compared = 0;
    for (z, name) in ZONES.iter().enumerate() {
        let list = &transitions()[z];
        for (i, &at) in list.iter().enumerate() {
            let y = year(at);
            if !(i < 4 || i % 40 == 0 || y == "2011" || y == "2026" || i + 2 >= list.len()) {
                continue;
            }
            for text in exprs {
                let cron = CronExpr::parse(text).expect("valid");
                for policy in POLICIES {
                    for s in [
                        Schedule::new(cron.clone(), zone(name), policy),
                        Schedule::wall_clock(cron.clone(), zone(name), policy),
                    ] {
                        for (from, to) in [
                            (-2 * 3600, 3 * 3600),
                            (0, 3 * 3600),
                            (1, 3 * 3600),
                            (1800, 3 * 3600),
                            (-DAY, -1),
                        ] {
                            let after = Timestamp::from_second(at + from).expect("in range");
                            let until = Timestamp::from_second(at + to).expect("in range");
                            let (n, covered, _) = enumerate(&s, after, until);
                            assert_eq!(
                                s.count_between(after, covered),
                                n,
                                "{text} in {name} {policy:?} wall clock {}: ({after}, {covered}]",
                                !s.follows_real_time() && s.cron().is_interval_like()
                            );
                            compared += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(compared > 5_000, "{compared}");
}

// ------------------------------------------------------------ properties

fn minute_field() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => Just("*".to_string()),
        2 => (2u32..=30).prop_map(|k| format!("*/{k}")),
        4 => (0u32..60).prop_map(|m| m.to_string()),
        1 => (0u32..50, 1u32..10).prop_map(|(a, n)| format!("{a}-{}", a + n)),
        2 => proptest::collection::btree_set(0u32..60, 2..4).prop_map(|s| {
            s.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        }),
        1 => (0u32..30, 5u32..20).prop_map(|(a, k)| format!("{a}-59/{k}")),
    ]
}

fn hour_field() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just("*".to_string()),
        1 => (2u32..=12).prop_map(|k| format!("*/{k}")),
        // Hours that DST transitions touch somewhere in the zones below.
        4 => prop::sample::select(vec![0u32, 1, 2, 3, 23]).prop_map(|h| h.to_string()),
        2 => (0u32..24).prop_map(|h| h.to_string()),
        1 => (0u32..20, 1u32..4).prop_map(|(a, n)| format!("{a}-{}", a + n)),
        1 => proptest::collection::btree_set(0u32..24, 2..4).prop_map(|s| {
            s.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        }),
    ]
}

fn dom_field() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => Just("*".to_string()),
        1 => Just("?".to_string()),
        2 => (1u32..=31).prop_map(|d| d.to_string()),
        1 => (1u32..=20, 1u32..10).prop_map(|(a, n)| format!("{a}-{}", a + n)),
        1 => (2u32..=10).prop_map(|k| format!("*/{k}")),
        1 => Just("L".to_string()),
        1 => Just("LW".to_string()),
        1 => (1u32..=31).prop_map(|d| format!("{d}W")),
        1 => proptest::collection::btree_set(1u32..=31, 2..4).prop_map(|s| {
            s.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        }),
    ]
}

fn month_field() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => Just("*".to_string()),
        1 => (1u32..=12).prop_map(|m| m.to_string()),
        1 => (1u32..=8, 1u32..5).prop_map(|(a, n)| format!("{a}-{}", a + n)),
        1 => (2u32..=4).prop_map(|k| format!("*/{k}")),
        1 => Just("MAR,OCT,NOV".to_string()),
    ]
}

fn dow_field() -> impl Strategy<Value = String> {
    let plain = prop_oneof![
        1 => (0u32..=7).prop_map(|d| d.to_string()),
        1 => Just("MON-FRI".to_string()),
        1 => Just("SAT,SUN".to_string()),
        1 => (0u32..7, 1u32..=5).prop_map(|(d, n)| format!("{d}#{n}")),
        1 => (0u32..7).prop_map(|d| format!("{d}L")),
    ];
    prop_oneof![
        6 => Just("*".to_string()),
        1 => Just("?".to_string()),
        3 => plain.clone(),
        1 => plain.prop_map(|p| format!("+{p}")),
    ]
}

fn expression() -> impl Strategy<Value = CronExpr> {
    let parse = |(mi, h, dom, mo, dow): (String, String, String, String, String)| {
        CronExpr::parse(&format!("{mi} {h} {dom} {mo} {dow}")).ok()
    };
    // Many slots a day (the enumeration is capped).
    let dense = (
        prop_oneof![
            Just("*".to_string()),
            (2u32..=30).prop_map(|k| format!("*/{k}")),
            (0u32..50, 1u32..10).prop_map(|(a, n)| format!("{a}-{}", a + n)),
            (0u32..30, 5u32..20).prop_map(|(a, k)| format!("{a}-59/{k}")),
        ],
        prop_oneof![
            Just("*".to_string()),
            (2u32..=6).prop_map(|k| format!("*/{k}")),
            (0u32..20, 1u32..4).prop_map(|(a, n)| format!("{a}-{}", a + n)),
        ],
        Just("*".to_string()),
        Just("*".to_string()),
        prop_oneof![3 => Just("*".to_string()), 1 => Just("MON-FRI".to_string())],
    )
        .prop_filter_map("parses", parse);
    // A few slots a day, at hours DST likes to touch.
    let daily = (
        prop_oneof![
            (0u32..60).prop_map(|m| m.to_string()),
            Just("0,30".to_string()),
            Just("15,45".to_string()),
        ],
        prop_oneof![
            3 => prop::sample::select(vec![0u32, 1, 2, 3, 23]).prop_map(|h| h.to_string()),
            1 => (0u32..24).prop_map(|h| h.to_string()),
            1 => (0u32..3, 1u32..3).prop_map(|(a, n)| format!("{a}-{}", a + n)),
            1 => Just("1,2,3".to_string()),
        ],
        prop_oneof![4 => Just("*".to_string()), 1 => dom_field()],
        Just("*".to_string()),
        prop_oneof![4 => Just("*".to_string()), 1 => dow_field()],
    )
        .prop_filter_map("parses", parse);
    // Anything, L/W/#, Vixie OR and `+` included.
    let general = (
        minute_field(),
        hour_field(),
        dom_field(),
        month_field(),
        dow_field(),
    )
        .prop_filter_map("parses", parse);
    let eventbridge = (
        minute_field(),
        hour_field(),
        prop_oneof![
            Just("*".to_string()),
            (1u32..=28).prop_map(|d| d.to_string())
        ],
        prop_oneof![
            Just("*".to_string()),
            (1970u32..2100).prop_map(|y| y.to_string()),
            (1970u32..2100, 1u32..3).prop_map(|(y, n)| format!("{y}-{}", y + n)),
            (1970u32..2100, 1u32..3).prop_map(|(y, n)| format!("{y},{}", y + 2 * n)),
        ],
    )
        .prop_filter_map("parses", |(mi, h, dom, years)| {
            CronExpr::parse_dialect(
                &format!("cron({mi} {h} {dom} * ? {years})"),
                Dialect::EventBridge,
            )
            .ok()
        });
    prop_oneof![2 => dense, 4 => daily, 3 => general, 1 => eventbridge]
}

/// Every transition of every zone between 1850 and 2100.
fn transitions() -> &'static Vec<Vec<i64>> {
    static CELL: OnceLock<Vec<Vec<i64>>> = OnceLock::new();
    CELL.get_or_init(|| {
        let end = t("2100-01-01T00:00:00Z").as_second();
        ZONES
            .iter()
            .map(|name| {
                let z = zone(name);
                let mut out = Vec::new();
                let mut cur = t("1850-01-01T00:00:00Z").as_second();
                while let Some((at, _)) = z.next_transition(cur) {
                    if at > end {
                        break;
                    }
                    out.push(at);
                    cur = at;
                }
                out
            })
            .collect()
    })
}

#[derive(Debug, Clone)]
enum Start {
    /// Seconds since the epoch, between 1850 and 2100.
    Anywhere(i64),
    /// The `i`-th transition of the zone (modulo their number), plus seconds.
    NearTransition(usize, i64),
}

fn start() -> impl Strategy<Value = Start> {
    let lo = t("1850-01-01T00:00:00Z").as_second();
    let hi = t("2100-01-01T00:00:00Z").as_second();
    prop_oneof![
        1 => (lo..hi).prop_map(Start::Anywhere),
        4 => (any::<usize>(), -3 * 3600i64..3600).prop_map(|(i, d)| Start::NearTransition(i, d)),
        1 => (any::<usize>(), -10 * DAY..DAY).prop_map(|(i, d)| Start::NearTransition(i, d)),
    ]
}

fn span() -> impl Strategy<Value = i64> {
    prop_oneof![
        2 => 0i64..3 * 3600,
        1 => 0i64..2 * DAY,
        2 => 0i64..60 * DAY,
    ]
}

#[derive(Debug, Clone, Copy)]
enum Flavour {
    Job(DstPolicy),
    WallClock(DstPolicy),
}

fn flavour() -> impl Strategy<Value = Flavour> {
    (0usize..POLICIES.len(), any::<bool>()).prop_map(|(p, wall)| {
        if wall {
            Flavour::WallClock(POLICIES[p])
        } else {
            Flavour::Job(POLICIES[p])
        }
    })
}

fn nanos() -> impl Strategy<Value = i32> {
    prop_oneof![3 => Just(0), 1 => 0i32..1_000_000_000]
}

#[derive(Debug, Clone)]
struct Case {
    expr: CronExpr,
    zone_index: usize,
    flavour: Flavour,
    start: Start,
    span: i64,
    after_ns: i32,
    until_ns: i32,
}

fn case() -> impl Strategy<Value = Case> {
    (
        expression(),
        0usize..ZONES.len(),
        flavour(),
        start(),
        span(),
        (nanos(), nanos()),
    )
        .prop_map(
            |(expr, zone_index, flavour, start, span, (after_ns, until_ns))| Case {
                expr,
                zone_index,
                flavour,
                start,
                span,
                after_ns,
                until_ns,
            },
        )
}

/// What the random cases covered, so that a generator change that stops
/// reaching DST transitions fails loudly instead of passing vacuously.
#[derive(Debug, Default)]
struct Coverage {
    cases: u64,
    nonzero: u64,
    capped: u64,
    slots: u64,
    across_transition: u64,
    shifted: u64,
    second_pass: u64,
}

#[test]
fn count_between_agrees_with_enumeration() {
    let coverage = std::cell::RefCell::new(Coverage::default());
    let mut runner = proptest::test_runner::TestRunner::new(config(CASES));
    let result = runner.run(&case(), |c| {
        let z = zone(ZONES[c.zone_index]);
        let schedule = match c.flavour {
            Flavour::Job(p) => Schedule::new(c.expr, z, p),
            Flavour::WallClock(p) => Schedule::wall_clock(c.expr, z, p),
        };
        let after_second = match c.start {
            Start::Anywhere(s) => s,
            Start::NearTransition(i, d) => {
                let list = &transitions()[c.zone_index];
                if list.is_empty() {
                    t("2026-03-08T07:00:00Z").as_second() + d
                } else {
                    list[i % list.len()] + d
                }
            }
        };
        let after = Timestamp::new(after_second, c.after_ns).expect("in range");
        let until = Timestamp::new(after_second + c.span, c.until_ns).expect("in range");
        let (n, covered, kinds) = enumerate(&schedule, after, until);
        prop_assert_eq!(
            schedule.count_between(after, covered),
            n,
            "{} in {} {:?}: ({}, {}]",
            schedule.cron(),
            schedule.zone().name(),
            c.flavour,
            after,
            covered
        );
        let mut cov = coverage.borrow_mut();
        cov.cases += 1;
        cov.nonzero += u64::from(n > 0);
        cov.capped += u64::from(covered < until);
        cov.slots += n;
        cov.across_transition += u64::from(
            schedule
                .zone()
                .next_transition(after.as_second())
                .is_some_and(|(at, _)| at <= covered.as_second()),
        );
        cov.shifted += u64::from(kinds.0 > 0);
        cov.second_pass += u64::from(kinds.1 > 0);
        Ok(())
    });
    let cov = coverage.into_inner();
    eprintln!("{cov:?}");
    if let Err(e) = result {
        panic!("{e}");
    }
    // The final run (after any shrinking) is a success, so these are the
    // counts over all generated cases.
    assert!(cov.nonzero * 2 > cov.cases, "{cov:?}");
    assert!(cov.across_transition * 4 > cov.cases, "{cov:?}");
    assert!(
        cov.shifted >= 20 && cov.second_pass >= 20 && cov.capped >= 20,
        "{cov:?}"
    );
}
