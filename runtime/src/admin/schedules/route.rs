//! Request → a schedule's [`AdminRoute`]: the job, the key, the
//! preconditions and the spec, each refused with what is wrong.

use cronslot_core::coord::decide::Precondition;
use cronslot_core::coord::{MAX_SCHEDULE_PAGE, ScheduleQuery};
use cronslot_core::manifest::{JobName, Manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec, SpecProblem};

use super::DEFAULT_PAGE;
use crate::admin::query::{bad_parameter, parse_query, percent_decode, printable};
use crate::admin::route::allow;
use crate::admin::{AdminRequest, AdminRoute, ErrorDoc, ErrorKind, Reply};

/// The methods of `{p}/schedules/{job}/{key}`, as `Allow` lists them.
const METHODS: &str = "GET, PUT, DELETE";

/// Recognises `{p}/schedules/{job}/{key}` (the token is checked already).
/// Checks in the order a client fixes them: the method, the job, the key,
/// the query, the headers, then the body.
pub(crate) fn recognise(
    manifest: &Manifest,
    req: &AdminRequest<'_>,
    query: Option<&str>,
    raw_job: &str,
    raw_key: &str,
) -> Result<AdminRoute, Reply> {
    if !matches!(req.method, "GET" | "PUT" | "DELETE") {
        allow(req.method, METHODS)?;
    }
    let job = dynamic_job(manifest, raw_job)?;
    let key = key_segment(raw_key)?;
    parse_query(query, &[])?;
    match req.method {
        "GET" => Ok(AdminRoute::GetSchedule { job, key }),
        "DELETE" => {
            if req.if_none_match.is_some() {
                return Err(bad_parameter(
                    "If-None-Match",
                    "a DELETE takes If-Match only: If-None-Match means create-only",
                ));
            }
            let precondition = if_match(req.if_match)?;
            Ok(AdminRoute::DeleteSchedule {
                job,
                key,
                precondition,
            })
        }
        _ => {
            let precondition = match (req.if_match, req.if_none_match) {
                (Some(_), Some(_)) => {
                    return Err(bad_parameter(
                        "If-None-Match",
                        "send If-Match (write over this version) or If-None-Match: * \
                         (create only), not both",
                    ));
                }
                (None, Some(value)) if value.trim() == "*" => Precondition::Absent,
                (None, Some(value)) => {
                    return Err(bad_parameter(
                        "If-None-Match",
                        format!(
                            "If-None-Match {:?}: a schedule's PUT takes only If-None-Match: * \
                             (create only)",
                            printable(value)
                        ),
                    ));
                }
                (found, None) => if_match(found)?,
            };
            let spec = spec_body(req.body)?;
            Ok(AdminRoute::PutSchedule {
                job,
                key,
                spec,
                precondition,
            })
        }
    }
}

/// Recognises `GET {p}/schedules/{job}` and its query: `prefix` (keys
/// that start with it), `label` (`NAME:VALUE`), `cursor` (the page after
/// this key), `limit` (1 to 1,000).
pub(crate) fn recognise_list(
    manifest: &Manifest,
    req: &AdminRequest<'_>,
    query: Option<&str>,
    raw_job: &str,
) -> Result<AdminRoute, Reply> {
    if req.method == "POST" {
        let job = dynamic_job(manifest, raw_job)?;
        parse_query(query, &[])?;
        if req.if_match.is_some() || req.if_none_match.is_some() {
            return Err(bad_parameter(
                if req.if_match.is_some() {
                    "If-Match"
                } else {
                    "If-None-Match"
                },
                "a bulk write's conditions are each entry's: if_match or create_only",
            ));
        }
        let entries = super::bulk_entries(req.body)?;
        return Ok(AdminRoute::PutSchedules { job, entries });
    }
    if req.method != "GET" {
        allow(req.method, "GET, POST")?;
    }
    let job = dynamic_job(manifest, raw_job)?;
    let params = parse_query(query, &["prefix", "label", "cursor", "limit"])?;
    let param = |name: &str| params.get(name).map(String::as_str);
    let query = list_query(
        param("prefix"),
        param("label"),
        param("cursor"),
        param("limit"),
    )
    .map_err(|(parameter, message)| bad_parameter(parameter, message))?;
    Ok(AdminRoute::ListSchedules { job, query })
}

