//! The Worker's tick natively (docs/design.md §11): the runtime's `tick`
//! over the job objects and the tick object, through the real wire
//! protocol, object code and SQL (rusqlite), with the transport calling
//! the objects in-process and counting every request each object serves.
//! Each object's alarm is recorded; the test fires the alarms that are
//! due, as the platform would (the alarm handler's steps, then the wake
//! sent to the tick object through the same transport).
//!
//! The same costs are measured in workerd by `tests/tests/it/cf_workerd.rs`.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cronslot_cf::protocol::{Answer, ObjectReply, ObjectRequest, Op, TICK_OBJECT, Woken};
use cronslot_cf::sql::{Alarm, SqlError};
use cronslot_cf::{
    AlarmStep, JobError, JobObject, Jobs, ObjectClient, TickClient, Transport, WAKE_REMINDER,
};
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{JobState, StoreError, TickIndex};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_runtime::{Platform, TickOptions, TickPlan, TickReport, VirtualPlatform, tick};
use cronslot_tests::sim_backends::RusqliteSql;
use jiff::Timestamp;

/// An alarm that records what the object did with it.
#[derive(Clone, Default)]
struct RecordingAlarm(Rc<RefCell<AlarmLog>>);

#[derive(Default, Debug)]
struct AlarmLog {
    /// The alarm as set now (ms), if any.
    at: Option<i64>,
    /// Every call: `Some(ms)` a set, `None` a delete.
    calls: Vec<Option<i64>>,
}

impl Alarm for RecordingAlarm {
    fn set(&self, at_ms: i64) -> Result<(), SqlError> {
        let mut log = self.0.borrow_mut();
        log.at = Some(at_ms);
        log.calls.push(Some(at_ms));
        Ok(())
    }

    fn delete(&self) -> Result<(), SqlError> {
        let mut log = self.0.borrow_mut();
        log.at = None;
        log.calls.push(None);
        Ok(())
    }
}

type Object = JobObject<RusqliteSql, RecordingAlarm>;

/// One object per name, as `id_from_name` gives in workerd; every request
/// counted per object; calls to the objects in `refuse` fail unsent.
#[derive(Default)]
struct Objects {
    objects: RefCell<BTreeMap<String, (Rc<Object>, RecordingAlarm)>>,
    requests: RefCell<HashMap<String, u64>>,
    alarms: RefCell<HashMap<String, u64>>,
    refuse: RefCell<HashSet<String>>,
}

#[derive(Clone, Default)]
struct Transport_(Rc<Objects>);

impl Transport_ {
    fn object(&self, name: &str) -> (Rc<Object>, RecordingAlarm) {
        self.0
            .objects
            .borrow_mut()
            .entry(name.to_string())
            .or_insert_with(|| {
                let alarm = RecordingAlarm::default();
                let sql = RusqliteSql::in_memory().expect("in-memory sqlite");
                (Rc::new(JobObject::with_alarm(sql, alarm.clone(), 7)), alarm)
            })
            .clone()
    }

    /// Requests served so far, per object.
    fn requests(&self) -> HashMap<String, u64> {
        self.0.requests.borrow().clone()
    }

    /// Requests and alarms served since `before`, per object (objects with
    /// none left out).
    fn since(&self, before: &HashMap<String, u64>) -> BTreeMap<String, u64> {
        self.requests()
            .into_iter()
            .map(|(k, v)| (k.clone(), v - before.get(&k).copied().unwrap_or(0)))
            .filter(|(_, v)| *v > 0)
            .collect()
    }

    /// The alarm of `name`'s object (ms), if set.
    fn alarm(&self, name: &str) -> Option<i64> {
        self.object(name).1.0.borrow().at
    }

    /// Fires every alarm due at `now`, as the platform does: the alarm is
    /// consumed, the handler runs (and may send the wake to the tick
    /// object through this transport) and re-arms. Each alarm counts as a
    /// request of its object. Returns the objects whose alarm fired.
    fn fire_alarms(&self, now: Timestamp) -> Vec<String> {
        let due: Vec<String> = self
            .0
            .objects
            .borrow()
            .iter()
            .filter(|(_, (_, a))| a.0.borrow().at.is_some_and(|at| at <= now.as_millisecond()))
            .map(|(name, _)| name.clone())
            .collect();
        for name in &due {
            let (object, alarm) = self.object(name);
            alarm.0.borrow_mut().at = None;
            *self
                .0
                .requests
                .borrow_mut()
                .entry(name.clone())
                .or_default() += 1;
            *self.0.alarms.borrow_mut().entry(name.clone()).or_default() += 1;
            if let AlarmStep::Send(woken) = object.alarm_start(now).expect("alarm start") {
                let delivered = block_on(TickClient::new(self).wake(woken.clone()));
                object
                    .alarm_end(&woken, delivered.is_ok(), now)
                    .expect("alarm end");
            }
        }
        due
    }

