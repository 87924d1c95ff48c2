//! Lambda as a runtime [`Platform`]: the function's clock, tokio timers,
//! the invocation's deadline, and the AWS SDK's connector for `http` jobs.
//! A Lambda has no processes (`provided.al2023` carries no tools a command
//! could rely on, and the package holds only the bootstrap).

use std::rc::Rc;
use std::time::Duration;

use cronslot_runtime::http::{HttpFailure, HttpRequest, HttpResponse};
use cronslot_runtime::{LocalFuture, Platform, PlatformDeadline};
use jiff::{SignedDuration, Timestamp};

use super::http::HttpRunner;

/// Supplies `now`: the system clock in Lambda, a fake one in tests.
pub type Clock = Rc<dyn Fn() -> Timestamp>;

/// A run is cut this long before the invocation's deadline, so that its
/// failure can still be written before Lambda stops the process.
pub const RESERVE: Duration = Duration::from_secs(1);

/// The platform of the function, or of one invocation ([`LambdaPlatform::until`]).
#[derive(Clone)]
pub(crate) struct LambdaPlatform {
    clock: Clock,
    http: Rc<HttpRunner>,
    deadline: Option<Timestamp>,
}

impl LambdaPlatform {
    pub(crate) fn new(clock: Clock, http: Rc<HttpRunner>) -> LambdaPlatform {
        LambdaPlatform {
            clock,
            http,
            deadline: None,
        }
    }

    /// The platform of an invocation that Lambda stops at `deadline`.
    pub(crate) fn until(&self, deadline: Timestamp) -> LambdaPlatform {
        LambdaPlatform {
            deadline: Some(deadline),
            ..self.clone()
        }
    }
}

impl Platform for LambdaPlatform {
    fn name(&self) -> &'static str {
        "Lambda"
    }

    fn now(&self) -> Timestamp {
        (self.clock)()
    }

    fn sleep(&self, duration: Duration) -> LocalFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }

    /// Runs are cut [`RESERVE`] before the invocation's deadline, so that
    /// their failure can still be written before Lambda stops the process.
    fn deadline(&self) -> Option<PlatformDeadline> {
        let ends_at = self.deadline?;
        let reserve = SignedDuration::try_from(RESERVE).unwrap_or(SignedDuration::ZERO);
        Some(PlatformDeadline {
            cut_runs_at: ends_at.checked_sub(reserve).unwrap_or(Timestamp::MIN),
            ends_at,
            advice: "raise the function timeout (and the job's lease), or shorten the job"
                .to_string(),
        })
    }

    fn send_http(
        &self,
        request: HttpRequest,
    ) -> LocalFuture<'static, Result<HttpResponse, HttpFailure>> {
        Box::pin(self.http.send(request))
    }
}
