//! The coordinator: every operation on a job's slots, whatever the store.
//!
//! [`Coordinator`] is the contract the conformance suite drives. Stores that
//! offer compare-and-set (memory, SQLite, DynamoDB) get it from
//! [`CasCoordinator`]; the Durable Object implements it in place.
#![allow(async_fn_in_trait)]

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use jiff::Timestamp;

use super::decide::{self, BackfillError, Claim, FailOutcome, Refusal, Trigger, TriggerError};
use super::rng::{RandomSource, SplitMix64};
use super::state::JobState;
use super::store::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, PutResult, StateStore, StoreError,
    StoreErrorKind, Versioned,
};
use crate::manifest::JobSpec;

/// Why a coordinator operation did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CoordError {
    /// The store failed; [`CoordError::is_transient`] tells whether that is
    /// worth retrying.
    Store(StoreError),
    /// The store refused the operation: a superseded or expired fence, or an
    /// oversized value.
    Refused(Refusal),
    /// A trigger that cannot be honoured (an instant that is not a slot).
    Trigger(TriggerError),
    /// A backfill request that cannot be honoured.
    Backfill(BackfillError),
    /// Other writers won the compare-and-set this many times in a row.
    Contention {
        /// The conditional writes tried ([`MAX_CAS_ATTEMPTS`]).
        attempts: u32,
    },
    /// The spec is of a schedule of a dynamic job, and the schedule has no
    /// record: it was never created (a delete leaves a tombstone). Nothing
    /// was written: only a schedule's write creates its record. (Feature
    /// `schedules`: no other build holds schedules.)
    #[cfg(feature = "schedules")]
    NoSchedule {
        /// The record's name, `job/key`.
        name: String,
    },
}

impl CoordError {
    /// Worth trying again later (the platform's retry can re-deliver).
    pub fn is_transient(&self) -> bool {
        match self {
            CoordError::Store(e) => {
                matches!(
                    e.kind,
                    StoreErrorKind::Unavailable | StoreErrorKind::Ambiguous
                )
            }
            CoordError::Contention { .. } => true,
            _ => false,
        }
    }
}

impl fmt::Display for CoordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoordError::Store(e) => write!(f, "{e}"),
            CoordError::Refused(r) => write!(f, "refused: {r}"),
            CoordError::Trigger(t) => write!(f, "{t}"),
            CoordError::Backfill(b) => write!(f, "backfill: {b}"),
            CoordError::Contention { attempts } => write!(
                f,
                "gave up after {attempts} conflicting writes: too many workers on one job"
            ),
            #[cfg(feature = "schedules")]
            CoordError::NoSchedule { name } => write!(f, "no schedule {name:?}"),
        }
    }
}

impl std::error::Error for CoordError {}

impl From<StoreError> for CoordError {
    fn from(e: StoreError) -> Self {
        CoordError::Store(e)
    }
}

/// What an operator does to a job, and what it reads: the record brought
/// up to now, pause and resume, redrive, backfill. Every [`Coordinator`]
/// is one; a client that reaches only a deployment's admin routes (the
/// CLI's for a Worker) is one without being a coordinator, so nothing
/// stubs a run protocol it cannot serve.
pub trait Operator {
    /// The job's record, brought up to `now` (expired leases and late slots
    /// given their fates) without writing it.
    async fn status(&self, spec: &JobSpec, now: Timestamp) -> Result<JobState, CoordError>;

    /// Pauses the job: slots that come due from `now` on are skipped
    /// (reason: paused) until it is resumed.
    async fn pause(&self, spec: &JobSpec, now: Timestamp) -> Result<(), CoordError>;

    /// Resumes the job: slots that came due while it was paused stay
    /// skipped, the next ones run.
    async fn resume(&self, spec: &JobSpec, now: Timestamp) -> Result<(), CoordError>;

