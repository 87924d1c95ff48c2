//! Resolution of a job against `[defaults]` and the built-in defaults, with
//! the checks that span several keys (their rules are in `rules.rs`) and
//! the warnings.
//!
//! A check across keys runs for a job only when one of the keys it involves
//! is set in that job; otherwise it is the business of `[defaults]`, where
//! it runs once.

use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::diagnostic::Sink;
use super::duration::format_duration;
use super::gaps::ZoneOffsets;
use super::rules::{
    Across, Origin, OverlapMode, Setting, catch_up_warning, check_across, window_problem,
};
use super::table::Checked;
use super::template::Timing;
use super::{
    Action, CatchUp, Defaults, Delivery, HistoryLimits, JobSpec, JobTemplate, Overlap, RetryPolicy,
    Trigger, defaults, gaps,
};
use crate::schedule::{DstGap, DstOverlap, DstPolicy, Schedule, Zone};

/// A resolved value, where it came from, where it is written, and whether
/// its key was bad (poisoned).
type Val<T> = Setting<T, Range<usize>>;

struct Layers<'a> {
    here: &'a Checked,
    parent: Option<&'a Checked>,
}

impl Layers<'_> {
    /// The value of `key` (read by `get`): here, else the parent's, else
    /// `builtin`.
    fn pick<T>(
        &self,
        key: &str,
        get: impl Fn(&Checked) -> Option<(T, Range<usize>)>,
        builtin: T,
    ) -> Val<T> {
        let layers = [
            (Some(self.here), Origin::Here),
            (self.parent, Origin::Parent),
        ];
        for (layer, origin) in layers {
            let Some(layer) = layer else { continue };
            if layer.poisoned.contains(key) {
                return Val {
                    value: builtin,
                    origin,
                    at: layer.at(layer.header.clone()),
                    refused: true,
                };
            }
            if let Some((value, span)) = get(layer) {
                return Val {
                    value,
                    origin,
                    at: layer.at(span),
                    refused: false,
                };
            }
        }
        Val {
            value: builtin,
            origin: Origin::Builtin,
            at: self.here.at(self.here.header.clone()),
            refused: false,
        }
    }
}

/// Reads a top-level key of the raw table as (value, span).
macro_rules! raw {
    ($key:ident) => {
        |c: &Checked| c.raw.$key.as_ref().map(|s| (s.get_ref().clone(), s.span()))
    };
    ($key:ident . 0) => {
        |c: &Checked| c.raw.$key.as_ref().map(|s| (s.get_ref().0, s.span()))
    };
}

/// Reads a key of a nested raw table (`retry.backoff`) as (value, span).
macro_rules! nested {
    ($table:ident . $key:ident) => {
        |c: &Checked| {
            c.raw
                .$table
                .as_ref()
                .and_then(|t| t.get_ref().$key.as_ref())
                .map(|s| (s.get_ref().clone(), s.span()))
        }
    };
    ($table:ident . $key:ident . 0) => {
        |c: &Checked| {
            c.raw
                .$table
                .as_ref()
                .and_then(|t| t.get_ref().$key.as_ref())
                .map(|s| (s.get_ref().0, s.span()))
        }
    };
}

/// Every policy of a table, resolved.
struct Policies {
    zone: Val<Zone>,
    trigger: Val<Trigger>,
    lease: Val<Duration>,
    starting_deadline: Val<Duration>,
    catch_up: Val<CatchUp>,
    max_catch_up: Val<u32>,
    overlap: Val<OverlapMode>,
    max_concurrency: Val<u32>,
    /// The `retry` table itself, to point at.
    retry: Val<()>,
    max_attempts: Val<u32>,
    backoff: Val<Duration>,
    max_backoff: Val<Duration>,
    past_next_slot: Val<bool>,
    delivery: Val<Delivery>,
    dst_gap: Val<DstGap>,
    dst_overlap: Val<DstOverlap>,
    skew_margin: Val<Duration>,
    jitter: Val<Duration>,
    paused: Val<bool>,
    stale_after: Val<Option<Duration>>,
    history_succeeded: Val<u32>,
    history_failed: Val<u32>,
    timeout: Val<Option<Duration>>,
}

