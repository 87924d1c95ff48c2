//! A job as the file writes it: its name, schedule, window and action,
//! and its policies as a patch over `[defaults]`. Loading checks each with
//! the rules of the TOML path and gives the job's [`JobSpec`].

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::patch::PolicyPatch;
use super::policy::{Policy, PolicyDoc};
use super::{DurationText, Problems, Report, Text, Zones};
use crate::manifest::duration::format_duration;
use crate::manifest::rules::{
    Origin, Setting, command_problems, env_name_problem, env_value_problem, header_name_problem,
    header_value_problem, http_method, schedule, timeout_problem, url_problem, window_problem,
};
use crate::manifest::{Action, JobName, JobSpec, JobTemplate};
use crate::schedule::Schedule;
#[cfg(feature = "schedules")]
use crate::schedule::Zone;

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

    /// The action's timeout as the checks read it: its own, or else
    /// `default_timeout` (`[defaults]`' own, as written, and checked
    /// there); `None` for a function job, which bounds its own run time.
    pub(super) fn timeout(
        &self,
        place: &str,
        default_timeout: Option<&str>,
        problems: &mut Problems,
    ) -> Setting<Option<Duration>, ()> {
        let own = match self {
            ActionDoc::Function => {
                return Setting {
                    value: None,
                    origin: Origin::Builtin,
                    refused: false,
                    at: (),
                };
            }
            ActionDoc::Command { timeout, .. } | ActionDoc::Http { timeout, .. } => timeout,
        };
        let mut r = Report { place, problems };
        let (text, here) = match (own.as_deref(), default_timeout) {
            (Some(text), _) => (text, true),
            (None, Some(text)) => (text, false),
            (None, None) => {
                r.problem(
                    true,
                    Some("timeout is missing, and [defaults] has none".into()),
                );
                return Setting {
                    value: None,
                    origin: Origin::Here,
                    refused: true,
                    at: (),
                };
            }
        };
        let value = r.duration(here, "timeout", text);
        let refused = value.is_none_or(|t| r.problem(here, timeout_problem(t)));
        Setting {
            value,
            origin: if here { Origin::Here } else { Origin::Parent },
            refused,
            at: (),
        }
    }

    /// The action, checked with the rules of the TOML path (`rules.rs`);
    /// `timeout` is [`ActionDoc::timeout`], checked against the lease with
    /// the job's policies.
    pub(super) fn resolve(
        &self,
        place: &str,
        timeout: &Setting<Option<Duration>, ()>,
        problems: &mut Problems,
    ) -> Option<Action> {
        let before = problems.0.len();
        let mut report = |message: String| problems.push(place.into(), message);
        let action = match self {
            ActionDoc::Function => Some(Action::Function),
            ActionDoc::Command { argv, env, .. } => {
                command_problems(argv.iter().map(String::as_str), |_, p| report(p));
                for (name, value) in env {
                    for p in [env_name_problem(name), env_value_problem(name, value)]
                        .into_iter()
                        .flatten()
                    {
                        report(p);
                    }
                }
                timeout.value.map(|timeout| Action::Command {
                    argv: argv.clone(),
                    timeout,
                    env: env.clone(),
                })
            }
            ActionDoc::Http {
                url,
                method,
                headers,
                ..
            } => {
                if let Some(problem) = url_problem(url) {
                    report(format!("http.url {url:?} {problem}"));
                }
                let method = http_method(method).map_err(&mut report).ok();
                for (name, value) in headers {
                    for p in [header_name_problem(name), header_value_problem(name, value)]
                        .into_iter()
                        .flatten()
                    {
                        report(p);
                    }
                }
                match (method, timeout.value) {
                    (Some(method), Some(timeout)) => Some(Action::Http {
                        url: url.to_string(),
                        method,
                        headers: headers.clone(),
                        timeout,
                    }),
                    _ => None,
                }
            }
        };
        action.filter(|_| problems.0.len() == before)
    }
}

/// What a job and a dynamic job write alike: the name, the window, the
/// action and the policies.
struct Parts<'d, 'a> {
    name: &'d Text<'a>,
    start_at: Option<Timestamp>,
    end_at: Option<Timestamp>,
    action: &'d ActionDoc<'a>,
    policy: &'d PolicyPatch<'a>,
}