    /// Sends dead letters back to run: one slot, or all.
    async fn redrive(
        &self,
        spec: &JobSpec,
        slot: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<Vec<Timestamp>, CoordError>;

    /// Queues the job's past slots in `[from, to]` to run, oldest first,
    /// and returns them; with `dry_run`, only returns them. Slots
    /// running, waiting or dead are left alone (see
    /// [`decide::backfill`](super::decide::backfill)).
    async fn backfill(
        &self,
        spec: &JobSpec,
        from: Timestamp,
        to: Timestamp,
        now: Timestamp,
        dry_run: bool,
    ) -> Result<Vec<Timestamp>, CoordError>;
}

/// Every operation of the run protocol on one job's slots: claim, record,
/// heartbeat, checkpoint, and the effect ledger; the operator's actions
/// ([`Operator`]) come with it. `now` always comes from the caller; a
/// store that judges leases by its own clock ([`StateStore::get_judged`])
/// replaces it with that clock's reading for the operations that read the
/// record.
pub trait Coordinator: Operator {
    /// Plans and claims the next slot to run, if any.
    async fn claim(
        &self,
        spec: &JobSpec,
        now: Timestamp,
        trigger: Trigger,
        owner: &str,
    ) -> Result<Claim, CoordError>;

    /// Records the run of `fence` as succeeded, with an optional short
    /// result. Refused when the fence no longer holds a lease (superseded,
    /// or expired and taken over) or the result is too large; completing
    /// twice with the same fence is not an error.
    async fn complete(
        &self,
        spec: &JobSpec,
        fence: u64,
        result: Option<&str>,
        now: Timestamp,
    ) -> Result<(), CoordError>;

    /// Records the run of `fence` as failed: the slot is retried after a
    /// jittered backoff ([`FailOutcome::RetryAt`]), or becomes a dead letter
    /// ([`FailOutcome::Dead`]) when the error is permanent, the attempts are
    /// used up, delivery is at-most-once, or no retry could start before the
    /// next slot.
    async fn fail(
        &self,
        spec: &JobSpec,
        fence: u64,
        error: &str,
        permanent: bool,
        now: Timestamp,
    ) -> Result<FailOutcome, CoordError>;

    /// Extends a live lease; returns its new expiry.
    async fn heartbeat(
        &self,
        spec: &JobSpec,
        fence: u64,
        now: Timestamp,
    ) -> Result<Timestamp, CoordError>;

    /// Saves a small `value` (at most 4096 bytes) with the live lease of
    /// `fence`; a retry of the slot starts from it.
    async fn checkpoint(
        &self,
        spec: &JobSpec,
        fence: u64,
        value: &str,
        now: Timestamp,
    ) -> Result<(), CoordError>;

    /// Starts an effect of a run. Refused (`Superseded`) when `fence` holds
    /// no live lease of the job any more.
    async fn begin_effect(
        &self,
        spec: &JobSpec,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, CoordError>;

    /// Records the effect `key` as done with `result`; only the fence that
    /// began it can ([`EffectFinish::NotHeld`] otherwise).
    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, CoordError>;

    /// The ledger entry of the effect `key`, if there is one.
    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, CoordError>;
}

/// How many times a compare-and-set loop re-plans before giving up.
pub const MAX_CAS_ATTEMPTS: u32 = 64;

/// The most records a coordinator remembers ([`CasCoordinator::known`]):
/// past it, remembering one forgets another, whose next operation then
/// reads it (the cache saves reads; it never decides anything).
pub const MAX_REMEMBERED: usize = 4096;

/// The generic coordinator over any compare-and-set store: read, apply the
/// pure transition, write if the version still matches, re-plan on
/// conflict with the record the store returned.
///
/// It remembers the last record it read or wrote per job. Operations on a
/// run it claimed (complete, fail, heartbeat, checkpoint) start from that
/// record instead of reading: if another writer changed it meanwhile, the
/// conditional write fails and returns the current record, so correctness
/// never depends on the cache, and a normal run costs one read (the claim)
/// and two writes (claim, completion).
pub struct CasCoordinator<S> {
    store: S,
    rng: RefCell<SplitMix64>,
    known: RefCell<HashMap<String, Versioned<JobState>>>,
    /// Records just read for the claim that follows (a schedule's, read for
    /// its spec): that claim starts from the remembered record instead of
    /// reading again. With the instant the store judged the read by and the
    /// caller's instant then. Only schedules are primed (feature
    /// `schedules`).
    #[cfg(feature = "schedules")]
    primed: RefCell<HashMap<String, (Timestamp, Timestamp)>>,
    conflicts: Cell<u64>,
}

impl<S> CasCoordinator<S> {
    /// `seed` feeds retry jitter; simulations pass a fixed one.
    pub fn new(store: S, seed: u64) -> CasCoordinator<S> {
        CasCoordinator {
            store,
            rng: RefCell::new(SplitMix64::new(seed)),
            known: RefCell::new(HashMap::new()),
            #[cfg(feature = "schedules")]
            primed: RefCell::new(HashMap::new()),
            conflicts: Cell::new(0),
        }
    }

