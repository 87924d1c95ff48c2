//! What a run reports back: success ([`complete`]), failure ([`fail`]) with
//! its retry or dead letter, and the calls a live lease makes while it runs
//! ([`heartbeat`], [`checkpoint`]). The history and the dead letters a run
//! leaves are kept here too, since expired and superseded leases leave
//! them the same way.

use std::time::Duration;

use jiff::Timestamp;

use super::{FailOutcome, MAX_PENDING, Refusal, add, lease_expired};
use crate::coord::rng::RandomSource;
use crate::coord::state::{
    DeadLetter, JobState, Lease, MAX_CHECKPOINT_BYTES, MAX_DEAD_LETTERS, MAX_ERROR_BYTES,
    MAX_RESULT_BYTES, PendingRun, RunOutcome, RunRecord, truncate,
};
use crate::manifest::{Delivery, JobSpec};

pub(super) fn record_history(spec: &JobSpec, state: &mut JobState, record: RunRecord) {
    state.history.push(record);
    let keep_ok = spec.history.succeeded as usize;
    let keep_bad = spec.history.failed as usize;
    let mut ok = 0;
    let mut bad = 0;
    // Walk newest first, keep the allowed number of each kind.
    let mut keep = vec![false; state.history.len()];
    for (i, r) in state.history.iter().enumerate().rev() {
        if r.outcome.succeeded() {
            ok += 1;
            keep[i] = ok <= keep_ok;
        } else {
            bad += 1;
            keep[i] = bad <= keep_bad;
        }
    }
    let mut i = 0;
    state.history.retain(|_| {
        let k = keep[i];
        i += 1;
        k
    });
}

pub(super) fn bury(state: &mut JobState, letter: DeadLetter) {
    state.counters.dead += 1;
    state.dead.push(letter);
    if state.dead.len() > MAX_DEAD_LETTERS {
        state.dead.remove(0);
        state.counters.dead_dropped += 1;
    }
}

/// Schedules another attempt of a slot, or buries it when no attempt is left
/// (or none could start before the next slot).
/// `backoff: false` makes the retry eligible at once: a lease that expired
/// has already waited its whole duration, which is backoff enough.
#[allow(clippy::too_many_arguments)]
pub(super) fn retry_or_bury(
    spec: &JobSpec,
    state: &mut JobState,
    lease: &Lease,
    error: &str,
    permanent: bool,
    backoff: bool,
    now: Timestamp,
    rng: &mut dyn RandomSource,
) -> FailOutcome {
    let error = truncate(error, MAX_ERROR_BYTES);
    let bury_now = |state: &mut JobState, error: String| {
        bury(
            state,
            DeadLetter {
                slot: lease.slot,
                attempts: lease.attempt,
                last_error: error,
                fence: lease.fence,
                died_at: now,
                checkpoint: lease.checkpoint.clone(),
            },
        );
        FailOutcome::Dead
    };
    #[cfg(feature = "schedules")]
    if state
        .schedule
        .as_ref()
        .is_some_and(|schedule| !schedule.is_live())
    {
        // A delete starts no slot after it, retries included.
        return bury_now(
            state,
            format!("{error} (its schedule was deleted: not retried)"),
        );
    }
    if spec.delivery == Delivery::AtMostOnce {
        return bury_now(
            state,
            format!("{error} (at-most-once delivery: not retried)"),
        );
    }
    if permanent {
        return bury_now(state, error);
    }
    if lease.attempt >= spec.retry.max_attempts {
        return bury_now(
            state,
            format!(
                "{error} (attempt {} of {})",
                lease.attempt, spec.retry.max_attempts
            ),
        );
    }
    let cap = spec.retry.delay_cap(lease.attempt);
    let cap_ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX);
    let delay = if backoff {
        Duration::from_millis(rng.below_or_equal(cap_ms))
    } else {
        Duration::ZERO
    };
    let not_before = add(now, delay);
    if let Some(until) = lease.retry_until {
        if not_before >= until {
            return bury_now(
                state,
                format!("{error} (no retry could start before the next slot at {until})"),
            );
        }
    }
    if state.pending.len() >= MAX_PENDING {
        return bury_now(state, format!("{error} (too many pending runs)"));
    }
    state.pending.push(PendingRun {
        slot: lease.slot,
        attempt: lease.attempt + 1,
        not_before,
        retry_until: lease.retry_until,
        last_error: Some(error),
        checkpoint: lease.checkpoint.clone(),
        origin: lease.origin,
        version: lease.version,
    });
    FailOutcome::RetryAt(not_before)
}

