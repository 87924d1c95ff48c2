//! Schedules as data: the schedules an application creates, changes and
//! deletes at run time, one per `(job, key)` of a manifest job declared
//! `dynamic = true` (docs/design.md, "Schedules as data").
//!
//! A schedule is a record like a static job's, named `job/key`
//! ([`record_name`]): its slots are `job/key@instant`, and every part of
//! the run protocol (fences, leases, retries, the dead letters, the effect
//! ledger) works on it unchanged. What is particular to a schedule is
//! here: its [key](ScheduleKey) and its [spec](ScheduleSpec).

mod key;
mod run;
mod spec;

pub use key::{KeyError, ScheduleKey};
pub use run::{RunRequest, RunStatus, RunView, same_payload, slot_of_now};
pub use spec::{
    MAX_LABEL_NAME_CHARS, MAX_LABEL_VALUE_CHARS, MAX_LABELS, MAX_PAYLOAD_BYTES, ScheduleSpec,
    SpecProblem, When,
};

use crate::manifest::JobName;

/// The name of the record of `job`'s schedule `key`: `job/key`. Neither
/// part can hold `/`, so the name reads back one way ([`split_record_name`]).
pub fn record_name(job: &JobName, key: &ScheduleKey) -> String {
    format!("{}/{}", job.as_str(), key.as_str())
}

/// The job and key of a schedule's record name; `None` for the name of a
/// static job's record (or any name that is not `job/key`).
pub fn split_record_name(name: &str) -> Option<(JobName, ScheduleKey)> {
    let (job, key) = name.split_once('/')?;
    Some((JobName::new(job).ok()?, ScheduleKey::new(key).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_names_read_back_one_way() {
        let job = JobName::new("invoice").unwrap();
        let key = ScheduleKey::new("tenant:42").unwrap();
        let name = record_name(&job, &key);
        assert_eq!(name, "invoice/tenant:42");
        assert_eq!(split_record_name(&name), Some((job, key)));
        assert_eq!(split_record_name("invoice"), None, "a static job's record");
        assert_eq!(split_record_name("invoice/a/b"), None);
        assert_eq!(split_record_name("Invoice/a"), None);
    }
}
