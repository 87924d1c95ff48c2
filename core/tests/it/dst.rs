//! DST behaviour at real transitions (docs/design.md §5).

use cronslot_core::{
    CLOCK_CHANGE_SECONDS, CronExpr, DstGap, DstOverlap, DstPolicy, GapCause, Schedule, SlotKind,
    Zone,
};
use jiff::Timestamp;

fn sched(expr: &str, zone: &str, gap: DstGap, overlap: DstOverlap) -> Schedule {
    Schedule::new(
        CronExpr::parse(expr).expect("valid expression"),
        Zone::get(zone).expect("valid zone"),
        DstPolicy { gap, overlap },
    )
}

fn t(s: &str) -> Timestamp {
    s.parse().expect("valid timestamp")
}

fn next_n(s: &Schedule, after: &str, n: usize) -> Vec<String> {
    s.iter_after(t(after))
        .take(n)
        .map(|o| o.instant.to_string())
        .collect()
}

#[test]
fn spring_forward_fixed_time_shifts_to_end_of_gap() {
    let s = sched(
        "30 2 * * *",
        "America/New_York",
        DstGap::Shift,
        DstOverlap::Once,
    );
    // 2026-03-08 02:30 does not exist in New York: runs at 03:00 EDT = 07:00Z.
    assert_eq!(
        next_n(&s, "2026-03-07T00:00:00Z", 3),
        [
            "2026-03-07T07:30:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-09T06:30:00Z"
        ]
    );
    let o = s.next_occurrence(t("2026-03-07T08:00:00Z")).unwrap();
    assert_eq!(o.kind, SlotKind::ShiftedFromGap);
}

#[test]
fn spring_forward_fixed_time_skip() {
    let s = sched(
        "30 2 * * *",
        "America/New_York",
        DstGap::Skip,
        DstOverlap::Once,
    );
    assert_eq!(
        next_n(&s, "2026-03-07T00:00:00Z", 2),
        ["2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z"]
    );
    let skips = s.gap_skips(t("2026-03-07T00:00:00Z"), t("2026-03-10T00:00:00Z"));
    assert_eq!(skips.len(), 1);
    assert_eq!(skips[0].transition, t("2026-03-08T07:00:00Z"));
}

#[test]
fn fall_back_fixed_time_once_and_twice() {
    let once = sched(
        "30 1 * * *",
        "America/New_York",
        DstGap::Shift,
        DstOverlap::Once,
    );
    assert_eq!(
        next_n(&once, "2026-10-31T12:00:00Z", 2),
        ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
    );
    let twice = sched(
        "30 1 * * *",
        "America/New_York",
        DstGap::Shift,
        DstOverlap::Twice,
    );
    assert_eq!(
        next_n(&twice, "2026-10-31T12:00:00Z", 3),
        [
            "2026-11-01T05:30:00Z",
            "2026-11-01T06:30:00Z",
            "2026-11-02T06:30:00Z"
        ]
    );
    // Starting inside the second pass, the once policy does not fire again.
    assert_eq!(
        next_n(&once, "2026-11-01T06:10:00Z", 1),
        ["2026-11-02T06:30:00Z"]
    );
}

#[test]
fn interval_like_follows_real_time() {
    let s = sched(
        "*/30 * * * *",
        "America/New_York",
        DstGap::Shift,
        DstOverlap::Once,
    );
    assert_eq!(
        next_n(&s, "2026-11-01T04:40:00Z", 5),
        [
            "2026-11-01T05:00:00Z",
            "2026-11-01T05:30:00Z",
            "2026-11-01T06:00:00Z",
            "2026-11-01T06:30:00Z",
            "2026-11-01T07:00:00Z"
        ]
    );
    let hourly = sched(
        "0 * * * *",
        "America/New_York",
        DstGap::Shift,
        DstOverlap::Once,
    );
    // 01:00 EST is 06:00Z, 03:00 EDT is 07:00Z on 2026-03-08: no 02:00.
    assert_eq!(
        next_n(&hourly, "2026-03-08T05:30:00Z", 3),
        [
            "2026-03-08T06:00:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-08T08:00:00Z"
        ]
    );
}