    /// The last record this coordinator read or wrote for `job`, with its
    /// version (a store's transactional completion starts from it instead
    /// of reading again). May be stale: a write conditioned on it tells.
    pub fn known(&self, job: &str) -> Option<Versioned<JobState>> {
        self.known.borrow().get(job).cloned()
    }

    /// Conditional writes that lost to another writer so far: each one is a
    /// duplicate claim or a stale update that the store refused.
    pub fn conflicts(&self) -> u64 {
        self.conflicts.get()
    }

    pub(super) fn remember(&self, job: &str, record: Option<&Versioned<JobState>>) {
        let mut known = self.known.borrow_mut();
        match record {
            Some(v) => {
                if known.len() >= MAX_REMEMBERED && !known.contains_key(job) {
                    // Bounded, so that a runner over a million schedules
                    // does not keep each one it ever claimed: one record
                    // goes (not one primed for its claim), and its next
                    // operation reads it instead.
                    #[cfg(feature = "schedules")]
                    let primed = self.primed.borrow();
                    #[cfg(feature = "schedules")]
                    let victim = known.keys().find(|k| !primed.contains_key(*k)).cloned();
                    #[cfg(not(feature = "schedules"))]
                    let victim = known.keys().next().cloned();
                    if let Some(victim) = victim {
                        known.remove(&victim);
                    }
                }
                known.insert(job.to_string(), v.clone());
            }
            None => {
                known.remove(job);
            }
        }
    }

    /// Marks the remembered record of `job`, just read at `judged` (the
    /// store's instant; `caller` the caller's), as the read of the next
    /// claim of the job: that claim costs no read of its own. (Only a
    /// schedule's read for its claim primes, hence the feature.)
    #[cfg(feature = "schedules")]
    pub(super) fn prime(&self, job: &str, judged: Timestamp, caller: Timestamp) {
        self.primed
            .borrow_mut()
            .insert(job.to_string(), (judged, caller));
    }

    /// The primed record of `job` with the instant to judge it by at the
    /// caller's `now` (the store's reading moved on by the caller's time
    /// since), once.
    #[cfg(not(feature = "schedules"))]
    fn take_primed(&self, _job: &str, _now: Timestamp) -> Option<(Versioned<JobState>, Timestamp)> {
        None
    }

    /// See the other `take_primed`.
    #[cfg(feature = "schedules")]
    fn take_primed(&self, job: &str, now: Timestamp) -> Option<(Versioned<JobState>, Timestamp)> {
        let (judged, caller) = self.primed.borrow_mut().remove(job)?;
        let record = self.known.borrow().get(job).cloned()?;
        let since = now.duration_since(caller).max(jiff::SignedDuration::ZERO);
        Some((record, judged.checked_add(since).unwrap_or(judged)))
    }

    /// The store, for what the coordinator does not offer.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Counts one conditional write lost to another writer.
    pub(super) fn count_conflict(&self) {
        self.conflicts.set(self.conflicts.get() + 1);
    }

