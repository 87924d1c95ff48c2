//! The dashboard in a real browser (headless Chromium through
//! chromedriver), served by `cronslot serve` on SQLite: sign in, see every
//! job, open a job's timeline, pause and resume, redrive a dead letter and
//! see the store change, at a desktop's and a phone's width. Screenshots
//! are kept under `target/` (the test binary's scratch directory).

use std::path::{Path, PathBuf};
use std::time::Duration;

use cronslot_tests::webdriver::Browser;
use serde_json::{Value, json};

use crate::serve::{ADMIN_TOKEN, TICK_SECRET, call, job, json as body_json, serve, stop};
use crate::tick::{due_store, with_room_in_the_minute};

const JOBS: &str = r#"
[[job]]
name = "report"
schedule = "* * * * *"
timeout = "20s"
command = ["sh", "-c", "echo \"$CRONSLOT_SLOT\" >> ran.log"]

[[job]]
name = "export"
schedule = "*/5 * * * *"
timezone = "Europe/Berlin"
timeout = "20s"
retry = { max_attempts = 1 }
command = ["sh", "-c", "echo 'export target unreachable' >&2; exit 3"]
"#;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("dashboard")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Saves a screenshot and checks that it shows something: a page with
/// content compresses far worse than an empty one.
fn screenshot(browser: &Browser, dir: &Path, name: &str, blank: usize) {
    let png = browser.screenshot(&dir.join(format!("{name}.png")));
    assert!(png.starts_with(b"\x89PNG"), "{name}: not a PNG");
    assert!(
        png.len() > 3 * blank,
        "{name}.png looks blank: {} bytes, an empty page {blank}",
        png.len()
    );
}

fn status(port: u16) -> Value {
    body_json(&call(port, "GET", "/cronslot/status", Some(ADMIN_TOKEN)))
}

