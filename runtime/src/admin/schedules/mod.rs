//! The routes of a dynamic job's schedules (feature `schedules`;
//! docs/design.md §12): `PUT`, `GET` and `DELETE {p}/schedules/{job}/{key}`,
//! and `GET {p}/schedules/{job}`, a page of the job's schedules.
//!
//! [`route`] reads the request (the job must be a dynamic one of the
//! manifest, the key and the spec are checked, `If-Match` and
//! `If-None-Match` become a [`Precondition`]) before anything touches the
//! store; [`execute_schedule`] runs the route over any coordinator that
//! writes schedules ([`Schedules`](cronslot_core::coord::Schedules)).
//!
//! A schedule's version is its entity tag: `ETag: "3"` on the answers of
//! `PUT` and `GET`, `If-Match: "3"` on a write that must not overwrite
//! another. A deleted schedule (a tombstone) is not a resource: its `GET`
//! answers 404 with the tombstone's version in the error's `version`.
//!
//! [`Precondition`]: cronslot_core::coord::decide::Precondition

mod docs;
mod execute;
mod route;

pub use docs::{
    ListedScheduleDoc, ScheduleDeleteDoc, ScheduleDoc, SchedulePageDoc, ScheduleWriteDoc,
};
pub use execute::{execute_schedule, schedule_job_spec};
pub use route::list_query;
pub(crate) use route::{dynamic_job, recognise, recognise_list};

/// The schedules a page of `GET {p}/schedules/{job}` holds when `limit` is
/// not given (at most [`MAX_SCHEDULE_PAGE`](cronslot_core::coord::MAX_SCHEDULE_PAGE)).
pub const DEFAULT_PAGE: usize = 100;

/// The largest body a host reads for a schedule's `PUT`: the spec's 16 KiB
/// payload and room for the rest of it. A longer body is refused (413)
/// before it is read whole.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The entity tag of a schedule's version, as `ETag` carries it and
/// `If-Match` sends it back: `"3"`.
pub fn etag(version: u64) -> String {
    format!("\"{version}\"")
}
