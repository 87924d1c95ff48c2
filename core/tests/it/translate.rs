//! Translation to platform dialects: known translations, and a property test
//! that every exact translation fires at the same instants as cronslot.

use std::cell::Cell;

use cronslot_core::translate::{Construct, DstMismatch, Inexact, Platform, Translation, translate};
use cronslot_core::{CronExpr, Dialect, DstGap, DstOverlap, DstPolicy, Schedule, Zone};
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

const NY: &str = "America/New_York";
const DEFAULT: DstPolicy = DstPolicy {
    gap: DstGap::Shift,
    overlap: DstOverlap::Once,
};
const SKIP_ONCE: DstPolicy = DstPolicy::SKIP_ONCE;
const SHIFT_TWICE: DstPolicy = DstPolicy {
    gap: DstGap::Shift,
    overlap: DstOverlap::Twice,
};
const SKIP_TWICE: DstPolicy = DstPolicy {
    gap: DstGap::Skip,
    overlap: DstOverlap::Twice,
};

fn schedule(expr: &str, zone: &str, policy: DstPolicy) -> Schedule {
    Schedule::new(
        CronExpr::parse(expr).expect("valid expression"),
        Zone::get(zone).expect("valid zone"),
        policy,
    )
}

fn eventbridge(expr: &str, zone: &str, policy: DstPolicy) -> Result<Translation, Vec<Inexact>> {
    translate(&schedule(expr, zone, policy), Platform::EventBridge)
}

fn cloudflare(expr: &str, zone: &str, policy: DstPolicy) -> Result<Translation, Vec<Inexact>> {
    translate(&schedule(expr, zone, policy), Platform::Cloudflare)
}

/// The expression and zone of an exact translation, or a panic with reasons.
fn exact(result: Result<Translation, Vec<Inexact>>) -> (String, String) {
    match result {
        Ok(t) => (t.expression, t.timezone),
        Err(reasons) => panic!(
            "expected an exact translation, got: {}",
            reasons
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(" | ")
        ),
    }
}

fn reasons(result: Result<Translation, Vec<Inexact>>) -> Vec<Inexact> {
    match result {
        Ok(t) => panic!("expected an inexact translation, got {t:?}"),
        Err(reasons) => reasons,
    }
}

// ---------------------------------------------------------------------------
// Known translations