fn take_lease(state: &mut JobState, fence: u64) -> Result<Lease, Refusal> {
    match state.leases.iter().position(|l| l.fence == fence) {
        Some(i) => Ok(state.leases.remove(i)),
        None => Err(Refusal::Superseded {
            fence,
            latest: state.fence,
        }),
    }
}

/// Records a successful run. A superseded fence is refused; an expired lease
/// that nobody has taken over is still accepted (the work is done, and
/// running it again would be the duplicate cronslot exists to prevent).
pub fn complete(
    spec: &JobSpec,
    state: &mut JobState,
    fence: u64,
    result: Option<&str>,
    now: Timestamp,
) -> Result<(), Refusal> {
    if let Some(r) = result {
        if r.len() > MAX_RESULT_BYTES {
            return Err(Refusal::TooLarge {
                what: "the result",
                bytes: r.len(),
                max: MAX_RESULT_BYTES,
            });
        }
    }
    if !state.leases.iter().any(|l| l.fence == fence) && succeeded_with(state, fence) {
        // This fence's completion is recorded already: its answer was lost
        // and the run asks again. Completion is idempotent per fence; the
        // record is left as it is.
        return Ok(());
    }
    let lease = take_lease(state, fence)?;
    state.counters.succeeded += 1;
    let record = RunRecord {
        slot: lease.slot,
        attempt: lease.attempt,
        fence,
        owner: lease.owner,
        started_at: lease.claimed_at,
        finished_at: now,
        outcome: RunOutcome::Succeeded {
            result: result.map(str::to_string),
        },
    };
    state.last_success = Some(record.clone());
    record_history(spec, state, record);
    Ok(())
}

/// True when a run with this fence is recorded as succeeded.
fn succeeded_with(state: &JobState, fence: u64) -> bool {
    state
        .last_success
        .iter()
        .chain(state.history.iter())
        .any(|r| r.fence == fence && r.outcome.succeeded())
}

/// Records a failed run: a retry of the same slot, or a dead letter.
pub fn fail(
    spec: &JobSpec,
    state: &mut JobState,
    fence: u64,
    error: &str,
    permanent: bool,
    now: Timestamp,
    rng: &mut dyn RandomSource,
) -> Result<FailOutcome, Refusal> {
    let lease = take_lease(state, fence)?;
    state.counters.failed += 1;
    record_history(
        spec,
        state,
        RunRecord {
            slot: lease.slot,
            attempt: lease.attempt,
            fence,
            owner: lease.owner.clone(),
            started_at: lease.claimed_at,
            finished_at: now,
            outcome: RunOutcome::Failed {
                error: truncate(error, MAX_ERROR_BYTES),
                permanent,
            },
        },
    );
    Ok(retry_or_bury(
        spec, state, &lease, error, permanent, true, now, rng,
    ))
}

fn live_lease<'s>(
    spec: &JobSpec,
    state: &'s mut JobState,
    fence: u64,
    now: Timestamp,
) -> Result<&'s mut Lease, Refusal> {
    let latest = state.fence;
    let lease = state
        .leases
        .iter_mut()
        .find(|l| l.fence == fence)
        .ok_or(Refusal::Superseded { fence, latest })?;
    if lease_expired(spec, lease, now) {
        return Err(Refusal::Expired {
            fence,
            expired_at: lease.expires_at,
        });
    }
    Ok(lease)
}

/// Extends a live lease by the job's lease duration from `now`.
pub fn heartbeat(
    spec: &JobSpec,
    state: &mut JobState,
    fence: u64,
    now: Timestamp,
) -> Result<Timestamp, Refusal> {
    let lease = live_lease(spec, state, fence, now)?;
    lease.expires_at = add(now, spec.lease);
    Ok(lease.expires_at)
}

/// Saves a small checkpoint with a live lease; a retry of the slot gets it.
pub fn checkpoint(
    spec: &JobSpec,
    state: &mut JobState,
    fence: u64,
    value: &str,
    now: Timestamp,
) -> Result<(), Refusal> {
    if value.len() > MAX_CHECKPOINT_BYTES {
        return Err(Refusal::TooLarge {
            what: "the checkpoint",
            bytes: value.len(),
            max: MAX_CHECKPOINT_BYTES,
        });
    }
    let lease = live_lease(spec, state, fence, now)?;
    lease.checkpoint = Some(value.to_string());
    Ok(())
}
