//! The manifest as written: serde structs with spans, and the deserialisation
//! of one table at a time that reports every bad key, not just the first.
//!
//! serde stops at the first error in a struct. To report them all, a table
//! that fails is deserialised again without the key the error points into,
//! until it succeeds; the removed keys are *poisoned*, so later checks that
//! involve them stay quiet instead of reporting consequences of the same
//! mistake.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::time::Duration;

use jiff::Timestamp;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use super::duration::parse_duration;
use super::rules::OverlapMode;
use super::{CatchUp, Delivery, Trigger};
use crate::schedule::{DstGap, DstOverlap};

/// Every key a `[defaults]` or `[[job]]` table may have.
pub(super) const KEYS: [&str; 27] = [
    "name",
    "schedule",
    "dynamic",
    "key_retention",
    "timezone",
    "trigger",
    "lease",
    "starting_deadline",
    "catch_up",
    "max_catch_up",
    "overlap",
    "max_concurrency",
    "retry",
    "delivery",
    "dst_gap",
    "dst_overlap",
    "skew_margin",
    "jitter",
    "paused",
    "start_at",
    "end_at",
    "stale_after",
    "history",
    "timeout",
    "command",
    "http",
    "env",
];

/// Keys that describe one job and so cannot be defaults.
pub(super) const JOB_ONLY_KEYS: [&str; 9] = [
    "name",
    "schedule",
    "dynamic",
    "key_retention",
    "start_at",
    "end_at",
    "command",
    "http",
    "env",
];

/// One `[defaults]` or `[[job]]` table. Both share this shape so a job-only
/// key in `[defaults]` gets a precise message instead of "unknown key".
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTable {
    pub name: Option<Spanned<String>>,
    pub schedule: Option<Spanned<String>>,
    /// `true`: the job's schedules are data, and it has no `schedule`.
    pub dynamic: Option<Spanned<bool>>,
    /// A dynamic job's: how long a keyed run's key is remembered after the
    /// run ends.
    pub key_retention: Option<Spanned<DurationValue>>,
    pub timezone: Option<Spanned<String>>,
    pub trigger: Option<Spanned<Trigger>>,
    pub lease: Option<Spanned<DurationValue>>,
    pub starting_deadline: Option<Spanned<DurationValue>>,
    pub catch_up: Option<Spanned<CatchUp>>,
    pub max_catch_up: Option<Spanned<u32>>,
    pub overlap: Option<Spanned<OverlapMode>>,
    pub max_concurrency: Option<Spanned<u32>>,
    pub retry: Option<Spanned<RawRetry>>,
    pub delivery: Option<Spanned<Delivery>>,
    pub dst_gap: Option<Spanned<DstGap>>,
    pub dst_overlap: Option<Spanned<DstOverlap>>,
    pub skew_margin: Option<Spanned<DurationValue>>,
    pub jitter: Option<Spanned<DurationValue>>,
    pub paused: Option<Spanned<bool>>,
    pub start_at: Option<Spanned<InstantValue>>,
    pub end_at: Option<Spanned<InstantValue>>,
    pub stale_after: Option<Spanned<DurationValue>>,
    pub history: Option<Spanned<RawHistory>>,
    pub timeout: Option<Spanned<DurationValue>>,
    pub command: Option<Spanned<Vec<Spanned<String>>>>,
    pub http: Option<Spanned<RawHttp>>,
    pub env: Option<Spanned<BTreeMap<Spanned<String>, Spanned<String>>>>,
}

