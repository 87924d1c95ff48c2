//! The item layout of the single table, and reading items back.
//!
//! | item | `pk` (S, the key) | attributes |
//! |---|---|---|
//! | job state | `job#<name>` | `ver` (N), `state` (S: JSON of `encode_state`), `updated_at` (S: RFC 3339, informational); while the record has a wake, `wk` (S, `"w"`) and `wake` (N: Unix milliseconds, floored); for a schedule's or a keyed run's record (`<job>/<key>`), `ns` (S: `<job>`) |
//! | effect | `effect#<key>` | `record` (S: JSON of `EffectRecord`), `rev` (N), `ttl` (N: epoch seconds) |
//! | tick mark | `tick#mark` | `mark` (N: Unix nanoseconds), `wk` (S, `"w"`), `wake` (N: [`MARK_SORT`]), `updated_at` (S) |
//!
//! The global secondary index [`WAKE_INDEX`] (partition key `wk`, sort key
//! `wake`, projecting `mark`) holds only the items that carry both: the
//! jobs with a wake, and the tick mark, which sorts before every wake.
//! The global secondary index [`NAMES_INDEX`] (partition key `ns`, sort
//! key `pk`, keys only) holds the records of each dynamic job's schedules
//! and keyed runs in name order: a listing's page is one `Query`.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use cronslot_core::coord::{
    EffectRecord, JobState, StoreError, StoreErrorKind, Version, Versioned, decode_state,
};
use jiff::Timestamp;

pub(crate) const PK: &str = "pk";
pub(crate) const VER: &str = "ver";
pub(crate) const STATE: &str = "state";
pub(crate) const UPDATED_AT: &str = "updated_at";
pub(crate) const RECORD: &str = "record";
pub(crate) const REV: &str = "rev";
/// The attribute the table's TTL is enabled on.
pub const TTL_ATTRIBUTE: &str = "ttl";

pub(crate) const JOB_PREFIX: &str = "job#";
pub(crate) const EFFECT_PREFIX: &str = "effect#";

/// The wake index: a global secondary index over [`WAKE_SHARD`] (S, the
/// partition key) and [`WAKE`] (N, the sort key), projecting [`MARK`].
/// Sparse: an item is in it only while it has both attributes.
pub const WAKE_INDEX: &str = "wakes";
/// The index's partition key: one constant value ([`WAKE_SHARD_VALUE`]),
/// so that one `Query` reads every wake in order.
pub const WAKE_SHARD: &str = "wk";
pub(crate) const WAKE_SHARD_VALUE: &str = "w";
/// The index's sort key: a job's wake in Unix milliseconds, floored.
pub const WAKE: &str = "wake";
/// The names index: a global secondary index over [`NAME_SPACE`] (S, the
/// partition key) and the table's key `pk` (S, the sort key), projecting
/// keys only. Sparse: it holds the records named `job/key` (a dynamic
/// job's schedules and keyed runs), each under its job, in name order.
pub const NAMES_INDEX: &str = "names";
/// The names index's partition key: the job of a record named `job/key`.
pub const NAME_SPACE: &str = "ns";
/// The tick mark's attribute on its item: Unix nanoseconds, exact.
pub const MARK: &str = "mark";
/// The tick mark's key. `tick#` is no prefix of `job#` or `effect#`, so it
/// cannot collide with a job's or an effect's key.
pub(crate) const TICK_MARK_PK: &str = "tick#mark";
/// The tick mark's sort value in the wake index: lower than any wake (the
/// earliest instant jiff represents is about -3.8e14 ms), so a query
/// of the index returns the mark first.
pub const MARK_SORT: i64 = i64::MIN;

/// DynamoDB's item size limit: 400 KB, attribute names included.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// DynamoDB's limit on a partition key value.
pub(crate) const MAX_PARTITION_KEY_BYTES: usize = 2048;

pub(crate) type Item = HashMap<String, AttributeValue>;

pub(crate) fn job_pk(job: &str) -> String {
    format!("{JOB_PREFIX}{job}")
}

pub(crate) fn effect_pk(key: &str) -> String {
    format!("{EFFECT_PREFIX}{key}")
}

pub(crate) fn key_of(pk: String) -> Item {
    HashMap::from([(PK.to_string(), AttributeValue::S(pk))])
}

