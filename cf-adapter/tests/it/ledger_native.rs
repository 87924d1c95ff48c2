//! The object's effect ledger is swept natively, on a real SQLite: each
//! write of an entry deletes at most a batch of the entries whose time is
//! up (a lapsed hold, a done effect past the retention), never one that
//! is not (a live hold, a done effect within the retention), at an exact
//! cost in statements; an object whose ledger was written before it had
//! sweep times gets them from the records, a batch per write.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use cronslot_cf::ObjectStore;
use cronslot_cf::sql::{Sql, SqlError, SqlValue};
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{DEFAULT_EFFECT_RETENTION, EffectBegin, EffectFinish, EffectLedger};
use cronslot_tests::sim_backends::RusqliteSql;
use jiff::{SignedDuration, Timestamp};

/// One object's SQLite, shared with the test (which reads the table) and
/// counting the statements the store runs.
#[derive(Clone)]
struct Counted(Rc<RusqliteSql>, Rc<Cell<u32>>);

impl Counted {
    fn new() -> Counted {
        Counted(
            Rc::new(RusqliteSql::in_memory().unwrap()),
            Rc::new(Cell::new(0)),
        )
    }

    fn query(&self, sql: &str) -> Vec<Vec<SqlValue>> {
        self.0.exec(sql, &[]).unwrap()
    }

    fn entries(&self) -> i64 {
        self.query("SELECT count(*) FROM cronslot_effects")[0][0]
            .as_integer()
            .unwrap()
    }

    /// The statements `f` ran.
    fn cost(&self, f: impl FnOnce()) -> u32 {
        let before = self.1.get();
        f();
        self.1.get() - before
    }
}

