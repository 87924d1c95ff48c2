//! Fuzzing the Cloudflare side's decoders (issue 7, "Reliability").
//!
//! - The Durable Object's request decoding and handling
//!   (`JobObject::handle_text`, the body the Worker sends): arbitrary text,
//!   arbitrary JSON, structurally mutated valid requests, and sequences of
//!   valid requests of every operation with edge values (instants at
//!   jiff's limits, fences 0 and `u64::MAX`, `hold_ms = u64::MAX`, large
//!   values, backfill ranges of ten thousand years), over a real in-memory
//!   SQLite as in `object_native.rs`. Properties: no panic, within
//!   [`CASE_BUDGET`]; the answer is always an `ObjectReply` in JSON; a body
//!   that is not a request gets `bad_request` naming why; a successful
//!   answer is the kind its operation gives; backfill and redrive return
//!   ascending slots of the job, at most `MAX_BACKFILL`.
//! - The tick object's operations against a model (a mark that only moves
//!   forward, one entry per job replaced by each wake, `tick_end` removing
//!   only the entries served at their stored wake, `tick_start` giving what
//!   is due, earliest first, at most the limit), and a tick operation sent
//!   to a job's object or a job's operation to the tick object refused.
//! - A job object's alarm follows its record's wake: after any request,
//!   the alarm was set to the new wake (or deleted) exactly when the
//!   record's wake changed.
//! - A dynamic job's keyed runs on a schedule object: sequences of
//!   `enqueue_run` (valid, odd and arbitrary bodies), `run_status` and
//!   `read_schedule_for_claim` at any instant get an answer of their kind
//!   or an error, never a panic; an enqueue of the same request again
//!   names the same run.
//! - The wire types round-trip through JSON.
//! - `spec_text::decode_spec` on arbitrary text and mutated encoded specs:
//!   no panic; an accepted spec re-encodes to itself.
//! - `dispatch::dispatch` with any cron string and instant: no panic; the
//!   tick (in any spacing and case) serves every job; an unknown cron is
//!   served like a tick and flagged; a dedicated cron serves only jobs
//!   whose Cloudflare translation it is.
//!
//! Case counts keep the file under ~20 s in a debug build; set
//! `PROPTEST_CASES` for a long run.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cronslot_cf::JobObject;
use cronslot_cf::dispatch::{TICK_CRON, dedicated_cron, dispatch};
use cronslot_cf::protocol::{
    Answer, ObjectReply, ObjectRequest, Op, TICK_OBJECT, WireError, Woken,
};
use cronslot_cf::spec_text::{decode_spec, encode_spec};
use cronslot_cf::sql::{Alarm, SqlError};
use cronslot_core::coord::decide::MAX_BACKFILL;
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{Trigger, encode_state};
use cronslot_core::manifest::{JobSpec, Manifest, parse_manifest};
use cronslot_tests::sim_backends::RusqliteSql;
use jiff::Timestamp;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{Value, json};

const CASE_BUDGET: Duration = Duration::from_secs(10);

fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x7_F022_CF01),
        failure_persistence: None,
        max_shrink_iters: 500,
        ..Config::default()
    }
}

// ------------------------------------------------------------ the object

fn object() -> JobObject<RusqliteSql> {
    JobObject::new(RusqliteSql::in_memory().expect("sqlite"), 7)
}

/// Serves `body`, checking the answer is an `ObjectReply` and in time.
fn serve<A: Alarm>(
    object: &JobObject<RusqliteSql, A>,
    body: &str,
) -> Result<ObjectReply, TestCaseError> {
    let started = Instant::now();
    let answer = block_on(object.handle_text(body));
    let took = started.elapsed();
    let shown: String = body.chars().take(300).collect();
    prop_assert!(took < CASE_BUDGET, "{shown} took {took:?}");
    serde_json::from_str::<ObjectReply>(&answer)
        .map_err(|e| TestCaseError::fail(format!("{shown} answered {answer}: {e}")))
}

/// A body that is not a request is refused as such.
fn check_refused(object: &JobObject<RusqliteSql>, body: &str) -> Result<(), TestCaseError> {
    let reply = serve(object, body)?;
    if serde_json::from_str::<ObjectRequest>(body).is_err() {
        match reply {
            Err(WireError::BadRequest { message }) => {
                prop_assert!(!message.is_empty());
                prop_assert!(
                    message.starts_with("not a cronslot object request")
                        || message.contains("bytes, more than"),
                    "{message}"
                );
            }
            other => prop_assert!(false, "{body:?} → {other:?}"),
        }
    }
    Ok(())
}

