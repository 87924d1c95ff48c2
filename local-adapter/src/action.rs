//! What runs for a slot: the job's registered Rust function, its `command`,
//! or its `http` request. Each returns a short result for the job's history,
//! or a [`JobError`] saying whether the failure is worth a retry.
//!
//! Time limits are not enforced here but by the runner, which drops the
//! future when the limit passes; dropping a command kills its process group
//! and dropping a request aborts it, so one mechanism covers timeouts,
//! lost leases and a forced shutdown alike.

mod command;
mod http;

use std::time::Duration;

use cronslot_core::manifest::{Action, JobSpec};

use crate::jobs::{JobCtx, JobError, Jobs};

pub(crate) use self::http::HttpClient;

/// The environment variables a command receives, and (as headers) the
/// request an http job sends, identifying the run.
pub(crate) fn run_identity(ctx: &JobCtx) -> Vec<(&'static str, String)> {
    vec![
        ("CRONSLOT_JOB", ctx.job().to_string()),
        ("CRONSLOT_SLOT", ctx.slot_id().to_string()),
        ("CRONSLOT_IDEMPOTENCY_KEY", ctx.idempotency_key()),
        ("CRONSLOT_FENCE", ctx.fence().to_string()),
        ("CRONSLOT_ATTEMPT", ctx.attempt().to_string()),
        (
            "CRONSLOT_SCHEDULED_AT",
            cronslot_core::coord::format_instant(ctx.scheduled_at()),
        ),
    ]
}

/// The longest one run of `spec` may take (clock time).
pub(crate) fn time_limit(spec: &JobSpec, jobs: &Jobs) -> Duration {
    match &spec.action {
        Action::Function => jobs
            .get(spec.name.as_str())
            .and_then(|r| r.timeout)
            .unwrap_or(spec.lease),
        other => other.timeout().unwrap_or(spec.lease),
    }
}

/// Runs one attempt of the slot in `ctx`.
pub(crate) async fn execute(
    spec: &JobSpec,
    ctx: JobCtx,
    jobs: &Jobs,
    http: &HttpClient,
) -> Result<Option<String>, JobError> {
    match &spec.action {
        Action::Function => {
            let Some(registered) = jobs.get(spec.name.as_str()) else {
                return Err(JobError::permanent(unregistered_message(
                    spec.name.as_str(),
                )));
            };
            // A task of its own, so that a panicking job is a failed run
            // rather than a dead worker; aborted if the run is dropped.
            let mut task = AbortOnDrop(tokio::task::spawn_local((registered.run)(ctx)));
            match (&mut task.0).await {
                Ok(result) => result.map(|()| None),
                Err(e) if e.is_panic() => Err(JobError::permanent(format!(
                    "the job's function panicked: {}",
                    panic_message(e.into_panic())
                ))),
                Err(e) => Err(JobError::transient(format!("the job's task ended: {e}"))),
            }
        }
        Action::Command { argv, env, .. } => command::run(argv, env, &run_identity(&ctx)).await,
        Action::Http {
            url,
            method,
            headers,
            ..
        } => http.send(url, *method, headers, &ctx).await,
    }
}

/// Aborts a task when its handle is dropped (a plain `JoinHandle` detaches).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

/// The error of a function job nobody registered a function for.
pub(crate) fn unregistered_message(job: &str) -> String {
    format!(
        "job {job:?} has neither `command` nor `http` in the manifest, and no Rust function \
         is registered under that name; register one (Jobs::register) or give the job a \
         command"
    )
}
