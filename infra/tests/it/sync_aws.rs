//! `cronslot sync aws` and `cronslot check --live aws` against moto's
//! EventBridge Scheduler: the binary changes the account, the test reads
//! and tampers with it through the SDK. Every test uses a schedule group of
//! its own on the binary's one moto server. (moto neither validates
//! expressions nor fires schedules: what is compared here is what is
//! stored.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aws_sdk_scheduler::Client;
use aws_sdk_scheduler::types::{FlexibleTimeWindow, FlexibleTimeWindowMode, RetryPolicy, Target};

const FUNCTION: &str = "arn:aws:lambda:us-east-1:123456789012:function:jobs";
const ROLE: &str = "arn:aws:iam::123456789012:role/jobs-scheduler";
const DLQ: &str = "arn:aws:sqs:us-east-1:123456789012:jobs-dlq";

/// Two dedicated jobs (one in a DST zone whose translation is exact with
/// `dst_gap = "skip"`), one tick-mode job.
const MANIFEST: &str = r#"
[defaults]
trigger = "dedicated"

[[job]]
name = "nightly"
schedule = "30 2 * * *"
timezone = "Europe/Berlin"
dst_gap = "skip"
http = { url = "https://example.com/nightly" }

[[job]]
name = "quarter"
schedule = "*/15 * * * *"
http = { url = "https://example.com/quarter" }

[[job]]
name = "ticked"
schedule = "*/5 * * * *"
trigger = "tick"
http = { url = "https://example.com/ticked" }
"#;

/// The manifest changed: `quarter` moves to every ten minutes, `nightly`
/// is gone, `weekly` is new, `ticked` is dedicated now (so no tick).
const CHANGED: &str = r#"
[defaults]
trigger = "dedicated"

[[job]]
name = "quarter"
schedule = "*/10 * * * *"
http = { url = "https://example.com/quarter" }

[[job]]
name = "weekly"
schedule = "0 9 * * MON"
timezone = "America/New_York"
http = { url = "https://example.com/weekly" }

[[job]]
name = "ticked"
schedule = "*/5 * * * *"
http = { url = "https://example.com/ticked" }
"#;

fn dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("sync_aws")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write manifest");
    path.to_str().expect("utf-8 path").to_string()
}

/// A group name no other test (or earlier run on this moto) uses.
fn group(test: &str) -> String {
    format!("{test}-{}", std::process::id())
}

/// The binary, pointed at moto through the environment as a user would
/// (`AWS_ENDPOINT_URL`), with dummy credentials.
fn cronslot(args: &[&str]) -> Output {
    let moto = cronslot_tests::moto::moto();
    Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(args)
        .env("AWS_ENDPOINT_URL", &moto.endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_PROFILE")
        .output()
        .expect("run cronslot")
}

fn sync(manifest: &str, group: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "sync",
        "aws",
        manifest,
        "--group",
        group,
        "--target-arn",
        FUNCTION,
        "--role-arn",
        ROLE,
        "--dead-letter-arn",
        DLQ,
    ];
    args.extend_from_slice(extra);
    cronslot(&args)
}

/// Without the target flags: each schedule keeps its own, a new one takes
/// the group's.
fn sync_bare(manifest: &str, group: &str) -> Output {
    cronslot(&["sync", "aws", manifest, "--group", group])
}

