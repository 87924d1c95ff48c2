//! The job object's storage: its state record (versioned, replaced only when
//! the version matches) and its effect ledger, in the object's own SQLite.
//!
//! One object holds one job, but the tables are keyed by job anyway: the
//! store contract is the same as SQLite's and DynamoDB's, and a record
//! written under the wrong name is refused on read, never served.

use std::cell::Cell;
use std::time::Duration;

use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, EffectState, JobState, PutResult,
    StateStore, StoreError, StoreErrorKind, Version, Versioned, decide_begin, decide_finish,
    decode_state, encode_state,
};
use jiff::Timestamp;

use crate::sql::{Sql, SqlError, SqlValue};

/// The tables, created on first use. `IF NOT EXISTS` makes it safe on every
/// object start; a later layout adds statements, never edits these.
const SCHEMA: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS cronslot_state (\
       job TEXT PRIMARY KEY, version INTEGER NOT NULL, state TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS cronslot_effects (\
       key TEXT PRIMARY KEY, record TEXT NOT NULL, expires_at TEXT)",
];

/// The state store and effect ledger of one object.
pub struct ObjectStore<S> {
    sql: S,
    ready: Cell<bool>,
}

impl<S: Sql> ObjectStore<S> {
    /// The store over the object's SQLite `sql`; its tables are created on
    /// first use.
    pub fn new(sql: S) -> ObjectStore<S> {
        ObjectStore {
            sql,
            ready: Cell::new(false),
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
            serde_json::from_str(text).map_err(|e| corrupt(format!("{e}")))?;
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

impl<S: Sql> StateStore for ObjectStore<S> {
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
            Some(version) => Ok(PutResult::Written(version)),
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

impl<S: Sql> EffectLedger for ObjectStore<S> {
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

impl<S: Sql> ObjectStore<S> {
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
