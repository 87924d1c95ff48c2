//! The store as a runner's workers use it: every operation goes to the
//! real store unchanged, and the first and the latest record seen of each
//! job (read, written, or returned by a lost compare-and-set) are kept.
//! The runner's summary compares the two, so it costs no request at all:
//! a tick costs what is due, never a read of every job (docs/design.md
//! §11).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, JobState, PutResult, StateStore,
    StoreError, TickIndex, TickStart, Version, Versioned,
};
use jiff::Timestamp;

/// The first record seen of a job (`None`: it had none then) and the
/// latest.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    pub first: Option<JobState>,
    pub latest: Option<JobState>,
}

/// A store that remembers the records it saw.
#[derive(Clone)]
pub(crate) struct RecordsSeen<S> {
    inner: S,
    seen: Arc<Mutex<HashMap<String, Seen>>>,
}

impl<S> RecordsSeen<S> {
    pub(crate) fn new(inner: S) -> RecordsSeen<S> {
        RecordsSeen {
            inner,
            seen: Arc::default(),
        }
    }

    fn seen(&self) -> MutexGuard<'_, HashMap<String, Seen>> {
        // Plain data: a panic elsewhere cannot leave it half-updated.
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A read: the first record seen, if it is the first, and the latest.
    fn read(&self, job: &str, read: Option<&Versioned<JobState>>) {
        let mut seen = self.seen();
        let state = read.map(|v| v.value.clone());
        match seen.get_mut(job) {
            Some(s) => s.latest = state,
            None => {
                seen.insert(
                    job.to_string(),
                    Seen {
                        first: state.clone(),
                        latest: state,
                    },
                );
            }
        }
    }

    /// A write's outcome: the record now stored, as far as this write
    /// knows it.
    fn wrote(&self, job: &str, state: Option<&JobState>) {
        if let Some(s) = self.seen().get_mut(job) {
            s.latest = state.cloned();
        }
    }

    /// Every job seen so far, with its first and latest record.
    pub(crate) fn seen_records(&self) -> HashMap<String, Seen> {
        self.seen().clone()
    }
}

impl<S: StateStore> StateStore for RecordsSeen<S> {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        let read = self.inner.get(job).await?;
        self.read(job, read.as_ref());
        Ok(read)
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        let result = self.inner.put(job, state, expected).await?;
        match &result {
            PutResult::Written(_) => self.wrote(job, Some(state)),
            PutResult::Conflict(current) => {
                self.wrote(job, current.as_deref().map(|v| &v.value));
            }
        }
        Ok(result)
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.jobs().await
    }

    async fn get_judged(
        &self,
        job: &str,
        now: Timestamp,
    ) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
        let (read, judged) = self.inner.get_judged(job, now).await?;
        self.read(job, read.as_ref());
        Ok((read, judged))
    }
}

impl<S: EffectLedger> EffectLedger for RecordsSeen<S> {
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

impl<S: TickIndex> TickIndex for RecordsSeen<S> {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        self.inner.tick_start(now, limit).await
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        self.inner.tick_end(mark).await
    }
}