fn check_live(manifest: &str, group: &str) -> Output {
    cronslot(&[
        "check",
        "--live",
        "aws",
        "--manifest",
        manifest,
        "--group",
        group,
    ])
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        stdout(o),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}", show(o));
    stdout(o)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn client() -> Client {
    let moto = cronslot_tests::moto::moto();
    let config = aws_sdk_scheduler::Config::builder()
        .behavior_version(aws_sdk_scheduler::config::BehaviorVersion::latest())
        .region(aws_sdk_scheduler::config::Region::new("us-east-1"))
        .endpoint_url(&moto.endpoint)
        .credentials_provider(aws_sdk_scheduler::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .build();
    Client::from_conf(config)
}

/// A schedule as stored, in the fields sync manages.
#[derive(Debug, Clone, PartialEq)]
struct Stored {
    expression: String,
    timezone: Option<String>,
    flexible: String,
    input: String,
    max_age: Option<i32>,
    attempts: Option<i32>,
    dlq: Option<String>,
    target: String,
    role: String,
    modified: Option<String>,
}

/// Every schedule of the group, by name.
fn stored(group: &str) -> Vec<(String, Stored)> {
    let client = client();
    runtime().block_on(async {
        let list = client
            .list_schedules()
            .group_name(group)
            .send()
            .await
            .expect("list");
        let mut out = Vec::new();
        for s in list.schedules() {
            let name = s.name().expect("name").to_string();
            let g = client
                .get_schedule()
                .group_name(group)
                .name(&name)
                .send()
                .await
                .expect("get");
            let t = g.target().expect("target");
            out.push((
                name,
                Stored {
                    expression: g.schedule_expression().expect("expr").to_string(),
                    timezone: g.schedule_expression_timezone().map(str::to_string),
                    flexible: g
                        .flexible_time_window()
                        .expect("window")
                        .mode()
                        .as_str()
                        .to_string(),
                    input: t.input().expect("input").to_string(),
                    max_age: t
                        .retry_policy()
                        .and_then(|r| r.maximum_event_age_in_seconds()),
                    attempts: t.retry_policy().and_then(|r| r.maximum_retry_attempts()),
                    dlq: t
                        .dead_letter_config()
                        .and_then(|d| d.arn())
                        .map(str::to_string),
                    target: t.arn().to_string(),
                    role: t.role_arn().to_string(),
                    modified: g.last_modification_date().map(ToString::to_string),
                },
            ));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    })
}

fn names(group: &str) -> Vec<String> {
    stored(group).into_iter().map(|(n, _)| n).collect()
}

fn get<'a>(all: &'a [(String, Stored)], name: &str) -> &'a Stored {
    &all.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no schedule {name} in {all:?}"))
        .1
}

fn input_job(input: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(input).expect("input json");
    v["cronslot"].clone()
}

/// A schedule the test puts there itself (someone else's, or a tampering).
fn put_schedule(group: &str, name: &str, expression: &str, input: &str, update: bool) {
    let client = client();
    runtime().block_on(async {
        let target = Target::builder()
            .arn(FUNCTION)
            .role_arn(ROLE)
            .input(input)
            .retry_policy(
                RetryPolicy::builder()
                    .maximum_event_age_in_seconds(3600)
                    .maximum_retry_attempts(3)
                    .build(),
            )
            .build()
            .expect("target");
        let window = FlexibleTimeWindow::builder()
            .mode(FlexibleTimeWindowMode::Off)
            .build()
            .expect("window");
        if update {
            client
                .update_schedule()
                .group_name(group)
                .name(name)
                .schedule_expression(expression)
                .flexible_time_window(window)
                .target(target)
                .send()
                .await
                .expect("update");
        } else {
            client
                .create_schedule()
                .group_name(group)
                .name(name)
                .schedule_expression(expression)
                .flexible_time_window(window)
                .target(target)
                .send()
                .await
                .expect("create");
        }
    });
}

fn create_group(group: &str) {
    let client = client();
    runtime().block_on(async {
        client
            .create_schedule_group()
            .name(group)
            .send()
            .await
            .expect("create group");
    });
}

#[test]
fn first_sync_creates_and_second_changes_nothing() {
    let dir = dir("first");
    let manifest = write(&dir, "cronslot.toml", MANIFEST);
    let group = group("first");

    let out = ok(&sync(&manifest, &group, &[]));
    assert!(out.contains("created    schedule group"), "{out}");
    assert!(
        out.contains("synced: 3 created, 0 updated, 0 deleted"),
        "{out}"
    );

    let all = stored(&group);
    assert_eq!(
        all.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["_tick", "nightly", "quarter"]
    );
    let nightly = get(&all, "nightly");
    assert_eq!(nightly.expression, "cron(30 2 * * ? *)");
    assert_eq!(nightly.timezone.as_deref(), Some("Europe/Berlin"));
    assert_eq!(nightly.flexible, "OFF");
    assert_eq!(nightly.target, FUNCTION);
    assert_eq!(nightly.role, ROLE);
    assert_eq!(nightly.dlq.as_deref(), Some(DLQ));
    let job = input_job(&nightly.input);
    assert_eq!(job["job"], "nightly");
    assert_eq!(job["scheduled_time"], "<aws.scheduler.scheduled-time>");
    // The starting deadline (10m) bounds the retries, as `render` writes.
    assert_eq!(nightly.max_age, Some(600));
    assert_eq!(nightly.attempts, Some(185));
    let quarter = get(&all, "quarter");
    assert_eq!(quarter.expression, "cron(*/15 * * * ? *)");
    assert_eq!(quarter.max_age, Some(600));
    let tick = get(&all, "_tick");
    assert_eq!(tick.expression, "rate(1 minute)");
    assert_eq!(input_job(&tick.input)["tick"], true);
    assert_eq!(tick.max_age, Some(60));

    // Again: nothing to do, nothing written.
    let out = ok(&sync(&manifest, &group, &[]));
    assert!(
        out.contains("in sync: nothing to do (0 created, 0 updated, 0 deleted, 3 unchanged)"),
        "{out}"
    );
    assert_eq!(stored(&group), all, "the second sync wrote nothing");
    // The targets are kept when left out.
    let out = ok(&sync_bare(&manifest, &group));
    assert!(out.contains("in sync"), "{out}");
    assert_eq!(stored(&group), all);
    // With nothing deployed to take them from, they are needed.
    let o = sync_bare(&manifest, &format!("{group}-empty"));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--target-arn is needed"),
        "{}",
        show(&o)
    );
}