    /// The woken entries the tick object holds, at or before `now`.
    fn woken(&self, now: Timestamp) -> Vec<Woken> {
        let (object, _) = self.object(TICK_OBJECT);
        let body = serde_json::to_string(&ObjectRequest {
            protocol: cronslot_cf::protocol::PROTOCOL_VERSION,
            job: TICK_OBJECT.into(),
            spec: String::new(),
            op: Op::TickStart {
                now,
                limit: usize::MAX,
            },
            schedule: None,
        })
        .unwrap();
        let reply: ObjectReply =
            serde_json::from_str(&block_on(object.handle_text(&body))).unwrap();
        match reply {
            Ok(Answer::Tick { woken, .. }) => woken,
            other => panic!("{other:?}"),
        }
    }
}

impl Transport for Transport_ {
    async fn call(&self, job: &str, body: String) -> Result<String, StoreError> {
        if self.0.refuse.borrow().contains(job) {
            return Err(StoreError::unavailable(format!(
                "{job}: refused by the test"
            )));
        }
        *self
            .0
            .requests
            .borrow_mut()
            .entry(job.to_string())
            .or_default() += 1;
        let (object, _) = self.object(job);
        Ok(object.handle_text(&body).await)
    }
}

/// Runs each job's attempts as the test says: the jobs named in `fail_first`
/// fail their first attempt of every slot (transient); every attempt is
/// recorded as (job, slot, attempt).
type Seen = Arc<Mutex<Vec<(String, Timestamp, u32)>>>;

fn jobs(specs: &[Rc<JobSpec>], fail_first: &[&str], seen: &Seen) -> Jobs {
    let mut jobs = Jobs::new();
    for spec in specs {
        let name = spec.name.as_str().to_string();
        let fails = fail_first.contains(&name.as_str());
        let seen = Arc::clone(seen);
        jobs = jobs.register(&name.clone(), move |ctx| {
            seen.lock()
                .unwrap()
                .push((name.clone(), ctx.scheduled_at(), ctx.attempt()));
            let fail = fails && ctx.attempt() == 1;
            async move {
                if fail {
                    Err(JobError::transient("first attempts fail"))
                } else {
                    Ok(())
                }
            }
        });
    }
    jobs
}

/// `n` jobs `j0`..: `due_each_minute` of them every minute, the next once
/// a day at 03:17, the others once a day at 05:17 (which no test reaches),
/// each with a one-minute lease and a retry within
/// ten minutes (full jitter: the tests read the retry's time).
fn specs(n: usize, due_each_minute: usize) -> Vec<Rc<JobSpec>> {
    let mut text = String::from(
        "[defaults]\nlease = \"1m\"\nskew_margin = \"5s\"\nstarting_deadline = \"5m\"\n\
         retry = { max_attempts = 3, backoff = \"10m\", max_backoff = \"10m\" }\n",
    );
    for i in 0..n {
        let schedule = match i.cmp(&due_each_minute) {
            std::cmp::Ordering::Less => "* * * * *",
            std::cmp::Ordering::Equal => "17 3 * * *",
            std::cmp::Ordering::Greater => "17 5 * * *",
        };
        text.push_str(&format!(
            "\n[[job]]\nname = \"j{i}\"\nschedule = \"{schedule}\"\n"
        ));
    }
    parse_manifest(&text, "t.toml")
        .unwrap()
        .jobs
        .into_iter()
        .map(Rc::new)
        .collect()
}

struct World {
    transport: Transport_,
    client: Rc<ObjectClient<Transport_>>,
    plan: TickPlan,
    jobs: Jobs,
    seen: Seen,
    platform: VirtualPlatform,
    /// The bound on jobs per tick, as the Worker sets one.
    max_jobs: std::cell::Cell<Option<usize>>,
}

impl World {
    fn new(n: usize, due_each_minute: usize, fail_first: &[&str]) -> World {
        let specs = specs(n, due_each_minute);
        let seen = Seen::default();
        let jobs = jobs(&specs, fail_first, &seen);
        let transport = Transport_::default();
        World {
            client: Rc::new(ObjectClient::new(transport.clone())),
            transport,
            plan: TickPlan::new(specs, |_| true),
            jobs,
            seen,
            platform: VirtualPlatform::new(at("00:00:00")),
            max_jobs: std::cell::Cell::new(None),
        }
    }

    /// One tick at `time`, as the Worker serves it; the requests each
    /// object served for it.
    fn tick(&self, time: &str) -> (TickReport, BTreeMap<String, u64>) {
        self.tick_at(at(time))
    }