#[test]
fn eventbridge_table() {
    let table: &[(&str, &str, DstPolicy, &str, &str)] = &[
        // New York's gaps are 02:00-03:00 and overlaps 01:00-02:00: 09:00 is
        // never in one, so any policy translates.
        ("0 9 * * MON-FRI", NY, DEFAULT, "cron(0 9 ? * 2-6 *)", NY),
        // Interval-like and the same at -5h and -4h: zone-free, so UTC.
        ("*/5 * * * *", NY, DEFAULT, "cron(*/5 * * * ? *)", "UTC"),
        ("0 * * * *", NY, DEFAULT, "cron(0 * * * ? *)", "UTC"),
        ("30 2 * * *", NY, SKIP_ONCE, "cron(30 2 * * ? *)", NY),
        // 01:30 occurs twice in New York; once is what EventBridge does.
        ("30 1 * * *", NY, DEFAULT, "cron(30 1 * * ? *)", NY),
        // `1/2` is fixed-time (it does not begin with `*`): its 01:00 runs
        // once, as on EventBridge.
        ("0 1/2 * * *", NY, DEFAULT, "cron(0 1/2 * * ? *)", NY),
        (
            "30 2 * * *",
            "Europe/Berlin",
            SKIP_ONCE,
            "cron(30 2 * * ? *)",
            "Europe/Berlin",
        ),
        ("0 0 L * *", "UTC", DEFAULT, "cron(0 0 L * ? *)", "UTC"),
        ("0 18 * * 5L", "UTC", DEFAULT, "cron(0 18 ? * 6L *)", "UTC"),
        (
            "0 18 * * FRI#L",
            "UTC",
            DEFAULT,
            "cron(0 18 ? * 6L *)",
            "UTC",
        ),
        (
            "0 18 * * FRIL",
            "Etc/UTC",
            DEFAULT,
            "cron(0 18 ? * 6L *)",
            "UTC",
        ),
        (
            "0 10 * * MON#2",
            "UTC",
            DEFAULT,
            "cron(0 10 ? * 2#2 *)",
            "UTC",
        ),
        ("0 9 * * 0", "UTC", DEFAULT, "cron(0 9 ? * 1 *)", "UTC"),
        ("0 9 * * 7", "UTC", DEFAULT, "cron(0 9 ? * 1 *)", "UTC"),
        (
            "0 9 * * SAT,SUN",
            "UTC",
            DEFAULT,
            "cron(0 9 ? * 1,7 *)",
            "UTC",
        ),
        (
            "0 9 * * 1,3,5",
            "UTC",
            DEFAULT,
            "cron(0 9 ? * 2,4,6 *)",
            "UTC",
        ),
        ("0 0 15W * *", "UTC", DEFAULT, "cron(0 0 15W * ? *)", "UTC"),
        ("0 9 * * +MON", "UTC", DEFAULT, "cron(0 9 ? * 2 *)", "UTC"),
        // A full day field under Vixie's OR selects every day.
        ("0 9 1-31 * MON", "UTC", DEFAULT, "cron(0 9 * * ? *)", "UTC"),
        ("0 9 15 * 0-6", "UTC", DEFAULT, "cron(0 9 * * ? *)", "UTC"),
        // `#` for a weekday already listed whole adds nothing.
        (
            "0 9 * * MON,MON#2",
            "UTC",
            DEFAULT,
            "cron(0 9 ? * 2 *)",
            "UTC",
        ),
        (
            "0 9 * * MON#1,MON#2,MON#3,MON#4,MON#5",
            "UTC",
            DEFAULT,
            "cron(0 9 ? * 2 *)",
            "UTC",
        ),
        ("@weekly", NY, DEFAULT, "cron(0 0 ? * 1 *)", NY),
        ("@hourly", NY, DEFAULT, "cron(0 * * * ? *)", "UTC"),
        // Compact fields.
        (
            "0,15,30,45 * * * *",
            "UTC",
            DEFAULT,
            "cron(*/15 * * * ? *)",
            "UTC",
        ),
        (
            "5,20,35,50 8 * * *",
            "UTC",
            DEFAULT,
            "cron(5/15 8 * * ? *)",
            "UTC",
        ),
        (
            "0,30 8-17 * * *",
            "UTC",
            DEFAULT,
            "cron(0,30 8-17 * * ? *)",
            "UTC",
        ),
        (
            "0 1,2,3,10 * * *",
            "UTC",
            DEFAULT,
            "cron(0 1-3,10 * * ? *)",
            "UTC",
        ),
        ("0 0 */2 * *", "UTC", DEFAULT, "cron(0 0 */2 * ? *)", "UTC"),
        (
            "0 0 2-30/2 * *",
            "UTC",
            DEFAULT,
            "cron(0 0 2/2 * ? *)",
            "UTC",
        ),
        (
            "0 0 1 JAN,APR,JUL,OCT *",
            "UTC",
            DEFAULT,
            "cron(0 0 1 */3 ? *)",
            "UTC",
        ),
        (
            "0 0 1 FEB-DEC *",
            "UTC",
            DEFAULT,
            "cron(0 0 1 2-12 ? *)",
            "UTC",
        ),
        (
            "0-59 0-23 * * *",
            "UTC",
            DEFAULT,
            "cron(* * * * ? *)",
            "UTC",
        ),
        // Lord Howe moves by 30 minutes (+10:30/+11:00): :00 and :30
        // together look the same at both offsets.
        (
            "*/30 * * * *",
            "Australia/Lord_Howe",
            DEFAULT,
            "cron(0,30 * * * ? *)",
            "UTC",
        ),
        // India has not changed offset since 1945.
        (
            "0 9 * * *",
            "Asia/Kolkata",
            DEFAULT,
            "cron(0 9 * * ? *)",
            "Asia/Kolkata",
        ),
        (
            "0 * * * *",
            "Asia/Kolkata",
            DEFAULT,
            "cron(0 * * * ? *)",
            "Asia/Kolkata",
        ),
        (
            "*/15 * * * *",
            "Asia/Kolkata",
            DEFAULT,
            "cron(*/15 * * * ? *)",
            "UTC",
        ),
        // Every minute, fixed-time: skip/twice is real time, hence UTC;
        // skip/once is EventBridge's own rule, hence the zone.
        (
            "0-59 0-23 * * *",
            NY,
            SKIP_TWICE,
            "cron(* * * * ? *)",
            "UTC",
        ),
        ("0-59 0-23 * * *", NY, SKIP_ONCE, "cron(* * * * ? *)", NY),
    ];
    for (expr, zone, policy, expression, timezone) in table {
        let got = exact(eventbridge(expr, zone, *policy));
        assert_eq!(
            got,
            (expression.to_string(), timezone.to_string()),
            "{expr} in {zone} with {policy:?}"
        );
    }
}

