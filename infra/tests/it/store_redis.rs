//! What `cronslot init` and `cronslot run` say of a Redis server that can
//! lose an acknowledged claim (docs/design.md §10, "Redis"): a warning per
//! setting, in text, in `init --format json` and in `run`'s log, and
//! nothing on a server that keeps the guarantee. The store commands and
//! the fleet on Redis are tested with the fleet (`fleet::`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cronslot_tests::redis::Server;

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

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("redis")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
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
    let dir = scratch("warnings");
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