    fn tick_at(&self, time: Timestamp) -> (TickReport, BTreeMap<String, u64>) {
        self.platform.set(time);
        let before = self.transport.requests();
        let platform: Rc<dyn Platform> = Rc::new(self.platform.clone());
        let index = TickClient::new(&self.transport);
        let client = self.client.clone();
        let more_due = |spec: &JobSpec, now: Timestamp| {
            client.more_due(spec.name.as_str(), now, Duration::ZERO)
        };
        let options = TickOptions {
            owner: "w",
            max_jobs: self.max_jobs.get(),
            retry_within: Duration::ZERO,
            more_due: Some(&more_due),
        };
        let report = block_on(tick(
            &self.plan,
            &self.client,
            &index,
            &self.jobs,
            &platform,
            &options,
        ))
        .expect("the tick starts");
        (report, self.transport.since(&before))
    }

    fn record(&self, job: &str) -> Option<JobState> {
        let spec = self
            .plan
            .specs()
            .iter()
            .find(|s| s.name.as_str() == job)
            .unwrap();
        block_on(self.client.record(spec)).unwrap()
    }

    fn seen(&self) -> Vec<(String, Timestamp, u32)> {
        self.seen.lock().unwrap().clone()
    }
}

/// An alarm's millisecond for a wake (the first at or after it).
fn ms(t: Timestamp) -> i64 {
    t.as_millisecond() + i64::from(t.subsec_nanosecond() % 1_000_000 > 0)
}

fn at(time: &str) -> Timestamp {
    format!("2026-01-05T{time}Z").parse().unwrap()
}

fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn a_tick_costs_two_requests_per_due_job_and_two_more() {
    let w = World::new(1000, 10, &[]);
    // The first tick sets the mark and looks back a minute: the ten jobs
    // due at 01:00 get their records (a claim each, which runs nothing:
    // the slot is from before the record).
    let (report, cost) = w.tick("01:00:00");
    assert_eq!(report.work.jobs.len(), 10);
    let mut expected: Vec<(String, u64)> = (0..10).map(|i| (format!("j{i}"), 1)).collect();
    expected.push((TICK_OBJECT.to_string(), 2));
    assert_eq!(cost, expected.into_iter().collect::<BTreeMap<_, _>>());
    assert!(w.seen().is_empty());
    // Nothing due between two minutes: two requests, whatever the jobs held.
    let (report, cost) = w.tick("01:00:30");
    assert!(report.work.jobs.is_empty());
    assert_eq!(cost, counts(&[(TICK_OBJECT, 2)]));
    // Ten jobs due: a claim and a completion each (no claim that would
    // find nothing: the object says so when it records the end).
    let (report, cost) = w.tick("01:01:00");
    assert_eq!(report.work.jobs.len(), 10);
    let mut expected: Vec<(String, u64)> = (0..10).map(|i| (format!("j{i}"), 2)).collect();
    expected.push((TICK_OBJECT.to_string(), 2));
    assert_eq!(cost, expected.into_iter().collect::<BTreeMap<_, _>>());
    assert_eq!(cost.values().sum::<u64>(), 2 * 10 + 2);
    assert_eq!(w.seen().len(), 10);
    // A completed run leaves no wake, so no alarm: nothing fires.
    for i in 0..10 {
        assert_eq!(w.transport.alarm(&format!("j{i}")), None, "j{i}");
        assert_eq!(w.record(&format!("j{i}")).unwrap().wake_at, None);
    }
    assert!(w.transport.fire_alarms(at("02:00:00")).is_empty());
    let (_, cost) = w.tick("01:01:40");
    assert_eq!(cost, counts(&[(TICK_OBJECT, 2)]));
}