#[test]
fn the_dashboard_works_in_a_real_browser() {
    let dir = scratch("browser");
    // `export` fails at its slot: make it due now, as `report` is.
    let manifest = JOBS.replace("*/5 * * * *", "* * * * *");
    let store = due_store(&dir, &manifest);
    with_room_in_the_minute(Duration::from_secs(50));
    let (child, port) = serve(
        &dir,
        &store,
        &[],
        &[
            ("CRONSLOT_ADMIN_TOKEN", ADMIN_TOKEN),
            ("CRONSLOT_TICK_SECRET", TICK_SECRET),
        ],
    );
    let tick = call(port, "POST", "/cronslot/tick", Some(TICK_SECRET));
    assert_eq!(body_json(&tick)["runs"], 2, "{tick:?}");

    let browser = Browser::start(&dir, 1280, 900);
    browser.goto("about:blank");
    let blank = browser.screenshot(&dir.join("blank.png")).len();
    let base = format!("http://127.0.0.1:{port}/cronslot/");
    browser.goto(&base);

    // A wrong token is refused and forgotten.
    browser.type_on("#token", "not-the-token");
    browser.click_on("#login button[type=submit]");
    browser.wait_until(
        "the refusal is shown",
        "return document.getElementById('login-error').textContent.includes('refused')",
    );
    assert_eq!(
        browser.execute("return sessionStorage.length", json!([])),
        json!(0)
    );
    screenshot(&browser, &dir, "login", blank);

    // Sign in: every job, with its schedule in words and its health.
    browser.type_on("#token", ADMIN_TOKEN);
    browser.click_on("#login button[type=submit]");
    browser.wait_until(
        "the jobs table lists both jobs",
        "return document.querySelectorAll('#jobs tbody tr').length === 2",
    );
    let table = browser.text_of("#jobs");
    assert!(
        table.contains("report") && table.contains("export"),
        "{table}"
    );
    assert!(table.contains("Every minute"), "{table}");
    assert!(table.contains("Europe/Berlin"), "{table}");
    let health = |job: &str| {
        browser.execute(
            "return document.querySelector(`#jobs tr[data-job=${arguments[0]}] .badge`).textContent",
            json!([job]),
        )
    };
    assert_eq!(health("report"), json!("ok"));
    assert_eq!(
        health("export"),
        json!("never succeeded"),
        "it ran and failed"
    );
    // The token lives in this tab's session storage, never in the URL.
    assert_eq!(
        browser.execute(
            "return [sessionStorage.getItem('cronslot-admin-token'), location.href]",
            json!([])
        ),
        json!([ADMIN_TOKEN, base])
    );
    // Each job's last day as a strip of slot fates, coloured by fate:
    // report's run succeeded (green) after slots missed by catch-up
    // (brown); export's failed for good and is a dead letter (red).
    let strip = |job: &str| {
        browser.execute(
            "return [...document.querySelectorAll(`#jobs tr[data-job=${arguments[0]}] svg.strip rect.fate`)]\
               .map((r) => r.getAttribute('class').split(' ')[1] + ' ' + getComputedStyle(r).fill)",
            json!([job]),
        )
    };
    assert_eq!(
        strip("report"),
        json!(["f-succeeded rgb(26, 127, 55)", "f-missed rgb(141, 110, 99)"]),
        "report's strip"
    );
    assert_eq!(
        strip("export"),
        json!([
            "f-failed rgb(198, 40, 40)",
            "f-dead rgb(198, 40, 40)",
            "f-missed rgb(141, 110, 99)"
        ]),
        "export's strip"
    );
    screenshot(&browser, &dir, "jobs", blank);
    // The page refreshes by itself: a pause made elsewhere shows up.
    let pause = call(
        port,
        "POST",
        "/cronslot/jobs/report/pause",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(pause.status, 200, "{pause:?}");
    browser.wait_until(
        "the table shows the pause without a reload",
        "const row = document.querySelector('#jobs tr[data-job=report]'); \
         return !!row && row.innerText.includes('paused')",
    );
    let resume = call(
        port,
        "POST",
        "/cronslot/jobs/report/resume",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(resume.status, 200, "{resume:?}");

    // A job's page: its recent slots drawn on a time axis (the run as a
    // bar, its slot's tick and wait, the missed span beneath), its
    // timeline and next slots.
    browser.click_on("#jobs a[href='#/job/report']");
    browser.wait_for("#slots");
    assert_eq!(
        browser.execute(
            "const s = document.getElementById('slots'); \
             return [s.querySelectorAll('rect.run').length, \
                     getComputedStyle(s.querySelector('rect.run')).fill, \
                     s.querySelectorAll('rect.span.f-missed').length, \
                     s.querySelectorAll('line.slot-tick').length, \
                     s.querySelectorAll('line.wait').length]",
            json!([])
        ),
        json!([1, "rgb(26, 127, 55)", 1, 1, 1])
    );
    let timeline = browser.text_of("#timeline");
    assert!(timeline.contains("succeeded"), "{timeline}");
    // The slots before the one that ran were missed (catch-up policy).
    assert!(
        timeline.contains("missed") && timeline.contains("catch up"),
        "{timeline}"
    );
    browser.wait_for("#next tr");
    screenshot(&browser, &dir, "job", blank);

    // Pause, then resume: each asks first, and the store changes.
    browser.click_on("#pause");
    let asked = browser.accept_dialog();
    assert!(asked.contains("Pause report"), "{asked}");
    browser.wait_for("#resume");
    browser.wait_until(
        "the pause is confirmed",
        "return document.getElementById('notice').textContent === 'report is paused.'",
    );
    assert_eq!(job(&status(port), "report")["paused"], true);
    browser.click_on("#resume");
    browser.accept_dialog();
    browser.wait_for("#pause");
    assert_eq!(job(&status(port), "report")["paused"], false);

    // Trigger now: asks, then says what became of the current slot (it
    // ran already, or, in a new minute, runs now).
    browser.execute(
        "document.getElementById('notice').textContent = ''",
        json!([]),
    );
    browser.click_on("#trigger");
    let asked = browser.accept_dialog();
    assert!(asked.contains("Run the current slot of report"), "{asked}");
    browser.wait_until(
        "the trigger's outcome is shown",
        "return document.getElementById('notice').textContent.includes('report')",
    );

    // Backfill a range of past slots: queued, waiting to run.
    let now = jiff::Timestamp::now();
    let from = (now - jiff::SignedDuration::from_mins(3)).to_string();
    let to = (now - jiff::SignedDuration::from_mins(1)).to_string();
    browser.type_on("#backfill input[name=from]", &from);
    browser.type_on("#backfill input[name=to]", &to);
    browser.click_on("#backfill button[type=submit]");
    let asked = browser.accept_dialog();
    assert!(asked.contains(&from) && asked.contains(&to), "{asked}");
    browser.wait_until(
        "the backfill's outcome is shown",
        "return document.getElementById('notice').textContent.includes('queued to run again')",
    );
    let pending = job(&status(port), "report")["pending"]
        .as_u64()
        .unwrap_or(0);
    assert!(pending >= 1, "the backfilled slots wait to run");

    // The dead letter, with its error; redrive it.
    browser.execute("location.hash = '#/dlq'", json!([]));
    let dlq = browser.text_of("#dlq");
    assert!(dlq.contains("export target unreachable"), "{dlq}");
    screenshot(&browser, &dir, "dlq", blank);
    browser.click_on("#dlq button.redrive");
    let asked = browser.accept_dialog();
    assert!(asked.contains("export@"), "{asked}");
    browser.wait_until(
        "the dead letter is gone",
        "return document.body.innerText.includes('No dead letters.')",
    );
    let letters = body_json(&call(port, "GET", "/cronslot/dlq", Some(ADMIN_TOKEN)));
    assert_eq!(letters["dead_letters"], json!([]), "{letters}");
    assert_eq!(
        job(&status(port), "export")["pending"],
        1,
        "redriven: waiting to run"
    );

    // A phone's width: the tables become stacked cards.
    browser.resize(390, 844);
    browser.execute("location.hash = '#/'", json!([]));
    browser.wait_until(
        "the jobs table is stacked",
        "const h = document.querySelector('#jobs thead'); \
         return !!h && getComputedStyle(h).display === 'none'",
    );
    screenshot(&browser, &dir, "phone", blank);

    // Log out: the token is gone from the tab.
    browser.click_on("#logout");
    browser.wait_for("#token");
    assert_eq!(
        browser.execute("return sessionStorage.length", json!([])),
        json!(0)
    );
    drop(browser);
    stop(child);
}

const DYNAMIC: &str = r#"
[[job]]
name = "report"
schedule = "0 3 * * *"
timeout = "20s"
command = ["true"]

[[job]]
name = "tenant-invoice"
dynamic = true
timeout = "20s"
command = ["true"]
"#;

/// Writes `count` schedules of `tenant-invoice` (`t-000`..), every third
/// on the plan `pro`, straight into the store.
fn write_schedules(store_path: &Path, count: usize) {
    use cronslot_core::coord::exec::block_on;
    use cronslot_core::coord::{CasCoordinator, Schedules, decide::Precondition};
    use cronslot_core::manifest::parse_manifest;
    use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
    use cronslot_sqlite::SqliteStore;

    let manifest = parse_manifest(DYNAMIC, "cronslot.toml").expect("manifest");
    let template = manifest.template("tenant-invoice").expect("dynamic job");
    let c = CasCoordinator::new(SqliteStore::open(store_path).expect("open the store"), 5);
    for i in 0..count {
        let plan = if i % 3 == 0 { "pro" } else { "basic" };
        let spec = ScheduleSpec::from_json(&format!(
            r#"{{"cron":"0 9 1 * *","timezone":"Europe/Berlin","payload":{{"tenant":{i}}},"labels":{{"plan":"{plan}"}}}}"#
        ))
        .expect("spec");
        let key = ScheduleKey::new(format!("t-{i:03}")).expect("key");
        block_on(c.put_schedule(
            template,
            &key,
            spec,
            Precondition::None,
            jiff::Timestamp::now(),
        ))
        .expect("write the schedule");
    }
}

/// A dynamic job's schedules in the browser: listed from the jobs page,
/// paged 50 at a time and filtered by label; a schedule's page shows its
/// spec, payload and next slots, pauses and resumes it by its key, and
/// deletes it on the version it shows.
#[test]
fn the_dashboard_pages_through_a_dynamic_jobs_schedules() {
    let dir = scratch("schedules");
    let store = due_store(&dir, DYNAMIC);
    write_schedules(&dir.join("state.db"), 60);
    let (child, port) = serve(&dir, &store, &[], &[("CRONSLOT_ADMIN_TOKEN", ADMIN_TOKEN)]);
    let browser = Browser::start(&dir, 1280, 900);
    browser.goto("about:blank");
    let blank = browser.screenshot(&dir.join("blank.png")).len();
    browser.goto(&format!("http://127.0.0.1:{port}/cronslot/"));
    browser.type_on("#token", ADMIN_TOKEN);
    browser.click_on("#login button[type=submit]");

    // The jobs page names the dynamic job; its page lists the first 50
    // schedules in key order, the next page the other 10.
    browser.click_on("#dynamic a");
    browser.wait_until(
        "the first page of schedules",
        "return document.querySelectorAll('#schedules tbody tr').length === 50",
    );
    let keys = |browser: &Browser| {
        browser.execute(
            "return [...document.querySelectorAll('#schedules tbody tr')].map(r => r.dataset.key)",
            json!([]),
        )
    };
    let first: Vec<String> = (0..50).map(|i| format!("t-{i:03}")).collect();
    assert_eq!(keys(&browser), json!(first));
    let table = browser.text_of("#schedules");
    assert!(
        table.contains("0 9 1 * *")
            && table.contains("Europe/Berlin")
            && table.contains("plan=pro"),
        "{table}"
    );
    screenshot(&browser, &dir, "schedules", blank);
    browser.click_on("#next-page");
    browser.wait_until(
        "the second page",
        "return document.querySelectorAll('#schedules tbody tr').length === 10",
    );
    let second: Vec<String> = (50..60).map(|i| format!("t-{i:03}")).collect();
    assert_eq!(keys(&browser), json!(second));
    assert_eq!(
        browser.execute("return !!document.getElementById('next-page')", json!([])),
        json!(false),
        "the last page has no next"
    );

    // A label filter: the schedules on the plan pro (every third).
    browser.click_on("#first-page");
    browser.wait_until(
        "the first page again",
        "return document.querySelectorAll('#schedules tbody tr').length === 50",
    );
    browser.type_on("#filter input[name=label]", "plan:pro");
    browser.click_on("#filter button[type=submit]");
    browser.wait_until(
        "the filtered page",
        "return document.querySelectorAll('#schedules tbody tr').length === 20",
    );
    let pro: Vec<String> = (0..60).step_by(3).map(|i| format!("t-{i:03}")).collect();
    assert_eq!(keys(&browser), json!(pro));

    // One schedule: its spec, its payload, its next slots.
    browser.click_on("#schedules a[href='#/schedule/tenant-invoice/t-003']");
    browser.wait_for("#spec");
    let spec = browser.text_of("#spec");
    assert!(
        spec.contains("0 9 1 * *") && spec.contains("Europe/Berlin") && spec.contains("plan=pro"),
        "{spec}"
    );
    assert!(browser.text_of("#payload").contains("\"tenant\": 3"));
    browser.wait_for("#next tr");
    screenshot(&browser, &dir, "schedule", blank);

    // Pause and resume act on that schedule alone.
    let schedule = |key: &str| {
        body_json(&call(
            port,
            "GET",
            &format!("/cronslot/schedules/tenant-invoice/{key}"),
            Some(ADMIN_TOKEN),
        ))
    };
    browser.click_on("#pause");
    let asked = browser.accept_dialog();
    assert!(asked.contains("Pause t-003 of tenant-invoice"), "{asked}");
    browser.wait_for("#resume");
    assert_eq!(schedule("t-003")["status"]["paused"], true);
    assert_eq!(schedule("t-004")["status"]["paused"], false);
    browser.click_on("#resume");
    browser.accept_dialog();
    browser.wait_for("#pause");
    assert_eq!(schedule("t-003")["status"]["paused"], false);

    // Delete, on the version shown: back to the list, without it.
    browser.click_on("#delete");
    let asked = browser.accept_dialog();
    assert!(
        asked.contains("Delete t-003 of tenant-invoice (version 1)"),
        "{asked}"
    );
    browser.wait_until(
        "the list, with the outcome",
        "return !!document.getElementById('schedules') && \
         document.getElementById('notice').textContent.includes('t-003')",
    );
    let gone = call(
        port,
        "GET",
        "/cronslot/schedules/tenant-invoice/t-003",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(gone.status, 404, "{gone:?}");
    assert_eq!(
        browser.execute(
            "return !!document.querySelector('#schedules tr[data-key=\"t-003\"]')",
            json!([])
        ),
        json!(false)
    );
    drop(browser);
    stop(child);
}

const RUNS: &str = r#"
[[job]]
name = "report"
schedule = "0 3 * * *"
timeout = "20s"
command = ["true"]

[[job]]
name = "order-mail"
dynamic = true
timeout = "20s"
command = ["sh", "-c", "case \"$CRONSLOT_KEY\" in bad-*) echo 'card declined' >&2; exit 1;; esac"]
"#;

/// Enqueues the keyed run `key` of `order-mail` through the route.
fn enqueue(port: u16, key: &str, body: &str) {
    let path = format!("/cronslot/runs/order-mail/{key}");
    let a = cronslot_tests::http::request_with(port, "PUT", &path, Some(ADMIN_TOKEN), &[], body)
        .unwrap_or_else(|| panic!("no answer to PUT {path}"));
    assert_eq!(a.status, 202, "{a:?}");
}

/// A dynamic job's keyed runs in the browser: beside its schedules, 50 a
/// page in key order, each run with its status, attempts, last error and
/// instants; the page newest first; filtered to the dead ones, and a dead
/// run redriven from its row.
#[test]
fn the_dashboard_lists_a_dynamic_jobs_keyed_runs_and_redrives_a_dead_one() {
    let dir = scratch("runs");
    let store = due_store(&dir, RUNS);
    with_room_in_the_minute(Duration::from_secs(40));
    let (child, port) = serve(
        &dir,
        &store,
        &[],
        &[
            ("CRONSLOT_ADMIN_TOKEN", ADMIN_TOKEN),
            ("CRONSLOT_TICK_SECRET", TICK_SECRET),
        ],
    );
    // Three runs succeed and one is dead (its command exits 1, a
    // permanent error) at the tick; 52 more wait for their `at`.
    for key in ["order-001", "order-002", "order-003", "bad-001"] {
        enqueue(port, key, r#"{"payload":{"order":1}}"#);
    }
    let tick = call(port, "POST", "/cronslot/tick", Some(TICK_SECRET));
    assert_eq!(body_json(&tick)["runs"], 4, "{tick:?}");
    let later = r#"{"payload":{"order":4},"at":"2099-01-01T00:00:00Z"}"#;
    enqueue(port, "order-004", later);
    for i in 0..51 {
        enqueue(port, &format!("wait-{i:03}"), later);
    }

    let browser = Browser::start(&dir, 1280, 900);
    browser.goto("about:blank");
    let blank = browser.screenshot(&dir.join("blank.png")).len();
    browser.goto(&format!("http://127.0.0.1:{port}/cronslot/"));
    browser.type_on("#token", ADMIN_TOKEN);
    browser.click_on("#login button[type=submit]");

    // From the jobs page to the job's keyed runs, 50 a page in key order.
    browser.click_on("#dynamic a.runs-link");
    browser.wait_until(
        "the first page of runs",
        "return document.querySelectorAll('#runs tbody tr').length === 50",
    );
    let rows = |browser: &Browser| {
        browser.execute(
            "return [...document.querySelectorAll('#runs tbody tr')]\
             .map(r => [r.dataset.key, r.dataset.status])",
            json!([]),
        )
    };
    let first = rows(&browser);
    assert_eq!(
        first.as_array().map(|rows| &rows[..6]),
        Some(
            &json!([
                ["bad-001", "dead"],
                ["order-001", "succeeded"],
                ["order-002", "succeeded"],
                ["order-003", "succeeded"],
                ["order-004", "pending"],
                ["wait-000", "pending"],
            ])
            .as_array()
            .expect("rows")[..]
        ),
        "{first}"
    );
    let table = browser.text_of("#runs");
    assert!(
        table.contains("exit status 1: card declined"),
        "the dead run's error: {table}"
    );
    assert_eq!(
        browser.execute(
            "return [...document.querySelectorAll('#runs button.redrive')]\
             .map(b => b.closest('tr').dataset.key)",
            json!([])
        ),
        json!(["bad-001"]),
        "only a dead run offers redrive"
    );
    screenshot(&browser, &dir, "runs", blank);
    browser.click_on("#next-page");
    browser.wait_until(
        "the second page",
        "return document.querySelectorAll('#runs tbody tr').length === 6",
    );
    let second: Vec<Value> = (45..51)
        .map(|i| json!([format!("wait-{i:03}"), "pending"]))
        .collect();
    assert_eq!(rows(&browser), json!(second));
    assert_eq!(
        browser.execute("return !!document.getElementById('next-page')", json!([])),
        json!(false),
        "the last page has no next"
    );
    browser.click_on("#first-page");
    browser.wait_until(
        "the first page again",
        "return document.querySelectorAll('#runs tbody tr').length === 50",
    );

    // Newest first on the page: wait-044 is the last enqueued of it.
    browser.click_on("#filter select[name=order] option[value=recent]");
    browser.click_on("#filter button[type=submit]");
    browser.wait_until(
        "the page, newest first",
        "return location.hash.includes('order=recent') && \
         document.querySelector('#runs tbody tr').dataset.key === 'wait-044'",
    );

    // The dead ones alone, then redrive: the run waits to run again.
    browser.click_on("#filter select[name=status] option[value=dead]");
    browser.click_on("#filter button[type=submit]");
    browser.wait_until(
        "the dead runs",
        "return location.hash.includes('status=dead') && \
         document.querySelectorAll('#runs tbody tr').length === 1",
    );
    assert_eq!(rows(&browser), json!([["bad-001", "dead"]]));
    screenshot(&browser, &dir, "runs-dead", blank);
    browser.click_on("#runs tr[data-key='bad-001'] button.redrive");
    let asked = browser.accept_dialog();
    assert!(
        asked.contains("bad-001 of order-mail back to run"),
        "{asked}"
    );
    browser.wait_until(
        "no dead run left, and the outcome said",
        "return !document.querySelector('#runs') && \
         document.getElementById('notice').textContent.includes('sent back to run')",
    );
    let run = body_json(&call(
        port,
        "GET",
        "/cronslot/runs/order-mail/bad-001",
        Some(ADMIN_TOKEN),
    ));
    assert_eq!(run["status"], "retrying", "{run}");
    browser.click_on("#filter select[name=status] option[value=retrying]");
    browser.click_on("#filter button[type=submit]");
    browser.wait_until(
        "the redriven run, retrying",
        "return location.hash.includes('status=retrying') && \
         document.querySelectorAll('#runs tbody tr').length === 1",
    );
    assert_eq!(rows(&browser), json!([["bad-001", "retrying"]]));
    screenshot(&browser, &dir, "runs-redriven", blank);
    // At a phone's width each run is a card of labelled fields.
    browser.resize(390, 844);
    browser.wait_for("#runs tr[data-key='bad-001']");
    screenshot(&browser, &dir, "runs-phone", blank);
    browser.resize(1280, 900);

    // The schedules' tab is beside it.
    browser.click_on(".tabs a[href='#/schedules/order-mail']");
    browser.wait_until(
        "the job's schedules",
        "return location.hash === '#/schedules/order-mail' && \
         document.querySelector('.tabs a[aria-current]').textContent === 'Schedules'",
    );

    // A refused listing says why: `report` has no keyed runs.
    browser.execute("location.hash = '#/runs/report'", json!([]));
    browser.wait_until(
        "the route's refusal",
        "return document.getElementById('notice').textContent.includes('is not dynamic')",
    );
    drop(browser);
    stop(child);
}

/// A store for `jobs` static jobs (each with its record) and the dynamic
/// job `tenant-invoice` with `schedules` schedules, all written in bulk;
/// its URL.
fn large_store(dir: &Path, jobs: usize, schedules: usize) -> String {
    use cronslot_core::coord::exec::block_on;
    use cronslot_core::coord::{
        CasCoordinator, JobState, RecordWrite, SchedulePut, Schedules, StateStore,
        decide::Precondition,
    };
    use cronslot_core::manifest::parse_manifest;
    use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
    use cronslot_sqlite::SqliteStore;

    let mut manifest = String::from(DYNAMIC);
    for i in 0..jobs {
        manifest.push_str(&format!(
            "\n[[job]]\nname = \"job-{i:05}\"\nschedule = \"{} 3 * * *\"\ncommand = [\"true\"]\n",
            i % 60
        ));
    }
    std::fs::write(dir.join("cronslot.toml"), &manifest).expect("write the manifest");
    let parsed = parse_manifest(&manifest, "cronslot.toml").expect("manifest");
    let store = SqliteStore::open(dir.join("state.db")).expect("open the store");
    let created = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(2);
    let states: Vec<JobState> = parsed
        .jobs
        .iter()
        .map(|spec| JobState::new(spec.name.as_str(), &spec.spec_hash(), created, false))
        .collect();
    let writes: Vec<RecordWrite<'_>> = states
        .iter()
        .map(|state| RecordWrite {
            job: &state.job,
            state,
            expected: None,
        })
        .collect();
    for answer in block_on(store.put_many(&writes)) {
        answer.expect("seed a record");
    }
    let template = parsed.template("tenant-invoice").expect("dynamic job");
    let c = CasCoordinator::new(store, 5);
    let spec = ScheduleSpec::from_json(r#"{"cron":"0 9 1 * *","timezone":"Europe/Berlin"}"#)
        .expect("spec");
    for first in (0..schedules).step_by(1000) {
        let puts: Vec<SchedulePut> = (first..schedules.min(first + 1000))
            .map(|i| SchedulePut {
                key: ScheduleKey::new(format!("t-{i:07}")).expect("key"),
                spec: spec.clone(),
                precondition: Precondition::None,
            })
            .collect();
        for answer in block_on(c.put_schedules(template, puts, jiff::Timestamp::now())) {
            answer.expect("write a schedule");
        }
    }
    format!("sqlite:{}", dir.join("state.db").display())
}

/// With 10,000 jobs and 20,000 schedules the dashboard's first pages
/// (the jobs list, a dynamic job's schedules) show about as fast as with
/// 10 of each: each reads one page of 50, never every job or schedule.
/// Measured as a ratio in one run (the machine's speed cancels out), each
/// the best of three loads. The large page holds 50 rows where the small
/// one holds 11, so the ratio is not 1; what it must not do is grow with
/// the store (a page that read every job took seconds). The schedules are
/// fewer than the issue's million for CI's time: a page of them is one
/// range of the store's key, whatever its size;
/// `CRONSLOT_DASHBOARD_SCHEDULES=1000000` runs the same test with the
/// million (docs/performance.md has its figures). Screenshots of the
/// large one are kept.
#[test]
fn the_dashboard_stays_responsive_with_ten_thousand_jobs() {
    let many: usize = std::env::var("CRONSLOT_DASHBOARD_SCHEDULES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let load = |name: &str, jobs: usize, schedules: usize| -> (Duration, Duration) {
        let dir = scratch(name);
        let store = large_store(&dir, jobs, schedules);
        let (child, port) = serve(&dir, &store, &[], &[("CRONSLOT_ADMIN_TOKEN", ADMIN_TOKEN)]);
        let browser = Browser::start(&dir, 1280, 900);
        let base = format!("http://127.0.0.1:{port}/cronslot/");
        browser.goto(&base);
        browser.type_on("#token", ADMIN_TOKEN);
        browser.click_on("#login button[type=submit]");
        // With `report`, the dynamic job's static neighbour.
        let rows = (jobs + 1).min(50);
        let best = |hash: &str, table: &str, want: usize| {
            (0..3)
                .map(|_| {
                    browser.goto("about:blank");
                    let started = std::time::Instant::now();
                    browser.goto(&format!("{base}{hash}"));
                    browser.wait_until(
                        "the first page shows",
                        &format!(
                            "return document.querySelectorAll('#{table} tbody tr').length === {want}"
                        ),
                    );
                    started.elapsed()
                })
                .min()
                .unwrap_or_default()
        };
        let jobs_page = best("#/", "jobs", rows);
        let schedules_page = best("#/schedules/tenant-invoice", "schedules", schedules.min(50));
        if jobs > 100 {
            browser.screenshot(&dir.join("jobs-10000.png"));
        }
        drop(browser);
        stop(child);
        (jobs_page, schedules_page)
    };
    let (small_jobs, small_schedules) = load("responsive-small", 10, 10);
    let (large_jobs, large_schedules) = load("responsive-large", 10_000, many);
    let ratio = |large: Duration, small: Duration| large.as_secs_f64() / small.as_secs_f64();
    println!(
        "first page of jobs: {large_jobs:?} with 10,000 against {small_jobs:?} with 10 ({:.2}); \
         of schedules: {large_schedules:?} with {many} against {small_schedules:?} with 10 ({:.2})",
        ratio(large_jobs, small_jobs),
        ratio(large_schedules, small_schedules)
    );
    assert!(
        ratio(large_jobs, small_jobs) < 5.0,
        "the jobs page: {large_jobs:?} with 10,000 jobs, {small_jobs:?} with 10"
    );
    assert!(
        ratio(large_schedules, small_schedules) < 5.0,
        "the schedules page: {large_schedules:?} with {many}, {small_schedules:?} with 10"
    );
}