#[test]
fn a_changed_manifest_updates_creates_and_deletes() {
    let dir = dir("changed");
    let manifest = write(&dir, "cronslot.toml", MANIFEST);
    let group = group("changed");
    ok(&sync(&manifest, &group, &[]));

    let changed = write(&dir, "changed.toml", CHANGED);
    // No target flags: the new schedules take the group's.
    let out = ok(&sync_bare(&changed, &group));
    assert!(out.contains("updated    quarter"), "{out}");
    assert!(
        out.contains("ScheduleExpression: cron(*/15 * * * ? *) → cron(*/10 * * * ? *)"),
        "{out}"
    );
    assert!(out.contains("created    weekly"), "{out}");
    assert!(out.contains("created    ticked"), "{out}");
    assert!(out.contains("deleted    nightly"), "{out}");
    assert!(out.contains("deleted    _tick"), "{out}");
    assert!(
        out.contains("synced: 2 created, 1 updated, 2 deleted"),
        "{out}"
    );

    let all = stored(&group);
    assert_eq!(
        all.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["quarter", "ticked", "weekly"]
    );
    assert_eq!(get(&all, "quarter").expression, "cron(*/10 * * * ? *)");
    let weekly = get(&all, "weekly");
    assert_eq!(weekly.expression, "cron(0 9 ? * 2 *)");
    assert_eq!(weekly.timezone.as_deref(), Some("America/New_York"));
    assert_eq!(weekly.target, FUNCTION);
    assert_eq!(weekly.role, ROLE);
    assert_eq!(weekly.dlq.as_deref(), Some(DLQ));
    ok(&check_live(&changed, &group));
    let out = ok(&sync(&changed, &group, &[]));
    assert!(out.contains("in sync"), "{out}");
}

