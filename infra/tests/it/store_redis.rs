//! The `cronslot` command on a real Redis server: the fleet of
//! [`crate::fleet`] (issue 17; the crash is `SIGKILL` of `redis-server`
//! with AOF and `appendfsync always`, the restart replays the append-only
//! file, the cut is `CLIENT KILL TYPE normal`), the store commands of
//! [`crate::server_cmds`], the errors, and what `cronslot init` and
//! `cronslot run` say of a server that can lose an acknowledged claim
//! (docs/design.md §10, "Redis"): a warning per setting, in text, in
//! `init --format json` and in `run`'s log, and nothing on a server that
//! keeps the guarantee.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

use cronslot_tests::redis::Server;
use jiff::Timestamp;

use crate::fleet::{self, FleetStore};
use crate::server_cmds::{self, CliStore};

/// The keys of a store on a server, under one prefix.
struct Redis<'s> {
    server: &'s Server,
    prefix: String,
    /// What the server answered for the store just before it was crashed:
    /// every record's version and the tick mark.
    before_crash: Mutex<BTreeMap<String, i64>>,
}

impl<'s> Redis<'s> {
    fn new(server: &'s Server, prefix: String) -> Redis<'s> {
        Redis {
            server,
            prefix,
            before_crash: Mutex::new(BTreeMap::new()),
        }
    }

    /// The keys of the job records (a hash of `v`, the version, and `s`,
    /// the JSON of the record).
    fn state_keys(&self) -> Vec<String> {
        let pattern = format!("{{{}:*}}:state", self.prefix);
        let keys = self.server.cli(&["--scan", "--pattern", &pattern]);
        keys.lines().map(str::to_string).collect()
    }

    /// Every record's version, and the tick mark (`tick`).
    fn versions(&self) -> BTreeMap<String, i64> {
        let mut versions: BTreeMap<String, i64> = self
            .state_keys()
            .into_iter()
            .map(|key| {
                let v = self.server.cli(&["HGET", &key, "v"]);
                (key, v.parse().expect("a version"))
            })
            .collect();
        let tick = self
            .server
            .cli(&["GET", &format!("{{{}}}:tick", self.prefix)]);
        versions.insert("tick".into(), tick.parse().unwrap_or(0));
        versions
    }
}

impl FleetStore for Redis<'_> {
    fn crash(&self) {
        *self.before_crash.lock().expect("lock") = self.versions();
        self.server.crash();
    }

    /// Restarts the server, which replays its append-only file: every
    /// write it had answered before the crash is there again.
    fn restart(&self) {
        self.server.restart();
        let log = self.server.log_tail();
        let loaded = log.rfind("DB loaded from append only file");
        assert!(
            loaded > log.rfind("Server initialized"),
            "the restarted server did not load its append-only file:\n{log}"
        );
        let before = self.before_crash.lock().expect("lock");
        assert!(before.len() > 1, "no record before the crash: {before:?}");
        let after = self.versions();
        for (key, version) in before.iter() {
            let now = after.get(key).copied().unwrap_or(-1);
            assert!(
                now >= *version,
                "{key} was at {version} before the crash, at {now} after it: a write was lost"
            );
        }
        eprintln!("the append-only file replayed: before the crash {before:?}, after it {after:?}");
    }

    fn cut_connections(&self) -> u32 {
        // The `redis-cli` that sends it is spared (`SKIPME yes`).
        let cut = self.server.cli(&["CLIENT", "KILL", "TYPE", "normal"]);
        cut.parse().expect("a count")
    }

    fn cut_name(&self) -> &'static str {
        "CLIENT KILL TYPE normal"
    }
}

impl CliStore for Redis<'_> {
    fn kind(&self) -> &'static str {
        "redis"
    }

    fn found_there(&self) -> &'static str {
        "the store was there"
    }

    fn label_start(&self) -> String {
        format!(
            "redis://127.0.0.1:{}/0?prefix={}",
            self.server.port, self.prefix
        )
    }

    fn check_init_document(&self, v: &serde_json::Value) {
        assert_eq!(v["prefix"], self.prefix.as_str(), "{v}");
    }

    fn records(&self) -> usize {
        self.state_keys().len()
    }

    fn paused(&self) -> usize {
        self.state_keys()
            .iter()
            .filter(|key| {
                let state = self.server.cli(&["HGET", key, "s"]);
                state.contains("\"paused\":true")
            })
            .count()
    }

    fn rewind_two_minutes(&self) {
        let then = Timestamp::now()
            .checked_sub(jiff::SignedDuration::from_mins(2))
            .expect("instant");
        let text = then.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        for key in self.state_keys() {
            let mut state: serde_json::Value =
                serde_json::from_str(&self.server.cli(&["HGET", &key, "s"])).expect("a record");
            rewind(&mut state, &text);
            self.server.cli(&["HSET", &key, "s", &state.to_string()]);
        }
        let tick = (then.as_millisecond() * 1000).to_string();
        self.server
            .cli(&["SET", &format!("{{{}}}:tick", self.prefix), &tick]);
    }
}

