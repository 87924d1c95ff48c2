//! The rules a manifest's values obey however the manifest reached
//! cronslot, each written once: the TOML validation applies them (single
//! values in `table.rs`, checks across keys in `resolve.rs`) and so does
//! the precompiled form (`precompiled/`), so both refuse the same values
//! with the same sentence. Where a problem is reported is each path's own:
//! the TOML path by file, line and column, the precompiled form by table
//! (`[defaults]`, `job "x" (jobs[2])`).
//!
//! What only one path can write stays with it: a job with both a command
//! and an http request, `env` without a command or a timeout on a Rust
//! function job (TOML; the precompiled layout cannot express them), a
//! zone not written by its canonical name, `overlap = "allow"` without its
//! `max_concurrency` or a timeout missing (the precompiled layout).

use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::duration::format_duration;
use super::{CatchUp, HttpMethod, Trigger, defaults};
use crate::cron::CronExpr;
use crate::schedule::ZoneError;

// ------------------------------------------------- schedule and zone

/// Why a schedule's text cannot be a job's schedule.
pub(super) struct ScheduleProblem {
    /// The 1-based column (in characters) of the problem within the text,
    /// when the parser says; otherwise the whole text is at fault. Only the
    /// TOML path points into the text.
    #[cfg_attr(not(feature = "toml"), allow(dead_code))]
    pub column: Option<usize>,
    pub message: String,
}

/// The cron expression `text` writes, or why it cannot be a job's
/// schedule.
pub(super) fn schedule(text: &str) -> Result<CronExpr, ScheduleProblem> {
    match CronExpr::parse(text) {
        Ok(expr) if expr.never_fires() => Err(ScheduleProblem {
            column: None,
            message: format!("schedule {text:?} never fires: no date matches it"),
        }),
        Ok(expr) => Ok(expr),
        Err(e) => Err(ScheduleProblem {
            column: Some(e.column),
            message: format!("invalid schedule {text:?}: {e}"),
        }),
    }
}

/// The problem of a zone `name` that was not found.
pub(super) fn zone_problem(name: &str, e: &ZoneError) -> String {
    let hint = e
        .hint
        .as_ref()
        .map(|h| format!("; {h}"))
        .unwrap_or_default();
    format!("unknown time zone {name:?}{hint}")
}

// ------------------------------------------------ single policy values

/// Why `lease` cannot be a job's lease, if it cannot.
pub(super) fn lease_problem(lease: Duration) -> Option<String> {
    (lease < defaults::MIN_LEASE).then(|| {
        format!(
            "lease {} is shorter than the minimum of {}; a lease must cover start-up and clock skew",
            format_duration(lease),
            format_duration(defaults::MIN_LEASE)
        )
    })
}

/// A duration that must be longer than zero, and why.
fn positive(key: &str, value: Duration, why: &str) -> Option<String> {
    value
        .is_zero()
        .then(|| format!("{key} must be longer than 0s; {why}"))
}

/// Why `deadline` cannot be a `starting_deadline`, if it cannot.
pub(super) fn starting_deadline_problem(deadline: Duration) -> Option<String> {
    positive(
        "starting_deadline",
        deadline,
        "a zero deadline would miss every slot",
    )
}

/// Why `jitter` cannot be a job's or a schedule's jitter, if it cannot:
/// at most [`MAX_JITTER`](crate::jitter::MAX_JITTER).
pub(crate) fn jitter_problem(jitter: Duration) -> Option<String> {
    (jitter > crate::jitter::MAX_JITTER).then(|| {
        format!(
            "jitter {} is longer than the limit of {}",
            format_duration(jitter),
            format_duration(crate::jitter::MAX_JITTER)
        )
    })
}

/// A tick's length: a jittered slot found at its start by a tick up to
/// this much later must still be within its starting deadline.
const TICK: Duration = Duration::from_secs(60);

/// Why `jitter` does not fit in `deadline`, if it does not: a slot that
/// starts at the end of its window (and is found a tick later) must still
/// be on time, since the deadline counts from the nominal instant.
pub(crate) fn jitter_deadline_problem(jitter: Duration, deadline: Duration) -> Option<String> {
    (!jitter.is_zero() && jitter.saturating_add(TICK) > deadline).then(|| {
        format!(
            "jitter {} needs a starting_deadline of at least {} (jitter + 1m): the deadline \
             counts from the slot's nominal instant, and the slot may start at the end of its \
             window; starting_deadline is {}",
            format_duration(jitter),
            format_duration(jitter.saturating_add(TICK)),
            format_duration(deadline)
        )
    })
}

