//! The local runner as a runtime [`Platform`]: its (possibly accelerated)
//! clock, tokio timers, reqwest for `http` jobs, child processes for
//! `command` jobs, and the runner's forced shutdown.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use cronslot_runtime::command::CommandRequest;
use cronslot_runtime::http::{HttpFailure, HttpRequest, HttpResponse};
use cronslot_runtime::{JobError, LocalFuture, Platform, RunEvent};
use jiff::Timestamp;
use tokio::sync::watch;

use crate::clock::Clock;
use crate::http::HttpClient;
use crate::watch::{Stop, Watch};

/// One worker's platform (or `cronslot trigger`'s).
pub struct LocalPlatform {
    clock: Clock,
    http: Rc<HttpClient>,
    stop: Option<watch::Receiver<Stop>>,
    /// The runner's tally, which watches for slots that run twice and
    /// counts store errors.
    shared: Option<Arc<Watch>>,
}

impl LocalPlatform {
    /// A platform on `clock` that never stops its runs by itself
    /// (`cronslot trigger`, tests).
    pub fn new(clock: Clock) -> LocalPlatform {
        LocalPlatform {
            clock,
            http: Rc::new(HttpClient::default()),
            stop: None,
            shared: None,
        }
    }

    /// A worker's platform: runs stop when the runner says `Stop::Now`.
    pub(crate) fn for_worker(clock: Clock, stop: watch::Receiver<Stop>) -> LocalPlatform {
        LocalPlatform {
            stop: Some(stop),
            ..LocalPlatform::new(clock)
        }
    }

    /// Reports work ends and store retries to the runner's tally.
    pub(crate) fn watched_by(self, shared: Arc<Watch>) -> LocalPlatform {
        LocalPlatform {
            shared: Some(shared),
            ..self
        }
    }
}

impl Platform for LocalPlatform {
    fn name(&self) -> &'static str {
        "the local runner"
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn sleep(&self, duration: Duration) -> LocalFuture<'static, ()> {
        let clock = self.clock.clone();
        Box::pin(async move { clock.sleep(duration).await })
    }

    fn stop_now(&self) -> LocalFuture<'static, ()> {
        let Some(mut stop) = self.stop.clone() else {
            return Box::pin(std::future::pending());
        };
        Box::pin(async move {
            loop {
                if *stop.borrow_and_update() == Stop::Now {
                    return;
                }
                if stop.changed().await.is_err() {
                    // The runner is gone without asking: never stop.
                    std::future::pending::<()>().await;
                }
            }
        })
    }

    fn observe(&self, event: &RunEvent<'_>) {
        match *event {
            RunEvent::WorkEnded { job, slot } => {
                if let Some(shared) = &self.shared {
                    shared.tally().work_ended(job, slot);
                }
            }
            RunEvent::StoreRetry { job, what, error } => {
                if let Some(shared) = &self.shared {
                    shared.tally().store_error();
                }
                tracing::warn!(job, error = %error, "recording the {what} failed; trying again");
            }
            RunEvent::Heartbeat {
                job,
                fence,
                expires_at,
            } => {
                tracing::debug!(job, fence, expires_at = %expires_at, "heartbeat");
            }
            _ => {}
        }
    }

    fn send_http(
        &self,
        request: HttpRequest,
    ) -> LocalFuture<'static, Result<HttpResponse, HttpFailure>> {
        Box::pin(self.http.send(request))
    }

    fn runs_commands(&self) -> bool {
        true
    }

    fn run_command(
        &self,
        command: CommandRequest,
    ) -> LocalFuture<'static, Result<Option<String>, JobError>> {
        Box::pin(crate::command::run(command))
    }
}
