//! What a runner's workers saw of each job's record: the first and the
//! latest (read, written, or returned by a lost compare-and-set), reported
//! by the store they share ([`Watched`]). The runner's summary compares the
//! two, so it costs no request at all: a tick costs what is due, never a
//! read of every job (docs/design.md §11).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use cronslot_core::coord::{JobState, RecordWatcher, Watched};

/// The first record seen of a job (`None`: it had none then) and the
/// latest.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    pub first: Option<JobState>,
    pub latest: Option<JobState>,
}

/// The records seen, shared by every worker's copy of the store.
#[derive(Debug, Clone, Default)]
pub(crate) struct RecordsSeen(Arc<Mutex<HashMap<String, Seen>>>);

/// The store as the runner's workers use it.
pub(crate) type SeenStore<S> = Watched<S, RecordsSeen>;

impl RecordsSeen {
    /// `inner`, remembering the records it sees.
    pub(crate) fn watch<S>(inner: S) -> SeenStore<S> {
        Watched::new(inner, RecordsSeen::default())
    }

    fn seen(&self) -> MutexGuard<'_, HashMap<String, Seen>> {
        // Plain data: a panic elsewhere cannot leave it half-updated.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The record now stored, as far as this process knows it, of a job
    /// already seen.
    fn latest(&self, job: &str, state: Option<&JobState>) {
        if let Some(s) = self.seen().get_mut(job) {
            s.latest = state.cloned();
        }
    }

    /// Every job seen so far, with its first and latest record.
    pub(crate) fn records(&self) -> HashMap<String, Seen> {
        self.seen().clone()
    }
}

impl RecordWatcher for RecordsSeen {
    /// The first record seen, if it is the first, and the latest.
    fn read(&self, job: &str, record: Option<&JobState>) {
        let mut seen = self.seen();
        match seen.get_mut(job) {
            Some(s) => s.latest = record.cloned(),
            None => {
                seen.insert(
                    job.to_string(),
                    Seen {
                        first: record.cloned(),
                        latest: record.cloned(),
                    },
                );
            }
        }
    }

    fn wrote(&self, job: &str, record: &JobState) {
        self.latest(job, Some(record));
    }

    fn lost(&self, job: &str, current: Option<&JobState>) {
        self.latest(job, current);
    }
}
