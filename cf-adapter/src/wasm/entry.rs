//! The Worker's entry points: a user's Worker builds one [`Cronslot`] (the
//! embedded manifest and the job functions) and forwards `scheduled` and
//! `fetch` to it.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use cronslot_core::coord::exec::join_all;
use cronslot_core::coord::{CoordError, JobError, format_instant};
use cronslot_core::manifest::{JobSpec, Manifest, load_precompiled};
use cronslot_runtime::http::{BODY_EXCERPT, HttpFailure, HttpRequest, HttpResponse};
use cronslot_runtime::{
    Jobs, LocalFuture, Platform, RunContext, ServeOptions, TickOptions, TickPlan, serve, tick,
};
use jiff::{SignedDuration, Timestamp};
use worker::{
    Context, Env, Fetch, Headers, Request, Response, ScheduleContext, ScheduledEvent,
    console_error, console_log,
};

use super::transport::StubTransport;
use super::{OBJECT_BINDING, now, random_seed};
use crate::admin::{self, AdminRequest};
use crate::client::{ObjectClient, TickClient};
use crate::dispatch::{dispatch, is_tick, tick_planned};
use crate::run::{Line, RETRY_WITHIN_EVENT, lines, tick_lines};

type Client = ObjectClient<StubTransport>;

/// A manifest as loaded, and the tick's plan over it once a tick needs it.
struct Loaded {
    manifest: Result<Manifest, String>,
    plan: RefCell<Option<Rc<TickPlan>>>,
}

/// The manifest text last loaded in this isolate, and what it gave: a
/// Worker builds its `Cronslot` for every event, and a manifest of
/// thousands of jobs is loaded (and its tick plan built) once per isolate.
/// The text is recognised by its address and length (a Worker embeds it
/// with `include_str!`: the same static bytes at every event) and a sample
/// of its bytes; comparing all of it would cost more than planning a tick
/// (about 25 ms for the 8 MB of ten thousand jobs, in V8).
struct LoadCache {
    address: usize,
    sample: Vec<u8>,
    loaded: Rc<Loaded>,
}

thread_local! {
    static LOADED: RefCell<Option<LoadCache>> = const { RefCell::new(None) };
}

/// The first and last 256 bytes of `text` and every 4096th between.
fn sample(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut out: Vec<u8> = bytes[..n.min(256)].to_vec();
    out.extend(bytes.iter().step_by(4096));
    out.extend(&bytes[n.saturating_sub(256)..]);
    out.extend(n.to_le_bytes());
    out
}

/// `text` loaded with `load`, or the isolate's earlier load of the same text.
fn load_once(text: &str, load: impl FnOnce(&str) -> Result<Manifest, String>) -> Rc<Loaded> {
    let address = text.as_ptr() as usize;
    let cached = LOADED.with(|c| {
        c.borrow()
            .as_ref()
            .filter(|c| c.address == address && c.sample == sample(text))
            .map(|c| c.loaded.clone())
    });
    if let Some(loaded) = cached {
        return loaded;
    }
    let loaded = Rc::new(Loaded {
        manifest: load(text),
        plan: RefCell::new(None),
    });
    LOADED.with(|c| {
        *c.borrow_mut() = Some(LoadCache {
            address,
            sample: sample(text),
            loaded: loaded.clone(),
        });
    });
    loaded
}

/// A cronslot Worker: the manifest, the registered job functions, and the
/// admin prefix.
pub struct Cronslot {
    loaded: Rc<Loaded>,
    jobs: Jobs,
    prefix: String,
    retry_within: std::time::Duration,
    max_jobs_per_tick: usize,
    #[cfg(feature = "schedules")]
    schedule_objects: u32,
}

/// The most jobs one tick serves unless told otherwise
/// ([`Cronslot::max_jobs_per_tick`]). Each job costs the invocation at
/// most four subrequests (a schedule's read of its spec, the claim and the
/// completion, all requests to Durable Objects, and an http job's
/// request), the tick object two per tick: 240 jobs stay within the 1,000
/// subrequests per invocation of the Workers Paid plan
/// (docs/performance.md, "Platform limits"). The jobs left are served by
/// the next tick: the mark stays before their slots, and the tick object
/// keeps their wakes.
pub const DEFAULT_MAX_JOBS_PER_TICK: usize = 240;

impl Cronslot {
    /// `manifest` is the text of `cronslot.toml`, embedded with
    /// `include_str!`; `file` names it in errors. A bad manifest does not
    /// panic: every event reports it until it is fixed.
    #[cfg(feature = "toml")]
    pub fn new(file: &str, manifest: &str) -> Cronslot {
        Cronslot::with(load_once(manifest, |text| {
            cronslot_core::manifest::parse_manifest(text, file).map_err(|e| e.to_string())
        }))
    }

