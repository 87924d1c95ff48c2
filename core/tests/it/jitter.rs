//! Deterministic jitter (`jitter = "10m"`, `cronslot_core::jitter`): where
//! each slot starts, that every decision waits for that start and keeps the
//! slot's id, that the planner and the wake index find it there, and how
//! the manifest and a schedule's spec declare it.

use std::time::Duration;

use cronslot_core::coord::decide::{self, Precondition, ScheduleWrite, next_wake, put_schedule};
use cronslot_core::coord::{Claim, Idle, JobState, SplitMix64, Trigger};
use cronslot_core::due::DuePlanner;
use cronslot_core::jitter::jitter_offset;
use cronslot_core::manifest::{JobSpec, JobTemplate, load_precompiled, parse_manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use jiff::{SignedDuration, Timestamp};

fn at(s: &str) -> Timestamp {
    s.parse().expect("instant")
}

fn secs(n: i64) -> SignedDuration {
    SignedDuration::from_secs(n)
}

fn job(name: &str, body: &str) -> JobSpec {
    let text = format!("[[job]]\nname = \"{name}\"\ncommand = [\"true\"]\n{body}\n");
    parse_manifest(&text, "jitter.toml")
        .unwrap_or_else(|e| panic!("{e}"))
        .jobs
        .remove(0)
}

/// A record of `spec`'s job created at 08:00, before the 09:00 slot.
fn created(spec: &JobSpec) -> JobState {
    JobState::new(
        spec.name.as_str(),
        &spec.spec_hash(),
        at("2027-01-04T08:00:00Z"),
        false,
    )
}

fn daily(name: &str) -> JobSpec {
    job(name, "schedule = \"0 9 * * *\"\njitter = \"10m\"")
}

const NINE: &str = "2027-01-04T09:00:00Z";

#[test]
fn a_slot_starts_at_the_same_point_of_its_window_on_every_call() {
    let spec = daily("invoice");
    let slot = at(NINE);
    let start = spec.start_of(slot);
    assert_eq!(start, spec.start_of(slot), "a pure function");
    assert!(start >= slot && start < slot + secs(600), "{start}");
    assert_eq!(start.subsec_nanosecond(), 0, "whole seconds");
    // The point is the hash of the record's name and the instant: the
    // published function gives it, so any platform can compute it.
    let offset = jitter_offset("invoice", slot, Duration::from_secs(600));
    assert_eq!(
        start,
        slot + SignedDuration::try_from(offset).expect("fits")
    );
    // Another job, another day: another point.
    let others: Vec<Timestamp> = (0..20)
        .map(|i| daily(&format!("tenant-{i}")).start_of(slot))
        .collect();
    assert!(others.iter().any(|s| *s != start), "{others:?}");
    // No jitter: the slot's own instant.
    assert_eq!(
        job("plain", "schedule = \"0 9 * * *\"").start_of(slot),
        slot
    );
}

#[test]
fn ten_thousand_schedules_spread_evenly_over_the_window() {
    let slot = at(NINE);
    let mut per_minute = [0u32; 10];
    for i in 0..10_000 {
        let offset = jitter_offset(
            &format!("invoice/tenant-{i}"),
            slot,
            Duration::from_secs(600),
        );
        per_minute[(offset.as_secs() / 60) as usize] += 1;
    }
    // 1,000 a minute if even; each minute within 15% of that.
    assert!(
        per_minute.iter().all(|&n| (850..=1150).contains(&n)),
        "{per_minute:?}"
    );
}

#[test]
fn the_window_ends_before_the_next_slot() {
    // Every five minutes with a ten-minute jitter: each window is cut to
    // the five minutes before the next slot, so slots start in order.
    let spec = job("often", "schedule = \"*/5 * * * *\"\njitter = \"10m\"");
    let mut previous = None;
    for i in 0..200 {
        let slot = at(NINE) + secs(300 * i);
        assert_eq!(spec.jitter_window(slot), Duration::from_secs(300));
        let start = spec.start_of(slot);
        assert!(start < slot + secs(300), "slot {slot} starts at {start}");
        if let Some(p) = previous {
            assert!(start > p, "in order");
        }
        previous = Some(start);
    }
}

#[test]
fn a_claim_waits_for_the_start_and_keeps_the_nominal_slot() {
    let spec = daily("invoice");
    let slot = at(NINE);
    let start = spec.start_of(slot);
    assert!(start > slot, "this job's start is after 09:00: {start}");
    let mut state = created(&spec);
    let mut rng = SplitMix64::new(1);
    let claim = |state: &mut JobState, now: Timestamp, rng: &mut SplitMix64| {
        decide::claim(&spec, state, now, Trigger::Tick, "o", rng).expect("a claim")
    };
    // At the nominal instant and just before the start: nothing, and the
    // slot is neither missed nor passed.
    for now in [slot, start - secs(1)] {
        match claim(&mut state, now, &mut rng) {
            Claim::Idle(Idle::NothingDue { next_slot, .. }) => assert_eq!(next_slot, Some(slot)),
            other => panic!("at {now}: {other:?}"),
        }
    }
    assert_eq!(state.counters.missed_total(), 0);
    // At the start: the slot, with its nominal id.
    match claim(&mut state, start, &mut rng) {
        Claim::Claimed(lease) => assert_eq!(lease.slot, slot),
        other => panic!("at the start: {other:?}"),
    }
    // The slot's own trigger (a redelivery, an operator) before the start
    // is not yet due.
    let mut fresh = created(&spec);
    match decide::claim(&spec, &mut fresh, slot, Trigger::Slot(slot), "o", &mut rng) {
        Ok(Claim::Idle(Idle::NotYetDue { slot: s })) => assert_eq!(s, slot),
        other => panic!("{other:?}"),
    }
}

#[test]
fn catch_up_and_the_starting_deadline_count_from_the_nominal_instant() {
    // Down from 08:00 to 09:30: the 09:00 slot (start within 09:00-09:10)
    // is within its derived deadline (10m of jitter + 10m) and runs.
    let spec = daily("invoice");
    assert_eq!(spec.starting_deadline, Duration::from_secs(20 * 60));
    let mut state = created(&spec);
    let mut rng = SplitMix64::new(1);
    match decide::claim(
        &spec,
        &mut state,
        at("2027-01-04T09:15:00Z"),
        Trigger::Tick,
        "o",
        &mut rng,
    ) {
        Ok(Claim::Claimed(lease)) => assert_eq!(lease.slot, at(NINE)),
        other => panic!("{other:?}"),
    }
    // Down until 09:25: past the deadline from 09:00 (09:20), whatever the
    // start was: missed.
    let mut late = created(&spec);
    match decide::claim(
        &spec,
        &mut late,
        at("2027-01-04T09:25:00Z"),
        Trigger::Tick,
        "o",
        &mut rng,
    ) {
        Ok(Claim::Idle(_)) => assert_eq!(late.counters.missed_total(), 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_planner_finds_a_jittered_job_at_its_start_minute() {
    let specs = vec![daily("invoice"), job("plain", "schedule = \"0 9 * * *\"")];
    let planner = DuePlanner::new(&specs, |_| true);
    let start = specs[0].start_of(at(NINE));
    let window = |after: Timestamp| -> Vec<(usize, Timestamp)> {
        planner
            .due(&specs, after, after + secs(60))
            .into_iter()
            .map(|d| (d.job, d.slot))
            .collect()
    };
    // The minute of 09:00 plans the plain job; the jittered one only if
    // its start falls in that minute too.
    let nine = window(at(NINE) - secs(60));
    assert!(nine.contains(&(1, at(NINE))), "{nine:?}");
    assert_eq!(nine.contains(&(0, at(NINE))), start == at(NINE), "{nine:?}");
    // The window holding the start plans the jittered job, with its slot.
    let at_start = window(start - secs(1));
    assert!(
        at_start.contains(&(0, at(NINE))),
        "{at_start:?} (start {start})"
    );
    // Every window, once: the job is planned in exactly one minute.
    let planned = (0..12)
        .filter(|m| {
            window(at(NINE) - secs(60) + secs(60 * m))
                .iter()
                .any(|(j, _)| *j == 0)
        })
        .count();
    assert_eq!(planned, 1);
}

/// A dynamic job whose deadline holds a ten-minute jitter.
fn invoices() -> JobTemplate {
    parse_manifest(
        "[[job]]\nname = \"invoice\"\ndynamic = true\ncommand = [\"true\"]\nstarting_deadline = \"30m\"\n",
        "t.toml",
    )
    .expect("valid")
    .templates
    .remove(0)
}

#[test]
fn a_records_wake_is_its_next_start() {
    let template = invoices();
    let key = ScheduleKey::new("tenant-7").expect("key");
    let spec = ScheduleSpec::from_json(r#"{"cron": "0 9 * * *", "jitter": "10m"}"#).expect("spec");
    let mut rng = SplitMix64::new(1);
    let (_, mut state) = match put_schedule(
        &template,
        &key,
        None,
        spec.clone(),
        Precondition::None,
        at("2027-01-04T08:00:00Z"),
        &mut rng,
    ) {
        Ok((ScheduleWrite::Created { .. }, Some(state))) => ((), state),
        other => panic!("{other:?}"),
    };
    // The record as the coordinator writes it.
    decide::seal_keyed(&template, &key, &mut state, at("2027-01-04T08:00:00Z")).expect("sealed");
    let job = template.for_schedule(&key, &spec).expect("runs");
    assert_eq!(job.jitter, Duration::from_secs(600));
    let start = job.start_of(at(NINE));
    assert_eq!(state.wake_at, Some(start));
    assert_eq!(
        next_wake(&job, &state, at("2027-01-04T08:00:00Z")),
        Some(start)
    );
}

#[test]
fn a_change_between_the_instant_and_the_start_neither_drops_nor_doubles_the_slot() {
    let template = invoices();
    // A key whose 09:00 starts after 09:01, so that a change lands between.
    let key = (0..100)
        .map(|i| ScheduleKey::new(format!("t-{i}")).expect("key"))
        .find(|k| {
            let spec =
                ScheduleSpec::from_json(r#"{"cron": "0 9 * * *", "jitter": "10m"}"#).expect("spec");
            template
                .for_schedule(k, &spec)
                .expect("runs")
                .start_of(at(NINE))
                > at("2027-01-04T09:01:00Z")
        })
        .expect("one of a hundred");
    let v1 = ScheduleSpec::from_json(r#"{"cron": "0 9 * * *", "jitter": "10m", "payload": 1}"#)
        .expect("spec");
    let v2 = ScheduleSpec::from_json(r#"{"cron": "0 9 * * *", "jitter": "10m", "payload": 2}"#)
        .expect("spec");
    let mut rng = SplitMix64::new(1);
    let Ok((_, Some(state))) = put_schedule(
        &template,
        &key,
        None,
        v1.clone(),
        Precondition::None,
        at("2027-01-04T08:00:00Z"),
        &mut rng,
    ) else {
        panic!("created")
    };
    let start = template
        .for_schedule(&key, &v1)
        .expect("runs")
        .start_of(at(NINE));
    // The change at 09:01, after the instant, before the start.
    let Ok((ScheduleWrite::Changed { version: 2 }, Some(mut state))) = put_schedule(
        &template,
        &key,
        Some(state),
        v2.clone(),
        Precondition::None,
        at("2027-01-04T09:01:00Z"),
        &mut rng,
    ) else {
        panic!("changed")
    };
    let data = state.schedule.clone().expect("data");
    let mut job = template.for_schedule(&key, &v2).expect("runs");
    job.schedule_version = Some(data.version);
    // Not before its start; at its start, once, as version 1's.
    match decide::claim(
        &job,
        &mut state,
        start - secs(1),
        Trigger::Tick,
        "o",
        &mut rng,
    ) {
        Ok(Claim::Idle(_)) => {}
        other => panic!("before the start: {other:?}"),
    }
    let lease = match decide::claim(&job, &mut state, start, Trigger::Tick, "o", &mut rng) {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("at the start: {other:?}"),
    };
    assert_eq!((lease.slot, lease.version), (at(NINE), Some(1)));
    decide::complete(&job, &mut state, lease.fence, None, start + secs(5)).expect("completed");
    match decide::claim(
        &job,
        &mut state,
        start + secs(30),
        Trigger::Tick,
        "o",
        &mut rng,
    ) {
        Ok(Claim::Idle(_)) => {}
        other => panic!("the slot ran once: {other:?}"),
    }
}

#[test]
fn the_manifest_declares_jitter_and_checks_it_against_the_deadline_and_trigger() {
    let refused = |body: &str| {
        let text = format!(
            "[[job]]\nname = \"a\"\nschedule = \"0 9 * * *\"\ncommand = [\"true\"]\n{body}\n"
        );
        parse_manifest(&text, "j.toml")
            .expect_err("refused")
            .to_string()
    };
    let e = refused("jitter = \"10m\"\nstarting_deadline = \"10m\"");
    assert!(e.contains("starting_deadline of at least 11m"), "{e}");
    let e = refused("jitter = \"10m\"\ntrigger = \"dedicated\"");
    assert!(e.contains("jitter needs trigger = \"tick\""), "{e}");
    let e = refused("jitter = \"2d\"");
    assert!(e.contains("longer than the limit of 1d"), "{e}");
    let e = refused("jitter = \"ten minutes\"");
    assert!(e.contains("jitter"), "{e}");
    // From [defaults], with a job that turns it off.
    let text = "[defaults]\njitter = \"5m\"\n\n[[job]]\nname = \"a\"\nschedule = \"0 9 * * *\"\ncommand = [\"true\"]\n\n[[job]]\nname = \"b\"\nschedule = \"0 9 * * *\"\ncommand = [\"true\"]\njitter = \"0s\"\n";
    let m = parse_manifest(text, "j.toml").expect("valid");
    assert_eq!(m.jobs[0].jitter, Duration::from_secs(300));
    assert_eq!(m.jobs[0].starting_deadline, Duration::from_secs(15 * 60));
    assert_eq!(m.jobs[1].jitter, Duration::ZERO);
    // The precompiled form keeps each job's jitter.
    let loaded = load_precompiled(&m.to_precompiled(text)).expect("loads");
    assert_eq!(loaded.jobs[0].jitter, Duration::from_secs(300));
    assert_eq!(loaded.jobs[1].jitter, Duration::ZERO);
    assert_eq!(
        loaded.jobs[0].starting_deadline,
        Duration::from_secs(15 * 60)
    );
}

#[test]
fn a_schedules_spec_declares_its_own_jitter() {
    let spec = ScheduleSpec::from_json(r#"{"cron": "0 9 * * *", "jitter": "90s"}"#).expect("spec");
    assert_eq!(spec.jitter, Some(Duration::from_secs(90)));
    assert_eq!(
        ScheduleSpec::from_json(&spec.to_json()).expect("again"),
        spec
    );
    assert!(
        spec.to_json().contains("\"jitter\":\"1m30s\""),
        "{}",
        spec.to_json()
    );
    for bad in [
        r#"{"cron": "0 9 * * *", "jitter": "soon"}"#,
        r#"{"cron": "0 9 * * *", "jitter": "3d"}"#,
    ] {
        let problems = ScheduleSpec::from_json(bad).expect_err("refused");
        assert_eq!(problems[0].field, "jitter", "{problems:?}");
    }
    // The template's deadline must hold the schedule's window.
    let template = parse_manifest(
        "[[job]]\nname = \"i\"\ndynamic = true\ncommand = [\"true\"]\n",
        "t.toml",
    )
    .expect("valid")
    .templates
    .remove(0);
    let key = ScheduleKey::new("k").expect("key");
    let wide = ScheduleSpec::from_json(r#"{"cron": "0 9 * * *", "jitter": "30m"}"#).expect("spec");
    let problem = template.for_schedule(&key, &wide).expect_err("refused");
    assert_eq!(problem.field, "jitter");
    assert!(problem.message.contains("starting_deadline"), "{problem}");
}
