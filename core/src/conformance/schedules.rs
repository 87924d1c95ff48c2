//! The conformance of schedules as data ([`Schedules`]): what every store
//! that keeps a dynamic job's schedules must do, written once. A store runs
//! it with [`schedules_suite!`](crate::schedules_suite).

use crate::coord::decide::{Precondition, ScheduleRefusal, ScheduleWrite};
use crate::coord::exec::{join, join_all};
use crate::coord::{
    Claim, Coordinator, ScheduleError, SchedulePut, ScheduleQuery, Schedules, Trigger,
};
use crate::manifest::{JobTemplate, parse_manifest};
use crate::schedules::{ScheduleKey, ScheduleSpec};

use super::{HOUR, MIN, at};

/// Every test of this part of the suite, named once (as
/// [`conformance_tests!`](crate::conformance_tests) names the rest).
#[macro_export]
macro_rules! schedule_tests {
    ([$($callback:tt)*] $($args:tt)*) => {
        $($callback)*! {
            $($args)*;
            concurrent_upserts_of_one_spec_end_at_version_1,
            versions_preconditions_and_tombstones,
            a_schedule_runs_and_a_recreate_fences_out_old_runs,
            listing_pages_each_schedule_once,
            a_bulk_write_answers_each_schedule,
            concurrent_bulk_writes_of_one_set_end_at_version_1,
        }
    };
}

/// Declares one `#[test]` per test of [`schedule_tests!`](crate::schedule_tests),
/// with the per-test arm of [`conformance_suite!`](crate::conformance_suite).
#[macro_export]
macro_rules! schedules_suite {
    ($make:expr, $block_on:path, $ns:literal) => {
        $crate::schedule_tests!([$crate::conformance_suite] @each $make, $block_on, $ns);
    };
}

/// A dynamic job named `ns` (the namespace is unique per test and short
/// enough to be a job name).
fn template(ns: &str) -> JobTemplate {
    let text = format!(
        "[[job]]\nname = \"{ns}\"\ndynamic = true\ncommand = [\"true\"]\nlease = \"2m\"\ntimeout = \"1m\"\n"
    );
    let mut template = parse_manifest(&text, "conformance.toml")
        .unwrap_or_else(|e| panic!("conformance manifest is invalid:\n{e}"))
        .templates
        .remove(0);
    // The zone the suite's schedules name travels with the job, as a
    // Worker's precompiled manifest carries its zones: a store with no tz
    // database of its own (Durable Objects) knows it from the job.
    template
        .zones
        .push(crate::schedule::Zone::get("Europe/Berlin").expect("a zone of the tz database"));
    template
}

fn key(text: &str) -> ScheduleKey {
    ScheduleKey::new(text).expect("key")
}

fn spec(json: &str) -> ScheduleSpec {
    ScheduleSpec::from_json(json).expect("spec")
}

/// Eight clients upsert the same spec at once, as the instances of a
/// service do at start-up: one schedule, at version 1; one write created it
/// and the others found it unchanged.
pub async fn concurrent_upserts_of_one_spec_end_at_version_1<C: Schedules>(c: &C, ns: &str) {
    let t = template(ns);
    let k = key("tenant-1");
    let body = r#"{"cron":"0 9 * * *","timezone":"Europe/Berlin","payload":{"plan":"pro"}}"#;
    let writes = (0..8).map(|_| c.put_schedule(&t, &k, spec(body), Precondition::None, at(0)));
    let results = join_all(writes.collect()).await;
    let created = results
        .iter()
        .filter(|r| matches!(r, Ok(ScheduleWrite::Created { version: 1 })))
        .count();
    let unchanged = results
        .iter()
        .filter(|r| matches!(r, Ok(ScheduleWrite::Unchanged { version: 1 })))
        .count();
    assert_eq!((created, unchanged), (1, 7), "{results:?}");
    let read = c.schedule(&t, &k).await.expect("reads").expect("held");
    assert_eq!(read.data.version, 1);
    assert_eq!(read.data.spec(), Ok(Some(spec(body))));
}