#[test]
fn a_retry_comes_through_the_alarm_and_the_tick_object() {
    // j0 runs daily at 03:17 and fails its first attempt; the 999 others
    // are never due here.
    let w = World::new(1000, 0, &["j0"]);
    w.tick("03:16:00");
    let (report, cost) = w.tick("03:17:00");
    assert_eq!(report.work.jobs.len(), 1);
    // Claim and fail: the failure's answer says nothing more is due now.
    assert_eq!(cost, counts(&[("j0", 2), (TICK_OBJECT, 2)]));
    let record = w.record("j0").unwrap();
    let wake = record.wake_at.expect("the retry is the record's wake");
    assert_eq!(wake, record.pending[0].not_before);
    assert_eq!(w.transport.alarm("j0"), Some(ms(wake)));
    // Ticks before the wake touch no job; the alarm has not fired.
    let slot = at("03:17:00");
    let gap = wake.duration_since(slot);
    assert!(gap > jiff::SignedDuration::from_secs(1), "{gap}");
    for time in [slot + gap / 3, slot + gap * 2 / 3] {
        assert!(w.transport.fire_alarms(time).is_empty());
        let (report, cost) = w.tick_at(time);
        assert!(report.work.jobs.is_empty());
        assert_eq!(cost, counts(&[(TICK_OBJECT, 2)]), "{time}");
    }
    // The alarm fires at the wake and sends it to the tick object: one
    // alarm of j0's object, one request to the tick object.
    let before = w.transport.requests();
    assert_eq!(w.transport.fire_alarms(wake), ["j0"]);
    assert_eq!(
        w.transport.since(&before),
        counts(&[("j0", 1), (TICK_OBJECT, 1)])
    );
    assert_eq!(
        w.transport.woken(at("03:30:00")),
        [Woken {
            job: "j0".into(),
            at: wake
        }]
    );
    // The next tick serves it: the retry runs and succeeds.
    let (report, cost) = w.tick("03:28:00");
    assert_eq!(report.work.jobs.len(), 1);
    assert_eq!(report.work.jobs[0].planned, None, "woken, not planned");
    assert_eq!(cost, counts(&[("j0", 2), (TICK_OBJECT, 2)]));
    assert_eq!(
        w.seen(),
        [
            ("j0".to_string(), at("03:17:00"), 1),
            ("j0".to_string(), at("03:17:00"), 2)
        ]
    );
    // The entry is gone, the record has no wake, the alarm is deleted.
    assert!(w.transport.woken(at("04:00:00")).is_empty());
    assert_eq!(w.record("j0").unwrap().wake_at, None);
    assert_eq!(w.transport.alarm("j0"), None);
    let (_, cost) = w.tick("03:29:00");
    assert_eq!(cost, counts(&[(TICK_OBJECT, 2)]));
}

/// A record written by a cronslot from before objects kept their wake as
/// their alarm: j0's record after its failed first attempt, without its
/// wake, written raw into a new world's object (no alarm, no wake row).
fn world_with_a_record_from_before_alarms() -> (World, Timestamp) {
    let old = World::new(1000, 0, &["j0"]);
    old.tick("03:16:00");
    old.tick("03:17:00");
    let mut record = old.record("j0").unwrap();
    let retry = record.pending[0].not_before;
    record.wake_at = None;
    // The new world's first tick looks back a minute, not to 03:17: its
    // mark is past j0's slot, as after an upgrade.
    let w = World::new(1000, 0, &[]);
    w.tick("03:18:30");
    let (object, _) = w.transport.object("j0");
    object
        .store()
        .put_raw("j0", &cronslot_core::coord::encode_state(&record))
        .unwrap();
    (w, retry)
}

#[test]
fn a_record_from_before_alarms_waits_until_its_wake_is_repaired() {
    let (w, retry) = world_with_a_record_from_before_alarms();
    // Unrepaired, the waiting retry has no alarm: no tick serves it.
    assert_eq!(w.transport.alarm("j0"), None);
    let after = retry.max(at("03:18:30")) + jiff::SignedDuration::from_secs(60);
    assert!(w.transport.fire_alarms(after).is_empty());
    let (report, _) = w.tick_at(after);
    assert!(report.work.jobs.is_empty());
    assert!(w.seen().is_empty());
    // The repair gives the record its wake (the retry's time) and the
    // object its alarm, in one request; the record gets a new version.
    let before = w.transport.requests();
    assert_eq!(block_on(w.client.repair_wake("j0")).unwrap(), Some(retry));
    assert_eq!(w.transport.since(&before), counts(&[("j0", 1)]));
    assert_eq!(w.record("j0").unwrap().wake_at, Some(retry));
    assert_eq!(w.transport.alarm("j0"), Some(ms(retry)));
    // Repairing again finds the wake and changes nothing; a job without a
    // record, or whose record needs no wake, is left alone.
    assert_eq!(block_on(w.client.repair_wake("j0")).unwrap(), None);
    assert_eq!(block_on(w.client.repair_wake("j1")).unwrap(), None);
    assert_eq!(w.record("j1"), None);
    // The alarm brings the retry to the next tick, which runs it.
    let later = after + jiff::SignedDuration::from_secs(60);
    assert_eq!(w.transport.fire_alarms(later), ["j0"]);
    let (report, _) = w.tick_at(later);
    assert_eq!(report.work.jobs.len(), 1);
    assert_eq!(w.seen(), [("j0".to_string(), at("03:17:00"), 2)]);
    assert_eq!(w.record("j0").unwrap().wake_at, None);
    assert_eq!(w.transport.alarm("j0"), None);
}

