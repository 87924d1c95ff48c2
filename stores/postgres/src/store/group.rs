//! Conditional writes that arrive together are sent together: while a
//! write is on its way to the server, the writes that come meanwhile wait
//! and then go as one statement (a compare-and-set of many records, one
//! commit), each with its own answer. A runner's claims of a tick's woken
//! runs, and the outcomes of runs that end together, then cost the server
//! one statement and one commit instead of one each (docs/performance.md,
//! "Keyed runs side by side"). A write alone goes alone, as before, with
//! no wait: only writes that would have queued for the server are grouped.
//!
//! Each write in a group keeps the answer it would have had alone: written
//! with its new version, or a conflict with the record that beat it. A
//! group holds at most one write per record (a second waits for the next
//! group, so that it sees the first's outcome), locks its rows in key order
//! (two groups of two processes never wait for each other in a cycle), and
//! when its statement fails for any reason but the connection, its writes
//! go one by one, so that one write's error is that write's alone.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use super::records::{Notify, put_state, read_state};
use super::wake::Notifier;
use super::*;
use crate::pool::Conn;

/// Groups in flight at once (each on a connection of the pool): one while
/// another waits for its commit lets writes go on without a gap.
const LANES: usize = 2;

/// Writes in one group at most: one statement's arrays stay small.
const MAX_GROUP: usize = 64;

/// One conditional write, waiting for its answer.
pub(super) struct Write {
    pub(super) job: String,
    pub(super) text: String,
    pub(super) wake: Option<PgTime>,
    pub(super) expected: Option<Version>,
}

struct Waiting {
    write: Write,
    answer: oneshot::Sender<Result<PutResult, StoreError>>,
}

/// The writes waiting to be sent, shared by every clone of a store.
#[derive(Default)]
pub(super) struct Writes {
    queue: Mutex<Queue>,
    /// Tells the runners when written records are due now.
    notifier: Arc<Notifier>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiting>,
    /// Groups being sent now (at most [`LANES`]).
    lanes: usize,
}

fn lock(m: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    // Nothing panics while the lock is held; the queue stays sound.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Writes {
    /// Sends `write` (with whatever waits beside it) and returns its
    /// answer. Runs on the store's runtime.
    pub(super) async fn send(
        self: Arc<Self>,
        shared: Arc<Shared>,
        sql: Arc<Sql>,
        write: Write,
    ) -> Result<PutResult, StoreError> {
        let (answer, answered) = oneshot::channel();
        let lead = {
            let mut queue = lock(&self.queue);
            queue.waiting.push_back(Waiting { write, answer });
            let free = queue.lanes < LANES;
            if free {
                queue.lanes += 1;
            }
            free
        };
        if lead {
            // A task of its own sends groups until nothing waits, so that
            // this caller has its answer as soon as its group is sent.
            let shown = shared.shown.clone();
            tokio::spawn(async move {
                let mut lane = Lane {
                    writes: &self,
                    held: true,
                };
                while let Some(group) = lane.next_group() {
                    if send_group(&shared, &sql, group).await {
                        self.notifier.due(&shared, &sql);
                    }
                }
            });
            return answered.await.unwrap_or_else(|_| Err(dropped(&shown)));
        }
        answered
            .await
            .unwrap_or_else(|_| Err(dropped(&shared.shown)))
    }
}

impl Writes {
    /// Sends `writes` (at most one per record) as groups of their own, a
    /// bulk write's: [`MAX_BULK`] at a time, each group one statement for
    /// the first writes and one for the compare-and-sets, and answers each
    /// in order. They do not wait for a lane: a bulk writer has its own
    /// connection from the pool for them.
    pub(super) async fn send_all(
        self: Arc<Self>,
        shared: Arc<Shared>,
        sql: Arc<Sql>,
        writes: Vec<Write>,
    ) -> Vec<Result<PutResult, StoreError>> {
        let mut answers = Vec::with_capacity(writes.len());
        let mut writes = writes.into_iter().peekable();
        while writes.peek().is_some() {
            let (mut group, mut answered) = (Vec::new(), Vec::new());
            for write in writes.by_ref().take(MAX_BULK) {
                let (answer, receiver) = oneshot::channel();
                group.push(Waiting { write, answer });
                answered.push(receiver);
            }
            if send_group(&shared, &sql, group).await {
                self.notifier.due(&shared, &sql);
            }
            for receiver in answered {
                answers.push(
                    receiver
                        .await
                        .unwrap_or_else(|_| Err(dropped(&shared.shown))),
                );
            }
        }
        answers
    }
}

/// Writes in one group of a bulk write at most (a schedule's bulk write
/// carries up to 1,000).
const MAX_BULK: usize = 1000;

fn dropped(shown: &str) -> StoreError {
    StoreError::other(format!(
        "PostgreSQL store {shown}: a grouped write was dropped without an answer: this is a bug"
    ))
}

/// A lane held by the task sending groups; given back however the task
/// ends.
struct Lane<'a> {
    writes: &'a Writes,
    held: bool,
}

impl Lane<'_> {
    /// The next group: the waiting writes in their order, at most one per
    /// record and [`MAX_GROUP`] in all; `None` when nothing waits (the lane
    /// is then given back under the same lock, so no write is stranded).
    fn next_group(&mut self) -> Option<Vec<Waiting>> {
        let mut queue = lock(&self.writes.queue);
        if queue.waiting.is_empty() {
            queue.lanes = queue.lanes.saturating_sub(1);
            self.held = false;
            return None;
        }
        let mut seen = HashSet::new();
        let mut group = Vec::new();
        let mut later = VecDeque::new();
        while let Some(w) = queue.waiting.pop_front() {
            if group.len() < MAX_GROUP && seen.insert(w.write.job.clone()) {
                group.push(w);
            } else {
                later.push_back(w);
            }
        }
        queue.waiting = later;
        Some(group)
    }
}

