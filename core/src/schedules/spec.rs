//! A schedule's spec: what one `PUT` of a schedule says, checked.
//!
//! Every write is a full replace, so the spec is the whole of what a
//! schedule is; a field the body does not send takes its default (no
//! zone is UTC, no labels is none, not paused), never the value of the
//! version before.

use std::collections::BTreeMap;
use std::fmt;

use jiff::Timestamp;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::cron::CronExpr;
use crate::instant::parse_instant;
use crate::schedule::Zone;

/// The largest payload, in bytes of its JSON text.
pub const MAX_PAYLOAD_BYTES: usize = 16 * 1024;
/// The most labels a schedule has.
pub const MAX_LABELS: usize = 10;
/// The longest label name, in characters.
pub const MAX_LABEL_NAME_CHARS: usize = 64;
/// The longest label value, in characters.
pub const MAX_LABEL_VALUE_CHARS: usize = 256;

/// When a schedule's slots are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// A cron expression in the manifest's grammar, read in the
    /// schedule's zone; kept as it was written.
    Cron(String),
    /// One slot at this instant (a one-off). It is a whole minute, as
    /// every slot is: the tick plans minutes.
    At(Timestamp),
}

/// A checked schedule spec (see the module documentation).
#[derive(Debug, Clone)]
pub struct ScheduleSpec {
    /// The slots.
    pub when: When,
    /// The IANA zone the cron expression is read in (and the zone a
    /// one-off is shown in).
    pub timezone: String,
    /// Slots before this instant do not run (inclusive bound).
    pub start: Option<Timestamp>,
    /// Slots at or after this instant do not run (exclusive bound).
    pub end: Option<Timestamp>,
    /// Handed to every run of the schedule; JSON text as it was sent, at
    /// most [`MAX_PAYLOAD_BYTES`].
    pub payload: Option<Box<RawValue>>,
    /// At most [`MAX_LABELS`] pairs, for listing by label.
    pub labels: BTreeMap<String, String>,
    /// Slots are skipped (reason: paused) while set.
    pub paused: bool,
    /// Each slot starts at a point of this window after its instant
    /// ([`crate::jitter`]); `None`: the job's.
    pub jitter: Option<std::time::Duration>,
}

impl PartialEq for ScheduleSpec {
    /// Equal specs write nothing (an unchanged `PUT`). Payloads compare by
    /// their text: the same JSON sent with other spacing or key order is a
    /// change, which costs one write and breaks nothing.
    fn eq(&self, other: &ScheduleSpec) -> bool {
        self.when == other.when
            && self.timezone == other.timezone
            && self.start == other.start
            && self.end == other.end
            && self.payload.as_ref().map(|p| p.get()) == other.payload.as_ref().map(|p| p.get())
            && self.labels == other.labels
            && self.paused == other.paused
            && self.jitter == other.jitter
    }
}

impl Eq for ScheduleSpec {}

/// One thing wrong with a spec: the field (as the body names it, `labels.x`
/// for one label) and one sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecProblem {
    /// The field at fault; `""` for the body as a whole.
    pub field: String,
    /// What is wrong, with the rule.
    pub message: String,
}

impl fmt::Display for SpecProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

/// The body of a `PUT`, as sent: every field optional, unknown ones
/// refused (a misspelt `timezon` must not silently become UTC).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    cron: Option<String>,
    at: Option<String>,
    timezone: Option<String>,
    start: Option<String>,
    end: Option<String>,
    payload: Option<Box<RawValue>>,
    labels: Option<BTreeMap<String, String>>,
    paused: Option<bool>,
    jitter: Option<String>,
}

impl ScheduleSpec {
    /// Reads and checks the JSON body of a `PUT`. Every problem found is
    /// returned, each naming its field; nothing is half-accepted.
    pub fn from_json(text: &str) -> Result<ScheduleSpec, Vec<SpecProblem>> {
        let body: Body = crate::json::from_str(text).map_err(|e| {
            vec![SpecProblem {
                field: String::new(),
                message: format!("the body is not a schedule spec: {e}"),
            }]
        })?;
        ScheduleSpec::check(body)
    }

