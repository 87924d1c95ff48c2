//! The job object's storage: its state record (versioned, replaced only when
//! the version matches) and its effect ledger, in the object's own SQLite.
//!
//! One object holds one job, but the tables are keyed by job anyway: the
//! store contract is the same as SQLite's and DynamoDB's, and a record
//! written under the wrong name is refused on read, never served.
//!
//! The record's wake ([`JobState::wake_at`]) is the object's alarm: every
//! write that changes it sets the alarm to it, or deletes the alarm when
//! there is none, in the same synchronous code as the write (so in the
//! same storage commit). When the alarm fires, the object sends the wake to
//! the tick object (`crate::object`), and a tick serves the job: a job with
//! nothing to wake it costs no request at all.

use std::cell::Cell;
use std::time::Duration;

use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, EffectState, JobState, PutResult,
    StateStore, StoreError, StoreErrorKind, Version, Versioned, decide_begin, decide_finish,
    decode_state, encode_state,
};
use jiff::Timestamp;

use crate::protocol::Woken;
use crate::sql::{Alarm, NoAlarm, Sql, SqlError, SqlValue};

/// The tables, created on first use. `IF NOT EXISTS` makes it safe on every
/// object start; a later layout adds statements, never edits these.
/// `cronslot_wake` holds the wake the alarm was last set for (the record's
/// `wake_at` at its last write): the alarm handler reads it without
/// decoding the record, and a write compares with it.
const SCHEMA: [&str; 3] = [
    "CREATE TABLE IF NOT EXISTS cronslot_state (\
       job TEXT PRIMARY KEY, version INTEGER NOT NULL, state TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS cronslot_effects (\
       key TEXT PRIMARY KEY, record TEXT NOT NULL, expires_at TEXT)",
    "CREATE TABLE IF NOT EXISTS cronslot_wake (\
       job TEXT PRIMARY KEY, second INTEGER NOT NULL, nanosecond INTEGER NOT NULL)",
];

/// The state store and effect ledger of one object.
pub struct ObjectStore<S, A = NoAlarm> {
    sql: S,
    alarm: A,
    ready: Cell<bool>,
}

impl<S: Sql> ObjectStore<S> {
    /// The store over the object's SQLite `sql`, with no alarm (a model of
    /// the store, not an object); its tables are created on first use.
    pub fn new(sql: S) -> ObjectStore<S> {
        ObjectStore::with_alarm(sql, NoAlarm)
    }
}

/// The alarm instant for a wake: the first whole millisecond at or after
/// it (alarms have millisecond precision; one a little early would find
/// the wake not yet come).
pub(crate) fn alarm_ms(at: Timestamp) -> i64 {
    let ns = at.as_nanosecond();
    let ms = ns.div_euclid(1_000_000) + i128::from(ns.rem_euclid(1_000_000) > 0);
    i64::try_from(ms).unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX })
}

impl<S: Sql, A: Alarm> ObjectStore<S, A> {
    /// The store over the object's SQLite `sql` and its `alarm`.
    pub fn with_alarm(sql: S, alarm: A) -> ObjectStore<S, A> {
        ObjectStore {
            sql,
            alarm,
            ready: Cell::new(false),
        }
    }

    /// The object's SQLite.
    pub(crate) fn sql(&self) -> &S {
        &self.sql
    }

    /// The object's alarm.
    pub(crate) fn alarm(&self) -> &A {
        &self.alarm
    }

    /// The wake the alarm was last set for, with its job: `None` when the
    /// job's record has no wake (or the object holds no job).
    pub fn wake(&self) -> Result<Option<Woken>, StoreError> {
        let rows = self.exec(
            "reading the wake",
            "SELECT job, second, nanosecond FROM cronslot_wake \
             ORDER BY second, nanosecond LIMIT 1",
            &[],
        )?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let corrupt = || StoreError::new(StoreErrorKind::Corrupt, "the object's wake is corrupt");
        let job = row
            .first()
            .and_then(SqlValue::as_text)
            .ok_or_else(corrupt)?
            .to_string();
        let at = instant(row.get(1), row.get(2)).ok_or_else(corrupt)?;
        Ok(Some(Woken { job, at }))
    }

