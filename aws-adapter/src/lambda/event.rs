//! Decoding the payloads EventBridge sends to the function (the formats are
//! documented in the module docs of [`crate::lambda`]).
//!
//! Decoding is pure and total: every payload gives an [`Event`] or an
//! [`EventError`] naming the JSON path that is wrong and why, never a
//! panic. [`resolve`] then checks the event against the manifest (the job
//! exists, the time is one of its slots) without touching the store, so a
//! bad event is refused before anything is read or written.

use std::fmt;

use cronslot_core::coord::format_instant;
use cronslot_core::manifest::{JobSpec, Manifest};
use jiff::Timestamp;
use serde_json::{Map, Value};

/// Rule names that address cronslot: `cronslot-<job>` for a job's dedicated
/// rule, [`TICK_RULE`] for the tick.
pub const RULE_PREFIX: &str = "cronslot-";

/// The name of the tick rule.
pub const TICK_RULE: &str = "cronslot-tick";

/// The keys a Scheduler input's `cronslot` object may carry.
const SCHEDULER_KEYS: [&str; 6] = [
    "job",
    "tick",
    "scheduled_time",
    "execution_id",
    "attempt",
    "schedule_arn",
];

/// The keys a Rule event's `detail` may carry.
const DETAIL_KEYS: [&str; 2] = ["job", "tick"];

/// A payload that is not a cronslot event, or does not fit the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventError {
    /// JSON path of the offending value (`$` is the whole payload).
    pub path: String,
    /// What is wrong with it, for a person.
    pub message: String,
}

impl EventError {
    fn at(path: &str, message: impl Into<String>) -> EventError {
        EventError {
            path: path.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "event {}: {}", self.path, self.message)
    }
}

impl std::error::Error for EventError {}

/// Who sent the event, with what it says about the delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// An EventBridge Scheduler target input.
    Scheduler {
        /// Scheduler's execution id (`<aws.scheduler.execution-id>`).
        execution_id: Option<String>,
        /// Scheduler's delivery attempt (1 for the first).
        attempt: Option<u32>,
        /// The schedule's ARN (`<aws.scheduler.schedule-arn>`).
        schedule_arn: Option<String>,
    },
    /// An EventBridge Rule's Scheduled Event.
    Rule {
        /// The name of the first rule in `resources`, if any.
        rule: Option<String>,
        /// The event's `id`.
        id: Option<String>,
    },
}

/// What the event asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// A dedicated trigger of one job.
    Job(String),
    /// Plan every tick-mode job.
    Tick,
}

/// A decoded event, not yet checked against the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Who sent it.
    pub source: Source,
    /// What it asks for.
    pub target: Target,
    /// The scheduled instant (a Rule's `time` cut to the minute).
    pub time: Timestamp,
    /// Where the target came from, for messages.
    pub target_path: String,
    /// Where the time came from, for messages.
    pub time_path: &'static str,
}

impl Event {
    /// The job named by the event, if any.
    pub fn job(&self) -> Option<&str> {
        match &self.target {
            Target::Job(job) => Some(job),
            Target::Tick => None,
        }
    }

    /// `scheduler` or `rule`, for logs.
    pub fn source_name(&self) -> &'static str {
        match self.source {
            Source::Scheduler { .. } => "scheduler",
            Source::Rule { .. } => "rule",
        }
    }
}

/// What an event asks the handler to do, checked against the manifest.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Work<'m> {
    /// Run this slot of this job (then catch up on its later due slots).
    Slot {
        /// The job, from the manifest.
        spec: &'m JobSpec,
        /// The slot: a slot of the job's schedule.
        slot: Timestamp,
    },
    /// Run what is due of every tick-mode job.
    Tick {
        /// The event's scheduled instant.
        time: Timestamp,
    },
}

/// Decodes a payload into an event.
pub fn decode(payload: &Value) -> Result<Event, EventError> {
    let Value::Object(root) = payload else {
        return Err(EventError::at(
            "$",
            format!(
                "expected a JSON object (an EventBridge Scheduler input {{\"cronslot\": {{...}}}} or a Scheduled Event), found {}",
                kind(payload)
            ),
        ));
    };
    if root.contains_key("cronslot") {
        decode_scheduler(root)
    } else if root.contains_key("source") || root.contains_key("detail-type") {
        decode_rule(root)
    } else {
        Err(EventError::at(
            "$",
            "not a cronslot event: expected {\"cronslot\": {...}} (an EventBridge Scheduler input) or an EventBridge Scheduled Event (\"source\": \"aws.events\")",
        ))
    }
}