impl Drop for Lane<'_> {
    /// A task that ends before the queue is empty (its runtime shutting
    /// down) gives its lane back too.
    fn drop(&mut self) {
        if self.held {
            let mut queue = lock(&self.writes.queue);
            queue.lanes = queue.lanes.saturating_sub(1);
        }
    }
}

/// Sends one group and answers each of its writes; returns whether one
/// of them made its record due now.
async fn send_group(shared: &Arc<Shared>, sql: &Sql, group: Vec<Waiting>) -> bool {
    let mut conn = match shared.checkout().await {
        Ok(conn) => conn,
        Err(e) => {
            for w in group {
                let _ = w.answer.send(Err(e.clone()));
            }
            return false;
        }
    };
    let mut due = false;
    // Inserts (no version expected) and updates are a statement each;
    // a write whose versions do not fit the table goes alone.
    let (mut inserts, mut updates, mut alone) = (Vec::new(), Vec::new(), Vec::new());
    for w in group {
        match w.write.expected {
            None => inserts.push(w),
            Some(v) if i64::try_from(v).is_ok_and(|v| v < i64::MAX) => updates.push(w),
            Some(_) => alone.push(w),
        }
    }
    for (part, insert) in [(inserts, true), (updates, false)] {
        match part.len() {
            0 => {}
            1 => alone.extend(part),
            _ => match send_many(&mut conn, sql, part, insert).await {
                Ok(made_due) => due |= made_due,
                Err(part) => alone.extend(part),
            },
        }
    }
    for w in alone {
        let Write {
            job,
            text,
            wake,
            expected,
        } = &w.write;
        let answer = put_state(&mut conn, sql, job, text, *wake, *expected, Notify::After).await;
        due |= matches!(answer, Ok((_, true)));
        let _ = w.answer.send(answer.map(|(written, _)| written));
    }
    due
}

/// One statement for many writes of one kind, sorted by record; answers
/// them, or gives them back to be sent one by one when the statement
/// failed but the connection lives (nothing of it was written: a
/// statement is atomic). A lost connection is every write's answer
/// (ambiguous: the coordinator reads each record back).
async fn send_many(
    conn: &mut Conn<'_>,
    sql: &Sql,
    mut part: Vec<Waiting>,
    insert: bool,
) -> Result<bool, Vec<Waiting>> {
    part.sort_by(|a, b| a.write.job.cmp(&b.write.job));
    let jobs: Vec<&str> = part.iter().map(|w| w.write.job.as_str()).collect();
    let texts: Vec<&str> = part.iter().map(|w| w.write.text.as_str()).collect();
    let wakes: Vec<Option<PgTime>> = part.iter().map(|w| w.write.wake).collect();
    let expected: Vec<i64> = part
        .iter()
        .map(|w| {
            w.write
                .expected
                .and_then(|v| i64::try_from(v).ok())
                .unwrap_or(0)
        })
        .collect();
    let doing = || format!("writing the states of {} jobs", part.len());
    let rows = if insert {
        conn.query(
            Phase::Write,
            false,
            &doing,
            &sql.insert_many,
            &[
                (&jobs, Type::TEXT_ARRAY),
                (&texts, Type::TEXT_ARRAY),
                (&wakes, Type::TIMESTAMPTZ_ARRAY),
            ],
        )
        .await
    } else {
        conn.query(
            Phase::Write,
            false,
            &doing,
            &sql.update_many,
            &[
                (&jobs, Type::TEXT_ARRAY),
                (&texts, Type::TEXT_ARRAY),
                (&wakes, Type::TIMESTAMPTZ_ARRAY),
                (&expected, Type::INT8_ARRAY),
            ],
        )
        .await
    };
    let rows = match rows {
        Ok(rows) => {
            // Counted as the writes they are: one statement carried them.
            conn.count_grouped(part.len() as u64 - 1);
            rows
        }
        Err(e) if conn.broken() => {
            for w in part {
                let _ = w.answer.send(Err(e.clone()));
            }
            return Ok(false);
        }
        Err(_) => return Err(part),
    };
    // The rows written, each with its new version, and whether one made
    // its record due now.
    let mut written = std::collections::HashMap::new();
    let mut due = false;
    for row in &rows {
        let job = match conn.column::<String>(row, 0, &doing) {
            Ok(job) => job,
            Err(e) => {
                for w in part {
                    let _ = w.answer.send(Err(e.clone()));
                }
                return Ok(false);
            }
        };
        due |= conn
            .column::<Option<bool>>(row, 2, &doing)
            .ok()
            .flatten()
            .unwrap_or(false);
        written.insert(job, conn.column::<i64>(row, 1, &doing));
    }
    for w in part {
        let answer = match written.remove(&w.write.job) {
            Some(Ok(version)) => Version::try_from(version)
                .map(PutResult::Written)
                .map_err(|_| {
                    StoreError::corrupt(format!(
                        "PostgreSQL store {}: job {:?}: version {version} is negative",
                        conn.store(),
                        w.write.job
                    ))
                }),
            Some(Err(e)) => Err(e),
            // Lost to another writer: the record that beat it, read after
            // the statement (so it is at least as new as what beat it).
            None => read_state(conn, sql, &w.write.job)
                .await
                .map(|(current, _)| PutResult::Conflict(current.map(Box::new))),
        };
        let _ = w.answer.send(answer);
    }
    Ok(due)
}
