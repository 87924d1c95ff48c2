//! The 09:00 burst on AWS (issue 28), on moto: `SLOTS` (20,000) one-off
//! schedules of one dynamic job at the same minute, written in bulk to a
//! DynamoDB table, paged through, then served by the tick function: the
//! Lambda handler of cronslot-aws (what the deployed function runs), in
//! this process, invoked as the tick rule invokes it, once a minute with
//! the minute's scheduled time and a deadline `TIMEOUT` seconds on (295:
//! the job's five-minute lease less its skew margin, as `cronslot render`
//! sets the function's timeout). An invocation still running when the next
//! minute comes runs beside the next one, as Lambda runs them. Each run
//! sleeps 10 ms.
//!
//! Prints the writes per second, the listing's pages per second, what an
//! invocation with nothing due took, then each invocation of the burst
//! (its rounds, the jobs of each, how long it ran), how many invocations
//! the burst took, the start lag and the checks: every slot once, none
//! twice, no lease left. The figures are moto's (one Python process on
//! this machine's two cores, with this process beside it), not DynamoDB's.
//!
//! `cargo bench -p cronslot-tests --bench lambda_burst`; `SLOTS`,
//! `TIMEOUT`. moto answers a query of an index by reading every item of
//! the table (2 s a query among 100,000 on this machine, more under the
//! burst's writes, past the store's 3 s a read attempt): 20,000 is what it
//! serves here, and the default.

use std::rc::Rc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use cronslot_aws::lambda::{Handler, Host, Invocation};
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, ScheduleQuery, Schedules, TickIndex, format_instant};
use cronslot_dynamodb::DynamoStore;
use cronslot_tests::burst::{self, Burst, JOB};
use cronslot_tests::sim_backends::OnTokio;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// What one invocation of the burst did: its summary, or its error (an
/// invocation that fails is retried by the tick rule's next minute).
struct Served {
    name: String,
    started: Timestamp,
    took: Duration,
    summary: Result<Value, String>,
}