/// A successful answer is the kind its operation gives.
fn check_answer(spec: &JobSpec, op: &Op, answer: &Answer) -> Result<(), TestCaseError> {
    let fits = matches!(
        (op, answer),
        (Op::Claim { .. }, Answer::Claim(_))
            | (Op::Complete { .. }, Answer::Completed { .. })
            | (Op::Fail { .. }, Answer::Failed { .. })
            | (Op::Heartbeat { .. }, Answer::Expiry(_))
            | (Op::Checkpoint { .. }, Answer::Done)
            | (Op::Status { .. }, Answer::State(_))
            | (Op::Record, Answer::Record(_))
            | (Op::Pause { .. }, Answer::Done)
            | (Op::Resume { .. }, Answer::Done)
            | (Op::Redrive { .. }, Answer::Slots(_))
            | (Op::Backfill { .. }, Answer::Slots(_))
            | (Op::BeginEffect { .. }, Answer::EffectBegin(_))
            | (Op::FinishEffect { .. }, Answer::EffectFinish(_))
            | (Op::ReadEffect { .. }, Answer::Effect(_))
    );
    prop_assert!(fits, "{} answered {answer:?}", op.name());
    if let (Op::Backfill { from, to, .. }, Answer::Slots(slots)) = (op, answer) {
        prop_assert!(slots.len() <= MAX_BACKFILL);
        prop_assert!(slots.windows(2).all(|w| w[0] < w[1]), "{slots:?}");
        for s in slots {
            prop_assert!(from <= s && s <= to && spec.schedule.is_slot(*s), "{s}");
        }
    }
    if let Answer::Slots(slots) = answer {
        prop_assert!(slots.windows(2).all(|w| w[0] < w[1]), "{slots:?}");
    }
    Ok(())
}

// ------------------------------------------------------------ specs

const MANIFEST: &str = r#"
[[job]]
name = "plain"
schedule = "*/5 * * * *"

[[job]]
name = "dst-strict"
schedule = "30 2 * * *"
timezone = "America/New_York"
dst_gap = "skip"
dst_overlap = "twice"
trigger = "dedicated"
catch_up = "all"
max_catch_up = 7
overlap = "allow"
max_concurrency = 3
delivery = "at_most_once"
start_at = "2026-01-01T00:00:00Z"
end_at = "2027-01-01T00:00:00Z"
history = { succeeded = 4, failed = 9 }
retry = { max_attempts = 5, backoff = "10s", max_backoff = "1h" }

[[job]]
name = "weekday-nine"
schedule = "0 9 * * MON-FRI"
trigger = "dedicated"
overlap = "replace"

[[job]]
name = "leap-day"
schedule = "0 0 29 2 *"
trigger = "dedicated"
catch_up = "all"

[[job]]
name = "greedy"
schedule = "* * * * *"
catch_up = "all"
max_catch_up = 4294967295
starting_deadline = "1d"
lease = "36500d"
history = { succeeded = 100, failed = 100 }
retry = { max_attempts = 4294967295, backoff = "1s", max_backoff = "36500d", past_next_slot = true }
"#;

fn manifest() -> &'static Manifest {
    static M: OnceLock<Manifest> = OnceLock::new();
    M.get_or_init(|| parse_manifest(MANIFEST, "fuzz.toml").expect("fuzz manifest"))
}

fn encoded_specs() -> &'static [String] {
    static S: OnceLock<Vec<String>> = OnceLock::new();
    S.get_or_init(|| manifest().jobs.iter().map(encode_spec).collect())
}

// ------------------------------------------------------------ strategies

fn sec(s: &str) -> i64 {
    s.parse::<Timestamp>().expect("instant").as_second()
}

/// Instants within 400 days of 2026-03-08.
fn near_instant() -> BoxedStrategy<Timestamp> {
    let base = sec("2026-03-08T06:00:00Z");
    (-86_400i64 * 400..86_400 * 400)
        .prop_map(move |s| Timestamp::from_second(base + s).unwrap())
        .boxed()
}

/// Instants near 2026 (often on the minute), anywhere, and at the limits.
fn instant() -> BoxedStrategy<Timestamp> {
    let base = sec("2026-03-08T06:00:00Z");
    prop_oneof![
        6 => (-2_000i64..2_000).prop_map(move |m| Timestamp::from_second(base + m * 60).unwrap()),
        2 => (-86_400i64 * 400..86_400 * 400)
            .prop_map(move |s| Timestamp::from_second(base + s).unwrap()),
        1 => (Timestamp::MIN.as_second()..=Timestamp::MAX.as_second())
            .prop_map(|s| Timestamp::from_second(s).unwrap()),
        1 => prop::sample::select(vec![
            Timestamp::MIN,
            Timestamp::MAX,
            Timestamp::UNIX_EPOCH,
            Timestamp::from_second(Timestamp::MAX.as_second() - 59).unwrap(),
        ]),
    ]
    .boxed()
}

fn fence() -> BoxedStrategy<u64> {
    prop_oneof![4 => 0u64..6, 1 => Just(u64::MAX), 1 => any::<u64>()].boxed()
}

fn text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(&["w", "", "k", "ok", "ünï", "a\u{0}b"][..]).prop_map(str::to_string),
        1 => ".{0,40}",
        1 => (1usize..200_000).prop_map(|n| "x".repeat(n)),
    ]
    .boxed()
}

