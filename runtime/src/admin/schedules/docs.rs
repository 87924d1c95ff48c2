//! The JSON bodies of a schedule's routes. As every admin document, each
//! derives `Deserialize` too, so that a client reads what the server wrote.

use cronslot_core::schedules::ScheduleSpec;
use jiff::Timestamp;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

use crate::admin::{JobReport, NextSlot};

/// `PUT {p}/schedules/{job}/{key}`: what the write did. 201 when it
/// created the schedule (or re-created it over a tombstone), else 200.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleWriteDoc {
    /// The dynamic job.
    pub job: String,
    /// The schedule's key.
    pub key: String,
    /// The version in force after the write (also the `ETag`).
    pub version: u64,
    /// False when the spec was the one in force: nothing was written and
    /// the version is unchanged.
    pub changed: bool,
}

/// `POST {p}/schedules/{job}`: what a bulk write did, entry by entry.
/// The request's status is 200 whenever its body was a list of entries;
/// each entry's own status is in its result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleBulkDoc {
    /// The dynamic job.
    pub job: String,
    /// One result per entry, in the order sent.
    pub results: Vec<ScheduleBulkResult>,
    /// Entries that created their schedule (201).
    pub created: usize,
    /// Entries that changed their schedule (200, `changed`).
    pub changed: usize,
    /// Entries whose spec was the one in force: nothing written (200).
    pub unchanged: usize,
    /// Entries refused or not written (every other status).
    pub failed: usize,
}

impl ScheduleBulkDoc {
    /// No entry yet, for `job`.
    pub fn new(job: &str) -> ScheduleBulkDoc {
        ScheduleBulkDoc {
            job: job.to_string(),
            results: Vec::new(),
            created: 0,
            changed: 0,
            unchanged: 0,
            failed: 0,
        }
    }

    /// `part`'s entries after these (a client that sent its entries in
    /// several requests: `cronslot schedule put --from`).
    pub fn append(&mut self, part: ScheduleBulkDoc) {
        self.created += part.created;
        self.changed += part.changed;
        self.unchanged += part.unchanged;
        self.failed += part.failed;
        self.results.extend(part.results);
    }
}

/// One entry's answer in a [`ScheduleBulkDoc`]: what its own `PUT`
/// would have answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleBulkResult {
    /// The entry's key as sent (`null`: the entry had none).
    pub key: Option<String>,
    /// The status its `PUT` would have had: 201, 200, or an error's.
    pub status: u16,
    /// The version in force after the write (absent on an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Whether the write changed the schedule (absent on an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<bool>,
    /// Why the entry was not written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::admin::ErrorDoc>,
}

/// `DELETE {p}/schedules/{job}/{key}`: the tombstone left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleDeleteDoc {
    /// The dynamic job.
    pub job: String,
    /// The schedule's key.
    pub key: String,
    /// The tombstone's version: a re-create continues from it, and no
    /// `If-Match` of an earlier version matches again.
    pub version: u64,
}

/// `GET {p}/schedules/{job}/{key}`: a live schedule, its next slots and
/// its status as a job's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScheduleDoc {
    /// The dynamic job.
    pub job: String,
    /// The schedule's key.
    pub key: String,
    /// The instant the document was computed at (the server's clock).
    #[serde(with = "cronslot_core::instant::text")]
    pub now: Timestamp,
    /// The version in force (also the `ETag`).
    pub version: u64,
    /// When that version was written, by the store's clock.
    #[serde(with = "cronslot_core::instant::text")]
    pub changed_at: Timestamp,
    /// The spec in force, with its defaults written out (`timezone`,
    /// `paused`): a `PUT` of it writes nothing.
    #[serde(deserialize_with = "spec_from_json")]
    pub spec: ScheduleSpec,
    /// The next slots after `now` inside the schedule's window (at most
    /// 10); none while it is paused.
    pub next: Vec<NextSlot>,
    /// The newest slot a run claimed (a lease held now, a run of the
    /// history, a dead letter); `null`: none yet.
    #[serde(with = "cronslot_core::instant::text::option")]
    pub last_claimed: Option<Timestamp>,
    /// The schedule as `GET {p}/status` reports a job: health, last
    /// success, leases, dead letters, counts, and the record.
    pub status: JobReport,
}

/// `GET {p}/schedules/{job}`: a page of the job's live schedules in key
/// order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SchedulePageDoc {
    /// The dynamic job.
    pub job: String,
    /// The instant the page was computed at (the server's clock).
    #[serde(with = "cronslot_core::instant::text")]
    pub now: Timestamp,
    /// The schedules of the page (at most the `limit` asked for).
    pub schedules: Vec<ListedScheduleDoc>,
    /// Where the next page starts: send it back as `cursor`. `null`: this
    /// is the last page. A page may be short, even empty, and still have
    /// a cursor (a label filter reads a bounded part of the store per
    /// page).
    pub cursor: Option<String>,
}

/// One schedule of a page: what `GET {p}/schedules/{job}/{key}` shows,
/// without its status.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListedScheduleDoc {
    /// The schedule's key.
    pub key: String,
    /// The version in force.
    pub version: u64,
    /// When that version was written, by the store's clock.
    #[serde(with = "cronslot_core::instant::text")]
    pub changed_at: Timestamp,
    /// The spec in force, with its defaults written out.
    #[serde(deserialize_with = "spec_from_json")]
    pub spec: ScheduleSpec,
    /// The next slot after `now`; `null` while paused, or when no slot is
    /// left.
    #[serde(with = "cronslot_core::instant::text::option")]
    pub next: Option<Timestamp>,
}

/// A spec read back from a document goes through the checks of a `PUT`.
fn spec_from_json<'de, D: Deserializer<'de>>(d: D) -> Result<ScheduleSpec, D::Error> {
    let raw = Box::<RawValue>::deserialize(d)?;
    ScheduleSpec::from_json(raw.get()).map_err(|problems| {
        let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
        D::Error::custom(format!("spec: {}", listed.join("; ")))
    })
}
