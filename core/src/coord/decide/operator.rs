//! An operator's requests of a record: [`pause`], [`resume`], [`redrive`]
//! of dead letters and [`backfill`] of past slots. (A manual trigger is a
//! claim: `claim.rs`.)

use std::fmt;

use jiff::Timestamp;

use super::advance::advance;
use super::{MAX_BACKFILL, MAX_PENDING, before};
use crate::coord::rng::RandomSource;
use crate::coord::state::{DeadLetter, JobState, Origin, PendingRun};
use crate::manifest::JobSpec;

/// Sends dead letters back to run (one slot, or all when `slot` is `None`).
/// Each gets a fresh attempt budget; returns the slots redriven.
pub fn redrive(state: &mut JobState, slot: Option<Timestamp>, now: Timestamp) -> Vec<Timestamp> {
    let (chosen, kept): (Vec<DeadLetter>, Vec<DeadLetter>) = std::mem::take(&mut state.dead)
        .into_iter()
        .partition(|d| slot.is_none_or(|s| s == d.slot));
    state.dead = kept;
    let mut out = Vec::new();
    for d in chosen {
        if state.pending.len() >= MAX_PENDING || state.slot_in_flight(d.slot) {
            state.dead.push(d);
            continue;
        }
        out.push(d.slot);
        state.pending.push(PendingRun {
            slot: d.slot,
            attempt: 1,
            not_before: now,
            retry_until: None,
            last_error: Some(d.last_error),
            checkpoint: d.checkpoint,
            origin: Origin::Redrive,
            version: None,
        });
    }
    state.dead.sort_by_key(|d| d.slot);
    state.counters.redriven += out.len() as u64;
    out
}

/// Pauses a job: slots due from now on are skipped (reason: paused).
pub fn pause(spec: &JobSpec, state: &mut JobState, now: Timestamp, rng: &mut dyn RandomSource) {
    advance(spec, state, now, rng, false);
    state.paused = true;
}

/// Resumes a job: slots that came due while it was paused are skipped, the
/// next ones run.
pub fn resume(spec: &JobSpec, state: &mut JobState, now: Timestamp, rng: &mut dyn RandomSource) {
    advance(spec, state, now, rng, false);
    state.paused = false;
    state.paused_reason = None;
}

/// A backfill request that cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BackfillError {
    /// `from` is after `to`.
    EmptyRange,
    /// `to` is after now: only past slots can be backfilled.
    InFuture {
        /// The requested end of the range.
        #[serde(with = "crate::instant::text")]
        to: Timestamp,
    },
    /// The range holds more slots than may be queued at once.
    TooMany {
        /// Slots found before giving up (more may follow).
        count: usize,
        /// The most that may be queued now ([`MAX_BACKFILL`], less when
        /// runs are already pending).
        max: usize,
    },
}

impl fmt::Display for BackfillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackfillError::EmptyRange => write!(f, "--from must be before --to"),
            BackfillError::InFuture { to } => {
                write!(
                    f,
                    "--to {to} is in the future: only past slots can be backfilled"
                )
            }
            BackfillError::TooMany { count, max } => write!(
                f,
                "the range holds more than {max} slots (found {count}+): backfill it in parts"
            ),
        }
    }
}

impl std::error::Error for BackfillError {}

/// Queues the past slots in `[from, to]` to run (oldest first). Slots that
/// are running, waiting or dead are left alone (redrive dead ones), and so
/// are slots after the cursor (they are still due on the schedule).
/// With `dry_run`, only lists them.
pub fn backfill(
    spec: &JobSpec,
    state: &mut JobState,
    from: Timestamp,
    to: Timestamp,
    now: Timestamp,
    dry_run: bool,
) -> Result<Vec<Timestamp>, BackfillError> {
    if from > to {
        return Err(BackfillError::EmptyRange);
    }
    if to > now {
        return Err(BackfillError::InFuture { to });
    }
    let room = MAX_BACKFILL.min(MAX_PENDING.saturating_sub(state.pending.len()));
    let mut slots = Vec::new();
    for o in spec.schedule.iter_after(before(from)) {
        if o.instant > to {
            break;
        }
        let s = o.instant;
        // Slots come in order: none after the cursor is a backfill's (they
        // are still to be planned), so stop there rather than walk to `to`,
        // which may be centuries of slots away.
        if s > state.cursor {
            break;
        }
        if state.slot_in_flight(s) || state.dead.iter().any(|d| d.slot == s) {
            continue;
        }
        if slots.len() >= room {
            return Err(BackfillError::TooMany {
                count: slots.len() + 1,
                max: room,
            });
        }
        slots.push(s);
    }
    if !dry_run {
        for &slot in &slots {
            state.pending.push(PendingRun {
                slot,
                attempt: 1,
                not_before: now,
                retry_until: None,
                last_error: None,
                checkpoint: None,
                origin: Origin::Backfill,
                version: None,
            });
        }
        state.counters.backfilled += slots.len() as u64;
    }
    Ok(slots)
}