#[test]
fn cloudflare_table() {
    let table: &[(&str, &str, DstPolicy, &str)] = &[
        ("0 9 * * 0", "UTC", DEFAULT, "0 9 * * 1"),
        ("0 9 * * MON-FRI", "UTC", DEFAULT, "0 9 * * 2-6"),
        ("0 18 * * 5L", "UTC", DEFAULT, "0 18 * * 6L"),
        ("0 0 L * *", "UTC", DEFAULT, "0 0 L * *"),
        ("0 0 LW * *", "UTC", DEFAULT, "0 0 LW * *"),
        ("0 0 15W * *", "UTC", DEFAULT, "0 0 15W * *"),
        ("0 10 * * SUN#1", "UTC", DEFAULT, "0 10 * * 1#1"),
        ("0 9 1-31 * MON", "UTC", DEFAULT, "0 9 * * *"),
        ("*/5 * * * *", NY, DEFAULT, "*/5 * * * *"),
        ("*/5 * * * *", "Europe/Berlin", SKIP_ONCE, "*/5 * * * *"),
        (
            "*/30 * * * *",
            "Australia/Lord_Howe",
            DEFAULT,
            "0,30 * * * *",
        ),
        ("@hourly", "Europe/Berlin", DEFAULT, "0 * * * *"),
        ("*/30 * * * *", "Asia/Kolkata", DEFAULT, "0,30 * * * *"),
        ("0 0 1 1 *", "Etc/UTC", DEFAULT, "0 0 1 1 *"),
        // GMT all year since 1970.
        ("0 9 * * 1", "Africa/Abidjan", DEFAULT, "0 9 * * 2"),
    ];
    for (expr, zone, policy, expression) in table {
        let got = exact(cloudflare(expr, zone, *policy));
        assert_eq!(
            got,
            (expression.to_string(), "UTC".to_string()),
            "{expr} in {zone} with {policy:?}"
        );
    }
}

#[test]
fn fixed_time_in_a_gap_needs_skip() {
    let found = reasons(eventbridge("30 2 * * *", NY, DEFAULT));
    assert_eq!(found.len(), 1, "{found:?}");
    let Inexact::Dst {
        mismatch,
        local,
        transition,
        ..
    } = &found[0]
    else {
        panic!("expected a DST reason, got {found:?}");
    };
    assert_eq!(*mismatch, DstMismatch::GapShifted);
    // The first New York spring-forward since 1970.
    assert_eq!(transition.to_string(), "1970-04-26T07:00:00Z");
    assert_eq!((local.year, local.month, local.day), (1970, 4, 26));
    let message = found[0].to_string();
    assert!(message.contains("dst_gap = \"shift\""), "{message}");
    assert!(message.contains("1970-04-26 02:30"), "{message}");
    assert!(message.contains(NY), "{message}");

    let berlin = reasons(eventbridge("30 2 * * *", "Europe/Berlin", DEFAULT));
    assert!(matches!(
        berlin.as_slice(),
        [Inexact::Dst {
            mismatch: DstMismatch::GapShifted,
            ..
        }]
    ));
}

