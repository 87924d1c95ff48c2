//! The conformance of keyed runs ([`Runs`]): what every store that keeps a
//! dynamic job's keyed runs must do, written once. A store runs it with
//! [`runs_suite!`](crate::runs_suite).

use crate::coord::decide::{Enqueued, RunRefusal};
use crate::coord::exec::join_all;
use crate::coord::{
    Claim, Coordinator, FailOutcome, JobContext, Operator, RunError, RunPage, RunQuery, Runs,
    Schedules, Trigger,
};
use crate::manifest::{JobTemplate, parse_manifest};
use crate::schedules::{RunRequest, RunStatus, ScheduleKey};

use super::{HOUR, MIN, at};

/// Every test of this part of the suite, named once.
#[macro_export]
macro_rules! run_tests {
    ([$($callback:tt)*] $($args:tt)*) => {
        $($callback)*! {
            $($args)*;
            concurrent_enqueues_of_one_key_create_one_run,
            a_keyed_run_answers_its_status_through_its_life,
            a_dead_keyed_run_is_redriven,
            a_key_is_remembered_for_its_retention_then_forgotten,
            two_keys_in_one_minute_keep_their_effects_apart,
            keyed_runs_are_listed_in_key_order_with_status,
        }
    };
}

/// Declares one `#[test]` per test of [`run_tests!`](crate::run_tests),
/// with the per-test arm of [`conformance_suite!`](crate::conformance_suite).
#[macro_export]
macro_rules! runs_suite {
    ($make:expr, $block_on:path, $ns:literal) => {
        $crate::run_tests!([$crate::conformance_suite] @each $make, $block_on, $ns);
    };
}

/// A dynamic job named `ns` whose runs are retried once, after no backoff
/// worth waiting for.
fn template(ns: &str) -> JobTemplate {
    let text = format!(
        "[[job]]\nname = \"{ns}\"\ndynamic = true\ncommand = [\"true\"]\nlease = \"2m\"\n\
         timeout = \"1m\"\nretry = {{ max_attempts = 2, backoff = \"1s\", max_backoff = \"1s\" }}\n\
         key_retention = \"30d\"\n"
    );
    parse_manifest(&text, "conformance.toml")
        .unwrap_or_else(|e| panic!("conformance manifest is invalid:\n{e}"))
        .templates
        .remove(0)
}

fn key(text: &str) -> ScheduleKey {
    ScheduleKey::new(text).expect("key")
}

fn request(json: &str) -> RunRequest {
    RunRequest::from_json(json).expect("request")
}

const DAY: i64 = 24 * HOUR;