/// A listing's query from its parameters as text, each checked: `prefix`
/// (what a key may start with), `label` (`NAME:VALUE`), `cursor` (a key),
/// `limit` (1 to 1,000; [`DEFAULT_PAGE`] when absent). A refusal names
/// the parameter and says what is wrong. The route and the CLI's
/// `cronslot schedule ls` both read their input with it.
pub fn list_query(
    prefix: Option<&str>,
    label: Option<&str>,
    cursor: Option<&str>,
    limit: Option<&str>,
) -> Result<ScheduleQuery, (&'static str, String)> {
    let prefix = prefix.unwrap_or_default().to_string();
    if let Some(c) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')))
    {
        return Err((
            "prefix",
            format!(
                "{:?} in the prefix: a key, and so its prefix, is ASCII letters, digits \
                 and - _ . :",
                printable(&c.to_string())
            ),
        ));
    }
    if prefix.len() > ScheduleKey::MAX_CHARS {
        return Err((
            "prefix",
            format!(
                "the prefix is {} characters; a key is at most {}",
                prefix.len(),
                ScheduleKey::MAX_CHARS
            ),
        ));
    }
    let label = match label {
        None => None,
        Some(text) if text.split_once(':').is_some_and(|(n, _)| !n.is_empty()) => {
            Some(text.to_string())
        }
        Some(text) => {
            return Err((
                "label",
                format!(
                    "label {:?}: write the label as NAME:VALUE, e.g. plan:pro",
                    printable(text)
                ),
            ));
        }
    };
    let after = match cursor {
        None => None,
        Some(text) => Some(
            ScheduleKey::new(text)
                .map_err(|e| {
                    (
                        "cursor",
                        format!(
                            "cursor {:?} is not a page's cursor (the key a page ended at): {e}",
                            printable(text)
                        ),
                    )
                })?
                .as_str()
                .to_string(),
        ),
    };
    let limit = match limit {
        None => DEFAULT_PAGE,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=MAX_SCHEDULE_PAGE).contains(&n) && !text.starts_with('+') => n,
            _ => {
                return Err((
                    "limit",
                    format!(
                        "limit {:?}: a page holds 1 to {MAX_SCHEDULE_PAGE} schedules",
                        printable(text)
                    ),
                ));
            }
        },
    };
    Ok(ScheduleQuery {
        prefix,
        label,
        after,
        limit,
    })
}

/// The job of the path: a dynamic job of the manifest, else 404 naming it.
pub(crate) fn dynamic_job(manifest: &Manifest, raw: &str) -> Result<JobName, Reply> {
    let name = percent_decode(raw).unwrap_or_else(|| raw.to_string());
    if let Some(template) = manifest.template(&name) {
        return Ok(template.name.clone());
    }
    let dynamic: Vec<&str> = manifest.templates.iter().map(|t| t.name.as_str()).collect();
    let dynamic = if dynamic.is_empty() {
        "the manifest has no dynamic jobs".to_string()
    } else {
        format!("its dynamic jobs: {}", dynamic.join(", "))
    };
    let message = if manifest.job(&name).is_some() {
        format!(
            "job {:?} is not dynamic: its schedule is the manifest's; only a job with \
             dynamic = true has schedules as data ({dynamic})",
            printable(&name)
        )
    } else {
        format!("no job {:?} in the manifest; {dynamic}", printable(&name))
    };
    Err(Reply::error(404, ErrorKind::NotFound, message))
}

/// The key of the path, checked; 400 stating the rule.
fn key_segment(raw: &str) -> Result<ScheduleKey, Reply> {
    // A key's alphabet needs no escape, but a client may escape anyway.
    let text = percent_decode(raw).unwrap_or_else(|| raw.to_string());
    ScheduleKey::new(text).map_err(|e| bad_parameter("key", e.to_string()))
}

/// `If-Match: "<version>"` (a bare number is taken too); none: no
/// precondition.
fn if_match(value: Option<&str>) -> Result<Precondition, Reply> {
    let Some(value) = value else {
        return Ok(Precondition::None);
    };
    let text = value.trim();
    let unquoted = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    match unquoted.parse::<u64>() {
        Ok(version) if !unquoted.starts_with('+') => Ok(Precondition::Version(version)),
        _ => Err(bad_parameter(
            "If-Match",
            format!(
                "If-Match {:?} is not a schedule's version: send the ETag of a GET or a PUT, \
                 such as If-Match: \"3\" (one version, not a list or *)",
                printable(value)
            ),
        )),
    }
}

/// The body of a `PUT`: the spec, every problem named by its field.
fn spec_body(body: Option<&str>) -> Result<ScheduleSpec, Reply> {
    let text = body.unwrap_or("");
    if text.trim().is_empty() {
        let problem = SpecProblem {
            field: String::new(),
            message: "the body is empty: a PUT sends the schedule's spec as JSON, \
                      e.g. {\"cron\": \"0 9 * * *\", \"timezone\": \"Europe/Berlin\"}"
                .to_string(),
        };
        return Err(spec_refused(problem.message.clone(), vec![problem]));
    }
    ScheduleSpec::from_json(text).map_err(|problems| {
        let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
        spec_refused(
            format!("the schedule's spec is refused: {}", listed.join("; ")),
            problems,
        )
    })
}

fn spec_refused(message: String, problems: Vec<SpecProblem>) -> Reply {
    let mut doc = ErrorDoc::new(400, ErrorKind::Spec, message);
    doc.problems = Some(problems);
    Reply::error_doc(doc)
}
