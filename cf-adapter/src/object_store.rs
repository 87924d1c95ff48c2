//! The job object's storage: its state record (versioned, replaced only when
//! the version matches) and its effect ledger, in the object's own SQLite.
//! Each write of a ledger entry first deletes a bounded batch of the
//! entries whose time is up ([`ObjectStore::sweep`]), so the ledger stays
//! bounded without a sweeper.
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
    DEFAULT_EFFECT_RETENTION, EffectBegin, EffectFinish, EffectLedger, EffectRecord, EffectState,
    JobState, PutResult, StateStore, StoreError, StoreErrorKind, Version, Versioned, decide_begin,
    decide_finish, decode_state, encode_state, prefix_end,
};
use jiff::Timestamp;

use crate::protocol::Woken;
use crate::sql::{Alarm, NoAlarm, Sql, SqlError, SqlValue};

/// The tables, created on first use. `IF NOT EXISTS` makes it safe on every
/// object start; a later layout adds statements, never edits these.
/// `cronslot_wakes` holds each record's wake (its `wake_at` at its last
/// write): the alarm handler reads them without decoding the records, and
/// a write compares with it. `due_ms` is the wake as an alarm instant;
/// `resend_ms`, once the alarm has sent the wake, when to send it again
/// should the record keep it ([`ObjectStore::sent`]). The alarm is set to
/// the earliest of them. An object holds one job's record, or many
/// schedules of one dynamic job.
///
/// The layout before this one kept one wake per record without `due_ms`
/// and `resend_ms` (`cronslot_wake`): its rows move to the new table when
/// the object starts (the last two statements; nothing after that).
const SCHEMA: [&str; 7] = [
    "CREATE TABLE IF NOT EXISTS cronslot_state (\
       job TEXT PRIMARY KEY, version INTEGER NOT NULL, state TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS cronslot_effects (\
       key TEXT PRIMARY KEY, record TEXT NOT NULL, expires_at TEXT)",
    "CREATE TABLE IF NOT EXISTS cronslot_wake (\
       job TEXT PRIMARY KEY, second INTEGER NOT NULL, nanosecond INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS cronslot_wakes (\
       job TEXT PRIMARY KEY, second INTEGER NOT NULL, nanosecond INTEGER NOT NULL, \
       due_ms INTEGER NOT NULL, resend_ms INTEGER)",
    "CREATE INDEX IF NOT EXISTS cronslot_wakes_alarm ON cronslot_wakes (coalesce(resend_ms, due_ms))",
    "INSERT OR IGNORE INTO cronslot_wakes (job, second, nanosecond, due_ms) \
       SELECT job, second, nanosecond, second * 1000 + (nanosecond + 999999) / 1000000 \
       FROM cronslot_wake",
    "DELETE FROM cronslot_wake",
];

/// The effect ledger's sweep time, added to the table of the first layout
/// (when `sqlite_master` shows the table without it: `ALTER TABLE` has no
/// `IF NOT EXISTS`), and its index. `sweep_ms` is the entry's
/// [`EffectRecord::sweep_at`] as an alarm instant (the millisecond at or
/// after it, so never early); NULL for an entry written before (or by a
/// Worker of the layout before, which names its columns and so writes on
/// unharmed): the sweep gives those theirs from their records.
const SWEEP_LAYOUT: [&str; 2] = [
    "ALTER TABLE cronslot_effects ADD COLUMN sweep_ms INTEGER",
    "CREATE INDEX IF NOT EXISTS cronslot_effects_sweep ON cronslot_effects (sweep_ms)",
];

/// How many ledger entries each write of an entry deletes at most, of those
/// whose time is up (and, while the object holds entries of the layout
/// before, gives a sweep time at most). The sweep rides on the writes, not
/// on the alarm: the ledger grows only by writes, one entry at most each,
/// so sweeping up to this many per write keeps the entries that are due
/// from piling up (an object's backlog from before sweeping shrinks by at
/// least this many less one a write), while the alarm, which serves the
/// wakes of every record of the object (up to 100,000 schedules), keeps
/// reading only its wakes. Its cost is bounded: one indexed range read
/// that finds nothing when nothing is due, at most this many rows deleted.
pub(crate) const SWEEP_PER_WRITE: usize = 16;

/// The most wakes one alarm sends the tick object at once: a request of
/// about 100 KB. More due wait for the next alarm, set at once.
pub(crate) const MAX_WAKES_SENT: usize = 1000;

