//! The example jobs, written once against the runtime's [`RunContext`] and
//! run unchanged by `examples/aws-jobs` (a Lambda), `examples/cf-jobs` (a
//! Worker) and `examples/local-jobs` (the local runner). Nothing here names
//! a platform or a store.

use cronslot_runtime::{JobError, Jobs, RunContext};

/// Every example function, registered under its manifest job's name.
pub fn jobs() -> Jobs {
    Jobs::new().register("nightly-report", nightly_report)
}

/// What the report step leaves in the checkpoint once the report is built.
pub const BUILT: &str = "built";

/// Builds a report and uploads it, once per slot in effect.
///
/// The build is checkpointed: a retry of the slot (after a crash, a
/// timeout, a lost connection) resumes after it instead of building
/// again. The upload is an effect: a retry finds it recorded as done and
/// gets its result back without uploading twice. The object's name is the
/// slot's idempotency key, so even an upload that ran but was not recorded
/// (a crash between the two) overwrites the same object.
pub async fn nightly_report(ctx: RunContext) -> Result<(), JobError> {
    let key = ctx.idempotency_key();
    if ctx.last_checkpoint().as_deref() != Some(BUILT) {
        // A real job would query its database here, bounded by
        // `ctx.deadline()`.
        ctx.checkpoint(BUILT).await?;
    }
    let object = ctx
        .effect("upload", || async move {
            // A real job would PUT the report to S3 or R2 here, under the
            // slot's key, with `ctx.fence()` for destinations that refuse
            // a stale writer.
            Ok(format!("reports/{key}.csv"))
        })
        .await?;
    if object.is_empty() {
        return Err(JobError::permanent("the upload returned no object name"));
    }
    Ok(())
}
