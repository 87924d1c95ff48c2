//! A store that reports every record going through it to a watcher, and is
//! otherwise the store it wraps: each operation goes to the real store
//! unchanged. What a platform wants to know of the records its claims and
//! writes saw (the local runner's summary, the Lambda's counts of slots a
//! write missed or buried) is then learnt without a request of its own, so
//! that a tick still costs what is due (docs/design.md §11).

use std::time::Duration;

use jiff::Timestamp;

use super::state::JobState;
use super::store::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, PutResult, RecordWrite, StateStore,
    StoreError, TickIndex, TickStart, Version, Versioned,
};

/// What a [`Watched`] store reports.
pub trait RecordWatcher {
    /// A job's record as read (`None`: the job has none).
    fn read(&self, job: &str, record: Option<&JobState>);
    /// A record this process wrote.
    fn wrote(&self, job: &str, record: &JobState);
    /// A conditional write that lost: `current` is the record another
    /// writer stored (`None`: the job has none).
    fn lost(&self, job: &str, current: Option<&JobState>);
}

/// `inner`, reporting to `watcher` every record it reads or writes.
#[derive(Debug, Clone)]
pub struct Watched<S, W> {
    inner: S,
    watcher: W,
}

impl<S, W> Watched<S, W> {
    /// `inner`, watched by `watcher`.
    pub fn new(inner: S, watcher: W) -> Watched<S, W> {
        Watched { inner, watcher }
    }

    /// The store watched.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// What it reports to.
    pub fn watcher(&self) -> &W {
        &self.watcher
    }
}

impl<S: StateStore, W: RecordWatcher> StateStore for Watched<S, W> {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        let read = self.inner.get(job).await?;
        self.watcher.read(job, read.as_ref().map(|v| &v.value));
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
            PutResult::Written(_) => self.watcher.wrote(job, state),
            PutResult::Conflict(current) => {
                self.watcher.lost(job, current.as_deref().map(|v| &v.value));
            }
        }
        Ok(result)
    }

    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        // A forgotten keyed run ended long ago: nothing for a watcher.
        self.inner.delete(job, expected).await
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
        let page = self.inner.records_page(prefix, after, limit).await?;
        for (name, record) in &page {
            self.watcher.read(name, Some(&record.value));
        }
        Ok(page)
    }

    async fn get_judged(
        &self,
        job: &str,
        now: Timestamp,
    ) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
        let (read, judged) = self.inner.get_judged(job, now).await?;
        self.watcher.read(job, read.as_ref().map(|v| &v.value));
        Ok((read, judged))
    }

    async fn get_many_judged(
        &self,
        jobs: &[&str],
        now: Timestamp,
    ) -> Result<(Vec<Option<Versioned<JobState>>>, Timestamp), StoreError> {
        let (reads, judged) = self.inner.get_many_judged(jobs, now).await?;
        for (job, read) in jobs.iter().zip(&reads) {
            self.watcher.read(job, read.as_ref().map(|v| &v.value));
        }
        Ok((reads, judged))
    }

    async fn put_many(&self, writes: &[RecordWrite<'_>]) -> Vec<Result<PutResult, StoreError>> {
        let answers = self.inner.put_many(writes).await;
        for (w, answer) in writes.iter().zip(&answers) {
            match answer {
                Ok(PutResult::Written(_)) => self.watcher.wrote(w.job, w.state),
                Ok(PutResult::Conflict(current)) => {
                    self.watcher
                        .lost(w.job, current.as_deref().map(|v| &v.value));
                }
                Err(_) => {}
            }
        }
        answers
    }
}

impl<S: EffectLedger, W> EffectLedger for Watched<S, W> {
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

impl<S: TickIndex, W> TickIndex for Watched<S, W> {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        self.inner.tick_start(now, limit).await
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        self.inner.tick_end(mark).await
    }

    fn leave(&self, planned: &[(&str, Timestamp)], woken: &[&str]) -> bool {
        self.inner.leave(planned, woken)
    }

    fn tick_end_moves_only_the_mark(&self) -> bool {
        self.inner.tick_end_moves_only_the_mark()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::coord::MemoryStore;
    use crate::coord::exec::block_on;

    #[derive(Default)]
    struct Log(RefCell<Vec<String>>);

    impl RecordWatcher for Log {
        fn read(&self, job: &str, record: Option<&JobState>) {
            self.0
                .borrow_mut()
                .push(format!("read {job} {}", record.map_or(0, |r| r.fence)));
        }
        fn wrote(&self, job: &str, record: &JobState) {
            self.0
                .borrow_mut()
                .push(format!("wrote {job} {}", record.fence));
        }
        fn lost(&self, job: &str, current: Option<&JobState>) {
            self.0
                .borrow_mut()
                .push(format!("lost {job} {}", current.map_or(0, |r| r.fence)));
        }
    }

    /// Every record read, written or lost to is reported, and the store
    /// answers as the store it wraps.
    #[test]
    fn every_record_going_through_is_reported() {
        let store = Watched::new(MemoryStore::new(), Log::default());
        let t = Timestamp::UNIX_EPOCH;
        let mut state = JobState::new("j", "hash", t, false);
        assert_eq!(block_on(store.get("j")).unwrap(), None);
        state.fence = 1;
        let v = match block_on(store.put("j", &state, None)).unwrap() {
            PutResult::Written(v) => v,
            other => panic!("{other:?}"),
        };
        state.fence = 2;
        assert!(matches!(
            block_on(store.put("j", &state, None)).unwrap(),
            PutResult::Conflict(_)
        ));
        let (read, _) = block_on(store.get_judged("j", t)).unwrap();
        assert_eq!(read.map(|r| r.version), Some(v));
        assert_eq!(
            *store.watcher().0.borrow(),
            ["read j 0", "wrote j 1", "lost j 1", "read j 1"]
        );
    }
}
