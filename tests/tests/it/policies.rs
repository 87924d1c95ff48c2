//! Policies that the conformance suite does not reach: DST and clock-change
//! fates, active windows, and bounded catch-up over very long outages.

use cronslot_core::conformance::{HOUR, at, create, job, t0};
use cronslot_core::coord::Operator;
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, FateSpan, Idle, MemoryStore, MissReason, SkipReason,
    Trigger,
};
use jiff::Timestamp;

fn ts(s: &str) -> Timestamp {
    s.parse().expect("instant")
}

fn coordinator() -> CasCoordinator<MemoryStore> {
    CasCoordinator::new(MemoryStore::new(), 3)
}

async fn drain(
    c: &CasCoordinator<MemoryStore>,
    spec: &cronslot_core::manifest::JobSpec,
    now: Timestamp,
) -> Vec<Timestamp> {
    let mut ran = Vec::new();
    while let Ok(Claim::Claimed(lease)) = c.claim(spec, now, Trigger::Tick, "w").await {
        ran.push(lease.slot);
        c.complete(spec, lease.fence, None, now)
            .await
            .expect("complete");
    }
    ran
}

#[test]
fn dst_gap_skip_records_a_missed_slot() {
    let c = coordinator();
    let spec = job(
        "dst",
        "skip",
        "schedule = \"30 2 * * *\"\ntimezone = \"America/New_York\"\ndst_gap = \"skip\"\n\
         catch_up = \"all\"\nstarting_deadline = \"2d\"",
    );
    block_on(async {
        create(&c, &spec, ts("2026-03-07T12:00:00Z")).await;
        let ran = drain(&c, &spec, ts("2026-03-09T12:00:00Z")).await;
        // 2026-03-08 02:30 does not exist in New York: not run, missed (DST).
        assert_eq!(ran, vec![ts("2026-03-09T06:30:00Z")]);
        let state = c
            .status(&spec, ts("2026-03-09T12:00:01Z"))
            .await
            .expect("status");
        assert_eq!(state.counters.missed.get(&MissReason::Dst), Some(&1));
        // The timeline's span: the transition the slot fell into.
        assert_eq!(
            state.fates,
            vec![span(
                "missed",
                "dst",
                "2026-03-08T07:00:00Z",
                "2026-03-08T07:00:00Z",
                1
            )]
        );
    });
}

fn span(fate: &str, reason: &str, first: &str, last: &str, slots: u64) -> FateSpan {
    FateSpan {
        fate: fate.into(),
        reason: reason.into(),
        first: ts(first),
        last: ts(last),
        slots,
    }
}

/// Samoa went from 2011-12-29 24:00 (-10) to 2011-12-31 00:00 (+14): a
/// clock change, not DST. Under shift (the default) and skip the 30th's
/// slot does not run and is counted as missed, reason clock_change; under
/// shift_always it runs at the end of the jump.
#[test]
fn clock_change_records_its_skipped_slots_as_missed() {
    for (gap, line) in [("shift", ""), ("skip", "dst_gap = \"skip\"\n")] {
        let c = coordinator();
        let spec = job(
            "clock",
            gap,
            &format!(
                "schedule = \"0 2 * * *\"\ntimezone = \"Pacific/Apia\"\n{line}\
                 catch_up = \"all\"\nstarting_deadline = \"3d\""
            ),
        );
        block_on(async {
            create(&c, &spec, ts("2011-12-28T20:00:00Z")).await;
            let ran = drain(&c, &spec, ts("2011-12-31T00:00:00Z")).await;
            // The 29th's and the 31st's 02:00; the 30th never happened.
            assert_eq!(
                ran,
                vec![ts("2011-12-29T12:00:00Z"), ts("2011-12-30T12:00:00Z")],
                "{gap}"
            );
            let state = c
                .status(&spec, ts("2011-12-31T00:00:01Z"))
                .await
                .expect("status");
            assert_eq!(
                state.counters.missed.get(&MissReason::ClockChange),
                Some(&1),
                "{gap}: {:?}",
                state.counters.missed
            );
            assert_eq!(state.counters.missed_total(), 1, "{gap}");
            assert_eq!(MissReason::ClockChange.as_str(), "clock_change");
        });
    }

    let c = coordinator();
    let spec = job(
        "clock",
        "shift_always",
        "schedule = \"0 2 * * *\"\ntimezone = \"Pacific/Apia\"\n\
         dst_gap = \"shift_always\"\ncatch_up = \"all\"\nstarting_deadline = \"3d\"",
    );
    block_on(async {
        create(&c, &spec, ts("2011-12-28T20:00:00Z")).await;
        let ran = drain(&c, &spec, ts("2011-12-31T00:00:00Z")).await;
        assert_eq!(
            ran,
            vec![
                ts("2011-12-29T12:00:00Z"),
                ts("2011-12-30T10:00:00Z"),
                ts("2011-12-30T12:00:00Z")
            ]
        );
        let state = c
            .status(&spec, ts("2011-12-31T00:00:01Z"))
            .await
            .expect("status");
        assert_eq!(state.counters.missed_total(), 0);
    });
}

