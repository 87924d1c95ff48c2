//! Claiming a slot ([`claim`]): which trigger asks for what, duplicate
//! deliveries answered without a write, the overlap policy, and the lease
//! handed out.

use jiff::Timestamp;

use super::advance::{advance, move_cursor};
use super::outcome::record_history;
use super::{Claim, Idle, Trigger, TriggerError, add, add_nanos, lease_expired};
use crate::coord::rng::RandomSource;
use crate::coord::state::{JobState, Lease, MissReason, Origin, PendingRun, RunOutcome, RunRecord};
use crate::manifest::{JobSpec, Overlap};

/// Why a schedule's spec may not claim: it was read at another version than
/// the record's, or the schedule is deleted. A claim with it would plan the
/// slots of a schedule no longer in force.
#[cfg(feature = "schedules")]
fn not_in_force(spec: &JobSpec, state: &JobState) -> Option<Idle> {
    spec.key.as_ref()?;
    let Some(data) = &state.schedule else {
        return Some(Idle::ScheduleChanged { current: None });
    };
    let stale = spec.schedule_version.is_some_and(|v| v != data.version);
    (stale || !data.is_live()).then_some(Idle::ScheduleChanged {
        current: Some(data.version),
    })
}

/// A build without schedules keeps none in its records, and the
/// coordinator creates no record for a spec with a key
/// (`CoordError::NoSchedule`): nothing to check.
#[cfg(not(feature = "schedules"))]
fn not_in_force(_spec: &JobSpec, _state: &JobState) -> Option<Idle> {
    None
}