#[test]
fn schedules_it_does_not_own_are_untouched() {
    let dir = dir("owned");
    let manifest = write(&dir, "cronslot.toml", MANIFEST);
    let group = group("owned");
    let other_group = format!("{group}-other");
    create_group(&group);
    create_group(&other_group);
    // Another group: a cronslot Input for a job this manifest lacks.
    let stray = r#"{"cronslot":{"job":"gone","scheduled_time":"<aws.scheduler.scheduled-time>"}}"#;
    put_schedule(&other_group, "gone", "cron(0 1 * * ? *)", stray, false);
    // The group, but not a cronslot schedule.
    put_schedule(
        &group,
        "backup",
        "cron(0 4 * * ? *)",
        r#"{"backup":true}"#,
        false,
    );
    // The group, a cronslot Input, but outside the prefix.
    put_schedule(&group, "gone", "cron(0 1 * * ? *)", stray, false);
    let before_other = stored(&other_group);
    let before_backup = get(&stored(&group), "backup").clone();

    let out = ok(&sync(&manifest, &group, &["--prefix", "jobs-"]));
    assert!(
        out.contains("synced: 3 created, 0 updated, 0 deleted"),
        "{out}"
    );
    assert_eq!(
        names(&group),
        [
            "backup",
            "gone",
            "jobs-_tick",
            "jobs-nightly",
            "jobs-quarter"
        ]
    );
    assert_eq!(stored(&other_group), before_other);

    // Without a prefix the whole group is sync's: the cronslot schedule of
    // a job the manifest lacks goes, the foreign one stays.
    let out = ok(&sync(&manifest, &group, &[]));
    assert!(out.contains("deleted    gone"), "{out}");
    assert!(out.contains("left       backup"), "{out}");
    assert!(out.contains("deleted    jobs-nightly"), "{out}");
    assert_eq!(
        names(&group),
        ["_tick", "backup", "nightly", "quarter"],
        "{out}"
    );
    assert_eq!(get(&stored(&group), "backup"), &before_backup);
    assert_eq!(stored(&other_group), before_other);

    // The shared default group needs a prefix.
    let o = sync(&manifest, "default", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
}

#[test]
fn two_concurrent_syncs_end_consistent() {
    let dir = dir("concurrent");
    let manifest = write(&dir, "cronslot.toml", MANIFEST);
    let changed = write(&dir, "changed.toml", CHANGED);
    for round in 0..3 {
        let group = group(&format!("concurrent{round}"));
        // From nothing (both create the group and every schedule), then
        // from the old manifest's schedules (both update and delete).
        for m in [&manifest, &changed] {
            let runs: Vec<Output> = std::thread::scope(|s| {
                let a = s.spawn(|| sync(m, &group, &[]));
                let b = s.spawn(|| sync(m, &group, &[]));
                vec![a.join().expect("thread"), b.join().expect("thread")]
            });
            for o in &runs {
                ok(o);
            }
            let expected: &[&str] = if m == &manifest {
                &["_tick", "nightly", "quarter"]
            } else {
                &["quarter", "ticked", "weekly"]
            };
            assert_eq!(names(&group), expected, "round {round}");
            ok(&check_live(m, &group));
            let out = ok(&sync(m, &group, &[]));
            assert!(out.contains("in sync"), "round {round}: {out}");
        }
    }
}

#[test]
fn dry_run_changes_nothing() {
    let dir = dir("dry");
    let manifest = write(&dir, "cronslot.toml", MANIFEST);
    let group = group("dry");

    let out = ok(&sync(&manifest, &group, &["--dry-run"]));
    assert!(out.contains("create     schedule group"), "{out}");
    assert!(
        out.contains("create     nightly  cron(30 2 * * ? *) in Europe/Berlin"),
        "{out}"
    );
    assert!(out.contains("would create 3, update 0, delete 0"), "{out}");
    let exists = runtime().block_on(async {
        client()
            .get_schedule_group()
            .name(&group)
            .send()
            .await
            .is_ok()
    });
    assert!(!exists, "a dry run created the group");

    ok(&sync(&manifest, &group, &[]));
    let before = stored(&group);
    let changed = write(&dir, "changed.toml", CHANGED);
    let out = ok(&sync(&changed, &group, &["--dry-run"]));
    assert!(out.contains("update     quarter"), "{out}");
    assert!(out.contains("delete     nightly"), "{out}");
    assert!(out.contains("create     weekly"), "{out}");
    assert!(out.contains("nothing was changed"), "{out}");
    assert_eq!(stored(&group), before);
    let out = ok(&sync(&manifest, &group, &["--dry-run"]));
    assert!(out.contains("dry run: in sync"), "{out}");
}

fn parse(o: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}", show(o)))
}

fn entry<'v>(doc: &'v serde_json::Value, name: &str) -> &'v serde_json::Value {
    doc["schedules"]
        .as_array()
        .expect("schedules")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no schedule {name} in {doc}"))
}

#[test]
fn format_json_says_what_each_schedule_got() {
    let dir = dir("json");
    let manifest = write(&dir, "cronslot.toml", MANIFEST);
    let group = group("json");
    let json = ["--format", "json"];

    // A dry run on nothing: what would be created.
    let o = sync(&manifest, &group, &["--dry-run", "--format", "json"]);
    ok(&o);
    let v = parse(&o);
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["group"], group.as_str());
    assert_eq!(v["prefix"], "");
    assert_eq!(v["group_created"], true);
    assert_eq!(v["deployed"], 0);
    assert_eq!(v["in_sync"], false);
    assert_eq!(v["counts"]["created"], 3, "{v}");
    let nightly = entry(&v, "nightly");
    assert_eq!(nightly["action"], "create");
    assert_eq!(nightly["job"], "nightly");
    assert_eq!(nightly["tick"], false);
    assert_eq!(nightly["expression"], "cron(30 2 * * ? *)");
    assert_eq!(nightly["timezone"], "Europe/Berlin");
    let tick = entry(&v, "_tick");
    assert_eq!(tick["tick"], true);
    assert_eq!(tick["job"], serde_json::Value::Null);
    assert_eq!(tick["timezone"], serde_json::Value::Null);
    assert!(names(&group).is_empty());

    // The sync itself.
    let o = sync(&manifest, &group, &json);
    ok(&o);
    let v = parse(&o);
    assert_eq!(v["dry_run"], false);
    assert_eq!(v["group_created"], true);
    assert_eq!(entry(&v, "quarter")["action"], "create");
    assert_eq!(v["counts"]["created"], 3, "{v}");
    assert_eq!(v["counts"]["failed"], 0, "{v}");
    assert_eq!(names(&group), ["_tick", "nightly", "quarter"]);

    // A changed manifest: updated, created and deleted, each said so.
    let changed = write(&dir, "changed.toml", CHANGED);
    let o = sync(&changed, &group, &json);
    ok(&o);
    let v = parse(&o);
    assert_eq!(v["group_created"], false);
    assert_eq!(v["deployed"], 3);
    let quarter = entry(&v, "quarter");
    assert_eq!(quarter["action"], "update");
    assert!(
        quarter["differences"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d.as_str().unwrap().contains("cron(*/10 * * * ? *)")),
        "{v}"
    );
    assert_eq!(entry(&v, "weekly")["action"], "create");
    assert_eq!(entry(&v, "ticked")["action"], "create");
    let gone = entry(&v, "nightly");
    assert_eq!(gone["action"], "delete");
    assert_eq!(gone["job"], "nightly");
    assert_eq!(entry(&v, "_tick")["action"], "delete");
    assert_eq!(entry(&v, "_tick")["tick"], true);
    assert_eq!(
        v["counts"],
        serde_json::json!({"created": 2, "updated": 1, "deleted": 2, "unchanged": 0, "foreign": 0, "failed": 0})
    );

    // Once more: in sync.
    let o = sync(&changed, &group, &json);
    ok(&o);
    let v = parse(&o);
    assert_eq!(v["in_sync"], true);
    assert_eq!(v["counts"]["unchanged"], 3, "{v}");
    assert!(entry(&v, "quarter").get("differences").is_none(), "{v}");

    // check --live --format json agrees.
    let o = cronslot(&[
        "check",
        "--live",
        "aws",
        "--manifest",
        &changed,
        "--group",
        &group,
        "--format",
        "json",
    ]);
    ok(&o);
    let v = parse(&o);
    assert_eq!(v["consistent"], true, "{v}");
    assert_eq!(v["checked"], format!("schedule group {group}"));
    assert_eq!(v["differences"], serde_json::json!([]));
}