fn main() {
    let slots: usize = env_or("SLOTS", 20_000);
    let timeout = Duration::from_secs(env_or("TIMEOUT", 295));
    let burst = Burst {
        slots,
        jitter: Duration::ZERO,
        runners: 1,
        workers: 1,
        max_running: 1,
        work: Duration::from_millis(10),
    };
    let runtime = Rc::new(ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()));
    let moto = cronslot_tests::moto::moto();
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(&moto.endpoint)
        .credentials_provider(Credentials::new("test", "test", None, None, "bench"))
        .build();
    let table = format!("bench-lambda-burst-{}", std::process::id());
    let store = DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(config), &table);
    ok(runtime.block_on(store.create_table()));
    let blocking = OnTokio::new(store.clone(), runtime.clone());

    // The minute is far enough ahead for moto to take the writes (about
    // 280 a second here).
    let lead = Duration::from_secs(60 + slots as u64 / 200);
    let (at, wrote) = burst::prepare(blocking.clone(), &burst, lead);
    println!(
        "dynamodb  {slots} schedules at {at}: written in {wrote:.1} s ({:.0}/s)",
        slots as f64 / wrote
    );

    let template = burst::template(Duration::ZERO);
    let c = CasCoordinator::new(blocking.clone(), 3);
    let started = Instant::now();
    let (mut pages, mut listed) = (0, 0);
    let mut query = ScheduleQuery {
        limit: 1000,
        ..ScheduleQuery::default()
    };
    loop {
        let page = ok(block_on(c.list_schedules(&template, &query)));
        pages += 1;
        listed += page.schedules.len();
        match page.cursor {
            Some(cursor) => query.after = Some(cursor),
            None => break,
        }
    }
    let took = started.elapsed().as_secs_f64();
    assert_eq!(listed, slots, "the listing meets every schedule once");
    println!(
        "dynamodb  listed {listed} in {pages} pages of 1,000 in {took:.1} s ({:.0} schedules/s, {:.0} ms a page)",
        listed as f64 / took,
        took * 1e3 / pages as f64
    );

    let jobs = cronslot_aws::Jobs::new().register(JOB, |_ctx| async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        Ok(())
    });
    let host = Host {
        clock: Rc::new(Timestamp::now),
        log: Rc::new(|_: &str| {}),
        seed: 11,
    };
    let shared = store.clone();
    let handler = Rc::new(ok(Handler::new(
        burst::manifest(Duration::ZERO),
        jobs,
        move |_: &Invocation| shared.clone(),
        host,
    )));
    let deadline_in = ok(SignedDuration::try_from(timeout));
    let invoke = |name: String, scheduled: Timestamp| {
        let handler = handler.clone();
        async move {
            let started = Timestamp::now();
            let clock = Instant::now();
            let inv = Invocation {
                request_id: name.clone(),
                deadline: started + deadline_in,
            };
            let event =
                json!({"cronslot": {"tick": true, "scheduled_time": format_instant(scheduled)}});
            let summary = handler
                .handle(&event, &inv)
                .await
                .map_err(|e| e.to_string());
            Served {
                name,
                started,
                took: clock.elapsed(),
                summary,
            }
        }
    };

    let local = tokio::task::LocalSet::new();
    let served: Vec<Served> = local.block_on(&runtime, async {
        // Before the minute: the table's first tick writes the mark, the
        // second finds nothing due.
        let before = at - SignedDuration::from_secs(60);
        invoke("before-1".into(), before).await;
        let idle = invoke("before-2".into(), before).await;
        let idle_summary = ok(idle.summary);
        println!(
            "dynamodb  an invocation with nothing due among {slots}: {:.1} ms, woken {}",
            idle.took.as_secs_f64() * 1e3,
            idle_summary["woken"]
        );
        let mut running = Vec::new();
        let mut minute = 0i64;
        loop {
            let scheduled = at + SignedDuration::from_secs(60 * minute);
            let fire = scheduled + SignedDuration::from_secs(1);
            let wait = fire.duration_since(Timestamp::now());
            if wait.is_positive() {
                tokio::time::sleep(ok(Duration::try_from(wait))).await;
            }
            running.push(tokio::task::spawn_local(invoke(
                format!("minute-{minute}"),
                scheduled,
            )));
            minute += 1;
            // Until the next minute: done once every invocation has
            // ended and the wake index names nothing within a lease from
            // now (a lease an invocation left when it failed wakes its job
            // when it expires, and the tick of that minute retries it).
            let next = at + SignedDuration::from_secs(60 * minute + 1);
            let lease = SignedDuration::from_secs(5 * 60 + 10);
            while Timestamp::now() < next {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if running.iter().all(|h| h.is_finished()) {
                    let start = ok(store.tick_start(Timestamp::now() + lease, 1).await);
                    if start.woken.is_empty() {
                        let mut done = Vec::new();
                        for h in running.drain(..) {
                            done.push(ok(h.await));
                        }
                        return done;
                    }
                }
            }
        }
    });

    let (mut invocations, mut failed) = (0, 0);
    for s in &served {
        match &s.summary {
            Ok(summary) => {
                let woken = summary["woken"].as_u64().unwrap_or(0);
                if woken > 0 {
                    invocations += 1;
                }
                println!(
                    "dynamodb  invocation {:<10} from {} for {:>6.1} s: {} rounds of {}, woken {woken}",
                    s.name,
                    s.started,
                    s.took.as_secs_f64(),
                    summary["rounds"],
                    summary["round_jobs"],
                );
            }
            Err(e) => {
                failed += 1;
                println!(
                    "dynamodb  invocation {:<10} from {} for {:>6.1} s failed: {e}",
                    s.name,
                    s.started,
                    s.took.as_secs_f64(),
                );
            }
        }
    }
    let outcome = burst::check(blocking, &burst, at);
    println!(
        "dynamodb  {slots} slots at {at}, timeout {}s: {invocations} invocations served the burst \
         ({} invoked, {failed} failed); {}",
        timeout.as_secs(),
        served.len(),
        outcome.summary()
    );
    if failed == 0 {
        outcome.assert_every_slot_once(slots);
    } else {
        // An invocation that failed may have run a slot whose outcome it
        // could not write (the store did not answer): its lease expired and
        // a later invocation ran the slot again, with a higher fence. Every
        // slot ran, and nothing is left leased.
        assert_eq!(
            (outcome.once + outcome.twice, outcome.not_run, outcome.stuck),
            (slots, 0, 0),
            "every slot ran, nothing stuck: {}",
            outcome.summary()
        );
    }
}
