//! `POST {p}/schedules/{job}`: many schedules of one dynamic job in one
//! request (docs/design.md §12, "Bulk writes"). The body is
//! `{"schedules": [{"key": K, "spec": {...}, "if_match": 3}, ...]}`, at
//! most [`MAX_SCHEDULE_BATCH`] entries; each entry is a `PUT` of its own,
//! with `if_match` (a version) or `create_only` (`If-None-Match: *`), and
//! gets its own answer, in the order sent. An entry that is not a
//! schedule (a bad key, a refused spec, an unknown field) is answered 400
//! and leaves the others to be written; a body that is not such a list
//! at all is refused whole.

use cronslot_core::coord::decide::Precondition;
use cronslot_core::coord::{MAX_SCHEDULE_BATCH, SchedulePut};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::admin::query::printable;
use crate::admin::{ErrorDoc, ErrorKind, Reply};

/// The largest body a host reads for a bulk write: a thousand schedules
/// of a few hundred bytes each with room to spare. A bigger list (or one
/// with large payloads) goes as several requests.
pub const MAX_BULK_BODY_BYTES: usize = 8 * 1024 * 1024;

/// One entry of a bulk write as read: the key as sent (when the entry
/// has one) and the schedule's write, or why the entry is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkEntry {
    /// The key as the entry sent it (`None`: the entry has none, or is
    /// not an object).
    pub key: Option<String>,
    /// The write, or the entry's refusal (400).
    pub put: Result<SchedulePut, ErrorDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Body<'a> {
    #[serde(borrow)]
    schedules: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry<'a> {
    key: String,
    #[serde(borrow)]
    spec: &'a RawValue,
    #[serde(default)]
    if_match: Option<u64>,
    #[serde(default)]
    create_only: bool,
}

/// Only the key, read leniently, to name an entry that is refused.
#[derive(Deserialize)]
struct KeyOnly {
    key: Option<String>,
}

/// The entries of a bulk write's body; the refusal (400) of a body that
/// is not `{"schedules": [...]}` with 1 to [`MAX_SCHEDULE_BATCH`] entries.
pub fn bulk_entries(body: Option<&str>) -> Result<Vec<BulkEntry>, Reply> {
    let bad = |message: String| Reply::error(400, ErrorKind::BadRequest, message);
    let Some(body) = body else {
        return Err(bad(
            "the body is empty: send {\"schedules\": [{\"key\": ..., \"spec\": {...}}, ...]}"
                .to_string(),
        ));
    };
    let body: Body<'_> = serde_json::from_str(body).map_err(|e| {
        bad(format!(
            "the body is not {{\"schedules\": [...]}}: {e} (each entry: {{\"key\": ..., \
             \"spec\": {{...}}, and if_match or create_only}})"
        ))
    })?;
    match body.schedules.len() {
        0 => return Err(bad("\"schedules\" is empty: nothing to write".to_string())),
        n if n > MAX_SCHEDULE_BATCH => {
            return Err(bad(format!(
                "\"schedules\" holds {n} entries; one request takes at most \
                 {MAX_SCHEDULE_BATCH} (send the rest in another)"
            )));
        }
        _ => {}
    }
    Ok(body
        .schedules
        .iter()
        .enumerate()
        .map(|(i, raw)| entry(&format!("schedules[{i}]"), raw))
        .collect())
}

/// One entry from its JSON text, named `label` in what is refused (a
/// line of `cronslot schedule put --from`'s file: `line 12`).
pub fn bulk_entry(label: &str, text: &str) -> BulkEntry {
    match serde_json::from_str::<&RawValue>(text) {
        Ok(raw) => entry(label, raw),
        Err(e) => {
            let mut doc = ErrorDoc::new(
                400,
                ErrorKind::BadRequest,
                format!("{label}: not JSON: {e}"),
            );
            doc.parameter = Some(label.to_string());
            BulkEntry {
                key: None,
                put: Err(doc),
            }
        }
    }
}