    pub(super) fn random(&self) -> SplitMix64 {
        // A fresh generator per operation, drawn from the coordinator's: the
        // borrow never spans an await.
        let seed = self.rng.borrow_mut().next_u64();
        SplitMix64::new(seed)
    }
}

impl<S: StateStore> CasCoordinator<S> {
    /// Applies `op` to the job's record atomically, at the instant the
    /// store judges by (`now`, or the store's clock when the record is
    /// read). When `op` leaves the record unchanged nothing is written (a
    /// duplicate costs one read). With `fresh: false` the remembered record
    /// is used when there is one. A job without a record gets one created
    /// at `created(now)`.
    async fn update<T, E>(
        &self,
        spec: &JobSpec,
        now: Timestamp,
        created: impl Fn(Timestamp) -> Timestamp,
        fresh: bool,
        mut op: impl FnMut(&mut JobState, Timestamp, &mut dyn RandomSource) -> Result<T, E>,
    ) -> Result<T, CoordError>
    where
        CoordError: From<E>,
    {
        let name = spec.record_name();
        let job = name.as_ref();
        let primed = self.take_primed(job, now);
        let remembered = if fresh {
            None
        } else {
            self.known.borrow().get(job).cloned()
        };
        let (mut current, now) = match (primed, remembered) {
            (Some((v, judged)), _) => (Some(v), judged),
            (None, Some(v)) => (Some(v), now),
            (None, None) => {
                let (read, judged) = self.store.get_judged(job, now).await?;
                self.remember(job, read.as_ref());
                (read, judged)
            }
        };
        for _ in 0..MAX_CAS_ATTEMPTS {
            let (mut next, expected) = match &current {
                Some(v) => (v.value.clone(), Some(v.version)),
                #[cfg(feature = "schedules")]
                None if spec.key.is_some() => {
                    return Err(CoordError::NoSchedule {
                        name: job.to_string(),
                    });
                }
                None => (
                    JobState::new(job, &spec.spec_hash(), created(now), spec.paused),
                    None,
                ),
            };
            let mut rng = self.random();
            let out = op(&mut next, now, &mut rng)?;
            decide::fit_record(&mut next);
            let mut wake = decide::next_wake(spec, &next, now);
            if let Some(v) = &current {
                wake = decide::carry_wake(spec, v.value.wake_at, &next, wake);
                // A record that does not change is not written, even if the
                // clock alone moved its wake (an unchanged wake errs early).
                // One exception: a job held back by a live lease (a claim
                // found it busy) whose stored wake is later than it now
                // needs, or absent. Its wake was left to the next planned
                // slot, and this claim at that slot wrote nothing: without
                // the write, no tick would look at the job again before the
                // slot after.
                let needs_wake = !next.leases.is_empty()
                    && wake.is_some_and(|w| v.value.wake_at.is_none_or(|stored| w < stored));
                if v.value == next && !needs_wake {
                    return Ok(out);
                }
            }
            next.wake_at = wake;
            match self.put_resolving_ambiguity(job, &next, expected).await? {
                PutResult::Written(version) => {
                    self.remember(
                        job,
                        Some(&Versioned {
                            value: next,
                            version,
                        }),
                    );
                    return Ok(out);
                }
                PutResult::Conflict(now_stored) => {
                    self.count_conflict();
                    current = now_stored.map(|b| *b);
                    self.remember(job, current.as_ref());
                }
            }
        }
        Err(CoordError::Contention {
            attempts: MAX_CAS_ATTEMPTS,
        })
    }

    /// A write whose outcome is unknown is resolved by reading back, never by
    /// assuming: if the stored record is what we wrote, it was applied.
    pub(super) async fn put_resolving_ambiguity(
        &self,
        job: &str,
        next: &JobState,
        expected: Option<super::store::Version>,
    ) -> Result<PutResult, StoreError> {
        match self.store.put(job, next, expected).await {
            Err(e) if e.kind == StoreErrorKind::Ambiguous => {
                let stored = self.store.get(job).await?;
                match stored {
                    Some(v) if &v.value == next => Ok(PutResult::Written(v.version)),
                    other => Ok(PutResult::Conflict(other.map(Box::new))),
                }
            }
            other => other,
        }
    }

    /// The job's record (a new one when it has none) and the instant the
    /// store judges by.
    async fn read(
        &self,
        spec: &JobSpec,
        now: Timestamp,
    ) -> Result<(JobState, Timestamp), CoordError> {
        let name = spec.record_name();
        let job = name.as_ref();
        let (read, now) = self.store.get_judged(job, now).await?;
        let state = match read {
            Some(Versioned { value, .. }) => value,
            None => JobState::new(job, &spec.spec_hash(), now, spec.paused),
        };
        Ok((state, now))
    }
}

/// A record created by an operation other than a claim starts at the
/// operation's instant.
fn same(now: Timestamp) -> Timestamp {
    now
}

impl From<std::convert::Infallible> for CoordError {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}

impl From<Refusal> for CoordError {
    fn from(r: Refusal) -> Self {
        CoordError::Refused(r)
    }
}

impl From<TriggerError> for CoordError {
    fn from(t: TriggerError) -> Self {
        CoordError::Trigger(t)
    }
}

impl From<BackfillError> for CoordError {
    fn from(b: BackfillError) -> Self {
        CoordError::Backfill(b)
    }
}

impl<S: StateStore + EffectLedger> Coordinator for CasCoordinator<S> {
    async fn claim(
        &self,
        spec: &JobSpec,
        now: Timestamp,
        trigger: Trigger,
        owner: &str,
    ) -> Result<Claim, CoordError> {
        let created = |now| decide::creation_instant(now, trigger);
        self.update(spec, now, created, true, |state, now, rng| {
            decide::claim(spec, state, now, trigger, owner, rng)
        })
        .await
    }