#[test]
fn prev_matches_next() {
    for (expr, zone) in [
        ("30 2 * * *", "America/New_York"),
        ("30 1 * * *", "America/New_York"),
        ("*/30 * * * *", "America/New_York"),
        ("0 2 * * *", "Australia/Lord_Howe"),
        ("15 9 * * *", "Pacific/Apia"),
    ] {
        for policy in [
            DstPolicy::default(),
            DstPolicy::SKIP_ONCE,
            DstPolicy {
                gap: DstGap::Shift,
                overlap: DstOverlap::Twice,
            },
        ] {
            let s = Schedule::new(
                CronExpr::parse(expr).unwrap(),
                Zone::get(zone).unwrap(),
                policy,
            );
            let fwd: Vec<_> = s
                .iter_after(t("2011-01-01T00:00:00Z"))
                .take(800)
                .map(|o| o.instant)
                .collect();
            for w in fwd.windows(2) {
                assert_eq!(
                    s.prev_before(w[1]),
                    Some(w[0]),
                    "{expr} {zone} {policy:?} before {}",
                    w[1]
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Both policies on the docs/design.md §5 examples, and the odd zones: 30-minute
// shifts (Lord Howe), midnight transitions (Santiago), a 45-minute offset
// (Chatham), Ramadan (Casablanca) and a skipped day (Apia).

const ALL_POLICIES: [DstPolicy; 6] = [
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

const SHIFT_ALWAYS: DstPolicy = DstPolicy {
    gap: DstGap::ShiftAlways,
    overlap: DstOverlap::Once,
};

fn with(expr: &str, zone: &str, policy: DstPolicy) -> Schedule {
    sched(expr, zone, policy.gap, policy.overlap)
}

/// The next `n` slots as (UTC instant, local wall clock, kind).
fn slots(s: &Schedule, after: &str, n: usize) -> Vec<(String, String, SlotKind)> {
    let tz = s.zone().time_zone().clone();
    s.iter_after(t(after))
        .take(n)
        .map(|o| {
            (
                o.instant.to_string(),
                o.instant
                    .to_zoned_datetime(tz.clone())
                    .datetime()
                    .to_string(),
                o.kind,
            )
        })
        .collect()
}

fn slot(utc: &str, local: &str, kind: SlotKind) -> (String, String, SlotKind) {
    (utc.to_string(), local.to_string(), kind)
}

use SlotKind::{Regular, SecondPass, ShiftedFromGap};

/// Every slot found forwards is found backwards too, and is a slot.
fn assert_prev_next_agree(s: &Schedule, from: &str, n: usize) {
    let fwd: Vec<_> = s.iter_after(t(from)).take(n).map(|o| o.instant).collect();
    assert_eq!(fwd.len(), n);
    for w in fwd.windows(2) {
        assert_eq!(
            s.prev_before(w[1]),
            Some(w[0]),
            "{:?} before {}",
            s.cron().source(),
            w[1]
        );
        assert!(s.is_slot(w[1]));
    }
}

#[test]
fn design_examples_under_every_policy() {
    let ny = "America/New_York";
    for p in ALL_POLICIES {
        // Spring forward: 02:30 does not exist on 2026-03-08.
        let s = with("30 2 * * *", ny, p);
        let got = slots(&s, "2026-03-07T12:00:00Z", 2);
        let skips = s.gap_skips(t("2026-03-07T12:00:00Z"), t("2026-03-09T12:00:00Z"));
        match p.gap {
            // A one-hour jump is DST: shift_always and shift agree.
            DstGap::Shift | DstGap::ShiftAlways => {
                assert_eq!(
                    got[0],
                    slot(
                        "2026-03-08T07:00:00Z",
                        "2026-03-08T03:00:00",
                        ShiftedFromGap
                    )
                );
                assert_eq!(
                    got[1],
                    slot("2026-03-09T06:30:00Z", "2026-03-09T02:30:00", Regular)
                );
                assert!(skips.is_empty());
            }
            DstGap::Skip => {
                assert_eq!(
                    got[0],
                    slot("2026-03-09T06:30:00Z", "2026-03-09T02:30:00", Regular)
                );
                assert_eq!(skips.len(), 1);
                assert_eq!(skips[0].local, cronslot_core::Civil::new(2026, 3, 8, 2, 30));
                assert_eq!(skips[0].transition, t("2026-03-08T07:00:00Z"));
            }
        }
        // Fall back: 01:30 happens twice on 2026-11-01.
        let s = with("30 1 * * *", ny, p);
        let got = slots(&s, "2026-10-31T12:00:00Z", 3);
        assert_eq!(
            got[0],
            slot("2026-11-01T05:30:00Z", "2026-11-01T01:30:00", Regular)
        );
        match p.overlap {
            DstOverlap::Once => {
                assert_eq!(
                    got[1],
                    slot("2026-11-02T06:30:00Z", "2026-11-02T01:30:00", Regular)
                )
            }
            DstOverlap::Twice => {
                assert_eq!(
                    got[1],
                    slot("2026-11-01T06:30:00Z", "2026-11-01T01:30:00", SecondPass)
                );
                assert_eq!(
                    got[2],
                    slot("2026-11-02T06:30:00Z", "2026-11-02T01:30:00", Regular)
                );
            }
        }
        assert_prev_next_agree(&s, "2026-10-25T00:00:00Z", 20);
    }
}

#[test]
fn interval_like_ignores_the_policy() {
    let ny = "America/New_York";
    for expr in ["*/30 * * * *", "0 * * * *", "15 */2 * * *", "* * * * *"] {
        let reference: Vec<_> = [
            slots(&with(expr, ny, ALL_POLICIES[0]), "2026-03-08T05:00:00Z", 8),
            slots(&with(expr, ny, ALL_POLICIES[0]), "2026-11-01T04:00:00Z", 8),
        ]
        .concat();
        for p in ALL_POLICIES {
            let s = with(expr, ny, p);
            let got = [
                slots(&s, "2026-03-08T05:00:00Z", 8),
                slots(&s, "2026-11-01T04:00:00Z", 8),
            ]
            .concat();
            assert_eq!(got, reference, "{expr} {p:?}");
            assert!(got.iter().all(|(_, _, k)| *k != ShiftedFromGap), "{expr}");
            assert!(
                s.gap_skips(t("2026-03-01T00:00:00Z"), t("2026-03-31T00:00:00Z"))
                    .is_empty(),
                "{expr} {p:?}"
            );
        }
    }
    // The overlap's second pass is reported as such.
    let hourly = slots(
        &with("0 * * * *", ny, ALL_POLICIES[0]),
        "2026-11-01T04:30:00Z",
        3,
    );
    assert_eq!(
        hourly,
        [
            slot("2026-11-01T05:00:00Z", "2026-11-01T01:00:00", Regular),
            slot("2026-11-01T06:00:00Z", "2026-11-01T01:00:00", SecondPass),
            slot("2026-11-01T07:00:00Z", "2026-11-01T02:00:00", Regular),
        ]
    );
}

#[test]
fn every_slot_in_a_gap_is_recorded_under_skip() {
    let ny = "America/New_York";
    let skip = with("0,15,30,45 2 * * *", ny, DstPolicy::SKIP_ONCE);
    let skips = skip.gap_skips(t("2026-03-08T00:00:00Z"), t("2026-03-09T00:00:00Z"));
    let locals: Vec<_> = skips
        .iter()
        .map(|g| (g.local.hour, g.local.minute))
        .collect();
    assert_eq!(locals, [(2, 0), (2, 15), (2, 30), (2, 45)]);
    assert_eq!(
        slots(&skip, "2026-03-08T05:00:00Z", 1),
        [slot("2026-03-09T06:00:00Z", "2026-03-09T02:00:00", Regular)]
    );
    // Under shift the gap's slots run once, at its end, as the first of them.
    let shift = with("0,15,30,45 2 * * *", ny, DstPolicy::default());
    assert_eq!(
        slots(&shift, "2026-03-08T05:00:00Z", 2),
        [
            slot(
                "2026-03-08T07:00:00Z",
                "2026-03-08T03:00:00",
                ShiftedFromGap
            ),
            slot("2026-03-09T06:00:00Z", "2026-03-09T02:00:00", Regular),
        ]
    );
    let o = shift.next_occurrence(t("2026-03-08T05:00:00Z")).unwrap();
    assert_eq!(o.local, cronslot_core::Civil::new(2026, 3, 8, 2, 0));
    // The window is (after, until]: a transition exactly at `until` counts.
    assert_eq!(
        skip.gap_skips(t("2026-03-08T06:59:59Z"), t("2026-03-08T07:00:00Z"))
            .len(),
        4
    );
    assert!(
        skip.gap_skips(t("2026-03-08T07:00:00Z"), t("2026-03-09T00:00:00Z"))
            .is_empty()
    );
}

#[test]
fn lord_howe_thirty_minute_gap() {
    // 2026-10-04 02:00 (+10:30) → 02:30 (+11) at 2026-10-03T15:30Z.
    let z = "Australia/Lord_Howe";
    let shift = with("15 2 * * *", z, DstPolicy::default());
    assert_eq!(
        slots(&shift, "2026-10-02T12:00:00Z", 3),
        [
            slot("2026-10-02T15:45:00Z", "2026-10-03T02:15:00", Regular),
            slot(
                "2026-10-03T15:30:00Z",
                "2026-10-04T02:30:00",
                ShiftedFromGap
            ),
            slot("2026-10-04T15:15:00Z", "2026-10-05T02:15:00", Regular),
        ]
    );
    let skip = with("15 2 * * *", z, DstPolicy::SKIP_ONCE);
    assert_eq!(
        slots(&skip, "2026-10-02T12:00:00Z", 2),
        [
            slot("2026-10-02T15:45:00Z", "2026-10-03T02:15:00", Regular),
            slot("2026-10-04T15:15:00Z", "2026-10-05T02:15:00", Regular),
        ]
    );
    let skipped = skip.gap_skips(t("2026-10-02T12:00:00Z"), t("2026-10-05T12:00:00Z"));
    assert_eq!(skipped.len(), 1);
    assert_eq!(
        skipped[0].local,
        cronslot_core::Civil::new(2026, 10, 4, 2, 15)
    );
    assert_eq!(skipped[0].transition, t("2026-10-03T15:30:00Z"));
    // Starting a second before the transition still finds the shifted slot;
    // starting at it does not (strictly after).
    assert_eq!(
        slots(&shift, "2026-10-03T15:29:59Z", 1)[0].0,
        "2026-10-03T15:30:00Z"
    );
    assert_eq!(
        slots(&shift, "2026-10-03T15:30:00Z", 1)[0].0,
        "2026-10-04T15:15:00Z"
    );
    // 02:45 is after the gap: untouched.
    assert_eq!(
        slots(
            &with("45 2 * * *", z, DstPolicy::SKIP_ONCE),
            "2026-10-03T12:00:00Z",
            1
        ),
        [slot("2026-10-03T15:45:00Z", "2026-10-04T02:45:00", Regular)]
    );
    // 02:00 is inside the gap and 02:30 is its end: under shift they are one
    // run at 15:30Z; under skip 02:00 is recorded and 02:30 runs.
    assert_eq!(
        slots(
            &with("0,30 2 * * *", z, DstPolicy::default()),
            "2026-10-03T15:00:00Z",
            2
        ),
        [
            slot(
                "2026-10-03T15:30:00Z",
                "2026-10-04T02:30:00",
                ShiftedFromGap
            ),
            slot("2026-10-04T15:00:00Z", "2026-10-05T02:00:00", Regular),
        ]
    );
    assert_eq!(
        slots(
            &with("0,30 2 * * *", z, DstPolicy::SKIP_ONCE),
            "2026-10-03T15:00:00Z",
            1
        ),
        [slot("2026-10-03T15:30:00Z", "2026-10-04T02:30:00", Regular)]
    );
    // Interval-like: real time, the gap's quarter hours simply do not exist.
    assert_eq!(
        slots(
            &with("*/15 * * * *", z, DstPolicy::default()),
            "2026-10-03T15:00:00Z",
            3
        ),
        [
            slot("2026-10-03T15:15:00Z", "2026-10-04T01:45:00", Regular),
            slot("2026-10-03T15:30:00Z", "2026-10-04T02:30:00", Regular),
            slot("2026-10-03T15:45:00Z", "2026-10-04T02:45:00", Regular),
        ]
    );
    assert_prev_next_agree(&shift, "2026-09-20T00:00:00Z", 30);
    assert_prev_next_agree(&skip, "2026-09-20T00:00:00Z", 30);
}

#[test]
fn lord_howe_thirty_minute_overlap() {
    // 2026-04-05 02:00 (+11) → 01:30 (+10:30) at 2026-04-04T15:00Z.
    let z = "Australia/Lord_Howe";
    for p in ALL_POLICIES {
        // 02:15 comes once, after the repeated half hour.
        assert_eq!(
            slots(&with("15 2 * * *", z, p), "2026-04-04T12:00:00Z", 1),
            [slot("2026-04-04T15:45:00Z", "2026-04-05T02:15:00", Regular)]
        );
    }
    let once = with("45 1 * * *", z, DstPolicy::default());
    assert_eq!(
        slots(&once, "2026-04-04T12:00:00Z", 2),
        [
            slot("2026-04-04T14:45:00Z", "2026-04-05T01:45:00", Regular),
            slot("2026-04-05T15:15:00Z", "2026-04-06T01:45:00", Regular),
        ]
    );
    // Starting inside the second pass does not run it again.
    assert_eq!(
        slots(&once, "2026-04-04T15:05:00Z", 1)[0].0,
        "2026-04-05T15:15:00Z"
    );
    let twice = with(
        "45 1 * * *",
        z,
        DstPolicy {
            gap: DstGap::Shift,
            overlap: DstOverlap::Twice,
        },
    );
    assert_eq!(
        slots(&twice, "2026-04-04T12:00:00Z", 3),
        [
            slot("2026-04-04T14:45:00Z", "2026-04-05T01:45:00", Regular),
            slot("2026-04-04T15:15:00Z", "2026-04-05T01:45:00", SecondPass),
            slot("2026-04-05T15:15:00Z", "2026-04-06T01:45:00", Regular),
        ]
    );
    assert_eq!(
        twice.prev_before(t("2026-04-04T15:15:00Z")),
        Some(t("2026-04-04T14:45:00Z"))
    );
    assert_eq!(
        once.prev_before(t("2026-04-05T15:15:00Z")),
        Some(t("2026-04-04T14:45:00Z"))
    );
    assert_eq!(
        slots(
            &with("*/15 * * * *", z, DstPolicy::default()),
            "2026-04-04T14:20:00Z",
            5
        ),
        [
            slot("2026-04-04T14:30:00Z", "2026-04-05T01:30:00", Regular),
            slot("2026-04-04T14:45:00Z", "2026-04-05T01:45:00", Regular),
            slot("2026-04-04T15:00:00Z", "2026-04-05T01:30:00", SecondPass),
            slot("2026-04-04T15:15:00Z", "2026-04-05T01:45:00", SecondPass),
            slot("2026-04-04T15:30:00Z", "2026-04-05T02:00:00", Regular),
        ]
    );
    assert_prev_next_agree(&once, "2026-03-20T00:00:00Z", 30);
    assert_prev_next_agree(&twice, "2026-03-20T00:00:00Z", 30);
}

#[test]
fn santiago_changes_at_midnight() {
    let z = "America/Santiago";
    // 2026-09-06 00:00 (-04) → 01:00 (-03) at 04:00Z: midnight does not exist.
    for expr in ["0 0 * * *", "@daily"] {
        assert_eq!(
            slots(
                &with(expr, z, DstPolicy::default()),
                "2026-09-05T00:00:00Z",
                3
            ),
            [
                slot("2026-09-05T04:00:00Z", "2026-09-05T00:00:00", Regular),
                slot(
                    "2026-09-06T04:00:00Z",
                    "2026-09-06T01:00:00",
                    ShiftedFromGap
                ),
                slot("2026-09-07T03:00:00Z", "2026-09-07T00:00:00", Regular),
            ],
            "{expr}"
        );
        let skip = with(expr, z, DstPolicy::SKIP_ONCE);
        assert_eq!(
            slots(&skip, "2026-09-05T00:00:00Z", 2),
            [
                slot("2026-09-05T04:00:00Z", "2026-09-05T00:00:00", Regular),
                slot("2026-09-07T03:00:00Z", "2026-09-07T00:00:00", Regular),
            ]
        );
        let skipped = skip.gap_skips(t("2026-09-05T00:00:00Z"), t("2026-09-08T00:00:00Z"));
        assert_eq!(skipped.len(), 1);
        assert_eq!(
            skipped[0].local,
            cronslot_core::Civil::new(2026, 9, 6, 0, 0)
        );
    }
    // 2026-04-05 00:00 (-03) → 2026-04-04 23:00 (-04) at 03:00Z: Saturday's
    // last hour happens twice and Sunday's midnight once, at 04:00Z.
    assert_eq!(
        slots(
            &with("0 0 * * *", z, DstPolicy::default()),
            "2026-04-04T12:00:00Z",
            1
        ),
        [slot("2026-04-05T04:00:00Z", "2026-04-05T00:00:00", Regular)]
    );
    let once = with("30 23 * * *", z, DstPolicy::default());
    assert_eq!(
        slots(&once, "2026-04-04T12:00:00Z", 2),
        [
            slot("2026-04-05T02:30:00Z", "2026-04-04T23:30:00", Regular),
            slot("2026-04-06T03:30:00Z", "2026-04-05T23:30:00", Regular),
        ]
    );
    let twice = with(
        "30 23 * * *",
        z,
        DstPolicy {
            gap: DstGap::Skip,
            overlap: DstOverlap::Twice,
        },
    );
    assert_eq!(
        slots(&twice, "2026-04-04T12:00:00Z", 2),
        [
            slot("2026-04-05T02:30:00Z", "2026-04-04T23:30:00", Regular),
            slot("2026-04-05T03:30:00Z", "2026-04-04T23:30:00", SecondPass),
        ]
    );
    assert_eq!(
        slots(
            &with("0 * * * *", z, DstPolicy::default()),
            "2026-04-05T00:30:00Z",
            4
        ),
        [
            slot("2026-04-05T01:00:00Z", "2026-04-04T22:00:00", Regular),
            slot("2026-04-05T02:00:00Z", "2026-04-04T23:00:00", Regular),
            slot("2026-04-05T03:00:00Z", "2026-04-04T23:00:00", SecondPass),
            slot("2026-04-05T04:00:00Z", "2026-04-05T00:00:00", Regular),
        ]
    );
    for p in ALL_POLICIES {
        assert_prev_next_agree(&with("0 0 * * *", z, p), "2026-03-01T00:00:00Z", 250);
        assert_prev_next_agree(&with("30 23 * * *", z, p), "2026-03-01T00:00:00Z", 250);
    }
}

#[test]
fn chatham_forty_five_minute_offset() {
    let z = "Pacific/Chatham";
    // 2026-09-27 02:45 (+12:45) → 03:45 (+13:45) at 2026-09-26T14:00Z.
    let shift = with("0 3 * * *", z, DstPolicy::default());
    assert_eq!(
        slots(&shift, "2026-09-25T12:00:00Z", 3),
        [
            slot("2026-09-25T14:15:00Z", "2026-09-26T03:00:00", Regular),
            slot(
                "2026-09-26T14:00:00Z",
                "2026-09-27T03:45:00",
                ShiftedFromGap
            ),
            slot("2026-09-27T13:15:00Z", "2026-09-28T03:00:00", Regular),
        ]
    );
    let skip = with("0 3 * * *", z, DstPolicy::SKIP_ONCE);
    assert_eq!(
        slots(&skip, "2026-09-25T12:00:00Z", 2)[1],
        slot("2026-09-27T13:15:00Z", "2026-09-28T03:00:00", Regular)
    );
    assert_eq!(
        skip.gap_skips(t("2026-09-25T12:00:00Z"), t("2026-09-28T12:00:00Z"))
            .len(),
        1
    );
    // Just before the gap: untouched.
    assert_eq!(
        slots(
            &with("30 2 * * *", z, DstPolicy::SKIP_ONCE),
            "2026-09-26T12:00:00Z",
            1
        ),
        [slot("2026-09-26T13:45:00Z", "2026-09-27T02:30:00", Regular)]
    );
    assert_eq!(
        slots(
            &with("*/30 * * * *", z, DstPolicy::default()),
            "2026-09-26T13:30:00Z",
            2
        ),
        [
            slot("2026-09-26T13:45:00Z", "2026-09-27T02:30:00", Regular),
            slot("2026-09-26T14:15:00Z", "2026-09-27T04:00:00", Regular),
        ]
    );
    // 2026-04-05 03:45 (+13:45) → 02:45 (+12:45) at 2026-04-04T14:00Z.
    assert_eq!(
        slots(
            &with("0 3 * * *", z, DstPolicy::default()),
            "2026-04-04T12:00:00Z",
            2
        ),
        [
            slot("2026-04-04T13:15:00Z", "2026-04-05T03:00:00", Regular),
            slot("2026-04-05T14:15:00Z", "2026-04-06T03:00:00", Regular),
        ]
    );
    assert_eq!(
        slots(
            &with(
                "0 3 * * *",
                z,
                DstPolicy {
                    gap: DstGap::Shift,
                    overlap: DstOverlap::Twice
                }
            ),
            "2026-04-04T12:00:00Z",
            2
        ),
        [
            slot("2026-04-04T13:15:00Z", "2026-04-05T03:00:00", Regular),
            slot("2026-04-04T14:15:00Z", "2026-04-05T03:00:00", SecondPass),
        ]
    );
    for p in ALL_POLICIES {
        assert_prev_next_agree(&with("0 3 * * *", z, p), "2026-03-01T00:00:00Z", 250);
    }
}

#[test]
fn casablanca_ramadan() {
    let z = "Africa/Casablanca";
    // 2026-02-15 03:00 (+01) → 02:00 (+00) at 02:00Z for Ramadan.
    let once = with("30 2 * * *", z, DstPolicy::default());
    assert_eq!(
        slots(&once, "2026-02-14T12:00:00Z", 2),
        [
            slot("2026-02-15T01:30:00Z", "2026-02-15T02:30:00", Regular),
            slot("2026-02-16T02:30:00Z", "2026-02-16T02:30:00", Regular),
        ]
    );
    let twice = with(
        "30 2 * * *",
        z,
        DstPolicy {
            gap: DstGap::Shift,
            overlap: DstOverlap::Twice,
        },
    );
    assert_eq!(
        slots(&twice, "2026-02-14T12:00:00Z", 2)[1],
        slot("2026-02-15T02:30:00Z", "2026-02-15T02:30:00", SecondPass)
    );
    // 2026-03-22 02:00 (+00) → 03:00 (+01) at 02:00Z after Ramadan.
    assert_eq!(
        slots(&once, "2026-03-21T12:00:00Z", 2),
        [
            slot(
                "2026-03-22T02:00:00Z",
                "2026-03-22T03:00:00",
                ShiftedFromGap
            ),
            slot("2026-03-23T01:30:00Z", "2026-03-23T02:30:00", Regular),
        ]
    );
    let skip = with("30 2 * * *", z, DstPolicy::SKIP_ONCE);
    assert_eq!(
        slots(&skip, "2026-03-21T12:00:00Z", 1),
        [slot("2026-03-23T01:30:00Z", "2026-03-23T02:30:00", Regular)]
    );
    assert_eq!(
        skip.gap_skips(t("2026-03-21T12:00:00Z"), t("2026-03-23T12:00:00Z"))[0].transition,
        t("2026-03-22T02:00:00Z")
    );
    // Noon moves with the offset: 12:00Z during Ramadan, 11:00Z after.
    let noon = with("0 12 * * *", z, DstPolicy::default());
    assert_eq!(
        slots(&noon, "2026-03-01T00:00:00Z", 1)[0].0,
        "2026-03-01T12:00:00Z"
    );
    assert_eq!(
        slots(&noon, "2026-04-01T00:00:00Z", 1)[0].0,
        "2026-04-01T11:00:00Z"
    );
    for p in ALL_POLICIES {
        assert_prev_next_agree(&with("30 2 * * *", z, p), "2025-01-01T00:00:00Z", 500);
    }
}

#[test]
fn apia_skipped_a_day() {
    // 2011-12-29 24:00 (-10) became 2011-12-31 00:00 (+14) at
    // 2011-12-30T10:00Z: a jump of 24 hours, a clock change, not DST. As in
    // Vixie cron (and croner), the 30th's slot does not run under the
    // default `shift`; the coordinator records it as missed (clock_change).
    let z = "Pacific/Apia";
    let skipped_day = [
        slot("2011-12-29T19:00:00Z", "2011-12-29T09:00:00", Regular),
        slot("2011-12-30T19:00:00Z", "2011-12-31T09:00:00", Regular),
        slot("2011-12-31T19:00:00Z", "2012-01-01T09:00:00", Regular),
    ];
    for policy in [DstPolicy::default(), DstPolicy::SKIP_ONCE] {
        let s = with("0 9 * * *", z, policy);
        assert_eq!(
            slots(&s, "2011-12-29T12:00:00Z", 3),
            skipped_day,
            "{policy:?}"
        );
        assert_eq!(
            s.prev_before(t("2011-12-30T19:00:00Z")),
            Some(t("2011-12-29T19:00:00Z"))
        );
        assert!(!s.is_slot(t("2011-12-30T10:00:00Z")));
        let skipped = s.gap_skips(t("2011-12-29T12:00:00Z"), t("2011-12-31T12:00:00Z"));
        assert_eq!(skipped.len(), 1);
        assert_eq!(
            skipped[0].local,
            cronslot_core::Civil::new(2011, 12, 30, 9, 0)
        );
        assert_eq!(skipped[0].transition, t("2011-12-30T10:00:00Z"));
        assert_eq!(skipped[0].jump_seconds, 24 * 3600);
        assert_eq!(skipped[0].cause, GapCause::ClockChange);
        assert_prev_next_agree(&s, "2011-12-20T00:00:00Z", 30);
    }

    // shift_always keeps the slot: it runs at the end of the jump.
    let always = with("0 9 * * *", z, SHIFT_ALWAYS);
    let got = slots(&always, "2011-12-29T12:00:00Z", 3);
    assert_eq!(
        got,
        [
            slot("2011-12-29T19:00:00Z", "2011-12-29T09:00:00", Regular),
            slot(
                "2011-12-30T10:00:00Z",
                "2011-12-31T00:00:00",
                ShiftedFromGap
            ),
            slot("2011-12-30T19:00:00Z", "2011-12-31T09:00:00", Regular),
        ]
    );
    let o = always.next_occurrence(t("2011-12-29T20:00:00Z")).unwrap();
    assert_eq!(o.local, cronslot_core::Civil::new(2011, 12, 30, 9, 0));
    assert_eq!(
        always.prev_before(t("2011-12-30T19:00:00Z")),
        Some(t("2011-12-30T10:00:00Z"))
    );
    assert!(always.is_slot(t("2011-12-30T10:00:00Z")));
    assert!(
        always
            .gap_skips(t("2011-12-29T12:00:00Z"), t("2011-12-31T12:00:00Z"))
            .is_empty()
    );

    // Two slots in the missing day: both recorded under shift and skip,
    // one run under shift_always.
    for policy in [DstPolicy::default(), DstPolicy::SKIP_ONCE] {
        let two = with("0 9,15 * * *", z, policy);
        let locals: Vec<_> = two
            .gap_skips(t("2011-12-29T12:00:00Z"), t("2011-12-31T12:00:00Z"))
            .iter()
            .map(|g| (g.local, g.cause))
            .collect();
        assert_eq!(
            locals,
            [
                (
                    cronslot_core::Civil::new(2011, 12, 30, 9, 0),
                    GapCause::ClockChange
                ),
                (
                    cronslot_core::Civil::new(2011, 12, 30, 15, 0),
                    GapCause::ClockChange
                )
            ]
        );
    }
    let two = with("0 9,15 * * *", z, SHIFT_ALWAYS);
    assert_eq!(
        next_n(&two, "2011-12-30T02:00:00Z", 2),
        ["2011-12-30T10:00:00Z", "2011-12-30T19:00:00Z"]
    );

    // Hourly is interval-like: no slots on the 30th, no gap skips.
    for p in ALL_POLICIES {
        let hourly = with("0 * * * *", z, p);
        let got = slots(&hourly, "2011-12-30T07:30:00Z", 4);
        assert_eq!(
            got,
            [
                slot("2011-12-30T08:00:00Z", "2011-12-29T22:00:00", Regular),
                slot("2011-12-30T09:00:00Z", "2011-12-29T23:00:00", Regular),
                slot("2011-12-30T10:00:00Z", "2011-12-31T00:00:00", Regular),
                slot("2011-12-30T11:00:00Z", "2011-12-31T01:00:00", Regular),
            ],
            "{p:?}"
        );
        let around: Vec<_> = slots(&hourly, "2011-12-28T12:00:00Z", 72);
        assert!(
            around
                .iter()
                .all(|(_, local, _)| !local.starts_with("2011-12-30"))
        );
        assert!(
            hourly
                .gap_skips(t("2011-12-29T00:00:00Z"), t("2012-01-01T00:00:00Z"))
                .is_empty()
        );
        assert_eq!(
            hourly.prev_before(t("2011-12-30T10:00:00Z")),
            Some(t("2011-12-30T09:00:00Z"))
        );
        assert_prev_next_agree(&hourly, "2011-12-28T00:00:00Z", 100);
    }
}

/// Other forward jumps of three hours or more in the tz database: each is a
/// clock change, whose fixed-time slots do not run under `shift` (nor
/// `skip`), and run at the end of the jump under `shift_always`.
#[test]
fn clock_changes_of_three_hours_or_more_skip_their_slots() {
    // (zone, expression, after, the transition, the wall-clock time lost,
    // the jump, the next slot under shift)
    let cases = [
        // Kwajalein crossed the date line: 1993-08-20 24:00 (-12) became
        // 1993-08-22 00:00 (+12).
        (
            "Pacific/Kwajalein",
            "0 12 * * *",
            "1993-08-21T01:00:00Z",
            "1993-08-21T12:00:00Z",
            (1993, 8, 21, 12, 0),
            24 * 3600,
            "1993-08-22T00:00:00Z",
        ),
        // Kiritimati skipped 1994-12-31 (-10 to +14).
        (
            "Pacific/Kiritimati",
            "30 8 * * *",
            "1994-12-30T19:00:00Z",
            "1994-12-31T10:00:00Z",
            (1994, 12, 31, 8, 30),
            24 * 3600,
            "1994-12-31T18:30:00Z",
        ),
        // Casey went from +08 to +11 at 2018-10-07 04:00: exactly three
        // hours, a clock change (04:00-06:59 never happened there).
        (
            "Antarctica/Casey",
            "30 5 * * *",
            "2018-10-06T12:00:00Z",
            "2018-10-06T20:00:00Z",
            (2018, 10, 7, 5, 30),
            3 * 3600,
            "2018-10-07T18:30:00Z",
        ),
    ];
    for (zone, expr, after, transition, (y, mo, d, h, mi), jump, next) in cases {
        let lost = cronslot_core::Civil::new(y, mo, d, h, mi);
        for policy in ALL_POLICIES {
            let s = with(expr, zone, policy);
            let first = s.next_occurrence(t(after)).expect("fires");
            let skipped = s.gap_skips(t(after), t(next));
            match policy.gap {
                DstGap::Shift | DstGap::Skip => {
                    assert_eq!(first.instant, t(next), "{zone} {policy:?}");
                    assert_eq!(first.kind, Regular);
                    assert_eq!(skipped.len(), 1, "{zone} {policy:?}");
                    assert_eq!(skipped[0].local, lost);
                    assert_eq!(skipped[0].transition, t(transition));
                    assert_eq!(skipped[0].jump_seconds, jump);
                    assert_eq!(skipped[0].cause, GapCause::ClockChange);
                    assert!(!s.is_slot(t(transition)));
                    // The count agrees with the walk: one slot, not two.
                    assert_eq!(s.count_between(t(after), t(next)), 1);
                }
                DstGap::ShiftAlways => {
                    assert_eq!(first.instant, t(transition), "{zone}");
                    assert_eq!(first.kind, ShiftedFromGap);
                    assert_eq!(first.local, lost);
                    assert!(skipped.is_empty());
                    assert_eq!(s.count_between(t(after), t(next)), 2);
                }
            }
            let from = (t(after) - jiff::SignedDuration::from_hours(24 * 5)).to_string();
            assert_prev_next_agree(&s, &from, 12);
        }
    }
    assert_eq!(CLOCK_CHANGE_SECONDS, 3 * 3600);
}

/// Jumps of less than three hours are DST, and shift under the default:
/// New York's hour, Lord Howe's half hour and Troll's two hours (+00 to
/// +02 at 01:00 UTC on the last Sunday of March).
#[test]
fn dst_gaps_under_three_hours_still_shift() {
    for (zone, expr, after, shifted_to, lost) in [
        (
            "America/New_York",
            "30 2 * * *",
            "2026-03-07T12:00:00Z",
            "2026-03-08T07:00:00Z",
            (2026, 3, 8, 2, 30),
        ),
        (
            "Australia/Lord_Howe",
            "15 2 * * *",
            "2026-10-03T12:00:00Z",
            "2026-10-03T15:30:00Z",
            (2026, 10, 4, 2, 15),
        ),
        (
            "Antarctica/Troll",
            "30 1 * * *",
            "2026-03-28T12:00:00Z",
            "2026-03-29T01:00:00Z",
            (2026, 3, 29, 1, 30),
        ),
    ] {
        let (y, mo, d, h, mi) = lost;
        let lost = cronslot_core::Civil::new(y, mo, d, h, mi);
        for policy in ALL_POLICIES {
            let s = with(expr, zone, policy);
            let first = s.next_occurrence(t(after)).expect("fires");
            let skipped = s.gap_skips(t(after), t(shifted_to));
            if policy.gap == DstGap::Skip {
                assert!(first.instant > t(shifted_to), "{zone}");
                assert_eq!(skipped.len(), 1, "{zone}");
                assert_eq!(skipped[0].local, lost);
                assert_eq!(skipped[0].cause, GapCause::Dst);
                assert!(skipped[0].jump_seconds < CLOCK_CHANGE_SECONDS);
            } else {
                assert_eq!(first.instant, t(shifted_to), "{zone} {policy:?}");
                assert_eq!(first.kind, ShiftedFromGap);
                assert_eq!(first.local, lost);
                assert!(skipped.is_empty(), "{zone} {policy:?}");
            }
        }
    }
}

#[test]
fn tz_database_fixed_zones_are_fixed() {
    for (name, offset) in [
        ("Etc/UTC", 0),
        ("Etc/GMT", 0),
        ("Etc/GMT-5", 5 * 3600),
        ("UTC", 0),
    ] {
        let zone = Zone::get(name).expect("zone");
        assert!(zone.is_fixed(), "{name}");
        assert_eq!(zone.offset_at(0), offset, "{name}");
        assert_eq!(zone.is_utc(), offset == 0, "{name}");
    }
    assert!(!Zone::get("America/New_York").expect("zone").is_fixed());
    assert!(!Zone::get("Africa/Abidjan").expect("zone").is_fixed());
}
