//! The jobs: plain async functions of a `RunContext`, registered under
//! their manifest job's name (`cronslot.toml`). Nothing here names a
//! platform or a store: the same functions run in a Lambda, a Worker and
//! the local runner.

use {{adapter}}::{JobError, Jobs, RunContext};

/// Every job function of this program, under its job's name.
pub fn jobs() -> Jobs {
    Jobs::new().register("hello", hello)
}

/// Runs once per slot in effect. A retry of the same slot (after a crash,
/// a timeout, a lost connection) sees the checkpoint and the effect's
/// recorded result, so work that was done is not done twice.
async fn hello(ctx: RunContext) -> Result<(), JobError> {
    // The slot's identity, the same for every attempt of it
    // (`hello@2026-03-08T07:00:00Z`): use it as the idempotency key of
    // whatever the job writes, and pass `ctx.fence()` to a destination that
    // can refuse a stale writer.
    let key = ctx.idempotency_key();
    if ctx.last_checkpoint().as_deref() != Some("prepared") {
        // Read what the job needs here, bounded by `ctx.deadline()`.
        ctx.checkpoint("prepared").await?;
    }
    let greeting = ctx
        .effect("greet", || async move {
            // Send the mail, write the row, PUT the object here: its result
            // is recorded, and a retry gets it back without doing it again.
            Ok(format!("hello from {key}"))
        })
        .await?;
    if greeting.is_empty() {
        return Err(JobError::permanent("the greeting came back empty"));
    }
    Ok(())
}