/// Checks an event against the manifest: the job exists and the time is one
/// of its slots.
pub fn resolve<'m>(event: &Event, manifest: &'m Manifest) -> Result<Work<'m>, EventError> {
    let job = match &event.target {
        Target::Tick => return Ok(Work::Tick { time: event.time }),
        Target::Job(job) => job,
    };
    if manifest.templates.iter().any(|t| t.name.as_str() == job) {
        return Err(EventError::at(
            &event.target_path,
            format!(
                "job {job:?} is dynamic: its schedules run from the tick (the rule {:?}), \
                 not from an event of their own",
                TICK_RULE
            ),
        ));
    }
    let Some(spec) = manifest.job(job) else {
        return Err(EventError::at(
            &event.target_path,
            format!("unknown job {job:?}: {}", known_jobs(manifest)),
        ));
    };
    let slot = event.time;
    if !spec.schedule.is_slot(slot) {
        return Err(EventError::at(event.time_path, not_a_slot(spec, slot)));
    }
    Ok(Work::Slot { spec, slot })
}

fn known_jobs(manifest: &Manifest) -> String {
    const SHOWN: usize = 20;
    if manifest.jobs.is_empty() {
        return "the manifest has no jobs".to_string();
    }
    let names: Vec<&str> = manifest
        .jobs
        .iter()
        .take(SHOWN)
        .map(|j| j.name.as_str())
        .collect();
    let more = manifest.jobs.len().saturating_sub(SHOWN);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("the manifest's jobs are {}{tail}", names.join(", "))
}

fn not_a_slot(spec: &JobSpec, t: Timestamp) -> String {
    let around = match (spec.schedule.prev_before(t), spec.schedule.next_after(t)) {
        (Some(p), Some(n)) => format!(
            "; the nearest slots are {} and {}",
            format_instant(p),
            format_instant(n)
        ),
        (None, Some(n)) => format!("; the next slot is {}", format_instant(n)),
        (Some(p), None) => format!("; the last slot was {}", format_instant(p)),
        (None, None) => "; the schedule never fires".to_string(),
    };
    format!(
        "{} is not a slot of job {:?} (schedule {:?} in {}){around}",
        format_instant(t),
        spec.name.as_str(),
        spec.schedule_text,
        spec.timezone
    )
}

fn decode_scheduler(root: &Map<String, Value>) -> Result<Event, EventError> {
    if let Some(extra) = root.keys().find(|k| k.as_str() != "cronslot") {
        return Err(EventError::at(
            &child("$", extra),
            "unexpected key: a Scheduler input holds only \"cronslot\"",
        ));
    }
    let path = "$.cronslot";
    let input = match root.get("cronslot") {
        Some(Value::Object(input)) => input,
        Some(other) => {
            return Err(EventError::at(
                path,
                format!("expected an object, found {}", kind(other)),
            ));
        }
        None => return Err(EventError::at(path, "missing")),
    };
    if let Some(extra) = input.keys().find(|k| !SCHEDULER_KEYS.contains(&k.as_str())) {
        return Err(EventError::at(
            &child(path, extra),
            format!("unknown key; expected {}", SCHEDULER_KEYS.join(", ")),
        ));
    }
    let job = optional_string(input, path, "job")?;
    let tick = optional_bool(input, path, "tick")?;
    let target = match (job, tick) {
        (Some(_), Some(true)) => {
            return Err(EventError::at(
                path,
                "has both \"job\" and \"tick\": true; a trigger is either one job's or the tick",
            ));
        }
        (Some(job), _) => (Target::Job(job.to_string()), "$.cronslot.job"),
        (None, Some(true)) => (Target::Tick, "$.cronslot.tick"),
        (None, _) => {
            return Err(EventError::at(
                path,
                "names no job: add \"job\": \"<name>\" (a dedicated trigger) or \"tick\": true",
            ));
        }
    };
    if let (Target::Job(name), p) = &target {
        if name.is_empty() {
            return Err(EventError::at(p, "is empty; expected a job name"));
        }
    }
    let time_path = "$.cronslot.scheduled_time";
    let text = optional_string(input, path, "scheduled_time")?
        .ok_or_else(|| EventError::at(time_path, "missing; the input template must carry \"scheduled_time\": \"<aws.scheduler.scheduled-time>\""))?;
    let time = instant(text, time_path)?;
    let source = Source::Scheduler {
        execution_id: optional_string(input, path, "execution_id")?.map(str::to_string),
        attempt: attempt(input.get("attempt"))?,
        schedule_arn: optional_string(input, path, "schedule_arn")?.map(str::to_string),
    };
    Ok(Event {
        source,
        target: target.0,
        time,
        target_path: target.1.to_string(),
        time_path,
    })
}