#[test]
fn dst_gap_shift_runs_at_the_end_of_the_gap() {
    let c = coordinator();
    let spec = job(
        "dst",
        "shift",
        "schedule = \"30 2 * * *\"\ntimezone = \"America/New_York\"\n\
         catch_up = \"all\"\nstarting_deadline = \"2d\"",
    );
    block_on(async {
        create(&c, &spec, ts("2026-03-07T12:00:00Z")).await;
        let ran = drain(&c, &spec, ts("2026-03-09T12:00:00Z")).await;
        assert_eq!(
            ran,
            vec![ts("2026-03-08T07:00:00Z"), ts("2026-03-09T06:30:00Z")]
        );
        let state = c
            .status(&spec, ts("2026-03-09T12:00:01Z"))
            .await
            .expect("status");
        assert_eq!(state.counters.missed_total(), 0);
    });
}

#[test]
fn fall_back_runs_a_fixed_time_slot_once() {
    let c = coordinator();
    let spec = job(
        "dst",
        "once",
        "schedule = \"30 1 * * *\"\ntimezone = \"America/New_York\"\n\
         catch_up = \"all\"\nstarting_deadline = \"2d\"",
    );
    block_on(async {
        create(&c, &spec, ts("2026-10-31T12:00:00Z")).await;
        let ran = drain(&c, &spec, ts("2026-11-02T12:00:00Z")).await;
        assert_eq!(
            ran,
            vec![ts("2026-11-01T05:30:00Z"), ts("2026-11-02T06:30:00Z")]
        );
    });
}

#[test]
fn slots_outside_the_active_window_are_skipped() {
    let c = coordinator();
    let spec = job(
        "window",
        "hourly",
        "schedule = \"0 * * * *\"\ncatch_up = \"all\"\nstarting_deadline = \"1d\"\n\
         start_at = \"2026-01-05T02:00:00Z\"\nend_at = \"2026-01-05T04:00:00Z\"",
    );
    block_on(async {
        create(&c, &spec, t0()).await;
        let ran = drain(&c, &spec, at(6 * HOUR + 1)).await;
        assert_eq!(ran, vec![at(2 * HOUR), at(3 * HOUR)]);
        let state = c.status(&spec, at(6 * HOUR + 2)).await.expect("status");
        // 01:00 before the window; 04:00, 05:00, 06:00 after it.
        assert_eq!(
            state.counters.skipped.get(&SkipReason::OutsideWindow),
            Some(&4)
        );
        assert_eq!(
            state.fates,
            vec![
                span(
                    "skipped",
                    "outside_window",
                    "2026-01-05T01:00:00Z",
                    "2026-01-05T01:00:00Z",
                    1
                ),
                span(
                    "skipped",
                    "outside_window",
                    "2026-01-05T04:00:00Z",
                    "2026-01-05T06:00:00Z",
                    3
                ),
            ]
        );
        let after = c.claim(&spec, at(9 * HOUR), Trigger::Tick, "w").await;
        assert_eq!(
            after,
            Ok(Claim::Idle(Idle::NothingDue {
                next_slot: None,
                next_retry: None
            }))
        );
    });
}

