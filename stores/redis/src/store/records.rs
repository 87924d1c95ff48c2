//! The job records: reading one with the server's clock, the conditional
//! write (with the record's entry in the wake index), listing them, and
//! [`StateStore`] over those. Apart from the effect ledger and the tick
//! index, which share with it only the connection, the keys and the
//! scripts.

use super::*;

impl RedisStore {
    /// The record of `job` and the server's clock, in one round trip; the
    /// clock offset is measured on the way.
    async fn read(
        &self,
        job: &str,
    ) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
        let (shared, key, job) = (self.shared.clone(), self.keys.state(job), job.to_string());
        self.shared
            .driver
            .run(async move {
                let doing = || format!("reading the state of job {job:?}");
                let sent = Timestamp::now();
                let (time, fields): (Vec<String>, Vec<Option<String>>) = shared
                    .request(Phase::Read, false, &doing, |mut conn| async move {
                        redis::pipe()
                            .cmd("TIME")
                            .cmd("HMGET")
                            .arg(&key)
                            .arg("v")
                            .arg("s")
                            .query_async(&mut conn)
                            .await
                    })
                    .await?;
                let received = Timestamp::now();
                let server = match time.as_slice() {
                    [s, us] => from_time_reply(s, us),
                    _ => None,
                }
                .ok_or_else(|| {
                    StoreError::other(format!(
                        "Redis store {}: {}: the server's TIME answered {time:?}, not seconds \
                         and microseconds: this is not a Redis server cronslot knows",
                        shared.shown,
                        doing()
                    ))
                })?;
                shared.offset.measured(sent, server, received);
                let record = match fields.as_slice() {
                    [Some(v), Some(s)] => Some(versioned(&shared.shown, &job, v, s)?),
                    [None, None] => None,
                    _ => {
                        return Err(StoreError::corrupt(format!(
                            "Redis store {}: job {job:?}: the record's key holds a version \
                             without a state or a state without a version",
                            shared.shown
                        )));
                    }
                };
                Ok((record, server))
            })
            .await
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
                "Redis store {}: refusing to store the state of job {:?} as job {job:?}",
                self.shared.shown, state.job
            )));
        }
        let next = match expected {
            None => 1,
            Some(e) => e.checked_add(1).ok_or_else(|| {
                StoreError::other(format!(
                    "Redis store {}: the version of job {job:?} cannot grow past {e}",
                    self.shared.shown
                ))
            })?,
        };
        let (shared, scripts) = (self.shared.clone(), self.scripts.clone());
        let (key, wakes, names) = (self.keys.state(job), self.keys.wakes(), self.keys.names());
        let channel = self.keys.wake_channel();
        let job = job.to_string();
        let text = encode_state(state);
        let wake = state
            .wake_at
            .map(|w| micros(w).to_string())
            .unwrap_or_default();
        let expected = expected.map(|e| e.to_string()).unwrap_or_default();
        let replicas = Replicas::of(self.location());
        self.shared
            .driver
            .run(async move {
                let doing = || format!("writing the state of job {job:?}");
                let (answer, acked): (Vec<String>, Option<u32>) = shared
                    .request(Phase::Write, false, &doing, |mut conn| {
                        let scripts = scripts.clone();
                        let (key, wakes, names) = (key.clone(), wakes.clone(), names.clone());
                        let (job, channel) = (job.clone(), channel.clone());
                        async move {
                            let answer: Vec<String> = scripts
                                .put
                                .key(&key)
                                .key(&wakes)
                                .key(&names)
                                .arg(&job)
                                .arg(&expected)
                                .arg(next.to_string())
                                .arg(&text)
                                .arg(&wake)
                                .arg(&channel)
                                .invoke_async(&mut conn)
                                .await?;
                            let written = answer.first().is_some_and(|w| w == "written");
                            let acked = replicas.wait_if(written, &mut conn).await?;
                            Ok((answer, acked))
                        }
                    })
                    .await?;
                replicas.check(&shared.shown, &doing(), acked)?;
                match answer.as_slice() {
                    [w, v] if w == "written" => {
                        let version = v.parse::<Version>().map_err(|_| {
                            StoreError::corrupt(format!(
                                "Redis store {}: job {job:?}: version {v:?} is not a number",
                                shared.shown
                            ))
                        })?;
                        Ok(PutResult::Written(version))
                    }
                    [c] if c == "conflict" => Ok(PutResult::Conflict(None)),
                    [c, v, s] if c == "conflict" => Ok(PutResult::Conflict(Some(Box::new(
                        versioned(&shared.shown, &job, v, s)?,
                    )))),
                    _ => Err(StoreError::other(format!(
                        "Redis store {}: {}: the script answered {answer:?}: this is a bug",
                        shared.shown,
                        doing()
                    ))),
                }
            })
            .await
    }

    async fn delete_state(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        let (shared, scripts) = (self.shared.clone(), self.scripts.clone());
        let (key, wakes, names) = (self.keys.state(job), self.keys.wakes(), self.keys.names());
        let job = job.to_string();
        let replicas = Replicas::of(self.location());
        self.shared
            .driver
            .run(async move {
                let doing = || format!("deleting the record of {job:?}");
                let (deleted, acked): (i64, Option<u32>) = shared
                    .request(Phase::Write, false, &doing, |mut conn| {
                        let scripts = scripts.clone();
                        let (key, wakes, names) = (key.clone(), wakes.clone(), names.clone());
                        let job = job.clone();
                        async move {
                            let deleted: i64 = scripts
                                .delete
                                .key(&key)
                                .key(&wakes)
                                .key(&names)
                                .arg(&job)
                                .arg(expected.to_string())
                                .invoke_async(&mut conn)
                                .await?;
                            let acked = replicas.wait_if(deleted == 1, &mut conn).await?;
                            Ok((deleted, acked))
                        }
                    })
                    .await?;
                replicas.check(&shared.shown, &doing(), acked)?;
                Ok(deleted == 1)
            })
            .await
    }

    async fn list_jobs(&self) -> Result<Vec<String>, StoreError> {
        let (shared, wakes) = (self.shared.clone(), self.keys.wakes());
        self.shared
            .driver
            .run(async move {
                let doing = || "listing jobs".to_string();
                let mut jobs: Vec<String> = shared
                    .request(Phase::Read, false, &doing, |mut conn| async move {
                        redis::cmd("ZRANGE")
                            .arg(&wakes)
                            .arg(0)
                            .arg(-1)
                            .query_async(&mut conn)
                            .await
                    })
                    .await?;
                jobs.sort();
                Ok(jobs)
            })
            .await
    }
}

