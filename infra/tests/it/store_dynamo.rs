//! The store commands against DynamoDB (`--store dynamodb://…`) on moto: the
//! same commands, the AWS adapter's table. State is seeded through the
//! library, the binary reads and changes it.

use std::path::PathBuf;
use std::process::{Command, Output};

use cronslot_aws::dynamo::DynamoStore;
use cronslot_core::coord::{CasCoordinator, Claim, Coordinator, FailOutcome, Trigger};
use cronslot_core::manifest::parse_manifest;
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
        // The binary reads credentials from its environment; the seeding
        // client gets the same dummy ones (moto accepts any) explicitly.
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
            .endpoint_url(&moto.endpoint)
            .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "test", "test", None, None, "tests",
            ))
            .build();
        let client = aws_sdk_dynamodb::Client::from_conf(config);
        let store = DynamoStore::new(client, table.clone());
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
    assert_eq!(v["jobs"][0]["counts"]["dead"], 1);

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
    assert_eq!(v["jobs"][0]["pending"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["jobs"][0]["counts"]["redriven"], 1);

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