impl Sql for Counted {
    fn exec(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, SqlError> {
        self.1.set(self.1.get() + 1);
        self.0.exec(sql, params)
    }
}

fn t0() -> Timestamp {
    "2030-01-01T00:00:00Z".parse().unwrap()
}

fn after(secs: i64) -> Timestamp {
    t0().checked_add(SignedDuration::from_secs(secs)).unwrap()
}

const MINUTE: Duration = Duration::from_secs(60);

fn begin(store: &ObjectStore<Counted>, key: &str, now: Timestamp, hold: Duration) {
    let begun = block_on(store.begin_effect(key, "w", 1, now, hold)).unwrap();
    assert_eq!(begun, EffectBegin::Acquired, "{key}");
}

fn finish(store: &ObjectStore<Counted>, key: &str, now: Timestamp) {
    let finished = block_on(store.finish_effect(key, 1, "ok", now)).unwrap();
    assert_eq!(finished, EffectFinish::Recorded, "{key}");
}

fn present(store: &ObjectStore<Counted>, key: &str) -> bool {
    block_on(store.read_effect(key)).unwrap().is_some()
}

/// Forty holds lapse; each later write deletes sixteen of them at most,
/// and three writes leave none. A write costs its read, the sweep's one
/// delete and its own write: three statements (four until the first
/// look for entries without a sweep time has found fewer than a batch).
/// The live hold and the done effects within the retention stay until
/// their own time, and a hold written lapsed is not swept by its own
/// write.
#[test]
fn each_write_sweeps_a_bounded_batch_of_what_is_due() {
    let sql = Counted::new();
    let store = ObjectStore::new(sql.clone());
    assert_eq!(
        sql.cost(|| begin(&store, "j@a/first", t0(), MINUTE)),
        // The tables (7 + the layout check + 2 layout statements), then
        // the read, the look for untimed entries, the sweep and the write.
        7 + 1 + 2 + 4
    );
    for i in 0..40 {
        begin(&store, &format!("j@a/lapsed-{i}"), t0(), MINUTE);
    }
    begin(&store, "j@a/live", t0(), Duration::from_secs(3600));
    for i in 0..3 {
        begin(&store, &format!("j@a/done-{i}"), t0(), MINUTE);
        finish(&store, &format!("j@a/done-{i}"), t0());
    }
    assert_eq!(sql.entries(), 45);
    let now = after(120);
    assert_eq!(
        sql.cost(|| begin(&store, "j@b/new-0", now, MINUTE)),
        3,
        "read, sweep, write"
    );
    assert_eq!(sql.entries(), 46 - 16);
    begin(&store, "j@b/new-1", now, MINUTE);
    assert_eq!(sql.entries(), 47 - 32);
    begin(&store, "j@b/new-2", now, MINUTE);
    assert_eq!(
        sql.entries(),
        48 - 41,
        "the nine left due went, and no more"
    );
    assert!(present(&store, "j@a/live"), "a live hold stays");
    for i in 0..3 {
        assert!(
            present(&store, &format!("j@a/done-{i}")),
            "within retention"
        );
    }
    for key in ["j@b/new-0", "j@b/new-1", "j@b/new-2"] {
        assert!(present(&store, key));
    }
    // A write that decides nothing (the entry is held) sweeps nothing.
    let held = block_on(store.begin_effect("j@b/new-2", "other", 1, now, MINUTE)).unwrap();
    assert!(matches!(held, EffectBegin::Held { .. }), "{held:?}");

    // The sweep directly: nothing more is due now; the hold and the new
    // ones when they lapse; the done effects their retention after.
    assert_eq!(store.sweep(now).unwrap(), 0);
    assert_eq!(
        store
            .sweep(after(180) - SignedDuration::from_nanos(1))
            .unwrap(),
        0
    );
    assert_eq!(store.sweep(after(180)).unwrap(), 3);
    assert_eq!(store.sweep(after(3600)).unwrap(), 1);
    let retained = t0()
        .checked_add(SignedDuration::try_from(DEFAULT_EFFECT_RETENTION).unwrap())
        .unwrap();
    assert_eq!(
        store
            .sweep(retained - SignedDuration::from_millis(1))
            .unwrap(),
        0
    );
    assert_eq!(store.sweep(retained).unwrap(), 3);
    assert_eq!(sql.entries(), 0);
}

/// An object whose ledger was written by the layout before (no sweep time,
/// done entries never deleted) gets the column on start, its entries left
/// as they were; each write gives at most a batch of them their sweep
/// time from their records and deletes the due ones; one whose record does
/// not read is never swept. A Worker of the layout before writes on.
#[test]
fn an_old_ledger_is_timed_and_swept_a_batch_per_write() {
    let sql = Counted::new();
    sql.query(
        "CREATE TABLE cronslot_effects (key TEXT PRIMARY KEY, record TEXT NOT NULL, expires_at TEXT)",
    );
    let held = |key: &str, until: &str| {
        format!(
            r#"{{"key":"{key}","owner":"w","fence":1,"state":"in_progress","expires_at":"{until}"}}"#
        )
    };
    let done = |key: &str, at: &str| {
        format!(
            r#"{{"key":"{key}","owner":"w","fence":1,"state":"done","result":"ok","done_at":"{at}"}}"#
        )
    };
    let mut rows = Vec::new();
    for i in 0..20 {
        let key = format!("j@old/done-{i:02}");
        rows.push((key.clone(), done(&key, "2029-11-01T00:00:00Z")));
    }
    rows.push((
        "j@old/live".into(),
        held("j@old/live", "2030-01-01T01:00:00.5Z"),
    ));
    rows.push((
        "j@old/recent".into(),
        done("j@old/recent", "2029-12-31T00:00:00Z"),
    ));
    rows.push(("j@old/broken".into(), "{".into()));
    for (key, record) in &rows {
        sql.0
            .exec(
                "INSERT INTO cronslot_effects (key, record, expires_at) VALUES (?, ?, NULL)",
                &[SqlValue::Text(key.clone()), SqlValue::Text(record.clone())],
            )
            .unwrap();
    }
    let store = ObjectStore::new(sql.clone());
    let now = after(120);
    assert!(
        present(&store, "j@old/recent"),
        "the layout keeps the entries"
    );
    assert_eq!(sql.entries(), 23);
    // The first write: its read, the look for untimed entries (16), one
    // update each, the sweep (the due among those 16), its write.
    assert_eq!(
        sql.cost(|| begin(&store, "j@new/a", now, MINUTE)),
        1 + 1 + 16 + 1 + 1
    );
    let timed = |sql: &Counted| {
        sql.query("SELECT count(*) FROM cronslot_effects WHERE sweep_ms IS NOT NULL")[0][0]
            .as_integer()
            .unwrap()
    };
    let swept_first = 24 - sql.entries();
    assert!((14..=16).contains(&swept_first), "{swept_first}");
    // The second write times the other 7 (fewer than a batch: the object
    // stops looking) and sweeps the rest of the old done entries.
    assert_eq!(
        sql.cost(|| begin(&store, "j@new/b", now, MINUTE)),
        1 + 1 + (23 - 16) + 1 + 1
    );
    assert_eq!(timed(&sql), sql.entries());
    assert_eq!(
        sql.cost(|| begin(&store, "j@new/c", now, MINUTE)),
        3,
        "no more looking"
    );
    let left: Vec<String> = sql
        .query("SELECT key FROM cronslot_effects ORDER BY key")
        .into_iter()
        .map(|r| r[0].as_text().unwrap().to_string())
        .collect();
    assert_eq!(
        left,
        [
            "j@new/a",
            "j@new/b",
            "j@new/c",
            "j@old/broken",
            "j@old/live",
            "j@old/recent"
        ]
    );
    let never = sql.query("SELECT sweep_ms FROM cronslot_effects WHERE key = 'j@old/broken'");
    assert_eq!(never[0][0], SqlValue::Integer(i64::MAX));
    let live = sql.query("SELECT sweep_ms FROM cronslot_effects WHERE key = 'j@old/live'");
    let lapse: Timestamp = "2030-01-01T01:00:00.5Z".parse().unwrap();
    assert_eq!(live[0][0], SqlValue::Integer(lapse.as_millisecond()));

    // A Worker of the layout before names its columns: its write lands,
    // without a sweep time, and a later start times it.
    sql.0
        .exec(
            "INSERT INTO cronslot_effects (key, record, expires_at) VALUES (?, ?, NULL)",
            &[
                SqlValue::Text("j@old/late".into()),
                SqlValue::Text(held("j@old/late", "2030-01-01T00:00:30Z")),
            ],
        )
        .unwrap();
    let restarted = ObjectStore::new(sql.clone());
    begin(&restarted, "j@new/d", now, MINUTE);
    assert!(!present(&restarted, "j@old/late"), "timed and swept");
    assert!(present(&restarted, "j@old/live"));
}