    fn check(body: Body) -> Result<ScheduleSpec, Vec<SpecProblem>> {
        let mut problems = Vec::new();
        let mut problem = |field: &str, message: String| {
            problems.push(SpecProblem {
                field: field.to_string(),
                message,
            })
        };
        let timezone = body.timezone.unwrap_or_else(|| "UTC".to_string());
        // With a tz database every zone is known here. Without one (a
        // Worker) only the dynamic job knows the zones its build carries:
        // the name's form is checked here, and every write and run checks
        // the zone itself through the job (`JobTemplate::for_schedule`),
        // refusing one it does not carry with the zones it does.
        let zone = if cfg!(feature = "tzdb") {
            Zone::get(&timezone).map(drop)
        } else {
            Zone::check_name(&timezone)
        };
        if let Err(e) = zone {
            problem("timezone", e.to_string());
        }
        let when = match (body.cron, body.at) {
            (Some(_), Some(_)) => {
                problem(
                    "at",
                    "a schedule has either cron or at, not both".to_string(),
                );
                None
            }
            (None, None) => {
                problem(
                    "cron",
                    "a schedule needs cron (a cron expression) or at (one RFC 3339 instant)"
                        .to_string(),
                );
                None
            }
            (Some(cron), None) => match check_cron(&cron) {
                Ok(()) => Some(When::Cron(cron)),
                Err(message) => {
                    problem("cron", message);
                    None
                }
            },
            (None, Some(at)) => match check_at(&at) {
                Ok(at) => Some(When::At(at)),
                Err(message) => {
                    problem("at", message);
                    None
                }
            },
        };
        let mut instant =
            |field: &str, text: Option<String>| match text.as_deref().map(parse_instant) {
                None => None,
                Some(Ok(t)) => Some(t),
                Some(Err(e)) => {
                    problem(field, e.to_string());
                    None
                }
            };
        let start = instant("start", body.start);
        let end = instant("end", body.end);
        if let (Some(s), Some(e)) = (start, end)
            && e <= s
        {
            problem("end", format!("end {e} is not after start {s}"));
        }
        if let Some(payload) = &body.payload
            && payload.get().len() > MAX_PAYLOAD_BYTES
        {
            problem(
                "payload",
                format!(
                    "the payload is {} bytes of JSON, more than the limit of {MAX_PAYLOAD_BYTES}",
                    payload.get().len()
                ),
            );
        }
        let labels = body.labels.unwrap_or_default();
        if labels.len() > MAX_LABELS {
            problem(
                "labels",
                format!(
                    "{} labels, more than the limit of {MAX_LABELS}",
                    labels.len()
                ),
            );
        }
        for (name, value) in &labels {
            if let Some(why) = label_name_problem(name) {
                problem(&format!("labels.{name}"), why);
            }
            if let Some(why) = label_value_problem(value) {
                problem(&format!("labels.{name}"), why);
            }
        }
        let jitter = match body.jitter.as_deref().map(crate::manifest::parse_duration) {
            None => None,
            Some(Ok(j)) => match crate::manifest::rules::jitter_problem(j) {
                None => Some(j),
                Some(why) => {
                    problem("jitter", why);
                    None
                }
            },
            Some(Err(e)) => {
                problem("jitter", format!("{e} (write it as 30s, 10m, 1h30m)"));
                None
            }
        };
        match when {
            Some(when) if problems.is_empty() => Ok(ScheduleSpec {
                when,
                timezone,
                start,
                end,
                payload: body.payload,
                labels,
                paused: body.paused.unwrap_or(false),
                jitter,
            }),
            _ => Err(problems),
        }
    }