#[test]
fn a_wake_the_tick_could_not_serve_is_kept_for_the_next_tick() {
    let w = World::new(1, 0, &["j0"]);
    w.tick("03:16:00");
    w.tick("03:17:00");
    let wake = w.record("j0").unwrap().wake_at.unwrap();
    w.transport.fire_alarms(wake);
    // The tick takes the wake but cannot reach the job's object.
    w.transport.0.refuse.borrow_mut().insert("j0".into());
    let (report, _) = w.tick("03:28:00");
    assert!(report.served[0].claim_error.is_some());
    w.transport.0.refuse.borrow_mut().clear();
    // The tick said so: the tick object kept the entry, and the next tick
    // serves it.
    assert_eq!(
        w.transport.woken(at("04:00:00")),
        [Woken {
            job: "j0".into(),
            at: wake
        }]
    );
    let (report, cost) = w.tick("03:29:00");
    assert_eq!(report.work.jobs.len(), 1);
    assert_eq!(cost, counts(&[("j0", 2), (TICK_OBJECT, 2)]));
    assert_eq!(w.seen().last().unwrap().2, 2, "the retry ran");
    assert!(w.transport.woken(at("04:00:00")).is_empty());
    assert_eq!(w.transport.alarm("j0"), None);
}

/// Should the tick object let a wake go that was not served (a tick that
/// reported it before the job's write), the job's own alarm, re-armed
/// when it sent the wake, sends it again.
#[test]
fn a_wake_let_go_unserved_is_sent_again_by_the_alarm() {
    let w = World::new(1, 0, &["j0"]);
    w.tick("03:16:00");
    w.tick("03:17:00");
    let wake = w.record("j0").unwrap().wake_at.unwrap();
    w.transport.fire_alarms(wake);
    // Another tick reads the wake and reports it served without serving
    // it (what a Worker would do if it ignored `not_served`).
    let index = TickClient::new(&w.transport);
    let start = block_on(index.tick_start(at("03:28:00"), 10)).unwrap();
    assert_eq!(start.woken, ["j0"]);
    block_on(index.tick_end(at("03:28:00"))).unwrap();
    assert!(w.transport.woken(at("04:00:00")).is_empty());
    let reminder = wake.checked_add(WAKE_REMINDER).unwrap();
    assert_eq!(w.transport.alarm("j0"), Some(ms(reminder)));
    assert!(
        w.transport
            .fire_alarms(wake + jiff::SignedDuration::from_secs(60))
            .is_empty()
    );
    let reminded = reminder + jiff::SignedDuration::from_millis(1);
    assert_eq!(w.transport.fire_alarms(reminded), ["j0"]);
    assert_eq!(
        w.transport.woken(at("04:00:00")),
        [Woken {
            job: "j0".into(),
            at: wake
        }]
    );
    let (report, cost) = w.tick_at(reminded + jiff::SignedDuration::from_secs(1));
    assert_eq!(report.work.jobs.len(), 1);
    assert_eq!(cost, counts(&[("j0", 2), (TICK_OBJECT, 2)]));
    assert_eq!(w.seen().last().unwrap().2, 2, "the retry ran");
    assert_eq!(w.transport.alarm("j0"), None);
}

/// A Worker serves at most `max_jobs_per_tick` jobs per tick (its
/// subrequests are bounded): the rest, planned or woken, are the next
/// tick's, and nothing is lost.
#[test]
fn a_bounded_tick_leaves_the_rest_to_the_next() {
    // j0..j5 every minute, j6 daily at 03:17, failing its first attempt.
    let w = World::new(10, 6, &["j6"]);
    w.tick("03:16:00");
    w.tick("03:17:00");
    let wake = w.record("j6").unwrap().wake_at.expect("a retry");
    assert_eq!(w.transport.fire_alarms(wake), ["j6"]);
    // The next whole minute: six planned jobs and one woken, three per
    // tick, planned ones first.
    let minute = wake.as_second() / 60 * 60 + 60;
    let mut time = Timestamp::from_second(minute).unwrap();
    w.max_jobs.set(Some(3));
    let before = w.seen().len();
    let mut served = Vec::new();
    loop {
        let (report, cost) = w.tick_at(time);
        assert!(report.served.len() <= 3);
        assert!(cost.values().sum::<u64>() <= 2 * 3 + 2, "{cost:?}");
        served.push(report.served.len());
        if report.left.is_none() {
            break;
        }
        time += jiff::SignedDuration::from_secs(10);
        assert!(served.len() < 5, "the ticks keep up: {served:?}");
    }
    assert_eq!(served, [3, 3, 1]);
    // Each minutely job ran once, at the minute; j6's retry ran.
    let ran: Vec<(String, Timestamp, u32)> = w.seen()[before..].to_vec();
    assert_eq!(ran.len(), 7, "{ran:?}");
    let at_minute = Timestamp::from_second(minute).unwrap();
    for j in 0..6 {
        let name = format!("j{j}");
        let runs: Vec<_> = ran.iter().filter(|(n, _, _)| *n == name).collect();
        assert_eq!(runs.len(), 1, "{name}: {ran:?}");
        assert_eq!(runs[0].1, at_minute, "{name}");
    }
    assert!(
        ran.contains(&("j6".to_string(), at("03:17:00"), 2)),
        "{ran:?}"
    );
    assert!(w.transport.woken(at("05:00:00")).is_empty());
}

