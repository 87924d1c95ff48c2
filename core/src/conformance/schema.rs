//! Old records: one written by schema version 1, and the test that it
//! loads and the job runs on from it (given a way to write a raw record,
//! so it too is not on the list).

use super::*;

/// A record written by schema version 1 (the first layout), for job `job`.
/// Every later cronslot must keep reading it: this text never changes.
pub fn schema_1_record(job: &str) -> String {
    format!(
        r#"{{
  "schema": 1,
  "job": "{job}",
  "spec_hash": "0000000000000000",
  "created_at": "2026-01-05T00:00:00Z",
  "cursor": "2026-01-05T01:00:00Z",
  "fence": 4,
  "leases": [],
  "pending": [],
  "dead": [{{"slot": "2026-01-05T00:30:00Z", "attempts": 3, "last_error": "boom", "fence": 3, "died_at": "2026-01-05T00:40:00Z"}}],
  "history": [{{"slot": "2026-01-05T01:00:00Z", "attempt": 1, "fence": 4, "owner": "w", "started_at": "2026-01-05T01:00:01Z", "finished_at": "2026-01-05T01:00:02Z", "outcome": "succeeded"}}],
  "counters": {{"runs": 4, "succeeded": 1, "failed": 3, "dead": 1, "missed": {{"downtime": 2}}, "skipped": {{}}}},
  "paused": false
}}"#
    )
}

/// A record stored by schema version 1 loads, and the job runs on from it:
/// its fence continues, its dead letter stays, the schedule change (the
/// fixture's spec hash is not the job's) is noticed. `put_raw(job, text)`
/// writes a raw record into the coordinator's store.
pub async fn schema_1_record_loads<C, F, Fut>(c: &C, ns: &str, put_raw: F)
where
    C: Coordinator,
    F: Fn(String, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let spec = job(ns, "legacy", "schedule = \"0 * * * *\"");
    let name = spec.name.as_str().to_string();
    put_raw(name.clone(), schema_1_record(&name)).await;
    let state = c
        .status(&spec, at(HOUR + 1))
        .await
        .expect("old record loads");
    assert_eq!(state.dead.len(), 1);
    assert_eq!(state.counters.missed_total(), 2);
    let a = claimed(c, &spec, at(2 * HOUR + 1), Trigger::Tick, "a").await;
    assert_eq!(a.slot, at(2 * HOUR));
    assert_eq!(a.fence, 5, "fences continue from the stored counter");
    c.complete(&spec, a.fence, None, at(2 * HOUR + 2))
        .await
        .expect("complete");
    let state = c.status(&spec, at(2 * HOUR + 3)).await.expect("status");
    assert_eq!(state.schema, crate::coord::SCHEMA_VERSION);
    assert!(
        state.last_schedule_change.is_some(),
        "the spec hash changed"
    );
    assert_eq!(state.dead.len(), 1);
}
