//! The tick index (docs/design.md §11): the judged instant, the tick mark
//! and the woken jobs in one statement, moving the mark forward, and
//! [`TickIndex`] over those. Apart because it reads only the wake index
//! and the mark; the wakes themselves are written with the records
//! (records.rs).

use super::records::versioned;
use super::*;

impl PgStore {
    async fn start_tick(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        let (shared, sql) = (self.shared.clone(), self.sql.clone());
        let caller = match self.judge {
            JudgeClock::Server => None,
            JudgeClock::Caller => Some(PgTime(now)),
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.shared
            .driver
            .run(async move {
                let doing = || "reading the tick mark and the woken jobs".to_string();
                let mut conn = shared.checkout().await?;
                let rows = conn
                    .query(
                        Phase::Read,
                        false,
                        &doing,
                        &sql.tick_start,
                        &[(&caller, Type::TIMESTAMPTZ), (&limit, Type::INT8)],
                    )
                    .await?;
                let Some(row) = rows.first() else {
                    return Err(unexpected(&conn, &doing));
                };
                let mut start = TickStart {
                    now: conn.column::<PgTime>(row, 0, &doing)?.0,
                    mark: conn.column::<Option<PgTime>>(row, 1, &doing)?.map(|t| t.0),
                    woken: Vec::with_capacity(rows.len()),
                    records: Vec::new(),
                    carried: Vec::new(),
                    next_wake: conn.column::<Option<PgTime>>(row, 5, &doing)?.map(|t| t.0),
                };
                for row in &rows {
                    let Some(job) = conn.column::<Option<String>>(row, 2, &doing)? else {
                        continue;
                    };
                    if let Some(record) = versioned(&conn, row, 3, &job, &doing)? {
                        start.records.push(record);
                    }
                    start.woken.push(job);
                }
                Ok(start)
            })
            .await
    }

    async fn end_tick(&self, mark: Timestamp) -> Result<(), StoreError> {
        let (shared, sql) = (self.shared.clone(), self.sql.clone());
        self.shared
            .driver
            .run(async move {
                let doing = || "moving the tick mark".to_string();
                let mut conn = shared.checkout().await?;
                // PgTime floors to microseconds: a mark never passes a
                // slot its tick did not plan.
                let mark = PgTime(mark);
                conn.query(
                    Phase::Write,
                    false,
                    &doing,
                    &sql.tick_end,
                    &[(&mark, Type::TIMESTAMPTZ)],
                )
                .await?;
                Ok(())
            })
            .await
    }
}

impl TickIndex for PgStore {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        self.start_tick(now, limit).await
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        self.end_tick(mark).await
    }
}
