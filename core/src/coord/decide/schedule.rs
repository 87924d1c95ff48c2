//! Writing a schedule of a dynamic job ([`put_schedule`],
//! [`delete_schedule`]): versions, preconditions, tombstones, and the rule
//! that a change never drops or doubles a slot (docs/semantics.md,
//! "Changes never drop or double a slot").
//!
//! The rule, for a change made at the store's instant `T`:
//! - a slot at or before `T` belongs to the version in force at its
//!   instant, and runs once (as that version's policies allow: catch-up,
//!   starting deadline), even when it is claimed after the change: such a
//!   slot is kept as a waiting run pinned to its version;
//! - a slot after `T` belongs to the new version;
//! - a run in flight finishes under the version it was claimed with;
//! - a delete at `T` starts no slot after `T`: slots due and not claimed
//!   and waiting runs are dropped (skipped, reason `deleted`); a run in
//!   flight may finish, and gets no retry.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::advance::{advance, move_cursor};
use crate::coord::rng::RandomSource;
use crate::coord::state::{
    JobState, Origin, PendingRun, PinnedVersion, ScheduleChange, ScheduleData, SkipReason,
};
use crate::manifest::{JobSpec, JobTemplate};
use crate::schedules::{ScheduleKey, ScheduleSpec, SpecProblem};

/// What a write asks of the version it replaces. (Serde: the Worker sends
/// it to a Durable Object.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precondition {
    /// Nothing (an upsert).
    None,
    /// `If-Match: "<version>"`: only over this version of a live schedule.
    Version(u64),
    /// `If-None-Match: *`: only where no live schedule is (a tombstone
    /// counts as none).
    Absent,
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleWrite {
    /// The schedule did not exist (or was deleted): it is now `version`.
    Created {
        /// The new version.
        version: u64,
    },
    /// The spec changed: it is now `version`.
    Changed {
        /// The new version.
        version: u64,
    },
    /// The spec was the one in force: nothing to write.
    Unchanged {
        /// The version in force.
        version: u64,
    },
    /// The schedule is deleted: its tombstone is `version`.
    Deleted {
        /// The tombstone's version.
        version: u64,
    },
}

/// Why a write was refused; nothing is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleRefusal {
    /// `If-Match` named another version (412). `current`: the version of
    /// the live schedule, `None` when there is none.
    VersionMismatch {
        /// The live schedule's version.
        current: Option<u64>,
    },
    /// `If-None-Match: *` met a live schedule (409).
    Exists {
        /// Its version.
        version: u64,
    },
    /// There is no live schedule to delete (404).
    NotFound,
    /// The spec cannot run here (a zone this machine does not know).
    Spec(SpecProblem),
}

