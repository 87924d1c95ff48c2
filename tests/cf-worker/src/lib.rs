//! The Worker of the Cloudflare tests. Besides cronslot's own routes it has
//! one test-only route, `POST /__object/<name>`, that hands a raw object
//! request to the Durable Object of that name (a job's, a schedule
//! object's with its `#` as `%23`, or the tick object): the conformance
//! suite drives the objects through it from Rust, and the tick-cost test
//! reads each object's request count with it. The example Worker has no
//! such route.
#![cfg(target_arch = "wasm32")]

use cronslot_cf::{Cronslot, JobError, RunContext};
use worker::{Context, Env, Request, Response, Result, ScheduleContext, ScheduledEvent, event};

pub use cronslot_cf::CronslotJob;

fn app() -> Cronslot {
    Cronslot::precompiled(include_str!(concat!(env!("OUT_DIR"), "/manifest.json")))
        .register("quick", quick)
        .register("flaky", flaky)
        .register("slow", slow)
        .register("wobbly", flaky)
        .register("tenant", tenant)
        // Few objects for the dynamic job's schedules: the tests list them.
        .schedule_objects(4)
        // Every retry waits for a later tick, which the tests fire.
        .retry_within_event(std::time::Duration::ZERO)
}

async fn quick(ctx: RunContext) -> std::result::Result<(), JobError> {
    let key = ctx.idempotency_key();
    ctx.effect("note", || async move { Ok(format!("noted {key}")) })
        .await?;
    Ok(())
}

async fn flaky(ctx: RunContext) -> std::result::Result<(), JobError> {
    if ctx.attempt() == 1 {
        return Err(JobError::transient("first attempts always fail"));
    }
    Ok(())
}

/// A schedule's run: it must know its key, and its payload must be the
/// JSON object its schedule was written with, naming that key.
async fn tenant(ctx: RunContext) -> std::result::Result<(), JobError> {
    let key = ctx
        .key()
        .ok_or_else(|| JobError::permanent("a schedule's run has no key"))?
        .to_string();
    let payload = ctx.payload().unwrap_or("null");
    if !payload.contains(&format!("\"tenant\":\"{key}\"")) {
        return Err(JobError::permanent(format!(
            "schedule {key} ran with the payload {payload}"
        )));
    }
    Ok(())
}

async fn slow(ctx: RunContext) -> std::result::Result<(), JobError> {
    if ctx.attempt() == 1 {
        worker::Delay::from(std::time::Duration::from_secs(600)).await;
    }
    Ok(())
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
async fn fetch(mut req: Request, env: Env, ctx: Context) -> Result<Response> {
    if let Some(job) = req
        .path()
        .strip_prefix("/__object/")
        .map(|name| name.replace("%23", "#"))
    {
        let body = req.text().await?;
        let stub = env
            .durable_object(cronslot_cf::OBJECT_BINDING)?
            .id_from_name(&job)?
            .get_stub()?;
        let mut init = worker::RequestInit::new();
        init.with_method(worker::Method::Post)
            .with_body(Some(body.into()));
        let forward = Request::new_with_init("https://cronslot.object/op", &init)?;
        return stub.fetch_with_request(forward).await;
    }
    app().fetch(req, env, ctx).await
}