#[test]
fn a_year_long_outage_is_counted_not_enumerated() {
    let c = coordinator();
    let spec = job(
        "outage",
        "minutely",
        "schedule = \"* * * * *\"\ncatch_up = \"all\"\nmax_catch_up = 3\nstarting_deadline = \"10m\"",
    );
    block_on(async {
        create(&c, &spec, t0()).await;
        let year_later = ts("2027-01-05T00:00:30Z");
        let ran = drain(&c, &spec, year_later).await;
        assert_eq!(
            ran,
            vec![
                ts("2027-01-04T23:58:00Z"),
                ts("2027-01-04T23:59:00Z"),
                ts("2027-01-05T00:00:00Z")
            ]
        );
        let state = c.status(&spec, year_later).await.expect("status");
        let minutes_in_year: u64 = 365 * 24 * 60;
        assert_eq!(
            state.counters.missed_total() + state.counters.runs,
            minutes_in_year
        );
        // Ten minutes fit the starting deadline; three of them ran.
        assert_eq!(state.counters.missed.get(&MissReason::CatchUp), Some(&7));
        // Two spans, not half a million slots: the stale ones, then the
        // fresh ones beyond max_catch_up.
        assert_eq!(
            state.fates,
            vec![
                span(
                    "missed",
                    "downtime",
                    "2026-01-05T00:01:00Z",
                    "2027-01-04T23:50:00Z",
                    minutes_in_year - 10
                ),
                span(
                    "missed",
                    "catch_up",
                    "2027-01-04T23:51:00Z",
                    "2027-01-04T23:57:00Z",
                    7
                ),
            ]
        );
    });
}

#[test]
fn manual_trigger_runs_the_current_slot_once_even_for_a_new_job() {
    let c = coordinator();
    let spec = job("manual", "daily", "schedule = \"0 9 * * *\"");
    block_on(async {
        // Nothing has ever planned this job; the 09:00 slot is an hour old.
        let now = at(10 * HOUR);
        let Ok(Claim::Claimed(lease)) = c.claim(&spec, now, Trigger::Manual, "op").await else {
            panic!("the current slot should run");
        };
        assert_eq!(lease.slot, at(9 * HOUR));
        assert_eq!(lease.origin, cronslot_core::coord::Origin::Manual);
        c.complete(&spec, lease.fence, None, now)
            .await
            .expect("complete");
        let again = c.claim(&spec, now, Trigger::Manual, "op").await;
        assert_eq!(
            again,
            Ok(Claim::Idle(Idle::AlreadyResolved { slot: at(9 * HOUR) }))
        );
    });
}

#[test]
fn a_dedicated_trigger_for_a_new_jobs_first_slot_runs_it() {
    let c = coordinator();
    let spec = job(
        "first",
        "dedicated",
        "schedule = \"0 9 * * *\"\ntrigger = \"dedicated\"",
    );
    block_on(async {
        // No record yet; the platform delivers the 09:00 slot a little late.
        let now = at(9 * HOUR + 3);
        let claim = c
            .claim(&spec, now, Trigger::Slot(at(9 * HOUR)), "lambda")
            .await;
        let Ok(Claim::Claimed(lease)) = claim else {
            panic!("the first slot must run, got {claim:?}");
        };
        assert_eq!(lease.slot, at(9 * HOUR));
    });
}

#[test]
fn an_oversized_record_sheds_then_pauses_instead_of_failing_to_write() {
    use cronslot_core::coord::decide::fit_record;
    use cronslot_core::coord::{JobState, PendingRun, encode_state};
    let mut state = JobState::new("big", "h", t0(), false);
    for i in 0..1000 {
        state.pending.push(PendingRun {
            slot: at(i * 60),
            attempt: 2,
            not_before: at(i * 60),
            retry_until: None,
            last_error: Some("e".repeat(1000)),
            checkpoint: Some("c".repeat(4000)),
            origin: cronslot_core::coord::Origin::Backfill,
            version: None,
        });
    }
    assert!(fit_record(&mut state));
    assert!(encode_state(&state).len() <= cronslot_core::coord::MAX_RECORD_BYTES);
    assert!(!state.paused, "shedding checkpoints and errors was enough");
    assert_eq!(state.pending.len(), 1000, "no pending run is lost");
    // Far too many leases to shed: the job pauses and says why.
    let mut state = JobState::new("big", "h", t0(), false);
    for i in 0..3000 {
        state.leases.push(cronslot_core::coord::Lease {
            owner: "o".repeat(100),
            slot: at(i),
            fence: i as u64,
            attempt: 1,
            claimed_at: t0(),
            expires_at: t0(),
            checkpoint: Some("c".repeat(100)),
            origin: cronslot_core::coord::Origin::Schedule,
            retry_until: None,
            version: None,
        });
    }
    fit_record(&mut state);
    assert!(state.paused);
    assert!(
        state
            .paused_reason
            .as_deref()
            .unwrap_or("")
            .contains("outgrew")
    );
}
