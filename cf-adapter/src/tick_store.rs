//! The tick object's storage (docs/design.md §11): the tick mark, and the
//! jobs whose wake has come, each with its wake, as the job objects' alarms
//! sent them. A tick reads both in one request (`tick_start`) and writes
//! both in one more (`tick_end`), whatever the number of jobs.
//!
//! A job has at most one entry: the wake its object sent last, which is its
//! record's wake (an object sends its wakes one at a time, in order). An
//! entry leaves only through a `tick_end` that names it with the same
//! wake: a tick that served the job at that wake. A newer wake sent while
//! a tick serves the older one replaces it, and that tick's end leaves it
//! in place.

use std::cell::Cell;

use cronslot_core::coord::{StoreError, StoreErrorKind};
use jiff::Timestamp;

use crate::protocol::Woken;
use crate::sql::{Sql, SqlError, SqlValue};

/// The tick object's tables, created on its first request. Job objects
/// never create them.
const SCHEMA: [&str; 4] = [
    "CREATE TABLE IF NOT EXISTS cronslot_tick_mark (\
       singleton INTEGER PRIMARY KEY CHECK (singleton = 1), \
       second INTEGER NOT NULL, nanosecond INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS cronslot_woken (\
       job TEXT PRIMARY KEY, second INTEGER NOT NULL, nanosecond INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS cronslot_woken_at ON cronslot_woken (second, nanosecond)",
    // Planned jobs a bounded tick left, at their slots (`TickStart::carried`).
    "CREATE TABLE IF NOT EXISTS cronslot_carried (\
       job TEXT PRIMARY KEY, second INTEGER NOT NULL, nanosecond INTEGER NOT NULL)",
];

/// The tick mark and the woken jobs, over the tick object's SQLite.
#[derive(Debug, Default)]
pub(crate) struct TickTables {
    ready: Cell<bool>,
}

fn failed(doing: &str, e: &SqlError) -> StoreError {
    StoreError::new(
        StoreErrorKind::Unavailable,
        format!("tick object storage: {doing}: {e}"),
    )
}

fn corrupt(what: &str) -> StoreError {
    StoreError::new(
        StoreErrorKind::Corrupt,
        format!("the tick object's {what} is corrupt"),
    )
}

fn instant(second: Option<&SqlValue>, nano: Option<&SqlValue>) -> Option<Timestamp> {
    let second = second.and_then(SqlValue::as_integer)?;
    let nano = i32::try_from(nano.and_then(SqlValue::as_integer)?).ok()?;
    Timestamp::new(second, nano).ok()
}

/// What a tick's start reads.
pub(crate) struct TickRead {
    pub mark: Option<Timestamp>,
    pub woken: Vec<Woken>,
    pub carried: Vec<Woken>,
}

/// Rows of (job, second, nanosecond) as entries.
fn entries(rows: Vec<Vec<SqlValue>>, what: &str) -> Result<Vec<Woken>, StoreError> {
    rows.into_iter()
        .map(|row| {
            let job = row.first().and_then(SqlValue::as_text);
            let at = instant(row.get(1), row.get(2));
            match (job, at) {
                (Some(job), Some(at)) => Ok(Woken {
                    job: job.to_string(),
                    at,
                }),
                _ => Err(corrupt(what)),
            }
        })
        .collect()
}

fn parts(at: Timestamp) -> [SqlValue; 2] {
    [
        SqlValue::Integer(at.as_second()),
        SqlValue::Integer(i64::from(at.subsec_nanosecond())),
    ]
}

impl TickTables {
    fn exec<S: Sql>(
        &self,
        sql: &S,
        doing: &str,
        statement: &str,
        params: &[SqlValue],
    ) -> Result<Vec<Vec<SqlValue>>, StoreError> {
        if !self.ready.get() {
            for s in SCHEMA {
                sql.exec(s, &[])
                    .map_err(|e| failed("creating the tick object's tables", &e))?;
            }
            self.ready.set(true);
        }
        sql.exec(statement, params).map_err(|e| failed(doing, &e))
    }

