//! The store commands against DynamoDB (`--store dynamodb://…`) on moto: the
//! same commands, the AWS adapter's table. State is seeded through the
//! library, the binary reads and changes it.

use std::path::PathBuf;
use std::process::{Command, Output};

use cronslot_core::coord::{CasCoordinator, Claim, Coordinator, FailOutcome, Trigger};
use cronslot_core::manifest::parse_manifest;
use cronslot_dynamodb::DynamoStore;
use jiff::{SignedDuration, Timestamp};

const MANIFEST: &str = r#"
[[job]]
name = "export"
schedule = "0 * * * *"
retry = { max_attempts = 1 }
command = ["sh", "-c", "exit 1"]
"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Runs the binary with dummy credentials (moto accepts any) and no
/// instance-metadata lookups.
fn cronslot(dir: &PathBuf, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(args)
        .current_dir(dir)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_PROFILE")
        .output()
        .expect("run cronslot")
}

/// The table through a client of the test's own: the binary reads
/// credentials from its environment, the seeding client gets the same
/// dummy ones (moto accepts any) explicitly.
fn seeding_store(endpoint: &str, table: &str) -> DynamoStore {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .build();
    DynamoStore::new(
        aws_sdk_dynamodb::Client::from_conf(config),
        table.to_string(),
    )
}

