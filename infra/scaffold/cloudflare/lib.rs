//! A Cloudflare Worker that runs this project's jobs: Cron Triggers fire it
//! (wrangler.toml), a Durable Object per job makes each slot run once in
//! effect, and `/cronslot/...` serves the admin routes (token: the secret
//! `CRONSLOT_ADMIN_TOKEN`).
//!
//! The manifest, `cronslot.toml`, is validated by `build.rs` and embedded
//! precompiled: a manifest error fails the build.
#![cfg(target_arch = "wasm32")]

mod jobs;

use cronslot_cf::Cronslot;
use worker::{Context, Env, Request, Response, Result, ScheduleContext, ScheduledEvent, event};

// The Durable Object class wrangler.toml binds.
pub use cronslot_cf::CronslotJob;

fn app() -> Cronslot {
    Cronslot::precompiled(include_str!(concat!(env!("OUT_DIR"), "/manifest.json")))
        .with_jobs(jobs::jobs())
}

/// Loads the manifest and plans the tick while the isolate starts (under
/// the startup limit), not in its first event.
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