#[test]
fn check_live_passes_after_sync_and_fails_after_tampering() {
    let dir = dir("live");
    let manifest = write(&dir, "cronslot.toml", MANIFEST);
    let group = group("live");

    // Nothing deployed yet: every dedicated job is missing.
    let o = check_live(&manifest, &group);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(stdout(&o).contains("missing"), "{}", show(&o));

    ok(&sync(&manifest, &group, &[]));
    let out = ok(&check_live(&manifest, &group));
    assert!(
        out.contains(&format!("schedule group {group} matches")),
        "{out}"
    );

    // Behind its back: an hour later, in the same zone.
    let input = get(&stored(&group), "nightly").input.clone();
    put_schedule(&group, "nightly", "cron(30 3 * * ? *)", &input, true);
    let o = check_live(&manifest, &group);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let out = stdout(&o);
    assert!(out.contains("differs from"), "{out}");
    assert!(out.contains("nightly (job \"nightly\")"), "{out}");
    // The update dropped the zone (UpdateSchedule replaces everything).
    assert!(out.contains("UTC"), "{out}");

    // Sync repairs it, and the check passes again.
    let out = ok(&sync(&manifest, &group, &[]));
    assert!(out.contains("updated    nightly"), "{out}");
    ok(&check_live(&manifest, &group));

    // A deleted schedule is missing.
    runtime().block_on(async {
        client()
            .delete_schedule()
            .group_name(&group)
            .name("quarter")
            .send()
            .await
            .expect("delete");
    });
    let o = check_live(&manifest, &group);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(
        stdout(&o).contains("job \"quarter\": missing"),
        "{}",
        show(&o)
    );
}

#[test]
fn bad_input_and_aws_errors() {
    let dir = dir("errors");
    let manifest = write(&dir, "cronslot.toml", MANIFEST);
    let missing = dir.join("nope.toml");
    let o = sync(missing.to_str().expect("utf-8"), "g", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let o = sync(&manifest, "bad/group", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let o = cronslot(&[
        "sync",
        "aws",
        &manifest,
        "--target-arn",
        "jobs",
        "--role-arn",
        ROLE,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    // --group without --live is a usage error.
    let o = cronslot(&["check", "t.yaml", "--group", "g"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));

    // Nothing listens there: an AWS error, exit 1.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let o = sync(&manifest, "g", &["--endpoint-url", &endpoint]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("error: reading schedule group g"),
        "{}",
        show(&o)
    );
    // Failed before a plan: no document, even with --format json.
    let o = sync(
        &manifest,
        "g",
        &["--endpoint-url", &endpoint, "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!(stdout(&o), "", "{}", show(&o));
    let o = cronslot(&[
        "check",
        "--live",
        "aws",
        "--manifest",
        &manifest,
        "--endpoint-url",
        &endpoint,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
}