    /// After a write of `job`'s record: when its wake changed, stores the
    /// new one and sets the alarm to it, or deletes both.
    fn sync_wake(&self, job: &str, wake: Option<Timestamp>) -> Result<(), StoreError> {
        let doing = format!("reading the wake of job {job:?}");
        let name = SqlValue::Text(job.to_string());
        let rows = self.exec(
            &doing,
            "SELECT second, nanosecond FROM cronslot_wake WHERE job = ?",
            std::slice::from_ref(&name),
        )?;
        let stored = rows.first().and_then(|r| instant(r.first(), r.get(1)));
        if stored == wake && rows.is_empty() == wake.is_none() {
            return Ok(());
        }
        // The record is written already: a failure from here leaves it
        // unknown whether the write commits with it.
        let ambiguous = |what: &str, e: &SqlError| {
            StoreError::new(
                StoreErrorKind::Ambiguous,
                format!("job object storage: {what} of job {job:?}: {e}"),
            )
        };
        match wake {
            Some(at) => {
                self.sql
                    .exec(
                        "INSERT INTO cronslot_wake (job, second, nanosecond) VALUES (?, ?, ?) \
                         ON CONFLICT (job) DO UPDATE SET second = excluded.second, \
                         nanosecond = excluded.nanosecond",
                        &[
                            name,
                            SqlValue::Integer(at.as_second()),
                            SqlValue::Integer(i64::from(at.subsec_nanosecond())),
                        ],
                    )
                    .map_err(|e| ambiguous("storing the wake", &e))?;
                self.alarm
                    .set(alarm_ms(at))
                    .map_err(|e| ambiguous("setting the alarm for the wake", &e))
            }
            None => {
                self.sql
                    .exec("DELETE FROM cronslot_wake WHERE job = ?", &[name])
                    .map_err(|e| ambiguous("removing the wake", &e))?;
                self.alarm
                    .delete()
                    .map_err(|e| ambiguous("deleting the alarm", &e))
            }
        }
    }

    fn exec(
        &self,
        doing: &str,
        sql: &str,
        params: &[SqlValue],
    ) -> Result<Vec<Vec<SqlValue>>, StoreError> {
        if !self.ready.get() {
            for statement in SCHEMA {
                self.sql
                    .exec(statement, &[])
                    .map_err(|e| failed("creating the object's tables", &e))?;
            }
            self.ready.set(true);
        }
        self.sql.exec(sql, params).map_err(|e| failed(doing, &e))
    }

    fn read_state(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        let doing = format!("reading the state of job {job:?}");
        let rows = self.exec(
            &doing,
            "SELECT version, state FROM cronslot_state WHERE job = ?",
            &[SqlValue::Text(job.to_string())],
        )?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let corrupt = |why: &str| {
            StoreError::new(
                StoreErrorKind::Corrupt,
                format!("the object's record of job {job:?} is corrupt: {why}"),
            )
        };
        let version = row
            .first()
            .and_then(SqlValue::as_integer)
            .and_then(|v| Version::try_from(v).ok())
            .ok_or_else(|| corrupt("its version is not a non-negative integer"))?;
        let text = row
            .get(1)
            .and_then(SqlValue::as_text)
            .ok_or_else(|| corrupt("its state is not text"))?;
        let value = decode_state(job, text)
            .map_err(|e| StoreError::new(StoreErrorKind::Corrupt, e.to_string()))?;
        Ok(Some(Versioned { value, version }))
    }

    fn read_effect_now(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        let rows = self.exec(
            &format!("reading effect {key:?}"),
            "SELECT record FROM cronslot_effects WHERE key = ?",
            &[SqlValue::Text(key.to_string())],
        )?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let corrupt = |why: String| {
            StoreError::new(
                StoreErrorKind::Corrupt,
                format!("the object's entry for effect {key:?} is corrupt: {why}"),
            )
        };
        let text = row
            .first()
            .and_then(SqlValue::as_text)
            .ok_or_else(|| corrupt("it is not text".into()))?;
        let record: EffectRecord =
            cronslot_core::json::from_str(text).map_err(|e| corrupt(format!("{e}")))?;
        if record.key != key {
            return Err(corrupt(format!("it belongs to effect {:?}", record.key)));
        }
        Ok(Some(record))
    }

    fn write_effect(&self, record: &EffectRecord) -> Result<(), StoreError> {
        let text = serde_json::to_string(record)
            .map_err(|e| StoreError::other(format!("encoding effect {:?}: {e}", record.key)))?;
        let expires_at = match &record.state {
            EffectState::InProgress { expires_at } => SqlValue::Text(expires_at.to_string()),
            EffectState::Done { .. } => SqlValue::Null,
        };
        self.exec(
            &format!("writing effect {:?}", record.key),
            "INSERT INTO cronslot_effects (key, record, expires_at) VALUES (?, ?, ?) \
             ON CONFLICT (key) DO UPDATE SET record = excluded.record, expires_at = excluded.expires_at",
            &[SqlValue::Text(record.key.clone()), SqlValue::Text(text), expires_at],
        )?;
        Ok(())
    }
}

