//! `cronslot check`: the rendered templates pass, hand-broken copies fail
//! with a readable diff (exit 1), unreadable templates exit 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("infra/ has a parent")
        .to_path_buf()
}

fn cronslot(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(args)
        .current_dir(workspace_root())
        .output()
        .expect("run cronslot")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Fire times are compared over the year after this instant.
const AFTER: &str = "2026-06-01T00:00:00Z";

fn check(template: &Path, manifest: &Path) -> Output {
    cronslot(&[
        "check",
        template.to_str().expect("utf-8 path"),
        "--manifest",
        manifest.to_str().expect("utf-8 path"),
        "--after",
        AFTER,
    ])
}

#[test]
fn checked_in_templates_match_their_manifests() {
    let root = workspace_root();
    for (template, manifest) in [
        (
            "infra/templates/aws-jobs.sam.yaml",
            "examples/aws-jobs/cronslot.toml",
        ),
        (
            "infra/templates/aws-jobs.cloudformation.yaml",
            "examples/aws-jobs/cronslot.toml",
        ),
        (
            "infra/templates/cf-jobs.wrangler.toml",
            "examples/cf-jobs/cronslot.toml",
        ),
        // The file the Cloudflare example deploys with.
        (
            "examples/cf-jobs/wrangler.toml",
            "examples/cf-jobs/cronslot.toml",
        ),
        (
            "infra/templates/cronslot.deployment.yaml",
            "examples/cronslot.toml",
        ),
        (
            "infra/templates/cronslot.cronjob.yaml",
            "examples/cronslot.toml",
        ),
    ] {
        let o = check(&root.join(template), &root.join(manifest));
        assert_eq!(
            o.status.code(),
            Some(0),
            "{template}:\n{}{}",
            stdout(&o),
            stderr(&o)
        );
        assert!(stdout(&o).contains("matches"), "{}", stdout(&o));
    }
}

/// A manifest with a zoned weekday job, a UTC weekly one, a UTC weekday
/// one, a frequent one and a tick-mode one.
const MANIFEST: &str = r#"
[defaults]
lease = "5m"
trigger = "dedicated"

[[job]]
name = "weekday-report"
schedule = "0 9 * * MON-FRI"
timezone = "America/New_York"
dst_gap = "skip"

[[job]]
name = "utc-weekly"
schedule = "30 6 * * SUN"

[[job]]
name = "utc-weekdays"
schedule = "45 17 * * MON-FRI"

[[job]]
name = "ping"
schedule = "*/15 * * * *"
http = { url = "https://example.com/hook" }

[[job]]
name = "ticker"
schedule = "*/5 * * * *"
trigger = "tick"
"#;

struct Fixture {
    dir: PathBuf,
    manifest: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        Fixture::with(name, MANIFEST)
    }

    fn with(name: &str, manifest_text: &str) -> Fixture {
        let dir =
            std::env::temp_dir().join(format!("cronslot-check-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let manifest = dir.join("cronslot.toml");
        std::fs::write(&manifest, manifest_text).expect("manifest");
        Fixture { dir, manifest }
    }

    /// Renders `format` into the fixture and returns its text.
    fn render(&self, format: &str, file: &str) -> String {
        self.render_with(format, file, &[])
    }

    fn render_with(&self, format: &str, file: &str, flags: &[&str]) -> String {
        let out = self.dir.join(file);
        let mut args = vec![
            "render",
            format,
            self.manifest.to_str().expect("utf-8"),
            "--out",
            out.to_str().expect("utf-8"),
        ];
        args.extend_from_slice(flags);
        let o = cronslot(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        std::fs::read_to_string(out).expect("rendered")
    }

    fn check_text(&self, file: &str, text: &str) -> Output {
        let path = self.dir.join(file);
        std::fs::write(&path, text).expect("write template");
        check(&path, &self.manifest)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `text` with the first `from` outside comment lines replaced; panics
/// when there is none. (`from` may span lines.)
fn edit(text: &str, from: &str, to: &str) -> String {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if line.trim_start().starts_with('#') {
            continue;
        }
        if let Some(at) = text[start..].find(from) {
            // The match must begin on this (uncommented) line.
            if start + at < offset {
                let at = start + at;
                return format!("{}{to}{}", &text[..at], &text[at + from.len()..]);
            }
        }
    }
    panic!("{from:?} not in the template outside comments");
}

/// `text` without the YAML resource `id` (two-space indented block).
fn without_resource(text: &str, id: &str) -> String {
    let mut out = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line == format!("  {id}:") {
            skipping = true;
            // Its comment lines went into `out` already: drop them.
            while out.last().is_some_and(|l: &&str| l.starts_with("  #")) {
                out.pop();
            }
            continue;
        }
        if skipping && line.starts_with("  ") && !line.starts_with("   ") {
            skipping = false;
        }
        if !skipping {
            out.push(line);
        }
    }
    assert!(out.len() < text.lines().count(), "{id} not found");
    out.join("\n") + "\n"
}

fn assert_fails(o: &Output, needles: &[&str]) {
    let out = stdout(o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(o));
    for needle in needles {
        assert!(out.contains(needle), "{needle:?} not in:\n{out}");
    }
}

#[test]
fn aws_templates_pass_and_hand_broken_copies_fail() {
    let f = Fixture::new("aws");
    for (format, file) in [("sam", "t.sam.yaml"), ("cloudformation", "t.cfn.yaml")] {
        let text = f.render(format, file);
        let o = f.check_text(file, &text);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{format}: {}{}",
            stdout(&o),
            stderr(&o)
        );

        // An hour changed.
        let o = f.check_text(
            "hour.yaml",
            &edit(&text, "cron(0 9 ? * 2-6 *)", "cron(0 10 ? * 2-6 *)"),
        );
        assert_fails(
            &o,
            &[
                "hour.yaml:",
                "(job \"weekday-report\"): different: cron(0 10 ? * 2-6 *) in America/New_York",
                "2026-06-01T14:00:00Z (2026-06-01 10:00 EDT (-04:00))",
                "expected: cron(0 9 ? * 2-6 *) in America/New_York",
            ],
        );

        // Weekdays off by one: a crontab's MON-FRI (1-5) means SUN-THU here.
        let o = f.check_text(
            "dow.yaml",
            &edit(&text, "cron(45 17 ? * 2-6 *)", "cron(45 17 ? * 1-5 *)"),
        );
        assert_fails(
            &o,
            &[
                "(job \"utc-weekdays\"): weekday numbers: cron(45 17 ? * 1-5 *)",
                "Sunday = 1",
            ],
        );
        let o = f.check_text(
            "dow0.yaml",
            &edit(&text, "cron(30 6 ? * 1 *)", "cron(30 6 ? * 0 *)"),
        );
        assert_fails(&o, &["(job \"utc-weekly\"): weekday numbers"]);

        // A job's schedule removed.
        let o = f.check_text(
            "missing.yaml",
            &without_resource(&text, "ScheduleUtcWeekly"),
        );
        assert_fails(
            &o,
            &[
                "job \"utc-weekly\": missing: no schedule triggers it (expected cron(30 6 ? * 1 *) in UTC)",
            ],
        );

        // The zone dropped: the schedule runs in UTC.
        let o = f.check_text(
            "zone.yaml",
            &edit(
                &text,
                "      ScheduleExpressionTimezone: America/New_York\n",
                "",
            ),
        );
        assert_fails(
            &o,
            &[
                "(job \"weekday-report\"): wrong zone: cron(0 9 ? * 2-6 *) is evaluated in UTC (no ScheduleExpressionTimezone), but the job's slots are in America/New_York",
            ],
        );

        // Deliveries retried past the next slot (every 15 minutes).
        let ping = text.find("SchedulePing:").expect("ping schedule");
        let (head, tail) = text.split_at(ping);
        let broken = format!(
            "{head}{}",
            edit(
                tail,
                "MaximumEventAgeInSeconds: 600",
                "MaximumEventAgeInSeconds: 3600"
            )
        );
        let o = f.check_text("retry.yaml", &broken);
        assert_fails(
            &o,
            &["(job \"ping\"): retries: MaximumEventAgeInSeconds 3600 outlives the next slot"],
        );

        // No tick for the tick-mode job.
        let o = f.check_text("notick.yaml", &without_resource(&text, "TickSchedule"));
        assert_fails(&o, &["missing: the tick (rate(1 minute)", "\"ticker\""]);

        // A schedule for a job the manifest does not have.
        let o = f.check_text(
            "extra.yaml",
            &edit(
                &text,
                "\\\"job\\\":\\\"ping\\\"",
                "\\\"job\\\":\\\"pong\\\"",
            ),
        );
        assert_fails(
            &o,
            &[
                "extra: it triggers job \"pong\", which the manifest does not have",
                "job \"ping\": missing",
            ],
        );
    }
}

#[test]
fn format_json_prints_every_finding_and_the_verdict() {
    let f = Fixture::new("json");
    let text = f.render("sam", "t.sam.yaml");
    let json_check = |file: &str, text: &str| {
        let path = f.dir.join(file);
        std::fs::write(&path, text).expect("write template");
        cronslot(&[
            "check",
            path.to_str().expect("utf-8 path"),
            "--manifest",
            f.manifest.to_str().expect("utf-8 path"),
            "--after",
            AFTER,
            "--format",
            "json",
        ])
    };
    let parse = |o: &Output| -> serde_json::Value {
        serde_json::from_str(&stdout(o))
            .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}", stdout(o)))
    };

    let o = json_check("ok.yaml", &text);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let v = parse(&o);
    assert_eq!(v["consistent"], true, "{v}");
    assert!(v["checked"].as_str().unwrap().ends_with("ok.yaml"), "{v}");
    assert!(
        v["manifest"].as_str().unwrap().ends_with("cronslot.toml"),
        "{v}"
    );
    assert!(v["schedules"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["from"], AFTER);
    assert_eq!(v["until"], "2027-06-01T00:00:00Z");
    assert_eq!(v["differences"], serde_json::json!([]));
    assert!(v["notes"].is_array(), "{v}");

    // A difference: the document still, exit 1, the count on stderr.
    let o = json_check(
        "hour.yaml",
        &edit(&text, "cron(0 9 ? * 2-6 *)", "cron(0 10 ? * 2-6 *)"),
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("1 difference"), "{}", stderr(&o));
    let v = parse(&o);
    assert_eq!(v["consistent"], false);
    let diffs = v["differences"].as_array().unwrap();
    assert_eq!(diffs.len(), 1, "{v}");
    assert!(diffs[0]["line"].as_u64().is_some_and(|l| l > 0), "{v}");
    assert!(
        diffs[0]["message"].as_str().unwrap().contains(
            "(job \"weekday-report\"): different: cron(0 10 ? * 2-6 *) in America/New_York"
        ),
        "{v}"
    );
    let details: Vec<&str> = diffs[0]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(
        details
            .iter()
            .any(|d| d.contains("expected: cron(0 9 ? * 2-6 *) in America/New_York")),
        "{details:?}"
    );

    // Bad input: no document.
    let o = json_check("bad.yaml", "Resources: [unclosed\n");
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "");
}

#[test]
fn wrangler_files_pass_and_hand_broken_copies_fail() {
    let f = Fixture::new("cf");
    let text = f.render("wrangler", "wrangler.toml");
    let o = f.check_text("wrangler.toml", &text);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));

    // An hour changed.
    let o = f.check_text(
        "hour.toml",
        &edit(&text, "\"30 6 * * 1\",", "\"30 7 * * 1\","),
    );
    assert_fails(
        &o,
        &[
            "hour.toml:",
            "cron \"30 7 * * 1\" (job \"utc-weekly\"?): different",
            "expected: \"30 6 * * 1\"",
        ],
    );

    // Weekdays off by one: the crontab line `45 17 * * 1-5` fires SUN-THU.
    let o = f.check_text(
        "dow.toml",
        &edit(&text, "\"45 17 * * 2-6\",", "\"45 17 * * 1-5\","),
    );
    assert_fails(
        &o,
        &[
            "cron \"45 17 * * 1-5\" (job \"utc-weekdays\"): weekday numbers",
            "Cloudflare counts Sunday = 1",
        ],
    );
    // Sunday as 0, which Cloudflare refuses.
    let o = f.check_text(
        "dow0.toml",
        &edit(&text, "\"30 6 * * 1\",", "\"30 6 * * 0\","),
    );
    assert_fails(
        &o,
        &["cron \"30 6 * * 0\" (job \"utc-weekly\"): weekday numbers"],
    );

    // A job's cron removed.
    let missing: String = text
        .lines()
        .filter(|l| !l.contains("\"30 6 * * 1\","))
        .map(|l| format!("{l}\n"))
        .collect();
    let o = f.check_text("missing.toml", &missing);
    assert_fails(
        &o,
        &["job \"utc-weekly\": missing: its cron \"30 6 * * 1\""],
    );

    // The zone dropped: the New York job's wall-clock time written as UTC.
    let zone = edit(&text, "\"30 6 * * 1\",", "\"30 6 * * 1\", \"0 9 * * 2-6\",");
    let o = f.check_text("zone.toml", &zone);
    assert_fails(
        &o,
        &[
            "cron \"0 9 * * 2-6\" (job \"weekday-report\"): wrong zone: it is the job's America/New_York time, but Cloudflare runs crons in UTC",
        ],
    );

    // No tick.
    let o = f.check_text("notick.toml", &edit(&text, "  \"* * * * *\",", ""));
    assert_fails(&o, &["missing: the tick \"* * * * *\""]);

    // No Durable Object binding.
    let o = f.check_text(
        "nobinding.toml",
        &edit(&text, "name = \"CRONSLOT_JOBS\"", "name = \"JOBS\""),
    );
    assert_fails(&o, &["no Durable Object binding CRONSLOT_JOBS"]);

    // More crons than the account allows.
    let o = f.check_text("wrangler.toml", &text);
    let o2 = cronslot(&[
        "check",
        f.dir.join("wrangler.toml").to_str().expect("utf-8"),
        "--manifest",
        f.manifest.to_str().expect("utf-8"),
        "--after",
        AFTER,
        "--cron-limit",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_fails(&o2, &["crons exceed the cron trigger limit of 3"]);
}

#[test]
fn hand_written_sam_events_and_json_are_read() {
    let f = Fixture::new("handwritten");
    // SAM function events, the way people write them by hand.
    let sam = r#"
Transform: AWS::Serverless-2016-10-31
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Handler: bootstrap
      Events:
        Report:
          Type: ScheduleV2
          Properties:
            ScheduleExpression: cron(0 9 ? * MON-FRI *)
            ScheduleExpressionTimezone: America/New_York
            Input: '{"cronslot":{"job":"weekday-report","scheduled_time":"<aws.scheduler.scheduled-time>"}}'
            RetryPolicy:
              MaximumEventAgeInSeconds: 600
        Weekly:
          Type: Schedule
          Properties:
            Schedule: cron(30 6 ? * SUN *)
            Name: cronslot-utc-weekly
        Weekdays:
          Type: Schedule
          Properties:
            Schedule: cron(45 17 ? * MON-FRI *)
            Name: cronslot-utc-weekdays
        Ping:
          Type: ScheduleV2
          Properties:
            ScheduleExpression: !Sub "cron(*/15 * * * ? *)"
            Input: '{"cronslot":{"job":"ping","scheduled_time":"<aws.scheduler.scheduled-time>"}}'
            RetryPolicy:
              MaximumEventAgeInSeconds: 600
        Tick:
          Type: ScheduleV2
          Properties:
            ScheduleExpression: rate(1 minute)
            Input: '{"cronslot":{"tick":true,"scheduled_time":"<aws.scheduler.scheduled-time>"}}'
"#;
    let o = f.check_text("events.yaml", sam);
    // The rules keep EventBridge's default retries (24 h): no longer than
    // the gaps of their weekly and weekday jobs, so nothing to report.
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));

    // The same drift in JSON, with the line of the schedule.
    let json = r#"{
  "Resources": {
    "Report": {
      "Type": "AWS::Scheduler::Schedule",
      "Properties": {
        "ScheduleExpression": "cron(0 9 ? * 1-5 *)",
        "ScheduleExpressionTimezone": "America/New_York",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": {
          "Arn": {"Fn::GetAtt": ["Fn", "Arn"]},
          "RoleArn": {"Fn::GetAtt": ["Role", "Arn"]},
          "Input": "{\"cronslot\":{\"job\":\"weekday-report\",\"scheduled_time\":\"<aws.scheduler.scheduled-time>\"}}",
          "RetryPolicy": {"MaximumEventAgeInSeconds": 600}
        }
      }
    }
  }
}"#;
    let o = f.check_text("t.json", json);
    assert_fails(
        &o,
        &[
            "t.json:6: Report (job \"weekday-report\"): weekday numbers",
            "job \"utc-weekly\": missing",
        ],
    );

    // An input the function would refuse.
    let typo = edit(
        sam,
        "\"scheduled_time\":\"<aws.scheduler.scheduled-time>\"}}'\n            RetryPolicy",
        "\"scheduled_at\":\"<aws.scheduler.scheduled-time>\"}}'\n            RetryPolicy",
    );
    let o = f.check_text("typo.yaml", &typo);
    assert_fails(
        &o,
        &["Fn.Events.Report: the function would refuse the Input"],
    );
}

