//! The job records: reading one, the conditional write (first write or
//! compare-and-set on the version, with the record's wake), listing
//! them, and [`StateStore`] over those. Apart from the effect ledger and
//! the tick index, which share with it only the connection, the
//! transaction helpers and the error naming of lib.rs.

use super::*;

impl SqliteStore {
    /// One statement: the row goes only at the version read (the wake
    /// index is a column of the row, so it goes with it).
    fn delete_now(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        let where_ = self.where_();
        let Ok(expected) = i64::try_from(expected) else {
            return Ok(false);
        };
        let conn = self.lock();
        self.count(1);
        let deleted = conn
            .execute(
                "DELETE FROM job_state WHERE job = ?1 AND version = ?2",
                (job, expected),
            )
            .map_err(|e| where_.error(&format!("deleting the record of {job:?}"), &e))?;
        Ok(deleted == 1)
    }

    fn get_now(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        let conn = self.lock();
        self.count(1);
        read_state(&conn, self.where_(), job)
    }

    fn put_now(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        let where_ = self.where_();
        if state.job != job {
            // A caller's bug; storing it would leave a record that every
            // later read refuses as corrupt.
            return Err(StoreError::other(format!(
                "{where_}: refusing to store the state of job {:?} as job {job:?}",
                state.job
            )));
        }
        let doing = || format!("writing the state of job {job:?}");
        let mut conn = self.lock();
        let tx = begin_immediate(&mut conn, where_, &doing)?;
        let text = encode_state(state);
        self.count(1);
        let written = write_state(&tx, where_, job, &text, state.wake_at, expected)?;
        if let Some(version) = written {
            commit(tx, where_, &doing)?;
            return Ok(PutResult::Written(version));
        }
        // Still inside the transaction, so this is the record that beat us,
        // not a later one; dropping `tx` then rolls back (nothing written).
        self.count(1);
        let current = read_state(&tx, where_, job)?;
        Ok(PutResult::Conflict(current.map(Box::new)))
    }

    /// Every record of `jobs` under one hold of the connection: each read
    /// is a statement, and nothing is written between them.
    fn get_many_now(&self, jobs: &[&str]) -> Result<Vec<Option<Versioned<JobState>>>, StoreError> {
        let conn = self.lock();
        self.count(jobs.len() as u64);
        jobs.iter()
            .map(|job| read_state(&conn, self.where_(), job))
            .collect()
    }

    /// Many conditional writes in one transaction, so one commit (one
    /// sync of the file) for all of them; each has its own answer, and a
    /// write that loses leaves the others to commit.
    fn put_many_now(&self, writes: &[RecordWrite<'_>]) -> Vec<Result<PutResult, StoreError>> {
        let where_ = self.where_();
        let doing = || format!("writing the states of {} jobs", writes.len());
        let mut conn = self.lock();
        let tx = match begin_immediate(&mut conn, where_, &doing) {
            Ok(tx) => tx,
            Err(e) => return writes.iter().map(|_| Err(e.clone())).collect(),
        };
        let mut answers = Vec::with_capacity(writes.len());
        for w in writes {
            if w.state.job != w.job {
                answers.push(Err(StoreError::other(format!(
                    "{where_}: refusing to store the state of job {:?} as job {:?}",
                    w.state.job, w.job
                ))));
                continue;
            }
            self.count(1);
            let text = encode_state(w.state);
            let answer = match write_state(&tx, where_, w.job, &text, w.state.wake_at, w.expected) {
                Ok(Some(version)) => Ok(PutResult::Written(version)),
                Ok(None) => {
                    self.count(1);
                    read_state(&tx, where_, w.job).map(|c| PutResult::Conflict(c.map(Box::new)))
                }
                Err(e) => Err(e),
            };
            answers.push(answer);
        }
        if let Err(e) = commit(tx, where_, &doing) {
            // Nothing of it was written.
            return writes.iter().map(|_| Err(e.clone())).collect();
        }
        answers
    }

    fn jobs_now(&self) -> Result<Vec<String>, StoreError> {
        let where_ = self.where_();
        let conn = self.lock();
        let doing = "listing jobs";
        // SQLite's BINARY collation compares UTF-8 bytes, which is the
        // order of Rust's `String`.
        let mut stmt = conn
            .prepare("SELECT job FROM job_state ORDER BY job")
            .map_err(|e| where_.error(doing, &e))?;
        let rows = stmt
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(|e| where_.error(doing, &e))?;
        rows.map(|r| r.map_err(|e| where_.error(doing, &e)))
            .collect()
    }

    /// One statement, so one snapshot: a range of the primary key's
    /// index, from the prefix (or the cursor) to the prefix's end.
    fn records_page_now(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        let where_ = self.where_();
        let doing = format!("listing the records under {prefix:?}");
        // Bounds the planner can seek on: a range of the key, no `OR`.
        let (start_op, start) = match after {
            Some(a) if a >= prefix => (">", a),
            _ => (">=", prefix),
        };
        let end = prefix_end(prefix);
        let end_clause = if end.is_some() {
            "AND job < ?3"
        } else {
            "AND ?3 IS NULL"
        };
        let sql = format!(
            "SELECT job, version, state FROM job_state \
             WHERE job {start_op} ?1 {end_clause} AND substr(job, 1, length(?2)) = ?2 \
             ORDER BY job LIMIT ?4"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let conn = self.lock();
        self.count(1);
        let mut stmt = conn
            .prepare_cached(&sql)
            .map_err(|e| where_.error(&doing, &e))?;
        let rows = stmt
            .query_map((start, prefix, end, limit), |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, Value>(1)?,
                    row.get::<_, Value>(2)?,
                ))
            })
            .map_err(|e| where_.error(&doing, &e))?;
        let mut page = Vec::new();
        for row in rows {
            let (job, version, text) = row.map_err(|e| where_.error(&doing, &e))?;
            let record = stored_record(where_, &job, version, text)?;
            page.push((job, record));
        }
        Ok(page)
    }
}