/// Sets every `created_at` and `cursor` in `value` to `to`.
fn rewind(value: &mut serde_json::Value, to: &str) {
    match value {
        serde_json::Value::Object(fields) => {
            for (name, field) in fields.iter_mut() {
                if (name == "created_at" || name == "cursor") && field.is_string() {
                    *field = to.into();
                } else {
                    rewind(field, to);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|i| rewind(i, to)),
        _ => {}
    }
}

#[test]
fn a_fleet_on_redis_runs_every_slot_once_through_kills_freezes_crashes_and_cuts() {
    // A server of its own: this test crashes it.
    let server = Server::start();
    let redis = Redis::new(&server, "fleet".into());
    fleet::runs_every_slot_once_through_faults(&redis, &server.url("fleet"), "fleet-redis");
}

/// `init`, `tick`, the store commands and `serve` on Redis, under a
/// prefix of its own.
#[test]
fn init_tick_and_the_store_commands_work_on_redis() {
    let server = cronslot_tests::redis::shared();
    let prefix = cronslot_tests::redis::unique("cli");
    let url = server.url(&prefix);
    let redis = Redis::new(server, prefix);
    server_cmds::init_tick_and_the_store_commands_work(
        &redis,
        &url,
        &server_cmds::scratch("redis", "cli"),
    );
}

/// Bad input on Redis: a wrong password, none, a closed port and a bad
/// parameter.
#[test]
fn redis_errors_name_the_store_and_never_the_password() {
    let server = Server::start_with(Some("the-right-one"), &[]);
    let secret = "Sw0rdfish-9f3e";
    let port = server.port;
    let closed = server_cmds::closed_port();
    let cases = [
        (
            format!("redis://:{secret}@127.0.0.1:{port}/0?prefix=errors"),
            2,
            "password",
        ),
        (
            format!("redis://127.0.0.1:{port}/0?prefix=errors"),
            2,
            "password",
        ),
        (
            format!("redis://:{secret}@127.0.0.1:{closed}/0?connect_timeout=2"),
            1,
            "127.0.0.1",
        ),
        (
            format!("redis://:{secret}@127.0.0.1:{closed}/0?command_timeout=soon"),
            2,
            "command_timeout",
        ),
    ];
    server_cmds::errors_name_the_store_and_never_the_password(
        &server_cmds::scratch("redis", "errors"),
        secret,
        &cases,
    );
}

/// `cronslot ARGS` with no store from the environment: each command here
/// names its store with `--store`.
fn cronslot(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(args)
        .env_remove("CRONSLOT_STORE")
        .env_remove("CRONSLOT_LOG")
        .env_remove("REDISCLI_AUTH")
        .current_dir(dir)
        .output()
        .expect("run cronslot")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const MANIFEST: &str = r#"
[defaults]
timezone = "UTC"

[[job]]
name = "ping"
schedule = "* * * * *"
command = ["true"]
"#;

#[test]
fn init_and_run_warn_of_a_server_that_can_lose_a_claim() {
    let server = Server::start_with(Some("s3cret-pass"), &[]);
    let dir = server_cmds::scratch("redis", "warnings");
    std::fs::write(dir.join("cronslot.toml"), MANIFEST).expect("manifest");
    // The URL holds the password.
    let url = server.url("ops");

    // The test server keeps the guarantee (AOF, appendfsync always).
    let o = cronslot(&dir, &["init", "--store", &url]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("?prefix=ops: created"), "{out}");
    assert!(!out.contains("warning"), "{out}");

    server.cli(&["CONFIG", "SET", "appendfsync", "everysec"]);
    server.cli(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    let o = cronslot(&dir, &["init", "--store", &url]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("ready (the store was there)"), "{out}");
    assert_eq!(out.matches("\nwarning: Redis store ").count(), 2, "{out}");
    assert!(out.contains("appendfsync is everysec"), "{out}");
    assert!(out.contains("maxmemory-policy is allkeys-lru"), "{out}");

    let o = cronslot(&dir, &["init", "--store", &url, "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(doc["kind"], "redis");
    assert_eq!(doc["created"], false);
    assert_eq!(doc["prefix"], "ops");
    let warnings = doc["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 2, "{doc}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("set appendfsync always")
    );

    // `run` logs them once at its start, and runs anyway.
    let o = cronslot(
        &dir,
        &[
            "run",
            "--store",
            &url,
            "--speed",
            "60",
            "--until",
            "+2m",
            "--log-format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let log = text(&o.stderr);
    let warned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"WARN\"") && l.contains("Redis store"))
        .collect();
    assert_eq!(warned.len(), 2, "{log}");
    assert!(text(&o.stdout).contains("ping"), "{}", text(&o.stdout));

    for output in [&o.stdout, &o.stderr] {
        assert!(!text(output).contains("s3cret-pass"));
    }
}

/// Eight processes enqueue one key at once on Redis: one run.
#[test]
fn eight_processes_enqueueing_one_key_make_one_run_on_redis() {
    let server = cronslot_tests::redis::shared();
    let url = server.url(&cronslot_tests::redis::unique("runs"));
    let dir = server_cmds::scratch("redis", "runs");
    let init = server_cmds::cronslot(&dir, &["init"], &url);
    assert!(init.status.success(), "{init:?}");
    server_cmds::eight_processes_enqueueing_one_key_make_one_run(&dir, &url);
}