fn failed(doing: &str, e: &SqlError) -> StoreError {
    // A failed statement in a Durable Object is an exception of the
    // runtime (storage reset, object overloaded): worth retrying.
    StoreError::new(
        StoreErrorKind::Unavailable,
        format!("job object storage: {doing}: {e}"),
    )
}

/// An instant stored as whole seconds and nanoseconds.
fn instant(second: Option<&SqlValue>, nano: Option<&SqlValue>) -> Option<Timestamp> {
    let second = second.and_then(SqlValue::as_integer)?;
    let nano = i32::try_from(nano.and_then(SqlValue::as_integer)?).ok()?;
    Timestamp::new(second, nano).ok()
}

impl<S: Sql, A: Alarm> StateStore for ObjectStore<S, A> {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        self.read_state(job)
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        if state.job != job {
            return Err(StoreError::other(format!(
                "refusing to store the state of job {:?} as job {job:?}",
                state.job
            )));
        }
        let doing = format!("writing the state of job {job:?}");
        let text = SqlValue::Text(encode_state(state));
        let name = SqlValue::Text(job.to_string());
        let written = match expected {
            None => {
                let rows = self.exec(
                    &doing,
                    "INSERT INTO cronslot_state (job, version, state) VALUES (?, 1, ?) \
                     ON CONFLICT (job) DO NOTHING RETURNING version",
                    &[name, text],
                )?;
                (!rows.is_empty()).then_some(1)
            }
            Some(expected) => match i64::try_from(expected)
                .ok()
                .and_then(|e| e.checked_add(1).map(|n| (e, n)))
            {
                // A version this store never issued cannot match.
                None => None,
                Some((expected_sql, next)) => {
                    let rows = self.exec(
                        &doing,
                        "UPDATE cronslot_state SET version = ?, state = ? \
                         WHERE job = ? AND version = ? RETURNING version",
                        &[
                            SqlValue::Integer(next),
                            text,
                            name,
                            SqlValue::Integer(expected_sql),
                        ],
                    )?;
                    (!rows.is_empty()).then(|| expected.saturating_add(1))
                }
            },
        };
        match written {
            Some(version) => {
                self.sync_wake(job, state.wake_at)?;
                Ok(PutResult::Written(version))
            }
            None => Ok(PutResult::Conflict(self.read_state(job)?.map(Box::new))),
        }
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        let rows = self.exec(
            "listing jobs",
            "SELECT job FROM cronslot_state ORDER BY job",
            &[],
        )?;
        rows.into_iter()
            .map(|row| {
                row.first()
                    .and_then(SqlValue::as_text)
                    .map(str::to_string)
                    .ok_or_else(|| {
                        StoreError::new(StoreErrorKind::Corrupt, "a job name is not text")
                    })
            })
            .collect()
    }
}

impl<S: Sql, A: Alarm> EffectLedger for ObjectStore<S, A> {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        // Read, decide and write with no await in between: nothing else runs
        // in the object meanwhile.
        let current = self.read_effect_now(key)?;
        let (decision, write) = decide_begin(current.as_ref(), key, owner, fence, now, hold);
        if let Some(record) = write {
            self.write_effect(&record)?;
        }
        Ok(decision)
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        let current = self.read_effect_now(key)?;
        let (decision, write) = decide_finish(current.as_ref(), fence, result, now);
        if let Some(record) = write {
            self.write_effect(&record)?;
        }
        Ok(decision)
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        self.read_effect_now(key)
    }
}

impl<S: Sql, A: Alarm> ObjectStore<S, A> {
    /// Writes a raw record text (old-schema fixtures in tests, repairs).
    pub fn put_raw(&self, job: &str, text: &str) -> Result<(), StoreError> {
        self.exec(
            &format!("writing a raw record for job {job:?}"),
            "INSERT INTO cronslot_state (job, version, state) VALUES (?, 1, ?) \
             ON CONFLICT (job) DO UPDATE SET state = excluded.state, version = version + 1",
            &[
                SqlValue::Text(job.to_string()),
                SqlValue::Text(text.to_string()),
            ],
        )?;
        Ok(())
    }
}