    /// The manifest in its precompiled form (`Manifest::to_precompiled`,
    /// written by a build script that validated `cronslot.toml`): the
    /// Worker then carries no TOML parser.
    /// The manifest is loaded once per isolate (and again only if the text
    /// differs).
    pub fn precompiled(json: &str) -> Cronslot {
        Cronslot::with(load_once(json, |text| {
            load_precompiled(text).map_err(|e| e.to_string())
        }))
    }

    fn with(loaded: Rc<Loaded>) -> Cronslot {
        Cronslot {
            loaded,
            jobs: Jobs::new(),
            prefix: admin::DEFAULT_PREFIX.to_string(),
            retry_within: RETRY_WITHIN_EVENT,
            max_jobs_per_tick: DEFAULT_MAX_JOBS_PER_TICK,
            #[cfg(feature = "schedules")]
            schedule_objects: crate::protocol::DEFAULT_SCHEDULE_OBJECTS,
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

    /// Loads the manifest and builds the tick's plan now, rather than in
    /// the first event of the isolate. Call it from the Worker's
    /// `#[event(start)]`: that runs while the isolate starts, under the
    /// startup limit (1 s of CPU), not the event's (10 ms on the Workers
    /// Free plan), and loading 10,000 jobs takes about 30 ms in V8
    /// (docs/performance.md). A bad manifest is reported by every event,
    /// as without it.
    pub fn prepare(&self) {
        if let Ok(manifest) = self.loaded.manifest.as_ref() {
            self.plan(manifest);
        }
    }

    /// The most jobs one tick serves (default
    /// [`DEFAULT_MAX_JOBS_PER_TICK`]): at most the plan's subrequests per
    /// invocation, less two, divided by the subrequests a job makes (two,
    /// plus its own fetches and effects). On the Workers Free plan (50
    /// subrequests) with http jobs: 15. At least 1.
    pub fn max_jobs_per_tick(mut self, jobs: usize) -> Cronslot {
        self.max_jobs_per_tick = jobs.max(1);
        self
    }

    /// How many Durable Objects each dynamic job's schedules are spread
    /// over (default
    /// [`DEFAULT_SCHEDULE_OBJECTS`](crate::protocol::DEFAULT_SCHEDULE_OBJECTS),
    /// 1 to [`MAX_SCHEDULE_OBJECTS`](crate::protocol::MAX_SCHEDULE_OBJECTS)).
    /// One object serves about 1,000 requests a second and a run costs
    /// three, so a job whose schedules start more than about 300 slots a
    /// second per object at its busiest minute needs more; a listing reads
    /// every object once a page. Chosen before the first schedule is
    /// written: the count decides which object holds each key, and the
    /// objects refuse requests that count otherwise (docs/guide/schedules.md).
    #[cfg(feature = "schedules")]
    pub fn schedule_objects(mut self, objects: u32) -> Cronslot {
        self.schedule_objects = objects.clamp(1, crate::protocol::MAX_SCHEDULE_OBJECTS);
        self
    }

    /// The manifest, checked against the registered functions.
    fn checked(&self) -> Result<&Manifest, String> {
        let manifest = self.loaded.manifest.as_ref().map_err(Clone::clone)?;
        #[cfg(not(feature = "schedules"))]
        if let Some(t) = manifest.templates.first() {
            return Err(format!(
                "job {:?} is dynamic, and this Worker is built without cronslot-cf's feature \
                 `schedules`, which serves the schedules of dynamic jobs",
                t.name.as_str()
            ));
        }
        let platform = WorkerPlatform {
            clock: Rc::new(now),
        };
        self.jobs
            .check_all(&manifest.jobs, &manifest.templates, &platform)
            .map(|()| manifest)
            .map_err(|e| e.to_string())
    }

    /// The tick's plan over every job of the manifest, built once per
    /// isolate.
    fn plan(&self, manifest: &Manifest) -> Rc<TickPlan> {
        if let Some(plan) = self.loaded.plan.borrow().as_ref() {
            return plan.clone();
        }
        let specs = manifest.jobs.iter().cloned().map(Rc::new).collect();
        let templates = manifest.templates.iter().cloned().map(Rc::new).collect();
        let plan = Rc::new(TickPlan::new(specs, tick_planned).with_templates(templates));
        *self.loaded.plan.borrow_mut() = Some(plan.clone());
        plan
    }

    fn client(&self, env: &Env) -> worker::Result<Rc<Client>> {
        let namespace = env.durable_object(OBJECT_BINDING)?;
        let client = ObjectClient::new(StubTransport::new(namespace));
        #[cfg(feature = "schedules")]
        let client = client.with_schedule_objects(self.schedule_objects);
        Ok(Rc::new(client))
    }

    /// Serves a Cron Trigger event, its jobs concurrently, each claimed
    /// through its object and run here: for the tick, the jobs with a slot
    /// since the last tick and those the tick object woke (the runtime's
    /// `tick`); for a dedicated cron, its jobs at the event's slot.
    pub async fn scheduled(&self, event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
        let manifest = match self.checked() {
            Ok(m) => m,
            Err(e) => {
                log(&Line::failure("manifest refused: nothing runs", e));
                return;
            }
        };
        let client = match self.client(&env) {
            Ok(c) => c,
            Err(e) => {
                log(&Line::Note {
                    binding: Some(OBJECT_BINDING),
                    cron: None,
                    error: Some(e.to_string()),
                    job: None,
                    msg: "no Durable Object binding",
                });
                return;
            }
        };
        let scheduled =
            Timestamp::from_millisecond(event.schedule() as i64).unwrap_or_else(|_| now());
        let cron = event.cron();
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
        let more_due = |spec: &JobSpec, at: Timestamp| {
            client.more_due(&spec.record_name(), at, self.retry_within)
        };
        let plan = if is_tick(&cron) {
            None
        } else {
            let plan = dispatch(manifest, &cron, scheduled);
            if plan.unknown_cron {
                log(&Line::Note {
                    binding: None,
                    cron: Some(cron.as_str()),
                    error: None,
                    job: None,
                    msg: "cron matches no job of the manifest: served as a tick; re-render wrangler.toml",
                });
                None
            } else {
                Some(plan)
            }
        };
        let Some(plan) = plan else {
            // The tick: only the jobs with a slot since the last tick and
            // those the tick object woke are claimed.
            let index = TickClient::new(client.transport());
            let options = TickOptions {
                owner: &owner,
                // The invocation's subrequests are bounded; what a tick
                // leaves, the next serves (`TickClient` keeps the wakes of
                // woken jobs left).
                max_jobs: Some(self.max_jobs_per_tick),
                retry_within: self.retry_within,
                more_due: Some(&more_due),
            };
            let tick_plan = self.plan(manifest);
            match tick(&tick_plan, &client, &index, &self.jobs, &platform, &options).await {
                Ok(report) => {
                    for line in tick_lines(&report) {
                        log(&line);
                    }
                }
                Err(e) => log(&Line::failure(
                    "tick not started: the tick object did not answer (the next tick serves this one's jobs)",
                    e.to_string(),
                )),
            }
            return;
        };
        // A dedicated cron: its jobs, each claimed with the event's slot.
        let runs = plan.jobs.iter().map(|(spec, trigger)| {
            let spec = Rc::new((*spec).clone());
            let (client, platform, owner) = (client.clone(), platform.clone(), owner.as_str());
            let jobs = &self.jobs;
            let retry_within = self.retry_within;
            let trigger = *trigger;
            let more_due = &more_due;
            async move {
                let options = ServeOptions {
                    owner,
                    trigger,
                    retry_within,
                    more_due: Some(more_due),
                };
                let served = serve(&client, &spec, jobs, &platform, &options).await;
                lines(spec.name.as_str(), &served)
                    .iter()
                    .map(|line| (line.is_error(), line.json()))
                    .collect::<Vec<_>>()
            }
        });
        for lines in join_all(runs.collect()).await {
            for (error, text) in lines {
                emit(error, &text);
            }
        }
    }

    /// Serves the admin routes; anything else is 404.
    pub async fn fetch(
        &self,
        #[allow(unused_mut)] mut req: Request,
        env: Env,
        _ctx: Context,
    ) -> worker::Result<Response> {
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
        #[cfg(feature = "schedules")]
        let (if_match, if_none_match) = (
            req.headers().get("If-Match")?,
            req.headers().get("If-None-Match")?,
        );
        #[cfg(feature = "schedules")]
        let limit = {
            let token = env.secret(admin::TOKEN_SECRET).ok().map(|s| s.to_string());
            let path = &path;
            match admin::body_limit_for(
                &self.prefix,
                &method,
                path,
                authorization.as_deref(),
                token.as_deref(),
            ) {
                Ok(limit) => limit,
                Err(refused) => return reply(refused),
            }
        };
        #[cfg(feature = "schedules")]
        let body = match read_body(&mut req, &method, limit).await? {
            Ok(body) => body,
            Err(refused) => return reply(refused),
        };
        let request = AdminRequest {
            method: &method,
            path: &path,
            query: query.as_deref(),
            authorization: authorization.as_deref(),
            #[cfg(feature = "schedules")]
            if_match: if_match.as_deref(),
            #[cfg(feature = "schedules")]
            if_none_match: if_none_match.as_deref(),
            #[cfg(feature = "schedules")]
            body: body.as_deref(),
        };
        let token = env.secret(admin::TOKEN_SECRET).ok().map(|s| s.to_string());
        let route = match admin::route(&self.prefix, manifest, &request, token.as_deref()) {
            None => return Response::error("not found", 404),
            Some(Err(reply_)) => return reply(reply_),
            Some(Ok(route)) => route,
        };
        let host = WorkerHost {
            client: self.client(&env)?,
            jobs: &self.jobs,
        };
        reply(admin::dispatch(&route, manifest, &host, now()).await)
    }
}

/// The Worker as the admin routes' host: each job's Durable Object through
/// its client, the registered functions, and the isolate's clock.
struct WorkerHost<'a> {
    client: Rc<Client>,
    jobs: &'a Jobs,
}

impl admin::AdminHost for WorkerHost<'_> {
    type Coordinator = Client;