/// A clock change (a forward jump of three hours or more) skips its slots
/// under shift as EventBridge does, so it does not stand in the way of an
/// exact translation; under shift_always cronslot runs them and the
/// translation is refused with that reason.
#[test]
fn clock_changes_translate_unless_shift_always() {
    for (expr, zone, local, transition) in [
        // Kwajalein skipped 1993-08-21 (-12 to +12), its only forward jump
        // since 1970.
        (
            "0 12 * * *",
            "Pacific/Kwajalein",
            "1993-08-21 12:00",
            "1993-08-21T12:00:00Z",
        ),
        // Casey's +08 to +11 of 2018-10-07 04:00, three hours exactly.
        (
            "30 5 * * *",
            "Antarctica/Casey",
            "2018-10-07 05:30",
            "2018-10-06T20:00:00Z",
        ),
    ] {
        for policy in [DEFAULT, SKIP_ONCE] {
            let (expression, timezone) = exact(eventbridge(expr, zone, policy));
            assert_eq!(timezone, zone);
            let t = translate(&schedule(expr, zone, policy), Platform::EventBridge).unwrap();
            assert_eq!(t.expression, expression);
            let at: Timestamp = transition.parse().unwrap();
            compare(
                &schedule(expr, zone, policy),
                &platform_schedule(&t),
                at - SignedDuration::from_hours(24 * 60),
            )
            .unwrap_or_else(|e| panic!("{expr} {zone} {policy:?}: {e}"));
        }
        let always = DstPolicy {
            gap: DstGap::ShiftAlways,
            overlap: DstOverlap::Once,
        };
        let found = reasons(eventbridge(expr, zone, always));
        assert_eq!(found.len(), 1, "{found:?}");
        let Inexact::Dst {
            mismatch,
            transition: at,
            ..
        } = &found[0]
        else {
            panic!("expected a DST reason, got {found:?}");
        };
        assert_eq!(*mismatch, DstMismatch::ClockChangeShifted);
        assert_eq!(at.to_string(), transition);
        let message = found[0].to_string();
        assert!(message.contains(local), "{message}");
        assert!(message.contains("clock change"), "{message}");
        assert!(message.contains("dst_gap = \"shift_always\""), "{message}");
    }
}

#[test]
fn overlap_run_twice_differs_from_eventbridge() {
    let found = reasons(eventbridge("30 1 * * *", NY, SHIFT_TWICE));
    assert!(matches!(
        found.as_slice(),
        [Inexact::Dst {
            mismatch: DstMismatch::OverlapTwice,
            ..
        }]
    ));
    // Interval-like and not zone-free (01:xx only): its slots run in both
    // passes in cronslot.
    let found = reasons(eventbridge("*/15 1 * * *", NY, DEFAULT));
    assert!(
        matches!(
            found.as_slice(),
            [Inexact::Dst {
                mismatch: DstMismatch::OverlapIntervalLike,
                ..
            }]
        ),
        "{found:?}"
    );
    // Even hours never meet New York's 01:00-02:00 overlap, and gap times are
    // skipped on both sides.
    assert_eq!(
        exact(eventbridge("0 */2 * * *", NY, DEFAULT)),
        ("cron(0 */2 * * ? *)".to_string(), NY.to_string())
    );
}

#[test]
fn transitions_since_1970_count() {
    // Lord Howe has moved its clocks by 30 minutes since 1985, so today no :00
    // falls in its 01:30-02:00 overlap; but in 1982 it moved by a whole hour,
    // and the analysis covers every transition from 1970 to 2200.
    let found = reasons(eventbridge("0 * * * *", "Australia/Lord_Howe", DEFAULT));
    let [
        Inexact::Dst {
            mismatch: DstMismatch::OverlapIntervalLike,
            local,
            ..
        },
    ] = found.as_slice()
    else {
        panic!("expected one overlap reason, got {found:?}");
    };
    assert_eq!((local.year, local.hour, local.minute), (1982, 1, 0));
    // Its gap times are skipped on both sides, so a fixed time is fine.
    assert_eq!(
        exact(eventbridge("0 9 * * *", "Australia/Lord_Howe", DEFAULT)),
        (
            "cron(0 9 * * ? *)".to_string(),
            "Australia/Lord_Howe".to_string()
        )
    );
}

#[test]
fn every_minute_fixed_time_with_default_policy_is_inexact() {
    // Shifted gap slots and a single overlap pass fit neither UTC nor the
    // wall clock.
    let found = reasons(eventbridge("0-59 0-23 * * *", NY, DEFAULT));
    assert!(matches!(
        found.as_slice(),
        [Inexact::Dst {
            mismatch: DstMismatch::GapShifted,
            ..
        }]
    ));
    let found = reasons(cloudflare("0-59 0-23 * * *", NY, DEFAULT));
    assert!(matches!(found.as_slice(), [Inexact::UtcOnly { .. }]));
}