/// The state store and effect ledger of one object.
pub struct ObjectStore<S, A = NoAlarm> {
    sql: S,
    alarm: A,
    ready: Cell<bool>,
    /// Whether ledger entries without a sweep time may remain (entries of
    /// the layout before): the sweep looks for them until it finds fewer
    /// than a batch, once per object start.
    untimed: Cell<bool>,
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

/// The whole millisecond at or before `at`: an entry whose sweep time
/// ([`alarm_ms`], at or after its instant) is at or before it is due.
fn floor_ms(at: Timestamp) -> i64 {
    let ms = at.as_nanosecond().div_euclid(1_000_000);
    i64::try_from(ms).unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX })
}

impl<S: Sql, A: Alarm> ObjectStore<S, A> {
    /// The store over the object's SQLite `sql` and its `alarm`.
    pub fn with_alarm(sql: S, alarm: A) -> ObjectStore<S, A> {
        ObjectStore {
            sql,
            alarm,
            ready: Cell::new(false),
            untimed: Cell::new(true),
        }
    }

    /// The object's SQLite.
    pub(crate) fn sql(&self) -> &S {
        &self.sql
    }

    /// The object's alarm (the Worker's glue settles it after a request).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn alarm(&self) -> &A {
        &self.alarm
    }

    /// The earliest wake of the object's records, with its record's name:
    /// `None` when no record has one (or the object holds none).
    pub fn wake(&self) -> Result<Option<Woken>, StoreError> {
        let rows = self.exec(
            "reading the wake",
            "SELECT job, second, nanosecond FROM cronslot_wakes \
             ORDER BY second, nanosecond, job LIMIT 1",
            &[],
        )?;
        Ok(wakes(rows)?.into_iter().next())
    }

    /// The wakes the alarm should send at `now_ms`: each not yet sent whose
    /// wake has come, and each sent whose time to send again has come;
    /// earliest first, at most [`MAX_WAKES_SENT`].
    pub(crate) fn due_wakes(&self, now_ms: i64) -> Result<Vec<Woken>, StoreError> {
        let rows = self.exec(
            "reading the wakes that have come",
            "SELECT job, second, nanosecond FROM cronslot_wakes \
             WHERE coalesce(resend_ms, due_ms) <= ? \
             ORDER BY coalesce(resend_ms, due_ms), job LIMIT ?",
            &[
                SqlValue::Integer(now_ms),
                SqlValue::Integer(i64::try_from(MAX_WAKES_SENT).unwrap_or(i64::MAX)),
            ],
        )?;
        wakes(rows)
    }

    /// The alarm sent `woken` (delivered or not): each entry that still
    /// holds the wake it sent is sent again at `again_ms` unless a write
    /// moves it first. Then the alarm is set to the earliest entry.
    pub(crate) fn sent(&self, woken: &[Woken], again_ms: i64) -> Result<(), StoreError> {
        for w in woken {
            self.exec(
                "noting a wake sent",
                "UPDATE cronslot_wakes SET resend_ms = ? \
                 WHERE job = ? AND second = ? AND nanosecond = ?",
                &[
                    SqlValue::Integer(again_ms),
                    SqlValue::Text(w.job.clone()),
                    SqlValue::Integer(w.at.as_second()),
                    SqlValue::Integer(i64::from(w.at.subsec_nanosecond())),
                ],
            )?;
        }
        self.rearm()
    }

    /// Sets the alarm to the earliest entry's time, or deletes it.
    pub(crate) fn rearm(&self) -> Result<(), StoreError> {
        self.arm()
            .map_err(|e| StoreError::unavailable(format!("re-arming the alarm: {e}")))
    }

    /// Sets the alarm to the earliest entry's time (its wake, or its time
    /// to send again), or deletes it when there is none.
    fn arm(&self) -> Result<(), SqlError> {
        let rows = self
            .exec(
                "reading the next alarm",
                "SELECT min(coalesce(resend_ms, due_ms)) FROM cronslot_wakes",
                &[],
            )
            .map_err(|e| SqlError(e.message))?;
        match rows
            .first()
            .and_then(|r| r.first())
            .and_then(SqlValue::as_integer)
        {
            Some(ms) => self.alarm.set(ms),
            None => self.alarm.delete(),
        }
    }

    /// After a write of `job`'s record: when its wake changed, stores the
    /// new one (not yet sent) or removes it, and sets the alarm to the
    /// earliest entry.
    fn sync_wake(&self, job: &str, wake: Option<Timestamp>) -> Result<(), StoreError> {
        let doing = format!("reading the wake of job {job:?}");
        let name = SqlValue::Text(job.to_string());
        let rows = self.exec(
            &doing,
            "SELECT second, nanosecond FROM cronslot_wakes WHERE job = ?",
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
            Some(at) => self
                .sql
                .exec(
                    "INSERT INTO cronslot_wakes (job, second, nanosecond, due_ms, resend_ms) \
                     VALUES (?, ?, ?, ?, NULL) \
                     ON CONFLICT (job) DO UPDATE SET second = excluded.second, \
                     nanosecond = excluded.nanosecond, due_ms = excluded.due_ms, resend_ms = NULL",
                    &[
                        name,
                        SqlValue::Integer(at.as_second()),
                        SqlValue::Integer(i64::from(at.subsec_nanosecond())),
                        SqlValue::Integer(alarm_ms(at)),
                    ],
                )
                .map_err(|e| ambiguous("storing the wake", &e))?,
            None => self
                .sql
                .exec("DELETE FROM cronslot_wakes WHERE job = ?", &[name])
                .map_err(|e| ambiguous("removing the wake", &e))?,
        };
        self.arm()
            .map_err(|e| ambiguous("setting the alarm for the wake", &e))
    }

    fn exec(
        &self,
        doing: &str,
        sql: &str,
        params: &[SqlValue],
    ) -> Result<Vec<Vec<SqlValue>>, StoreError> {
        if !self.ready.get() {
            let creating = |e: SqlError| failed("creating the object's tables", &e);
            for statement in SCHEMA {
                self.sql.exec(statement, &[]).map_err(creating)?;
            }
            let table = self
                .sql
                .exec(
                    "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'cronslot_effects'",
                    &[],
                )
                .map_err(creating)?;
            let swept = table
                .first()
                .and_then(|r| r.first())
                .and_then(SqlValue::as_text)
                .is_some_and(|t| t.contains("sweep_ms"));
            let layout = if swept {
                &SWEEP_LAYOUT[1..]
            } else {
                &SWEEP_LAYOUT[..]
            };
            for statement in layout {
                self.sql.exec(statement, &[]).map_err(creating)?;
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
        match rows.into_iter().next() {
            None => Ok(None),
            Some(row) => stored_state(job, row.first(), row.get(1)).map(Some),
        }
    }

    /// One statement, so one view of the object: a range of the primary
    /// key, from the prefix (or the cursor) to the prefix's end.
    fn records_page_now(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        // Bounds SQLite can seek on: a range of the key, no `OR`.
        let (start_op, start) = match after {
            Some(a) if a >= prefix => (">", a),
            _ => (">=", prefix),
        };
        let mut params = vec![
            SqlValue::Text(start.to_string()),
            SqlValue::Text(prefix.to_string()),
            SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)),
        ];
        let end_clause = match prefix_end(prefix) {
            Some(end) => {
                params.push(SqlValue::Text(end));
                "AND job < ?4"
            }
            None => "",
        };
        let rows = self.exec(
            &format!("listing the records under {prefix:?}"),
            &format!(
                "SELECT job, version, state FROM cronslot_state \
                 WHERE job {start_op} ?1 {end_clause} AND substr(job, 1, length(?2)) = ?2 \
                 ORDER BY job LIMIT ?3"
            ),
            &params,
        )?;
        rows.into_iter()
            .map(|row| {
                let job = row.first().and_then(SqlValue::as_text).ok_or_else(|| {
                    StoreError::new(StoreErrorKind::Corrupt, "a job name is not text")
                })?;
                let record = stored_state(job, row.get(1), row.get(2))?;
                Ok((job.to_string(), record))
            })
            .collect()
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

    /// Writes `record` at `now`, after sweeping ([`ObjectStore::sweep`]):
    /// the entry written is never the one swept.
    fn write_effect(&self, record: &EffectRecord, now: Timestamp) -> Result<(), StoreError> {
        self.sweep(now)?;
        let text = serde_json::to_string(record)
            .map_err(|e| StoreError::other(format!("encoding effect {:?}: {e}", record.key)))?;
        let expires_at = match &record.state {
            EffectState::InProgress { expires_at } => SqlValue::Text(expires_at.to_string()),
            EffectState::Done { .. } => SqlValue::Null,
        };
        let sweep_ms = SqlValue::Integer(alarm_ms(record.sweep_at(DEFAULT_EFFECT_RETENTION)));
        self.exec(
            &format!("writing effect {:?}", record.key),
            "INSERT INTO cronslot_effects (key, record, expires_at, sweep_ms) VALUES (?, ?, ?, ?) \
             ON CONFLICT (key) DO UPDATE SET record = excluded.record, \
             expires_at = excluded.expires_at, sweep_ms = excluded.sweep_ms",
            &[
                SqlValue::Text(record.key.clone()),
                SqlValue::Text(text),
                expires_at,
                sweep_ms,
            ],
        )?;
        Ok(())
    }

    /// Deletes at most [`SWEEP_PER_WRITE`] ledger entries whose time is up
    /// at `now` ([`EffectRecord::sweep_at`]: a hold once it lapses, a done
    /// effect [`DEFAULT_EFFECT_RETENTION`] after it was done), first giving
    /// as many entries of the layout before their sweep time from their
    /// records, while there may be some. Returns how many it deleted. An
    /// entry whose record does not read is never swept (reading it
    /// reports it).
    pub fn sweep(&self, now: Timestamp) -> Result<u64, StoreError> {
        let batch = SqlValue::Integer(i64::try_from(SWEEP_PER_WRITE).unwrap_or(i64::MAX));
        if self.untimed.get() {
            let rows = self.exec(
                "reading the effects without a sweep time",
                "SELECT key, record FROM cronslot_effects WHERE sweep_ms IS NULL LIMIT ?",
                std::slice::from_ref(&batch),
            )?;
            self.untimed.set(rows.len() >= SWEEP_PER_WRITE);
            for row in rows {
                let (Some(key), record) = (row.first().and_then(SqlValue::as_text), row.get(1))
                else {
                    continue;
                };
                let sweep_ms = record
                    .and_then(SqlValue::as_text)
                    .and_then(|text| cronslot_core::json::from_str::<EffectRecord>(text).ok())
                    .filter(|r| r.key == key)
                    .map_or(i64::MAX, |r| alarm_ms(r.sweep_at(DEFAULT_EFFECT_RETENTION)));
                self.exec(
                    &format!("giving effect {key:?} its sweep time"),
                    "UPDATE cronslot_effects SET sweep_ms = ? WHERE key = ?",
                    &[SqlValue::Integer(sweep_ms), SqlValue::Text(key.to_string())],
                )?;
            }
        }
        let deleted = self.exec(
            "sweeping the effect ledger",
            "DELETE FROM cronslot_effects WHERE key IN (SELECT key FROM cronslot_effects \
             WHERE sweep_ms <= ? ORDER BY sweep_ms LIMIT ?) RETURNING key",
            &[SqlValue::Integer(floor_ms(now)), batch],
        )?;
        Ok(u64::try_from(deleted.len()).unwrap_or(u64::MAX))
    }
}