/// A job item as stored: the version and the exact text, kept so a write
/// can recognise its own record (a retried write that already landed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawState {
    pub version: Version,
    pub text: String,
}

/// A job's state item. With a wake, the item also carries the wake
/// index's two attributes (written with the record, in the same
/// conditional write, so the index never disagrees with the record for
/// longer than the index's own propagation); without one, neither. A
/// record named `job/key` carries its job in [`NAME_SPACE`], for the names
/// index.
pub(crate) fn state_item(
    job: &str,
    version: Version,
    text: &str,
    updated_at: String,
    wake_at: Option<Timestamp>,
) -> Item {
    let mut item = HashMap::from([
        (PK.to_string(), AttributeValue::S(job_pk(job))),
        (VER.to_string(), AttributeValue::N(version.to_string())),
        (STATE.to_string(), AttributeValue::S(text.to_string())),
        (UPDATED_AT.to_string(), AttributeValue::S(updated_at)),
    ]);
    if let Some(space) = name_space(job) {
        item.insert(NAME_SPACE.to_string(), AttributeValue::S(space.to_string()));
    }
    if let Some(at) = wake_at {
        item.insert(
            WAKE_SHARD.to_string(),
            AttributeValue::S(WAKE_SHARD_VALUE.to_string()),
        );
        item.insert(
            WAKE.to_string(),
            AttributeValue::N(floor_millis(at).to_string()),
        );
    }
    item
}

/// The names index's partition of a record's name: the job of `job/key`;
/// `None` for a static job's record, which the index leaves out.
pub(crate) fn name_space(name: &str) -> Option<&str> {
    name.split_once('/').map(|(job, _)| job)
}

/// Unix milliseconds, floored (towards the past, before 1970 too): a
/// wake read from the index is never later than the record's, so a job
/// is woken early by less than a millisecond at most, never late.
pub(crate) fn floor_millis(at: Timestamp) -> i64 {
    let millis = at.as_nanosecond().div_euclid(1_000_000);
    // Every jiff timestamp is within ±4e14 ms.
    i64::try_from(millis).unwrap_or(if millis < 0 { i64::MIN } else { i64::MAX })
}

/// The tick mark's item: the mark exactly (nanoseconds), and the index's
/// attributes with the lowest sort value, so that the query of woken jobs
/// returns the mark first.
pub(crate) fn mark_item(mark: Timestamp, updated_at: String) -> Item {
    HashMap::from([
        (PK.to_string(), AttributeValue::S(TICK_MARK_PK.to_string())),
        (
            MARK.to_string(),
            AttributeValue::N(mark.as_nanosecond().to_string()),
        ),
        (
            WAKE_SHARD.to_string(),
            AttributeValue::S(WAKE_SHARD_VALUE.to_string()),
        ),
        (WAKE.to_string(), AttributeValue::N(MARK_SORT.to_string())),
        (UPDATED_AT.to_string(), AttributeValue::S(updated_at)),
    ])
}

/// The tick mark of the mark's item (as the index projects it).
pub(crate) fn read_mark(table: &str, item: &Item) -> Result<Timestamp, StoreError> {
    let what = "the tick mark";
    match item.get(MARK) {
        Some(AttributeValue::N(n)) => n
            .parse::<i128>()
            .ok()
            .and_then(|nanos| Timestamp::from_nanosecond(nanos).ok())
            .ok_or_else(|| {
                corrupt(
                    table,
                    what,
                    format!("attribute {MARK} holds {n:?}, not an instant in nanoseconds"),
                )
            }),
        Some(_) => Err(corrupt(
            table,
            what,
            format!("attribute {MARK} is not a number"),
        )),
        None => Err(corrupt(table, what, format!("attribute {MARK} is missing"))),
    }
}

fn corrupt(table: &str, what: &str, message: impl std::fmt::Display) -> StoreError {
    StoreError::new(
        StoreErrorKind::Corrupt,
        format!("DynamoDB table {table}: {what}: {message}"),
    )
}

