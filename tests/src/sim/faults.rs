//! A fault-injecting wrapper over any store: every operation yields once to
//! the simulation (an await point where a worker can crash or be paused),
//! then may fail without effect (`Unavailable`) or apply and report a lost
//! response (`Ambiguous`), as `MemoryStore`'s `Fault` kinds do, drawn from
//! the simulation's seeded random source so that a seed replays.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use cronslot_core::coord::exec::yield_now;
use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, JobState, Lease, Origin, PutResult,
    RandomSource, SkipReason, SplitMix64, StateStore, StoreError, StoreErrorKind, TickIndex,
    TickStart, Version, Versioned,
};
use jiff::Timestamp;

/// Counts of injected faults, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Operations that failed without effect.
    pub unavailable: u64,
    /// Writes applied and then reported as timeouts.
    pub ambiguous: u64,
    /// Store operations attempted (each an await point).
    pub operations: u64,
    /// Of which writes.
    pub writes: u64,
}

/// The fault plan shared by every connection of one simulation.
#[derive(Debug)]
pub struct FaultPlan {
    rng: SplitMix64,
    /// Chance per operation, in parts per million.
    pub unavailable_ppm: u64,
    pub ambiguous_ppm: u64,
    pub enabled: bool,
    pub counts: FaultCounts,
    /// Faults forced on the next operations, in order (`None`: no fault),
    /// before any random one: for crash-point tests.
    pub forced: std::collections::VecDeque<Option<StoreErrorKind>>,
    /// Jobs whose record a write may have changed since the last `take`.
    pub dirty: std::collections::BTreeSet<String>,
    /// When `Some`, every write the store really applied, in the order the
    /// store applied them: the model checks each transition (a per-step read
    /// would miss a pause, a claim and a resume within one step).
    pub applied: Option<Vec<Applied>>,
    /// While `applied` is `Some`, every delete the store really applied:
    /// the record's name, after how many of `applied`'s writes.
    pub deleted: Vec<(usize, String)>,
    /// While `applied` is `Some`, the records whose write the store did
    /// not apply (another writer had won) but answered as ambiguous.
    pub ambiguous_unapplied: Vec<String>,
}

/// What the model needs of one applied write: a summary of the record
/// written, cheap to take on every write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub job: String,
    /// The record's spec hash as a number (`u64::MAX` if it is not hex).
    pub spec_hash: u64,
    pub cursor: Timestamp,
    pub fence: u64,
    pub paused: bool,
    pub skipped_paused: u64,
    pub missed: u64,
    pub backfilled: u64,
    /// Slots sent back from the dead letters (`counters.redriven`).
    pub redriven: u64,
    /// (slot, fence) of every dead letter, and how many were dropped to
    /// keep the list bounded (`counters.dead_dropped`).
    pub dead: Vec<(Timestamp, u64)>,
    pub dead_dropped: u64,
    /// The lease holding the record's newest fence, if it is live.
    pub newest: Option<Lease>,
    /// (slot, origin, attempt) of every lease, then of every pending run.
    pub leases: Vec<(Timestamp, Origin, u32)>,
    pub pending: Vec<(Timestamp, Origin, u32)>,
    /// (fence, expiry) of every lease, so that a claim that ends one can
    /// be judged against its expiry.
    pub expiries: Vec<(u64, Timestamp)>,
}

impl Applied {
    pub fn of(job: &str, s: &JobState) -> Applied {
        Applied {
            job: job.to_string(),
            spec_hash: u64::from_str_radix(&s.spec_hash, 16).unwrap_or(u64::MAX),
            cursor: s.cursor,
            fence: s.fence,
            paused: s.paused,
            skipped_paused: s
                .counters
                .skipped
                .get(&SkipReason::Paused)
                .copied()
                .unwrap_or(0),
            missed: s.counters.missed_total(),
            backfilled: s.counters.backfilled,
            redriven: s.counters.redriven,
            dead: s.dead.iter().map(|d| (d.slot, d.fence)).collect(),
            dead_dropped: s.counters.dead_dropped,
            newest: s.lease_for_fence(s.fence).cloned(),
            leases: s
                .leases
                .iter()
                .map(|l| (l.slot, l.origin, l.attempt))
                .collect(),
            pending: s
                .pending
                .iter()
                .map(|p| (p.slot, p.origin, p.attempt))
                .collect(),
            expiries: s.leases.iter().map(|l| (l.fence, l.expires_at)).collect(),
        }
    }
}

impl FaultPlan {
    pub fn new(seed: u64, unavailable_ppm: u64, ambiguous_ppm: u64) -> FaultPlan {
        FaultPlan {
            rng: SplitMix64::new(seed),
            unavailable_ppm,
            ambiguous_ppm,
            enabled: true,
            counts: FaultCounts::default(),
            forced: std::collections::VecDeque::new(),
            dirty: std::collections::BTreeSet::new(),
            applied: None,
            deleted: Vec::new(),
            ambiguous_unapplied: Vec::new(),
        }
    }

    /// A plan without random faults (only forced ones).
    pub fn quiet() -> FaultPlan {
        FaultPlan::new(0, 0, 0)
    }