#[test]
fn both_day_fields_restricted() {
    for platform in [Platform::EventBridge, Platform::Cloudflare] {
        let run = |expr| translate(&schedule(expr, "UTC", DEFAULT), platform);
        if platform == Platform::EventBridge {
            assert_eq!(
                reasons(run("0 9 1 * MON")),
                [Inexact::DaysEither { platform }]
            );
        } else {
            // Cloudflare (saffron) ORs two restricted day fields, as Vixie
            // does: exact (issue 18).
            let t = run("0 9 1 * MON").unwrap();
            assert_eq!(t.expression, "0 9 1 * 2");
        }
        // `*/2` restricts days for saffron but not in the input dialect
        // (AND): the dialects disagree, so it is refused with that reason.
        assert_eq!(
            reasons(run("0 9 */2 * MON")),
            [Inexact::DaysBoth { platform }]
        );
        assert_eq!(
            reasons(run("0 9 1 * +MON")),
            [Inexact::DaysBoth { platform }]
        );
        assert_eq!(
            reasons(run("0 9 1 * */2")),
            [Inexact::DaysBoth { platform }]
        );
    }
    let message = Inexact::DaysEither {
        platform: Platform::EventBridge,
    }
    .to_string();
    assert!(message.contains("either") && message.contains("EventBridge"));
    let message = Inexact::DaysBoth {
        platform: Platform::Cloudflare,
    }
    .to_string();
    assert!(message.contains("`*/2` as restricting days"), "{message}");
}

fn constructs(found: &[Inexact]) -> Vec<Construct> {
    found
        .iter()
        .filter_map(|r| match r {
            Inexact::Construct { construct, .. } => Some(*construct),
            _ => None,
        })
        .collect()
}

#[test]
fn constructs_the_dialects_lack() {
    let eb = |expr| reasons(eventbridge(expr, "UTC", DEFAULT));
    let cf = |expr| reasons(cloudflare(expr, "UTC", DEFAULT));
    assert_eq!(constructs(&eb("0 0 LW * *")), [Construct::LastWeekday]);
    assert_eq!(
        constructs(&eb("0 0 1,15W * *")),
        [Construct::NearestWeekdayInList]
    );
    assert_eq!(
        constructs(&cf("0 0 1W,15W * *")),
        [Construct::NearestWeekdayInList]
    );
    assert_eq!(constructs(&eb("0 0 1,L * *")), [Construct::LastDayInList]);
    assert_eq!(constructs(&cf("0 0 1,L * *")), [Construct::LastDayInList]);
    assert_eq!(
        constructs(&cf("0 0 LW,15 * *")),
        [Construct::LastWeekdayInList]
    );
    assert_eq!(constructs(&eb("0 0 LW,15 * *")), [Construct::LastWeekday]);
    assert_eq!(
        constructs(&eb("0 0 * * MON#1,MON#3")),
        [Construct::NthWeekdayInList]
    );
    assert_eq!(
        constructs(&cf("0 0 * * MON,FRI#2")),
        [Construct::NthWeekdayInList]
    );
    assert_eq!(
        constructs(&eb("0 0 * * 5L,1L")),
        [Construct::LastOfWeekdayInList]
    );
    assert_eq!(
        constructs(&eb("0 0 * * MON#2,5L")),
        [Construct::NthWeekdayInList, Construct::LastOfWeekdayInList]
    );
    let message = eb("0 0 1,15W * *")[0].to_string();
    assert!(
        message.contains("day-of-month \"1,15W\"") && message.contains("EventBridge"),
        "{message}"
    );
}

#[test]
fn cloudflare_with_a_zone_is_inexact() {
    let found = reasons(cloudflare("0 9 * * MON-FRI", NY, DEFAULT));
    assert_eq!(
        found,
        [Inexact::UtcOnly {
            platform: Platform::Cloudflare,
            zone: NY.to_string()
        }]
    );
    assert!(found[0].to_string().contains("UTC only"));
    // Fixed offsets too: India is +05:30 all year, but cronslot does not move
    // wall-clock times to UTC.
    let found = reasons(cloudflare("0 9 * * *", "Asia/Kolkata", DEFAULT));
    assert!(matches!(found.as_slice(), [Inexact::UtcOnly { .. }]));
    // On the hour is not the same at +05:30.
    let found = reasons(cloudflare("0 * * * *", "Asia/Kolkata", DEFAULT));
    assert!(matches!(found.as_slice(), [Inexact::UtcOnly { .. }]));
}

