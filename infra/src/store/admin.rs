//! `--store https://HOST/PREFIX --token-env VAR`: the store commands over a
//! Cloudflare Worker's admin routes (`cronslot_runtime::admin`).
//!
//! [`AdminStore`] is one more [`Coordinator`] + [`Records`]: `status`,
//! `record`, `pause`, `resume`, `redrive` and `backfill` become the routes'
//! requests, and the replies are read with the very types the Worker
//! writes them with. Running a slot (claim, complete, fail, heartbeat,
//! effects) happens in the Worker, not over this API: those operations fail
//! with a message saying so, and `trigger` asks the Worker to run the job
//! (`POST {p}/jobs/{job}/trigger`).
//!
//! The Worker's clock decides what is due: the `now` the commands pass is
//! not sent. The token travels only in the `Authorization` header, only to
//! the URL given (redirects are not followed), over TLS unless the host is
//! this machine (`http://localhost…` for `wrangler dev` and tests).
#![allow(async_fn_in_trait)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use cronslot_core::coord::{CoordError, JobState, Operator, StoreError, StoreErrorKind};
use cronslot_core::manifest::{JobSpec, JobTemplate};
use cronslot_core::schedules::ScheduleKey;
use cronslot_runtime::admin::{
    BackfillDoc, ErrorDoc, ErrorKind, JobErrorDoc, JobReport, PauseDoc, RedriveDoc, RepairDoc,
    RepairedJob, ScheduleDoc, StatusDoc, TOKEN_SECRET, TriggerDoc,
};
use jiff::Timestamp;
use reqwest::{Method, Url};
use serde::de::DeserializeOwned;

use super::records::Records;
use super::runtime::runtime_available;
use crate::exit::Failure;

/// How long to wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request may take (a trigger: the job's lease on top, since
/// the Worker runs the job before it answers).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The admin token; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// A Worker's admin routes as `--store` and `--token-env` name them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub base_url: String,
    pub token_env: String,
    pub token: Token,
}

/// Parses `http(s)://HOST[:PORT]/PREFIX` and reads the token from the
/// variable `--token-env` names.
pub fn parse_target(url: &str, token_env: Option<&str>) -> Result<Target, Failure> {
    let bad = |why: String| Failure::bad_input(format!("error: --store {url:?}: {why}"));
    let parsed = Url::parse(url).map_err(|e| bad(format!("not a valid URL: {e}")))?;
    let Some(host) = parsed.host_str().filter(|h| !h.is_empty()) else {
        return Err(bad(
            "the URL has no host; write https://HOST/cronslot".into()
        ));
    };
    let loopback = is_loopback(host);
    if parsed.scheme() == "http" && !loopback {
        return Err(bad(
            "plain http:// would send the admin token unencrypted; use https:// \
             (http:// is accepted only for localhost, e.g. `wrangler dev`)"
                .into(),
        ));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad(
            "the URL carries credentials; put the admin token in an environment variable \
             and name it with --token-env"
                .into(),
        ));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(bad(
            "the URL has a query or fragment; give the Worker's admin prefix only, \
             e.g. https://jobs.example.com/cronslot"
                .into(),
        ));
    }
    let base_url = parsed.as_str().trim_end_matches('/').to_string();
    let Some(var) = token_env else {
        return Err(Failure::bad_input(format!(
            "error: --store {base_url} needs --token-env VAR: the name of the environment variable \
             holding the Worker's admin token (its {TOKEN_SECRET} secret)"
        )));
    };
    let var = var.trim();
    if var.is_empty() {
        return Err(Failure::bad_input(
            "error: --token-env: the environment variable's name is empty".to_string(),
        ));
    }
    let token = match std::env::var(var) {
        Ok(t) if !t.trim().is_empty() => t.trim().to_string(),
        Ok(_) => {
            return Err(Failure::bad_input(format!(
                "error: --token-env {var}: the environment variable {var} is empty; \
                 set it to the Worker's admin token (its {TOKEN_SECRET} secret)"
            )));
        }
        Err(std::env::VarError::NotPresent) => {
            return Err(Failure::bad_input(format!(
                "error: --token-env {var}: the environment variable {var} is not set; \
                 export it with the Worker's admin token (its {TOKEN_SECRET} secret)"
            )));
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(Failure::bad_input(format!(
                "error: --token-env {var}: the environment variable {var} is not valid UTF-8"
            )));
        }
    };
    Ok(Target {
        base_url,
        token_env: var.to_string(),
        token: Token(token),
    })
}