/// Writes `spec` as the schedule `key` of `template`, over `current` (its
/// record as read, `None` when there is none), at the store's instant
/// `now`. Returns what it did and the record to write (`None`: write
/// nothing, as for an unchanged spec).
pub fn put_schedule(
    template: &JobTemplate,
    key: &ScheduleKey,
    current: Option<JobState>,
    spec: ScheduleSpec,
    precondition: Precondition,
    now: Timestamp,
    rng: &mut dyn RandomSource,
) -> Result<(ScheduleWrite, Option<JobState>), ScheduleRefusal> {
    let new = template
        .for_schedule(key, &spec)
        .map_err(ScheduleRefusal::Spec)?;
    let live = current
        .as_ref()
        .and_then(|s| s.schedule.as_ref())
        .filter(|d| d.is_live())
        .map(|d| d.version);
    match precondition {
        Precondition::None => {}
        Precondition::Version(v) if live == Some(v) => {}
        Precondition::Version(_) => {
            return Err(ScheduleRefusal::VersionMismatch { current: live });
        }
        Precondition::Absent => {
            if let Some(version) = live {
                return Err(ScheduleRefusal::Exists { version });
            }
        }
    }
    let Some(mut state) = current else {
        let mut state = JobState::new(&new.record_name(), &new.spec_hash(), now, new.paused);
        state.schedule = Some(ScheduleData::live(1, &spec, now));
        return Ok((ScheduleWrite::Created { version: 1 }, Some(state)));
    };
    let Some(data) = state.schedule.take() else {
        // A record of the name without schedule data is no schedule's:
        // refuse rather than turn it into one.
        return Err(ScheduleRefusal::Spec(SpecProblem {
            field: String::new(),
            message: format!("the record {:?} is not a schedule's", state.job),
        }));
    };
    if data.run.is_some() {
        return Err(keyed_run_refusal(&state));
    }
    let version = data.version + 1;
    let Some(old_spec) = data.spec().map_err(ScheduleRefusal::Spec)? else {
        // A re-create over a tombstone: the version and the fence go on, so
        // neither a version nor a run from before the delete is taken for
        // one of the new schedule. Leases still held are superseded.
        state.leases.clear();
        state.pending.clear();
        state.spec_hash = new.spec_hash();
        state.cursor = state.cursor.max(now);
        state.paused = new.paused;
        state.paused_reason = None;
        state.schedule = Some(ScheduleData::live(version, &spec, now));
        return Ok((ScheduleWrite::Created { version }, Some(state)));
    };
    if old_spec == spec {
        state.schedule = Some(data);
        return Ok((
            ScheduleWrite::Unchanged {
                version: version - 1,
            },
            None,
        ));
    }
    let old = template
        .for_schedule(key, &old_spec)
        .map_err(ScheduleRefusal::Spec)?;
    let pinned = settle_due_slots(&old, &mut state, data.version, now, rng);
    let mut kept = data.pinned;
    if pinned {
        kept.push(PinnedVersion {
            version: data.version,
            payload: old_spec.payload.map(|p| p.get().to_string()),
        });
    }
    let to_hash = new.spec_hash();
    if state.spec_hash != to_hash {
        state.last_schedule_change = Some(ScheduleChange {
            at: now,
            from_hash: std::mem::replace(&mut state.spec_hash, to_hash.clone()),
            to_hash,
        });
    }
    state.paused = new.paused;
    let mut data = ScheduleData::live(version, &spec, now);
    data.pinned = still_referenced(&state, kept);
    state.schedule = Some(data);
    Ok((ScheduleWrite::Changed { version }, Some(state)))
}

/// Deletes the schedule `key` of `template` (its record `current`) at the
/// store's instant `now`, leaving a tombstone.
pub fn delete_schedule(
    template: &JobTemplate,
    key: &ScheduleKey,
    current: Option<JobState>,
    precondition: Precondition,
    now: Timestamp,
    rng: &mut dyn RandomSource,
) -> Result<(ScheduleWrite, JobState), ScheduleRefusal> {
    let Some(mut state) = current else {
        return Err(ScheduleRefusal::NotFound);
    };
    let Some(data) = state.schedule.take() else {
        return Err(ScheduleRefusal::NotFound);
    };
    if data.run.is_some() {
        return Err(keyed_run_refusal(&state));
    }
    let Some(old_spec) = data.spec().map_err(ScheduleRefusal::Spec)? else {
        return Err(ScheduleRefusal::NotFound);
    };
    match precondition {
        Precondition::Version(v) if v != data.version => {
            return Err(ScheduleRefusal::VersionMismatch {
                current: Some(data.version),
            });
        }
        _ => {}
    }
    let old = template
        .for_schedule(key, &old_spec)
        .map_err(ScheduleRefusal::Spec)?;
    // The fates of the slots up to now, under the version deleted.
    advance(&old, &mut state, now, rng, false);
    let due = due_slots(&old, &state, now);
    let dropped = due.len() as u64 + state.pending.len() as u64;
    state.counters.add_skipped(SkipReason::Deleted, dropped);
    state.pending.clear();
    move_cursor(&old, &mut state, now);
    let version = data.version + 1;
    let mut kept = data.pinned;
    if state.leases.iter().any(|l| l.version.is_none()) {
        // The runs in flight belong to the version deleted: keep its
        // payload for them, under its number.
        for lease in state.leases.iter_mut().filter(|l| l.version.is_none()) {
            lease.version = Some(data.version);
        }
        kept.push(PinnedVersion {
            version: data.version,
            payload: old_spec.payload.map(|p| p.get().to_string()),
        });
    }
    let pinned = still_referenced(&state, kept);
    state.schedule = Some(ScheduleData {
        version,
        spec_json: None,
        changed_at: now,
        pinned,
        run: None,
    });
    Ok((ScheduleWrite::Deleted { version }, state))
}

