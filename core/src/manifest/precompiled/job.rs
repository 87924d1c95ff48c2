//! A job as the file writes it: its name, schedule, window and action,
//! and its policies as a patch over `[defaults]`. Loading checks each with
//! the rules of the TOML path and gives the job's [`JobSpec`].

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::patch::PolicyPatch;
use super::policy::PolicyDoc;
use super::{DurationText, Problems, Text, Zones, duration};
use crate::cron::CronExpr;
use crate::manifest::duration::format_duration;
use crate::manifest::rules::{
    env_name_problem, env_value_problem, header_name_problem, header_value_problem, url_problem,
};
use crate::manifest::{Action, HttpMethod, JobName, JobSpec};
use crate::schedule::Schedule;

/// What runs for a slot; `"function"`, `{"command": {…}}` or
/// `{"http": {…}}`. A timeout is left out where it is `[defaults]`'
/// `timeout`; an empty `env` or `headers` is left out.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum ActionDoc<'a> {
    Function,
    Command {
        argv: Vec<String>,
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        timeout: Option<DurationText<'a>>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    },
    Http {
        #[serde(borrow)]
        url: Text<'a>,
        #[serde(borrow)]
        method: Text<'a>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        timeout: Option<DurationText<'a>>,
    },
}

impl ActionDoc<'_> {
    /// `a` as written, its timeout left out when it is `default_timeout`.
    pub(super) fn new(a: &Action, default_timeout: Option<Duration>) -> ActionDoc<'static> {
        let timeout =
            |t: &Duration| (Some(*t) != default_timeout).then(|| Cow::Owned(format_duration(*t)));
        match a {
            Action::Function => ActionDoc::Function,
            Action::Command {
                argv,
                timeout: t,
                env,
            } => ActionDoc::Command {
                argv: argv.clone(),
                timeout: timeout(t),
                env: env.clone(),
            },
            Action::Http {
                url,
                method,
                headers,
                timeout: t,
            } => ActionDoc::Http {
                url: url.clone().into(),
                method: method.as_str().into(),
                headers: headers.clone(),
                timeout: timeout(t),
            },
        }
    }

    /// The action, checked with the rules of the TOML path; a timeout left
    /// out is `default_timeout` (`[defaults]`' own, as written).
    pub(super) fn resolve(
        &self,
        place: &str,
        lease: Duration,
        default_timeout: Option<&str>,
        problems: &mut Problems,
    ) -> Option<Action> {
        let before = problems.0.len();
        let timeout_of = |own: &Option<DurationText<'_>>, problems: &mut Problems| {
            let Some(text) = own.as_deref().or(default_timeout) else {
                problems.push(
                    place.into(),
                    "timeout is missing, and [defaults] has none".into(),
                );
                return None;
            };
            let t = duration(problems, place, "timeout", text)?;
            if t.is_zero() {
                problems.push(place.into(), "timeout must be longer than 0s".into());
            } else if t > lease {
                problems.push(
                    place.into(),
                    format!(
                        "timeout {} is longer than the lease {}",
                        format_duration(t),
                        format_duration(lease)
                    ),
                );
            }
            Some(t)
        };
        let action = match self {
            ActionDoc::Function => Action::Function,
            ActionDoc::Command { argv, timeout, env } => {
                let timeout = timeout_of(timeout, problems);
                let mut report = |message: String| problems.push(place.into(), message);
                match argv.first() {
                    None => report("command is empty".into()),
                    Some(program) if program.is_empty() => {
                        report("command[0], the program to run, is empty".into())
                    }
                    Some(_) => {}
                }
                for (i, arg) in argv.iter().enumerate() {
                    if arg.contains('\0') {
                        report(format!("command[{i}] contains a NUL character"));
                    }
                }
                for (name, value) in env {
                    if let Some(p) =
                        env_name_problem(name).or_else(|| env_value_problem(name, value))
                    {
                        report(p);
                    }
                }
                Action::Command {
                    argv: argv.clone(),
                    timeout: timeout?,
                    env: env.clone(),
                }
            }
            ActionDoc::Http {
                url,
                method,
                headers,
                timeout,
            } => {
                let timeout = timeout_of(timeout, problems);
                let mut report = |message: String| problems.push(place.into(), message);
                if let Some(problem) = url_problem(url) {
                    report(format!("http.url {url:?} {problem}"));
                }
                let parsed = HttpMethod::parse(method);
                if parsed.is_none() {
                    let known: Vec<&str> = HttpMethod::ALL.iter().map(|m| m.as_str()).collect();
                    report(format!(
                        "unknown HTTP method {method:?}; expected one of {}",
                        known.join(", ")
                    ));
                }
                for (name, value) in headers {
                    if let Some(p) =
                        header_name_problem(name).or_else(|| header_value_problem(name, value))
                    {
                        report(p);
                    }
                }
                Action::Http {
                    url: url.to_string(),
                    method: parsed?,
                    headers: headers.clone(),
                    timeout: timeout?,
                }
            }
        };
        (problems.0.len() == before).then_some(action)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct JobDoc<'a> {
    #[serde(borrow)]
    pub(super) name: Text<'a>,
    /// As written in the manifest (the spec hash reads it).
    #[serde(borrow)]
    pub(super) schedule: Text<'a>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::instant::text::option")]
    pub(super) start_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::instant::text::option")]
    pub(super) end_at: Option<Timestamp>,
    #[serde(borrow)]
    pub(super) action: ActionDoc<'a>,
    #[serde(borrow, default, skip_serializing_if = "PolicyPatch::is_empty")]
    pub(super) policy: PolicyPatch<'a>,
}

