//! The job records: reading one, the conditional write (first write or
//! compare-and-set on the version, with the record's wake), listing
//! them, and [`StateStore`] over those. Apart from the effect ledger and
//! the tick index, which share with it only the connection, the
//! transaction helpers and the error naming of lib.rs.

use super::*;

impl SqliteStore {
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
        let wake = state.wake_at.map(nanos);
        self.count(1);
        let written: Option<Version> = match expected {
            None => {
                let sql = format!(
                    "INSERT INTO job_state (job, version, state, wake_at, updated_at) \
                     VALUES (?1, 1, ?2, ?3, {SQL_NOW}) ON CONFLICT (job) DO NOTHING"
                );
                let changed = tx
                    .execute(&sql, (job, &text, wake))
                    .map_err(|e| where_.error(&doing(), &e))?;
                (changed == 1).then_some(1)
            }
            // A version beyond SQLite's integer range was never issued by
            // this store: it cannot match, so it is a conflict.
            Some(expected) => match i64::try_from(expected) {
                Err(_) => None,
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
                    let changed = tx
                        .execute(&sql, (job, &text, next, expected_sql, wake))
                        .map_err(|e| where_.error(&doing(), &e))?;
                    // `next` is positive, so it converts back.
                    (changed == 1).then(|| expected.saturating_add(1))
                }
            },
        };
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

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.jobs_now()
    }
}

fn read_state(
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
    Ok(Some(Versioned { value, version }))
}