fn number(table: &str, what: &str, item: &Item, name: &str) -> Result<u64, StoreError> {
    match item.get(name) {
        Some(AttributeValue::N(n)) => n.parse::<u64>().map_err(|_| {
            corrupt(
                table,
                what,
                format!("attribute {name} holds {n:?}, not a whole number"),
            )
        }),
        Some(_) => Err(corrupt(
            table,
            what,
            format!("attribute {name} is not a number"),
        )),
        None => Err(corrupt(table, what, format!("attribute {name} is missing"))),
    }
}

fn string<'a>(table: &str, what: &str, item: &'a Item, name: &str) -> Result<&'a str, StoreError> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => Ok(s),
        Some(_) => Err(corrupt(
            table,
            what,
            format!("attribute {name} is not a string"),
        )),
        None => Err(corrupt(table, what, format!("attribute {name} is missing"))),
    }
}

/// The version and text of a job item, without decoding the state.
pub(crate) fn read_raw_state(table: &str, job: &str, item: &Item) -> Result<RawState, StoreError> {
    let what = format!("the item of job {job:?}");
    Ok(RawState {
        version: number(table, &what, item, VER)?,
        text: string(table, &what, item, STATE)?.to_string(),
    })
}

pub(crate) fn decode_raw_state(
    table: &str,
    job: &str,
    raw: RawState,
) -> Result<Versioned<JobState>, StoreError> {
    let value = decode_state(job, &raw.text).map_err(|e| {
        // The decode error names the job.
        StoreError::new(
            StoreErrorKind::Corrupt,
            format!("DynamoDB table {table}: {e}"),
        )
    })?;
    Ok(Versioned {
        value,
        version: raw.version,
    })
}

/// An effect item as stored: `rev` guards its conditional replacement;
/// with the record it lets a retried write recognise its own.
#[derive(Debug, Clone)]
pub(crate) struct StoredEffect {
    pub rev: u64,
    pub record: EffectRecord,
}

pub(crate) fn read_effect_item(
    table: &str,
    key: &str,
    item: &Item,
) -> Result<StoredEffect, StoreError> {
    let what = format!("effect {key:?}");
    let rev = number(table, &what, item, REV)?;
    let text = string(table, &what, item, RECORD)?;
    let record: EffectRecord = serde_json::from_str(text)
        .map_err(|e| corrupt(table, &what, format!("the record cannot be read ({e})")))?;
    if record.key != key {
        return Err(corrupt(
            table,
            &what,
            format!("the record belongs to effect {:?}", record.key),
        ));
    }
    Ok(StoredEffect { rev, record })
}

pub(crate) fn effect_item(
    record: &EffectRecord,
    text: &str,
    rev: u64,
    retention: Duration,
) -> Item {
    HashMap::from([
        (PK.to_string(), AttributeValue::S(effect_pk(&record.key))),
        (RECORD.to_string(), AttributeValue::S(text.to_string())),
        (REV.to_string(), AttributeValue::N(rev.to_string())),
        (
            TTL_ATTRIBUTE.to_string(),
            AttributeValue::N(effect_ttl(record, retention).to_string()),
        ),
    ])
}

/// When DynamoDB may delete an effect item (epoch seconds, rounded up: it
/// deletes at or after the time): the one rule of every store,
/// [`EffectRecord::sweep_at`] (a hold when it lapses, a done entry after
/// the retention period, long after any retry of its slot).
pub(crate) fn effect_ttl(record: &EffectRecord, retention: Duration) -> i64 {
    let at = record.sweep_at(retention);
    at.as_second()
        .saturating_add(i64::from(at.subsec_nanosecond() > 0))
}

/// The size DynamoDB counts for an item: attribute names plus values
/// (strings and binaries by bytes; numbers at most 21 bytes).
pub(crate) fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(_) => 21,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(l) => l.iter().map(String::len).sum(),
        AttributeValue::Ns(l) => 21 * l.len(),
        AttributeValue::Bs(l) => l.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(l) => 3 + l.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
        // A type this SDK does not know: count it as large as possible so
        // the check stays on the safe side.
        _ => MAX_ITEM_BYTES,
    }
}