    fn draw(&mut self, write: bool) -> Option<StoreErrorKind> {
        self.counts.operations += 1;
        self.counts.writes += u64::from(write);
        if let Some(forced) = self.forced.pop_front() {
            match forced {
                Some(StoreErrorKind::Ambiguous) if write => self.counts.ambiguous += 1,
                Some(StoreErrorKind::Ambiguous) | None => return None,
                Some(_) => self.counts.unavailable += 1,
            }
            return forced;
        }
        if !self.enabled {
            return None;
        }
        let r = self.rng.next_u64() % 1_000_000;
        if r < self.unavailable_ppm {
            self.counts.unavailable += 1;
            Some(StoreErrorKind::Unavailable)
        } else if write && r < self.unavailable_ppm + self.ambiguous_ppm {
            self.counts.ambiguous += 1;
            Some(StoreErrorKind::Ambiguous)
        } else {
            None
        }
    }
}

/// A store connection with faults; clones share the plan and the data.
#[derive(Clone)]
pub struct FaultStore<S> {
    pub inner: S,
    pub plan: Rc<RefCell<FaultPlan>>,
}

fn unavailable() -> StoreError {
    StoreError::unavailable("simulated fault: store unavailable")
}

fn ambiguous() -> StoreError {
    StoreError::new(
        StoreErrorKind::Ambiguous,
        "simulated fault: write applied, response lost",
    )
}

impl<S> FaultStore<S> {
    async fn gate(&self, write: bool) -> Option<StoreErrorKind> {
        yield_now().await;
        self.plan.borrow_mut().draw(write)
    }
}

impl<S: StateStore> StateStore for FaultStore<S> {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        match self.gate(false).await {
            Some(_) => Err(unavailable()),
            None => self.inner.get(job).await,
        }
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        let gate = self.gate(true).await;
        self.plan.borrow_mut().dirty.insert(job.to_string());
        let applied = |r: &Result<PutResult, StoreError>| {
            if let Ok(PutResult::Written(_)) = r {
                if let Some(log) = self.plan.borrow_mut().applied.as_mut() {
                    log.push(Applied::of(job, state));
                }
            }
        };
        match gate {
            Some(StoreErrorKind::Ambiguous) => {
                // Applied if the version matched, either way unknown.
                let r = self.inner.put(job, state, expected).await;
                applied(&r);
                if let Ok(PutResult::Conflict(_)) = r {
                    let mut plan = self.plan.borrow_mut();
                    if plan.applied.is_some() {
                        plan.ambiguous_unapplied.push(job.to_string());
                    }
                }
                Err(ambiguous())
            }
            Some(_) => Err(unavailable()),
            None => {
                let r = self.inner.put(job, state, expected).await;
                applied(&r);
                r
            }
        }
    }

    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        let gate = self.gate(true).await;
        let deleted = |r: &Result<bool, StoreError>| {
            if let Ok(true) = r {
                let mut plan = self.plan.borrow_mut();
                if let Some(n) = plan.applied.as_ref().map(Vec::len) {
                    plan.deleted.push((n, job.to_string()));
                }
            }
        };
        match gate {
            Some(StoreErrorKind::Ambiguous) => {
                // Applied if the version matched, either way unknown.
                let r = self.inner.delete(job, expected).await;
                deleted(&r);
                Err(ambiguous())
            }
            Some(_) => Err(unavailable()),
            None => {
                let r = self.inner.delete(job, expected).await;
                deleted(&r);
                r
            }
        }
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.jobs().await
    }

    async fn records_page(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        match self.gate(false).await {
            Some(_) => Err(unavailable()),
            None => self.inner.records_page(prefix, after, limit).await,
        }
    }
}

impl<S: EffectLedger> EffectLedger for FaultStore<S> {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        match self.gate(true).await {
            Some(StoreErrorKind::Ambiguous) => {
                let _ = self.inner.begin_effect(key, owner, fence, now, hold).await;
                Err(ambiguous())
            }
            Some(_) => Err(unavailable()),
            None => self.inner.begin_effect(key, owner, fence, now, hold).await,
        }
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        match self.gate(true).await {
            Some(StoreErrorKind::Ambiguous) => {
                let _ = self.inner.finish_effect(key, fence, result, now).await;
                Err(ambiguous())
            }
            Some(_) => Err(unavailable()),
            None => self.inner.finish_effect(key, fence, result, now).await,
        }
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        match self.gate(false).await {
            Some(_) => Err(unavailable()),
            None => self.inner.read_effect(key).await,
        }
    }
}

/// The tick index fails like everything else: `tick_start` is a read
/// (unavailable, no effect); `tick_end` is a write, which may also move
/// the mark and then lose the answer.
impl<S: TickIndex> TickIndex for FaultStore<S> {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        match self.gate(false).await {
            Some(_) => Err(unavailable()),
            None => self.inner.tick_start(now, limit).await,
        }
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        match self.gate(true).await {
            Some(StoreErrorKind::Ambiguous) => {
                let _ = self.inner.tick_end(mark).await;
                Err(ambiguous())
            }
            Some(_) => Err(unavailable()),
            None => self.inner.tick_end(mark).await,
        }
    }
}
