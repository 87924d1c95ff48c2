//! A keyed run: one run of a dynamic job, named by a business key
//! (`order-123`), enqueued by the application and answered "202 + run id,
//! then its status" (docs/design.md, "Keyed runs").
//!
//! A keyed run is a one-off schedule of the job: its record is `job/key`,
//! its one slot `job/key@instant`, so every part of the run protocol
//! (fences, leases, retries, the dead letters, the effect ledger) works on
//! it unchanged. What is particular to it is here: the request that
//! enqueues it ([`RunRequest`]), which is never replaced by a second one
//! with the same key, and the status a client polls ([`RunView`]).

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::spec::{MAX_PAYLOAD_BYTES, SpecProblem};
use crate::instant::parse_instant;

/// What one enqueue asks for, checked.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Handed to the run; JSON text as it was sent, at most
    /// [`MAX_PAYLOAD_BYTES`].
    pub payload: Option<Box<RawValue>>,
    /// The slot: the instant the run may start, a whole minute. `None`:
    /// now, that is the minute the store's clock is in when the run is
    /// enqueued (a slot is a minute, and this one is due at once).
    pub at: Option<Timestamp>,
}

/// The body of an enqueue, as sent: unknown fields are refused (a misspelt
/// `paylaod` must not silently enqueue a run without one).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    payload: Option<Box<RawValue>>,
    at: Option<String>,
}

impl RunRequest {
    /// Reads and checks the JSON body of an enqueue (`{"payload": …,
    /// "at": "…"}`, both optional). Every problem is returned, each naming
    /// its field.
    pub fn from_json(text: &str) -> Result<RunRequest, Vec<SpecProblem>> {
        let body: Body = crate::json::from_str(text).map_err(|e| {
            vec![SpecProblem {
                field: String::new(),
                message: format!("the body is not a run request: {e}"),
            }]
        })?;
        let mut problems = Vec::new();
        if let Some(payload) = &body.payload
            && payload.get().len() > MAX_PAYLOAD_BYTES
        {
            problems.push(SpecProblem {
                field: "payload".to_string(),
                message: format!(
                    "the payload is {} bytes of JSON, more than the limit of {MAX_PAYLOAD_BYTES}",
                    payload.get().len()
                ),
            });
        }
        let at = match body.at.as_deref().map(whole_minute) {
            None => None,
            Some(Ok(at)) => Some(at),
            Some(Err(message)) => {
                problems.push(SpecProblem {
                    field: "at".to_string(),
                    message,
                });
                None
            }
        };
        if problems.is_empty() {
            Ok(RunRequest {
                payload: body.payload,
                at,
            })
        } else {
            Err(problems)
        }
    }

    /// The request as the body that sends it again.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Out<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            payload: Option<&'a RawValue>,
            #[serde(skip_serializing_if = "Option::is_none")]
            #[serde(with = "crate::instant::text::option")]
            at: Option<Timestamp>,
        }
        // A struct of raw JSON and an instant always serializes.
        serde_json::to_string(&Out {
            payload: self.payload.as_deref(),
            at: self.at,
        })
        .unwrap_or_default()
    }
}

/// The slot of a run enqueued at `now` without an `at`: the minute `now` is
/// in, so that the run is due at once.
pub fn slot_of_now(now: Timestamp) -> Timestamp {
    let second = now.as_second().div_euclid(60) * 60;
    Timestamp::from_second(second).unwrap_or(now)
}

/// An `at`, which must be a whole minute: slots are minutes.
fn whole_minute(text: &str) -> Result<Timestamp, String> {
    let at = parse_instant(text).map_err(|e| e.to_string())?;
    if at.as_second().rem_euclid(60) != 0 || at.subsec_nanosecond() != 0 {
        return Err(format!(
            "at {text:?} is not a whole minute: a run's slot is a minute, so write the seconds as :00"
        ));
    }
    Ok(at)
}

/// Where a keyed run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Enqueued; no attempt has started yet (or its `at` has not come).
    Pending,
    /// An attempt holds the run's lease.
    Running,
    /// An attempt failed; the next waits for its backoff (or was
    /// redriven from the dead letters).
    Retrying,
    /// An attempt succeeded: the run is done.
    Succeeded,
    /// Its retries are spent or its error was permanent: it is in the
    /// job's dead letters, where a redrive sends it back.
    Dead,
}

impl RunStatus {
    /// The status as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Retrying => "retrying",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Dead => "dead",
        }
    }

    /// Whether the run has ended (nothing more runs unless redriven).
    pub fn ended(self) -> bool {
        matches!(self, RunStatus::Succeeded | RunStatus::Dead)
    }

    /// Every status, in the order of a run's life.
    pub const ALL: [RunStatus; 5] = [
        RunStatus::Pending,
        RunStatus::Running,
        RunStatus::Retrying,
        RunStatus::Succeeded,
        RunStatus::Dead,
    ];

    /// The status the API's word names (`dead`), as [`as_str`](Self::as_str)
    /// writes it; `None` for any other text.
    pub fn parse(text: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// A keyed run as a client polls it: the document of `GET {p}/runs/{job}/{key}`
/// and, with `created`, of the enqueue's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunView {
    /// The dynamic job.
    pub job: String,
    /// The business key.
    pub key: String,
    /// The run id: the slot id `job/key@instant`, which is also the
    /// run's idempotency key (`Idempotency-Key`, `CRONSLOT_IDEMPOTENCY_KEY`).
    pub run: String,
    /// On an enqueue's answer: whether this request created the run
    /// (`false`: the key named it already). Absent on a status read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
    /// Where it is.
    pub status: RunStatus,
    /// Attempts started so far (0 while pending).
    pub attempts: u32,
    /// The last attempt's error, if it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the run was enqueued (the store's clock).
    #[serde(with = "crate::instant::text")]
    pub enqueued: Timestamp,
    /// The slot: when the run may start.
    #[serde(with = "crate::instant::text")]
    pub at: Timestamp,
    /// When the newest attempt started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::instant::text::option")]
    pub started: Option<Timestamp>,
    /// When the run ended (succeeded or went dead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::instant::text::option")]
    pub finished: Option<Timestamp>,
    /// When a waiting retry may start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::instant::text::option")]
    pub next_attempt: Option<Timestamp>,
    /// The fence of the newest attempt's claim (0 before the first).
    pub fence: u64,
    /// The key is remembered until this instant (once the run ended);
    /// an enqueue of it after then is a new run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::instant::text::option")]
    pub remembered_until: Option<Timestamp>,
    /// The payload, JSON text as it was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Box<RawValue>>,
}