fn entry(label: &str, raw: &RawValue) -> BulkEntry {
    let refused = |key: Option<String>, field: &str, message: String| {
        let mut doc = ErrorDoc::new(400, ErrorKind::BadRequest, format!("{label}: {message}"));
        doc.parameter = Some(format!("{label}.{field}"));
        BulkEntry { key, put: Err(doc) }
    };
    let parsed: Entry<'_> = match serde_json::from_str(raw.get()) {
        Ok(entry) => entry,
        Err(e) => {
            let key = serde_json::from_str::<KeyOnly>(raw.get())
                .ok()
                .and_then(|k| k.key);
            return refused(
                key,
                "",
                format!(
                    "{e}: an entry is {{\"key\": ..., \"spec\": {{...}}}}, with if_match \
                     (a version) or create_only (true) if the write has a condition"
                ),
            );
        }
    };
    let shown = Some(parsed.key.clone());
    let key = match ScheduleKey::new(parsed.key.as_str()) {
        Ok(key) => key,
        Err(e) => {
            return refused(
                shown,
                "key",
                format!("the key {:?}: {e}", printable(&parsed.key)),
            );
        }
    };
    let precondition = match (parsed.if_match, parsed.create_only) {
        (Some(_), true) => {
            return refused(
                shown,
                "if_match",
                "send if_match (write over this version) or create_only, not both".to_string(),
            );
        }
        (Some(v), false) => Precondition::Version(v),
        (None, true) => Precondition::Absent,
        (None, false) => Precondition::None,
    };
    match ScheduleSpec::from_json(parsed.spec.get()) {
        Ok(spec) => BulkEntry {
            key: shown,
            put: Ok(SchedulePut {
                key,
                spec,
                precondition,
            }),
        },
        Err(problems) => {
            let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
            let mut doc = ErrorDoc::new(
                400,
                ErrorKind::Spec,
                format!(
                    "{label}: the spec of {:?} is refused: {}",
                    key.as_str(),
                    listed.join("; ")
                ),
            );
            doc.parameter = Some(format!("{label}.spec"));
            doc.problems = Some(problems);
            BulkEntry {
                key: shown,
                put: Err(doc),
            }
        }
    }
}

/// The body a host reads at most for a request: [`MAX_BULK_BODY_BYTES`]
/// for a bulk write (`POST {prefix}/schedules/{job}`), else
/// [`MAX_BODY_BYTES`](super::MAX_BODY_BYTES).
pub fn body_limit(prefix: &str, method: &str, path: &str) -> usize {
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let segments = crate::admin::route::segments_below(prefix, path).unwrap_or_default();
    if method == "POST" && matches!(segments.as_slice(), ["schedules", job] if !job.is_empty()) {
        MAX_BULK_BODY_BYTES
    } else {
        super::MAX_BODY_BYTES
    }
}

