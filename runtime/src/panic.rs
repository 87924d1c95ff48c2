//! A panicking job is a crashed run: a transient failure of its attempt.
//!
//! docs/design.md §3.7 turns a crashed run into a failed attempt of the
//! same slot, retried or dead-lettered; a panic is a crash that the runner
//! happens to survive, so it gets the same fate at once instead of after
//! the lease expires. Where panics abort (wasm32: a Worker's isolate dies),
//! the lease's expiry gives the same result later.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::platform::LocalFuture;
use crate::{JobError, JobResult};

/// Calls `start` and polls the future it returns, turning a panic in
/// either into a transient [`JobError`].
pub(crate) async fn catching(start: impl FnOnce() -> LocalFuture<'static, JobResult>) -> JobResult {
    let future = match catch_unwind(AssertUnwindSafe(start)) {
        Ok(future) => future,
        Err(payload) => return Err(panicked(payload.as_ref())),
    };
    match (CatchPanic { inner: future }).await {
        Ok(result) => result,
        Err(payload) => Err(panicked(payload.as_ref())),
    }
}

struct CatchPanic {
    inner: LocalFuture<'static, JobResult>,
}

impl Future for CatchPanic {
    type Output = Result<JobResult, Box<dyn Any + Send>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.get_mut().inner;
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
            // Never polled again: the caller stops at the first `Ready`.
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

fn panicked(payload: &(dyn Any + Send)) -> JobError {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    JobError::transient(format!("the job panicked: {message}"))
}
