//! Claims: the first claim of a slot wins, concurrent claimers run each
//! slot once, and a dedicated trigger must name a slot. The heart of
//! exactly-once, apart from what a lease or an overlap policy adds.

use super::*;

/// First claim wins; a duplicate delivery of the same slot is refused while
/// it runs and after it resolved.
pub async fn first_claim_wins<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "first",
        "schedule = \"* * * * *\"\noverlap = \"allow\"\nmax_concurrency = 10",
    );
    create(c, &spec, t0()).await;
    let slot = at(MIN);
    let a = claimed(c, &spec, at(MIN + 1), Trigger::Slot(slot), "a").await;
    assert_eq!(a.slot, slot);
    assert_eq!(a.attempt, 1);
    let dup = idle(c, &spec, at(MIN + 2), Trigger::Slot(slot), "b").await;
    assert_eq!(
        dup,
        Idle::InProgress {
            slot,
            fence: a.fence
        }
    );
    c.complete(&spec, a.fence, Some("ok"), at(MIN + 3))
        .await
        .expect("complete");
    let dup = idle(c, &spec, at(MIN + 4), Trigger::Slot(slot), "b").await;
    assert_eq!(dup, Idle::AlreadyResolved { slot });
    let tick = idle(c, &spec, at(MIN + 5), Trigger::Tick, "b").await;
    assert!(matches!(tick, Idle::NothingDue { .. }), "{tick:?}");
    let state = c.status(&spec, at(MIN + 6)).await.expect("status");
    assert_eq!(state.counters.runs, 1);
    assert_eq!(state.counters.succeeded, 1);
}

/// 32 concurrent claimers over 200 due slots: each slot runs exactly once.
pub async fn concurrent_claimers_run_each_slot_once<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(
        ns,
        "crowd",
        "schedule = \"* * * * *\"\ncatch_up = \"all\"\nmax_catch_up = 200\n\
         starting_deadline = \"1d\"\noverlap = \"allow\"\nmax_concurrency = 100",
    );
    create(c, &spec, t0()).await;
    let now = at(200 * MIN + 1);
    let workers: Vec<_> = (0..32)
        .map(|i| {
            let spec = &spec;
            async move {
                let owner = format!("worker-{i}");
                let mut mine = Vec::new();
                loop {
                    match c.claim(spec, now, Trigger::Tick, &owner).await {
                        Ok(Claim::Claimed(lease)) => {
                            mine.push(lease.slot);
                            // Contention is transient: a runner retries its
                            // report until the lease runs out, and so does
                            // this worker (32 writers on one record can
                            // outrun one of them 64 times on a slow store).
                            let mut tries = 0;
                            loop {
                                match c.complete(spec, lease.fence, None, now).await {
                                    Ok(()) => break,
                                    Err(CoordError::Contention { .. }) if tries < 1_000 => {
                                        tries += 1;
                                    }
                                    Err(e) => panic!("complete own lease: {e}"),
                                }
                            }
                        }
                        Ok(Claim::Idle(Idle::NothingDue { .. })) => break,
                        Ok(Claim::Idle(Idle::Busy { .. })) => continue,
                        Ok(Claim::Idle(other)) => panic!("unexpected idle {other:?}"),
                        Err(CoordError::Contention { .. }) => continue,
                        Err(e) => panic!("claim failed: {e}"),
                    }
                }
                mine
            }
        })
        .collect();
    let results = join_all(workers).await;
    let mut runs: BTreeMap<Timestamp, usize> = BTreeMap::new();
    for slot in results.iter().flatten() {
        *runs.entry(*slot).or_default() += 1;
    }
    assert_eq!(runs.len(), 200, "every slot runs");
    assert!(runs.values().all(|n| *n == 1), "no slot runs twice");
    assert_eq!(runs.keys().next(), Some(&at(MIN)));
    assert_eq!(runs.keys().last(), Some(&at(200 * MIN)));
    let state = c.status(&spec, now).await.expect("status");
    assert_eq!(state.counters.runs, 200);
    assert_eq!(state.fence, 200, "one fence per claim");
}

/// A dedicated trigger for an instant that is not a slot is refused, not
/// silently accepted.
pub async fn dedicated_trigger_for_non_slot_is_refused<C: Coordinator>(c: &C, ns: &str) {
    let spec = job(ns, "notaslot", "schedule = \"0 * * * *\"");
    create(c, &spec, t0()).await;
    let result = c
        .claim(&spec, at(HOUR + 1), Trigger::Slot(at(HOUR + 90)), "a")
        .await;
    assert_eq!(
        result,
        Err(CoordError::Trigger(TriggerError::NotASlot {
            slot: at(HOUR + 90)
        }))
    );
    let early = idle(c, &spec, at(HOUR + 1), Trigger::Slot(at(2 * HOUR)), "a").await;
    assert_eq!(early, Idle::NotYetDue { slot: at(2 * HOUR) });
}