#[test]
fn status_dlq_and_redrive_work_on_dynamodb() {
    let moto = cronslot_tests::moto::moto();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("store_dynamo");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("cronslot.toml"), MANIFEST).expect("manifest");
    let table = format!("cronslot-cli-{}", std::process::id());
    let url = format!(
        "dynamodb://{table}?region=us-east-1&endpoint={}",
        moto.endpoint
    );

    // Seed: a slot an hour and a half ago failed permanently.
    let spec = parse_manifest(MANIFEST, "cronslot.toml")
        .expect("manifest")
        .jobs
        .remove(0);
    let now = Timestamp::now();
    let hour = now.as_second() - now.as_second().rem_euclid(3600);
    let slot = Timestamp::from_second(hour - 3600).expect("slot");
    let created = slot
        .checked_sub(SignedDuration::from_secs(60))
        .expect("created");
    runtime().block_on(async {
        let store = seeding_store(&moto.endpoint, &table);
        store.create_table().await.expect("table");
        let c = CasCoordinator::new(store, 1);
        let _ = c.claim(&spec, created, Trigger::Tick, "seed").await;
        let at = slot.checked_add(SignedDuration::from_secs(5)).expect("at");
        let Ok(Claim::Claimed(lease)) = c.claim(&spec, at, Trigger::Tick, "seed").await else {
            panic!("seed claim");
        };
        let out = c
            .fail(&spec, lease.fence, "export target unreachable", true, at)
            .await
            .expect("fail");
        assert_eq!(out, FailOutcome::Dead);
    });

    let status = cronslot(&dir, &["status", "--store", &url, "--format", "json"]);
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(v["jobs"][0]["job"], "export");
    assert_eq!(v["jobs"][0]["record"]["counters"]["dead"], 1);

    let list = cronslot(&dir, &["dlq", "list", "--store", &url]);
    assert_eq!(list.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&list.stdout).contains("export target unreachable"));

    let redrive = cronslot(&dir, &["dlq", "redrive", "export", "--store", &url]);
    assert_eq!(
        redrive.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&redrive.stderr)
    );
    let status = cronslot(&dir, &["status", "--store", &url, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(
        v["jobs"][0]["record"]["pending"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(v["jobs"][0]["record"]["counters"]["redriven"], 1);

    let bad = cronslot(&dir, &["status", "--store", "dynamodb://"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `init` creates the table (idempotently), and two `cronslot run`
/// processes on it, as on two machines, run each slot once.
#[test]
fn init_and_two_runners_share_a_dynamodb_table() {
    let moto = cronslot_tests::moto::moto();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("run_dynamo");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("cronslot.toml"),
        "[[job]]\nname = \"tick\"\nschedule = \"* * * * *\"\nretry = { max_attempts = 1 }\n\
         command = [\"sh\", \"-c\", \"echo \\\"$CRONSLOT_SLOT\\\" >> ran.log\"]\n",
    )
    .expect("manifest");
    let table = format!("cronslot-run-{}", std::process::id());
    let url = format!(
        "dynamodb://{table}?region=us-east-1&endpoint={}",
        moto.endpoint
    );
    for _ in 0..2 {
        let o = cronslot(&dir, &["init", "--store", &url]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stdout).contains("ready"));
    }
    let o = cronslot(&dir, &["init", "--store", &url, "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(
        v,
        serde_json::json!({"store": url.as_str(), "kind": "dynamodb", "table": table.as_str()})
    );
    // Four minutes of clock time in four real seconds, twice at once.
    let runners: Vec<_> = (0..2)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_cronslot"))
                .args(["run", "cronslot.toml", "--speed", "60", "--until", "+4m"])
                .env("CRONSLOT_STORE", &url)
                .env("AWS_ACCESS_KEY_ID", "test")
                .env("AWS_SECRET_ACCESS_KEY", "test")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env_remove("AWS_PROFILE")
                .current_dir(&dir)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start cronslot run")
        })
        .collect();
    for r in runners {
        let o = r.wait_with_output().expect("runner ends");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let ran = std::fs::read_to_string(dir.join("ran.log")).expect("slots ran");
    let mut slots: Vec<&str> = ran.lines().collect();
    assert!(
        slots.len() >= 3,
        "four minutes hold at least three slots: {ran}"
    );
    slots.sort();
    slots.dedup();
    assert_eq!(slots.len(), ran.lines().count(), "a slot ran twice: {ran}");
}

/// `cronslot tick` on DynamoDB with 10,000 jobs of which 10 are due: each
/// request the process makes is counted by a proxy in front of moto. A
/// deployment that has been ticking is seeded (the due jobs' records from
/// two minutes ago and the mark then); the tick then costs a `Query` (the
/// mark and the woken jobs) and a `PutItem` (the mark), and for each due
/// job a `GetItem` and two `PutItem`s (its claim and its outcome). The next
/// tick, in the same minute, finds nothing: one request (the mark, seconds
/// old, stays where it is).
#[test]
fn a_tick_on_dynamodb_with_ten_thousand_jobs_costs_what_is_due() {
    use cronslot_core::coord::{JobState, StateStore, TickIndex};
    use cronslot_tests::counting_proxy::CountingProxy;
    use cronslot_tests::scale::{Mix, manifest};

    let moto = cronslot_tests::moto::moto();
    let proxy = CountingProxy::start(&moto.endpoint);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tick_dynamo");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    // j1..j10 every minute; the others on February 29 at midnight (the
    // generator's 03:17 comes round in one zone or another within hours).
    let text = manifest(10_000, Mix::DueEachMinute(10), false).replace("17 3 * * *", "0 0 29 2 *");
    std::fs::write(dir.join("cronslot.toml"), &text).expect("manifest");
    let table = format!("cronslot-tick10k-{}", std::process::id());
    let url = |endpoint: &str| format!("dynamodb://{table}?region=us-east-1&endpoint={endpoint}");
    let o = cronslot(&dir, &["init", "--store", &url(&moto.endpoint)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let rt = runtime();
    let store = seeding_store(&moto.endpoint, &table);
    let created = Timestamp::now() - SignedDuration::from_mins(2);
    for spec in parse_manifest(&text, "cronslot.toml")
        .expect("valid")
        .jobs
        .iter()
        .take(10)
    {
        let state = JobState::new(spec.name.as_str(), &spec.spec_hash(), created, false);
        rt.block_on(store.put(spec.name.as_str(), &state, None))
            .expect("seed a record");
    }
    rt.block_on(store.tick_end(created)).expect("seed the mark");

    // Both ticks in one minute: no new slot between them.
    let into_minute = Timestamp::now().as_second().rem_euclid(60);
    if into_minute > 30 {
        std::thread::sleep(std::time::Duration::from_secs(
            u64::try_from(61 - into_minute).unwrap_or(0),
        ));
    }
    proxy.take();
    let o = cronslot(
        &dir,
        &["tick", "cronslot.toml", "--store", &url(&proxy.endpoint)],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("tick: 10 run(s), 10 succeeded"), "{out}");
    let op = |name: &str| format!("DynamoDB_20120810.{name}");
    let counts = proxy.take();
    assert_eq!(
        counts,
        [(op("GetItem"), 10), (op("PutItem"), 21), (op("Query"), 1)]
            .into_iter()
            .collect(),
        "10 × (1 read + 2 writes) + 2"
    );
    let o = cronslot(
        &dir,
        &["tick", "cronslot.toml", "--store", &url(&proxy.endpoint)],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("tick: 0 run(s)"));
    assert_eq!(
        proxy.take(),
        [(op("Query"), 1)].into_iter().collect(),
        "a tick with nothing due, the mark seconds old: the mark's read alone (MARK_REFRESH)"
    );
}

/// `cronslot serve` on DynamoDB: each request runs on a thread (and
/// runtime) of its own, and the client's pooled connections outlive them;
/// request after request still reaches the table.
#[test]
fn serve_answers_request_after_request_on_dynamodb() {
    use crate::serve::{ADMIN_TOKEN, TICK_SECRET, call, job, json, serve, stop};

    let moto = cronslot_tests::moto::moto();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("serve_dynamo");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("cronslot.toml"), MANIFEST).expect("manifest");
    let table = format!("cronslot-serve-{}", std::process::id());
    let url = format!(
        "dynamodb://{table}?region=us-east-1&endpoint={}",
        moto.endpoint
    );
    let o = cronslot(&dir, &["init", "--store", &url]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (child, port) = serve(
        &dir,
        &url,
        &[],
        &[
            ("CRONSLOT_ADMIN_TOKEN", ADMIN_TOKEN),
            ("CRONSLOT_TICK_SECRET", TICK_SECRET),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ],
    );
    for round in 0..3 {
        let pause = call(
            port,
            "POST",
            "/cronslot/jobs/export/pause",
            Some(ADMIN_TOKEN),
        );
        assert_eq!(pause.status, 200, "round {round}: {pause:?}");
        let status = call(port, "GET", "/cronslot/status", Some(ADMIN_TOKEN));
        assert_eq!(status.status, 200, "round {round}: {status:?}");
        assert_eq!(job(&json(&status), "export")["paused"], true);
        let resume = call(
            port,
            "POST",
            "/cronslot/jobs/export/resume",
            Some(ADMIN_TOKEN),
        );
        assert_eq!(json(&resume)["changed"], true, "round {round}: {resume:?}");
        let dlq = call(port, "GET", "/cronslot/dlq", Some(ADMIN_TOKEN));
        assert_eq!(dlq.status, 200, "round {round}: {dlq:?}");
        let tick = call(port, "POST", "/cronslot/tick", Some(TICK_SECRET));
        assert_eq!(tick.status, 200, "round {round}: {tick:?}");
    }
    stop(child);
}
