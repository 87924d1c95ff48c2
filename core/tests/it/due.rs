//! The tick planner (`due`): its answer is exactly "the job's next slot
//! after the window's start falls in the window", whichever path it takes
//! (minute matching, or job by job near offset changes and for long
//! windows). Checked against that definition over schedules, zones and
//! windows, DST changes included.

use std::sync::OnceLock;

use cronslot_core::due::{Due, DuePlanner};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;

const SCHEDULES: [&str; 11] = [
    "* * * * *",
    "*/5 * * * *",
    "30 2 * * *",
    "0 1 * * *",
    "15,45 * * * *",
    "0 9 * * MON-FRI",
    "0 0 L * *",
    "59 23 * * *",
    "0 12 29 2 *",
    "*/7 1-3 * * *",
    "0 0 1 1 *",
];

const ZONES: [&str; 7] = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "Pacific/Apia",
    "Asia/Kolkata",
    "America/Sao_Paulo",
];

fn specs() -> &'static [JobSpec] {
    static SPECS: OnceLock<Vec<JobSpec>> = OnceLock::new();
    SPECS.get_or_init(parse_specs)
}

fn parse_specs() -> Vec<JobSpec> {
    let mut text = String::new();
    let mut n = 0;
    for schedule in SCHEDULES {
        for zone in ZONES {
            for policy in [
                "dst_gap = \"shift\"",
                "dst_gap = \"skip\"\ndst_overlap = \"twice\"",
            ] {
                n += 1;
                text.push_str(&format!(
                    "[[job]]\nname = \"j{n}\"\nschedule = \"{schedule}\"\ntimezone = \"{zone}\"\n{policy}\ncommand = [\"true\"]\n"
                ));
            }
        }
    }
    // One with an active window, so the planner honours it.
    text.push_str(
        "[[job]]\nname = \"windowed\"\nschedule = \"* * * * *\"\nstart_at = \"2026-03-08T06:58:00Z\"\nend_at = \"2026-03-08T07:03:00Z\"\ncommand = [\"true\"]\n",
    );
    parse_manifest(&text, "due.toml")
        .expect("valid manifest")
        .jobs
}

/// The definition the planner must meet.
fn expected(specs: &[JobSpec], after: Timestamp, until: Timestamp) -> Vec<Due> {
    let mut due: Vec<Due> = specs
        .iter()
        .enumerate()
        .filter_map(|(job, spec)| {
            let mut from = after;
            loop {
                let slot = spec.schedule.next_after(from)?;
                if slot > until {
                    return None;
                }
                if spec.in_window(slot) {
                    return Some(Due { slot, job });
                }
                from = slot;
            }
        })
        .collect();
    due.sort_unstable();
    due
}

fn at(s: &str) -> Timestamp {
    s.parse().expect("instant")
}

#[test]
fn planned_jobs_are_exactly_those_with_a_slot_in_the_window() {
    let specs = specs();
    let planner = DuePlanner::new(specs, |_| true);
    // Around New York's and Berlin's spring gaps and autumn overlaps, Lord
    // Howe's half hour, Apia's skipped day (2011), the window's edges.
    let starts = [
        "2026-03-08T06:00:00Z",
        "2026-03-08T06:59:30Z",
        "2026-03-29T00:58:00Z",
        "2026-11-01T05:29:00Z",
        "2026-11-01T06:00:00Z",
        "2026-10-25T00:30:00Z",
        "2026-04-04T14:45:00Z",
        "2011-12-30T09:55:00Z",
        "2026-02-28T23:58:59.5Z",
        "2026-06-15T12:00:00Z",
    ];
    let lengths = [1, 30, 59, 60, 61, 90, 15 * 60, 16 * 60 + 1, 3600, 6 * 3600];
    for start in starts {
        for secs in lengths {
            let after = at(start);
            let until = after + SignedDuration::from_secs(secs);
            assert_eq!(
                planner.due(specs, after, until),
                expected(specs, after, until),
                "window ({after}, {until}]"
            );
        }
    }
}

#[test]
fn a_window_that_is_empty_or_backwards_plans_nothing() {
    let specs = specs();
    let planner = DuePlanner::new(specs, |_| true);
    let t = at("2026-06-15T12:00:00Z");
    assert!(planner.due(specs, t, t).is_empty());
    assert!(
        planner
            .due(specs, t, t - SignedDuration::from_secs(60))
            .is_empty()
    );
}

#[test]
fn only_included_jobs_are_planned_and_every_job_has_a_position() {
    let specs = specs();
    let planner = DuePlanner::new(specs, |s| s.name.as_str() == "j1");
    assert_eq!(planner.len(), 1);
    let after = at("2026-06-15T12:00:00Z");
    let due = planner.due(specs, after, after + SignedDuration::from_secs(60));
    assert_eq!(
        due,
        vec![Due {
            slot: at("2026-06-15T12:01:00Z"),
            job: 0
        }]
    );
    assert_eq!(planner.position("windowed"), Some(specs.len() - 1));
    assert_eq!(planner.position("nope"), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_window_plans_as_defined(
        start in 1_262_304_000i64..1_893_456_000, // 2010..2030
        nanos in 0u32..1_000_000_000,
        secs in 0i64..7200,
    ) {
        let specs = specs();
        let planner = DuePlanner::new(specs, |_| true);
        let after = Timestamp::new(start, nanos as i32).expect("instant");
        let until = after + SignedDuration::from_secs(secs);
        prop_assert_eq!(planner.due(specs, after, until), expected(specs, after, until));
    }
}

/// Windows all around offset changes, where the planner searches only the
/// jobs that fire at a wall-clock minute the change skips or repeats (or
/// that follow real time) and matches minutes for the others: every few
/// minutes within three hours of each change, then hourly-ish within a day
/// of it, in both directions, half-hour changes and a lost day included.
#[test]
fn windows_around_offset_changes_plan_as_defined() {
    let specs = specs();
    let planner = DuePlanner::new(specs, |_| true);
    let changes = [
        "2026-03-08T07:00:00Z", // New York springs forward
        "2026-11-01T06:00:00Z", // New York falls back
        "2026-03-29T01:00:00Z", // Berlin springs forward
        "2026-10-25T01:00:00Z", // Berlin falls back
        "2026-04-04T15:00:00Z", // Lord Howe falls back half an hour
        "2026-10-03T15:30:00Z", // Lord Howe springs forward half an hour
        "2018-11-04T03:00:00Z", // São Paulo springs forward at midnight
        "2019-02-17T02:00:00Z", // São Paulo falls back
        "2011-12-30T10:00:00Z", // Apia skips a day
    ];
    for change in changes {
        let change = at(change);
        let near = (-180..=180).step_by(7);
        let around = (-27 * 60..=27 * 60).step_by(53);
        for minutes in near.chain(around) {
            let after = change + SignedDuration::from_mins(minutes);
            for secs in [60, 120, 16 * 60] {
                let until = after + SignedDuration::from_secs(secs);
                assert_eq!(
                    planner.due(specs, after, until),
                    expected(specs, after, until),
                    "window ({after}, {until}]"
                );
            }
        }
    }
}
