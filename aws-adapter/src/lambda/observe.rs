//! A store wrapper that watches the records going through it, so the
//! handler learns what a claim did to a job's counters (slots missed, slots
//! dead) and whether a job is still due, without a single extra request.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, JobState, PutResult, StateStore,
    StoreError, Version, Versioned,
};
use jiff::Timestamp;

/// What the handler's own writes added to a job's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fates {
    /// Slots given the fate "missed".
    pub missed: u64,
    /// Slots that became dead letters.
    pub dead: u64,
}

#[derive(Default)]
struct Seen {
    /// The record as last read from or written to the store.
    stored: Option<JobState>,
    /// Counter increases made by this process's writes, not yet taken.
    fates: Fates,
}

/// `S` with every record read or written remembered per job.
///
/// Counter increases are attributed only to writes that succeeded, against
/// the record they replaced, so another invocation's misses are never
/// counted here. A write whose outcome was ambiguous (and is then read
/// back) is not counted: the record's own counters stay authoritative.
pub struct Observed<S> {
    inner: S,
    seen: RefCell<HashMap<String, Seen>>,
}

impl<S> Observed<S> {
    /// Watches `inner`, having seen nothing yet.
    pub fn new(inner: S) -> Observed<S> {
        Observed {
            inner,
            seen: RefCell::new(HashMap::new()),
        }
    }

    /// The store watched.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Takes the counter increases recorded for `job` since the last call.
    pub fn take_fates(&self, job: &str) -> Fates {
        self.seen
            .borrow_mut()
            .get_mut(job)
            .map(|s| std::mem::take(&mut s.fates))
            .unwrap_or_default()
    }

    /// The job's record as last seen, if any.
    pub fn known(&self, job: &str) -> Option<JobState> {
        self.seen.borrow().get(job).and_then(|s| s.stored.clone())
    }

    fn saw(&self, job: &str, stored: Option<JobState>) {
        let mut seen = self.seen.borrow_mut();
        let entry = seen.entry(job.to_string()).or_default();
        entry.stored = stored;
    }

    fn wrote(&self, job: &str, state: &JobState) {
        let mut seen = self.seen.borrow_mut();
        let entry = seen.entry(job.to_string()).or_default();
        let (missed_before, dead_before) = entry
            .stored
            .as_ref()
            .map_or((0, 0), |s| (s.counters.missed_total(), s.counters.dead));
        entry.fates.missed += state.counters.missed_total().saturating_sub(missed_before);
        entry.fates.dead += state.counters.dead.saturating_sub(dead_before);
        entry.stored = Some(state.clone());
    }
}

impl<S: StateStore> StateStore for Observed<S> {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        let got = self.inner.get(job).await?;
        self.saw(job, got.as_ref().map(|v| v.value.clone()));
        Ok(got)
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        let result = self.inner.put(job, state, expected).await?;
        match &result {
            PutResult::Written(_) => self.wrote(job, state),
            PutResult::Conflict(current) => {
                self.saw(job, current.as_ref().map(|v| v.value.clone()));
            }
        }
        Ok(result)
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.jobs().await
    }
}

impl<S: EffectLedger> EffectLedger for Observed<S> {
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