/// Rows of (record name, second, nanosecond) as wakes.
fn wakes(rows: Vec<Vec<SqlValue>>) -> Result<Vec<Woken>, StoreError> {
    let corrupt = || StoreError::new(StoreErrorKind::Corrupt, "the object's wake is corrupt");
    rows.into_iter()
        .map(|row| {
            let job = row
                .first()
                .and_then(SqlValue::as_text)
                .ok_or_else(corrupt)?;
            let at = instant(row.get(1), row.get(2)).ok_or_else(corrupt)?;
            Ok(Woken {
                job: job.to_string(),
                at,
            })
        })
        .collect()
}

/// A record from its row's version and state, or why it is corrupt.
fn stored_state(
    job: &str,
    version: Option<&SqlValue>,
    state: Option<&SqlValue>,
) -> Result<Versioned<JobState>, StoreError> {
    let corrupt = |why: &str| {
        StoreError::new(
            StoreErrorKind::Corrupt,
            format!("the object's record of job {job:?} is corrupt: {why}"),
        )
    };
    let version = version
        .and_then(SqlValue::as_integer)
        .and_then(|v| Version::try_from(v).ok())
        .ok_or_else(|| corrupt("its version is not a non-negative integer"))?;
    let text = state
        .and_then(SqlValue::as_text)
        .ok_or_else(|| corrupt("its state is not text"))?;
    let value = decode_state(job, text)
        .map_err(|e| StoreError::new(StoreErrorKind::Corrupt, e.to_string()))?;
    Ok(Versioned { value, version })
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

    /// The record and its wake go together: the object's requests run one
    /// at a time, so nothing comes between the two statements.
    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        let Ok(expected) = i64::try_from(expected) else {
            return Ok(false);
        };
        let rows = self.exec(
            &format!("deleting the record of job {job:?}"),
            "DELETE FROM cronslot_state WHERE job = ? AND version = ? RETURNING version",
            &[SqlValue::Text(job.to_string()), SqlValue::Integer(expected)],
        )?;
        if rows.is_empty() {
            return Ok(false);
        }
        self.sync_wake(job, None)?;
        Ok(true)
    }

    async fn records_page(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        self.records_page_now(prefix, after, limit)
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
            self.write_effect(&record, now)?;
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
            self.write_effect(&record, now)?;
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