fn op() -> BoxedStrategy<Op> {
    let trigger = prop_oneof![Just(Trigger::Tick), instant().prop_map(Trigger::Slot)];
    prop_oneof![
        4 => (instant(), trigger, text()).prop_map(|(now, trigger, owner)| Op::Claim { now, trigger, owner }),
        2 => (fence(), prop::option::of(text()), instant())
            .prop_map(|(fence, result, now)| Op::Complete { fence, result, now }),
        2 => (fence(), text(), any::<bool>(), instant())
            .prop_map(|(fence, error, permanent, now)| Op::Fail { fence, error, permanent, now }),
        1 => (fence(), instant()).prop_map(|(fence, now)| Op::Heartbeat { fence, now }),
        1 => (fence(), text(), instant()).prop_map(|(fence, value, now)| Op::Checkpoint { fence, value, now }),
        1 => instant().prop_map(|now| Op::Status { now }),
        1 => Just(Op::Record),
        1 => instant().prop_map(|now| Op::Pause { now }),
        1 => instant().prop_map(|now| Op::Resume { now }),
        1 => (prop::option::of(instant()), instant()).prop_map(|(slot, now)| Op::Redrive { slot, now }),
        // `to` and `now` stay near the cursor until the backfill walk is
        // bounded (see `backfill_far_past_the_cursor_is_bounded`).
        2 => (instant(), near_instant(), near_instant(), any::<bool>())
            .prop_map(|(from, to, now, dry_run)| Op::Backfill { from, to, now, dry_run }),
        1 => (text(), text(), fence(), instant(), prop_oneof![Just(0u64), Just(60_000), Just(u64::MAX), any::<u64>()])
            .prop_map(|(key, owner, fence, now, hold_ms)| Op::BeginEffect { key, owner, fence, now, hold_ms }),
        1 => (text(), fence(), text(), instant())
            .prop_map(|(key, fence, result, now)| Op::FinishEffect { key, fence, result, now }),
        1 => text().prop_map(|key| Op::ReadEffect { key }),
    ]
    .boxed()
}

fn job_index() -> BoxedStrategy<usize> {
    (0..manifest().jobs.len()).boxed()
}

fn request(job: usize, op: Op) -> ObjectRequest {
    ObjectRequest {
        protocol: cronslot_cf::protocol::PROTOCOL_VERSION,
        job: manifest().jobs[job].name.as_str().to_string(),
        spec: encoded_specs()[job].clone(),
        op,
        schedule: None,
    }
}

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(
            &[
                "claim",
                "record",
                "status",
                "backfill",
                "tick",
                "Tick",
                "2026-01-01T00:00:00Z",
                "9999-12-31T23:59:59Z",
                "-009999-01-01T00:00:00Z",
                "",
                "plain",
            ][..]
        )
        .prop_map(|s| Value::String(s.into())),
        ".{0,12}".prop_map(Value::String),
    ]
    .boxed()
}

fn key() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(&[
            "job", "spec", "op", "now", "trigger", "owner", "fence", "result", "error",
            "permanent", "value", "slot", "from", "to", "dry_run", "key", "hold_ms", "Slot",
        ][..]).prop_map(str::to_string),
        1 => ".{0,6}",
    ]
    .boxed()
}

fn any_json() -> BoxedStrategy<Value> {
    cronslot_tests::fuzz::json_tree(leaf(), key(), 40, 5)
}

/// Replaces one value (picked by a pre-order index) of `v` with `new`.
fn replace_nth(v: &mut Value, n: &mut usize, new: &Value) -> bool {
    if *n == 0 {
        *v = new.clone();
        return true;
    }
    *n -= 1;
    match v {
        Value::Object(m) => m.values_mut().any(|c| replace_nth(c, n, new)),
        Value::Array(a) => a.iter_mut().any(|c| replace_nth(c, n, new)),
        _ => false,
    }
}

fn count(v: &Value) -> usize {
    1 + match v {
        Value::Object(m) => m.values().map(count).sum(),
        Value::Array(a) => a.iter().map(count).sum(),
        _ => 0,
    }
}

// ------------------------------------------------------------ properties

proptest! {
    #![proptest_config(config(400))]

    #[test]
    fn arbitrary_bodies_are_refused_as_bad_requests(body in prop_oneof![
        ".{0,200}",
        any_json().prop_map(|v| v.to_string()),
        any_json().prop_map(|v| json!({ "job": "plain", "spec": encoded_specs()[0], "op": v }).to_string()),
    ]) {
        check_refused(&object(), &body)?;
    }

    #[test]
    fn mutated_requests_get_json_answers(
        job in job_index(),
        op in op(),
        edits in prop::collection::vec((any::<usize>(), any_json()), 1..3),
    ) {
        let mut v = serde_json::to_value(request(job, op)).expect("encodes");
        for (at, new) in &edits {
            let mut n = at % count(&v);
            replace_nth(&mut v, &mut n, new);
        }
        let o = object();
        check_refused(&o, &v.to_string())?;
    }

    #[test]
    fn requests_round_trip_through_json(job in job_index(), op in op()) {
        let r = request(job, op);
        let text = serde_json::to_string(&r).expect("encodes");
        prop_assert_eq!(serde_json::from_str::<ObjectRequest>(&text).ok(), Some(r));
    }
}

