//! What the handler's own writes did to each job's counters (slots missed,
//! slots dead), learnt from the records going through the store
//! ([`Watched`]) without a single extra request.

use std::cell::RefCell;
use std::collections::HashMap;

use cronslot_core::coord::{JobState, RecordWatcher, Watched};

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

/// Each job's counter increases, per write.
///
/// Increases are attributed only to writes that succeeded, against the
/// record they replaced, so another invocation's misses are never counted
/// here. A write whose outcome was ambiguous (and is then read back) is not
/// counted: the record's own counters stay authoritative.
#[derive(Default)]
pub struct FateWatcher {
    seen: RefCell<HashMap<String, Seen>>,
}

/// A store whose writes' fates are counted.
pub type Observed<S> = Watched<S, FateWatcher>;

impl FateWatcher {
    /// `inner`, its writes' fates counted from now.
    pub fn watch<S>(inner: S) -> Observed<S> {
        Watched::new(inner, FateWatcher::default())
    }

    /// Takes the counter increases recorded for `job` since the last call.
    pub fn take_fates(&self, job: &str) -> Fates {
        self.seen
            .borrow_mut()
            .get_mut(job)
            .map(|s| std::mem::take(&mut s.fates))
            .unwrap_or_default()
    }

    fn stored(&self, job: &str, record: Option<&JobState>) {
        let mut seen = self.seen.borrow_mut();
        seen.entry(job.to_string()).or_default().stored = record.cloned();
    }
}

impl RecordWatcher for FateWatcher {
    fn read(&self, job: &str, record: Option<&JobState>) {
        self.stored(job, record);
    }

    fn wrote(&self, job: &str, record: &JobState) {
        let mut seen = self.seen.borrow_mut();
        let entry = seen.entry(job.to_string()).or_default();
        let (missed_before, dead_before) = entry
            .stored
            .as_ref()
            .map_or((0, 0), |s| (s.counters.missed_total(), s.counters.dead));
        entry.fates.missed += record.counters.missed_total().saturating_sub(missed_before);
        entry.fates.dead += record.counters.dead.saturating_sub(dead_before);
        entry.stored = Some(record.clone());
    }

    fn lost(&self, job: &str, current: Option<&JobState>) {
        self.stored(job, current);
    }
}