    async fn complete(
        &self,
        spec: &JobSpec,
        fence: u64,
        result: Option<&str>,
        now: Timestamp,
    ) -> Result<(), CoordError> {
        self.update(spec, now, same, false, |state, now, _| {
            decide::complete(spec, state, fence, result, now)
        })
        .await
    }

    async fn fail(
        &self,
        spec: &JobSpec,
        fence: u64,
        error: &str,
        permanent: bool,
        now: Timestamp,
    ) -> Result<FailOutcome, CoordError> {
        self.update(spec, now, same, false, |state, now, rng| {
            decide::fail(spec, state, fence, error, permanent, now, rng)
        })
        .await
    }

    async fn heartbeat(
        &self,
        spec: &JobSpec,
        fence: u64,
        now: Timestamp,
    ) -> Result<Timestamp, CoordError> {
        self.update(spec, now, same, false, |state, now, _| {
            decide::heartbeat(spec, state, fence, now)
        })
        .await
    }

    async fn checkpoint(
        &self,
        spec: &JobSpec,
        fence: u64,
        value: &str,
        now: Timestamp,
    ) -> Result<(), CoordError> {
        self.update(spec, now, same, false, |state, now, _| {
            decide::checkpoint(spec, state, fence, value, now)
        })
        .await
    }