    fn mark<S: Sql>(&self, sql: &S) -> Result<Option<Timestamp>, StoreError> {
        let rows = self.exec(
            sql,
            "reading the tick mark",
            "SELECT second, nanosecond FROM cronslot_tick_mark WHERE singleton = 1",
            &[],
        )?;
        match rows.first() {
            None => Ok(None),
            Some(row) => instant(row.first(), row.get(1))
                .map(Some)
                .ok_or_else(|| corrupt("mark")),
        }
    }

    /// The mark; the jobs whose wake is at or before `now`, earliest first
    /// (then by name), at most `limit`; and the planned jobs a bounded tick
    /// left, earliest slot first, at most `limit`.
    pub(crate) fn start<S: Sql>(
        &self,
        sql: &S,
        now: Timestamp,
        limit: usize,
    ) -> Result<TickRead, StoreError> {
        let mark = self.mark(sql)?;
        let [second, nano] = parts(now);
        let limit = SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX));
        let rows = self.exec(
            sql,
            "reading the woken jobs",
            "SELECT job, second, nanosecond FROM cronslot_woken \
             WHERE second < ?1 OR (second = ?1 AND nanosecond <= ?2) \
             ORDER BY second, nanosecond, job LIMIT ?3",
            &[second, nano, limit.clone()],
        )?;
        let woken = entries(rows, "list of woken jobs")?;
        let rows = self.exec(
            sql,
            "reading the jobs left by a tick",
            "SELECT job, second, nanosecond FROM cronslot_carried \
             ORDER BY second, nanosecond, job LIMIT ?1",
            &[limit],
        )?;
        let carried = entries(rows, "list of jobs left by a tick")?;
        Ok(TickRead {
            mark,
            woken,
            carried,
        })
    }

    /// Moves the mark to `mark` unless it is there or later already,
    /// removes each served entry (woken or left) whose stored time is the
    /// one served, and keeps each planned job `left` at its slot (an entry
    /// it has already stays).
    pub(crate) fn end<S: Sql>(
        &self,
        sql: &S,
        mark: Timestamp,
        served: &[Woken],
        left: &[Woken],
    ) -> Result<(), StoreError> {
        if self.mark(sql)?.is_none_or(|m| m < mark) {
            let [second, nano] = parts(mark);
            self.exec(
                sql,
                "moving the tick mark",
                "INSERT INTO cronslot_tick_mark (singleton, second, nanosecond) VALUES (1, ?, ?) \
                 ON CONFLICT (singleton) DO UPDATE SET second = excluded.second, \
                 nanosecond = excluded.nanosecond",
                &[second, nano],
            )?;
        }
        for w in served {
            let [second, nano] = parts(w.at);
            self.exec(
                sql,
                &format!("removing the served wake of job {:?}", w.job),
                "DELETE FROM cronslot_woken WHERE job = ? AND second = ? AND nanosecond = ?",
                &[SqlValue::Text(w.job.clone()), second.clone(), nano.clone()],
            )?;
            self.exec(
                sql,
                &format!("removing the served left job {:?}", w.job),
                "DELETE FROM cronslot_carried WHERE job = ? AND second = ? AND nanosecond = ?",
                &[SqlValue::Text(w.job.clone()), second, nano],
            )?;
        }
        for w in left {
            let [second, nano] = parts(w.at);
            self.exec(
                sql,
                &format!("keeping job {:?} for the next tick", w.job),
                "INSERT INTO cronslot_carried (job, second, nanosecond) VALUES (?, ?, ?) \
                 ON CONFLICT (job) DO NOTHING",
                &[SqlValue::Text(w.job.clone()), second, nano],
            )?;
        }
        Ok(())
    }

    /// Adds a woken job, or replaces its entry with this newer wake.
    pub(crate) fn wake<S: Sql>(&self, sql: &S, woken: &Woken) -> Result<(), StoreError> {
        let [second, nano] = parts(woken.at);
        self.exec(
            sql,
            &format!("adding the wake of job {:?}", woken.job),
            "INSERT INTO cronslot_woken (job, second, nanosecond) VALUES (?, ?, ?) \
             ON CONFLICT (job) DO UPDATE SET second = excluded.second, \
             nanosecond = excluded.nanosecond",
            &[SqlValue::Text(woken.job.clone()), second, nano],
        )?;
        Ok(())
    }
}