/// A schedule's write over a keyed run's record: the key names a run, whose
/// request is never replaced ([`super::enqueue_run`]).
fn keyed_run_refusal(state: &JobState) -> ScheduleRefusal {
    ScheduleRefusal::Spec(SpecProblem {
        field: String::new(),
        message: format!(
            "{:?} is a keyed run, not a schedule: its request is never replaced, and it is \
             forgotten its key_retention after it ends",
            state.job
        ),
    })
}

/// Brings the record up to `now` under the version being replaced
/// (`old`, numbered `version`), and keeps every slot of it that is due
/// (its nominal instant passed, started or not under jitter) and may still
/// run as a waiting run pinned to it; the cursor moves to `now`,
/// so the new version plans only what comes after. Returns whether any run
/// belongs to `version` now (a lease in flight or a slot kept).
fn settle_due_slots(
    old: &JobSpec,
    state: &mut JobState,
    version: u64,
    now: Timestamp,
    rng: &mut dyn RandomSource,
) -> bool {
    advance(old, state, now, rng, false);
    let due = due_slots(old, state, now);
    move_cursor(old, state, now);
    for slot in due {
        if state.slot_in_flight(slot) {
            continue;
        }
        let retry_until = if old.retry.past_next_slot {
            None
        } else {
            old.schedule.next_after(slot)
        };
        state.pending.push(PendingRun {
            slot,
            attempt: 1,
            // A slot whose jittered start has not come yet still waits for
            // it: the change neither drops it nor starts it early.
            not_before: old.start_of(slot),
            retry_until,
            last_error: None,
            checkpoint: None,
            origin: Origin::Schedule,
            version: Some(version),
        });
    }
    for lease in state.leases.iter_mut().filter(|l| l.version.is_none()) {
        lease.version = Some(version);
    }
    for run in state.pending.iter_mut().filter(|p| p.version.is_none()) {
        // Retries, backfills and redrives of the old version's slots.
        run.version = Some(version);
    }
    state.leases.iter().any(|l| l.version == Some(version))
        || state.pending.iter().any(|p| p.version == Some(version))
}

/// The slots after the cursor up to `now` that `spec` would still run
/// (what `advance` left runnable), oldest first.
fn due_slots(spec: &JobSpec, state: &JobState, now: Timestamp) -> Vec<Timestamp> {
    if state.paused {
        return Vec::new();
    }
    spec.schedule
        .iter_after(state.cursor)
        .map(|o| o.instant)
        .take_while(|s| *s <= now)
        .filter(|s| spec.in_window(*s))
        .collect()
}

/// Drops the pinned payloads no lease or waiting run belongs to any more
/// (the runs of an earlier version have all finished).
pub(super) fn forget_finished_versions(state: &mut JobState) {
    let Some(mut data) = state.schedule.take() else {
        return;
    };
    if !data.pinned.is_empty() {
        data.pinned = still_referenced(state, std::mem::take(&mut data.pinned));
    }
    state.schedule = Some(data);
}

/// The pinned versions a lease or a waiting run still belongs to.
fn still_referenced(state: &JobState, pinned: Vec<PinnedVersion>) -> Vec<PinnedVersion> {
    pinned
        .into_iter()
        .filter(|p| {
            state.leases.iter().any(|l| l.version == Some(p.version))
                || state.pending.iter().any(|r| r.version == Some(p.version))
        })
        .collect()
}

/// Makes `next`, a schedule's or keyed run's record that a write decided,
/// ready to store at `now`: its history fitted to the job's bounds and its
/// wake set from the spec in force (none for a tombstone: no tick needs to
/// look at it). Every writer of such a record calls it, the coordinator's
/// compare-and-set and a store's write inside an application's transaction
/// alike, so that the wake index always says when the record is due.
pub fn seal_keyed(
    template: &JobTemplate,
    key: &ScheduleKey,
    next: &mut JobState,
    now: Timestamp,
) -> Result<(), SpecProblem> {
    super::fit_record(next);
    let in_force = match &next.schedule {
        Some(data) => data.spec()?,
        None => None,
    };
    next.wake_at = match in_force {
        Some(spec) => {
            let in_force = template.for_schedule(key, &spec)?;
            super::next_wake(&in_force, next, now)
        }
        None => None,
    };
    Ok(())
}