/// What [`AdminStore::repair`] did over all its pages.
#[derive(Debug, Default)]
pub struct RepairTotals {
    /// Jobs whose objects were looked at.
    pub checked: usize,
    /// Records given a wake.
    pub repaired: Vec<RepairedJob>,
    /// Records that do not decode, left as they are.
    pub unreadable: Vec<JobErrorDoc>,
}

/// The Worker's admin routes as a store.
pub struct AdminStore {
    base_url: String,
    token_env: String,
    token: Token,
    client: reqwest::Client,
    /// Job reports read since the last write, so a command that reads a
    /// job twice (its record, then its status) asks once.
    reports: RefCell<BTreeMap<String, JobReport>>,
}

impl AdminStore {
    pub fn new(target: &Target) -> Result<AdminStore, String> {
        let Target {
            base_url,
            token_env,
            token,
        } = target;
        if !runtime_available() {
            return Err("cannot start the async runtime the HTTP client needs".into());
        }
        let mut builder = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            // The token goes to this URL and nowhere else.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("cronslot/", env!("CARGO_PKG_VERSION")));
        if Url::parse(base_url)
            .ok()
            .is_some_and(|u| u.host_str().is_some_and(is_loopback))
        {
            // A local Worker is never behind the environment's proxy.
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {}", chain(&e)))?;
        Ok(AdminStore {
            base_url: base_url.to_string(),
            token_env: token_env.to_string(),
            token: token.clone(),
            client,
            reports: RefCell::new(BTreeMap::new()),
        })
    }

    fn url(&self, route: &str, query: &[(&str, String)]) -> Result<Url, CoordError> {
        let mut url = Url::parse(&format!("{}/{route}", self.base_url)).map_err(|e| {
            CoordError::Store(StoreError::other(format!(
                "cannot build a URL from {}: {e}",
                self.base_url
            )))
        })?;
        if !query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in query {
                pairs.append_pair(k, v);
            }
        }
        Ok(url)
    }