impl Policies {
    fn resolve(layers: &Layers<'_>) -> Policies {
        let some = |v: Option<(Duration, Range<usize>)>| v.map(|(d, s)| (Some(d), s));
        Policies {
            zone: layers.pick(
                "timezone",
                |c| c.zone.as_ref().map(|z| (z.get_ref().clone(), z.span())),
                Zone::utc(),
            ),
            trigger: layers.pick("trigger", raw!(trigger), Trigger::default()),
            lease: layers.pick("lease", raw!(lease.0), defaults::LEASE),
            starting_deadline: layers.pick(
                "starting_deadline",
                raw!(starting_deadline.0),
                defaults::STARTING_DEADLINE,
            ),
            catch_up: layers.pick("catch_up", raw!(catch_up), CatchUp::default()),
            max_catch_up: layers.pick("max_catch_up", raw!(max_catch_up), defaults::MAX_CATCH_UP),
            overlap: layers.pick("overlap", raw!(overlap), OverlapMode::Forbid),
            max_concurrency: layers.pick(
                "max_concurrency",
                raw!(max_concurrency),
                defaults::MAX_CONCURRENCY,
            ),
            retry: layers.pick(
                "retry",
                |c| c.raw.retry.as_ref().map(|r| ((), r.span())),
                (),
            ),
            max_attempts: layers.pick("retry", nested!(retry.max_attempts), defaults::MAX_ATTEMPTS),
            backoff: layers.pick("retry", nested!(retry.backoff.0), defaults::BACKOFF),
            max_backoff: layers.pick("retry", nested!(retry.max_backoff.0), defaults::MAX_BACKOFF),
            past_next_slot: layers.pick("retry", nested!(retry.past_next_slot), false),
            delivery: layers.pick("delivery", raw!(delivery), Delivery::default()),
            dst_gap: layers.pick("dst_gap", raw!(dst_gap), DstGap::default()),
            dst_overlap: layers.pick("dst_overlap", raw!(dst_overlap), DstOverlap::default()),
            skew_margin: layers.pick("skew_margin", raw!(skew_margin.0), defaults::SKEW_MARGIN),
            jitter: layers.pick("jitter", raw!(jitter.0), Duration::ZERO),
            paused: layers.pick("paused", raw!(paused), false),
            stale_after: layers.pick("stale_after", |c| some(raw!(stale_after.0)(c)), None),
            history_succeeded: layers.pick(
                "history",
                nested!(history.succeeded),
                defaults::HISTORY_SUCCEEDED,
            ),
            history_failed: layers.pick(
                "history",
                nested!(history.failed),
                defaults::HISTORY_FAILED,
            ),
            timeout: layers.pick("timeout", |c| some(raw!(timeout.0)(c)), None),
        }
        .with_jitters_deadline()
    }

    /// A jittered slot may start as late as the end of its window, and its
    /// starting deadline counts from its nominal instant: where no table
    /// writes a `starting_deadline`, the default one is counted from the
    /// window's end instead of the instant (jitter + 10m). A deadline
    /// that is written is checked against the jitter (`rules.rs`).
    fn with_jitters_deadline(mut self) -> Policies {
        if self.starting_deadline.origin == Origin::Builtin && !self.jitter.value.is_zero() {
            self.starting_deadline.value = self
                .jitter
                .value
                .saturating_add(defaults::STARTING_DEADLINE);
        }
        self
    }

    fn overlap(&self) -> Overlap {
        match self.overlap.value {
            OverlapMode::Forbid => Overlap::Forbid,
            OverlapMode::Allow => Overlap::Allow {
                max_concurrency: self.max_concurrency.value,
            },
            OverlapMode::Replace => Overlap::Replace,
        }
    }

    fn retry(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: self.max_attempts.value,
            backoff: self.backoff.value,
            max_backoff: self.max_backoff.value,
            past_next_slot: self.past_next_slot.value,
        }
    }

    fn history(&self) -> HistoryLimits {
        HistoryLimits {
            succeeded: self.history_succeeded.value,
            failed: self.history_failed.value,
        }
    }

    fn dst(&self) -> DstPolicy {
        DstPolicy {
            gap: self.dst_gap.value,
            overlap: self.dst_overlap.value,
        }
    }

    /// What the checks across keys read. `function_job`: the job runs a
    /// Rust function, so a timeout does not apply to it (that is reported
    /// on its own).
    fn across(&self, function_job: bool) -> Across<'_, Range<usize>> {
        Across {
            lease: &self.lease,
            catch_up: &self.catch_up,
            max_catch_up: &self.max_catch_up,
            overlap: &self.overlap,
            max_concurrency: &self.max_concurrency,
            backoff: &self.backoff,
            max_backoff: &self.max_backoff,
            skew_margin: &self.skew_margin,
            jitter: &self.jitter,
            starting_deadline: &self.starting_deadline,
            trigger: &self.trigger,
            timeout: &self.timeout,
            function_job,
        }
    }
}

