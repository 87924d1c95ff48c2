//! Writing a dynamic job's schedules (`decide::put_schedule`,
//! `delete_schedule`): versions and preconditions, tombstones, and the rule
//! that a change never drops or doubles a slot, tried with changes 0.1 s,
//! 1 s and 10 s before and after a fire time, for an hour change, a zone
//! change, a pause and a delete.

use cronslot_core::coord::decide::{
    self, Precondition, ScheduleRefusal, ScheduleWrite, delete_schedule, put_schedule,
};
use cronslot_core::coord::{Claim, FailOutcome, JobState, SkipReason, SplitMix64, Trigger};
use cronslot_core::manifest::{JobSpec, JobTemplate, parse_manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use jiff::{SignedDuration, Timestamp};

fn template() -> JobTemplate {
    let text = "[[job]]\nname = \"invoice\"\ndynamic = true\ncommand = [\"true\"]\nlease = \"2m\"\ntimeout = \"1m\"\n";
    parse_manifest(text, "t.toml")
        .expect("valid")
        .templates
        .remove(0)
}

fn key() -> ScheduleKey {
    ScheduleKey::new("tenant-1").expect("key")
}

fn spec(json: &str) -> ScheduleSpec {
    ScheduleSpec::from_json(json).expect("spec")
}

fn at(s: &str) -> Timestamp {
    s.parse().expect("instant")
}

fn ms(n: i64) -> SignedDuration {
    SignedDuration::from_millis(n)
}

/// The fire time every case is built around.
fn fire() -> Timestamp {
    at("2027-01-04T09:00:00Z")
}

/// The spec the record's version in force runs with.
fn in_force(t: &JobTemplate, state: &JobState) -> JobSpec {
    let data = state.schedule.as_ref().expect("a schedule's record");
    t.for_schedule(&key(), &data.spec().expect("reads").expect("live"))
        .expect("runs")
}

/// A schedule created well before the fire time with `json`.
fn created(t: &JobTemplate, json: &str) -> JobState {
    let mut rng = SplitMix64::new(1);
    match put_schedule(
        t,
        &key(),
        None,
        spec(json),
        Precondition::None,
        at("2027-01-04T08:00:00Z"),
        &mut rng,
    ) {
        Ok((ScheduleWrite::Created { version: 1 }, Some(state))) => state,
        other => panic!("created: {other:?}"),
    }
}

fn change(t: &JobTemplate, state: JobState, json: &str, now: Timestamp) -> JobState {
    let mut rng = SplitMix64::new(2);
    match put_schedule(
        t,
        &key(),
        Some(state),
        spec(json),
        Precondition::None,
        now,
        &mut rng,
    ) {
        Ok((ScheduleWrite::Changed { .. }, Some(state))) => state,
        other => panic!("changed: {other:?}"),
    }
}

/// Every claim a tick would make, every 20 seconds from `from` to `until`,
/// with the version in force at each; each run completes at once, and the
/// record is fitted as the coordinator fits it before every write. Returns
/// the slots run, each with the payload it ran with.
fn run_ticks(
    t: &JobTemplate,
    state: &mut JobState,
    from: Timestamp,
    until: Timestamp,
) -> Vec<(Timestamp, Option<String>)> {
    let mut rng = SplitMix64::new(3);
    let mut ran = Vec::new();
    let mut now = from;
    while now <= until {
        if state.schedule.as_ref().is_some_and(|d| d.is_live()) {
            let spec = in_force(t, state);
            while let Ok(Claim::Claimed(lease)) =
                decide::claim(&spec, state, now, Trigger::Tick, "w", &mut rng)
            {
                let payload = state
                    .schedule
                    .as_ref()
                    .and_then(|d| d.payload(lease.version));
                ran.push((lease.slot, payload));
                decide::complete(&spec, state, lease.fence, None, now).expect("completes");
                decide::fit_record(state);
            }
        }
        now += SignedDuration::from_secs(20);
    }
    ran
}

const OFFSETS_MS: [i64; 3] = [100, 1_000, 10_000];

#[test]
fn an_hour_change_runs_the_old_slot_when_made_after_it_and_the_new_one_after() {
    let t = template();
    let old = r#"{"cron":"0 9 * * *","payload":{"v":1}}"#;
    let new = r#"{"cron":"0 10 * * *","payload":{"v":2}}"#;
    let ten = at("2027-01-04T10:00:00Z");
    for offset in OFFSETS_MS {
        // Before the fire time: 09:00 belongs to the new version, which
        // has no 09:00; 10:00 runs, with the new payload.
        let mut s = created(&t, old);
        let at_change = fire() - ms(offset);
        let mut ran = run_ticks(&t, &mut s, at("2027-01-04T08:59:00Z"), at_change);
        s = change(&t, s, new, at_change);
        ran.extend(run_ticks(&t, &mut s, at_change, ten + ms(30_000)));
        assert_eq!(
            ran,
            [(ten, Some(r#"{"v":2}"#.into()))],
            "{offset} ms before"
        );

        // After it, not yet claimed: 09:00 belongs to the old version and
        // runs once with its payload, though claimed after the change.
        let mut s = created(&t, old);
        let at_change = fire() + ms(offset);
        s = change(&t, s, new, at_change);
        let ran = run_ticks(&t, &mut s, at_change, ten + ms(30_000));
        assert_eq!(
            ran,
            [
                (fire(), Some(r#"{"v":1}"#.into())),
                (ten, Some(r#"{"v":2}"#.into()))
            ],
            "{offset} ms after"
        );
        let data = s.schedule.as_ref().expect("schedule");
        assert_eq!(data.version, 2);
        assert!(
            data.pinned.is_empty(),
            "nothing refers to version 1 any more"
        );
    }
}

#[test]
fn a_zone_change_keeps_the_slot_due_before_it() {
    let t = template();
    let utc = r#"{"cron":"0 9 * * *"}"#;
    let new_york = r#"{"cron":"0 9 * * *","timezone":"America/New_York"}"#;
    // 09:00 in New York on 4 January is 14:00 UTC.
    let ny_nine = at("2027-01-04T14:00:00Z");
    for offset in OFFSETS_MS {
        let mut s = created(&t, utc);
        let at_change = fire() - ms(offset);
        s = change(&t, s, new_york, at_change);
        let ran: Vec<Timestamp> = run_ticks(&t, &mut s, at_change, ny_nine + ms(30_000))
            .into_iter()
            .map(|(slot, _)| slot)
            .collect();
        assert_eq!(ran, [ny_nine], "{offset} ms before");

        let mut s = created(&t, utc);
        let at_change = fire() + ms(offset);
        s = change(&t, s, new_york, at_change);
        let ran: Vec<Timestamp> = run_ticks(&t, &mut s, at_change, ny_nine + ms(30_000))
            .into_iter()
            .map(|(slot, _)| slot)
            .collect();
        assert_eq!(ran, [fire(), ny_nine], "{offset} ms after");
    }
}

#[test]
fn a_pause_skips_what_comes_after_it_and_runs_what_came_due_before() {
    let t = template();
    let every_minute = r#"{"cron":"* * * * *"}"#;
    let paused = r#"{"cron":"* * * * *","paused":true}"#;
    for offset in OFFSETS_MS {
        let mut s = created(&t, every_minute);
        let at_change = fire() - ms(offset);
        // The slots up to 08:59 ran before the change.
        run_ticks(&t, &mut s, at("2027-01-04T08:59:00Z"), fire() - ms(10_001));
        s = change(&t, s, paused, at_change);
        let ran = run_ticks(&t, &mut s, at_change, fire() + ms(120_000));
        assert_eq!(ran, [], "{offset} ms before: 09:00 on is paused");
        assert!(
            s.counters.skipped[&SkipReason::Paused] >= 2,
            "{:?}",
            s.counters
        );

        let mut s = created(&t, every_minute);
        run_ticks(&t, &mut s, at("2027-01-04T08:59:00Z"), fire() - ms(10_001));
        let at_change = fire() + ms(offset);
        s = change(&t, s, paused, at_change);
        let ran: Vec<Timestamp> = run_ticks(&t, &mut s, at_change, fire() + ms(120_000))
            .into_iter()
            .map(|(slot, _)| slot)
            .collect();
        assert_eq!(ran, [fire()], "{offset} ms after: 09:00 came due unpaused");
    }
}

#[test]
fn a_delete_starts_nothing_after_it() {
    let t = template();
    let nine = r#"{"cron":"0 9 * * *"}"#;
    let mut rng = SplitMix64::new(4);
    for offset in OFFSETS_MS {
        for (when, at_delete) in [
            ("before", fire() - ms(offset)),
            ("after", fire() + ms(offset)),
        ] {
            let s = created(&t, nine);
            let (write, mut s) =
                delete_schedule(&t, &key(), Some(s), Precondition::None, at_delete, &mut rng)
                    .expect("deletes");
            assert_eq!(write, ScheduleWrite::Deleted { version: 2 });
            let ran = run_ticks(&t, &mut s, at_delete, fire() + ms(3_600_000));
            assert_eq!(ran, [], "{offset} ms {when}");
            // After the fire time, 09:00 was due and not claimed: dropped.
            let dropped = s.counters.skipped.get(&SkipReason::Deleted).copied();
            assert_eq!(
                dropped.unwrap_or(0),
                u64::from(when == "after"),
                "{offset} ms {when}"
            );
            assert_eq!(s.wake_at, None, "a tombstone wakes nobody");
        }
    }
}

#[test]
fn a_run_in_flight_at_a_delete_finishes_but_is_not_retried() {
    let t = template();
    let mut s = created(&t, r#"{"cron":"0 9 * * *","payload":"p"}"#);
    let spec = in_force(&t, &s);
    let mut rng = SplitMix64::new(5);
    let first = match decide::claim(
        &spec,
        &mut s,
        fire() + ms(500),
        Trigger::Tick,
        "a",
        &mut rng,
    ) {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("claimed: {other:?}"),
    };
    let (_, mut s) = delete_schedule(
        &t,
        &key(),
        Some(s),
        Precondition::None,
        fire() + ms(1_000),
        &mut rng,
    )
    .expect("deletes");
    let data = s.schedule.as_ref().expect("tombstone");
    assert_eq!(data.spec_json, None);
    assert_eq!(
        data.payload(Some(1)).as_deref(),
        Some("\"p\""),
        "the run in flight keeps its payload"
    );
    let outcome = decide::fail(
        &spec,
        &mut s,
        first.fence,
        "boom",
        false,
        fire() + ms(2_000),
        &mut rng,
    )
    .expect("the run's failure is recorded");
    assert_eq!(outcome, FailOutcome::Dead);
    assert!(s.pending.is_empty(), "no retry after a delete");
    assert!(s.dead[0].last_error.contains("its schedule was deleted"));
}

#[test]
fn versions_preconditions_and_a_recreate_over_a_tombstone() {
    let t = template();
    let mut rng = SplitMix64::new(6);
    let now = fire();
    let v1 = r#"{"cron":"0 9 * * *"}"#;
    let s = created(&t, v1);
    // The same spec again writes nothing.
    let (w, write) = put_schedule(
        &t,
        &key(),
        Some(s.clone()),
        spec(v1),
        Precondition::None,
        now,
        &mut rng,
    )
    .expect("unchanged");
    assert_eq!((w, write), (ScheduleWrite::Unchanged { version: 1 }, None));
    // Create-only over a live schedule.
    assert_eq!(
        put_schedule(
            &t,
            &key(),
            Some(s.clone()),
            spec(v1),
            Precondition::Absent,
            now,
            &mut rng
        ),
        Err(ScheduleRefusal::Exists { version: 1 })
    );
    // A conditional write over another version.
    assert_eq!(
        put_schedule(
            &t,
            &key(),
            Some(s.clone()),
            spec(r#"{"cron":"0 8 * * *"}"#),
            Precondition::Version(7),
            now,
            &mut rng
        ),
        Err(ScheduleRefusal::VersionMismatch { current: Some(1) })
    );
    let (w, s) = put_schedule(
        &t,
        &key(),
        Some(s),
        spec(r#"{"cron":"0 8 * * *"}"#),
        Precondition::Version(1),
        now,
        &mut rng,
    )
    .expect("changes");
    assert_eq!(w, ScheduleWrite::Changed { version: 2 });
    let mut s = s.expect("written");
    // A run, then a delete, then a re-create.
    let spec8 = in_force(&t, &s);
    let lease = match decide::claim(
        &spec8,
        &mut s,
        at("2027-01-05T08:00:01Z"),
        Trigger::Tick,
        "a",
        &mut rng,
    ) {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("claimed: {other:?}"),
    };
    let (w, s) = delete_schedule(
        &t,
        &key(),
        Some(s),
        Precondition::Version(2),
        at("2027-01-05T08:00:02Z"),
        &mut rng,
    )
    .expect("deletes");
    assert_eq!(w, ScheduleWrite::Deleted { version: 3 });
    assert_eq!(
        delete_schedule(
            &t,
            &key(),
            Some(s.clone()),
            Precondition::None,
            now,
            &mut rng
        )
        .err(),
        Some(ScheduleRefusal::NotFound)
    );
    assert_eq!(
        put_schedule(
            &t,
            &key(),
            Some(s.clone()),
            spec(v1),
            Precondition::Version(2),
            now,
            &mut rng
        ),
        Err(ScheduleRefusal::VersionMismatch { current: None }),
        "a version from before the delete never matches"
    );
    let (w, s) = put_schedule(
        &t,
        &key(),
        Some(s),
        spec(v1),
        Precondition::Absent,
        at("2027-01-05T08:00:03Z"),
        &mut rng,
    )
    .expect("re-creates");
    assert_eq!(w, ScheduleWrite::Created { version: 4 });
    let mut s = s.expect("written");
    assert!(
        s.leases.is_empty(),
        "the lease from before the delete is gone"
    );
    // The worker fenced before the delete cannot complete after it.
    let spec9 = in_force(&t, &s);
    assert!(
        decide::complete(
            &spec9,
            &mut s,
            lease.fence,
            None,
            at("2027-01-05T08:00:04Z")
        )
        .is_err()
    );
    let next = match decide::claim(
        &spec9,
        &mut s,
        at("2027-01-05T09:00:01Z"),
        Trigger::Tick,
        "b",
        &mut rng,
    ) {
        Ok(Claim::Claimed(next)) => next,
        other => panic!("claimed: {other:?}"),
    };
    assert!(next.fence > lease.fence, "fences go on across the delete");
}