proptest! {
    #![proptest_config(config(150))]

    /// Sequences of valid requests of any operation, on one object: every
    /// answer is a reply of the right kind, whatever the values. The
    /// sequence runs in a thread, so a hang fails the case.
    #[test]
    fn request_sequences_get_answers_of_their_kind(
        job in job_index(),
        ops in prop::collection::vec(op(), 1..8),
    ) {
        let spec = &manifest().jobs[job];
        let answers = run_bounded(job, ops.clone(), CASE_BUDGET);
        let Some(answers) = answers else {
            // Printed at once: shrinking a hang takes a budget per step.
            eprintln!("HANG {}: {:?}", spec.name.as_str(), ops.iter().map(shorten).collect::<Vec<_>>());
            return Err(TestCaseError::fail(format!(
                "{} ops on {} did not finish within {CASE_BUDGET:?}: {:?}",
                ops.len(),
                spec.name.as_str(),
                ops.iter().map(shorten).collect::<Vec<_>>()
            )));
        };
        for (op, answer) in ops.iter().zip(&answers) {
            let reply = serde_json::from_str::<ObjectReply>(answer)
                .map_err(|e| TestCaseError::fail(format!("{} answered {answer}: {e}", op.name())))?;
            match reply {
                Ok(answer) => check_answer(spec, op, &answer)?,
                Err(WireError::BadRequest { message }) => {
                    // Only a body over the object's limit is refused here.
                    prop_assert!(message.contains("bytes, more than"), "{message}");
                }
                Err(_) => {}
            }
        }
    }
}

proptest! {
    #![proptest_config(config(600))]

    #[test]
    fn decode_spec_never_panics_and_round_trips(
        which in job_index(),
        edits in prop::collection::vec((any::<usize>(), prop::option::of(any::<char>())), 0..4),
        arbitrary in prop::option::weighted(0.2, ".{0,200}"),
    ) {
        let text = arbitrary.unwrap_or_else(|| {
            let mut chars: Vec<char> = encoded_specs()[which].chars().collect();
            for (at, c) in &edits {
                let i = at % (chars.len() + 1);
                match c {
                    Some(c) => chars.insert(i, *c),
                    None if i < chars.len() => {
                        chars.remove(i);
                    }
                    None => {}
                }
            }
            chars.into_iter().collect()
        });
        match decode_spec(&text) {
            Ok(spec) => {
                let again = decode_spec(&encode_spec(&spec));
                prop_assert_eq!(again.as_ref(), Ok(&spec));
            }
            Err(e) => prop_assert!(!e.is_empty()),
        }
    }

    #[test]
    fn json_mutated_specs(which in job_index(), at in any::<usize>(), new in any_json()) {
        let mut v: Value = serde_json::from_str(&encoded_specs()[which]).expect("json");
        let mut n = at % count(&v);
        replace_nth(&mut v, &mut n, &new);
        match decode_spec(&v.to_string()) {
            Ok(spec) => {
                let again = decode_spec(&encode_spec(&spec));
                prop_assert_eq!(again.as_ref(), Ok(&spec));
            }
            Err(e) => prop_assert!(!e.is_empty()),
        }
    }

    #[test]
    fn dispatch_serves_every_cron_string(
        cron in prop_oneof![
            ".{0,30}",
            "[0-9*/,\\- A-Za-z?#L]{0,30}",
            prop::sample::select(&[
                "* * * * *", "*  *\t* * *", " * * * * * ", "0 9 * * 2-6", "0 9 * * mon-fri",
                "0 0 29 2 *", "30 2 * * *", "*/5 * * * *", "", "\u{0}",
            ][..]).prop_map(str::to_string),
        ],
        scheduled in instant(),
    ) {
        let m = manifest();
        let d = dispatch(m, &cron, scheduled);
        let is_tick = cron.split_whitespace().collect::<Vec<_>>().join(" ") == TICK_CRON;
        if is_tick || d.unknown_cron {
            prop_assert!(!(is_tick && d.unknown_cron));
            prop_assert_eq!(d.jobs.len(), m.jobs.len());
            prop_assert!(d.jobs.iter().all(|(_, t)| *t == Trigger::Tick));
        } else {
            prop_assert!(!d.jobs.is_empty());
            for (spec, t) in &d.jobs {
                prop_assert_eq!(*t, Trigger::Slot(scheduled));
                let own = dedicated_cron(spec).expect("served by a dedicated cron");
                let norm = |c: &str| c.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_uppercase();
                prop_assert_eq!(norm(&own), norm(&cron));
            }
        }
    }
}

