//! The job records: reading one with the server's clock, the conditional
//! write (first write or compare-and-set on the version, with the
//! record's wake), listing them, and [`StateStore`] over those. Apart
//! from the effect ledger and the tick index, which share with it only
//! the pool and the statements.

use super::*;

impl PgStore {
    async fn read(
        &self,
        job: &str,
    ) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
        let (shared, sql, job) = (self.shared.clone(), self.sql.clone(), job.to_string());
        self.shared
            .driver
            .run(async move {
                let mut conn = shared.checkout().await?;
                let sent = Timestamp::now();
                let (record, server) = read_state(&mut conn, &sql, &job).await?;
                shared.offset.measured(sent, server, Timestamp::now());
                Ok((record, server))
            })
            .await
    }

    /// The records of `jobs`, in that order, and the server's clock, in
    /// one statement.
    async fn read_many(
        &self,
        jobs: &[&str],
    ) -> Result<(Vec<Option<Versioned<JobState>>>, Timestamp), StoreError> {
        let (shared, sql) = (self.shared.clone(), self.sql.clone());
        let jobs: Vec<String> = jobs.iter().map(|j| j.to_string()).collect();
        self.shared
            .driver
            .run(async move {
                let doing = || format!("reading the states of {} jobs", jobs.len());
                let mut conn = shared.checkout().await?;
                let sent = Timestamp::now();
                let rows = conn
                    .statement(
                        Phase::Read,
                        &doing,
                        &sql.get_many,
                        &[(&jobs, Type::TEXT_ARRAY)],
                    )
                    .await?;
                if rows.len() != jobs.len() {
                    return Err(unexpected(&conn, &doing));
                }
                let mut server = None;
                let mut records = Vec::with_capacity(jobs.len());
                for (row, job) in rows.iter().zip(&jobs) {
                    server.get_or_insert(conn.column::<PgTime>(row, 0, &doing)?.0);
                    records.push(versioned(&conn, row, 1, job, &doing)?);
                }
                let server = server.ok_or_else(|| unexpected(&conn, &doing))?;
                shared.offset.measured(sent, server, Timestamp::now());
                Ok((records, server))
            })
            .await
    }

    /// Many conditional writes: the first write of each record in the
    /// bulk's statements (store/group.rs), a second write of one record
    /// after them, alone.
    async fn put_states(&self, writes: &[RecordWrite<'_>]) -> Vec<Result<PutResult, StoreError>> {
        // In the bulk: the first write of each record. A second one, or a
        // caller's bug that `put` names (a state of another record), goes
        // alone after it.
        let mut seen = std::collections::HashSet::new();
        let in_bulk: Vec<bool> = writes
            .iter()
            .map(|w| w.state.job == w.job && seen.insert(w.job))
            .collect();
        let bulk: Vec<group::Write> = writes
            .iter()
            .zip(&in_bulk)
            .filter(|(_, bulk)| **bulk)
            .map(|(w, _)| group::Write {
                job: w.job.to_string(),
                text: encode_state(w.state),
                wake: w.state.wake_at.map(PgTime),
                expected: w.expected,
            })
            .collect();
        let (shared, sql, group) = (self.shared.clone(), self.sql.clone(), self.writes.clone());
        let sent = bulk.len();
        let mut bulk = match self
            .shared
            .driver
            .run(async move { Ok(group.send_all(shared, sql, bulk).await) })
            .await
        {
            Ok(answers) => answers,
            Err(e) => vec![Err(e); sent],
        }
        .into_iter();
        let mut answers = Vec::with_capacity(writes.len());
        for (w, in_bulk) in writes.iter().zip(in_bulk) {
            answers.push(if in_bulk {
                bulk.next().unwrap_or_else(|| {
                    Err(StoreError::other(format!(
                        "PostgreSQL store {}: a bulk write lost an answer: this is a bug",
                        self.shared.shown
                    )))
                })
            } else {
                self.put_state(w.job, w.state, w.expected).await
            });
        }
        answers
    }

    async fn put_state(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        if state.job != job {
            // A caller's bug; storing it would leave a record that every
            // later read refuses as corrupt.
            return Err(StoreError::other(format!(
                "PostgreSQL store {}: refusing to store the state of job {:?} as job {job:?}",
                self.shared.shown, state.job
            )));
        }
        let (shared, sql, writes) = (self.shared.clone(), self.sql.clone(), self.writes.clone());
        let write = group::Write {
            job: job.to_string(),
            text: encode_state(state),
            wake: state.wake_at.map(PgTime),
            expected,
        };
        self.shared
            .driver
            .run(writes.send(shared, sql, write))
            .await
    }

    async fn delete_state(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        let Ok(expected) = i64::try_from(expected) else {
            return Ok(false);
        };
        let (shared, sql, job) = (self.shared.clone(), self.sql.clone(), job.to_string());
        self.shared
            .driver
            .run(async move {
                let doing = || format!("deleting the record of {job:?}");
                let mut conn = shared.checkout().await?;
                let rows = conn
                    .query(
                        Phase::Write,
                        false,
                        &doing,
                        &sql.delete,
                        &[(&job, Type::TEXT), (&expected, Type::INT8)],
                    )
                    .await?;
                let deleted = match rows.first() {
                    Some(row) => conn.column::<i64>(row, 0, &doing)?,
                    None => 0,
                };
                Ok(deleted == 1)
            })
            .await
    }

    async fn list_jobs(&self) -> Result<Vec<String>, StoreError> {
        let (shared, sql) = (self.shared.clone(), self.sql.clone());
        self.shared
            .driver
            .run(async move {
                let doing = || "listing jobs".to_string();
                let mut conn = shared.checkout().await?;
                let rows = conn
                    .query(Phase::Read, false, &doing, &sql.jobs, &[])
                    .await?;
                rows.iter()
                    .map(|row| conn.column::<String>(row, 0, &doing))
                    .collect()
            })
            .await
    }

    async fn list_page(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        let (shared, sql) = (self.shared.clone(), self.sql.clone());
        let (prefix, after) = (prefix.to_string(), after.map(str::to_string));
        let end = prefix_end(&prefix);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.shared
            .driver
            .run(async move {
                let doing = || format!("listing the records under {prefix:?}");
                let mut conn = shared.checkout().await?;
                let rows = conn
                    .query(
                        Phase::Read,
                        false,
                        &doing,
                        &sql.page,
                        &[
                            (&prefix, Type::TEXT),
                            (&after, Type::TEXT),
                            (&end, Type::TEXT),
                            (&limit, Type::INT8),
                        ],
                    )
                    .await?;
                let mut page = Vec::with_capacity(rows.len());
                for row in &rows {
                    let job = conn.column::<String>(row, 0, &doing)?;
                    // Both columns are NOT NULL: a row is a record.
                    if let Some(record) = versioned(&conn, row, 1, &job, &doing)? {
                        page.push((job, record));
                    }
                }
                Ok(page)
            })
            .await
    }
}