    async fn begin_effect(
        &self,
        spec: &JobSpec,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, CoordError> {
        // The store refuses effects of a superseded run: the fence must
        // still hold a live lease of the job.
        let (state, now) = self.read(spec, now).await?;
        let live = state.lease_for_fence(fence).is_some_and(|l| {
            now <= l
                .expires_at
                .checked_add(spec.skew_margin)
                .unwrap_or(Timestamp::MAX)
        });
        if !live {
            return Ok(EffectBegin::Superseded { fence: state.fence });
        }
        Ok(self
            .store
            .begin_effect(key, owner, fence, now, hold)
            .await?)
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, CoordError> {
        Ok(self.store.finish_effect(key, fence, result, now).await?)
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, CoordError> {
        Ok(self.store.read_effect(key).await?)
    }
}

impl<S: StateStore + EffectLedger> Operator for CasCoordinator<S> {
    async fn status(&self, spec: &JobSpec, now: Timestamp) -> Result<JobState, CoordError> {
        let (mut state, now) = self.read(spec, now).await?;
        let mut rng = self.random();
        decide::advance(spec, &mut state, now, &mut rng, false);
        Ok(state)
    }

    async fn pause(&self, spec: &JobSpec, now: Timestamp) -> Result<(), CoordError> {
        self.update(spec, now, same, true, |state, now, rng| {
            decide::pause(spec, state, now, rng);
            Ok::<(), std::convert::Infallible>(())
        })
        .await
    }

    async fn resume(&self, spec: &JobSpec, now: Timestamp) -> Result<(), CoordError> {
        self.update(spec, now, same, true, |state, now, rng| {
            decide::resume(spec, state, now, rng);
            Ok::<(), std::convert::Infallible>(())
        })
        .await
    }

    async fn redrive(
        &self,
        spec: &JobSpec,
        slot: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<Vec<Timestamp>, CoordError> {
        self.update(spec, now, same, true, |state, now, _| {
            Ok::<_, std::convert::Infallible>(decide::redrive(state, slot, now))
        })
        .await
    }

    async fn backfill(
        &self,
        spec: &JobSpec,
        from: Timestamp,
        to: Timestamp,
        now: Timestamp,
        dry_run: bool,
    ) -> Result<Vec<Timestamp>, CoordError> {
        self.update(spec, now, same, true, |state, now, _| {
            decide::backfill(spec, state, from, to, now, dry_run)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coord::MemoryStore;
    use crate::coord::exec::block_on;
    use crate::manifest::parse_manifest;

    /// However many records pass through it, a coordinator remembers at
    /// most [`MAX_REMEMBERED`], the newest among them.
    #[test]
    fn the_remembered_records_are_bounded() {
        let c = CasCoordinator::new(MemoryStore::new(), 1);
        let now: Timestamp = "2026-03-08T12:00:00Z".parse().unwrap();
        for i in 0..MAX_REMEMBERED + 500 {
            let name = format!("job-{i}");
            let record = Versioned {
                value: JobState::new(&name, "h", now, false),
                version: 1,
            };
            c.remember(&name, Some(&record));
        }
        assert_eq!(c.known.borrow().len(), MAX_REMEMBERED);
        let newest = format!("job-{}", MAX_REMEMBERED + 499);
        assert!(c.known(&newest).is_some(), "the newest is remembered");
    }

    /// A memory store whose clock reads `clock`, whatever the caller's.
    struct Clocked {
        inner: MemoryStore,
        clock: Cell<Timestamp>,
    }

    impl StateStore for Clocked {
        async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
            self.inner.get(job).await
        }
        async fn put(
            &self,
            job: &str,
            state: &JobState,
            expected: Option<super::super::store::Version>,
        ) -> Result<PutResult, StoreError> {
            self.inner.put(job, state, expected).await
        }
        async fn delete(
            &self,
            job: &str,
            expected: super::super::store::Version,
        ) -> Result<bool, StoreError> {
            self.inner.delete(job, expected).await
        }
        async fn jobs(&self) -> Result<Vec<String>, StoreError> {
            self.inner.jobs().await
        }
        async fn get_judged(
            &self,
            job: &str,
            _now: Timestamp,
        ) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
            Ok((self.inner.get(job).await?, self.clock.get()))
        }
    }

    impl EffectLedger for Clocked {
        async fn begin_effect(
            &self,
            key: &str,
            owner: &str,
            fence: u64,
            now: Timestamp,
            hold: Duration,
        ) -> Result<EffectBegin, StoreError> {
            self.inner.begin_effect(key, owner, fence, now, hold).await
        }
        async fn finish_effect(
            &self,
            key: &str,
            fence: u64,
            result: &str,
            now: Timestamp,
        ) -> Result<EffectFinish, StoreError> {
            self.inner.finish_effect(key, fence, result, now).await
        }
        async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
            self.inner.read_effect(key).await
        }
    }

    fn at(s: &str) -> Timestamp {
        s.parse().expect("valid instant")
    }

    /// One schedule of a dynamic job keeps its record under `job/key`,
    /// apart from the job's other schedules, and its slots are named
    /// `job/key@instant`. Only a schedule's write creates its record: a
    /// claim of a schedule never created writes nothing.
    #[cfg(feature = "schedules")]
    #[test]
    fn a_schedule_has_a_record_and_slot_ids_of_its_own() {
        use crate::coord::decide::Precondition;
        use crate::coord::{JobContext, Schedules, StateStore};
        use crate::schedules::{ScheduleKey, ScheduleSpec};
        let template = parse_manifest(
            "[[job]]\nname = \"invoice\"\ndynamic = true\ncommand = [\"true\"]\n",
            "t.toml",
        )
        .expect("valid")
        .templates
        .remove(0);
        let c = CasCoordinator::new(MemoryStore::new(), 1);
        let created = at("2030-01-01T00:00:00Z");
        let due = at("2030-01-01T00:10:01Z");
        let every_ten = ScheduleSpec::from_json(r#"{"cron": "*/10 * * * *", "payload": {"n": 1}}"#)
            .expect("valid");
        let (a, b) = (
            ScheduleKey::new("tenant:1").expect("key"),
            ScheduleKey::new("tenant:2").expect("key"),
        );
        for key in [&a, &b] {
            block_on(c.put_schedule(
                &template,
                key,
                every_ten.clone(),
                Precondition::None,
                created,
            ))
            .expect("created");
        }
        let spec = block_on(c.schedule_for_claim(&template, &a, due))
            .expect("reads")
            .expect("live");
        assert_eq!(spec.record_name(), "invoice/tenant:1");
        assert_eq!(spec.schedule_version, Some(1));
        assert_eq!(spec.payload.as_deref(), Some(r#"{"n": 1}"#));
        let lease = match block_on(c.claim(&spec, due, Trigger::Tick, "w")) {
            Ok(Claim::Claimed(lease)) => lease,
            other => panic!("the schedule's slot is due: {other:?}"),
        };
        let clock = || due;
        let ctx = JobContext::new(&c, &spec, lease.clone(), &clock);
        assert_eq!(ctx.job(), "invoice", "the job's name, for the job's code");
        assert_eq!(
            ctx.idempotency_key(),
            "invoice/tenant:1@2030-01-01T00:10:00Z"
        );
        let never = template
            .for_schedule(&ScheduleKey::new("tenant:3").expect("key"), &every_ten)
            .expect("runs");
        assert_eq!(
            block_on(c.claim(&never, due, Trigger::Tick, "w")),
            Err(CoordError::NoSchedule {
                name: "invoice/tenant:3".into()
            })
        );
        let store = c.store();
        assert_eq!(
            block_on(store.jobs()).expect("lists"),
            ["invoice/tenant:1", "invoice/tenant:2"]
        );
        let record = block_on(store.get("invoice/tenant:1"))
            .expect("reads")
            .expect("held");
        assert_eq!(record.value.leases.len(), 1);
        let other = block_on(store.get("invoice/tenant:2"))
            .expect("reads")
            .expect("held");
        assert!(other.value.leases.is_empty(), "tenant:2 ran nothing");
    }

    /// Two servers whose clocks disagree by minutes judge a lease by the
    /// store's clock: the one whose clock runs ahead cannot take over a
    /// lease the store still counts live, and the one whose clock lags
    /// still sees the slot due.
    #[test]
    fn a_store_with_a_clock_of_its_own_judges_leases_by_it() {
        let spec = parse_manifest(
            "[[job]]\nname = \"j\"\nschedule = \"*/10 * * * *\"\nlease = \"1m\"\n",
            "t.toml",
        )
        .expect("valid")
        .jobs
        .remove(0);
        let inner = MemoryStore::new();
        let store = Clocked {
            inner,
            clock: Cell::new(at("2030-01-01T00:00:00Z")),
        };
        let c = CasCoordinator::new(store, 1);
        // Created at the store's 00:00: the slot 00:10 is the first.
        assert!(matches!(
            block_on(c.claim(&spec, at("2029-12-31T23:50:00Z"), Trigger::Tick, "a")),
            Ok(Claim::Idle(_))
        ));
        // The store's clock reaches 00:10:05 while server a's reads 23:57
        // (slow by 13 minutes): a still claims the slot.
        c.store().clock.set(at("2030-01-01T00:10:05Z"));
        let lease = match block_on(c.claim(&spec, at("2029-12-31T23:57:00Z"), Trigger::Tick, "a")) {
            Ok(Claim::Claimed(lease)) => lease,
            other => panic!("the slot is due by the store's clock: {other:?}"),
        };
        assert_eq!(lease.slot, at("2030-01-01T00:10:00Z"));
        assert_eq!(lease.expires_at, at("2030-01-01T00:11:05Z"));
        // Server b's clock runs 5 minutes ahead: by it the lease expired
        // long ago, by the store's it has not; b takes nothing over.
        c.store().clock.set(at("2030-01-01T00:10:30Z"));
        let b = CasCoordinator::new(
            Clocked {
                inner: c.store().inner.clone(),
                clock: Cell::new(at("2030-01-01T00:10:30Z")),
            },
            2,
        );
        assert!(matches!(
            block_on(b.claim(&spec, at("2030-01-01T00:15:30Z"), Trigger::Tick, "b")),
            Ok(Claim::Idle(_))
        ));
        let status = block_on(b.status(&spec, at("2030-01-01T00:15:30Z"))).expect("reads");
        assert!(
            status.lease_for_fence(lease.fence).is_some(),
            "the lease is live by the store's clock: {status:?}"
        );
    }
}
