//! The tick index (docs/design.md §11): the tick mark and the woken jobs
//! in one statement, moving the mark forward, and [`TickIndex`] over
//! those. Apart because it reads only the wake index and the mark; the
//! wakes themselves are written with the records (records.rs).

use super::*;

impl SqliteStore {
    fn tick_start_now(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        let where_ = self.where_();
        let doing = "reading the tick mark and the woken jobs";
        let conn = self.lock();
        self.count(1);
        // One statement: the mark's row (job NULL), then the woken jobs.
        let mut stmt = conn
            .prepare_cached(
                "SELECT NULL, mark FROM tick_mark WHERE singleton = 1 \
                 UNION ALL SELECT * FROM (SELECT job, NULL FROM job_state \
                 WHERE wake_at <= ?1 ORDER BY wake_at, job LIMIT ?2)",
            )
            .map_err(|e| where_.error(doing, &e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map((nanos(now), limit), |row| {
                Ok((
                    row.get::<_, Option<String>>(0)?,
                    row.get::<_, Option<i64>>(1)?,
                ))
            })
            .map_err(|e| where_.error(doing, &e))?;
        let mut start = TickStart {
            mark: None,
            now,
            woken: Vec::new(),
            records: Vec::new(),
            carried: Vec::new(),
        };
        for row in rows {
            match row.map_err(|e| where_.error(doing, &e))? {
                (Some(job), _) => start.woken.push(job),
                (None, Some(mark)) => start.mark = Some(from_nanos(mark)),
                (None, None) => return Err(where_.corrupt("tick_mark", "the mark is NULL")),
            }
        }
        Ok(start)
    }

    fn tick_end_now(&self, mark: Timestamp) -> Result<(), StoreError> {
        let where_ = self.where_();
        let doing = "moving the tick mark";
        let conn = self.lock();
        self.count(1);
        let sql = format!(
            "INSERT INTO tick_mark (singleton, mark, updated_at) VALUES (1, ?1, {SQL_NOW}) \
             ON CONFLICT (singleton) DO UPDATE SET mark = excluded.mark, \
             updated_at = excluded.updated_at WHERE excluded.mark > tick_mark.mark"
        );
        conn.execute(&sql, [nanos(mark)])
            .map_err(|e| where_.error(doing, &e))?;
        Ok(())
    }
}

impl TickIndex for SqliteStore {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        self.tick_start_now(now, limit)
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        self.tick_end_now(mark)
    }
}
