//! What the runner, its workers and their platforms share: the runner's
//! stop request, and the tally and health they watch together. Its own
//! module, so that the workers and their platforms both depend on it and
//! not on each other.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::health::Health;
use crate::summary::Tally;

/// What the runner asks of its workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Running,
    /// Claim nothing more; let the running jobs finish.
    Graceful,
    /// Stop the running jobs too (they are reported as transient failures,
    /// so their slots are retried).
    Now,
    /// The drain's grace period is over: stop at once and record nothing.
    /// The running jobs are dropped (a command's process group killed), and
    /// their leases expire as after a crash, so their slots are retried by
    /// another runner once the lease is over.
    Abandon,
}

/// What the runner, its workers and their platforms watch together: the
/// tally of claims and runs, and the runner's health.
pub(crate) struct Watch {
    pub tally: Mutex<Tally>,
    pub health: Arc<Health>,
}

impl Watch {
    pub(crate) fn tally(&self) -> MutexGuard<'_, Tally> {
        // The tally holds plain counters: a panic elsewhere cannot leave it
        // half-updated in a way that matters more than losing the summary.
        self.tally.lock().unwrap_or_else(|p| p.into_inner())
    }
}