#[test]
fn all_reasons_are_collected() {
    // Either-day rule, and 02:30 on Sunday 8 March falls in the gap.
    let found = reasons(eventbridge("30 2 8 * MON", NY, DEFAULT));
    assert!(found.contains(&Inexact::DaysEither {
        platform: Platform::EventBridge
    }));
    assert!(found.iter().any(|r| matches!(
        r,
        Inexact::Dst {
            mismatch: DstMismatch::GapShifted,
            ..
        }
    )));
    // Cloudflare ORs the day fields itself; what each field lacks, and the
    // zone, are still all reported.
    let found = reasons(cloudflare("0 9 1,L * MON#1,MON#3", NY, DEFAULT));
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(
        constructs(&found),
        [Construct::LastDayInList, Construct::NthWeekdayInList]
    );
    assert!(matches!(found[2], Inexact::UtcOnly { .. }));
}

#[test]
fn never_firing_is_not_deployed() {
    for platform in [Platform::EventBridge, Platform::Cloudflare] {
        let found = reasons(translate(&schedule("0 0 31 2 *", "UTC", DEFAULT), platform));
        assert_eq!(found, [Inexact::NeverFires { platform }]);
    }
}

#[test]
fn eventbridge_input_with_years_is_refused_unless_star() {
    let zone = Zone::get("UTC").expect("zone");
    let cron = CronExpr::parse_dialect("cron(0 9 ? * 2 2030)", Dialect::EventBridge)
        .expect("valid EventBridge expression");
    let found = reasons(translate(
        &Schedule::new(cron, zone.clone(), DEFAULT),
        Platform::EventBridge,
    ));
    assert_eq!(constructs(&found), [Construct::RestrictedYears]);
    let cron = CronExpr::parse_dialect("cron(0 9 ? * 2 *)", Dialect::EventBridge)
        .expect("valid EventBridge expression");
    let t = exact(translate(
        &Schedule::new(cron, zone, DEFAULT),
        Platform::Cloudflare,
    ));
    assert_eq!(t.0, "0 9 * * 2");
}

#[test]
fn every_reason_reads_as_one_sentence() {
    let samples = [
        eventbridge("30 2 8 * MON", NY, DEFAULT),
        eventbridge("*/15 1 * * *", NY, DEFAULT),
        eventbridge("30 1 * * *", NY, SHIFT_TWICE),
        eventbridge("0 0 LW,15W * MON#1,MON#3,5L", "UTC", DEFAULT),
        cloudflare("0 9 */2 * MON", "Europe/Berlin", DEFAULT),
        eventbridge("0 0 30 2 *", "UTC", DEFAULT),
        eventbridge(
            "0 12 * * *",
            "Pacific/Kwajalein",
            DstPolicy {
                gap: DstGap::ShiftAlways,
                overlap: DstOverlap::Once,
            },
        ),
    ];
    let mut seen = 0;
    for result in samples {
        for reason in reasons(result) {
            let text = reason.to_string();
            assert!(!text.is_empty() && !text.contains('\n'), "{text:?}");
            assert!(!text.ends_with('.'), "{text:?}");
            seen += 1;
        }
    }
    assert!(seen >= 9, "{seen}");
}

// ---------------------------------------------------------------------------
// Property: exact translations fire at the same instants

fn pick(options: &'static [&'static str]) -> BoxedStrategy<String> {
    proptest::sample::select(options)
        .prop_map(str::to_string)
        .boxed()
}

fn minute_field() -> BoxedStrategy<String> {
    prop_oneof![
        4 => (0u32..60).prop_map(|m| m.to_string()),
        2 => proptest::collection::vec(0u32..60, 2..4).prop_map(|v| join(&v)),
        1 => (0u32..60, 0u32..60).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        1 => pick(&["*/5", "*/10", "*/15", "*/20", "*/30", "*/7", "*/13"]),
        1 => (0u32..30, 2u32..30).prop_map(|(a, s)| format!("{a}/{s}")),
        1 => (0u32..20, 30u32..60, 5u32..20).prop_map(|(a, b, s)| format!("{a}-{b}/{s}")),
        1 => pick(&["*", "0-59"]),
    ]
    .boxed()
}