/// The checks across keys (`rules.rs`) and their warning, for `[defaults]`
/// and jobs alike.
fn cross_checks(sink: &mut Sink<'_>, p: &Policies, function_job: bool) {
    let across = p.across(function_job);
    check_across(&across, |at, problem| sink.error(at, problem));
    if let Some((at, warning)) = catch_up_warning(&across) {
        sink.warning(at, warning);
    }
}

pub(super) fn resolve_defaults(sink: &mut Sink<'_>, table: &Checked) -> Defaults {
    let p = Policies::resolve(&Layers {
        here: table,
        parent: None,
    });
    cross_checks(sink, &p, false);
    Defaults {
        timezone: p.zone.value.name().to_string(),
        trigger: p.trigger.value,
        lease: p.lease.value,
        starting_deadline: p.starting_deadline.value,
        catch_up: p.catch_up.value,
        max_catch_up: p.max_catch_up.value,
        overlap: p.overlap(),
        retry: p.retry(),
        delivery: p.delivery.value,
        dst: p.dst(),
        skew_margin: p.skew_margin.value,
        jitter: p.jitter.value,
        paused: p.paused.value,
        stale_after: p.stale_after.value,
        history: p.history(),
        timeout: p.timeout.value,
    }
}

/// A `[[job]]` resolved: a job with its schedule, or a dynamic job. Built
/// once per job and moved into the manifest at once: the variants' sizes
/// do not matter.
#[allow(clippy::large_enum_variant)]
pub(super) enum Resolved {
    Job(JobSpec),
    Template(JobTemplate),
}

/// Resolves one job; `None` when it has errors. `offsets` is the
/// manifest's cache for its warnings.
pub(super) fn resolve_job(
    sink: &mut Sink<'_>,
    job: &Checked,
    defaults: &Checked,
    offsets: &mut ZoneOffsets,
) -> Option<Resolved> {
    let before = sink.errors.len();
    let p = Policies::resolve(&Layers {
        here: job,
        parent: Some(defaults),
    });
    cross_checks(sink, &p, is_function_job(job));

    let start_at = job.raw.start_at.as_ref();
    let end_at = job.raw.end_at.as_ref();
    if let (Some(s), Some(e)) = (start_at, end_at) {
        if let Some(problem) = window_problem(s.get_ref().0, e.get_ref().0) {
            sink.error(job.at(s.span()), problem);
        }
    }

    let action = resolve_action(sink, job, &p);

    if sink.errors.len() > before || job.errors > 0 || !job.poisoned.is_empty() {
        return None;
    }
    let name = job.name.as_ref()?;
    let policies = JobTemplate {
        name: name.get_ref().clone(),
        trigger: p.trigger.value,
        lease: p.lease.value,
        starting_deadline: p.starting_deadline.value,
        catch_up: p.catch_up.value,
        max_catch_up: p.max_catch_up.value,
        overlap: p.overlap(),
        retry: p.retry(),
        delivery: p.delivery.value,
        dst: p.dst(),
        skew_margin: p.skew_margin.value,
        jitter: p.jitter.value,
        paused: p.paused.value,
        start_at: start_at.map(|s| s.get_ref().0),
        end_at: end_at.map(|e| e.get_ref().0),
        stale_after: p.stale_after.value,
        history: p.history(),
        action: action?,
        key_retention: job
            .raw
            .key_retention
            .as_ref()
            .map_or(super::defaults::KEY_RETENTION, |r| r.get_ref().0),
        // The tz database knows every zone; a precompiled manifest carries
        // the zones it needs instead (`precompiled::TemplateDoc`).
        zones: Vec::new(),
    };
    if job.is_dynamic() {
        // Its schedules are served by every platform's tick (the runner's,
        // a Worker's, a Lambda function's), from the store's wake index.
        return Some(Resolved::Template(policies));
    }
    let cron = job.cron.clone()?;
    let schedule_text = job.raw.schedule.as_ref()?.get_ref().clone();
    let zone = p.zone.value.clone();
    let (start_at, end_at, paused) = (policies.start_at, policies.end_at, policies.paused);
    let jitter = policies.jitter;
    let spec = policies.into_spec(Timing {
        schedule: Schedule::new(cron, zone.clone(), p.dst()),
        schedule_text,
        timezone: zone.name().to_string(),
        start_at,
        end_at,
        paused,
        jitter,
        key: None,
        #[cfg(feature = "schedules")]
        payload: None,
    });
    job_warnings(sink, job, &p, &spec, offsets);
    Some(Resolved::Job(spec))
}