    /// Sends one request; `(status, body)` of any answer, an error when
    /// there was none.
    async fn send(
        &self,
        method: Method,
        url: &Url,
        timeout: Duration,
    ) -> Result<(u16, String), CoordError> {
        let response = self
            .client
            .request(method, url.clone())
            .bearer_auth(&self.token.0)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| self.transport_error(url, &e))?;
        let status = response.status().as_u16();
        let body = response
            .text()
            .await
            .map_err(|e| self.transport_error(url, &e))?;
        Ok((status, body))
    }

    fn transport_error(&self, url: &Url, e: &reqwest::Error) -> CoordError {
        let what = if e.is_connect() {
            format!("cannot connect to {url}")
        } else if e.is_timeout() {
            format!("no answer from {url} in time")
        } else {
            format!("request to {url} failed")
        };
        // reqwest's own text repeats the URL: its causes say what happened.
        let why = match std::error::Error::source(e) {
            Some(cause) => chain(cause),
            None => e.to_string(),
        };
        CoordError::Store(StoreError::unavailable(format!("{what}: {why}")))
    }

    /// A 2xx answer's JSON, or the error the answer means.
    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        route: &str,
        query: &[(&str, String)],
    ) -> Result<T, CoordError> {
        let url = self.url(route, query)?;
        if method != Method::GET {
            self.reports.borrow_mut().clear();
        }
        let (status, body) = self.send(method, &url, REQUEST_TIMEOUT).await?;
        if !(200..300).contains(&status) {
            return Err(self.error_from(&url, status, &body));
        }
        serde_json::from_str(&body).map_err(|e| {
            CoordError::Store(StoreError::other(format!(
                "{url} answered HTTP {status} with something other than cronslot's admin JSON ({e}): {}",
                excerpt(&body)
            )))
        })
    }

    /// What a non-2xx answer means, as the coordinator error the commands
    /// already explain: the core's refusals are rebuilt from the reply.
    fn error_from(&self, url: &Url, status: u16, body: &str) -> CoordError {
        let doc: Option<ErrorDoc> = serde_json::from_str(body).ok();
        let message = doc
            .as_ref()
            .map(|d| d.message.clone())
            .unwrap_or_else(|| excerpt(body));
        if let Some(doc) = &doc {
            if let Some(b) = &doc.backfill {
                return CoordError::Backfill(b.clone());
            }
            if let Some(t) = &doc.trigger {
                return CoordError::Trigger(t.clone());
            }
        }
        let kind = doc.as_ref().map(|d| d.error);
        let text = match (status, kind) {
            (401, _) => format!(
                "token refused by the Worker at {} (HTTP 401): check that ${} holds the Worker's \
                 {TOKEN_SECRET} secret",
                self.base_url, self.token_env
            ),
            (_, Some(ErrorKind::NotConfigured)) => {
                format!(
                    "the Worker at {} refuses admin requests: {message}",
                    self.base_url
                )
            }
            (404, None) => format!(
                "no cronslot admin routes at {url} (HTTP 404): is the prefix in --store right? \
                 The Worker's default is /cronslot, e.g. https://HOST/cronslot"
            ),
            (300..=399, _) => format!(
                "{url} answered with a redirect (HTTP {status}); give the final URL in --store \
                 (redirects are not followed, so the token is only ever sent to that URL)"
            ),
            _ => format!("HTTP {status} from {url}: {message}"),
        };
        let transient =
            matches!(status, 429 | 502 | 503 | 504) && kind != Some(ErrorKind::NotConfigured);
        let kind = if transient {
            StoreErrorKind::Unavailable
        } else {
            StoreErrorKind::Other
        };
        CoordError::Store(StoreError::new(kind, text))
    }

    /// The job's report from `GET {p}/status?job=J` (or from this command's
    /// earlier read).
    /// `GET {p}/schedules/{job}/{key}`: the schedule's spec in force, as
    /// the spec its slots run with (for an operation on the schedule).
    pub async fn schedule_spec(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
    ) -> Result<JobSpec, CoordError> {
        let doc = self.schedule_doc(template.name.as_str(), key).await?;
        template.for_schedule(key, &doc.spec).map_err(|p| {
            CoordError::Store(StoreError::other(format!(
                "{}: the schedule {:?} of job {:?} has a spec this cronslot cannot run: {p}",
                self.base_url,
                key.as_str(),
                template.name.as_str()
            )))
        })
    }

    async fn schedule_doc(&self, job: &str, key: &ScheduleKey) -> Result<ScheduleDoc, CoordError> {
        self.call(
            Method::GET,
            &format!("schedules/{job}/{}", key.as_str()),
            &[],
        )
        .await
    }

    /// The status of `spec`'s record: a job's from `status`, a schedule's
    /// from its own route.
    async fn report_of(&self, spec: &JobSpec) -> Result<JobReport, CoordError> {
        match &spec.key {
            None => self.report(spec.name.as_str()).await,
            Some(key) => Ok(self.schedule_doc(spec.name.as_str(), key).await?.status),
        }
    }

    async fn report(&self, job: &str) -> Result<JobReport, CoordError> {
        if let Some(r) = self.reports.borrow().get(job) {
            return Ok(r.clone());
        }
        let doc: StatusDoc = self
            .call(Method::GET, "status", &[("job", job.to_string())])
            .await?;
        let report = doc.jobs.into_iter().find(|j| j.job == job).ok_or_else(|| {
            CoordError::Store(StoreError::other(format!(
                "the Worker at {} sent no status for job {job:?}",
                self.base_url
            )))
        })?;
        self.reports
            .borrow_mut()
            .insert(job.to_string(), report.clone());
        Ok(report)
    }

    /// `POST {p}/jobs/{job}/trigger`: the Worker runs the job's current slot
    /// and answers when it is done.
    pub async fn trigger(&self, spec: &JobSpec) -> Result<TriggerDoc, CoordError> {
        let url = self.url(
            &format!("jobs/{}/trigger", spec.name.as_str()),
            &key_query(spec),
        )?;
        self.reports.borrow_mut().clear();
        let timeout = REQUEST_TIMEOUT.saturating_add(spec.lease);
        let (status, body) = self.send(Method::POST, &url, timeout).await?;
        match serde_json::from_str::<TriggerDoc>(&body) {
            Ok(doc) => Ok(doc),
            Err(_) => Err(self.error_from(&url, status, &body)),
        }
    }

    /// The bounded repair of the Worker's Durable Objects (`POST
    /// {p}/repair`, page after page, until the Worker says it was the last):
    /// records written before objects kept their wake as their alarm get
    /// one. Repairing twice is harmless, so an interrupted sweep is
    /// finished by running it again.
    pub async fn repair(&self) -> Result<RepairTotals, CoordError> {
        let mut totals = RepairTotals::default();
        let mut after: Option<String> = None;
        loop {
            let query: Vec<(&str, String)> = after.iter().map(|a| ("after", a.clone())).collect();
            let page: RepairDoc = self.call(Method::POST, "repair", &query).await?;
            totals.checked += page.checked;
            totals.repaired.extend(page.repaired);
            totals.unreadable.extend(page.unreadable);
            match page.next {
                None => return Ok(totals),
                // Pages go forward in name order; one that does not would
                // never end.
                Some(next) if after.as_ref().is_none_or(|a| next > *a) => after = Some(next),
                Some(next) => {
                    return Err(CoordError::Store(StoreError::other(format!(
                        "the Worker at {} answered a repair page after {:?} with the next page \
                         after {next:?}, which does not move forward",
                        self.base_url,
                        after.unwrap_or_default()
                    ))));
                }
            }
        }
    }

    /// The environment variable the token was read from (for hints).
    pub fn token_env(&self) -> &str {
        &self.token_env
    }
}