impl RedisStore {
    /// One script, so one instant: a range of the name index and the
    /// records on it ([`Scripts::page`](super::scripts)).
    async fn list_page(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        let (shared, scripts) = (self.shared.clone(), self.scripts.clone());
        let (names, store_prefix) = (self.keys.names(), self.keys.prefix.clone());
        let start = match after {
            Some(a) if a >= prefix => format!("({a}"),
            _ => format!("[{prefix}"),
        };
        let end = prefix_end(prefix).map_or_else(|| "+".to_string(), |e| format!("({e}"));
        let prefix = prefix.to_string();
        self.shared
            .driver
            .run(async move {
                let doing = || format!("listing the records under {prefix:?}");
                let answer: Vec<String> = shared
                    .request(Phase::Read, false, &doing, |mut conn| {
                        let scripts = scripts.clone();
                        let (names, store_prefix) = (names.clone(), store_prefix.clone());
                        let (start, end) = (start.clone(), end.clone());
                        async move {
                            scripts
                                .page
                                .key(&names)
                                .arg(&store_prefix)
                                .arg(&start)
                                .arg(&end)
                                .arg(limit)
                                .invoke_async(&mut conn)
                                .await
                        }
                    })
                    .await?;
                let mut page = Vec::with_capacity(answer.len() / 3);
                for entry in answer.chunks(3) {
                    match entry {
                        // A name left behind by a record deleted outside cronslot.
                        [_, v, s] if v.is_empty() && s.is_empty() => {}
                        [name, v, s] if name.starts_with(prefix.as_str()) => {
                            page.push((name.clone(), versioned(&shared.shown, name, v, s)?));
                        }
                        _ => {
                            return Err(StoreError::other(format!(
                                "Redis store {}: {}: the script answered {entry:?}: this is a bug",
                                shared.shown,
                                doing()
                            )));
                        }
                    }
                }
                Ok(page)
            })
            .await
    }
}

/// A record from its stored version and text.
fn versioned(
    store: &str,
    job: &str,
    version: &str,
    text: &str,
) -> Result<Versioned<JobState>, StoreError> {
    let version = version.parse::<Version>().map_err(|_| {
        StoreError::corrupt(format!(
            "Redis store {store}: job {job:?}: version {version:?} is not a number"
        ))
    })?;
    // The decode error already names the job.
    let value = decode_state(job, text)
        .map_err(|e| StoreError::corrupt(format!("Redis store {store}: {e}")))?;
    Ok(Versioned { value, version })
}

impl StateStore for RedisStore {
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
}