/// Why `timeout` cannot be a `timeout`, if it cannot (on its own; against
/// the lease see [`check_across`]).
pub(super) fn timeout_problem(timeout: Duration) -> Option<String> {
    positive(
        "timeout",
        timeout,
        "a zero timeout would stop every run at once",
    )
}

/// Why `retention` cannot be a `key_retention`, if it cannot: it is at
/// least [`MIN_KEY_RETENTION`](super::MIN_KEY_RETENTION).
#[cfg(any(feature = "toml", feature = "schedules"))]
pub(super) fn key_retention_problem(retention: Duration) -> Option<String> {
    (retention < super::MIN_KEY_RETENTION).then(|| {
        format!(
            "key_retention is at least 30d: a key is remembered at least 30 days after its run \
             ends, so that a retried request never runs it twice (here {})",
            super::duration::format_duration(retention)
        )
    })
}

pub(super) fn stale_after_problem(bound: Duration) -> Option<String> {
    positive(
        "stale_after",
        bound,
        "a zero bound would call the job stale all the time",
    )
}

/// Why `n` cannot be a `max_concurrency`, if it cannot.
pub(super) fn max_concurrency_problem(n: u32) -> Option<String> {
    if n == 0 {
        Some("max_concurrency must be at least 1; to run nothing, set paused = true".into())
    } else if n > defaults::MAX_CONCURRENCY_LIMIT {
        Some(format!(
            "max_concurrency {n} is above the limit of {}",
            defaults::MAX_CONCURRENCY_LIMIT
        ))
    } else {
        None
    }
}

/// Why `n` cannot be a `retry.max_attempts`, if it cannot.
pub(super) fn max_attempts_problem(n: u32) -> Option<String> {
    (n == 0).then(|| "retry.max_attempts must be at least 1 (the first attempt counts)".into())
}

/// Why `n` cannot be `history.<key>` (`key`: `succeeded` or `failed`), if
/// it cannot.
pub(super) fn history_problem(key: &str, n: u32) -> Option<String> {
    (n > defaults::HISTORY_LIMIT).then(|| {
        format!(
            "history.{key} {n} is above the limit of {}",
            defaults::HISTORY_LIMIT
        )
    })
}

// ------------------------------------------------------------- actions

/// The part of a command a problem is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ArgvPart {
    /// The command as a whole.
    Whole,
    /// `command[i]`.
    Arg(usize),
}

/// Reports every reason `argv` cannot be a command's program and
/// arguments.
pub(super) fn command_problems<'a>(
    argv: impl IntoIterator<Item = &'a str>,
    mut report: impl FnMut(ArgvPart, String),
) {
    let mut empty = true;
    for (i, arg) in argv.into_iter().enumerate() {
        empty = false;
        if i == 0 && arg.is_empty() {
            report(
                ArgvPart::Arg(0),
                "command[0], the program to run, is empty".into(),
            );
        }
        if arg.contains('\0') {
            report(
                ArgvPart::Arg(i),
                format!("command[{i}] contains a NUL character, which no program can receive"),
            );
        }
    }
    if empty {
        report(
            ArgvPart::Whole,
            "command is empty; give the program and its arguments, as in [\"./scripts/cleanup.sh\", \"--fast\"]".into(),
        );
    }
}

/// The HTTP method `text` names (in any case), or why it names none.
pub(super) fn http_method(text: &str) -> Result<HttpMethod, String> {
    HttpMethod::parse(text).ok_or_else(|| {
        let known: Vec<&str> = HttpMethod::ALL.iter().map(|m| m.as_str()).collect();
        format!(
            "unknown HTTP method {text:?}; expected {} or {}",
            known[..known.len() - 1].join(", "),
            known[known.len() - 1]
        )
    })
}

/// Headers cronslot sets on every request itself.
const RESERVED_HEADERS: [&str; 2] = ["Idempotency-Key", "Cronslot-Fence"];

fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

/// Why `url` is not an absolute http(s) URL with a host, if it is not.
pub(super) fn url_problem(url: &str) -> Option<&'static str> {
    let lower = url.to_ascii_lowercase();
    let Some(rest) = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
    else {
        return Some("is not an http:// or https:// URL");
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("contains spaces or control characters; percent-encode them");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, p)) => (h, p.strip_prefix(':')),
            None => return Some("has an unclosed [ in its host"),
        }
    } else {
        match host_port.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return Some("has no host");
    }
    if let Some(p) = port {
        if p.parse::<u16>().map_or(true, |n| n == 0) {
            return Some("has an invalid port");
        }
    }
    None
}

/// Why `name` cannot be the name of a header of an `http` job, if it cannot.
pub(super) fn header_name_problem(name: &str) -> Option<String> {
    if !is_token(name) {
        return Some(format!("{name:?} is not a valid HTTP header name"));
    }
    RESERVED_HEADERS
        .iter()
        .find(|r| r.eq_ignore_ascii_case(name))
        .map(|reserved| format!("header {reserved} is set by cronslot on every request"))
}

/// Why `value` cannot be the value of header `name`, if it cannot.
pub(super) fn header_value_problem(name: &str, value: &str) -> Option<String> {
    value
        .chars()
        .any(|ch| ch.is_control() && ch != '\t')
        .then(|| format!("the value of header {name:?} contains a line break or control character"))
}

/// Why `name` cannot be an environment variable of a command job, if it
/// cannot.
pub(super) fn env_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.contains(['=', '\0']) {
        Some(format!("{name:?} is not a valid environment variable name"))
    } else if name.to_ascii_uppercase().starts_with("CRONSLOT_") {
        Some(format!(
            "environment variable {name} is reserved: cronslot sets the CRONSLOT_ variables"
        ))
    } else {
        None
    }
}

/// Why `value` cannot be the value of environment variable `name`, if it
/// cannot.
pub(super) fn env_value_problem(name: &str, value: &str) -> Option<String> {
    value
        .contains('\0')
        .then(|| format!("the value of environment variable {name:?} contains a NUL character"))
}

// ---------------------------------------------------------- across keys

/// `overlap` without its parameter; `max_concurrency` is a separate key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum OverlapMode {
    Forbid,
    Allow,
    Replace,
}

/// Where a value a check across keys reads comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    /// Set in the table being checked.
    Here,
    /// Inherited from `[defaults]`.
    Parent,
    /// Set nowhere: the built-in default.
    Builtin,
}

/// A value as the checks across keys see it. `S` is where a problem that
/// points at it is reported: a span of the TOML text, or nothing for the
/// precompiled form, which reports by table.
pub(super) struct Setting<T, S> {
    pub value: T,
    pub origin: Origin,
    /// Refused on its own (or unreadable): its problem is reported
    /// already, so checks that involve it stay quiet.
    pub refused: bool,
    pub at: S,
}

impl<T, S> Setting<T, S> {
    /// Set, and acceptable, in the table being checked.
    pub fn here(&self) -> bool {
        self.origin == Origin::Here && !self.refused
    }
}

/// Whether a check across `a` and `b` belongs to this table: neither is
/// refused, and at least one is set here.
fn concerns<A, B, S>(a: &Setting<A, S>, b: &Setting<B, S>) -> bool {
    !a.refused && !b.refused && (a.here() || b.here())
}

/// Where to report a problem of `first` and `second`: at the first of
/// them set here.
fn point_at<A, B, S: Clone>(first: &Setting<A, S>, second: &Setting<B, S>) -> S {
    if first.here() {
        first.at.clone()
    } else {
        second.at.clone()
    }
}

/// The values of a table (`[defaults]` or a job, resolved) the checks
/// across keys read.
pub(super) struct Across<'a, S> {
    pub lease: &'a Setting<Duration, S>,
    pub catch_up: &'a Setting<CatchUp, S>,
    pub max_catch_up: &'a Setting<u32, S>,
    pub overlap: &'a Setting<OverlapMode, S>,
    pub max_concurrency: &'a Setting<u32, S>,
    pub backoff: &'a Setting<Duration, S>,
    pub max_backoff: &'a Setting<Duration, S>,
    pub skew_margin: &'a Setting<Duration, S>,
    pub jitter: &'a Setting<Duration, S>,
    pub starting_deadline: &'a Setting<Duration, S>,
    pub trigger: &'a Setting<Trigger, S>,
    pub timeout: &'a Setting<Option<Duration>, S>,
    /// The job runs a Rust function, so a timeout does not apply to it.
    pub function_job: bool,
}