impl JobDoc<'_> {
    /// `j` as written: what it shares with the defaults (their whole
    /// policy, their timeout) is left out.
    pub(super) fn new(
        j: &JobSpec,
        defaults: &PolicyDoc<'_>,
        default_timeout: Option<Duration>,
    ) -> JobDoc<'static> {
        let policy = PolicyDoc::new(
            &j.timezone,
            j.trigger,
            j.lease,
            j.starting_deadline,
            j.catch_up,
            j.max_catch_up,
            j.overlap,
            &j.retry,
            j.delivery,
            j.schedule.policy(),
            j.skew_margin,
            j.paused,
            j.stale_after,
            j.history,
        );
        JobDoc {
            name: j.name.as_str().to_string().into(),
            schedule: j.schedule_text.clone().into(),
            start_at: j.start_at,
            end_at: j.end_at,
            action: ActionDoc::new(&j.action, default_timeout),
            policy: PolicyPatch::between(&policy, defaults),
        }
    }

    pub(super) fn resolve(
        &self,
        index: usize,
        defaults: &PolicyDoc<'_>,
        default_timeout: Option<&str>,
        zones: &mut Zones,
        problems: &mut Problems,
    ) -> Option<JobSpec> {
        let place = format!("job {:?} (jobs[{index}])", self.name);
        let before = problems.0.len();
        let name = JobName::new(&*self.name)
            .map_err(|e| problems.push(place.clone(), e.to_string()))
            .ok();
        let cron = match CronExpr::parse(&self.schedule) {
            Ok(expr) if expr.never_fires() => {
                problems.push(
                    place.clone(),
                    format!(
                        "schedule {:?} never fires: no date matches it",
                        self.schedule
                    ),
                );
                None
            }
            Ok(expr) => Some(expr),
            Err(e) => {
                problems.push(
                    place.clone(),
                    format!("invalid schedule {:?}: {e}", self.schedule),
                );
                None
            }
        };
        if let (Some(s), Some(e)) = (self.start_at, self.end_at) {
            if s >= e {
                problems.push(
                    place.clone(),
                    format!("start_at {s} is not before end_at {e}"),
                );
            }
        }
        let p = self.policy.over(defaults).resolve(&place, zones, problems);
        let action = match &p {
            Some(p) => self
                .action
                .resolve(&place, p.lease, default_timeout, problems),
            None => None,
        };
        if problems.0.len() > before {
            return None;
        }
        let p = p?;
        Some(JobSpec {
            name: name?,
            schedule: Schedule::new(cron?, p.zone.clone(), p.dst),
            schedule_text: self.schedule.to_string(),
            timezone: p.zone.name().to_string(),
            trigger: p.trigger,
            lease: p.lease,
            starting_deadline: p.starting_deadline,
            catch_up: p.catch_up,
            max_catch_up: p.max_catch_up,
            overlap: p.overlap,
            retry: p.retry,
            delivery: p.delivery,
            skew_margin: p.skew_margin,
            paused: p.paused,
            start_at: self.start_at,
            end_at: self.end_at,
            stale_after: p.stale_after,
            history: p.history,
            action: action?,
        })
    }
}
