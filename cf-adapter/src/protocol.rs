//! The messages between the Worker and a job's Durable Object: one JSON
//! request per coordinator operation, one JSON answer.
//!
//! Every request carries the job's spec (see [`crate::spec_text`]) and the
//! caller's `now`: the object has no manifest and no clock of its own, so
//! it applies exactly the transitions the caller's spec and time imply,
//! like every other store of the conformance suite.
//!
//! Enums travel in serde's default, externally tagged form
//! (`{"claim": {…}}`, `"record"`): internally and adjacently tagged enums
//! are read through serde's generic `Content` buffer, which was ≈ 100 KB of
//! the Worker (docs/performance.md, "Worker size").

use cronslot_core::coord::{
    BackfillError, Claim, CoordError, EffectBegin, EffectFinish, EffectRecord, FailOutcome,
    JobState, Refusal, StoreError, StoreErrorKind, Trigger, TriggerError,
};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// One operation on one job's object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRequest {
    /// The job the object is named after; must be the spec's name.
    pub job: String,
    /// The job's spec as a one-job manifest.
    pub spec: String,
    pub op: Op,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Claim {
        now: Timestamp,
        trigger: Trigger,
        owner: String,
    },
    Complete {
        fence: u64,
        result: Option<String>,
        now: Timestamp,
    },
    Fail {
        fence: u64,
        error: String,
        permanent: bool,
        now: Timestamp,
    },
    Heartbeat {
        fence: u64,
        now: Timestamp,
    },
    Checkpoint {
        fence: u64,
        value: String,
        now: Timestamp,
    },
    Status {
        now: Timestamp,
    },
    /// The record as stored, not brought up to now.
    Record,
    Pause {
        now: Timestamp,
    },
    Resume {
        now: Timestamp,
    },
    Redrive {
        slot: Option<Timestamp>,
        now: Timestamp,
    },
    Backfill {
        from: Timestamp,
        to: Timestamp,
        now: Timestamp,
        dry_run: bool,
    },
    BeginEffect {
        key: String,
        owner: String,
        fence: u64,
        now: Timestamp,
        hold_ms: u64,
    },
    FinishEffect {
        key: String,
        fence: u64,
        result: String,
        now: Timestamp,
    },
    ReadEffect {
        key: String,
    },
}

impl Op {
    /// The operation's name, for logs and errors.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Claim { .. } => "claim",
            Op::Complete { .. } => "complete",
            Op::Fail { .. } => "fail",
            Op::Heartbeat { .. } => "heartbeat",
            Op::Checkpoint { .. } => "checkpoint",
            Op::Status { .. } => "status",
            Op::Record => "record",
            Op::Pause { .. } => "pause",
            Op::Resume { .. } => "resume",
            Op::Redrive { .. } => "redrive",
            Op::Backfill { .. } => "backfill",
            Op::BeginEffect { .. } => "begin_effect",
            Op::FinishEffect { .. } => "finish_effect",
            Op::ReadEffect { .. } => "read_effect",
        }
    }
}

/// A successful answer; which variant depends on the operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Claim(Claim),
    Done,
    Fail(FailOutcome),
    Expiry(Timestamp),
    State(Box<JobState>),
    Record(Option<Box<JobState>>),
    Slots(Vec<Timestamp>),
    EffectBegin(EffectBegin),
    EffectFinish(EffectFinish),
    Effect(Option<EffectRecord>),
}

/// The answer on the wire: `{"Ok": …}` or `{"Err": …}`.
pub type ObjectReply = Result<Answer, WireError>;