/// The bodies that matter most, by hand: oversize, deep, and each op at
/// the instant limits.
#[test]
fn edge_requests() {
    let o = object();
    let big = "x".repeat(600 * 1024);
    let reply: ObjectReply = serde_json::from_str(&block_on(o.handle_text(&big))).unwrap();
    assert!(matches!(reply, Err(WireError::BadRequest { .. })));
    let deep = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
    let reply: ObjectReply = serde_json::from_str(&block_on(o.handle_text(&deep))).unwrap();
    assert!(matches!(reply, Err(WireError::BadRequest { .. })));
    // A backfill over all of jiff's range refuses by count, at once.
    let greedy = manifest()
        .jobs
        .iter()
        .position(|j| j.name.as_str() == "greedy")
        .unwrap();
    let started = Instant::now();
    let body = serde_json::to_string(&request(
        greedy,
        Op::Backfill {
            from: Timestamp::MIN,
            to: Timestamp::MAX,
            now: Timestamp::MAX,
            dry_run: true,
        },
    ))
    .unwrap();
    let reply: ObjectReply = serde_json::from_str(&block_on(o.handle_text(&body))).unwrap();
    assert!(matches!(reply, Err(WireError::Backfill(_))), "{reply:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// An operation as JSON, cut for messages.
fn shorten(op: &Op) -> String {
    serde_json::to_string(op)
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect()
}

/// Runs `ops` on a fresh object of `job` in a thread; `None` if they did
/// not finish within `budget` (a hang fails instead of stalling CI).
fn run_bounded(job: usize, ops: Vec<Op>, budget: Duration) -> Option<Vec<String>> {
    run_on_record(job, Vec::new(), ops, budget).map(|(_, answers)| answers)
}

/// Like [`run_bounded`], after storing a record built by a few real
/// operations and then damaged by `edits` (stored-record decoding: a record
/// from another version, a bit flip, a hand edit). Returns the damaged
/// record's text and the answers.
fn run_on_record(
    job: usize,
    edits: Vec<(usize, Value)>,
    ops: Vec<Op>,
    budget: Duration,
) -> Option<(String, Vec<String>)> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let o = object();
        let call = |op: Op| {
            let body = serde_json::to_string(&request(job, op)).expect("encodes");
            block_on(o.handle_text(&body))
        };
        let mut raw = String::new();
        if !edits.is_empty() {
            let t0: Timestamp = "2026-03-08T06:00:00Z".parse().expect("instant");
            let at = |m: i64| t0 + jiff::SignedDuration::from_mins(m);
            let owner = || "w".to_string();
            for op in [
                Op::Claim {
                    now: at(0),
                    trigger: Trigger::Tick,
                    owner: owner(),
                },
                Op::Claim {
                    now: at(61),
                    trigger: Trigger::Tick,
                    owner: owner(),
                },
                Op::Checkpoint {
                    fence: 1,
                    value: "cp".into(),
                    now: at(61),
                },
                Op::Fail {
                    fence: 1,
                    error: "boom".into(),
                    permanent: false,
                    now: at(62),
                },
                Op::Claim {
                    now: at(125),
                    trigger: Trigger::Tick,
                    owner: owner(),
                },
                Op::Complete {
                    fence: 2,
                    result: Some("ok".into()),
                    now: at(126),
                },
                Op::BeginEffect {
                    key: "k".into(),
                    owner: owner(),
                    fence: 2,
                    now: at(126),
                    hold_ms: 1,
                },
            ] {
                call(op);
            }
            let state = match serde_json::from_str::<ObjectReply>(&call(Op::Record)) {
                Ok(Ok(Answer::Record(Some(state)))) => *state,
                other => panic!("no record to damage: {other:?}"),
            };
            let mut v: Value = serde_json::from_str(&encode_state(&state)).expect("json");
            for (at, new) in &edits {
                let mut n = at % count(&v);
                replace_nth(&mut v, &mut n, new);
            }
            raw = v.to_string();
            let name = manifest().jobs[job].name.as_str();
            o.store().put_raw(name, &raw).expect("stored");
        }
        let answers = ops.into_iter().map(call).collect::<Vec<_>>();
        let _ = tx.send((raw, answers));
    });
    rx.recv_timeout(budget).ok()
}

/// Values a damaged record may hold where it had another.
fn record_value() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => any_json(),
        2 => instant().prop_map(|t| Value::String(t.to_string())),
        2 => prop::sample::select(&[0u64, 1, 2, 999, 1000, 1001, u64::MAX][..]).prop_map(Value::from),
        1 => Just(json!(-1)),
        1 => Just(Value::Array(vec![json!({}); 3])),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(config(120))]

    /// A damaged stored record is refused as corrupt or used, never a
    /// panic or a hang, and every answer is still a reply.
    #[test]
    fn damaged_stored_records_then_requests(
        job in job_index(),
        edits in prop::collection::vec((any::<usize>(), record_value()), 1..4),
        ops in prop::collection::vec(op(), 1..5),
    ) {
        let name = manifest().jobs[job].name.as_str();
        let Some((raw, answers)) = run_on_record(job, edits, ops.clone(), CASE_BUDGET) else {
            return Err(TestCaseError::fail(format!(
                "{name}: ops {:?} on a damaged record did not finish within {CASE_BUDGET:?}",
                ops.iter().map(shorten).collect::<Vec<_>>()
            )));
        };
        for (op, answer) in ops.iter().zip(&answers) {
            let reply = serde_json::from_str::<ObjectReply>(answer).map_err(|e| {
                TestCaseError::fail(format!("{} on {raw} answered {answer}: {e}", op.name()))
            })?;
            if let Ok(answer) = reply {
                check_answer(&manifest().jobs[job], op, &answer)?;
            }
        }
    }
}