/// [`body_limit`] for a request a host is about to read: the larger bound
/// of a bulk write only for a caller with the admin token (`token`, the
/// configured one), checked here before a byte of the body is read; the
/// refusal is the router's own 401 or 503.
pub fn body_limit_for(
    prefix: &str,
    method: &str,
    path: &str,
    authorization: Option<&str>,
    token: Option<&str>,
) -> Result<usize, Reply> {
    let limit = body_limit(prefix, method, path);
    if limit > super::MAX_BODY_BYTES {
        crate::admin::authorize_bearer(authorization, token, crate::admin::ADMIN)?;
    }
    Ok(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_read_each_on_its_own() {
        let body = r#"{"schedules": [
            {"key": "a", "spec": {"cron": "0 9 * * *"}},
            {"key": "b", "spec": {"cron": "0 9 * * *"}, "if_match": 3},
            {"key": "c", "spec": {"cron": "0 9 * * *"}, "create_only": true},
            {"key": "bad/key", "spec": {"cron": "0 9 * * *"}},
            {"key": "d", "spec": {"cron": "61 9 * * *"}},
            {"key": "e", "spec": {"cron": "0 9 * * *"}, "ifmatch": 3},
            {"key": "f", "spec": {"cron": "0 9 * * *"}, "if_match": 1, "create_only": true},
            7
        ]}"#;
        let entries = bulk_entries(Some(body)).expect("a list");
        assert_eq!(entries.len(), 8);
        let preconditions: Vec<_> = entries[..3]
            .iter()
            .map(|e| e.put.as_ref().map(|p| p.precondition).expect("ok"))
            .collect();
        assert_eq!(
            preconditions,
            [
                Precondition::None,
                Precondition::Version(3),
                Precondition::Absent
            ]
        );
        let refused: Vec<(Option<&str>, Option<String>)> = entries[3..]
            .iter()
            .map(|e| {
                let doc = e.put.as_ref().expect_err("refused");
                assert_eq!(doc.status, 400);
                (e.key.as_deref(), doc.parameter.clone())
            })
            .collect();
        assert_eq!(
            refused,
            [
                (Some("bad/key"), Some("schedules[3].key".to_string())),
                (Some("d"), Some("schedules[4].spec".to_string())),
                (Some("e"), Some("schedules[5].".to_string())),
                (Some("f"), Some("schedules[6].if_match".to_string())),
                (None, Some("schedules[7].".to_string())),
            ]
        );
        let spec_doc = entries[4].put.as_ref().expect_err("refused");
        assert!(
            spec_doc
                .problems
                .as_ref()
                .is_some_and(|p| p[0].field == "cron")
        );
    }

    #[test]
    fn a_body_that_is_not_a_list_of_one_to_a_thousand_is_refused_whole() {
        let too_many = format!(
            "{{\"schedules\": [{}]}}",
            vec![r#"{"key":"a","spec":{"cron":"0 9 * * *"}}"#; MAX_SCHEDULE_BATCH + 1].join(",")
        );
        for body in [
            None,
            Some("[]"),
            Some("{\"schedules\": []}"),
            Some("{\"schedules\": {}}"),
            Some("{\"schedule\": []}"),
            Some("not json"),
            Some(too_many.as_str()),
        ] {
            let refused = bulk_entries(body).expect_err("refused");
            assert_eq!(refused.status, 400, "{body:?}: {}", refused.body);
        }
    }

    #[test]
    fn the_bulk_bound_is_read_only_for_a_caller_with_the_token() {
        let (p, path) = ("/cronslot", "/cronslot/schedules/invoice");
        let token = Some("s3cret");
        let with = Some("Bearer s3cret");
        assert_eq!(
            body_limit_for(p, "POST", path, with, token).map_err(|r| r.status),
            Ok(MAX_BULK_BODY_BYTES)
        );
        for (authorization, status) in [(None, 401), (Some("Bearer wrong"), 401)] {
            let refused =
                body_limit_for(p, "POST", path, authorization, token).expect_err("refused");
            assert_eq!(refused.status, status, "{authorization:?}");
        }
        assert_eq!(
            body_limit_for(p, "POST", path, with, None).map_err(|r| r.status),
            Err(503),
            "no token configured: fail closed"
        );
        // Other routes' small bound needs no token here: the router checks.
        assert_eq!(
            body_limit_for(p, "PUT", "/cronslot/schedules/invoice/k", None, token)
                .map_err(|r| r.status),
            Ok(super::super::MAX_BODY_BYTES)
        );
    }

    #[test]
    fn only_a_post_to_a_jobs_schedules_reads_the_bulk_bound() {
        let p = "/cronslot";
        assert_eq!(
            body_limit(p, "POST", "/cronslot/schedules/invoice"),
            MAX_BULK_BODY_BYTES
        );
        assert_eq!(
            body_limit(p, "POST", "/cronslot/schedules/invoice/"),
            MAX_BULK_BODY_BYTES
        );
        for (method, path) in [
            ("PUT", "/cronslot/schedules/invoice"),
            ("POST", "/cronslot/schedules/invoice/k"),
            ("POST", "/cronslot/jobs/invoice/trigger"),
            ("POST", "/cronslot/schedules/"),
        ] {
            assert_eq!(
                body_limit(p, method, path),
                super::super::MAX_BODY_BYTES,
                "{method} {path}"
            );
        }
    }
}
