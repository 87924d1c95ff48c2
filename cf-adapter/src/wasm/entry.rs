//! The Worker's entry points: a user's Worker builds one [`Cronslot`] (the
//! embedded manifest and the job functions) and forwards `scheduled` and
//! `fetch` to it.

use std::rc::Rc;
use std::time::Duration;

use cronslot_core::coord::exec::join_all;
use cronslot_core::coord::{JobError, format_instant};
use cronslot_core::manifest::{Manifest, load_precompiled};
use cronslot_runtime::http::{BODY_EXCERPT, HttpFailure, HttpRequest, HttpResponse};
use cronslot_runtime::{Jobs, LocalFuture, Platform, RunContext, ServeOptions, serve};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use worker::{
    Context, Env, Fetch, Headers, Method, Request, RequestInit, RequestRedirect, Response,
    ScheduleContext, ScheduledEvent, console_error, console_log,
};

use super::transport::StubTransport;
use super::{OBJECT_BINDING, now, random_seed};
use crate::admin::{self, AdminRequest, AdminRoute};
use crate::client::ObjectClient;
use crate::dispatch::dispatch;
use crate::run::{RETRY_WITHIN_EVENT, lines};

type Client = ObjectClient<StubTransport>;

/// A cronslot Worker: the manifest, the registered job functions, and the
/// admin prefix.
pub struct Cronslot {
    manifest: Result<Manifest, String>,
    jobs: Jobs,
    prefix: String,
    retry_within: std::time::Duration,
}

impl Cronslot {
    /// `manifest` is the text of `cronslot.toml`, embedded with
    /// `include_str!`; `file` names it in errors. A bad manifest does not
    /// panic: every event reports it until it is fixed.
    #[cfg(feature = "toml")]
    pub fn new(file: &str, manifest: &str) -> Cronslot {
        Cronslot::with(
            cronslot_core::manifest::parse_manifest(manifest, file).map_err(|e| e.to_string()),
        )
    }

    /// The manifest in its precompiled form (`Manifest::to_precompiled`,
    /// written by a build script that validated `cronslot.toml`): the
    /// Worker then carries no TOML parser.
    pub fn precompiled(json: &str) -> Cronslot {
        Cronslot::with(load_precompiled(json).map_err(|e| e.to_string()))
    }

    fn with(manifest: Result<Manifest, String>) -> Cronslot {
        Cronslot {
            manifest,
            jobs: Jobs::new(),
            prefix: admin::DEFAULT_PREFIX.to_string(),
            retry_within: RETRY_WITHIN_EVENT,
        }
    }

    /// Registers the function that runs the manifest's job `name`.
    pub fn register<F, Fut>(mut self, name: &str, function: F) -> Cronslot
    where
        F: Fn(RunContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), JobError>> + 'static,
    {
        self.jobs = self.jobs.register(name, function);
        self
    }

    /// Uses `jobs` (the runtime's registry, shared with every platform)
    /// for the manifest's function jobs, in place of any registered so far.
    pub fn with_jobs(mut self, jobs: Jobs) -> Cronslot {
        self.jobs = jobs;
        self
    }

    /// Moves the admin routes (default `/cronslot`).
    pub fn admin_prefix(mut self, prefix: &str) -> Cronslot {
        self.prefix = prefix.to_string();
        self
    }

    /// How soon a retry must be due to be waited for within the event that
    /// failed (default 30 s); later retries wait for a tick. Zero leaves
    /// every retry to a later tick.
    pub fn retry_within_event(mut self, wait: std::time::Duration) -> Cronslot {
        self.retry_within = wait;
        self
    }

    /// The manifest, checked against the registered functions.
    fn checked(&self) -> Result<&Manifest, String> {
        let manifest = self.manifest.as_ref().map_err(Clone::clone)?;
        let platform = WorkerPlatform {
            clock: Rc::new(now),
        };
        self.jobs
            .check(&manifest.jobs, &platform)
            .map(|()| manifest)
            .map_err(|e| e.to_string())
    }

    fn client(env: &Env) -> worker::Result<Rc<Client>> {
        let namespace = env.durable_object(OBJECT_BINDING)?;
        Ok(Rc::new(ObjectClient::new(StubTransport::new(namespace))))
    }

    /// Serves a Cron Trigger event: the jobs it is for, concurrently, each
    /// claimed through its object and run here.
    pub async fn scheduled(&self, event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
        let manifest = match self.checked() {
            Ok(m) => m,
            Err(e) => {
                log(&json!({"msg": "manifest refused: nothing runs", "error": e}));
                return;
            }
        };
        let client = match Cronslot::client(&env) {
            Ok(c) => c,
            Err(e) => {
                log(
                    &json!({"msg": "no Durable Object binding", "binding": OBJECT_BINDING, "error": e.to_string()}),
                );
                return;
            }
        };
        let scheduled =
            Timestamp::from_millisecond(event.schedule() as i64).unwrap_or_else(|_| now());
        let cron = event.cron();
        let plan = dispatch(manifest, &cron, scheduled);
        if plan.unknown_cron {
            log(&json!({
                "msg": "cron matches no job of the manifest: served as a tick; re-render wrangler.toml",
                "cron": cron,
            }));
        }
        // The event's scheduled time is the trigger time; the run's clock
        // advances from it with the runtime's.
        let started = now();
        let clock: Rc<dyn Fn() -> Timestamp> = Rc::new(move || {
            scheduled
                .checked_add(now().duration_since(started).max(SignedDuration::ZERO))
                .unwrap_or(Timestamp::MAX)
        });
        let owner = format!("cf:{}:{:016x}", format_instant(scheduled), random_seed());
        let platform: Rc<dyn Platform> = Rc::new(WorkerPlatform { clock });
        let runs = plan.jobs.iter().map(|(spec, trigger)| {
            let spec = Rc::new((*spec).clone());
            let (client, platform, owner) = (client.clone(), platform.clone(), owner.as_str());
            let jobs = &self.jobs;
            let retry_within = self.retry_within;
            let trigger = *trigger;
            async move {
                let options = ServeOptions {
                    owner,
                    trigger,
                    retry_within,
                    more_due: None,
                };
                let served = serve(&client, &spec, jobs, &platform, &options).await;
                lines(spec.name.as_str(), &served)
            }
        });
        for lines in join_all(runs.collect()).await {
            for line in lines {
                log(&line);
            }
        }
    }