/// A job with neither `command` nor `http` (not even a bad one) runs a
/// Rust function registered under its name.
fn is_function_job(job: &Checked) -> bool {
    job.raw.command.is_none()
        && job.raw.http.is_none()
        && !job.poisoned.contains("command")
        && !job.poisoned.contains("http")
}

/// The job's action with its timeout (the lease unless set).
fn resolve_action(sink: &mut Sink<'_>, job: &Checked, p: &Policies) -> Option<Action> {
    let command = job.raw.command.as_ref();
    let http = job.raw.http.as_ref();
    if let (Some(c), Some(h)) = (command, http) {
        let later = if c.span().start > h.span().start {
            job.at(job.key_span("command"))
        } else {
            job.at(job.key_span("http"))
        };
        sink.error(
            later,
            "a job runs a command or an http request, not both; remove one",
        );
        return None;
    }
    let is_function = is_function_job(job);
    if job.raw.env.is_some() && command.is_none() && !job.poisoned.contains("command") {
        sink.error(
            job.at(job.key_span("env")),
            "env applies only to command jobs; this job has no command",
        );
    }
    if p.timeout.here() && is_function {
        sink.error(
            job.at(job.key_span("timeout")),
            "timeout applies only to command and http jobs; a Rust function job bounds its own run time",
        );
    }
    let timeout = p.timeout.value.unwrap_or(p.lease.value);
    if let Some(argv) = &job.command {
        return Some(Action::Command {
            argv: argv.clone(),
            timeout,
            env: job.env.clone().unwrap_or_default(),
        });
    }
    if let Some(h) = &job.http {
        return Some(Action::Http {
            url: h.url.clone(),
            method: h.method,
            headers: h.headers.clone(),
            timeout,
        });
    }
    is_function.then_some(Action::Function)
}

fn job_warnings(
    sink: &mut Sink<'_>,
    job: &Checked,
    p: &Policies,
    spec: &JobSpec,
    offsets: &mut ZoneOffsets,
) {
    let schedule_span = job.at(job
        .raw
        .schedule
        .as_ref()
        .map_or(job.header.clone(), Spanned::span));
    let name = spec.name.as_str();
    let window = spec.retry.max_total_backoff();
    // The two warnings below need the shortest gap only when it is at most
    // a minute (a dedicated trigger) or the retry window: walk the slots
    // only when the gaps may be that short.
    let dedicated = spec.trigger == Trigger::Dedicated;
    let retries_may_reach = spec.retry.max_attempts > 1 && !spec.retry.past_next_slot;
    let threshold = match (dedicated, retries_may_reach) {
        (false, false) => None,
        (true, false) => Some(Duration::from_secs(60)),
        (false, true) => Some(window),
        (true, true) => Some(window.max(Duration::from_secs(60))),
    };
    let from = gaps::reference(spec.start_at);
    let shortest = threshold.and_then(|threshold| {
        let bound = gaps::gap_lower_bound(&spec.schedule, from, offsets);
        let too_long =
            bound.is_some_and(|b| u64::try_from(b).is_ok_and(|b| b > threshold.as_secs()));
        if too_long {
            None
        } else {
            gaps::shortest_gap(&spec.schedule, from)
        }
    });

    if let Some(gap) = shortest {
        if dedicated && gap <= Duration::from_secs(60) {
            let at = if p.trigger.here() {
                p.trigger.at.clone()
            } else {
                schedule_span.clone()
            };
            sink.warning(
                at,
                format!(
                    "job {name:?} is dedicated but fires every minute; the tick runs every minute anyway and serves it without a trigger of its own"
                ),
            );
        }
        if retries_may_reach && window >= gap {
            let at = if p.retry.here() {
                p.retry.at.clone()
            } else {
                schedule_span.clone()
            };
            sink.warning(
                at,
                format!(
                    "retries of job {name:?} may wait up to {} in all, which reaches the next slot when slots are {} apart; later attempts are dropped at the next slot unless retry.past_next_slot = true",
                    format_duration(window),
                    format_duration(gap)
                ),
            );
        }
    }

    if let (Some(start), Some(end)) = (spec.start_at, spec.end_at) {
        if !gaps::fires_within(&spec.schedule, start, end) {
            let at = job.at(job
                .raw
                .start_at
                .as_ref()
                .map_or(job.header.clone(), Spanned::span));
            sink.warning(
                at,
                format!("job {name:?} has no slot between start_at and end_at"),
            );
        }
    }
}
