//! The tick index (docs/design.md §11): the judged instant, the tick mark
//! and the woken jobs in one script, moving the mark forward, and
//! [`TickIndex`] over those. Apart because it reads only the wake index
//! and the mark; the wakes themselves are written with the records
//! (records.rs).

use super::*;

impl RedisStore {
    async fn start_tick(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        let (shared, scripts) = (self.shared.clone(), self.scripts.clone());
        let (tick, wakes) = (self.keys.tick(), self.keys.wakes());
        let caller = match self.judge {
            JudgeClock::Server => String::new(),
            JudgeClock::Caller => micros(now).to_string(),
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.shared
            .driver
            .run(async move {
                let doing = || "reading the tick mark and the woken jobs".to_string();
                let (now, mark, woken, next): (String, String, Vec<String>, String) = shared
                    .request(Phase::Read, false, &doing, |mut conn| async move {
                        scripts
                            .tick_start
                            .key(&tick)
                            .key(&wakes)
                            .arg(&caller)
                            .arg(limit)
                            .invoke_async(&mut conn)
                            .await
                    })
                    .await?;
                let instant = |what: &str, text: &str| {
                    text.parse::<i64>()
                        .ok()
                        .and_then(from_micros)
                        .ok_or_else(|| {
                            StoreError::corrupt(format!(
                                "Redis store {}: {}: {what} {text:?} is not an instant in \
                                 microseconds",
                                shared.shown,
                                doing()
                            ))
                        })
                };
                let now = instant("the instant", &now)?;
                let mark = match mark.as_str() {
                    "" => None,
                    m => Some(instant("the tick mark", m)?),
                };
                let next_wake = match next.as_str() {
                    "" => None,
                    // A score as Redis writes a double: whole microseconds.
                    n => Some(instant("the next wake", n.split('.').next().unwrap_or(n))?),
                };
                Ok(TickStart {
                    now,
                    mark,
                    woken,
                    records: Vec::new(),
                    carried: Vec::new(),
                    next_wake,
                })
            })
            .await
    }

    async fn end_tick(&self, mark: Timestamp) -> Result<(), StoreError> {
        let (shared, scripts, tick) = (self.shared.clone(), self.scripts.clone(), self.keys.tick());
        // Floored to microseconds: a mark never passes a slot its tick did
        // not plan.
        let mark = micros(mark);
        self.shared
            .driver
            .run(async move {
                let doing = || "moving the tick mark".to_string();
                let _: i64 = shared
                    .request(Phase::Write, false, &doing, |mut conn| async move {
                        scripts
                            .tick_end
                            .key(&tick)
                            .arg(mark)
                            .invoke_async(&mut conn)
                            .await
                    })
                    .await?;
                Ok(())
            })
            .await
    }
}

impl TickIndex for RedisStore {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        self.start_tick(now, limit).await
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        self.end_tick(mark).await
    }
}
