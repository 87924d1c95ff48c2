//! What the keyed-run benchmarks share (`benches/keyed_run_latency.rs`,
//! `benches/keyed_run_throughput.rs`): a dynamic job's template, a clock of
//! nanoseconds since a base, and enqueuers that write keyed runs as fast as
//! they can, one thread and store handle each, recording when each
//! enqueue returned.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cronslot_core::coord::{CasCoordinator, Runs, StateStore};
use cronslot_core::manifest::{JobTemplate, parse_manifest};
use cronslot_core::schedules::{RunRequest, ScheduleKey};
use jiff::Timestamp;

/// Not recorded yet.
pub const UNSET: u64 = u64::MAX;

thread_local! {
    /// This thread's executor for [`parked`].
    /// (With its I/O and timers, for a store that runs on its caller's
    /// runtime: DynamoDB's client.)
    static PARKED: tokio::runtime::Runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("a current-thread runtime: {e}"),
    };
}

/// Runs `future` to its end on this thread, parked while it waits, as an
/// application's async code waits on a store's answer. Not the core's
/// `block_on`, which spins while a future waits on I/O: eight enqueuers
/// spinning took a whole core of the benchmark's two from the runner and
/// the server (the peers' enqueuers are Node's event loop, which does
/// not spin).
pub fn parked<F: std::future::Future>(future: F) -> F::Output {
    PARKED.with(|rt| rt.block_on(future))
}

/// The template of a dynamic job named `name`, with a five-minute lease.
///
/// # Panics
///
/// If `name` is not a job name.
pub fn dynamic_template(name: &str) -> JobTemplate {
    let text = format!("[[job]]\nname = \"{name}\"\ndynamic = true\nlease = \"5m\"\n");
    match parse_manifest(&text, "bench.toml") {
        Ok(mut m) => m.templates.remove(0),
        Err(e) => panic!("{e}"),
    }
}

/// Nanoseconds since `base`.
pub fn since(base: Instant) -> u64 {
    u64::try_from(base.elapsed().as_nanos()).unwrap_or(UNSET - 1)
}

/// `n` instants, each [`UNSET`] until recorded.
pub fn unset(n: usize) -> Arc<Vec<AtomicU64>> {
    Arc::new((0..n).map(|_| AtomicU64::new(UNSET)).collect())
}

/// Enqueues `n` runs of `template` (run `i` under the key `key(i)`,
/// with no payload, due now) from one thread per store handle, each
/// awaiting one enqueue at a time, handle `w` taking runs `w`, `w +
/// stores.len()`, …; records in `enqueued[i]` when run `i`'s enqueue
/// returned ([`since`] `base`). Returns once every enqueue has.
///
/// # Panics
///
/// If an enqueue fails, or a key is not one.
pub fn enqueue_from_threads<E: StateStore + Send + 'static>(
    stores: Vec<E>,
    template: &JobTemplate,
    n: usize,
    key: fn(usize) -> String,
    base: Instant,
    enqueued: &Arc<Vec<AtomicU64>>,
) {
    let count = stores.len().max(1);
    let threads: Vec<_> = stores
        .into_iter()
        .enumerate()
        .map(|(w, store)| {
            let (template, enqueued) = (template.clone(), Arc::clone(enqueued));
            std::thread::spawn(move || {
                let writer = CasCoordinator::new(store, 100 + w as u64);
                let request = RunRequest {
                    payload: None,
                    at: None,
                };
                for i in (w..n).step_by(count) {
                    let key = match ScheduleKey::new(key(i)) {
                        Ok(k) => k,
                        Err(e) => panic!("{e}"),
                    };
                    if let Err(e) =
                        parked(writer.enqueue_run(&template, &key, &request, Timestamp::now()))
                    {
                        panic!("enqueue {i}: {e}");
                    }
                    enqueued[i].store(since(base), Ordering::SeqCst);
                }
            })
        })
        .collect();
    for t in threads {
        if t.join().is_err() {
            panic!("an enqueuer failed");
        }
    }
}