    fn coordinator(&self) -> &Rc<Client> {
        &self.client
    }

    fn trigger_owner(&self) -> String {
        format!("cf:manual:{:016x}", random_seed())
    }

    fn jobs(&self) -> &Jobs {
        self.jobs
    }

    fn platform(&self) -> Rc<dyn Platform> {
        Rc::new(WorkerPlatform {
            clock: Rc::new(now),
        })
    }

    /// Not carried: it would not fit the Worker's size budget
    /// (docs/performance.md, "Worker size"); the route answers 404 saying
    /// where the document is.
    fn openapi(&self) -> Option<&'static str> {
        None
    }

    async fn repair_wake(&self, job: &str) -> Result<Option<Timestamp>, CoordError> {
        self.client.repair_wake(job).await
    }

    /// The schedules of the manifest's dynamic jobs, in their objects.
    #[cfg(feature = "schedules")]
    async fn schedule_route(
        &self,
        route: &admin::AdminRoute,
        manifest: &Manifest,
        now: Timestamp,
    ) -> admin::Reply {
        admin::execute_schedule(route, manifest, &*self.client, now).await
    }

    #[cfg(feature = "schedules")]
    async fn schedule_spec(
        &self,
        manifest: &Manifest,
        job: &cronslot_core::manifest::JobName,
        key: &cronslot_core::schedules::ScheduleKey,
    ) -> Result<JobSpec, admin::Reply> {
        admin::schedule_job_spec(&*self.client, manifest, job, key).await
    }

    /// The keyed runs of the manifest's dynamic jobs, each in the object
    /// its key names; the next tick (within a minute) starts a run due now.
    #[cfg(feature = "schedules")]
    async fn run_route(
        &self,
        route: &admin::AdminRoute,
        manifest: &Manifest,
        now: Timestamp,
    ) -> admin::Reply {
        admin::execute_run(route, manifest, &*self.client, now).await
    }
}

/// The body of a `PUT` (a schedule's spec, a keyed run's request) or of
/// a bulk write, at most `limit` bytes ([`admin::body_limit`]); other
/// requests' bodies are not read (no other route takes one).
#[cfg(feature = "schedules")]
async fn read_body(
    req: &mut Request,
    method: &str,
    limit: usize,
) -> worker::Result<Result<Option<String>, admin::Reply>> {
    if method != "PUT" && limit <= admin::MAX_BODY_BYTES {
        return Ok(Ok(None));
    }
    let declared = req.headers().get("Content-Length")?;
    if declared
        .and_then(|n| n.trim().parse::<usize>().ok())
        .is_some_and(|n| n > limit)
    {
        return Ok(Err(admin::body_too_large_for(limit)));
    }
    Ok(admin::body_text_within(req.bytes().await?, limit))
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

fn log(line: &Line<'_>) {
    emit(line.is_error(), &line.json());
}

/// Writes one log line: to the error log if it reports an error.
fn emit(error: bool, text: &str) {
    if error {
        console_error!("{text}");
    } else {
        console_log!("{text}");
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
    let outgoing = super::outgoing::request(
        &request.url,
        request.method.as_str(),
        Some(&headers),
        request.body.as_deref(),
        true,
    )
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