/// Found by this file's long run (issue 7): with `catch_up = "all"`, a
/// huge `max_catch_up` and a long `starting_deadline`, the first claim after
/// an outage longer than the deadline walked back over every kept slot one
/// `prev_before` at a time (`fate_late_slots` in core/src/coord/decide/advance.rs):
/// 52 million steps for `* * * * *` with a 100-year deadline, beyond a
/// Worker's CPU limit, and again on every later claim. The boundary is now
/// found by counting (`last_fated`). (The bound detects a hang.)
#[test]
fn greedy_catch_up_after_a_long_outage_is_bounded() {
    let m = parse_manifest(
        "[[job]]\nname = \"greedy\"\nschedule = \"* * * * *\"\ncatch_up = \"all\"\n\
         max_catch_up = 4294967295\nstarting_deadline = \"36500d\"\n",
        "greedy.toml",
    )
    .expect("accepted today, with a warning");
    let spec = encode_spec(&m.jobs[0]);
    let t0: Timestamp = "2026-03-08T06:00:00Z".parse().unwrap();
    let later: Timestamp = "2200-03-08T06:00:00Z".parse().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let o = object();
        for now in [t0, later] {
            let body = serde_json::to_string(&ObjectRequest {
                protocol: cronslot_cf::protocol::PROTOCOL_VERSION,
                job: "greedy".into(),
                spec: spec.clone(),
                op: Op::Claim {
                    now,
                    trigger: Trigger::Tick,
                    owner: "w".into(),
                },
                schedule: None,
            })
            .unwrap();
            let _ = block_on(o.handle_text(&body));
        }
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(10)).is_ok(),
        "a claim after a 174-year outage took over 10 s"
    );
}

/// Found by `request_sequences_get_answers_of_their_kind` in the long run
/// (issue 7): `decide::backfill` walked every slot of `[from, to]`, passing
/// over those after the cursor instead of stopping, so a backfill whose `to`
/// (and `now`) lay far after the cursor walked them all: `*/5` from 2026 to
/// 9999 is 840 million slots in one request. It now stops at the first
/// slot after the cursor. (The bound detects a hang.)
#[test]
fn backfill_far_past_the_cursor_is_bounded() {
    let plain = manifest()
        .jobs
        .iter()
        .position(|j| j.name.as_str() == "plain")
        .unwrap();
    let t0: Timestamp = "2026-03-08T03:23:00Z".parse().unwrap();
    let far: Timestamp = "9999-12-30T22:00:00Z".parse().unwrap();
    let answers = run_bounded(
        plain,
        vec![
            Op::Claim {
                now: t0,
                trigger: Trigger::Tick,
                owner: "w".into(),
            },
            Op::Backfill {
                from: "2026-03-07T07:10:00Z".parse().unwrap(),
                to: far,
                now: far,
                dry_run: true,
            },
        ],
        Duration::from_secs(10),
    );
    let answers = answers.expect("a backfill to year 9999 took over 10 s");
    let reply: ObjectReply = serde_json::from_str(&answers[1]).unwrap();
    assert!(matches!(reply, Ok(Answer::Slots(_))), "{reply:?}");
}

// ------------------------------------------------------------ the tick object

fn woken() -> BoxedStrategy<Woken> {
    (
        prop::sample::select(vec!["a", "b", "c", "d"]),
        near_instant(),
    )
        .prop_map(|(job, at)| Woken {
            job: job.to_string(),
            at,
        })
        .boxed()
}

fn tick_op() -> BoxedStrategy<Op> {
    let limit = prop_oneof![Just(0usize), Just(1), Just(2), Just(usize::MAX)];
    prop_oneof![
        2 => (near_instant(), limit).prop_map(|(now, limit)| Op::TickStart { now, limit }),
        2 => (
            near_instant(),
            prop::collection::vec(woken(), 0..4),
            prop::collection::vec(woken(), 0..3),
        )
            .prop_map(|(mark, served, left)| Op::TickEnd { mark, served, left }),
        3 => woken().prop_map(|woken| Op::Wake { woken }),
    ]
    .boxed()
}

fn tick_request(op: Op) -> ObjectRequest {
    ObjectRequest {
        protocol: cronslot_cf::protocol::PROTOCOL_VERSION,
        job: TICK_OBJECT.to_string(),
        spec: String::new(),
        op,
        schedule: None,
    }
}