fn hour_field() -> BoxedStrategy<String> {
    prop_oneof![
        3 => (0u32..24).prop_map(|h| h.to_string()),
        // The hours New York, Berlin and Lord Howe change their clocks in.
        2 => (0u32..4).prop_map(|h| h.to_string()),
        2 => proptest::collection::vec(0u32..24, 2..4).prop_map(|v| join(&v)),
        1 => (0u32..24, 0u32..24).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        2 => pick(&["*", "*/2", "*/3", "*/6", "1/2", "0-23", "9-17"]),
    ]
    .boxed()
}

fn dom_field() -> BoxedStrategy<String> {
    prop_oneof![
        10 => Just("*".to_string()),
        1 => Just("?".to_string()),
        2 => (1u32..32).prop_map(|d| d.to_string()),
        1 => (1u32..32, 1u32..32).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        1 => (1u32..32).prop_map(|d| format!("{d}W")),
        2 => pick(&["*/2", "2/3", "L", "LW", "1-31", "8-14", "1,15", "1,L", "15W,20", "LW,1"]),
    ]
    .boxed()
}

fn month_field() -> BoxedStrategy<String> {
    prop_oneof![
        8 => Just("*".to_string()),
        1 => (1u32..13).prop_map(|m| m.to_string()),
        2 => pick(&["MAR", "nov", "JAN-MAR", "OCT-DEC", "*/3", "2/4", "3,11", "4-10", "1-12"]),
    ]
    .boxed()
}

fn dow_field() -> BoxedStrategy<String> {
    prop_oneof![
        10 => Just("*".to_string()),
        1 => Just("?".to_string()),
        1 => (0u32..8).prop_map(|d| d.to_string()),
        2 => pick(&["MON-FRI", "1-5", "SUN,SAT", "TUE,THU", "0-6", "0-7", "fri-sat", "SUN"]),
        2 => pick(&["5L", "FRIL", "FRI#L", "MON#2", "SUN#1", "0#5", "6#4"]),
        1 => pick(&["MON#1,MON#3", "MON,FRI#2", "5L,1", "MON,MON#2", "*/2", "1/2"]),
        1 => pick(&["+MON-FRI", "+SUN", "+FRI#2", "+5L"]),
    ]
    .boxed()
}