/// A job whose first slot comes in a bounded tick that leaves it still
/// runs that slot: the tick object keeps it at its slot, and the next tick
/// plans it there, so its record is created just before the slot rather
/// than at the tick that serves it.
#[test]
fn a_job_first_due_in_a_bounded_tick_still_runs_its_slot() {
    // j0..j5 every minute; j6 daily at 03:17, with no record before then.
    let w = World::new(10, 6, &[]);
    w.tick("03:16:00");
    assert!(w.record("j6").is_none());
    w.max_jobs.set(Some(3));
    let mut served = Vec::new();
    for time in ["03:17:00", "03:17:10", "03:17:20"] {
        let (report, _) = w.tick(time);
        served.push(report.served.len());
    }
    assert_eq!(served, [3, 3, 1]);
    let slot = at("03:17:00");
    let ran: Vec<_> = w
        .seen()
        .into_iter()
        .filter(|(job, _, _)| job == "j6")
        .collect();
    assert_eq!(ran, [("j6".to_string(), slot, 1)], "its first slot ran");
    assert!(w.record("j6").unwrap().created_at < slot);
    // Nothing is left: the next tick costs two requests.
    let (_, cost) = w.tick("03:17:30");
    assert_eq!(cost, counts(&[(TICK_OBJECT, 2)]));
}

#[test]
fn a_wake_the_tick_object_did_not_get_is_sent_again_a_minute_later() {
    let w = World::new(1, 0, &["j0"]);
    w.tick("03:16:00");
    w.tick("03:17:00");
    let wake = w.record("j0").unwrap().wake_at.unwrap();
    let fired = wake + jiff::SignedDuration::from_millis(1);
    w.transport.0.refuse.borrow_mut().insert(TICK_OBJECT.into());
    assert_eq!(w.transport.fire_alarms(fired), ["j0"]);
    w.transport.0.refuse.borrow_mut().clear();
    let again = fired.checked_add(cronslot_cf::WAKE_RETRY).unwrap();
    assert_eq!(w.transport.alarm("j0"), Some(ms(again)));
    assert!(w.transport.woken(at("04:00:00")).is_empty());
    assert_eq!(w.transport.fire_alarms(again), ["j0"]);
    assert_eq!(w.transport.woken(at("04:00:00")).len(), 1);
}

#[test]
fn an_alarm_before_a_later_wake_rearms_to_it() {
    let w = World::new(1, 0, &["j0"]);
    w.tick("03:16:00");
    w.tick("03:17:00");
    let wake = w.record("j0").unwrap().wake_at.unwrap();
    // An alarm that fires early (a stale one) sends nothing and re-arms.
    let (object, alarm) = w.transport.object("j0");
    alarm.0.borrow_mut().at = None;
    let early = wake - jiff::SignedDuration::from_secs(2);
    assert_eq!(object.alarm_start(early).unwrap(), AlarmStep::Rearmed);
    assert_eq!(w.transport.alarm("j0"), Some(ms(wake)));
    // No wake at all: nothing.
    let (idle, _) = w.transport.object("j-none");
    assert_eq!(
        idle.alarm_start(at("03:17:05")).unwrap(),
        AlarmStep::Nothing
    );
}

