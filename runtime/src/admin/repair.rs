//! `POST {p}/repair`: the bounded repair of docs/design.md §11 over a
//! Worker's Durable Objects. A job's object written by a cronslot from
//! before objects kept their record's wake as their alarm has no alarm: a
//! retry, lease expiry or backfill waiting in it would wait for the job's
//! next planned slot. Each page asks up to [`REPAIR_PAGE`] objects, in job
//! name order, to give their record the wake it needs
//! ([`repair_wake`](cronslot_core::coord::repair_wake)); `cronslot init
//! --store https://…` asks for pages until the last.

use std::future::Future;

use cronslot_core::coord::{CoordError, StoreErrorKind};
use cronslot_core::manifest::{JobSpec, Manifest};
use jiff::Timestamp;

use super::Reply;
use super::docs::{JobErrorDoc, RepairDoc, RepairedJob};
use super::execute::coord_error;

/// Most objects one page asks: one subrequest each, inside the Workers
/// Free plan's 50 subrequests per invocation.
pub const REPAIR_PAGE: usize = 40;

/// Serves one page: the jobs after `after` (every job when `None`) in name
/// order, each repaired by `repair_one` (the object's `repair_wake`). A
/// record that does not decode is listed and passed over; any other error
/// ends the page with the error's reply, and asking again from the same
/// `after` is harmless (a repaired record is not repaired twice).
pub async fn repair_page<'m, F, Fut>(
    manifest: &'m Manifest,
    after: Option<&str>,
    mut repair_one: F,
) -> Reply
where
    F: FnMut(&'m JobSpec) -> Fut,
    Fut: Future<Output = Result<Option<Timestamp>, CoordError>>,
{
    let mut jobs: Vec<&'m JobSpec> = manifest
        .jobs
        .iter()
        .filter(|j| after.is_none_or(|a| j.name.as_str() > a))
        .collect();
    let more = jobs.len() > REPAIR_PAGE;
    if more {
        jobs.select_nth_unstable_by(REPAIR_PAGE, |a, b| a.name.as_str().cmp(b.name.as_str()));
        jobs.truncate(REPAIR_PAGE);
    }
    jobs.sort_unstable_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
    let mut doc = RepairDoc {
        checked: 0,
        repaired: Vec::new(),
        unreadable: Vec::new(),
        next: None,
    };
    for &spec in &jobs {
        let job = spec.name.as_str().to_string();
        match repair_one(spec).await {
            Ok(Some(wake)) => doc.repaired.push(RepairedJob { job, wake }),
            Ok(None) => {}
            Err(CoordError::Store(e)) if e.kind == StoreErrorKind::Corrupt => {
                doc.unreadable.push(JobErrorDoc {
                    job,
                    message: e.to_string(),
                });
            }
            Err(e) => return coord_error(spec, "repairing the wake of", &e),
        }
        doc.checked += 1;
    }
    if more {
        doc.next = jobs.last().map(|j| j.name.as_str().to_string());
    }
    Reply::json(200, &doc)
}
