//! DST behaviour at real transitions (DESIGN.md §5).

use cronslot_core::{CronExpr, DstGap, DstOverlap, DstPolicy, Schedule, SlotKind, Zone};
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
