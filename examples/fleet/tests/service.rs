//! The fleet example on a real PostgreSQL server: two copies of the
//! service share one database, both answer their routes and probes, and
//! each slot of their every-minute job runs on exactly one of them. A
//! tenant's schedule, created through both at once, is one schedule at
//! version 1, and its slot runs once too. An order posted to it is its row
//! and its confirmation run, committed together (PostgreSQL and SQLite).

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cronslot_tests::http::{free_port, get, send_json};
use cronslot_tests::postgres;

struct Service {
    port: u16,
    child: Child,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(url: &str) -> Service {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(["--listen", &format!("127.0.0.1:{port}"), "--json"])
        .env("CRONSLOT_STORE", url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the service");
    Service { port, child }
}

/// The `slot` fields of a `GET /rollups` or `GET /invoices` body.
fn slots(body: &str) -> Vec<String> {
    let rollups: serde_json::Value = serde_json::from_str(body).expect("JSON");
    rollups
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["slot"].as_str().expect("a slot").to_string())
        .collect()
}

#[test]
fn two_servers_share_the_minute_job_and_answer_their_probes() {
    let server = postgres::shared();
    let db = server.fresh_database("fleet_example");
    let url = server.url(&db);
    let services = [start(&url), start(&url)];
    let up = Instant::now() + Duration::from_secs(30);
    for s in &services {
        while get(s.port, "/readyz").map(|r| r.0) != Some(200) {
            assert!(Instant::now() < up, "service on {} not ready", s.port);
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(get(s.port, "/healthz").map(|r| r.0), Some(200));
        let (status, body) = get(s.port, "/").expect("index");
        assert_eq!(status, 200);
        assert!(body.contains("fleet example"), "{body}");
    }
    // A tenant signs up; the request reaches both servers at once (a
    // retried sign-up, a deploy that re-upserts every tenant).
    let ports: Vec<u16> = services.iter().map(|s| s.port).collect();
    let writes: Vec<_> = ports
        .iter()
        .map(|&port| {
            std::thread::spawn(move || {
                send_json(
                    port,
                    "PUT",
                    "/tenants/acme/invoice-schedule",
                    r#"{"cron": "* * * * *", "timezone": "Europe/Berlin"}"#,
                )
                .expect("an answer")
            })
        })
        .collect();
    let mut answers: Vec<(u16, serde_json::Value)> = writes
        .into_iter()
        .map(|w| {
            let a = w.join().unwrap();
            (a.status, serde_json::from_str(&a.body).expect("JSON"))
        })
        .collect();
    answers.sort_by_key(|a| a.0);
    assert_eq!(
        answers.iter().map(|a| a.0).collect::<Vec<_>>(),
        [200, 201],
        "one created it, the other found it unchanged: {answers:?}"
    );
    assert!(answers.iter().all(|a| a.1["version"] == 1), "{answers:?}");
    let bad = send_json(
        ports[0],
        "PUT",
        "/tenants/acme/invoice-schedule",
        r#"{"cron": "* * * * *", "timezone": "Mars/Olympus"}"#,
    )
    .expect("an answer");
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("timezone"), "{}", bad.body);
    // Across the next minute boundary, orders-rollup's slot and the
    // tenant's each run once, on one of the two.
    let deadline = Instant::now() + Duration::from_secs(75);
    let collect = |path: &str| -> Vec<String> {
        services
            .iter()
            .flat_map(|s| slots(&get(s.port, path).expect("a list").1))
            .collect()
    };
    let (ran, invoiced) = loop {
        if !collect("/rollups").is_empty() && !collect("/invoices").is_empty() {
            // Give a second claimer time to (wrongly) run them too.
            std::thread::sleep(Duration::from_secs(3));
            break (collect("/rollups"), collect("/invoices"));
        }
        assert!(
            Instant::now() < deadline,
            "no rollup or no invoice ran within a minute"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    let mut unique_invoices = invoiced.clone();
    unique_invoices.sort();
    unique_invoices.dedup();
    assert_eq!(
        unique_invoices.len(),
        invoiced.len(),
        "an invoice ran twice: {invoiced:?}"
    );
    assert!(
        invoiced
            .iter()
            .all(|s| s.starts_with("tenant-invoice/tenant:acme@")),
        "{invoiced:?}"
    );
    let mut unique = ran.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        ran.len(),
        "a slot ran on both servers: {ran:?}"
    );
    // SIGTERM: both drain and exit 0 with their summaries.
    for s in services {
        let pid = s.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .expect("kill")
                .success()
        );
        let mut s = s;
        let status = s.child.wait().expect("exits");
        assert!(status.success(), "{status}");
        let mut summary = String::new();
        if let Some(mut out) = s.child.stdout.take() {
            let _ = out.read_to_string(&mut summary);
        }
        assert!(summary.contains("orders-rollup"), "the summary: {summary}");
    }
}

/// Waits until the service answers `/readyz`.
fn ready(s: &Service) {
    let up = Instant::now() + Duration::from_secs(30);
    while get(s.port, "/readyz").map(|r| r.0) != Some(200) {
        assert!(Instant::now() < up, "service on {} not ready", s.port);
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `POST /orders`: the order's row and its confirmation run commit
/// together; the same order again is the same run (nothing stored twice),
/// the same id with another total is refused with nothing stored, and the
/// confirmation runs once. `orders` counts the rows of the orders table.
fn an_order_and_its_confirmation(s: &Service, orders: &dyn Fn() -> i64) {
    let post = |body: &str| {
        let answer = send_json(s.port, "POST", "/orders", body).expect("an answer");
        let json: serde_json::Value = serde_json::from_str(&answer.body).expect("JSON");
        (answer.status, json)
    };
    let (status, placed) = post(r#"{"id": 7, "total_cents": 4250}"#);
    assert_eq!(status, 202, "{placed}");
    assert_eq!(placed["created"], true, "{placed}");
    let run = placed["run"].as_str().expect("the run").to_string();
    assert!(run.starts_with("order-confirmation/order-7@"), "{run}");
    let (status, again) = post(r#"{"id": 7, "total_cents": 4250}"#);
    assert_eq!(
        (status, &again["run"], &again["created"]),
        (200, &placed["run"], &serde_json::json!(false)),
        "{again}"
    );
    let (status, other) = post(r#"{"id": 7, "total_cents": 1}"#);
    assert_eq!(status, 409, "{other}");
    assert!(
        other["error"].as_str().unwrap().contains("payload"),
        "{other}"
    );
    assert_eq!(orders(), 1, "one order row");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = get(s.port, "/confirmations").expect("a list");
        let confirmed = slots(&body);
        if !confirmed.is_empty() {
            assert_eq!(confirmed, [run.as_str()], "confirmed once");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the confirmation did not run within 30 s"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn an_order_and_its_confirmation_commit_together_on_postgres() {
    let server = postgres::shared();
    let db = server.fresh_database("fleet_orders");
    let service = start(&server.url(&db));
    ready(&service);
    an_order_and_its_confirmation(&service, &|| {
        server
            .psql(&db, "SELECT count(*) FROM orders")
            .trim()
            .parse()
            .expect("a count")
    });
}

#[test]
fn an_order_and_its_confirmation_commit_together_on_sqlite() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fleet_orders");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a directory");
    let file = dir.join("fleet.db");
    let service = start(&format!("sqlite:{}", file.display()));
    ready(&service);
    an_order_and_its_confirmation(&service, &|| {
        let conn = cronslot_sqlite::rusqlite::Connection::open(&file).expect("the file");
        conn.query_row("SELECT count(*) FROM orders", [], |r| r.get(0))
            .expect("a count")
    });
}