/// Full replace, versions, `If-Match`, `If-None-Match`, a delete's
/// tombstone, and a re-create that continues the version.
pub async fn versions_preconditions_and_tombstones<C: Schedules>(c: &C, ns: &str) {
    let t = template(ns);
    let k = key("tenant-2");
    let put = |json: &'static str, p: Precondition| c.put_schedule(&t, &k, spec(json), p, at(MIN));
    let v1 = r#"{"cron":"0 9 * * *","labels":{"plan":"pro"}}"#;
    assert_eq!(
        put(v1, Precondition::Version(1)).await,
        Err(ScheduleError::Refused(ScheduleRefusal::VersionMismatch {
            current: None
        })),
        "If-Match on no schedule"
    );
    assert_eq!(
        put(v1, Precondition::Absent).await,
        Ok(ScheduleWrite::Created { version: 1 })
    );
    assert_eq!(
        put(v1, Precondition::Absent).await,
        Err(ScheduleError::Refused(ScheduleRefusal::Exists {
            version: 1
        }))
    );
    // A field not sent is not kept: the labels go.
    let v2 = r#"{"cron":"0 9 * * *"}"#;
    assert_eq!(
        put(v2, Precondition::Version(1)).await,
        Ok(ScheduleWrite::Changed { version: 2 })
    );
    let read = c.schedule(&t, &k).await.expect("reads").expect("held");
    assert!(read.data.spec().unwrap().expect("live").labels.is_empty());
    assert_eq!(
        put(v1, Precondition::Version(1)).await,
        Err(ScheduleError::Refused(ScheduleRefusal::VersionMismatch {
            current: Some(2)
        })),
        "a stale If-Match writes nothing"
    );
    assert_eq!(
        c.delete_schedule(&t, &k, Precondition::Version(1), at(2 * MIN))
            .await,
        Err(ScheduleError::Refused(ScheduleRefusal::VersionMismatch {
            current: Some(2)
        }))
    );
    assert_eq!(
        c.delete_schedule(&t, &k, Precondition::Version(2), at(2 * MIN))
            .await,
        Ok(ScheduleWrite::Deleted { version: 3 })
    );
    let tombstone = c.schedule(&t, &k).await.expect("reads").expect("kept");
    assert_eq!(
        (tombstone.data.version, tombstone.data.spec_json),
        (3, None)
    );
    assert_eq!(
        c.delete_schedule(&t, &k, Precondition::None, at(3 * MIN))
            .await,
        Err(ScheduleError::Refused(ScheduleRefusal::NotFound))
    );
    assert_eq!(
        put(v2, Precondition::Version(2)).await,
        Err(ScheduleError::Refused(ScheduleRefusal::VersionMismatch {
            current: None
        })),
        "a version from before the delete never matches"
    );
    assert_eq!(
        put(v2, Precondition::Absent).await,
        Ok(ScheduleWrite::Created { version: 4 })
    );
}