/// The record of `job` (if any) and the server's clock, in one statement.
pub(super) async fn read_state(
    conn: &mut impl Session,
    sql: &Sql,
    job: &str,
) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
    let doing = || format!("reading the state of job {job:?}");
    let rows = conn
        .statement(Phase::Read, &doing, &sql.get, &[(&job, Type::TEXT)])
        .await?;
    let Some(row) = rows.first() else {
        return Err(unexpected(conn, &doing));
    };
    let server = conn.column::<PgTime>(row, 0, &doing)?.0;
    let record = versioned(conn, row, 1, job, &doing)?;
    Ok((record, server))
}

/// The record in columns `first` (version) and `first + 1` (state) of
/// `row`, when they are not null.
pub(super) fn versioned(
    conn: &impl Session,
    row: &Row,
    first: usize,
    job: &str,
    doing: &(dyn Fn() -> String + Sync),
) -> Result<Option<Versioned<JobState>>, StoreError> {
    let version = conn.column::<Option<i64>>(row, first, doing)?;
    let state = conn.column::<Option<String>>(row, first + 1, doing)?;
    let (Some(version), Some(text)) = (version, state) else {
        return Ok(None);
    };
    let version = Version::try_from(version).map_err(|_| {
        StoreError::corrupt(format!(
            "PostgreSQL store {}: job {job:?}: version {version} is negative",
            conn.store()
        ))
    })?;
    // The decode error already names the job.
    let value = decode_state(job, &text)
        .map_err(|e| StoreError::corrupt(format!("PostgreSQL store {}: {e}", conn.store())))?;
    Ok(Some(Versioned { value, version }))
}

