//! The requests a store sent, by kind: what a tick or a run costs, counted
//! exactly by the tests and the benchmarks (docs/performance.md).

use std::sync::atomic::{AtomicU64, Ordering};

/// Requests sent, by kind: statements on PostgreSQL, commands, pipelines
/// and scripts on Redis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// Requests that read a job's record, the job list or an effect.
    pub reads: u64,
    /// Requests that write (a record, an effect, a sweep). A statement
    /// that writes several records at once (PostgreSQL's grouped writes)
    /// counts one write per record, as each would cost alone; `grouped`
    /// says how many of them shared a statement.
    pub writes: u64,
    /// Writes that went in one statement with an earlier write: a group
    /// of `k` counts `k` writes and `k - 1` grouped, so the statements
    /// sent are `reads + writes - grouped`.
    pub grouped: u64,
    /// Wake notifications sent apart from the writes that made records
    /// due (PostgreSQL's `NOTIFY`, on a connection of its own): one for
    /// all the writes made while the last was on its way.
    pub signals: u64,
    /// Requests that checked or created the store (opening, `init`).
    pub setup: u64,
    /// Connections opened.
    pub connections: u64,
}

impl RequestCounts {
    /// What was counted since `earlier` (a reading of the same store).
    pub fn since(&self, earlier: &RequestCounts) -> RequestCounts {
        RequestCounts {
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
            grouped: self.grouped.saturating_sub(earlier.grouped),
            signals: self.signals.saturating_sub(earlier.signals),
            setup: self.setup.saturating_sub(earlier.setup),
            connections: self.connections.saturating_sub(earlier.connections),
        }
    }
}

/// The counters behind [`RequestCounts`], shared by a store's clones.
#[derive(Debug, Default)]
pub struct Counters {
    reads: AtomicU64,
    writes: AtomicU64,
    grouped: AtomicU64,
    signals: AtomicU64,
    setup: AtomicU64,
    connections: AtomicU64,
}

impl Counters {
    /// Counts one request: a setup request when `setup`, else a write or a
    /// read.
    pub fn request(&self, setup: bool, write: bool) {
        let counter = match (setup, write) {
            (true, _) => &self.setup,
            (false, true) => &self.writes,
            (false, false) => &self.reads,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `n` writes that went in a statement already counted, with
    /// its first write.
    pub fn grouped(&self, n: u64) {
        self.writes.fetch_add(n, Ordering::Relaxed);
        self.grouped.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts one wake notification sent.
    pub fn signal(&self) {
        self.signals.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one connection opened; returns its number (the first is 1),
    /// which tells one connection of a store from the next.
    pub fn connection(&self) -> u64 {
        self.connections.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The counts so far.
    pub fn snapshot(&self) -> RequestCounts {
        RequestCounts {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            grouped: self.grouped.load(Ordering::Relaxed),
            signals: self.signals.load(Ordering::Relaxed),
            setup: self.setup.load(Ordering::Relaxed),
            connections: self.connections.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_kind_and_the_difference() {
        let counters = Counters::default();
        counters.request(true, true);
        counters.request(false, true);
        counters.request(false, false);
        counters.request(false, false);
        counters.connection();
        let first = counters.snapshot();
        assert_eq!(
            first,
            RequestCounts {
                reads: 2,
                writes: 1,
                grouped: 0,
                signals: 0,
                setup: 1,
                connections: 1
            }
        );
        counters.grouped(2);
        counters.request(false, true);
        assert_eq!(
            counters.snapshot().since(&first),
            RequestCounts {
                writes: 3,
                grouped: 2,
                ..RequestCounts::default()
            }
        );
    }
}