/// A [`CoordError`] on the wire (its `&'static str` parts become text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireError {
    Store {
        kind: WireStoreKind,
        message: String,
    },
    Superseded {
        fence: u64,
        latest: u64,
    },
    Expired {
        fence: u64,
        expired_at: Timestamp,
    },
    TooLarge {
        what: String,
        bytes: usize,
        max: usize,
    },
    NotASlot {
        slot: Timestamp,
    },
    Backfill(BackfillError),
    Contention {
        attempts: u32,
    },
    /// The request itself was wrong: bad JSON, a spec that does not parse,
    /// a job that is not the object's.
    BadRequest {
        message: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireStoreKind {
    Unavailable,
    Corrupt,
    Ambiguous,
    Other,
}

impl From<&CoordError> for WireError {
    fn from(e: &CoordError) -> Self {
        match e {
            CoordError::Store(s) => WireError::Store {
                kind: match s.kind {
                    StoreErrorKind::Unavailable => WireStoreKind::Unavailable,
                    StoreErrorKind::Corrupt => WireStoreKind::Corrupt,
                    StoreErrorKind::Ambiguous => WireStoreKind::Ambiguous,
                    StoreErrorKind::Other => WireStoreKind::Other,
                },
                message: s.message.clone(),
            },
            CoordError::Refused(Refusal::Superseded { fence, latest }) => WireError::Superseded {
                fence: *fence,
                latest: *latest,
            },
            CoordError::Refused(Refusal::Expired { fence, expired_at }) => WireError::Expired {
                fence: *fence,
                expired_at: *expired_at,
            },
            CoordError::Refused(Refusal::TooLarge { what, bytes, max }) => WireError::TooLarge {
                what: (*what).to_string(),
                bytes: *bytes,
                max: *max,
            },
            CoordError::Trigger(TriggerError::NotASlot { slot }) => {
                WireError::NotASlot { slot: *slot }
            }
            CoordError::Backfill(b) => WireError::Backfill(b.clone()),
            CoordError::Contention { attempts } => WireError::Contention {
                attempts: *attempts,
            },
        }
    }
}

impl From<WireError> for CoordError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Store { kind, message } => CoordError::Store(StoreError::new(
                match kind {
                    WireStoreKind::Unavailable => StoreErrorKind::Unavailable,
                    WireStoreKind::Corrupt => StoreErrorKind::Corrupt,
                    WireStoreKind::Ambiguous => StoreErrorKind::Ambiguous,
                    WireStoreKind::Other => StoreErrorKind::Other,
                },
                message,
            )),
            WireError::Superseded { fence, latest } => {
                CoordError::Refused(Refusal::Superseded { fence, latest })
            }
            WireError::Expired { fence, expired_at } => {
                CoordError::Refused(Refusal::Expired { fence, expired_at })
            }
            WireError::TooLarge { what, bytes, max } => CoordError::Refused(Refusal::TooLarge {
                what: static_what(&what),
                bytes,
                max,
            }),
            WireError::NotASlot { slot } => CoordError::Trigger(TriggerError::NotASlot { slot }),
            WireError::Backfill(b) => CoordError::Backfill(b),
            WireError::Contention { attempts } => CoordError::Contention { attempts },
            WireError::BadRequest { message } => CoordError::Store(StoreError::other(format!(
                "the job's object refused the request: {message}"
            ))),
        }
    }
}

/// The core names what was too large with a few fixed phrases; anything
/// else (a newer object's phrase) becomes a generic one.
fn static_what(what: &str) -> &'static str {
    match what {
        "the result" => "the result",
        "the checkpoint" => "the checkpoint",
        "the record" => "the record",
        _ => "a value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_survive_the_wire() {
        let t: Timestamp = "2026-01-05T00:00:00Z".parse().unwrap();
        let errors = [
            CoordError::Store(StoreError::new(StoreErrorKind::Ambiguous, "timeout")),
            CoordError::Refused(Refusal::Superseded {
                fence: 3,
                latest: 4,
            }),
            CoordError::Refused(Refusal::Expired {
                fence: 3,
                expired_at: t,
            }),
            CoordError::Refused(Refusal::TooLarge {
                what: "the checkpoint",
                bytes: 9,
                max: 1,
            }),
            CoordError::Trigger(TriggerError::NotASlot { slot: t }),
            CoordError::Backfill(BackfillError::TooMany { count: 5, max: 4 }),
            CoordError::Contention { attempts: 64 },
        ];
        for e in errors {
            let json = serde_json::to_string(&WireError::from(&e)).unwrap();
            let back: WireError = serde_json::from_str(&json).unwrap();
            assert_eq!(CoordError::from(back), e, "{json}");
        }
    }

    #[test]
    fn a_request_round_trips() {
        let t: Timestamp = "2026-01-05T00:00:00Z".parse().unwrap();
        let req = ObjectRequest {
            job: "a".into(),
            spec: "[[job]]".into(),
            op: Op::Claim {
                now: t,
                trigger: Trigger::Slot(t),
                owner: "w".into(),
            },
        };
        let json = serde_json::to_string(&req).unwrap();
        assert_eq!(serde_json::from_str::<ObjectRequest>(&json).unwrap(), req);
    }
}
