//! The job object and its client, natively: the core conformance suite
//! through the real wire protocol, object code and SQL, on a real SQLite
//! per object (what a SQLite-backed Durable Object is), with the transport
//! calling the object in-process instead of through workerd. The same suite
//! runs in workerd in `tests/tests/it/cf_workerd.rs`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use cronslot_cf::{JobObject, ObjectClient, Transport};
use cronslot_core::coord::StoreError;
use cronslot_core::coord::exec::block_on;
use cronslot_tests::sim_backends::RusqliteSql;

/// One object per job name, as `id_from_name(job)` gives in workerd.
#[derive(Default, Clone)]
struct Objects(Rc<RefCell<HashMap<String, Rc<JobObject<RusqliteSql>>>>>);

impl Objects {
    fn object(&self, job: &str) -> Rc<JobObject<RusqliteSql>> {
        self.0
            .borrow_mut()
            .entry(job.to_string())
            .or_insert_with(|| {
                let sql = RusqliteSql::in_memory().expect("in-memory sqlite");
                Rc::new(JobObject::new(sql, 7))
            })
            .clone()
    }
}

impl Transport for Objects {
    async fn call(&self, job: &str, body: String) -> Result<String, StoreError> {
        let object = self.object(job);
        Ok(object.handle_text(&body).await)
    }
}

/// The spec of job `a` (every minute) as a request carries it: JSON text.
fn spec_of_a() -> String {
    let spec = cronslot_core::manifest::parse_manifest(
        "[[job]]\nname = \"a\"\nschedule = \"* * * * *\"\n",
        "t.toml",
    )
    .unwrap()
    .jobs
    .remove(0);
    serde_json::to_string(&cronslot_cf::spec_text::encode_spec(&spec)).unwrap()
}

fn client() -> ObjectClient<Objects> {
    ObjectClient::new(Objects::default())
}

cronslot_core::conformance_suite!(client(), block_on, "cf-native");

#[test]
fn schema_1_record_loads() {
    let c = client();
    let objects = c.transport().clone();
    block_on(cronslot_core::conformance::schema_1_record_loads(
        &c,
        "cf-native-schema",
        |job: String, text: String| {
            let objects = objects.clone();
            async move { objects.object(&job).store().put_raw(&job, &text).unwrap() }
        },
    ));
}

