//! A platform on a virtual clock, for tests of job functions and of the
//! run loop on any real store: sleeping moves the clock on at once, so a
//! retry backoff or a heartbeat interval costs no real time. A job that
//! waits on something else while the run loop's timer is polled finds the
//! clock at its deadline: use it for jobs that finish when polled.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::platform::{LocalFuture, Platform};

/// A [`Platform`] whose clock moves only when told to (or when something
/// sleeps). It sends no requests and starts no processes.
#[derive(Debug, Clone)]
pub struct VirtualPlatform {
    now: Rc<Cell<Timestamp>>,
    slept: Rc<Cell<Duration>>,
}

impl VirtualPlatform {
    /// A clock that reads `start`.
    pub fn new(start: Timestamp) -> VirtualPlatform {
        VirtualPlatform {
            now: Rc::new(Cell::new(start)),
            slept: Rc::new(Cell::new(Duration::ZERO)),
        }
    }

    /// Sets the clock.
    pub fn set(&self, now: Timestamp) {
        self.now.set(now);
    }

    /// Moves the clock on by `by`.
    pub fn advance(&self, by: Duration) {
        let by = SignedDuration::try_from(by).unwrap_or(SignedDuration::MAX);
        self.now
            .set(self.now.get().checked_add(by).unwrap_or(Timestamp::MAX));
    }

    /// The total time slept so far.
    pub fn slept(&self) -> Duration {
        self.slept.get()
    }
}

impl Platform for VirtualPlatform {
    fn name(&self) -> &'static str {
        "a virtual platform"
    }

    fn now(&self) -> Timestamp {
        self.now.get()
    }

    /// Moves the clock on when first polled (not when called: the run
    /// loop races a timer against the job, and a job that finishes first
    /// must not find the clock at its deadline).
    fn sleep(&self, duration: Duration) -> LocalFuture<'static, ()> {
        let this = self.clone();
        Box::pin(async move {
            this.advance(duration);
            this.slept.set(this.slept.get().saturating_add(duration));
        })
    }
}