impl Parts<'_, '_> {
    /// The name, the policies over `defaults` and the action, each checked
    /// with the TOML path's rules; every problem is pushed, at `place`,
    /// and any problem makes it `None`.
    fn resolve(
        &self,
        place: &str,
        defaults: &PolicyDoc<'_>,
        default_timeout: Option<&str>,
        zones: &mut Zones,
        problems: &mut Problems,
    ) -> Option<(JobName, Policy, Action)> {
        let before = problems.0.len();
        let name = JobName::new(&**self.name)
            .map_err(|e| problems.push(place.to_string(), e.to_string()))
            .ok();
        if let (Some(s), Some(e)) = (self.start_at, self.end_at) {
            if let Some(problem) = window_problem(s, e) {
                problems.push(place.to_string(), problem);
            }
        }
        // The action first: the checks across the job's policies read its
        // timeout.
        let timeout = self.action.timeout(place, default_timeout, problems);
        let action = self.action.resolve(place, &timeout, problems);
        let function_job = matches!(self.action, ActionDoc::Function);
        let policy = self.policy.over(defaults).resolve(
            place,
            Some(self.policy),
            &timeout,
            function_job,
            zones,
            problems,
        );
        if problems.0.len() > before {
            return None;
        }
        Some((name?, policy?, action?))
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
            j.jitter,
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
        let cron = schedule(&self.schedule)
            .map_err(|problem| problems.push(place.clone(), problem.message))
            .ok();
        let parts = Parts {
            name: &self.name,
            start_at: self.start_at,
            end_at: self.end_at,
            action: &self.action,
            policy: &self.policy,
        };
        let (name, p, action) =
            parts.resolve(&place, defaults, default_timeout, zones, problems)?;
        Some(JobSpec {
            name,
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
            jitter: p.jitter,
            paused: p.paused,
            start_at: self.start_at,
            end_at: self.end_at,
            stale_after: p.stale_after,
            history: p.history,
            action,
            key: None,
            #[cfg(feature = "schedules")]
            schedule_version: None,
            #[cfg(feature = "schedules")]
            payload: None,
            #[cfg(feature = "schedules")]
            earlier_payloads: Vec::new(),
        })
    }
}

/// A dynamic job as the file writes it: a job without a schedule. Its
/// policies are a patch over `[defaults]` as a job's are (its timezone is
/// `[defaults]`' and means nothing: each schedule names its own).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TemplateDoc<'a> {
    #[serde(borrow)]
    pub(super) name: Text<'a>,
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
    /// `key_retention`, left out when it is the default.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(super) key_retention: Option<DurationText<'a>>,
}

impl TemplateDoc<'_> {
    /// `t` as written, as [`JobDoc::new`] writes a job.
    pub(super) fn new(
        t: &JobTemplate,
        defaults: &PolicyDoc<'_>,
        default_timeout: Option<Duration>,
    ) -> TemplateDoc<'static> {
        let policy = PolicyDoc::new(
            &defaults.timezone,
            t.trigger,
            t.lease,
            t.starting_deadline,
            t.catch_up,
            t.max_catch_up,
            t.overlap,
            &t.retry,
            t.delivery,
            t.dst,
            t.skew_margin,
            t.jitter,
            t.paused,
            t.stale_after,
            t.history,
        );
        TemplateDoc {
            name: t.name.as_str().to_string().into(),
            start_at: t.start_at,
            end_at: t.end_at,
            action: ActionDoc::new(&t.action, default_timeout),
            policy: PolicyPatch::between(&policy, defaults),
            key_retention: (t.key_retention != crate::manifest::defaults::KEY_RETENTION)
                .then(|| Cow::Owned(format_duration(t.key_retention))),
        }
    }

    /// The dynamic job, checked as [`JobDoc::resolve`] checks a job; its
    /// schedules may name the zones `carried` (every zone the file has).
    #[cfg(feature = "schedules")]
    pub(super) fn resolve(
        &self,
        index: usize,
        defaults: &PolicyDoc<'_>,
        default_timeout: Option<&str>,
        carried: &[Zone],
        zones: &mut Zones,
        problems: &mut Problems,
    ) -> Option<JobTemplate> {
        let place = format!("dynamic job {:?} (templates[{index}])", self.name);
        let parts = Parts {
            name: &self.name,
            start_at: self.start_at,
            end_at: self.end_at,
            action: &self.action,
            policy: &self.policy,
        };
        let (name, p, action) =
            parts.resolve(&place, defaults, default_timeout, zones, problems)?;
        let key_retention = match self
            .key_retention
            .as_deref()
            .map(crate::manifest::duration::parse_duration)
        {
            None => crate::manifest::defaults::KEY_RETENTION,
            Some(Ok(retention)) => retention,
            Some(Err(e)) => {
                problems.push(place, format!("key_retention: {e}"));
                return None;
            }
        };
        if let Some(problem) = crate::manifest::rules::key_retention_problem(key_retention) {
            problems.push(place, problem);
            return None;
        }
        Some(JobTemplate {
            name,
            trigger: p.trigger,
            lease: p.lease,
            starting_deadline: p.starting_deadline,
            catch_up: p.catch_up,
            max_catch_up: p.max_catch_up,
            overlap: p.overlap,
            retry: p.retry,
            delivery: p.delivery,
            dst: p.dst,
            skew_margin: p.skew_margin,
            jitter: p.jitter,
            paused: p.paused,
            start_at: self.start_at,
            end_at: self.end_at,
            stale_after: p.stale_after,
            history: p.history,
            action,
            key_retention,
            zones: carried.to_vec(),
        })
    }
}