#[test]
fn unreadable_templates_exit_2_with_a_line() {
    let f = Fixture::new("bad");
    let text = f.render("sam", "t.yaml");

    let o = f.check_text("syntax.yaml", "Resources:\n  A: [\n    b\n");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("syntax.yaml:"), "{}", stderr(&o));

    let o = f.check_text(
        "cron.yaml",
        &edit(&text, "cron(0 9 ? * 2-6 *)", "cron(0 9 * * 2-6 *)"),
    );
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let line = text
        .lines()
        .position(|l| l.contains("ScheduleExpression: \"cron(0 9 ? * 2-6 *)"))
        .expect("the schedule")
        + 1;
    assert!(
        stderr(&o).contains(&format!(
            "cron.yaml:{line}: ScheduleWeekdayReport: invalid EventBridge expression"
        )),
        "{}",
        stderr(&o)
    );

    let o = f.check_text("plain.yaml", "a: 1\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no Resources"), "{}", stderr(&o));

    let o = f.check_text("w.toml", "[triggers\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("w.toml:1:"), "{}", stderr(&o));

    let o = f.check_text("w2.toml", "[triggers]\ncrons = [\"61 * * * *\"]\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("w2.toml:2: invalid Cloudflare cron"),
        "{}",
        stderr(&o)
    );
}

