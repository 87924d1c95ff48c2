//! Two scheduled jobs in one Worker: a Rust function (`nightly-report`) and
//! a webhook (`ping-webhook`, declared in the manifest only). Cron Triggers
//! fire the Worker; a Durable Object per job makes each slot run once in
//! effect; `/cronslot/...` serves the admin routes (token: the secret
//! `CRONSLOT_ADMIN_TOKEN`).
#![cfg(target_arch = "wasm32")]

use cronslot_cf::{Cronslot, JobError, RunContext};
use worker::{Context, Env, Request, Response, Result, ScheduleContext, ScheduledEvent, event};

// The Durable Object class the wrangler config binds.
pub use cronslot_cf::CronslotJob;

fn app() -> Cronslot {
    Cronslot::precompiled(include_str!(concat!(env!("OUT_DIR"), "/manifest.json")))
        .register("nightly-report", nightly_report)
}

/// Builds the report once per weekday night. The upload is an effect: a
/// retry of the same slot finds it done and skips it.
async fn nightly_report(ctx: RunContext) -> std::result::Result<(), JobError> {
    let key = ctx.idempotency_key();
    let object = ctx
        .effect("upload", || async move {
            // A real job would PUT the report to R2 under `key` here.
            Ok(format!("reports/{key}.csv"))
        })
        .await?;
    worker::console_log!(
        "{}",
        serde_json::json!({"msg": "report uploaded", "object": object, "fence": ctx.fence()})
    );
    Ok(())
}

#[event(scheduled)]
async fn scheduled(event: ScheduledEvent, env: Env, ctx: ScheduleContext) {
    app().scheduled(event, env, ctx).await;
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    app().fetch(req, env, ctx).await
}
