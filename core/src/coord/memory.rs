//! `MemoryStore`: the compare-and-set contract in a process's memory, for
//! tests and simulations. It can yield at every operation so that
//! concurrent claimers really interleave between read and write, and it can
//! be told to fail (fault injection on top of the real contract).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jiff::Timestamp;

use super::exec::yield_now;
use super::state::{JobState, decode_state, encode_state};
use super::store::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, PutResult, StateStore, StoreError,
    StoreErrorKind, TickIndex, TickStart, Version, Versioned, decide_begin, decide_finish,
};

/// A fault to inject into the next operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The operation fails without effect.
    Unavailable,
    /// A write is applied, then reported as a timeout.
    AppliedThenTimeout,
}

#[derive(Default)]
struct Inner {
    /// Records are kept encoded, as a real store keeps bytes: every read
    /// decodes, so the encoding is exercised too.
    states: BTreeMap<String, (String, Version)>,
    effects: BTreeMap<String, EffectRecord>,
    /// The wake index: each record's `wake_at`, kept with the record.
    wakes: BTreeMap<String, Timestamp>,
    /// The tick mark.
    mark: Option<Timestamp>,
    faults: Vec<Fault>,
    writes: u64,
    reads: u64,
}

/// An in-memory store; clones share the same data (like connections to one
/// database).
#[derive(Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Mutex<Inner>>,
    yielding: bool,
}

impl MemoryStore {
    /// An empty store whose operations complete without yielding.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// A store whose every operation yields to the executor once, so that
    /// concurrent tasks interleave between a read and the write after it.
    pub fn yielding() -> MemoryStore {
        MemoryStore {
            inner: Arc::default(),
            yielding: true,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; keep
        // going rather than poisoning every later test.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues faults for the next operations, in order.
    pub fn inject(&self, faults: &[Fault]) {
        self.lock().faults.extend_from_slice(faults);
    }

    /// Writes applied so far (successful puts and ledger writes).
    pub fn writes(&self) -> u64 {
        self.lock().writes
    }

    /// State records read so far (successful `get`s).
    pub fn reads(&self) -> u64 {
        self.lock().reads
    }

    /// Stores raw text as a job's record (for tests of old or corrupt
    /// records).
    pub fn put_raw(&self, job: &str, text: &str) {
        let mut inner = self.lock();
        let version = inner.states.get(job).map_or(1, |(_, v)| v + 1);
        inner
            .states
            .insert(job.to_string(), (text.to_string(), version));
    }

    fn next_fault(&self) -> Option<Fault> {
        let mut inner = self.lock();
        if inner.faults.is_empty() {
            None
        } else {
            Some(inner.faults.remove(0))
        }
    }

    async fn pause_point(&self) {
        if self.yielding {
            yield_now().await;
        }
    }
}

fn unavailable() -> StoreError {
    StoreError::unavailable("injected fault: store unavailable")
}

impl StateStore for MemoryStore {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        self.pause_point().await;
        if self.next_fault() == Some(Fault::Unavailable) {
            return Err(unavailable());
        }
        let stored = {
            let mut inner = self.lock();
            inner.reads += 1;
            inner.states.get(job).cloned()
        };
        match stored {
            None => Ok(None),
            Some((text, version)) => Ok(Some(Versioned {
                value: decode_state(job, &text)?,
                version,
            })),
        }
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        self.pause_point().await;
        if state.job != job {
            return Err(StoreError::other(format!(
                "refusing to store job {:?}'s record under {job:?}",
                state.job
            )));
        }
        let fault = self.next_fault();
        if fault == Some(Fault::Unavailable) {
            return Err(unavailable());
        }
        let conflict = {
            let mut inner = self.lock();
            let current = inner.states.get(job).cloned();
            let current_version = current.as_ref().map(|(_, v)| *v);
            if current_version != expected {
                Some(current)
            } else {
                let version = current_version.map_or(1, |v| v + 1);
                inner
                    .states
                    .insert(job.to_string(), (encode_state(state), version));
                match state.wake_at {
                    Some(at) => inner.wakes.insert(job.to_string(), at),
                    None => inner.wakes.remove(job),
                };
                inner.writes += 1;
                if fault == Some(Fault::AppliedThenTimeout) {
                    return Err(StoreError::new(
                        StoreErrorKind::Ambiguous,
                        "injected fault: write applied, response lost",
                    ));
                }
                return Ok(PutResult::Written(version));
            }
        };
        match conflict.flatten() {
            None => Ok(PutResult::Conflict(None)),
            Some((text, version)) => Ok(PutResult::Conflict(Some(Box::new(Versioned {
                value: decode_state(job, &text)?,
                version,
            })))),
        }
    }

    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        self.pause_point().await;
        if self.next_fault() == Some(Fault::Unavailable) {
            return Err(unavailable());
        }
        let mut inner = self.lock();
        if inner.states.get(job).map(|(_, v)| *v) != Some(expected) {
            return Ok(false);
        }
        inner.states.remove(job);
        inner.wakes.remove(job);
        inner.writes += 1;
        Ok(true)
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.pause_point().await;
        Ok(self.lock().states.keys().cloned().collect())
    }