/// Eight clients enqueue one key at once, as a retried request and a
/// double click do: one run is created, the seven others answer it; a
/// different payload is refused naming the field, and the run is unchanged.
pub async fn concurrent_enqueues_of_one_key_create_one_run<C: Runs>(c: &C, ns: &str) {
    let t = template(ns);
    let k = key("order-123");
    let body = request(r#"{"payload":{"order":123,"mail":"confirm"}}"#);
    let enqueues = (0..8).map(|_| c.enqueue_run(&t, &k, &body, at(30)));
    let results = join_all(enqueues.collect()).await;
    let created: Vec<_> = results
        .iter()
        .filter_map(|r| match r {
            Ok(Enqueued::Created(v)) => Some(v.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(created.len(), 1, "{results:?}");
    let run = &created[0];
    assert_eq!(run.run, format!("{ns}/order-123@2026-01-05T00:00:00Z"));
    assert_eq!(run.status, RunStatus::Pending);
    for r in &results {
        match r {
            Ok(Enqueued::Existing(v)) => assert_eq!(v.run, run.run),
            Ok(Enqueued::Created(_)) => {}
            Err(e) => panic!("an enqueue of the same request failed: {e}"),
        }
    }
    // The same payload written otherwise is the same request.
    let same = request(r#"{"payload":{ "mail":"confirm", "order":123 }}"#);
    match c.enqueue_run(&t, &k, &same, at(MIN)).await {
        Ok(Enqueued::Existing(v)) => assert_eq!(v.run, run.run),
        other => panic!("the same payload is the same run: {other:?}"),
    }
    let other = request(r#"{"payload":{"order":124},"at":"2026-01-05T01:00:00Z"}"#);
    match c.enqueue_run(&t, &k, &other, at(MIN)).await {
        Err(RunError::Refused(RunRefusal::Differs { fields, existing })) => {
            assert_eq!(fields, ["payload", "at"]);
            assert_eq!(existing.run, run.run);
        }
        other => panic!("another payload under the key is refused: {other:?}"),
    }
    let status = c.run_status(&t, &k, at(MIN)).await.expect("reads");
    assert_eq!(
        status.and_then(|v| v.payload.map(|p| p.get().to_string())),
        Some(r#"{"order":123,"mail":"confirm"}"#.to_string()),
        "the run keeps the first request"
    );
    assert_eq!(
        c.run_status(&t, &key("order-999"), at(MIN)).await,
        Ok(None),
        "an unknown key names no run"
    );
}

/// Pending, running, retrying, succeeded: each with its attempts, last
/// error, instants and fence; the run's slot is `job/key@at`; a schedule
/// write over the key is refused.
pub async fn a_keyed_run_answers_its_status_through_its_life<C: Runs + Schedules + Coordinator>(
    c: &C,
    ns: &str,
) {
    let t = template(ns);
    let k = key("statement-7");
    let later = request(r#"{"payload":"acme","at":"2026-01-05T02:00:00Z"}"#);
    let created = c
        .enqueue_run(&t, &k, &later, at(0))
        .await
        .expect("enqueues");
    assert!(matches!(created, Enqueued::Created(_)), "{created:?}");
    let listed = c
        .list_schedules(&t, &crate::coord::ScheduleQuery::default())
        .await
        .expect("lists");
    assert!(
        listed.schedules.is_empty(),
        "a keyed run is not listed among the job's schedules: {listed:?}"
    );
    let spec = c
        .schedule_for_claim(&t, &k, at(HOUR))
        .await
        .expect("reads")
        .expect("a run is a one-off schedule");
    match c.claim(&spec, at(HOUR), Trigger::Tick, "w1").await {
        Ok(Claim::Idle(_)) => {}
        other => panic!("a run does not start before its at: {other:?}"),
    }
    let view = c.run_status(&t, &k, at(HOUR)).await.unwrap().unwrap();
    assert_eq!(
        (view.status, view.attempts, view.fence, view.next_attempt),
        (RunStatus::Pending, 0, 0, Some(at(2 * HOUR)))
    );
    assert_eq!(view.enqueued, at(0));

    let first = match c.claim(&spec, at(2 * HOUR + 5), Trigger::Tick, "w1").await {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("the run is due at its at: {other:?}"),
    };
    assert_eq!(first.slot, at(2 * HOUR));
    let view = c
        .run_status(&t, &k, at(2 * HOUR + 6))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (view.status, view.attempts, view.fence, view.started),
        (RunStatus::Running, 1, first.fence, Some(at(2 * HOUR + 5)))
    );
    let failed = c
        .fail(
            &spec,
            first.fence,
            "partner API 503",
            false,
            at(2 * HOUR + 10),
        )
        .await
        .expect("records");
    assert!(matches!(failed, FailOutcome::RetryAt(_)), "{failed:?}");
    let view = c
        .run_status(&t, &k, at(2 * HOUR + 10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (view.status, view.attempts, view.last_error.as_deref()),
        (RunStatus::Retrying, 1, Some("partner API 503"))
    );
    let second = match c.claim(&spec, at(2 * HOUR + 20), Trigger::Tick, "w2").await {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("the retry is due: {other:?}"),
    };
    assert_eq!((second.slot, second.attempt), (at(2 * HOUR), 2));
    assert!(second.fence > first.fence);
    c.complete(&spec, second.fence, None, at(2 * HOUR + 30))
        .await
        .expect("completes");
    let view = c
        .run_status(&t, &k, at(2 * HOUR + 31))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (view.status, view.attempts, view.fence),
        (RunStatus::Succeeded, 2, second.fence)
    );
    assert_eq!(view.finished, Some(at(2 * HOUR + 30)));
    assert_eq!(view.remembered_until, Some(at(2 * HOUR + 30 + 30 * DAY)));
    match c.claim(&spec, at(3 * HOUR), Trigger::Tick, "w3").await {
        Ok(Claim::Idle(_)) => {}
        other => panic!("a run that succeeded never runs again: {other:?}"),
    }
    // Enqueued again after it succeeded: the same run, not a second one.
    match c.enqueue_run(&t, &k, &later, at(4 * HOUR)).await {
        Ok(Enqueued::Existing(v)) => assert_eq!(v.status, RunStatus::Succeeded),
        other => panic!("{other:?}"),
    }
    let schedule = crate::schedules::ScheduleSpec::from_json(r#"{"cron":"0 9 * * *"}"#).unwrap();
    assert!(
        c.put_schedule(
            &t,
            &k,
            schedule,
            crate::coord::decide::Precondition::None,
            at(4 * HOUR)
        )
        .await
        .is_err(),
        "a schedule write never replaces a keyed run"
    );
}

/// A run whose error is permanent is dead: its status says so with the
/// error, it is in the job's dead letters, and a redrive by key runs it
/// again under a higher fence.
pub async fn a_dead_keyed_run_is_redriven<C: Runs + Schedules + Coordinator + Operator>(
    c: &C,
    ns: &str,
) {
    let t = template(ns);
    let k = key("invoice-9");
    c.enqueue_run(&t, &k, &request(r#"{"payload":9}"#), at(10))
        .await
        .expect("enqueues");
    let spec = c.schedule_for_claim(&t, &k, at(20)).await.unwrap().unwrap();
    let lease = match c.claim(&spec, at(20), Trigger::Tick, "w1").await {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("due now: {other:?}"),
    };
    let outcome = c
        .fail(&spec, lease.fence, "card declined", true, at(30))
        .await
        .expect("records");
    assert_eq!(outcome, FailOutcome::Dead);
    let view = c.run_status(&t, &k, at(40)).await.unwrap().unwrap();
    assert_eq!(
        (view.status, view.attempts, view.last_error.as_deref()),
        (RunStatus::Dead, 1, Some("card declined"))
    );
    assert_eq!(view.finished, Some(at(30)));
    let record = c.schedule(&t, &k).await.unwrap().expect("held");
    assert_eq!(record.record.dead.len(), 1, "the run is a dead letter");
    c.redrive(&spec, None, at(50)).await.expect("redrives");
    let view = c.run_status(&t, &k, at(50)).await.unwrap().unwrap();
    assert_eq!(view.status, RunStatus::Retrying);
    let again = match c.claim(&spec, at(60), Trigger::Tick, "w2").await {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("the redriven run is due: {other:?}"),
    };
    assert!(again.fence > lease.fence);
    c.complete(&spec, again.fence, None, at(70))
        .await
        .expect("completes");
    let view = c.run_status(&t, &k, at(80)).await.unwrap().unwrap();
    assert_eq!(view.status, RunStatus::Succeeded);
}

/// Within the retention after the run ended the key names it; after, it
/// names none: the tick's read of the record (its wake is then) deletes it,
/// and the key may be enqueued again as a new run, whose fences start
/// afresh with a new record.
pub async fn a_key_is_remembered_for_its_retention_then_forgotten<
    C: Runs + Schedules + Coordinator,
>(
    c: &C,
    ns: &str,
) {
    let t = template(ns);
    let k = key("mail-1");
    let body = request(r#"{"payload":"hello"}"#);
    c.enqueue_run(&t, &k, &body, at(0)).await.expect("enqueues");
    let spec = c.schedule_for_claim(&t, &k, at(1)).await.unwrap().unwrap();
    let lease = match c.claim(&spec, at(1), Trigger::Tick, "w").await {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("{other:?}"),
    };
    c.complete(&spec, lease.fence, None, at(2))
        .await
        .expect("completes");
    let record = c.schedule(&t, &k).await.unwrap().expect("held");
    let forget = at(2 + 30 * DAY);
    assert_eq!(
        record.record.wake_at,
        Some(forget),
        "the record wakes to be forgotten"
    );
    match c.enqueue_run(&t, &k, &body, at(29 * DAY)).await {
        Ok(Enqueued::Existing(v)) => assert_eq!(v.status, RunStatus::Succeeded),
        other => panic!("remembered for 30 days: {other:?}"),
    }
    assert!(c.run_status(&t, &k, at(29 * DAY)).await.unwrap().is_some());
    assert_eq!(
        c.run_status(&t, &k, forget).await,
        Ok(None),
        "forgotten once its retention has passed, swept or not"
    );
    assert_eq!(
        c.schedule_for_claim(&t, &k, forget).await,
        Ok(None),
        "the tick's read forgets it"
    );
    assert!(
        c.schedule(&t, &k).await.unwrap().is_none(),
        "the record is deleted"
    );
    match c.enqueue_run(&t, &k, &body, at(31 * DAY)).await {
        Ok(Enqueued::Created(v)) => {
            assert_eq!(v.status, RunStatus::Pending);
            assert_eq!(v.run, format!("{ns}/mail-1@2026-02-05T00:00:00Z"));
        }
        other => panic!("a forgotten key names a new run: {other:?}"),
    }
}

/// A listing of a job's keyed runs: in key order, each as its status read
/// answers it, without the job's schedules; filtered by key prefix and by
/// status; paged with a cursor that meets every run once; and without the
/// runs whose key's retention has passed.
pub async fn keyed_runs_are_listed_in_key_order_with_status<C: Runs + Schedules + Coordinator>(
    c: &C,
    ns: &str,
) {
    let t = template(ns);
    for k in ["order-03", "order-01", "mail-1", "order-02", "order-04"] {
        c.enqueue_run(&t, &key(k), &request(r#"{"payload":1}"#), at(0))
            .await
            .expect("enqueues");
    }
    // A schedule of the job shares the keys' range, and is no run.
    let schedule = crate::schedules::ScheduleSpec::from_json(r#"{"cron":"0 9 * * *"}"#).unwrap();
    c.put_schedule(
        &t,
        &key("order-00"),
        schedule,
        crate::coord::decide::Precondition::None,
        at(0),
    )
    .await
    .expect("writes the schedule");
    // order-02 goes dead (a permanent error), order-03 succeeds.
    for (k, dies) in [("order-02", true), ("order-03", false)] {
        let spec = c
            .schedule_for_claim(&t, &key(k), at(10))
            .await
            .unwrap()
            .unwrap();
        let lease = match c.claim(&spec, at(10), Trigger::Tick, "w").await {
            Ok(Claim::Claimed(lease)) => lease,
            other => panic!("{k} is due: {other:?}"),
        };
        if dies {
            let outcome = c
                .fail(&spec, lease.fence, "card declined", true, at(20))
                .await
                .expect("records");
            assert_eq!(outcome, FailOutcome::Dead);
        } else {
            c.complete(&spec, lease.fence, None, at(20))
                .await
                .expect("completes");
        }
    }
    let template = &t;
    let list =
        |query: RunQuery, now: i64| async move { c.list_runs(template, &query, at(now)).await };
    let keys = |page: &RunPage| page.runs.iter().map(|r| r.key.clone()).collect::<Vec<_>>();

    let all = list(RunQuery::default(), 30).await.expect("lists");
    assert_eq!(
        keys(&all),
        ["mail-1", "order-01", "order-02", "order-03", "order-04"],
        "every run in key order, and not the schedule: {all:?}"
    );
    assert_eq!(all.cursor, None);
    for view in &all.runs {
        let read = c.run_status(&t, &key(&view.key), at(30)).await.unwrap();
        assert_eq!(read.as_ref(), Some(view), "a listed run is its status read");
    }
    let status: Vec<RunStatus> = all.runs.iter().map(|r| r.status).collect();
    assert_eq!(
        status,
        [
            RunStatus::Pending,
            RunStatus::Pending,
            RunStatus::Dead,
            RunStatus::Succeeded,
            RunStatus::Pending
        ]
    );
    assert_eq!(all.runs[2].last_error.as_deref(), Some("card declined"));

    let prefixed = RunQuery {
        prefix: "order-".to_string(),
        ..RunQuery::default()
    };
    let orders = list(prefixed.clone(), 30).await.expect("lists");
    assert_eq!(
        keys(&orders),
        ["order-01", "order-02", "order-03", "order-04"]
    );
    let dead = RunQuery {
        status: Some(RunStatus::Dead),
        ..prefixed.clone()
    };
    let page = list(dead, 30).await.expect("lists");
    assert_eq!(
        (keys(&page), page.cursor),
        (vec!["order-02".to_string()], None)
    );

    // Two a page: the pages, end to end, are the listing.
    let mut paged = Vec::new();
    let mut after = None;
    for _ in 0..10 {
        let query = RunQuery {
            after: after.clone(),
            limit: 2,
            ..RunQuery::default()
        };
        let page = list(query, 30).await.expect("lists");
        assert!(page.runs.len() <= 2, "{page:?}");
        paged.extend(keys(&page));
        after = page.cursor;
        if after.is_none() {
            break;
        }
    }
    assert_eq!((paged, after), (keys(&all), None));

    // Past the retention of the runs that ended, only the waiting ones.
    let later = list(prefixed, 31 * DAY).await.expect("lists");
    assert_eq!(keys(&later), ["order-01", "order-04"]);
}

/// Two keys' runs in the same minute are two runs to the effect ledger:
/// each effect is keyed by its run id (`job/key@instant`), so one key's
/// effect done does not make the other's look done.
pub async fn two_keys_in_one_minute_keep_their_effects_apart<C: Runs + Schedules + Coordinator>(
    c: &C,
    ns: &str,
) {
    let t = template(ns);
    let sent = std::cell::Cell::new(0);
    let clock = || at(20);
    for name in ["refund-1", "refund-2"] {
        let k = key(name);
        c.enqueue_run(&t, &k, &request(r#"{"payload":1}"#), at(10))
            .await
            .expect("enqueues");
        let spec = c.schedule_for_claim(&t, &k, at(20)).await.unwrap().unwrap();
        let lease = match c.claim(&spec, at(20), Trigger::Tick, "w").await {
            Ok(Claim::Claimed(lease)) => lease,
            other => panic!("due now: {other:?}"),
        };
        let ctx = JobContext::new(c, &spec, lease, &clock);
        assert_eq!(
            ctx.effect_key("send"),
            format!("{ns}/{name}@2026-01-05T00:00:00Z/send"),
            "the ledger key is the run id's"
        );
        ctx.effect("send", || async {
            sent.set(sent.get() + 1);
            Ok::<_, String>("sent".to_string())
        })
        .await
        .expect("effect");
    }
    assert_eq!(sent.get(), 2, "each key's run does its own effect");
}