impl RawTable {
    /// The keys present, with the span of their value.
    pub fn present(&self) -> Vec<(&'static str, Range<usize>)> {
        let mut out = Vec::new();
        let mut add = |key: &'static str, span: Option<Range<usize>>| {
            if let Some(span) = span {
                out.push((key, span));
            }
        };
        add("name", self.name.as_ref().map(Spanned::span));
        add("schedule", self.schedule.as_ref().map(Spanned::span));
        add("dynamic", self.dynamic.as_ref().map(Spanned::span));
        add(
            "key_retention",
            self.key_retention.as_ref().map(Spanned::span),
        );
        add("timezone", self.timezone.as_ref().map(Spanned::span));
        add("trigger", self.trigger.as_ref().map(Spanned::span));
        add("lease", self.lease.as_ref().map(Spanned::span));
        add(
            "starting_deadline",
            self.starting_deadline.as_ref().map(Spanned::span),
        );
        add("catch_up", self.catch_up.as_ref().map(Spanned::span));
        add(
            "max_catch_up",
            self.max_catch_up.as_ref().map(Spanned::span),
        );
        add("overlap", self.overlap.as_ref().map(Spanned::span));
        add(
            "max_concurrency",
            self.max_concurrency.as_ref().map(Spanned::span),
        );
        add("retry", self.retry.as_ref().map(Spanned::span));
        add("delivery", self.delivery.as_ref().map(Spanned::span));
        add("dst_gap", self.dst_gap.as_ref().map(Spanned::span));
        add("dst_overlap", self.dst_overlap.as_ref().map(Spanned::span));
        add("skew_margin", self.skew_margin.as_ref().map(Spanned::span));
        add("jitter", self.jitter.as_ref().map(Spanned::span));
        add("paused", self.paused.as_ref().map(Spanned::span));
        add("start_at", self.start_at.as_ref().map(Spanned::span));
        add("end_at", self.end_at.as_ref().map(Spanned::span));
        add("stale_after", self.stale_after.as_ref().map(Spanned::span));
        add("history", self.history.as_ref().map(Spanned::span));
        add("timeout", self.timeout.as_ref().map(Spanned::span));
        add("command", self.command.as_ref().map(Spanned::span));
        add("http", self.http.as_ref().map(Spanned::span));
        add("env", self.env.as_ref().map(Spanned::span));
        out
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRetry {
    pub max_attempts: Option<Spanned<u32>>,
    pub backoff: Option<Spanned<DurationValue>>,
    pub max_backoff: Option<Spanned<DurationValue>>,
    pub past_next_slot: Option<Spanned<bool>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHistory {
    pub succeeded: Option<Spanned<u32>>,
    pub failed: Option<Spanned<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHttp {
    pub url: Option<Spanned<String>>,
    pub method: Option<Spanned<String>>,
    pub headers: Option<Spanned<BTreeMap<Spanned<String>, Spanned<String>>>>,
}

/// A duration string, parsed while deserialising so its errors carry the
/// value's span like every other type error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DurationValue(pub Duration);

impl<'de> Deserialize<'de> for DurationValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = DurationValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration string such as \"90s\" or \"15m\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<DurationValue, E> {
                parse_duration(v).map(DurationValue).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<DurationValue, E> {
                Err(E::custom(format!(
                    "{v} is a bare number; durations are strings with a unit, such as \"{v}s\" or \"{v}m\""
                )))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<DurationValue, E> {
                Err(E::custom(format!(
                    "{v} is a bare number; durations are strings with a unit, such as \"{v}s\" or \"{v}m\""
                )))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<DurationValue, E> {
                Err(E::custom(format!(
                    "{v} is a bare number; durations are strings with whole units, such as \"1h30m\""
                )))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// An instant, written as an RFC 3339 string or a TOML offset date-time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct InstantValue(pub Timestamp);

fn parse_instant<E: de::Error>(text: &str) -> Result<InstantValue, E> {
    crate::instant::parse_instant(text)
        .map(InstantValue)
        .map_err(E::custom)
}

impl<'de> Deserialize<'de> for InstantValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = InstantValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 instant such as 2026-01-01T00:00:00Z")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<InstantValue, E> {
                parse_instant(v)
            }
            // TOML date-times reach serde as a one-entry map; toml's own
            // type knows how to read it back.
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<InstantValue, A::Error> {
                let datetime =
                    toml::value::Datetime::deserialize(de::value::MapAccessDeserializer::new(map))?;
                parse_instant(&datetime.to_string())
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// The outcome of deserialising one table.
pub(super) struct TableOutcome {
    pub raw: RawTable,
    /// Keys whose value was refused (and removed): checks involving them
    /// are skipped.
    pub poisoned: BTreeSet<String>,
    /// Problems found, as (span, message).
    pub problems: Vec<(Range<usize>, String)>,
}

/// Deserialises `table` (a `[defaults]` or `[[job]]`; `label` names it in
/// messages), collecting one problem per bad key.
pub(super) fn deserialize_table(table: &Spanned<&DeTable<'_>>, label: &str) -> TableOutcome {
    let span = table.span();
    // The table as written until a key is refused: a valid table is copied
    // once, for the deserializer, which takes its input by value.
    let mut current = Cow::Borrowed(*table.get_ref());
    let mut poisoned = BTreeSet::new();
    let mut problems = Vec::new();
    // Each failed round removes one key, so this ends within len + 1 rounds.
    for _ in 0..=table.get_ref().len() {
        let value = Spanned::new(span.clone(), DeValue::Table(current.as_ref().clone()));
        let error = match RawTable::deserialize(ValueDeserializer::from(value)) {
            Ok(raw) => {
                return TableOutcome {
                    raw,
                    poisoned,
                    problems,
                };
            }
            Err(e) => e,
        };
        let at = error.span().unwrap_or(span.clone());
        let path = key_path(&current, at.start);
        let Some(top) = path.first().cloned() else {
            problems.push((at, error.message().to_string()));
            break;
        };
        problems.push((at, describe(error.message(), &path, label)));
        current = Cow::Owned(
            current
                .into_owned()
                .into_iter()
                .filter(|(k, _)| k.get_ref().as_ref() != top.as_str())
                .collect(),
        );
        poisoned.insert(top);
    }
    // Not reached for errors that point into a key; an error without one
    // (which serde does not produce for these structs) poisons everything.
    poisoned.extend(table.get_ref().keys().map(|k| k.get_ref().to_string()));
    TableOutcome {
        raw: RawTable::default(),
        poisoned,
        problems,
    }
}

fn contains(span: &Range<usize>, offset: usize) -> bool {
    span.contains(&offset) || span.start == offset
}

/// The dotted key path (outermost first) whose key or value holds `offset`.
/// Tables are searched inside even when their span does not hold it: a
/// table opened by its own header (`[job.retry]`) spans only the header.
fn key_path(table: &DeTable<'_>, offset: usize) -> Vec<String> {
    for (key, value) in table.iter() {
        let mut path = vec![key.get_ref().to_string()];
        if contains(&key.span(), offset) {
            return path;
        }
        if let DeValue::Table(inner) = value.get_ref() {
            let below = key_path(inner, offset);
            if !below.is_empty() {
                path.extend(below);
                return path;
            }
        }
        if contains(&value.span(), offset) {
            if let DeValue::Array(items) = value.get_ref() {
                if let Some(i) = items.iter().position(|v| contains(&v.span(), offset)) {
                    path.push(format!("[{i}]"));
                }
            }
            return path;
        }
    }
    Vec::new()
}

/// `retry.backoff`, `command[1]`.
fn join_path(path: &[String]) -> String {
    let mut out = String::new();
    for segment in path {
        if !out.is_empty() && !segment.starts_with('[') {
            out.push('.');
        }
        out.push_str(segment);
    }
    out
}

/// The backquoted names in a serde message (`expected one of `a`, `b``).
fn quoted(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The candidate closest to `word`, if it is close enough to be a typo:
/// a few edits away, or sharing its first four letters.
pub(super) fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_lowercase().replace('-', "_");
    crate::suggest::close_names(&lower, candidates.iter().copied(), 1)
        .first()
        .copied()
}

fn list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// What serde's wording of an expected type means in a manifest.
fn plain_expected(expected: &str) -> String {
    match expected {
        "u32" | "u64" | "usize" => "a whole number (0 or more)".into(),
        "a boolean" => "true or false".into(),
        "a sequence" => "an array".into(),
        "a map" => "a table".into(),
        e if e.starts_with("struct ") => "a table".into(),
        e if e.starts_with("enum ") || e.contains("variant") => "a string".into(),
        e => e.to_string(),
    }
}

/// Rewrites a serde message into one sentence naming the key.
fn describe(message: &str, path: &[String], label: &str) -> String {
    let dotted = join_path(path);
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let names = quoted(rest);
        let word = names.first().copied().unwrap_or("");
        let expected = names.get(1..).unwrap_or(&[]);
        let place = if path.len() > 1 {
            join_path(&path[..path.len() - 1])
        } else {
            label.to_string()
        };
        return match closest(word, expected) {
            Some(s) => format!("unknown key `{word}` in {place}; did you mean `{s}`?"),
            None if expected.is_empty() => format!("unknown key `{word}` in {place}"),
            None => format!(
                "unknown key `{word}` in {place}; the keys are {}",
                expected.join(", ")
            ),
        };
    }
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        let names = quoted(rest);
        let word = names.first().copied().unwrap_or("");
        let expected = names.get(1..).unwrap_or(&[]);
        let hint = match closest(word, expected) {
            Some(s) => format!("; did you mean \"{s}\"?"),
            None => String::new(),
        };
        return format!(
            "unknown {dotted} \"{word}\"; expected {}{hint}",
            list(expected)
        );
    }
    if let Some(rest) = message.strip_prefix("invalid type: ") {
        if let Some((found, expected)) = rest.split_once(", expected ") {
            return format!(
                "{dotted} must be {}, not {}",
                plain_expected(expected),
                found.replace('`', "")
            );
        }
    }
    if let Some(rest) = message.strip_prefix("invalid value: ") {
        if let Some((found, expected)) = rest.split_once(", expected ") {
            let number = found
                .strip_prefix("integer `")
                .and_then(|n| n.strip_suffix('`'))
                .and_then(|n| n.parse::<u64>().ok());
            if let Some(n) = number {
                return format!("{dotted} {n} is too large");
            }
            return format!(
                "{dotted} must be {}, not {}",
                plain_expected(expected),
                found.replace('`', "")
            );
        }
    }
    if message.starts_with("wanted string or table") {
        // toml's wording when an enum value is neither.
        return format!("{dotted} must be a string");
    }
    format!("invalid {dotted}: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`KEYS`] names every field of [`RawTable`], in its order.
    #[test]
    fn keys_are_the_fields_of_a_table() {
        let text = "name = \"a\"\nschedule = \"* * * * *\"\ndynamic = false\nkey_retention = \"30d\"\ntimezone = \"UTC\"\ntrigger = \"tick\"\nlease = \"2m\"\nstarting_deadline = \"1m\"\ncatch_up = \"all\"\nmax_catch_up = 2\noverlap = \"allow\"\nmax_concurrency = 2\nretry = { max_attempts = 1 }\ndelivery = \"at_most_once\"\ndst_gap = \"skip\"\ndst_overlap = \"twice\"\nskew_margin = \"1s\"\njitter = \"10s\"\npaused = true\nstart_at = \"2026-01-01T00:00:00Z\"\nend_at = \"2027-01-01T00:00:00Z\"\nstale_after = \"1h\"\nhistory = { failed = 1 }\ntimeout = \"1m\"\ncommand = [\"true\"]\nhttp = { url = \"https://example.com\" }\nenv = { A = \"b\" }\n";
        let table = DeTable::parse(text).expect("toml");
        let outcome = deserialize_table(&Spanned::new(table.span(), table.get_ref()), "[[job]]");
        assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
        let present: Vec<&str> = outcome.raw.present().into_iter().map(|(k, _)| k).collect();
        assert_eq!(present, KEYS);
    }
}
