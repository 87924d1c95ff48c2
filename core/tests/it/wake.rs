//! `decide::next_wake`: what a record asks the wake index for, and what it
//! leaves to the manifest's plan.

use cronslot_core::coord::decide::{self, next_wake};
use cronslot_core::coord::{Claim, FailOutcome, JobState, SplitMix64, Trigger};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use jiff::{SignedDuration, Timestamp};

fn spec(body: &str) -> JobSpec {
    let text = format!("[[job]]\nname = \"w\"\ncommand = [\"true\"]\n{body}\n");
    parse_manifest(&text, "wake.toml")
        .expect("valid")
        .jobs
        .remove(0)
}

fn at(s: &str) -> Timestamp {
    s.parse().expect("instant")
}

fn secs(n: i64) -> SignedDuration {
    SignedDuration::from_secs(n)
}

/// A record created at `created`, claimed at `now`.
fn claimed(spec: &JobSpec, created: Timestamp, now: Timestamp) -> (JobState, u64) {
    let mut state = JobState::new("w", &spec.spec_hash(), created, false);
    let mut rng = SplitMix64::new(1);
    match decide::claim(spec, &mut state, now, Trigger::Tick, "o", &mut rng) {
        Ok(Claim::Claimed(lease)) => (state, lease.fence),
        other => panic!("expected a claim, got {other:?}"),
    }
}

#[test]
fn a_lease_is_woken_after_its_expiry_and_the_skew_margin() {
    let hourly = spec("schedule = \"0 * * * *\"\nlease = \"15m\"\nskew_margin = \"5s\"");
    let (state, _) = claimed(
        &hourly,
        at("2026-06-15T11:59:00Z"),
        at("2026-06-15T12:00:02Z"),
    );
    assert_eq!(
        next_wake(&hourly, &state, at("2026-06-15T12:00:02Z")),
        Some(at("2026-06-15T12:15:07.001Z"))
    );
}

#[test]
fn a_completed_run_leaves_no_wake() {
    let hourly = spec("schedule = \"0 * * * *\"");
    let now = at("2026-06-15T12:00:02Z");
    let (mut state, fence) = claimed(&hourly, at("2026-06-15T11:59:00Z"), now);
    decide::complete(&hourly, &mut state, fence, None, now + secs(1)).expect("complete");
    assert_eq!(next_wake(&hourly, &state, now + secs(1)), None);
}

#[test]
fn a_retry_is_woken_at_its_time_but_not_while_paused() {
    let hourly = spec(
        "schedule = \"0 * * * *\"\nretry = { max_attempts = 3, backoff = \"1m\", max_backoff = \"1m\" }",
    );
    let now = at("2026-06-15T12:00:02Z");
    let (mut state, fence) = claimed(&hourly, at("2026-06-15T11:59:00Z"), now);
    let mut rng = SplitMix64::new(2);
    let failed = decide::fail(&hourly, &mut state, fence, "flaky", false, now, &mut rng);
    let Ok(FailOutcome::RetryAt(not_before)) = failed else {
        panic!("expected a retry, got {failed:?}")
    };
    assert_eq!(next_wake(&hourly, &state, now), Some(not_before));
    state.paused = true;
    assert_eq!(
        next_wake(&hourly, &state, now),
        None,
        "a paused job's retry waits for resume"
    );
}

#[test]
fn a_slot_held_back_is_woken_at_once() {
    // Forbid overlap: the 12:01 slot waits for the 12:00 run, which has
    // just completed; the record says the slot is due now.
    let minutely = spec("schedule = \"* * * * *\"\nlease = \"5m\"\nretry = { max_attempts = 1 }");
    let (mut state, fence) = claimed(
        &minutely,
        at("2026-06-15T11:59:30Z"),
        at("2026-06-15T12:00:01Z"),
    );
    let done = at("2026-06-15T12:01:30Z");
    decide::complete(&minutely, &mut state, fence, None, done).expect("complete");
    assert_eq!(
        next_wake(&minutely, &state, done),
        Some(at("2026-06-15T12:01:00Z"))
    );
}

#[test]
fn a_wake_after_the_next_planned_slot_is_left_to_the_plan() {
    // Every minute, a 5-minute lease: the next slot comes before the
    // lease could expire, and the tick plans it from the manifest.
    let minutely = spec("schedule = \"* * * * *\"\nlease = \"5m\"\nretry = { max_attempts = 1 }");
    let now = at("2026-06-15T12:00:01Z");
    let (state, _) = claimed(&minutely, at("2026-06-15T11:59:30Z"), now);
    assert_eq!(next_wake(&minutely, &state, now), None);
    // Within the skew margin of the next slot, another server's tick may
    // have planned past it already: then the wake stays.
    let close = at("2026-06-15T12:00:57Z");
    assert_eq!(
        next_wake(&minutely, &state, close),
        Some(at("2026-06-15T12:01:00Z"))
    );
}