/// Who tells the runners that a write made its record due now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Notify {
    /// The store, after the write (its answer's `due`): the statements do
    /// not notify.
    After,
    /// The statement itself, delivered when its transaction commits (an
    /// application's transaction, whose commit the store does not see).
    InStatement,
}

/// A conditional write of `job`'s record, and whether it made the record
/// due now (always false with [`Notify::InStatement`]: the statement has
/// notified).
pub(super) async fn put_state(
    conn: &mut impl Session,
    sql: &Sql,
    job: &str,
    text: &str,
    wake: Option<PgTime>,
    expected: Option<Version>,
    notify: Notify,
) -> Result<(PutResult, bool), StoreError> {
    let doing = || format!("writing the state of job {job:?}");
    let (insert, update) = match notify {
        Notify::After => (&sql.insert, &sql.update),
        Notify::InStatement => (&sql.insert_notifying, &sql.update_notifying),
    };
    let rows = match expected {
        None => {
            conn.statement(
                Phase::Write,
                &doing,
                insert,
                &[
                    (&job, Type::TEXT),
                    (&text, Type::TEXT),
                    (&wake, Type::TIMESTAMPTZ),
                ],
            )
            .await?
        }
        Some(expected) => {
            // A version beyond bigint was never issued by this store: it
            // cannot match, so it is a conflict.
            let Ok(expected) = i64::try_from(expected) else {
                let (current, _) = read_state(conn, sql, job).await?;
                return Ok((PutResult::Conflict(current.map(Box::new)), false));
            };
            let next = expected.checked_add(1).ok_or_else(|| {
                StoreError::other(format!(
                    "PostgreSQL store {}: the version of job {job:?} cannot grow past {expected}",
                    conn.store()
                ))
            })?;
            conn.statement(
                Phase::Write,
                &doing,
                update,
                &[
                    (&job, Type::TEXT),
                    (&text, Type::TEXT),
                    (&next, Type::INT8),
                    (&expected, Type::INT8),
                    (&wake, Type::TIMESTAMPTZ),
                ],
            )
            .await?
        }
    };
    let Some(row) = rows.first() else {
        return Err(unexpected(conn, &doing));
    };
    if let Some(version) = conn.column::<Option<i64>>(row, 0, &doing)? {
        let version = Version::try_from(version).map_err(|_| {
            StoreError::corrupt(format!(
                "PostgreSQL store {}: job {job:?}: version {version} is negative",
                conn.store()
            ))
        })?;
        let due = conn
            .column::<Option<bool>>(row, 3, &doing)?
            .unwrap_or(false);
        return Ok((PutResult::Written(version), due));
    }
    let mut current = versioned(conn, row, 1, job, &doing)?;
    // What the statement's snapshot showed may be older than what beat the
    // write (committed while the write waited for the row): then it still
    // looks like what the caller expected. Read the winner.
    let stale = match (&current, expected) {
        (None, None) => true,
        (Some(c), Some(e)) => c.version == e,
        _ => false,
    };
    if stale {
        current = read_state(conn, sql, job).await?.0;
    }
    Ok((PutResult::Conflict(current.map(Box::new)), false))
}

impl StateStore for PgStore {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        Ok(self.read(job).await?.0)
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        self.put_state(job, state, expected).await
    }

    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        self.delete_state(job, expected).await
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.list_jobs().await
    }

    async fn records_page(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        self.list_page(prefix, after, limit).await
    }

    async fn get_judged(
        &self,
        job: &str,
        now: Timestamp,
    ) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
        let (record, server) = self.read(job).await?;
        Ok((record, self.judge.judge(server, now)))
    }

    async fn get_many_judged(
        &self,
        jobs: &[&str],
        now: Timestamp,
    ) -> Result<(Vec<Option<Versioned<JobState>>>, Timestamp), StoreError> {
        if jobs.is_empty() {
            return Ok((Vec::new(), now));
        }
        let (records, server) = self.read_many(jobs).await?;
        Ok((records, self.judge.judge(server, now)))
    }

    async fn put_many(&self, writes: &[RecordWrite<'_>]) -> Vec<Result<PutResult, StoreError>> {
        self.put_states(writes).await
    }
}