fn decode_rule(root: &Map<String, Value>) -> Result<Event, EventError> {
    expect_text(root, "source", "aws.events")?;
    expect_text(root, "detail-type", "Scheduled Event")?;
    let time_path = "$.time";
    let text = optional_string(root, "$", "time")?
        .ok_or_else(|| EventError::at(time_path, "missing; a Scheduled Event carries its time"))?;
    // Rule schedules have minute granularity and the envelope's time may
    // carry the seconds of the delivery: the slot is the minute.
    let time = truncate_to_minute(instant(text, time_path)?);
    let id = optional_string(root, "$", "id")?.map(str::to_string);

    let detail = match root.get("detail") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(d)) => d.clone(),
        Some(other) => {
            return Err(EventError::at(
                "$.detail",
                format!("expected an object, found {}", kind(other)),
            ));
        }
    };
    if let Some(extra) = detail.keys().find(|k| !DETAIL_KEYS.contains(&k.as_str())) {
        return Err(EventError::at(
            &child("$.detail", extra),
            format!("unknown key; expected {}", DETAIL_KEYS.join(", ")),
        ));
    }
    let rules = rule_names(root)?;
    let rule = rules.first().map(|(_, name)| name.clone());
    let job = optional_string(&detail, "$.detail", "job")?;
    let tick = optional_bool(&detail, "$.detail", "tick")?;
    let (target, target_path) = match (job, tick) {
        (Some(_), Some(true)) => {
            return Err(EventError::at(
                "$.detail",
                "has both \"job\" and \"tick\": true; a trigger is either one job's or the tick",
            ));
        }
        (Some(""), _) => {
            return Err(EventError::at(
                "$.detail.job",
                "is empty; expected a job name",
            ));
        }
        (Some(job), _) => (Target::Job(job.to_string()), "$.detail.job".to_string()),
        (None, Some(true)) => (Target::Tick, "$.detail.tick".to_string()),
        (None, _) => target_from_rules(&rules)?,
    };
    Ok(Event {
        source: Source::Rule { rule, id },
        target,
        time,
        target_path,
        time_path,
    })
}

/// The job a rule name addresses: `cronslot-tick` is the tick,
/// `cronslot-<job>` a job's dedicated rule.
fn target_from_rules(rules: &[(String, String)]) -> Result<(Target, String), EventError> {
    for (path, name) in rules {
        if name == TICK_RULE {
            return Ok((Target::Tick, path.clone()));
        }
        if let Some(job) = name.strip_prefix(RULE_PREFIX) {
            if !job.is_empty() {
                return Ok((Target::Job(job.to_string()), path.clone()));
            }
        }
    }
    let found = match rules.first() {
        Some((_, name)) => format!("found rule {name:?}"),
        None => "found no rule ARN".to_string(),
    };
    Err(EventError::at(
        "$.resources",
        format!(
            "{found}, and $.detail has no \"job\": name the rule \"{RULE_PREFIX}<job>\" (or \"{TICK_RULE}\"), or put \"job\" in the event's detail"
        ),
    ))
}

/// The rule names in `resources` (rule ARNs only), with their paths.
fn rule_names(root: &Map<String, Value>) -> Result<Vec<(String, String)>, EventError> {
    let path = "$.resources";
    let items = match root.get("resources") {
        None => {
            return Err(EventError::at(
                path,
                "missing; a Scheduled Event lists its rule's ARN",
            ));
        }
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(EventError::at(
                path,
                format!("expected an array of rule ARNs, found {}", kind(other)),
            ));
        }
    };
    let mut names = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let item_path = format!("{path}[{i}]");
        let Value::String(arn) = item else {
            return Err(EventError::at(
                &item_path,
                format!("expected an ARN string, found {}", kind(item)),
            ));
        };
        if let Some(name) = rule_name(arn) {
            names.push((item_path, name.to_string()));
        }
    }
    Ok(names)
}