/// Command and http jobs (what `cronslot run` and `tick` run): a zoned
/// weekday one with the longest timeout, a frequent one with the smallest
/// starting deadline, a weekly one.
const K8S_MANIFEST: &str = r#"
[defaults]
lease = "5m"
timeout = "1m"
starting_deadline = "2m"

[[job]]
name = "weekday-report"
schedule = "0 9 * * MON-FRI"
timezone = "America/New_York"
timeout = "4m"
command = ["sh", "-c", "echo report"]

[[job]]
name = "ping"
schedule = "*/15 * * * *"
starting_deadline = "90s"
http = { url = "https://example.com/hook" }

[[job]]
name = "cleanup"
schedule = "30 6 * * SUN"
command = ["sh", "-c", "echo cleanup"]
"#;

/// The manifest's drift inside the ConfigMap, the same in both kinds.
fn assert_config_map_drift(f: &Fixture, file: &str, text: &str) {
    // A schedule changed.
    let o = f.check_text(
        &format!("schedule.{file}"),
        &edit(
            text,
            "schedule = \"*/15 * * * *\"",
            "schedule = \"*/20 * * * *\"",
        ),
    );
    let line = text
        .lines()
        .position(|l| l.trim() == "name = \"ping\"")
        .expect("the ping job")
        + 1;
    assert_fails(
        &o,
        &[
            &format!(
                "schedule.{file}:{line}: job \"ping\": different schedule: the ConfigMap cronslot-manifest data.cronslot.toml has \"*/20 * * * *\" in UTC, which fires at other instants than \"*/15 * * * *\" in UTC"
            ),
            "does not fire at these slots of the manifest",
            "expected: \"*/15 * * * *\" in UTC",
        ],
    );

    // The zone changed.
    let o = f.check_text(
        &format!("zone.{file}"),
        &edit(
            text,
            "timezone = \"America/New_York\"",
            "timezone = \"Europe/Berlin\"",
        ),
    );
    assert_fails(
        &o,
        &[
            "job \"weekday-report\": wrong zone: the ConfigMap cronslot-manifest data.cronslot.toml has \"0 9 * * MON-FRI\" in Europe/Berlin",
        ],
    );

    // A job removed.
    let start = text
        .rfind("    [[job]]\n    name = \"cleanup\"")
        .expect("cleanup");
    let end = start
        + text[start..]
            .find("\n---")
            .expect("the end of the ConfigMap");
    let removed = format!("{}{}", &text[..start], &text[end + 1..]);
    let o = f.check_text(&format!("missing.{file}"), &removed);
    assert_fails(
        &o,
        &[
            "job \"cleanup\": missing from the ConfigMap cronslot-manifest data.cronslot.toml: it never runs",
        ],
    );

    // A job added.
    let added = edit(
        text,
        "    [[job]]\n    name = \"cleanup\"",
        "    [[job]]\n    name = \"extra\"\n    schedule = \"@hourly\"\n    command = [\"true\"]\n\n    [[job]]\n    name = \"cleanup\"",
    );
    let o = f.check_text(&format!("extra.{file}"), &added);
    assert_fails(
        &o,
        &[
            "job \"extra\": extra: the ConfigMap cronslot-manifest data.cronslot.toml has it, the manifest does not",
        ],
    );

    // A setting changed.
    let o = f.check_text(
        &format!("timeout.{file}"),
        &edit(text, "timeout = \"4m\"", "timeout = \"2m\""),
    );
    assert_fails(
        &o,
        &[
            "job \"weekday-report\": different settings in the ConfigMap cronslot-manifest data.cronslot.toml: timeout",
            "timeout: 2m (the manifest: 4m)",
        ],
    );

    // The store Secret reference dropped, or the URL written in the file.
    let env = "          env:\n            - name: CRONSLOT_STORE\n              valueFrom:\n                secretKeyRef:\n                  name: cronslot-store\n                  key: url\n";
    let indent = text
        .lines()
        .find(|l| l.trim_start().starts_with("env:"))
        .map(|l| l.len() - l.trim_start().len())
        .expect("env");
    let env: String = env
        .lines()
        .map(|l| format!("{}{}\n", " ".repeat(indent - 10), l))
        .collect();
    assert!(text.contains(&env), "{env}");
    let o = f.check_text(&format!("nosecret.{file}"), &text.replace(&env, ""));
    assert_fails(
        &o,
        &["missing store Secret reference: no --store and no env CRONSLOT_STORE"],
    );
    let literal = text.replace(
        &env,
        &format!(
            "{0}env:\n{0}  - name: CRONSLOT_STORE\n{0}    value: \"dynamodb://jobs?region=eu-west-1\"\n",
            " ".repeat(indent)
        ),
    );
    let o = f.check_text(&format!("literal.{file}"), &literal);
    assert_fails(
        &o,
        &[
            "env CRONSLOT_STORE is written in the file (value): the store URL, with any credentials in it, belongs in a Secret",
        ],
    );
    let manifest_arg = text
        .lines()
        .find(|l| l.trim() == "- /etc/cronslot/cronslot.toml")
        .expect("the manifest argument");
    let with_store = |value: &str| {
        let store = manifest_arg.replace("/etc/cronslot/cronslot.toml", "\"--store\"");
        let value = manifest_arg.replace("/etc/cronslot/cronslot.toml", value);
        text.replace(manifest_arg, &format!("{manifest_arg}\n{store}\n{value}"))
    };
    let o = f.check_text(
        &format!("argstore.{file}"),
        &with_store("\"postgres://u:secret@db/jobs\""),
    );
    assert_fails(
        &o,
        &["--store is written in the file (postgres://***@db/jobs)"],
    );
    assert!(!stdout(&o).contains("secret@"), "{}", stdout(&o));
    // `--store "$(CRONSLOT_STORE)"` still reads the Secret, with a note.
    let o = f.check_text(
        &format!("envstore.{file}"),
        &with_store("\"$(CRONSLOT_STORE)\""),
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("puts the store URL on the process's command line"),
        "{}",
        stdout(&o)
    );

    // The same jobs written another way: consistent, with a note.
    let o = f.check_text(
        &format!("comment.{file}"),
        &edit(
            text,
            "    [[job]]\n    name = \"ping\"",
            "    # a new comment\n    [[job]]\n    name = \"ping\"",
        ),
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("but its jobs are the same"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn kubernetes_deployments_pass_and_hand_broken_copies_fail() {
    let f = Fixture::with("k8s-deployment", K8S_MANIFEST);
    let text = f.render("kubernetes", "d.yaml");
    let o = f.check_text("d.yaml", &text);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("d.yaml matches"), "{}", stdout(&o));
    assert_config_map_drift(&f, "d.yaml", &text);

    // Not `cronslot run` on the mounted manifest.
    let o = f.check_text("tick.yaml", &edit(&text, "- run\n", "- tick\n"));
    assert_fails(
        &o,
        &["Deployment cronslot: runs `cronslot tick`, not `cronslot run`"],
    );
    let o = f.check_text(
        "path.yaml",
        &edit(
            &text,
            "- /etc/cronslot/cronslot.toml",
            "- /etc/cronslot/other.toml",
        ),
    );
    assert_fails(
        &o,
        &[
            "Deployment cronslot: runs /etc/cronslot/other.toml, but ConfigMap cronslot-manifest has no data key other.toml",
        ],
    );
    let o = f.check_text(
        "unmounted.yaml",
        &edit(
            &text,
            "- /etc/cronslot/cronslot.toml",
            "- /app/cronslot.toml",
        ),
    );
    assert_fails(
        &o,
        &["the manifest /app/cronslot.toml is not a file of a mounted ConfigMap"],
    );

    // SIGTERM would cut the 4m job.
    let o = f.check_text(
        "grace.yaml",
        &edit(
            &text,
            "terminationGracePeriodSeconds: 270",
            "terminationGracePeriodSeconds: 60",
        ),
    );
    assert_fails(
        &o,
        &[
            "terminationGracePeriodSeconds 60 is shorter than the longest job timeout (job weekday-report), 4m",
            "expected: 270",
        ],
    );

    // The runner's drain outlasts the pod's grace: the kubelet kills it
    // before it lets its last runs go.
    let o = f.check_text("drain.yaml", &edit(&text, "- \"240s\"", "- \"270s\""));
    assert_fails(
        &o,
        &[
            "the runner's --grace 270s is not shorter than terminationGracePeriodSeconds 270",
            "expected: terminationGracePeriodSeconds at least the grace + 30",
        ],
    );

    // Probes nobody answers.
    let o = f.check_text(
        "nohealth.yaml",
        &edit(
            &text,
            "            - \"--health-listen\"\n            - \"0.0.0.0:8080\"\n",
            "",
        ),
    );
    assert_fails(
        &o,
        &["livenessProbe and readinessProbe over HTTP, but no --health-listen"],
    );
}

#[test]
fn kubernetes_cronjobs_pass_and_hand_broken_copies_fail() {
    let f = Fixture::with("k8s-cronjob", K8S_MANIFEST);
    let text = f.render_with("kubernetes", "c.yaml", &["--kind", "cronjob"]);
    let o = f.check_text("c.yaml", &text);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("c.yaml matches"), "{}", stdout(&o));
    assert_config_map_drift(&f, "c.yaml", &text);

    // The smallest starting deadline is ping's 90s.
    assert!(text.contains("startingDeadlineSeconds: 90\n"), "{text}");
    let o = f.check_text(
        "deadline.yaml",
        &edit(
            &text,
            "startingDeadlineSeconds: 90",
            "startingDeadlineSeconds: 600",
        ),
    );
    assert_fails(
        &o,
        &[
            "CronJob cronslot: startingDeadlineSeconds 600 differs from what `cronslot render kubernetes` writes: 90 (the smallest starting_deadline of the manifest's jobs (job ping: 1m30s))",
        ],
    );
    let o = f.check_text(
        "nodeadline.yaml",
        &edit(&text, "  startingDeadlineSeconds: 90\n", ""),
    );
    assert_fails(&o, &["startingDeadlineSeconds unset (no deadline) differs"]);

    let o = f.check_text(
        "policy.yaml",
        &edit(
            &text,
            "concurrencyPolicy: Forbid",
            "concurrencyPolicy: Allow",
        ),
    );
    assert_fails(
        &o,
        &["CronJob cronslot: concurrencyPolicy Allow: ticks pile up behind a slow one"],
    );
    let line = text
        .lines()
        .position(|l| l.trim() == "concurrencyPolicy: Forbid")
        .expect("policy")
        + 1;
    assert!(
        stdout(&o).contains(&format!("policy.yaml:{line}: ")),
        "{}",
        stdout(&o)
    );

    let o = f.check_text(
        "schedule.yaml",
        &edit(
            &text,
            "schedule: \"* * * * *\"",
            "schedule: \"*/5 * * * *\"",
        ),
    );
    assert_fails(
        &o,
        &["CronJob cronslot: the tick's schedule is \"*/5 * * * *\" in Etc/UTC, not every minute"],
    );

    let o = f.check_text(
        "active.yaml",
        &edit(
            &text,
            "activeDeadlineSeconds: 300",
            "activeDeadlineSeconds: 120",
        ),
    );
    assert_fails(
        &o,
        &["activeDeadlineSeconds 120 is shorter than the longest job timeout, 4m"],
    );

    let o = f.check_text("run.yaml", &edit(&text, "- tick\n", "- run\n"));
    assert_fails(
        &o,
        &["CronJob cronslot: runs `cronslot run`, not `cronslot tick`"],
    );

    // An unreadable schedule is bad input, with its line.
    let o = f.check_text(
        "bad.yaml",
        &edit(&text, "schedule: \"* * * * *\"", "schedule: \"61 * * * *\""),
    );
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let line = text
        .lines()
        .position(|l| l.trim() == "schedule: \"* * * * *\"")
        .expect("schedule")
        + 1;
    assert!(
        stderr(&o).contains(&format!(
            "bad.yaml:{line}: CronJob cronslot: invalid schedule"
        )),
        "{}",
        stderr(&o)
    );

    // No workload at all.
    let config_map_only = &text[..text.rfind("\n---\n").expect("two documents") + 1];
    let o = f.check_text("cm.yaml", config_map_only);
    assert_fails(&o, &["no Deployment or CronJob: nothing runs the jobs"]);
}