impl StateStore for SqliteStore {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        self.get_now(job)
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        self.put_now(job, state, expected)
    }

    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        self.delete_now(job, expected)
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.jobs_now()
    }

    async fn records_page(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        self.records_page_now(prefix, after, limit)
    }

    async fn get_many_judged(
        &self,
        jobs: &[&str],
        now: Timestamp,
    ) -> Result<(Vec<Option<Versioned<JobState>>>, Timestamp), StoreError> {
        Ok((self.get_many_now(jobs)?, now))
    }

    async fn put_many(&self, writes: &[RecordWrite<'_>]) -> Vec<Result<PutResult, StoreError>> {
        self.put_many_now(writes)
    }
}

/// The conditional write of `job`'s record (its text and its wake), in a
/// transaction that holds the write lock: the first write when `expected`
/// is `None`, else the write over that version. The version written, or
/// `None` when the record is not as expected (nothing written). One
/// statement; the store's own writes and a write in an application's
/// transaction (txn.rs) both make it.
pub(crate) fn write_state(
    conn: &Connection,
    where_: Where<'_>,
    job: &str,
    text: &str,
    wake: Option<Timestamp>,
    expected: Option<Version>,
) -> Result<Option<Version>, StoreError> {
    let doing = || format!("writing the state of job {job:?}");
    let wake = wake.map(nanos);
    match expected {
        None => {
            let sql = format!(
                "INSERT INTO job_state (job, version, state, wake_at, updated_at) \
                 VALUES (?1, 1, ?2, ?3, {SQL_NOW}) ON CONFLICT (job) DO NOTHING"
            );
            let changed = conn
                .execute(&sql, (job, text, wake))
                .map_err(|e| where_.error(&doing(), &e))?;
            Ok((changed == 1).then_some(1))
        }
        // A version beyond SQLite's integer range was never issued by
        // this store: it cannot match, so it is a conflict.
        Some(expected) => match i64::try_from(expected) {
            Err(_) => Ok(None),
            Ok(expected_sql) => {
                let next = expected_sql.checked_add(1).ok_or_else(|| {
                    StoreError::other(format!(
                        "{where_}: the version of job {job:?} cannot grow past {expected}"
                    ))
                })?;
                let sql = format!(
                    "UPDATE job_state SET version = ?3, state = ?2, wake_at = ?5, \
                     updated_at = {SQL_NOW} WHERE job = ?1 AND version = ?4"
                );
                let changed = conn
                    .execute(&sql, (job, text, next, expected_sql, wake))
                    .map_err(|e| where_.error(&doing(), &e))?;
                // `next` is positive, so it converts back.
                Ok((changed == 1).then(|| expected.saturating_add(1)))
            }
        },
    }
}

pub(crate) fn read_state(
    conn: &Connection,
    where_: Where<'_>,
    job: &str,
) -> Result<Option<Versioned<JobState>>, StoreError> {
    let row: Option<(Value, Value)> = conn
        .query_row(
            "SELECT version, state FROM job_state WHERE job = ?1",
            [job],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .map_err(|e| where_.error(&format!("reading the state of job {job:?}"), &e))?;
    let Some((version, text)) = row else {
        return Ok(None);
    };
    stored_record(where_, job, version, text).map(Some)
}

/// A record from its row's version and state, refused as corrupt (naming
/// the job) when they are not a version and a record's text.
fn stored_record(
    where_: Where<'_>,
    job: &str,
    version: Value,
    text: Value,
) -> Result<Versioned<JobState>, StoreError> {
    let what = format!("job {job:?}");
    let version = match version {
        Value::Integer(v) => Version::try_from(v)
            .map_err(|_| where_.corrupt(&what, format!("version {v} is negative")))?,
        other => {
            return Err(where_.corrupt(&what, format!("version holds {other:?}, not a number")));
        }
    };
    let Value::Text(text) = text else {
        return Err(where_.corrupt(&what, "the state is not text"));
    };
    // The decode error already names the job.
    let value = decode_state(job, &text)
        .map_err(|e| StoreError::new(StoreErrorKind::Corrupt, format!("{where_}: {e}")))?;
    Ok(Versioned { value, version })
}
