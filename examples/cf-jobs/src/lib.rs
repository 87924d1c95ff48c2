//! Two scheduled jobs in one Worker: a Rust function (`nightly-report`,
//! from `examples/jobs`, the same function the Lambda and local examples
//! run) and a webhook (`ping-webhook`, declared in the manifest only).
//! Cron Triggers fire the Worker; a Durable Object per job makes each slot
//! run once in effect; `/cronslot/...` serves the admin routes (token: the
//! secret `CRONSLOT_ADMIN_TOKEN`).
#![cfg(target_arch = "wasm32")]

use cronslot_cf::Cronslot;
use worker::{Context, Env, Request, Response, Result, ScheduleContext, ScheduledEvent, event};

// The Durable Object class the wrangler config binds.
pub use cronslot_cf::CronslotJob;

fn app() -> Cronslot {
    Cronslot::precompiled(include_str!(concat!(env!("OUT_DIR"), "/manifest.json")))
        .with_jobs(example_jobs::jobs())
}

/// Loads the manifest and plans the tick while the isolate starts (under
/// the startup limit), not in its first event (under the event's CPU
/// limit).
#[event(start)]
fn start() {
    app().prepare();
}

#[event(scheduled)]
async fn scheduled(event: ScheduledEvent, env: Env, ctx: ScheduleContext) {
    app().scheduled(event, env, ctx).await;
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    app().fetch(req, env, ctx).await
}