/// The tick object's operations by hand: the mark never moves back; a
/// wake replaces the job's entry; `tick_end` removes only entries whose
/// wake is the one served; `tick_start` returns what is due, earliest
/// first, at most the limit.
#[test]
fn the_tick_objects_operations() {
    let t = Transport_::default();
    let index = TickClient::new(&t);
    let start = |now: &str, limit| block_on(index.tick_start(at(now), limit)).unwrap();
    let wake = |job: &str, time: &str| {
        block_on(index.wake(vec![Woken {
            job: job.into(),
            at: at(time),
        }]))
        .unwrap()
    };
    assert_eq!(start("01:00:00", 10).mark, None);
    block_on(index.tick_end(at("01:00:00"))).unwrap();
    block_on(index.tick_end(at("00:59:00"))).unwrap();
    assert_eq!(start("01:00:00", 10).mark, Some(at("01:00:00")));
    wake("b", "01:02:00");
    wake("a", "01:03:00");
    wake("c", "01:01:00");
    wake("late", "09:00:00");
    assert_eq!(start("01:05:00", 10).woken, ["c", "b", "a"]);
    assert_eq!(start("01:05:00", 2).woken, ["c", "b"]);
    assert_eq!(start("01:02:00", 10).woken, ["c", "b"], "at or before now");
    // A newer wake replaces the job's entry (the record's wake is the
    // newest its object sent).
    wake("a", "01:00:30");
    assert_eq!(start("01:05:00", 10).woken, ["a", "c", "b"]);
    // A tick took a, c and b; meanwhile b's object sent a newer wake: the
    // end removes a and c, and b's newer entry stays.
    start("01:05:00", 10);
    wake("b", "01:04:00");
    block_on(index.tick_end(at("01:05:00"))).unwrap();
    assert_eq!(
        t.woken(at("10:00:00")),
        [
            Woken {
                job: "b".into(),
                at: at("01:04:00")
            },
            Woken {
                job: "late".into(),
                at: at("09:00:00")
            }
        ]
    );
    assert_eq!(start("01:05:00", 10).mark, Some(at("01:05:00")));
}

/// The dynamic job `tenant` (with `lease`) over `objects` schedule
/// objects: its template, the transport, the client, and the job's
/// function, which notes each run's key, slot and attempt in `seen`.
fn tenants(
    lease: &str,
    objects: u32,
) -> (
    Rc<cronslot_core::manifest::JobTemplate>,
    Transport_,
    Rc<ObjectClient<Transport_>>,
    Seen,
    Jobs,
) {
    let manifest = parse_manifest(
        &format!(
            "[[job]]\nname = \"tenant\"\ndynamic = true\nlease = \"{lease}\"\nskew_margin = \"5s\"\n"
        ),
        "t.toml",
    )
    .unwrap();
    let template = Rc::new(manifest.templates[0].clone());
    let transport = Transport_::default();
    let client = Rc::new(ObjectClient::new(transport.clone()).with_schedule_objects(objects));
    let seen: Seen = Seen::default();
    let jobs = {
        let seen = Arc::clone(&seen);
        Jobs::new().register("tenant", move |ctx| {
            seen.lock().unwrap().push((
                ctx.key().unwrap_or("no key").to_string(),
                ctx.scheduled_at(),
                ctx.attempt(),
            ));
            async { Ok(()) }
        })
    };
    (template, transport, client, seen, jobs)
}