/// Reports every check across keys that `k` fails.
pub(super) fn check_across<S: Clone>(k: &Across<'_, S>, mut report: impl FnMut(S, String)) {
    if concerns(k.max_catch_up, k.catch_up)
        && k.catch_up.value == CatchUp::All
        && k.max_catch_up.value == 0
    {
        report(
            point_at(k.max_catch_up, k.catch_up),
            "max_catch_up = 0 with catch_up = \"all\" catches up nothing; raise max_catch_up or use catch_up = \"none\"".into(),
        );
    }
    if k.max_concurrency.here() && !k.overlap.refused && k.overlap.value != OverlapMode::Allow {
        let mode = match k.overlap.value {
            OverlapMode::Replace => "replace",
            _ => "forbid",
        };
        let whence = if k.overlap.origin == Origin::Builtin {
            " (the default)"
        } else {
            ""
        };
        report(
            k.max_concurrency.at.clone(),
            format!(
                "max_concurrency applies only to overlap = \"allow\", and overlap is \"{mode}\"{whence}"
            ),
        );
    }
    if concerns(k.backoff, k.max_backoff) && k.backoff.value > k.max_backoff.value {
        report(
            point_at(k.backoff, k.max_backoff),
            format!(
                "retry.backoff {} is longer than retry.max_backoff {}",
                format_duration(k.backoff.value),
                format_duration(k.max_backoff.value)
            ),
        );
    }
    if concerns(k.skew_margin, k.lease) && k.skew_margin.value >= k.lease.value {
        report(
            point_at(k.skew_margin, k.lease),
            format!(
                "skew_margin {} must be shorter than the lease {}",
                format_duration(k.skew_margin.value),
                format_duration(k.lease.value)
            ),
        );
    }
    if concerns(k.jitter, k.starting_deadline)
        && let Some(problem) = jitter_deadline_problem(k.jitter.value, k.starting_deadline.value)
    {
        report(point_at(k.jitter, k.starting_deadline), problem);
    }
    if concerns(k.jitter, k.trigger)
        && !k.jitter.value.is_zero()
        && k.trigger.value == Trigger::Dedicated
    {
        report(
            point_at(k.jitter, k.trigger),
            "jitter needs trigger = \"tick\": a dedicated trigger fires at the slot's nominal \
             instant, and a jittered slot starts later, which only a tick finds"
                .to_string(),
        );
    }
    if let Some(timeout) = k.timeout.value.filter(|_| !k.function_job) {
        if concerns(k.timeout, k.lease) && timeout > k.lease.value {
            report(
                point_at(k.timeout, k.lease),
                format!(
                    "timeout {} is longer than the lease {}, the longest a run may hold its slot",
                    format_duration(timeout),
                    format_duration(k.lease.value)
                ),
            );
        }
    }
}

/// The warning of a catch-up that may run very many late slots at once.
/// Only the TOML path looks for warnings: the precompiled form carries
/// those found when it was written.
#[cfg(feature = "toml")]
pub(super) fn catch_up_warning<S: Clone>(k: &Across<'_, S>) -> Option<(S, String)> {
    (concerns(k.max_catch_up, k.catch_up)
        && k.catch_up.value == CatchUp::All
        && k.max_catch_up.value > defaults::LARGE_CATCH_UP)
        .then(|| {
            (
                point_at(k.max_catch_up, k.catch_up),
                format!(
                    "catch_up = \"all\" with max_catch_up = {} can run that many late slots back to back after an outage",
                    k.max_catch_up.value
                ),
            )
        })
}

/// Why `[start_at, end_at)` cannot be a job's active window, if it cannot.
pub(super) fn window_problem(start_at: Timestamp, end_at: Timestamp) -> Option<String> {
    (start_at >= end_at).then(|| format!("start_at {start_at} is not before end_at {end_at}"))
}
