//! Requests to a job's object through its Durable Object stub.

use cronslot_core::coord::{StoreError, StoreErrorKind};
use worker::ObjectNamespace;

use crate::client::Transport;

pub struct StubTransport {
    namespace: ObjectNamespace,
}

impl StubTransport {
    pub fn new(namespace: ObjectNamespace) -> StubTransport {
        StubTransport { namespace }
    }
}

impl Transport for StubTransport {
    async fn call(&self, job: &str, body: String) -> Result<String, StoreError> {
        let unavailable = |what: &str, e: worker::Error| {
            StoreError::unavailable(format!("job object {job:?}: {what}: {e}"))
        };
        let stub = self
            .namespace
            .id_from_name(job)
            .and_then(|id| id.get_stub())
            .map_err(|e| unavailable("addressing the object", e))?;
        // The host is never resolved: a stub's fetch goes to the object.
        let request = super::outgoing::request(
            "https://cronslot.object/op",
            "POST",
            None,
            Some(&body),
            false,
        )
        .map_err(|e| unavailable("building the request", e))?;
        // From here on the object may have applied the operation even if
        // the answer is lost: such errors are ambiguous, not unavailable.
        let ambiguous = |e: worker::Error| {
            StoreError::new(
                StoreErrorKind::Ambiguous,
                format!("job object {job:?}: no answer (the operation may have been applied): {e}"),
            )
        };
        let mut response = stub.fetch_with_request(request).await.map_err(ambiguous)?;
        response.text().await.map_err(ambiguous)
    }
}