/// An alarm that keeps its calls: `Some(ms)` set, `None` deleted.
#[derive(Clone, Default)]
struct Calls(std::rc::Rc<std::cell::RefCell<Vec<Option<i64>>>>);

impl Alarm for Calls {
    fn set(&self, at_ms: i64) -> Result<(), SqlError> {
        self.0.borrow_mut().push(Some(at_ms));
        Ok(())
    }

    fn delete(&self) -> Result<(), SqlError> {
        self.0.borrow_mut().push(None);
        Ok(())
    }
}

proptest! {
    #![proptest_config(config(300))]

    /// The tick object against a model of it.
    #[test]
    fn tick_object_ops_follow_the_model(ops in prop::collection::vec(tick_op(), 1..24)) {
        let o = object();
        let mut mark: Option<Timestamp> = None;
        let mut entries: std::collections::BTreeMap<String, Timestamp> = Default::default();
        let mut carried: std::collections::BTreeMap<String, Timestamp> = Default::default();
        for op in ops {
            let body = serde_json::to_string(&tick_request(op.clone())).expect("encodes");
            let reply = serve(&o, &body)?;
            match (&op, reply) {
                (Op::TickStart { now, limit }, Ok(Answer::Tick { mark: got, woken, carried: left })) => {
                    prop_assert_eq!(got, mark);
                    let mut due: Vec<(Timestamp, String)> = entries
                        .iter()
                        .filter(|(_, at)| *at <= now)
                        .map(|(job, at)| (*at, job.clone()))
                        .collect();
                    due.sort();
                    due.truncate(*limit);
                    let due: Vec<Woken> = due.into_iter().map(|(at, job)| Woken { job, at }).collect();
                    prop_assert_eq!(woken, due);
                    let mut kept: Vec<(Timestamp, String)> =
                        carried.iter().map(|(job, at)| (*at, job.clone())).collect();
                    kept.sort();
                    kept.truncate(*limit);
                    let kept: Vec<Woken> = kept.into_iter().map(|(at, job)| Woken { job, at }).collect();
                    prop_assert_eq!(left, kept);
                }
                (Op::TickEnd { mark: to, served, left }, Ok(Answer::Done)) => {
                    if mark.is_none_or(|m| m < *to) {
                        mark = Some(*to);
                    }
                    for w in served {
                        if entries.get(&w.job) == Some(&w.at) {
                            entries.remove(&w.job);
                        }
                        if carried.get(&w.job) == Some(&w.at) {
                            carried.remove(&w.job);
                        }
                    }
                    // A planned job left is kept at its slot, unless kept
                    // already.
                    for w in left {
                        carried.entry(w.job.clone()).or_insert(w.at);
                    }
                }
                (Op::Wake { woken }, Ok(Answer::Done)) => {
                    entries.insert(woken.job.clone(), woken.at);
                }
                (op, reply) => prop_assert!(false, "{} answered {reply:?}", op.name()),
            }
        }
    }

    /// Tick operations go to the tick object only, job operations to jobs'.
    #[test]
    fn tick_and_job_operations_do_not_mix(job in job_index(), op in op(), tick in tick_op()) {
        let o = object();
        let to_job = serde_json::to_string(&ObjectRequest { spec: encoded_specs()[job].clone(), ..request(job, tick.clone()) }).expect("encodes");
        let reply = serve(&o, &to_job)?;
        prop_assert!(matches!(reply, Err(WireError::BadRequest { .. })), "{reply:?}");
        let to_tick = serde_json::to_string(&ObjectRequest { job: TICK_OBJECT.into(), ..request(job, op) }).expect("encodes");
        let reply = serve(&o, &to_tick)?;
        prop_assert!(matches!(reply, Err(WireError::BadRequest { .. })), "{reply:?}");
        let text = serde_json::to_string(&tick_request(tick.clone())).expect("encodes");
        prop_assert_eq!(serde_json::from_str::<ObjectRequest>(&text).ok(), Some(tick_request(tick)));
    }

    /// After every request to a job's object, its alarm was set to the
    /// record's new wake, or deleted, exactly when the wake changed.
    #[test]
    fn the_alarm_follows_the_records_wake(
        job in job_index(),
        ops in prop::collection::vec(op(), 1..10),
    ) {
        let calls = Calls::default();
        let o = JobObject::with_alarm(RusqliteSql::in_memory().expect("sqlite"), calls.clone(), 7);
        let record_body = serde_json::to_string(&request(job, Op::Record)).expect("encodes");
        let wake = |o: &JobObject<RusqliteSql, Calls>| -> Result<Option<Timestamp>, TestCaseError> {
            match serve(o, &record_body)? {
                Ok(Answer::Record(r)) => Ok(r.and_then(|r| r.wake_at)),
                other => Err(TestCaseError::fail(format!("record answered {other:?}"))),
            }
        };
        let mut before = wake(&o)?;
        for op in ops {
            let body = serde_json::to_string(&request(job, op.clone())).expect("encodes");
            let started = Instant::now();
            let _ = block_on(o.handle_text(&body));
            prop_assert!(started.elapsed() < CASE_BUDGET);
            let after = wake(&o)?;
            let made: Vec<Option<i64>> = calls.0.borrow_mut().drain(..).collect();
            if after == before {
                prop_assert!(made.is_empty(), "{}: wake {before:?} unchanged, alarm calls {made:?}", op.name());
            } else {
                // The first whole millisecond at or after the wake.
                let expected = after.map(|t| {
                    let ns = t.as_nanosecond();
                    let ms = ns.div_euclid(1_000_000) + i128::from(ns.rem_euclid(1_000_000) > 0);
                    i64::try_from(ms).expect("in range")
                });
                prop_assert_eq!(made, vec![expected], "{}: wake {:?} -> {:?}", op.name(), before, after);
            }
            before = after;
        }
    }
}