/// A schedule's slot is claimed and run like a job's, under `job/key`; a
/// delete and a re-create fence out a run claimed before them.
pub async fn a_schedule_runs_and_a_recreate_fences_out_old_runs<C: Schedules + Coordinator>(
    c: &C,
    ns: &str,
) {
    let t = template(ns);
    let k = key("tenant-3");
    let hourly = spec(r#"{"cron":"0 * * * *","payload":[1,2]}"#);
    c.put_schedule(&t, &k, hourly.clone(), Precondition::None, at(0))
        .await
        .expect("creates");
    let s = t.for_schedule(&k, &hourly).expect("runs");
    let first = match c.claim(&s, at(HOUR + 1), Trigger::Tick, "a").await {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("the schedule's slot is due: {other:?}"),
    };
    assert_eq!(first.slot, at(HOUR));
    let read = c.schedule(&t, &k).await.expect("reads").expect("held");
    assert_eq!(read.record.job, format!("{ns}/tenant-3"));
    assert_eq!(read.record.leases.len(), 1);
    c.delete_schedule(&t, &k, Precondition::None, at(HOUR + 2))
        .await
        .expect("deletes");
    c.put_schedule(&t, &k, hourly.clone(), Precondition::None, at(HOUR + 3))
        .await
        .expect("re-creates");
    assert!(
        c.complete(&s, first.fence, None, at(HOUR + 4))
            .await
            .is_err(),
        "a run claimed before the delete cannot complete after the re-create"
    );
    let next = match c.claim(&s, at(2 * HOUR + 1), Trigger::Tick, "b").await {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("the re-created schedule runs: {other:?}"),
    };
    assert!(next.fence > first.fence, "fences go on across the delete");
    c.complete(&s, next.fence, None, at(2 * HOUR + 2))
        .await
        .expect("completes");
}

/// A listing pages in key order with its cursor: every schedule that
/// exists throughout appears exactly once, however many are created and
/// deleted between pages; a tombstone, another job's schedules (even one
/// whose name starts with this job's) and schedules the prefix or the
/// label leave out never appear.
pub async fn listing_pages_each_schedule_once<C: Schedules>(c: &C, ns: &str) {
    let t = template(ns);
    let other = template(&format!("{ns}x"));
    let put = |t: &JobTemplate, k: String, plan: &str| {
        let body = format!(r#"{{"cron":"0 9 * * *","labels":{{"plan":"{plan}"}}}}"#);
        let (t, body) = (t.clone(), body);
        async move {
            c.put_schedule(&t, &key(&k), spec(&body), Precondition::None, at(0))
                .await
                .expect("written");
        }
    };
    let plan = |i: usize| if i % 3 == 0 { "pro" } else { "free" };
    for i in 0..25 {
        put(&t, format!("k-{i:02}"), plan(i)).await;
    }
    put(&other, "k-00".to_string(), "pro").await;
    c.delete_schedule(&t, &key("k-05"), Precondition::None, at(0))
        .await
        .expect("deleted");

    let mut query = ScheduleQuery {
        limit: 7,
        ..ScheduleQuery::default()
    };
    let mut seen: Vec<String> = Vec::new();
    let mut pages = 0;
    loop {
        let page = c.list_schedules(&t, &query).await.expect("a page");
        assert!(page.schedules.len() <= 7, "{page:?}");
        seen.extend(page.schedules.iter().map(|(k, _)| k.as_str().to_string()));
        for (k, read) in &page.schedules {
            assert_eq!(read.record.job, format!("{ns}/{}", k.as_str()));
            assert!(read.data.spec_json.is_some(), "no tombstone is listed");
        }
        pages += 1;
        assert!(pages < 20, "the cursor does not advance: {seen:?}");
        // Others write between pages: new keys before and after the
        // cursor, a delete of one not read yet, a change of one read.
        put(&t, format!("a-{pages:02}"), "pro").await;
        put(&t, format!("z-{pages:02}"), "pro").await;
        put(&t, "k-01".to_string(), "changed").await;
        if pages == 1 {
            c.delete_schedule(&t, &key("k-20"), Precondition::None, at(0))
                .await
                .expect("deleted");
        }
        match page.cursor {
            Some(cursor) => query.after = Some(cursor),
            None => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(seen, sorted, "in key order, each once");
    for i in (0..25).filter(|i| ![5, 20].contains(i)) {
        let k = format!("k-{i:02}");
        assert!(seen.contains(&k), "{k} existed throughout: {seen:?}");
    }
    assert!(!seen.contains(&"k-05".to_string()), "{seen:?}");
    assert!(
        !seen.iter().any(|k| k.starts_with("a-")),
        "before the cursor"
    );
    assert!(seen.iter().any(|k| k.starts_with("z-")), "after the cursor");

    let listed = &t;
    let all = |query: ScheduleQuery| async move {
        let page = c.list_schedules(listed, &query).await.expect("a page");
        assert_eq!(page.cursor, None, "one page holds them");
        page.schedules
            .iter()
            .map(|(k, _)| k.as_str().to_string())
            .collect::<Vec<_>>()
    };
    let prefixed = all(ScheduleQuery {
        prefix: "k-1".to_string(),
        ..ScheduleQuery::default()
    })
    .await;
    let expected: Vec<String> = (10..20).map(|i| format!("k-{i}")).collect();
    assert_eq!(prefixed, expected);
    let labelled = all(ScheduleQuery {
        prefix: "k-".to_string(),
        label: Some("plan:pro".to_string()),
        ..ScheduleQuery::default()
    })
    .await;
    let expected: Vec<String> = (0..25)
        .filter(|i| i % 3 == 0 && *i != 20)
        .map(|i| format!("k-{i:02}"))
        .collect();
    assert_eq!(labelled, expected);
    let other_job = c
        .list_schedules(&other, &ScheduleQuery::default())
        .await
        .expect("a page");
    assert_eq!(other_job.schedules.len(), 1, "{other_job:?}");
}

fn bulk_put(k: &str, json: &str, precondition: Precondition) -> SchedulePut {
    SchedulePut {
        key: key(k),
        spec: spec(json),
        precondition,
    }
}

/// One bulk write of 150 schedules: each answered as its own `PUT` would
/// be, in the order given (created, unchanged, refused by its
/// precondition, a key given twice written twice in order), and each
/// written schedule due at its next slot, as one written alone is.
pub async fn a_bulk_write_answers_each_schedule<C: Schedules>(c: &C, ns: &str) {
    let t = template(ns);
    let daily = r#"{"cron":"0 9 * * *","timezone":"Europe/Berlin"}"#;
    let hourly = r#"{"cron":"0 * * * *"}"#;
    c.put_schedule(&t, &key("kept"), spec(daily), Precondition::None, at(0))
        .await
        .expect("written");
    let mut puts = vec![
        bulk_put("kept", daily, Precondition::None),
        bulk_put("new", daily, Precondition::Absent),
        bulk_put("stale", daily, Precondition::Version(4)),
        bulk_put("exists", daily, Precondition::None),
        bulk_put("exists", hourly, Precondition::Version(1)),
        bulk_put("kept", hourly, Precondition::Absent),
    ];
    puts.extend((0..144).map(|i| bulk_put(&format!("n-{i:03}"), hourly, Precondition::None)));
    let answers = c.put_schedules(&t, puts, at(MIN)).await;
    assert_eq!(answers.len(), 150);
    let expected_head = [
        Ok(ScheduleWrite::Unchanged { version: 1 }),
        Ok(ScheduleWrite::Created { version: 1 }),
        Err(ScheduleError::Refused(ScheduleRefusal::VersionMismatch {
            current: None,
        })),
        Ok(ScheduleWrite::Created { version: 1 }),
        Ok(ScheduleWrite::Changed { version: 2 }),
        Err(ScheduleError::Refused(ScheduleRefusal::Exists {
            version: 1,
        })),
    ];
    assert_eq!(answers[..6], expected_head, "{:?}", &answers[..6]);
    for (i, answer) in answers[6..].iter().enumerate() {
        assert_eq!(
            answer,
            &Ok(ScheduleWrite::Created { version: 1 }),
            "n-{i:03}"
        );
    }
    let exists = c
        .schedule(&t, &key("exists"))
        .await
        .expect("reads")
        .expect("held");
    assert_eq!(
        exists.data.spec(),
        Ok(Some(spec(hourly))),
        "the second write is the last"
    );
    assert_eq!(c.schedule(&t, &key("stale")).await.expect("reads"), None);
    let one = c
        .schedule(&t, &key("n-143"))
        .await
        .expect("reads")
        .expect("held");
    assert_eq!(one.record.wake_at, Some(at(HOUR)), "due at its next slot");
    let mut listed = 0;
    let mut query = ScheduleQuery::default();
    loop {
        let page = c.list_schedules(&t, &query).await.expect("a page");
        listed += page.schedules.len();
        match page.cursor {
            Some(cursor) => query.after = Some(cursor),
            None => break,
        }
    }
    assert_eq!(listed, 147, "kept, new, exists and the 144");
}

/// Two clients write the same 100 schedules in bulk at once, while a third
/// writes some of them alone: every schedule exists once, at version 1,
/// created by exactly one of the writes (the peers' bulk upserts lose or
/// double schedules here).
pub async fn concurrent_bulk_writes_of_one_set_end_at_version_1<C: Schedules>(c: &C, ns: &str) {
    let t = template(ns);
    let daily = r#"{"cron":"0 9 * * *","timezone":"Europe/Berlin","payload":{"plan":"pro"}}"#;
    let set = || -> Vec<SchedulePut> {
        (0..100)
            .map(|i| bulk_put(&format!("t-{i:03}"), daily, Precondition::None))
            .collect()
    };
    let bulk = join_all(vec![
        c.put_schedules(&t, set(), at(0)),
        c.put_schedules(&t, set(), at(0)),
    ]);
    let alone = join_all(
        (0..100)
            .step_by(7)
            .map(|i| {
                let (t, k) = (t.clone(), key(&format!("t-{i:03}")));
                async move {
                    c.put_schedule(&t, &k, spec(daily), Precondition::None, at(0))
                        .await
                }
            })
            .collect(),
    );
    let (bulk, alone) = join(bulk, alone).await;
    let mut created = vec![0; 100];
    for answers in &bulk {
        for (i, answer) in answers.iter().enumerate() {
            match answer {
                Ok(ScheduleWrite::Created { version: 1 }) => created[i] += 1,
                Ok(ScheduleWrite::Unchanged { version: 1 }) => {}
                other => panic!("t-{i:03}: {other:?}"),
            }
        }
    }
    for (n, answer) in (0..100).step_by(7).zip(&alone) {
        match answer {
            Ok(ScheduleWrite::Created { version: 1 }) => created[n] += 1,
            Ok(ScheduleWrite::Unchanged { version: 1 }) => {}
            other => panic!("t-{n:03} alone: {other:?}"),
        }
    }
    assert!(
        created.iter().all(|&n| n == 1),
        "each created once: {created:?}"
    );
    let page = c
        .list_schedules(&t, &ScheduleQuery::default())
        .await
        .expect("a page");
    assert_eq!(page.schedules.len(), 100);
    assert!(page.schedules.iter().all(|(_, r)| r.data.version == 1));
}