    /// One read under the lock: the page as it is at one instant.
    async fn records_page(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        use std::ops::Bound;
        self.pause_point().await;
        if self.next_fault() == Some(Fault::Unavailable) {
            return Err(unavailable());
        }
        let stored: Vec<(String, String, Version)> = {
            let mut inner = self.lock();
            inner.reads += 1;
            let start = match after {
                Some(a) if a >= prefix => Bound::Excluded(a),
                _ => Bound::Included(prefix),
            };
            inner
                .states
                .range::<str, _>((start, Bound::Unbounded))
                .take_while(|(name, _)| name.starts_with(prefix))
                .take(limit)
                .map(|(name, (text, version))| (name.clone(), text.clone(), *version))
                .collect()
        };
        stored
            .into_iter()
            .map(|(name, text, version)| {
                let value = decode_state(&name, &text)?;
                Ok((name, Versioned { value, version }))
            })
            .collect()
    }
}

impl EffectLedger for MemoryStore {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        self.pause_point().await;
        if self.next_fault() == Some(Fault::Unavailable) {
            return Err(unavailable());
        }
        let mut inner = self.lock();
        let (decision, write) = decide_begin(inner.effects.get(key), key, owner, fence, now, hold);
        if let Some(record) = write {
            inner.effects.insert(key.to_string(), record);
            inner.writes += 1;
        }
        Ok(decision)
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        self.pause_point().await;
        if self.next_fault() == Some(Fault::Unavailable) {
            return Err(unavailable());
        }
        let mut inner = self.lock();
        let (decision, write) = decide_finish(inner.effects.get(key), fence, result, now);
        if let Some(record) = write {
            inner.effects.insert(key.to_string(), record);
            inner.writes += 1;
        }
        Ok(decision)
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        self.pause_point().await;
        Ok(self.lock().effects.get(key).cloned())
    }
}

impl TickIndex for MemoryStore {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        self.pause_point().await;
        if self.next_fault() == Some(Fault::Unavailable) {
            return Err(unavailable());
        }
        let mut inner = self.lock();
        inner.reads += 1;
        let mut woken: Vec<(Timestamp, String)> = inner
            .wakes
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(job, at)| (*at, job.clone()))
            .collect();
        woken.sort();
        woken.truncate(limit);
        let next_wake = inner.wakes.values().filter(|at| **at > now).min().copied();
        Ok(TickStart {
            mark: inner.mark,
            now,
            woken: woken.into_iter().map(|(_, job)| job).collect(),
            records: Vec::new(),
            carried: Vec::new(),
            next_wake,
        })
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        self.pause_point().await;
        let fault = self.next_fault();
        if fault == Some(Fault::Unavailable) {
            return Err(unavailable());
        }
        let mut inner = self.lock();
        if inner.mark.is_none_or(|m| m < mark) {
            inner.mark = Some(mark);
            inner.writes += 1;
        }
        if fault == Some(Fault::AppliedThenTimeout) {
            return Err(StoreError::new(
                StoreErrorKind::Ambiguous,
                "injected fault: write applied, response lost",
            ));
        }
        Ok(())
    }
}