/// Claims the next slot to run, if the policies allow one.
pub fn claim(
    spec: &JobSpec,
    state: &mut JobState,
    now: Timestamp,
    trigger: Trigger,
    owner: &str,
    rng: &mut dyn RandomSource,
) -> Result<Claim, TriggerError> {
    if let Some(idle) = not_in_force(spec, state) {
        return Ok(Claim::Idle(idle));
    }
    let mut effective_now = now;
    let mut wanted: Option<Timestamp> = None;
    match trigger {
        Trigger::Tick | Trigger::Planned(_) => {}
        Trigger::Slot(slot) => {
            if !spec.schedule.is_slot(slot) {
                return Err(TriggerError::NotASlot { slot });
            }
            // Not before its start (its instant, or its jittered start).
            if spec.start_of(slot) > add(now, spec.skew_margin) {
                return Ok(Claim::Idle(Idle::NotYetDue { slot }));
            }
            // Duplicates are answered before anything else, and without a
            // write: a redelivery must not even touch the record.
            if let Some(idle) = duplicate(spec, state, slot, now) {
                return Ok(Claim::Idle(idle));
            }
            effective_now = now.max(spec.start_of(slot));
            wanted = Some(slot);
        }
        Trigger::Manual => {
            let Some(slot) = spec.schedule.prev_before(add_nanos(now)) else {
                return Ok(Claim::Idle(nothing_due(spec, state)));
            };
            match duplicate(spec, state, slot, now) {
                Some(Idle::AlreadyResolved { .. })
                    if state.fence == 0 && state.dead.is_empty() && slot <= state.created_at =>
                {
                    // A job that never ran: its current slot predates the
                    // record (created just now), yet it certainly did not
                    // run. The operator asked for it: queue it like a
                    // one-slot backfill. A slot after the record's creation
                    // that is resolved already has its fate (missed,
                    // skipped): running it would give it a second one.
                    state.pending.push(PendingRun {
                        slot,
                        attempt: 1,
                        not_before: now,
                        retry_until: None,
                        last_error: None,
                        checkpoint: None,
                        origin: Origin::Manual,
                        version: None,
                    });
                }
                Some(Idle::RetryLater { .. }) | None => {}
                Some(idle) => return Ok(Claim::Idle(idle)),
            }
            wanted = Some(slot);
        }
    }

    advance(spec, state, effective_now, rng, trigger == Trigger::Manual);
    // A paused schedule still runs the slots that belong to a version
    // before the pause (docs/semantics.md, "Changes never drop or double a
    // slot"): they came due while that version was in force.
    let paused = state.paused;
    if paused && !state.pending.iter().any(|p| p.version.is_some()) {
        return Ok(Claim::Idle(Idle::Paused));
    }

    let manual = trigger == Trigger::Manual;
    let retry = state
        .pending
        .iter()
        .enumerate()
        .filter(|(_, p)| !paused || p.version.is_some())
        .filter(|(_, p)| p.not_before <= effective_now || (manual && Some(p.slot) == wanted))
        .min_by_key(|(_, p)| p.slot)
        .map(|(i, p)| (i, p.slot));
    let fresh = spec
        .schedule
        .next_after(state.cursor)
        .filter(|s| !paused && *s <= spec.due_until(effective_now) && spec.in_window(*s));
    let pick_retry = match (retry, fresh) {
        (Some((_, r)), Some(f)) => r <= f,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if retry.is_none() && fresh.is_none() {
        return Ok(Claim::Idle(if paused {
            Idle::Paused
        } else {
            nothing_due(spec, state)
        }));
    }

    let live = state.leases.len();
    match spec.overlap {
        Overlap::Forbid if live >= 1 => return Ok(Claim::Idle(Idle::Busy { live })),
        Overlap::Allow { max_concurrency } if live >= max_concurrency as usize => {
            return Ok(Claim::Idle(Idle::Busy { live }));
        }
        Overlap::Replace => supersede_all(spec, state, now),
        _ => {}
    }

    state.fence += 1;
    state.counters.runs += 1;
    let fence = state.fence;
    let lease_for = |slot, attempt, checkpoint, origin, retry_until, version| Lease {
        owner: owner.to_string(),
        slot,
        fence,
        attempt,
        claimed_at: now,
        expires_at: add(now, spec.lease),
        checkpoint,
        origin,
        retry_until,
        version,
    };
    let lease = match (pick_retry, retry, fresh) {
        (true, Some((index, _)), _) => {
            let p = state.pending.remove(index);
            lease_for(
                p.slot,
                p.attempt,
                p.checkpoint,
                p.origin,
                p.retry_until,
                p.version,
            )
        }
        (_, _, Some(slot)) => {
            move_cursor(spec, state, slot);
            let retry_until = if spec.retry.past_next_slot {
                None
            } else {
                spec.schedule.next_after(slot)
            };
            let origin = if manual && Some(slot) == wanted {
                Origin::Manual
            } else {
                Origin::Schedule
            };
            lease_for(slot, 1, None, origin, retry_until, None)
        }
        _ => return Ok(Claim::Idle(nothing_due(spec, state))),
    };
    state.leases.push(lease.clone());
    Ok(Claim::Claimed(lease))
}

/// The answer to a redelivered slot, if it is one.
/// A delivery of `slot` that must not run it: the slot is running under a
/// live lease, waits for its retry, or is resolved. A lease past its expiry
/// does not count: its run crashed or stalled, and the claim that follows
/// (after `advance` expires it) retries the slot with a higher fence.
fn duplicate(spec: &JobSpec, state: &JobState, slot: Timestamp, now: Timestamp) -> Option<Idle> {
    if let Some(l) = state
        .leases
        .iter()
        .find(|l| l.slot == slot && !lease_expired(spec, l, now))
    {
        return Some(Idle::InProgress {
            slot,
            fence: l.fence,
        });
    }
    if let Some(p) = state.pending.iter().find(|p| p.slot == slot) {
        return (p.not_before > now).then_some(Idle::RetryLater {
            slot,
            not_before: p.not_before,
        });
    }
    state
        .slot_resolved(slot)
        .then_some(Idle::AlreadyResolved { slot })
}

fn nothing_due(spec: &JobSpec, state: &JobState) -> Idle {
    Idle::NothingDue {
        next_slot: spec
            .schedule
            .next_after(state.cursor)
            .filter(|s| spec.end_at.is_none_or(|e| *s < e)),
        next_retry: state.pending.iter().map(|p| p.not_before).min(),
    }
}

/// `overlap = "replace"`: a new claim supersedes every live lease; their
/// slots are missed (reason: overlap) and their completions will be refused.
fn supersede_all(spec: &JobSpec, state: &mut JobState, now: Timestamp) {
    for lease in std::mem::take(&mut state.leases) {
        // Counted as missed; the timeline shows it from the history.
        state.counters.add_missed(MissReason::Overlap, 1);
        record_history(
            spec,
            state,
            RunRecord {
                slot: lease.slot,
                attempt: lease.attempt,
                fence: lease.fence,
                owner: lease.owner,
                started_at: lease.claimed_at,
                finished_at: now,
                outcome: RunOutcome::Superseded,
            },
        );
    }
}