impl PartialEq for RunView {
    /// Payloads compare by their text, as [`ScheduleSpec`](super::ScheduleSpec)'s do.
    fn eq(&self, other: &RunView) -> bool {
        let text = |v: &RunView| v.payload.as_ref().map(|p| p.get().to_string());
        (&self.job, &self.key, &self.run, self.created)
            == (&other.job, &other.key, &other.run, other.created)
            && (
                self.status,
                self.attempts,
                &self.last_error,
                self.enqueued,
                self.at,
                self.started,
                self.finished,
                self.next_attempt,
                self.fence,
                self.remembered_until,
            ) == (
                other.status,
                other.attempts,
                &other.last_error,
                other.enqueued,
                other.at,
                other.started,
                other.finished,
                other.next_attempt,
                other.fence,
                other.remembered_until,
            )
            && text(self) == text(other)
    }
}

impl Eq for RunView {}

impl Eq for RunRequest {}

impl PartialEq for RunRequest {
    fn eq(&self, other: &RunRequest) -> bool {
        self.at == other.at && same_payload(self.payload.as_deref(), other.payload.as_deref())
    }
}

/// Whether two payloads are the same JSON value: a client that sends its
/// request again with other spacing or key order sends the same payload.
/// (Numbers compare as written: `1` and `1.0` differ.)
pub fn same_payload(a: Option<&RawValue>, b: Option<&RawValue>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.get() == b.get()
                || matches!(
                    (
                        serde_json::from_str::<serde_json::Value>(a.get()),
                        serde_json::from_str::<serde_json::Value>(b.get()),
                    ),
                    (Ok(x), Ok(y)) if x == y
                )
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(body: &str) -> Vec<String> {
        match RunRequest::from_json(body) {
            Ok(r) => panic!("accepted {body}: {r:?}"),
            Err(p) => p.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn a_request_reads_its_payload_and_at() {
        let r =
            RunRequest::from_json(r#"{"payload": {"order": 123}, "at": "2026-12-05T09:00:00Z"}"#)
                .unwrap();
        assert_eq!(r.payload.as_ref().unwrap().get(), r#"{"order": 123}"#);
        assert_eq!(r.at, Some("2026-12-05T09:00:00Z".parse().unwrap()));
        let empty = RunRequest::from_json("{}").unwrap();
        assert!(empty.payload.is_none() && empty.at.is_none());
        assert_eq!(
            RunRequest::from_json(&r.to_json()).unwrap(),
            r,
            "to_json reads back"
        );
    }

    #[test]
    fn bad_requests_name_their_field() {
        assert_eq!(
            problems(r#"{"at": "2026-12-05T09:00:30Z"}"#),
            [
                "at: at \"2026-12-05T09:00:30Z\" is not a whole minute: a run's slot is a minute, so write the seconds as :00"
            ]
        );
        assert!(problems(r#"{"paylaod": 1}"#)[0].contains("unknown field `paylaod`"));
        assert!(problems(r#"{"at": "tomorrow"}"#)[0].starts_with("at: "));
        let big = format!(r#"{{"payload": "{}"}}"#, "x".repeat(MAX_PAYLOAD_BYTES));
        assert!(problems(&big)[0].starts_with("payload: the payload is 16386 bytes"));
        assert!(problems("[1]")[0].starts_with("the body is not a run request"));
    }

    #[test]
    fn a_status_reads_back_from_its_word() {
        for status in RunStatus::ALL {
            assert_eq!(RunStatus::parse(status.as_str()), Some(status));
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
        }
        assert_eq!(RunStatus::parse("Dead"), None);
        assert_eq!(RunStatus::parse(""), None);
    }

    #[test]
    fn payloads_compare_as_json_values() {
        let p = |t: &str| RawValue::from_string(t.to_string()).unwrap();
        assert!(same_payload(
            Some(&p(r#"{"a":1,"b":[2]}"#)),
            Some(&p(r#"{ "b": [2], "a": 1 }"#))
        ));
        assert!(!same_payload(
            Some(&p(r#"{"a":1}"#)),
            Some(&p(r#"{"a":2}"#))
        ));
        assert!(!same_payload(Some(&p("1")), None));
        assert!(same_payload(None, None));
    }

    #[test]
    fn now_is_the_minute_it_is_in() {
        let now: Timestamp = "2026-12-05T09:00:59.9Z".parse().unwrap();
        assert_eq!(slot_of_now(now), "2026-12-05T09:00:00Z".parse().unwrap());
    }
}