#[test]
fn garbage_requests_get_errors_not_panics() {
    let objects = Objects::default();
    let object = objects.object("a");
    let spec = spec_of_a();
    let wrong_job = format!(r#"{{"job":"b","spec":{spec},"op":"record"}}"#);
    let unknown_op = format!(r#"{{"job":"a","spec":{spec},"op":"launch"}}"#);
    let toml_spec =
        r#"{"job":"a","spec":"[[job]]\nname = \"a\"\nschedule = \"* * * * *\"\n","op":"record"}"#;
    for body in [
        "",
        "{",
        "null",
        r#"{"job":"a","spec":"x","op":{"status":{"now":"2026-01-01T00:00:00Z"}}}"#,
        &wrong_job,
        &unknown_op,
        toml_spec,
    ] {
        let answer = block_on(object.handle_text(body));
        assert!(
            answer.starts_with(r#"{"Err":{"bad_request":{"message":"#),
            "{body:?} → {answer}"
        );
    }
}

/// The schedules part of the suite, with the job's schedules spread over
/// the default 16 objects.
mod schedules {
    use super::*;

    cronslot_core::schedules_suite!(client(), block_on, "cfs");
}

/// The suite again with every schedule in one object (the alarm of one
/// object then serves all of them) and with 3.
mod schedules_in_one_object {
    use super::*;

    cronslot_core::schedules_suite!(client().with_schedule_objects(1), block_on, "cfs1");
}

mod schedules_in_three_objects {
    use super::*;

    cronslot_core::schedules_suite!(client().with_schedule_objects(3), block_on, "cfs3");
}

/// The keyed runs part of the suite, each key's run in the object its key
/// names among the default 16, in one object, and among 3.
mod runs {
    use super::*;

    cronslot_core::runs_suite!(client(), block_on, "cfr");
}

mod runs_in_one_object {
    use super::*;

    cronslot_core::runs_suite!(client().with_schedule_objects(1), block_on, "cfr1");
}

mod runs_in_three_objects {
    use super::*;

    cronslot_core::runs_suite!(client().with_schedule_objects(3), block_on, "cfr3");
}

fn dynamic_job(name: &str) -> cronslot_core::manifest::JobTemplate {
    cronslot_core::manifest::parse_manifest(
        &format!("[[job]]\nname = \"{name}\"\ndynamic = true\ncommand = [\"true\"]\n"),
        "t.toml",
    )
    .unwrap()
    .templates
    .remove(0)
}

/// A job's schedules land in the object their key hashes to, every object
/// of the count gets some, and a client that counts the objects otherwise
/// is refused (the count decides where each key is) before it writes.
#[test]
fn schedules_are_spread_over_the_jobs_objects_by_key() {
    use cronslot_cf::protocol::schedule_object;
    use cronslot_core::coord::Schedules;
    use cronslot_core::coord::decide::Precondition;
    use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};

    let c = client().with_schedule_objects(3);
    let template = dynamic_job("spread");
    let now: jiff::Timestamp = "2026-03-01T00:00:00Z".parse().unwrap();
    let spec = ScheduleSpec::from_json(r#"{"cron": "0 9 * * *", "timezone": "UTC"}"#).unwrap();
    for i in 0..30 {
        let key = ScheduleKey::new(format!("tenant-{i}")).unwrap();
        block_on(c.put_schedule(&template, &key, spec.clone(), Precondition::None, now)).unwrap();
        let home = c
            .transport()
            .object(&schedule_object("spread", key.as_str(), 3));
        let record = block_on(cronslot_core::coord::StateStore::get(
            home.store(),
            &format!("spread/{}", key.as_str()),
        ))
        .unwrap();
        assert!(record.is_some(), "tenant-{i} is in its object");
    }
    for shard in 0..3 {
        let object = c.transport().object(&format!("spread#{shard}"));
        let held = block_on(cronslot_core::coord::StateStore::jobs(object.store())).unwrap();
        assert!(
            (4..=20).contains(&held.len()),
            "object {shard} holds {} of 30",
            held.len()
        );
    }

    let other = ObjectClient::new(c.transport().clone()).with_schedule_objects(4);
    let key = ScheduleKey::new("tenant-new").unwrap();
    let e = block_on(other.put_schedule(&template, &key, spec, Precondition::None, now))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("spread over 3 objects") && e.contains("counts 4"),
        "{e}"
    );
}

/// An object holding many schedules sends every wake that has come with
/// one alarm, earliest first, and sends each again while its record keeps
/// it; a write that moves one makes it due at its new time.
#[test]
fn one_alarm_sends_the_wakes_of_all_the_objects_schedules() {
    use cronslot_cf::AlarmStep;
    use cronslot_core::coord::Schedules;
    use cronslot_core::coord::decide::Precondition;
    use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};

    let c = client().with_schedule_objects(1);
    let template = dynamic_job("many");
    let now: jiff::Timestamp = "2026-03-01T08:00:00Z".parse().unwrap();
    for (key, cron) in [("a", "0 9 * * *"), ("b", "0 9 * * *"), ("c", "30 9 * * *")] {
        let spec = ScheduleSpec::from_json(&format!(r#"{{"cron": "{cron}", "timezone": "UTC"}}"#))
            .unwrap();
        let key = ScheduleKey::new(key).unwrap();
        block_on(c.put_schedule(&template, &key, spec, Precondition::None, now)).unwrap();
    }
    let object = c.transport().object("many#0");
    let nine: jiff::Timestamp = "2026-03-01T09:00:00Z".parse().unwrap();
    assert_eq!(object.alarm_start(now).unwrap(), AlarmStep::Rearmed);
    let AlarmStep::Send(sent) = object.alarm_start(nine).unwrap() else {
        panic!("the wakes of 09:00 have come");
    };
    let names: Vec<&str> = sent.iter().map(|w| w.job.as_str()).collect();
    assert_eq!(names, ["many/a", "many/b"]);
    object.alarm_end(&sent, true, nine).unwrap();
    // Sent: not again until the reminder, unless 09:30 comes first.
    let later = nine
        .checked_add(jiff::SignedDuration::from_secs(60))
        .unwrap();
    assert_eq!(object.alarm_start(later).unwrap(), AlarmStep::Rearmed);
    let reminder = nine.checked_add(cronslot_cf::WAKE_REMINDER).unwrap();
    let AlarmStep::Send(again) = object.alarm_start(reminder).unwrap() else {
        panic!("the reminder sends them again");
    };
    assert_eq!(again, sent);
}

/// Counts the requests a client sends, each to the objects.
#[derive(Clone, Default)]
struct Counted(Objects, Rc<std::cell::Cell<u32>>);

impl Transport for Counted {
    async fn call(&self, job: &str, body: String) -> Result<String, StoreError> {
        self.1.set(self.1.get() + 1);
        self.0.call(job, body).await
    }
}

/// A keyed run costs one request per enqueue and per status read; once it
/// has ended its record's wake, in its object's wake table and alarm, is
/// the key's forget time; the tick's read of it then (the read for a claim)
/// deletes the record and its wake, so the object's alarm has nothing left
/// to send.
#[test]
fn a_keyed_run_wakes_its_object_when_its_key_is_forgotten() {
    use cronslot_cf::AlarmStep;
    use cronslot_cf::protocol::Woken;
    use cronslot_core::coord::decide::Enqueued;
    use cronslot_core::coord::{Claim, Coordinator, Runs, Schedules, StateStore, Trigger};
    use cronslot_core::schedules::{RunRequest, RunStatus, ScheduleKey};
    use jiff::{SignedDuration, Timestamp};

    let counted = Counted::default();
    let c = ObjectClient::new(counted.clone()).with_schedule_objects(1);
    let template = dynamic_job("mail");
    let key = ScheduleKey::new("order-7").unwrap();
    let request = RunRequest::from_json(r#"{"payload":{"to":"a@b.c"}}"#).unwrap();
    let t0: Timestamp = "2026-03-01T08:00:30Z".parse().unwrap();
    let sent = |f: &dyn Fn()| {
        let before = counted.1.get();
        f();
        counted.1.get() - before
    };

    assert_eq!(
        sent(&|| {
            let e = block_on(c.enqueue_run(&template, &key, &request, t0)).unwrap();
            assert!(matches!(e, Enqueued::Created(_)), "{e:?}");
        }),
        1,
        "one request per enqueue"
    );
    assert_eq!(
        sent(&|| {
            let e = block_on(c.enqueue_run(&template, &key, &request, t0)).unwrap();
            assert!(matches!(e, Enqueued::Existing(_)), "{e:?}");
        }),
        1,
        "one request per enqueue of a key that names the run"
    );
    assert_eq!(
        sent(&|| {
            let view = block_on(c.run_status(&template, &key, t0))
                .unwrap()
                .unwrap();
            assert_eq!(view.status, RunStatus::Pending);
        }),
        1,
        "one request per status read"
    );
    let object = counted.0.object("mail#0");
    let slot: Timestamp = "2026-03-01T08:00:00Z".parse().unwrap();
    assert_eq!(
        object.store().wake().unwrap(),
        Some(Woken {
            job: "mail/order-7".into(),
            at: slot
        }),
        "a waiting run wakes its object at its slot"
    );

    let spec = block_on(c.schedule_for_claim(&template, &key, t0))
        .unwrap()
        .expect("a keyed run is a one-off schedule");
    let Claim::Claimed(lease) = block_on(c.claim(&spec, t0, Trigger::Tick, "w")).unwrap() else {
        panic!("the run is due");
    };
    let done = t0.checked_add(SignedDuration::from_secs(5)).unwrap();
    block_on(c.complete(&spec, lease.fence, None, done)).unwrap();
    let view = block_on(c.run_status(&template, &key, done))
        .unwrap()
        .unwrap();
    assert_eq!(view.status, RunStatus::Succeeded);
    let forget = done
        .checked_add(SignedDuration::from_hours(30 * 24))
        .unwrap();
    assert_eq!(view.remembered_until, Some(forget));
    assert_eq!(
        object.store().wake().unwrap(),
        Some(Woken {
            job: "mail/order-7".into(),
            at: forget
        }),
        "the object wakes when the key is forgotten"
    );
    let before = forget.checked_sub(SignedDuration::from_secs(60)).unwrap();
    assert_eq!(object.alarm_start(before).unwrap(), AlarmStep::Rearmed);
    let AlarmStep::Send(woken) = object.alarm_start(forget).unwrap() else {
        panic!("the forget time has come");
    };
    assert_eq!(woken.len(), 1);
    assert_eq!(woken[0].at, forget);

    // A read for a claim a minute early keeps it; at the forget time it
    // deletes the record and its wake, in that one request.
    assert!(
        block_on(c.schedule_for_claim(&template, &key, before))
            .unwrap()
            .is_some()
    );
    assert_eq!(
        sent(&|| {
            assert_eq!(
                block_on(c.schedule_for_claim(&template, &key, forget)),
                Ok(None)
            );
        }),
        1,
        "the read for the claim forgets the key in one request"
    );
    assert_eq!(
        block_on(object.store().get("mail/order-7")).unwrap(),
        None,
        "the record is deleted"
    );
    assert_eq!(object.store().wake().unwrap(), None, "and its wake");
    assert_eq!(object.alarm_start(forget).unwrap(), AlarmStep::Nothing);
    assert_eq!(block_on(c.run_status(&template, &key, forget)), Ok(None));
}

/// The object protocol's version: a request without it (a Worker of the
/// releases before it) is of protocol 1 and served; one of a newer
/// protocol is refused before its operation is read (a newer Worker may
/// send an operation this object does not know), with a store error of
/// the kind a tick retries, naming both versions; nothing is written.
#[test]
fn requests_of_an_older_protocol_are_served_and_of_a_newer_one_refused_naming_both() {
    use cronslot_cf::protocol::{ObjectReply, PROTOCOL_VERSION, WireError, WireStoreKind};

    let objects = Objects::default();
    let object = objects.object("a");
    let spec = spec_of_a();
    let status = r#"{"status":{"now":"2026-01-01T00:00:00Z"}}"#;
    let ask = |body: String| -> ObjectReply {
        serde_json::from_str(&block_on(object.handle_text(&body))).unwrap()
    };
    let unversioned = format!(r#"{{"job":"a","spec":{spec},"op":{status}}}"#);
    assert!(ask(unversioned).is_ok(), "protocol 1 is served");
    let current =
        format!(r#"{{"protocol":{PROTOCOL_VERSION},"job":"a","spec":{spec},"op":{status}}}"#);
    assert!(ask(current).is_ok(), "this protocol is served");
    let newer = PROTOCOL_VERSION + 1;
    let future = format!(
        r#"{{"protocol":{newer},"job":"a","spec":{spec},"op":{{"launch_rockets":{{"count":3}}}}}}"#
    );
    match ask(future) {
        Err(WireError::Store {
            kind: WireStoreKind::Unavailable,
            message,
        }) => {
            assert!(
                message.contains(&format!("object protocol {newer}"))
                    && message.contains(&format!("speaks protocol {PROTOCOL_VERSION} and older")),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    // The refused request wrote nothing: the job still has no record.
    assert!(
        block_on(cronslot_core::coord::StateStore::get(object.store(), "a"))
            .unwrap()
            .is_none()
    );
}
