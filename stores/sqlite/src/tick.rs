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
        // One statement: the mark's row (0), the next wake after now (2),
        // then the woken jobs (1).
        let mut stmt = conn
            .prepare_cached(
                "SELECT 0, NULL, mark FROM tick_mark WHERE singleton = 1 \
                 UNION ALL SELECT 2, NULL, (SELECT min(wake_at) FROM job_state WHERE wake_at > ?1) \
                 UNION ALL SELECT * FROM (SELECT 1, job, NULL FROM job_state \
                 WHERE wake_at <= ?1 ORDER BY wake_at, job LIMIT ?2)",
            )
            .map_err(|e| where_.error(doing, &e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map((nanos(now), limit), |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, Option<String>>(1)?,
                    row.get::<_, Option<i64>>(2)?,
                ))
            })
            .map_err(|e| where_.error(doing, &e))?;
        let mut start = TickStart {
            mark: None,
            now,
            woken: Vec::new(),
            records: Vec::new(),
            carried: Vec::new(),
            next_wake: None,
        };
        for row in rows {
            match row.map_err(|e| where_.error(doing, &e))? {
                (1, Some(job), _) => start.woken.push(job),
                (0, _, Some(mark)) => start.mark = Some(from_nanos(mark)),
                (0, _, None) => return Err(where_.corrupt("tick_mark", "the mark is NULL")),
                (2, _, next) => start.next_wake = next.map(from_nanos),
                _ => {
                    return Err(where_.corrupt("job_state", "the tick's read answered a stray row"));
                }
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