    /// The spec as the body of a `PUT` that writes it again (and as a
    /// record keeps it): `from_json(spec.to_json())` is `spec`.
    pub fn to_json(&self) -> String {
        // Writing a struct of strings, instants and raw JSON cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Why `text` cannot be a schedule's cron expression, if it cannot.
fn check_cron(text: &str) -> Result<(), String> {
    match CronExpr::parse(text) {
        Ok(expr) if expr.never_fires() => {
            Err(format!("cron {text:?} never fires: no date matches it"))
        }
        Ok(_) => Ok(()),
        Err(e) => Err(format!("invalid cron expression {text:?}: {e}")),
    }
}

/// The instant of a one-off, which must be a whole minute.
fn check_at(text: &str) -> Result<Timestamp, String> {
    let at = parse_instant(text).map_err(|e| e.to_string())?;
    if at.as_second().rem_euclid(60) != 0 || at.subsec_nanosecond() != 0 {
        return Err(format!(
            "at {text:?} is not a whole minute: slots are minutes, so write the seconds as :00"
        ));
    }
    Ok(at)
}

fn label_name_problem(name: &str) -> Option<String> {
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_LABEL_NAME_CHARS {
        return Some(format!(
            "a label name is 1 to {MAX_LABEL_NAME_CHARS} characters ({chars} here)"
        ));
    }
    name.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')))
        .map(|c| format!("{c:?} in a label name: names are ASCII letters, digits and - _ . :"))
}

fn label_value_problem(value: &str) -> Option<String> {
    let chars = value.chars().count();
    if chars > MAX_LABEL_VALUE_CHARS {
        return Some(format!(
            "a label value is at most {MAX_LABEL_VALUE_CHARS} characters ({chars} here)"
        ));
    }
    value
        .chars()
        .any(char::is_control)
        .then(|| "a label value holds no control characters".to_string())
}

/// The spec as records keep it and `GET` shows it: the body's own fields,
/// defaults written out (`timezone`, `paused`), `labels` left out when
/// there are none.
impl Serialize for ScheduleSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            cron: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            #[serde(with = "crate::instant::text::option")]
            at: Option<Timestamp>,
            timezone: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            #[serde(with = "crate::instant::text::option")]
            start: Option<Timestamp>,
            #[serde(skip_serializing_if = "Option::is_none")]
            #[serde(with = "crate::instant::text::option")]
            end: Option<Timestamp>,
            #[serde(skip_serializing_if = "Option::is_none")]
            payload: Option<&'a RawValue>,
            #[serde(skip_serializing_if = "BTreeMap::is_empty")]
            labels: &'a BTreeMap<String, String>,
            paused: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            jitter: Option<String>,
        }
        let (cron, at) = match &self.when {
            When::Cron(c) => (Some(c.as_str()), None),
            When::At(t) => (None, Some(*t)),
        };
        Out {
            cron,
            at,
            timezone: &self.timezone,
            start: self.start,
            end: self.end,
            payload: self.payload.as_deref(),
            labels: &self.labels,
            paused: self.paused,
            jitter: self.jitter.map(crate::manifest::format_duration),
        }
        .serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(body: &str) -> Vec<String> {
        match ScheduleSpec::from_json(body) {
            Ok(spec) => panic!("accepted {body}: {spec:?}"),
            Err(p) => p.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn a_cron_spec_takes_defaults_for_what_is_not_sent() {
        let spec = ScheduleSpec::from_json(r#"{"cron": "0 9 5 * *"}"#).unwrap();
        assert_eq!(spec.when, When::Cron("0 9 5 * *".into()));
        assert_eq!(spec.timezone, "UTC");
        assert_eq!((spec.start, spec.end, spec.paused), (None, None, false));
        assert!(spec.payload.is_none() && spec.labels.is_empty());
        assert_eq!(
            spec.to_json(),
            r#"{"cron":"0 9 5 * *","timezone":"UTC","paused":false}"#
        );
    }

    #[test]
    fn every_field_round_trips_and_the_payload_keeps_its_text() {
        let body = r#"{"at":"2027-01-05T09:00:00Z","timezone":"Europe/Berlin","start":"2027-01-01T00:00:00Z","end":"2027-02-01T00:00:00Z","payload":{"tenant": 42, "plan":"pro"},"labels":{"plan":"pro","region":"eu"},"paused":true}"#;
        let spec = ScheduleSpec::from_json(body).unwrap();
        assert_eq!(spec.when, When::At("2027-01-05T09:00:00Z".parse().unwrap()));
        assert_eq!(
            spec.payload.as_ref().unwrap().get(),
            r#"{"tenant": 42, "plan":"pro"}"#
        );
        let again = ScheduleSpec::from_json(&spec.to_json()).unwrap();
        assert_eq!(again, spec);
    }

    #[test]
    fn each_problem_names_its_field() {
        assert_eq!(
            problems(r#"{"cron":"0 9 * *","timezone":"Mars/Olympus"}"#),
            [
                "timezone: \"Mars/Olympus\" is not an IANA time zone".to_string(),
                format!(
                    "cron: invalid cron expression \"0 9 * *\": {}",
                    CronExpr::parse("0 9 * *").unwrap_err()
                ),
            ]
        );
        assert_eq!(
            problems("{}"),
            ["cron: a schedule needs cron (a cron expression) or at (one RFC 3339 instant)"]
        );
        assert_eq!(
            problems(r#"{"cron":"* * * * *","at":"2027-01-01T00:00:00Z"}"#),
            ["at: a schedule has either cron or at, not both"]
        );
        assert_eq!(
            problems(r#"{"at":"2027-01-01T00:00:30Z"}"#),
            [
                "at: at \"2027-01-01T00:00:30Z\" is not a whole minute: slots are minutes, so write the seconds as :00"
            ]
        );
        assert_eq!(
            problems(r#"{"cron":"0 0 30 2 *"}"#),
            ["cron: cron \"0 0 30 2 *\" never fires: no date matches it"]
        );
        let p = problems(
            r#"{"cron":"* * * * *","start":"2027-02-01T00:00:00Z","end":"2027-01-01T00:00:00Z"}"#,
        );
        assert_eq!(p.len(), 1);
        assert!(
            p[0].starts_with("end: end 2027-01-01T00:00:00Z is not after start"),
            "{p:?}"
        );
        assert!(problems(r#"{"cron":"* * * * *","start":"tomorrow"}"#)[0].starts_with("start: "));
    }

    #[test]
    fn payloads_and_labels_have_limits() {
        let big = format!(
            r#"{{"cron":"* * * * *","payload":"{}"}}"#,
            "x".repeat(MAX_PAYLOAD_BYTES)
        );
        assert_eq!(
            problems(&big),
            [format!(
                "payload: the payload is {} bytes of JSON, more than the limit of 16384",
                MAX_PAYLOAD_BYTES + 2
            )]
        );
        let fits = format!(
            r#"{{"cron":"* * * * *","payload":"{}"}}"#,
            "x".repeat(MAX_PAYLOAD_BYTES - 2)
        );
        assert!(ScheduleSpec::from_json(&fits).is_ok());
        let labels: Vec<String> = (0..11).map(|i| format!(r#""l{i}":"v""#)).collect();
        let many = format!(
            r#"{{"cron":"* * * * *","labels":{{{}}}}}"#,
            labels.join(",")
        );
        assert_eq!(
            problems(&many),
            ["labels: 11 labels, more than the limit of 10"]
        );
        assert_eq!(
            problems(r#"{"cron":"* * * * *","labels":{"a b":"x","ok":"line\nbreak"}}"#),
            [
                "labels.a b: ' ' in a label name: names are ASCII letters, digits and - _ . :",
                "labels.ok: a label value holds no control characters",
            ]
        );
    }

    #[test]
    fn unknown_fields_and_other_shapes_are_refused() {
        let p = problems(r#"{"cron":"* * * * *","timezon":"UTC"}"#);
        assert!(p[0].contains("unknown field `timezon`"), "{p:?}");
        assert!(problems("[]")[0].starts_with("the body is not a schedule spec"));
        assert!(problems(r#"{"cron": 5}"#)[0].starts_with("the body is not a schedule spec"));
    }
}