/// `arn:<partition>:events:<region>:<account>:rule/[<bus>/]<name>` → name.
fn rule_name(arn: &str) -> Option<&str> {
    let mut parts = arn.splitn(6, ':');
    let (Some("arn"), Some(_partition), Some("events"), Some(_region), Some(_account)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    let resource = parts.next()?.strip_prefix("rule/")?;
    let name = resource.rsplit('/').next()?;
    (!name.is_empty()).then_some(name)
}

fn expect_text(root: &Map<String, Value>, key: &str, want: &str) -> Result<(), EventError> {
    let path = child("$", key);
    match root.get(key) {
        Some(Value::String(s)) if s == want => Ok(()),
        Some(Value::String(s)) => Err(EventError::at(
            &path,
            format!("is {s:?}; a Scheduled Event has {want:?}"),
        )),
        Some(other) => Err(EventError::at(
            &path,
            format!("expected the string {want:?}, found {}", kind(other)),
        )),
        None => Err(EventError::at(
            &path,
            format!("missing; a Scheduled Event has {want:?}"),
        )),
    }
}

fn optional_string<'v>(
    map: &'v Map<String, Value>,
    path: &str,
    key: &str,
) -> Result<Option<&'v str>, EventError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(EventError::at(
            &child(path, key),
            format!("expected a string, found {}", kind(other)),
        )),
    }
}

fn optional_bool(
    map: &Map<String, Value>,
    path: &str,
    key: &str,
) -> Result<Option<bool>, EventError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(EventError::at(
            &child(path, key),
            format!("expected true or false, found {}", kind(other)),
        )),
    }
}

/// Scheduler renders `<aws.scheduler.attempt-number>` into the template as
/// text; a number is accepted too.
fn attempt(value: Option<&Value>) -> Result<Option<u32>, EventError> {
    let path = "$.cronslot.attempt";
    let bad = |what: String| {
        EventError::at(
            path,
            format!("expected an attempt number (1, 2, …), found {what}"),
        )
    };
    let n = match value {
        None => return Ok(None),
        Some(Value::String(s)) => s.parse::<u32>().map_err(|_| bad(format!("{s:?}")))?,
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| bad(n.to_string()))?,
        Some(other) => return Err(bad(kind(other).to_string())),
    };
    if n == 0 {
        return Err(bad("0".to_string()));
    }
    Ok(Some(n))
}

fn instant(text: &str, path: &str) -> Result<Timestamp, EventError> {
    if text.starts_with("<aws.") {
        return Err(EventError::at(
            path,
            format!(
                "{text:?} is a placeholder that was not filled in: only an EventBridge Scheduler target's input substitutes <aws.scheduler.*> (a Rule sends its own Scheduled Event)"
            ),
        ));
    }
    cronslot_core::instant::parse_instant(text).map_err(|e| EventError::at(path, e.to_string()))
}

fn truncate_to_minute(t: Timestamp) -> Timestamp {
    let second = t.as_second();
    Timestamp::from_second(second - second.rem_euclid(60)).unwrap_or(t)
}

/// The JSON path of `key` under `path`: dotted when it is a plain
/// identifier, bracketed otherwise (`$["detail-type"]`).
fn child(path: &str, key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{key:?}]")
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_from_arns() {
        assert_eq!(
            rule_name("arn:aws:events:us-east-1:123456789012:rule/cronslot-tick"),
            Some("cronslot-tick")
        );
        assert_eq!(
            rule_name("arn:aws:events:us-east-1:123456789012:rule/my-bus/cronslot-report"),
            Some("cronslot-report")
        );
        assert_eq!(rule_name("arn:aws:lambda:us-east-1:1:function:f"), None);
        assert_eq!(rule_name("cronslot-tick"), None);
        assert_eq!(rule_name("arn:aws:events:r:a:rule/"), None);
    }

    #[test]
    fn paths_bracket_odd_keys() {
        assert_eq!(child("$", "detail-type"), "$[\"detail-type\"]");
        assert_eq!(child("$.cronslot", "job"), "$.cronslot.job");
        assert_eq!(child("$", ""), "$[\"\"]");
    }

    #[test]
    fn minutes_are_cut() {
        let t: Timestamp = "2026-03-08T07:00:59Z"
            .parse()
            .unwrap_or(Timestamp::UNIX_EPOCH);
        assert_eq!(
            format_instant(truncate_to_minute(t)),
            "2026-03-08T07:00:00Z"
        );
    }
}