fn join(values: &[u32]) -> String {
    values
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn expression() -> BoxedStrategy<String> {
    prop_oneof![
        20 => (minute_field(), hour_field(), dom_field(), month_field(), dow_field())
            .prop_map(|(m, h, dom, mon, dow)| format!("{m} {h} {dom} {mon} {dow}")),
        1 => pick(&["@hourly", "@daily", "@weekly", "@monthly", "@yearly"]),
    ]
    .boxed()
}

fn zone_name() -> BoxedStrategy<String> {
    pick(&[
        "UTC",
        "America/New_York",
        "Europe/Berlin",
        "Australia/Lord_Howe",
        "Asia/Kolkata",
        "Antarctica/Casey",
    ])
}

fn policy() -> BoxedStrategy<DstPolicy> {
    prop_oneof![
        3 => Just(DEFAULT),
        3 => Just(SKIP_ONCE),
        1 => Just(SHIFT_TWICE),
        1 => Just(SKIP_TWICE),
        1 => Just(DstPolicy {
            gap: DstGap::ShiftAlways,
            overlap: DstOverlap::Once,
        }),
    ]
    .boxed()
}

/// A start between 1970 and 2100 (past rules differ: Lord Howe moved by a
/// whole hour until 1985), in whole seconds.
fn start() -> BoxedStrategy<Timestamp> {
    (0i64..4_102_444_800)
        .prop_map(|s| Timestamp::from_second(s).expect("in range"))
        .boxed()
}

/// The schedule a platform runs for a translation, built from its text alone.
fn platform_schedule(t: &Translation) -> Schedule {
    let cron = CronExpr::parse_dialect(&t.expression, t.platform.dialect())
        .unwrap_or_else(|e| panic!("{} refuses {:?}: {e}", t.platform, t.expression));
    let zone = Zone::get(&t.timezone).expect("declared zone exists");
    match t.platform {
        Platform::EventBridge => Schedule::wall_clock(cron, zone, DstPolicy::SKIP_ONCE),
        Platform::Cloudflare => {
            assert_eq!(t.timezone, "UTC");
            Schedule::utc(cron)
        }
    }
}

/// Instants per comparison window: dense schedules stop early, sparse ones
/// cover the whole window.
const WINDOW_CAP: usize = 4000;
const TWO_YEARS: SignedDuration = SignedDuration::from_hours(24 * 731);
/// Around each transition, where DST can make the two sides differ.
const NEAR_TRANSITION: SignedDuration = SignedDuration::from_hours(4);

/// Compares the instants of both schedules in `(from, until]`, at most
/// `WINDOW_CAP` of them; returns how many matched.
fn compare_window(
    ours: &Schedule,
    theirs: &Schedule,
    from: Timestamp,
    until: Timestamp,
) -> Result<usize, String> {
    let mut a = ours
        .iter_after(from)
        .map(|o| o.instant)
        .take_while(|t| *t <= until);
    let mut b = theirs
        .iter_after(from)
        .map(|o| o.instant)
        .take_while(|t| *t <= until);
    for i in 0..WINDOW_CAP {
        match (a.next(), b.next()) {
            (None, None) => return Ok(i),
            (x, y) if x == y => {}
            (x, y) => {
                return Err(format!(
                    "instant #{i} after {from}: cronslot {x:?}, platform {y:?}"
                ));
            }
        }
    }
    Ok(WINDOW_CAP)
}

/// Two years from `start`, plus a window around every transition of the
/// schedule's zone in them (dense schedules reach the cap long before).
fn compare(ours: &Schedule, theirs: &Schedule, start: Timestamp) -> Result<(), String> {
    let until = start + TWO_YEARS;
    let seen = compare_window(ours, theirs, start, until)?;
    if seen < WINDOW_CAP {
        return Ok(());
    }
    let zone = ours.zone();
    let mut cursor = start.as_second();
    while let Some((at, _)) = zone.next_transition(cursor) {
        let transition = Timestamp::from_second(at).expect("transition in range");
        if transition > until {
            break;
        }
        compare_window(
            ours,
            theirs,
            transition - NEAR_TRANSITION,
            transition + NEAR_TRANSITION,
        )?;
        cursor = at;
    }
    Ok(())
}

const CASES: u32 = 768;

#[test]
fn exact_translations_fire_at_the_same_instants() {
    let mut config = Config::with_cases(CASES);
    config.failure_persistence = None;
    let mut runner = TestRunner::new(config);
    let exact_count = Cell::new(0usize);
    let total = Cell::new(0usize);
    let strategy = (expression(), zone_name(), policy(), start());
    let result = runner.run(&strategy, |(expr, zone, policy, start)| {
        let cron = CronExpr::parse(&expr)
            .map_err(|e| TestCaseError::fail(format!("generator made {expr:?}: {e}")))?;
        let zone = Zone::get(&zone).expect("known zone");
        let ours = Schedule::new(cron, zone, policy);
        for platform in [Platform::EventBridge, Platform::Cloudflare] {
            total.set(total.get() + 1);
            match translate(&ours, platform) {
                Ok(t) => {
                    exact_count.set(exact_count.get() + 1);
                    prop_assert_eq!(t.platform, platform);
                    let theirs = platform_schedule(&t);
                    compare(&ours, &theirs, start).map_err(|e| {
                        TestCaseError::fail(format!(
                            "{expr:?} in {} ({policy:?}) -> {t:?}: {e}",
                            ours.zone().name()
                        ))
                    })?;
                }
                Err(reasons) => {
                    prop_assert!(!reasons.is_empty(), "{expr:?}: inexact without a reason");
                    for reason in &reasons {
                        prop_assert!(!reason.to_string().is_empty());
                    }
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (exact, total) = (exact_count.get(), total.get());
    eprintln!("exact translations: {exact} of {total}");
    assert!(
        exact * 4 >= total,
        "only {exact} of {total} translations were exact: the property is nearly vacuous"
    );
}

/// Cloudflare's parser (saffron) restricts days with any field but a bare
/// `*`, and ORs two restricted day fields (issue 18).
#[test]
fn the_cloudflare_dialect_reads_day_fields_as_saffron_does() {
    let cf = |text| CronExpr::parse_dialect(text, cronslot_core::Dialect::Cloudflare).unwrap();
    assert!(cf("0 12 1 * 2").days_are_either());
    assert!(cf("0 12 */2 * 2").days_are_either(), "`*/2` restricts days");
    assert!(!cf("0 12 * * 2").days_are_either());
    // The input dialect counts a field that begins with `*` as unrestricted.
    assert!(!CronExpr::parse("0 12 */2 * 1").unwrap().days_are_either());
}