/// A dynamic job's schedules on Durable Objects cost what a static job's
/// slots do plus the read of each due schedule's spec: one read and two
/// writes per run, in the object its key hashes to, and two requests to
/// the tick object. The objects' alarms send their schedules' wakes in one
/// request each, however many are due in the object; the schedules not
/// due cost nothing.
#[test]
fn a_tick_costs_three_requests_per_due_schedule_and_two_more() {
    use cronslot_cf::protocol::schedule_object;
    use cronslot_core::coord::Schedules;
    use cronslot_core::coord::decide::Precondition;
    use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};

    let (template, transport, client, seen, jobs) = tenants("1m", 4);
    let written: Timestamp = "2026-03-02T08:00:00Z".parse().unwrap();
    // Ten schedules due at 09:00, a hundred at 10:00.
    let keys: Vec<(String, &str)> = (0..110)
        .map(|i| {
            let cron = if i < 10 { "0 9 * * *" } else { "0 10 * * *" };
            (format!("t-{i}"), cron)
        })
        .collect();
    for (key, cron) in &keys {
        let spec = ScheduleSpec::from_json(&format!(r#"{{"cron": "{cron}", "timezone": "UTC"}}"#))
            .unwrap();
        let key = ScheduleKey::new(key).unwrap();
        block_on(client.put_schedule(&template, &key, spec, Precondition::None, written)).unwrap();
    }
    let plan = TickPlan::new(Vec::new(), |_| true).with_templates(vec![template.clone()]);
    let platform = VirtualPlatform::new(written);
    let tick_at = |time: Timestamp| {
        platform.set(time);
        let before = transport.requests();
        let as_platform: Rc<dyn Platform> = Rc::new(platform.clone());
        let more_due = |spec: &JobSpec, now: Timestamp| {
            client.more_due(&spec.record_name(), now, Duration::ZERO)
        };
        let options = TickOptions {
            owner: "w",
            max_jobs: None,
            retry_within: Duration::ZERO,
            more_due: Some(&more_due),
        };
        let index = TickClient::new(&transport);
        let report = block_on(tick(&plan, &client, &index, &jobs, &as_platform, &options))
            .expect("the tick starts");
        (report, transport.since(&before))
    };
    let (_, cost) = tick_at("2026-03-02T08:59:00Z".parse().unwrap());
    assert_eq!(cost, counts(&[(TICK_OBJECT, 2)]), "nothing due");

    let nine: Timestamp = "2026-03-02T09:00:00Z".parse().unwrap();
    let before = transport.requests();
    let fired = transport.fire_alarms(nine);
    let holding: std::collections::BTreeSet<String> = keys[..10]
        .iter()
        .map(|(key, _)| schedule_object("tenant", key, 4))
        .collect();
    assert_eq!(
        fired
            .iter()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>(),
        holding,
        "the objects holding a schedule due at 09:00 fire, once each"
    );
    let alarms = transport.since(&before);
    assert_eq!(
        alarms.get(TICK_OBJECT).copied(),
        Some(holding.len() as u64),
        "one request to the tick object per object, not per schedule: {alarms:?}"
    );

    let (report, cost) = tick_at(nine);
    assert_eq!(report.served.len(), 10, "{report:?}");
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for (key, _) in &keys[..10] {
        *expected
            .entry(schedule_object("tenant", key, 4))
            .or_default() += 3;
    }
    expected.insert(TICK_OBJECT.to_string(), 2);
    assert_eq!(cost, expected);
    assert_eq!(cost.values().sum::<u64>(), 3 * 10 + 2);
    let mut ran: Vec<(String, Timestamp, u32)> = seen.lock().unwrap().clone();
    ran.sort();
    let mut due: Vec<(String, Timestamp, u32)> = keys[..10]
        .iter()
        .map(|(k, _)| (k.clone(), nine, 1))
        .collect();
    due.sort();
    assert_eq!(ran, due, "each schedule due at 09:00 ran its slot once");
    // Between two minutes nothing is due: two requests.
    let (_, cost) = tick_at("2026-03-02T09:00:40Z".parse().unwrap());
    assert_eq!(cost, counts(&[(TICK_OBJECT, 2)]));
}

/// A burst on Durable Objects: 1,000 schedules due at the same minute,
/// spread over 16 objects and written in bulk (one request per object),
/// served by ticks bounded at 240 jobs each (a
/// Worker's subrequests): five ticks, a minute apart, work through it, and
/// each schedule runs its slot once (the rest keep their wakes in the tick
/// object from one tick to the next).
#[test]
fn bounded_ticks_work_through_a_burst_of_schedules() {
    use cronslot_core::coord::decide::Precondition;
    use cronslot_core::coord::{SchedulePut, Schedules};
    use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};

    let (template, transport, client, seen, jobs) = tenants("5m", 16);
    let written: Timestamp = "2026-03-02T09:00:00Z".parse().unwrap();
    let spec = ScheduleSpec::from_json(r#"{"cron": "0 10 * * *"}"#).unwrap();
    let puts = (0..1_000)
        .map(|i| SchedulePut {
            key: ScheduleKey::new(format!("t-{i:04}")).unwrap(),
            spec: spec.clone(),
            precondition: Precondition::None,
        })
        .collect();
    let before = transport.requests();
    for answer in block_on(client.put_schedules(&template, puts, written)) {
        answer.unwrap();
    }
    // The bulk write: one request to each of the 16 objects, not 1,000.
    let sent = transport.since(&before);
    assert_eq!(
        (sent.len(), sent.values().sum::<u64>()),
        (16, 16),
        "{sent:?}"
    );
    let plan = TickPlan::new(Vec::new(), |_| true).with_templates(vec![template.clone()]);
    let platform = VirtualPlatform::new(written);
    let ten: Timestamp = "2026-03-02T10:00:00Z".parse().unwrap();
    let mut ticks = 0;
    let mut served = Vec::new();
    for minute in 0..10 {
        let now = ten + jiff::SignedDuration::from_secs(60 * minute + 1);
        transport.fire_alarms(now);
        platform.set(now);
        let as_platform: Rc<dyn Platform> = Rc::new(platform.clone());
        let options = TickOptions {
            owner: "w",
            max_jobs: Some(240),
            retry_within: Duration::ZERO,
            more_due: None,
        };
        let index = TickClient::new(&transport);
        let report = block_on(tick(&plan, &client, &index, &jobs, &as_platform, &options))
            .expect("the tick starts");
        ticks += 1;
        served.push(report.served.len());
        if seen.lock().unwrap().len() == 1_000 {
            break;
        }
    }
    assert_eq!(served, [240, 240, 240, 240, 40], "five bounded ticks");
    assert_eq!(ticks, 5);
    let mut ran: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(k, _, _)| k.clone())
        .collect();
    ran.sort();
    ran.dedup();
    assert_eq!(ran.len(), 1_000, "each schedule once");
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .all(|(_, slot, attempt)| *slot == ten && *attempt == 1)
    );
}