// ------------------------------------------------------------ keyed runs

/// The dynamic job the keyed runs' requests name, encoded as a Worker
/// sends it.
fn runs_template() -> String {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let manifest = parse_manifest(
            "[[job]]\nname = \"runs\"\ndynamic = true\ncommand = [\"true\"]\n\
             retry = { max_attempts = 2, backoff = \"1s\", max_backoff = \"1s\" }\n",
            "fuzz.toml",
        )
        .expect("the fuzz manifest parses");
        cronslot_cf::spec_text::encode_template(&manifest.templates[0])
    })
    .clone()
}

/// A keyed run's request body: valid ones (with and without a payload
/// and an `at`, at any instant), and arbitrary JSON.
fn run_body() -> BoxedStrategy<String> {
    prop_oneof![
        2 => Just("{}".to_string()),
        2 => Just(r#"{"payload":{"order":1}}"#.to_string()),
        2 => instant().prop_map(|t| format!(r#"{{"payload":1,"at":"{t}"}}"#)),
        1 => Just(format!(r#"{{"payload":"{}"}}"#, "x".repeat(20_000))),
        1 => any_json().prop_map(|v| v.to_string()),
    ]
    .boxed()
}

fn run_op() -> BoxedStrategy<Op> {
    prop_oneof![
        3 => (run_body(), instant()).prop_map(|(request, now)| Op::EnqueueRun { request, now }),
        2 => instant().prop_map(|now| Op::RunStatus { now }),
        2 => instant().prop_map(|now| Op::ReadScheduleForClaim { now }),
    ]
    .boxed()
}

fn run_request(key: &str, op: Op) -> ObjectRequest {
    ObjectRequest {
        protocol: cronslot_cf::protocol::PROTOCOL_VERSION,
        job: "runs#0".to_string(),
        spec: runs_template(),
        op,
        schedule: Some(cronslot_cf::protocol::ScheduleAt {
            objects: 1,
            key: Some(key.to_string()),
            version: None,
        }),
    }
}

proptest! {
    #![proptest_config(config(150))]

    #[test]
    fn keyed_run_requests_get_answers_of_their_kind(
        ops in prop::collection::vec((prop::sample::select(&["k", "k.2"][..]), run_op()), 1..8),
    ) {
        let o = object();
        for (key, op) in ops {
            let body = serde_json::to_string(&run_request(key, op.clone())).expect("encodes");
            let reply = serve(&o, &body)?;
            match (&op, reply) {
                (Op::EnqueueRun { request, now }, Ok(Answer::Enqueued(enqueued))) => {
                    let prefix = format!("runs/{key}@");
                    prop_assert!(enqueued.view().run.starts_with(&prefix), "{enqueued:?}");
                    // The same request again names the same run.
                    let again = serde_json::to_string(&run_request(key, Op::EnqueueRun {
                        request: request.clone(),
                        now: *now,
                    })).expect("encodes");
                    match serve(&o, &again)? {
                        Ok(Answer::Enqueued(e)) => {
                            prop_assert!(
                                matches!(e, cronslot_core::coord::decide::Enqueued::Existing(_)),
                                "{e:?}"
                            );
                            prop_assert_eq!(&e.view().run, &enqueued.view().run);
                        }
                        other => prop_assert!(false, "enqueued again: {other:?}"),
                    }
                }
                (Op::RunStatus { .. }, Ok(Answer::Run(_)))
                | (Op::ReadScheduleForClaim { .. }, Ok(Answer::Record(_)))
                | (_, Err(_)) => {}
                (op, Ok(answer)) => prop_assert!(false, "{} answered {}", op.name(), answer.name()),
            }
        }
    }

    #[test]
    fn keyed_run_requests_round_trip_through_json(key in "[a-z]{1,8}", op in run_op()) {
        let r = run_request(&key, op);
        let text = serde_json::to_string(&r).expect("encodes");
        prop_assert_eq!(serde_json::from_str::<ObjectRequest>(&text).ok(), Some(r));
    }
}