/// `key=` for an operation on a schedule's record; nothing for a job's.
fn key_query(spec: &JobSpec) -> Vec<(&'static str, String)> {
    spec.key
        .iter()
        .map(|k| ("key", k.as_str().to_string()))
        .collect()
}

/// `localhost`, 127.0.0.0/8 or `[::1]`: this machine.
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An error with its causes ("error sending request: … : Connection refused").
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// A body on one line, at most 200 characters.
fn excerpt(body: &str) -> String {
    let flat: String = body
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if flat.is_empty() {
        return "(empty body)".to_string();
    }
    if flat.chars().count() <= 200 {
        flat.to_string()
    } else {
        format!("{}…", flat.chars().take(199).collect::<String>())
    }
}

impl Records for AdminStore {
    /// The record as the Worker's `status` returns it (brought up to the
    /// Worker's now), when the Worker has one.
    async fn record(&self, job: &str) -> Result<Option<JobState>, CoordError> {
        let report = self.report(job).await?;
        Ok(report.recorded.then_some(report.record))
    }

    /// The Worker reports the jobs of its own manifest only: those with a
    /// record.
    async fn recorded_jobs(&self) -> Result<Vec<String>, CoordError> {
        let doc: StatusDoc = self.call(Method::GET, "status", &[]).await?;
        let mut jobs: Vec<String> = doc
            .jobs
            .into_iter()
            .filter(|j| j.recorded)
            .map(|j| j.job)
            .collect();
        jobs.sort();
        Ok(jobs)
    }
}

impl Operator for AdminStore {
    /// `GET {p}/status?job=J`: the record at the Worker's now.
    async fn status(&self, spec: &JobSpec, _now: Timestamp) -> Result<JobState, CoordError> {
        Ok(self.report_of(spec).await?.record)
    }

    async fn pause(&self, spec: &JobSpec, _now: Timestamp) -> Result<(), CoordError> {
        let route = format!("jobs/{}/pause", spec.name.as_str());
        let _: PauseDoc = self.call(Method::POST, &route, &key_query(spec)).await?;
        Ok(())
    }

    async fn resume(&self, spec: &JobSpec, _now: Timestamp) -> Result<(), CoordError> {
        let route = format!("jobs/{}/resume", spec.name.as_str());
        let _: PauseDoc = self.call(Method::POST, &route, &key_query(spec)).await?;
        Ok(())
    }

    async fn redrive(
        &self,
        spec: &JobSpec,
        slot: Option<Timestamp>,
        _now: Timestamp,
    ) -> Result<Vec<Timestamp>, CoordError> {
        let route = format!("jobs/{}/redrive", spec.name.as_str());
        let mut query = key_query(spec);
        query.extend(slot.map(|s| ("slot", s.to_string())));
        let doc: RedriveDoc = self.call(Method::POST, &route, &query).await?;
        Ok(doc.redriven)
    }

    async fn backfill(
        &self,
        spec: &JobSpec,
        from: Timestamp,
        to: Timestamp,
        _now: Timestamp,
        dry_run: bool,
    ) -> Result<Vec<Timestamp>, CoordError> {
        let route = format!("jobs/{}/backfill", spec.name.as_str());
        let mut query = key_query(spec);
        query.extend([
            ("from", from.to_string()),
            ("to", to.to_string()),
            ("dry_run", dry_run.to_string()),
        ]);
        let doc: BackfillDoc = self.call(Method::POST, &route, &query).await?;
        Ok(doc.slots)
    }
}