    /// Serves the admin routes; anything else is 404.
    pub async fn fetch(&self, req: Request, env: Env, _ctx: Context) -> worker::Result<Response> {
        let manifest = match self.checked() {
            Ok(m) => m,
            Err(e) => {
                return reply(admin::Reply::error(
                    500,
                    admin::ErrorKind::Internal,
                    format!("manifest refused: {e}"),
                ));
            }
        };
        // The path and query are cut from the serialised URL by hand: the
        // `url` crate (and its IDNA tables) would add ~100 KB to the module.
        let path = req.path();
        let full = req.inner().url();
        let query = full
            .split('#')
            .next()
            .and_then(|u| u.split_once('?'))
            .map(|(_, q)| q.to_string());
        let authorization = req.headers().get("Authorization")?;
        let method = req.method().to_string();
        let request = AdminRequest {
            method: &method,
            path: &path,
            query: query.as_deref(),
            authorization: authorization.as_deref(),
        };
        let token = env.secret(admin::TOKEN_SECRET).ok().map(|s| s.to_string());
        let route = match admin::route(&self.prefix, manifest, &request, token.as_deref()) {
            None => return Response::error("not found", 404),
            Some(Err(reply_)) => return reply(reply_),
            Some(Ok(route)) => route,
        };
        let client = Cronslot::client(&env)?;
        if let AdminRoute::Trigger { job } = &route {
            let Some(spec) = manifest.jobs.iter().find(|j| j.name == *job) else {
                return Response::error("not found", 404);
            };
            let spec = Rc::new(spec.clone());
            let owner = format!("cf:manual:{:016x}", random_seed());
            let platform: Rc<dyn Platform> = Rc::new(WorkerPlatform {
                clock: Rc::new(now),
            });
            let outcome = admin::trigger_run(&spec, &client, &owner, &self.jobs, &platform).await;
            return reply(admin::trigger_reply(&spec, &outcome));
        }
        reply(admin::execute(&route, manifest, &*client, now()).await)
    }
}

fn reply(r: admin::Reply) -> worker::Result<Response> {
    let headers = Headers::new();
    headers.set("Content-Type", r.content_type)?;
    for (name, value) in &r.headers {
        headers.append(name, value)?;
    }
    Ok(Response::ok(r.body)?
        .with_status(r.status)
        .with_headers(headers))
}

fn log(line: &Value) {
    if line.get("error").is_some() && line.get("outcome").is_none_or(|o| o != "failed") {
        console_error!("{line}");
    } else {
        console_log!("{line}");
    }
}

/// The Worker as a runtime [`Platform`]: its clock (anchored at the
/// event's scheduled time for a Cron Trigger), JavaScript timers, and
/// `fetch` for `http` jobs. A Worker has no processes.
struct WorkerPlatform {
    clock: Rc<dyn Fn() -> Timestamp>,
}

impl Platform for WorkerPlatform {
    fn name(&self) -> &'static str {
        "a Worker"
    }

    fn now(&self) -> Timestamp {
        (self.clock)()
    }

    fn sleep(&self, duration: Duration) -> LocalFuture<'static, ()> {
        Box::pin(worker::Delay::from(duration))
    }

    fn send_http(
        &self,
        request: HttpRequest,
    ) -> LocalFuture<'static, Result<HttpResponse, HttpFailure>> {
        Box::pin(send(request))
    }
}

/// Sends an `http` job's request with the Worker's `fetch`, redirects
/// not followed. Dropping the future (the run loop's timeout) abandons it.
async fn send(request: HttpRequest) -> Result<HttpResponse, HttpFailure> {
    let permanent = |what: String, e: worker::Error| HttpFailure {
        permanent: true,
        message: format!("{what}: {e}"),
    };
    let headers = Headers::new();
    for (name, value) in &request.headers {
        headers
            .set(name, value)
            .map_err(|e| permanent(format!("header {name:?}"), e))?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::from(request.method.as_str().to_string()))
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual);
    let outgoing = Request::new_with_init(&request.url, &init)
        .map_err(|e| permanent(format!("request to {}", request.url), e))?;
    let mut response = Fetch::Request(outgoing)
        .send()
        .await
        .map_err(|e| HttpFailure {
            permanent: false,
            message: e.to_string(),
        })?;
    let status = response.status_code();
    let mut body = Vec::new();
    if !(200..300).contains(&status) {
        body = response.bytes().await.unwrap_or_default();
        body.truncate(BODY_EXCERPT);
    }
    Ok(HttpResponse { status, body })
}
