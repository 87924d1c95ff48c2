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

mod bulk;
mod docs;
mod execute;
mod route;

pub use bulk::{
    BulkEntry, MAX_BULK_BODY_BYTES, body_limit, body_limit_for, bulk_entries, bulk_entry,
};
pub use docs::{
    ListedScheduleDoc, ScheduleBulkDoc, ScheduleBulkResult, ScheduleDeleteDoc, ScheduleDoc,
    SchedulePageDoc, ScheduleWriteDoc,
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

/// The answer to a body longer than [`MAX_BODY_BYTES`] (413), however the
/// host found out (a declared length, or reading stopped at the bound).
pub fn body_too_large() -> super::Reply {
    body_too_large_for(MAX_BODY_BYTES)
}

/// The answer to a body longer than `limit` ([`body_limit`]).
pub fn body_too_large_for(limit: usize) -> super::Reply {
    let why = if limit > MAX_BODY_BYTES {
        "a bulk write of larger schedules goes as several requests"
    } else {
        "a schedule's spec holds at most a 16 KiB payload"
    };
    super::Reply::error(
        413,
        super::ErrorKind::BadRequest,
        format!("the body is larger than {limit} bytes (or was cut off): {why}"),
    )
}

/// A request's body as the routes take it: `None` when empty, the text
/// when it is UTF-8 and at most [`MAX_BODY_BYTES`]; otherwise the answer.
pub fn body_text(bytes: Vec<u8>) -> Result<Option<String>, super::Reply> {
    body_text_within(bytes, MAX_BODY_BYTES)
}

/// [`body_text`] with the bound [`body_limit`] gives the request.
pub fn body_text_within(bytes: Vec<u8>, limit: usize) -> Result<Option<String>, super::Reply> {
    if bytes.len() > limit {
        return Err(body_too_large_for(limit));
    }
    if bytes.is_empty() {
        return Ok(None);
    }
    String::from_utf8(bytes).map(Some).map_err(|_| {
        super::Reply::error(
            400,
            super::ErrorKind::BadRequest,
            "the body is not UTF-8 text",
        )
    })
}

/// The entity tag of a schedule's version, as `ETag` carries it and
/// `If-Match` sends it back: `"3"`.
pub fn etag(version: u64) -> String {
    format!("\"{version}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_text_of_at_most_the_bound() {
        assert_eq!(body_text(Vec::new()).map_err(|r| r.status), Ok(None));
        let spec = br#"{"cron": "0 9 * * *"}"#.to_vec();
        assert_eq!(
            body_text(spec).map_err(|r| r.status),
            Ok(Some(r#"{"cron": "0 9 * * *"}"#.to_string()))
        );
        assert_eq!(body_text(vec![0xff, 0xfe]).map_err(|r| r.status), Err(400));
        assert_eq!(
            body_text(vec![b' '; MAX_BODY_BYTES])
                .map(|b| b.map(|t| t.len()))
                .map_err(|r| r.status),
            Ok(Some(MAX_BODY_BYTES))
        );
        assert_eq!(
            body_text(vec![b' '; MAX_BODY_BYTES + 1]).map_err(|r| r.status),
            Err(413)
        );
    }
}
