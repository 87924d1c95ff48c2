//! Whether a runner is alive and can reach its store: what a process
//! supervisor's probes ask (Kubernetes' liveness and readiness, a load
//! balancer's health check).
//!
//! Scheduler deaths are silent: a runner whose worker loop is stuck (a
//! deadlock, a future that never wakes) still holds its process, port and
//! logs, and runs nothing. So liveness is progress, not existence: every
//! worker notes each pass of its loop and each claim it starts, and the
//! runner is live while every worker made progress recently. Readiness is
//! the store: the last store operation of any worker succeeded.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The shared health record of one runner. Cheap to read from any thread.
#[derive(Debug)]
pub struct Health {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Per worker: when it last made progress (`None` once it has ended).
    progress: Vec<Option<Instant>>,
    started: Instant,
    /// The last store operation's outcome: `None` before the first.
    store: Option<Result<(), String>>,
    stopping: bool,
}

/// A runner's health, as a probe reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Healthy.
    Ok,
    /// Not healthy, and why (one sentence for the probe's body and logs).
    Failing(String),
}

impl Verdict {
    /// Healthy?
    pub fn is_ok(&self) -> bool {
        matches!(self, Verdict::Ok)
    }
}

impl Health {
    pub(crate) fn new(workers: u32) -> Health {
        Health {
            state: Mutex::new(State {
                progress: vec![Some(Instant::now()); workers as usize],
                started: Instant::now(),
                store: None,
                stopping: false,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Plain values: a panic elsewhere cannot leave them inconsistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Worker `n` (from 1) made progress.
    pub(crate) fn progress(&self, worker: u32) {
        if let Some(slot) = self.state().progress.get_mut(worker as usize - 1) {
            *slot = Some(Instant::now());
        }
    }

    /// Worker `n` (from 1) has ended its loop (stopping is not a failure).
    pub(crate) fn ended(&self, worker: u32) {
        if let Some(slot) = self.state().progress.get_mut(worker as usize - 1) {
            *slot = None;
        }
    }

    /// The runner was asked to stop: no longer ready for new work.
    pub(crate) fn stopping(&self) {
        self.state().stopping = true;
    }

    /// A store operation succeeded.
    pub(crate) fn store_ok(&self) {
        self.state().store = Some(Ok(()));
    }

    /// A store operation failed with `error`.
    pub(crate) fn store_failed(&self, error: &str) {
        self.state().store = Some(Err(error.to_string()));
    }

    /// Live: every running worker made progress within `bound` (real
    /// time). A worker waits on its store at most a store's timeout per
    /// claim, and sleeps at most its poll interval, so a bound of a minute
    /// or more only fails a stuck worker.
    pub fn liveness(&self, bound: Duration) -> Verdict {
        let state = self.state();
        let stuck: Vec<String> = state
            .progress
            .iter()
            .enumerate()
            .filter_map(|(i, at)| {
                at.filter(|at| at.elapsed() > bound)
                    .map(|at| format!("worker {} for {} s", i + 1, at.elapsed().as_secs()))
            })
            .collect();
        if stuck.is_empty() {
            Verdict::Ok
        } else {
            Verdict::Failing(format!(
                "no progress from {} (bound {} s)",
                stuck.join(", "),
                bound.as_secs()
            ))
        }
    }

    /// Ready: not stopping, and the last store operation succeeded (before
    /// the first, ready only during a short start-up grace).
    pub fn readiness(&self) -> Verdict {
        const START_GRACE: Duration = Duration::from_secs(30);
        let state = self.state();
        if state.stopping {
            return Verdict::Failing("the runner is stopping".into());
        }
        match &state.store {
            Some(Ok(())) => Verdict::Ok,
            Some(Err(e)) => Verdict::Failing(format!("the last store operation failed: {e}")),
            None if state.started.elapsed() <= START_GRACE => Verdict::Ok,
            None => Verdict::Failing("no store operation has completed yet".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_without_progress_fails_liveness_and_an_ended_one_does_not() {
        let health = Health::new(2);
        assert!(health.liveness(Duration::from_secs(60)).is_ok());
        std::thread::sleep(Duration::from_millis(30));
        health.progress(1);
        match health.liveness(Duration::from_millis(20)) {
            Verdict::Failing(why) => assert!(why.contains("worker 2"), "{why}"),
            Verdict::Ok => panic!("worker 2 made no progress"),
        }
        health.ended(2);
        assert!(health.liveness(Duration::from_millis(20)).is_ok());
    }

    #[test]
    fn readiness_follows_the_last_store_operation() {
        let health = Health::new(1);
        assert!(health.readiness().is_ok(), "start-up grace");
        health.store_failed("store unavailable: connection refused");
        match health.readiness() {
            Verdict::Failing(why) => assert!(why.contains("connection refused"), "{why}"),
            Verdict::Ok => panic!("the store failed"),
        }
        health.store_ok();
        assert!(health.readiness().is_ok());
        health.stopping();
        assert!(!health.readiness().is_ok());
    }
}