/// A short, readable form of an item's key attributes for messages.
pub(crate) fn describe_key(key: &Item) -> String {
    let mut parts: Vec<String> = key
        .iter()
        .map(|(k, v)| {
            let value = match v {
                AttributeValue::S(s) => format!("{s:?}"),
                AttributeValue::N(n) => n.clone(),
                AttributeValue::B(b) => format!("<{} bytes>", b.as_ref().len()),
                other => format!("{other:?}"),
            };
            format!("{k}={value}")
        })
        .collect();
    parts.sort();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use cronslot_core::coord::EffectState;

    #[test]
    fn hold_ttl_rounds_up_done_ttl_adds_retention() {
        let at: jiff::Timestamp = "2026-01-05T00:00:00.5Z".parse().unwrap();
        let mut record = EffectRecord {
            key: "k".into(),
            owner: "o".into(),
            fence: 1,
            state: EffectState::InProgress { expires_at: at },
        };
        let secs = at.as_second();
        assert_eq!(effect_ttl(&record, Duration::from_secs(10)), secs + 1);
        record.state = EffectState::Done {
            result: "r".into(),
            done_at: at,
        };
        assert_eq!(effect_ttl(&record, Duration::from_secs(10)), secs + 11);
    }

    #[test]
    fn size_counts_names_and_values() {
        let item = state_item("j", 7, "abc", "t".into(), None);
        // pk: 2 + 5, ver: 3 + 21, state: 5 + 3, updated_at: 10 + 1.
        assert_eq!(item_size(&item), 7 + 24 + 8 + 11);
        // A wake adds wk: 2 + 1, wake: 4 + 21.
        let item = state_item("j", 7, "abc", "t".into(), Some(Timestamp::UNIX_EPOCH));
        assert_eq!(item_size(&item), 7 + 24 + 8 + 11 + 3 + 25);
    }

    #[test]
    fn wakes_are_floored_to_the_millisecond_and_absent_without_a_wake() {
        let ms = |text: &str| floor_millis(text.parse().unwrap());
        assert_eq!(
            ms("2026-01-05T00:00:00.0019999Z"),
            ms("2026-01-05T00:00:00.001Z")
        );
        assert_eq!(ms("1970-01-01T00:00:00Z"), 0);
        assert_eq!(
            ms("1969-12-31T23:59:59.9995Z"),
            -1,
            "floored before 1970 too"
        );
        assert!(floor_millis(Timestamp::MIN) > MARK_SORT);
        let without = state_item("j", 1, "{}", "t".into(), None);
        assert!(!without.contains_key(WAKE) && !without.contains_key(WAKE_SHARD));
        let at: Timestamp = "2026-01-05T00:00:00.0015Z".parse().unwrap();
        let with = state_item("j", 1, "{}", "t".into(), Some(at));
        assert_eq!(
            with.get(WAKE),
            Some(&AttributeValue::N(at.as_millisecond().to_string()))
        );
        assert_eq!(with.get(WAKE_SHARD), Some(&AttributeValue::S("w".into())));
    }

    #[test]
    fn a_schedules_record_is_in_its_jobs_name_space_and_a_static_jobs_is_in_none() {
        let schedule = state_item("tenant-invoice/acme", 1, "{}", "t".into(), None);
        assert_eq!(
            schedule.get(NAME_SPACE),
            Some(&AttributeValue::S("tenant-invoice".into()))
        );
        let static_job = state_item("billing", 1, "{}", "t".into(), None);
        assert!(!static_job.contains_key(NAME_SPACE));
    }

    #[test]
    fn the_mark_is_kept_to_the_nanosecond() {
        let mark: Timestamp = "2026-01-05T00:00:59.999999999Z".parse().unwrap();
        let item = mark_item(mark, "t".into());
        assert_eq!(read_mark("tbl", &item).unwrap(), mark);
        let mut bad = item.clone();
        bad.insert(MARK.into(), AttributeValue::S("x".into()));
        assert_eq!(
            read_mark("tbl", &bad).unwrap_err().kind,
            StoreErrorKind::Corrupt
        );
    }

    #[test]
    fn corrupt_items_are_refused_with_the_job_named() {
        let mut item = state_item("j", 7, "{}", "t".into(), None);
        item.insert(VER.into(), AttributeValue::S("7".into()));
        let err = read_raw_state("tbl", "j", &item).unwrap_err();
        assert_eq!(err.kind, StoreErrorKind::Corrupt);
        assert!(
            err.message.contains("\"j\"") && err.message.contains("ver"),
            "{err}"
        );
    }
}
