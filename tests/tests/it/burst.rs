//! The 09:00 burst in CI (issue 28): 10,000 slots fall due in the same
//! minute and a fleet of three runner processes on one PostgreSQL (and one
//! Redis) starts every slot once, with nothing left stuck. A correctness
//! test, not a timed one: the figures are the benchmark's
//! (`cargo bench -p cronslot-tests --bench burst`, 100,000 slots).
//!
//! The runners are this test binary run again ([`burst_child_entry`]),
//! each a `cronslot_runner::Runner` with the job's function registered,
//! which is what `cronslot run` runs. The benchmark includes this file for
//! [`run_child`].

use std::time::Duration;

use cronslot_postgres::PgStore;
use cronslot_redis::RedisStore;
use cronslot_runner::{Clock, Runner, RunnerStore};
use cronslot_tests::burst::ChildConfig;

/// A runner process of the fleet (`cronslot_tests::burst::Fleet`): runs
/// the burst's job on the store its environment names until told to stop.
pub fn run_child() {
    let config = ChildConfig::from_env();
    if config.url.starts_with("postgres") {
        let store = match cronslot_core::coord::exec::block_on(PgStore::connect(&config.url)) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        let signal = store.wake_signal();
        serve(&config, store, Some(signal));
    } else {
        let store = match cronslot_core::coord::exec::block_on(RedisStore::connect(&config.url)) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        let signal = store.wake_signal();
        serve(&config, store, Some(signal));
    }
}

fn serve<S: RunnerStore>(
    config: &ChildConfig,
    store: S,
    signal: Option<cronslot_runner::WakeSignal>,
) {
    let runner = Runner::new(store, Vec::new(), Clock::real())
        .with_templates(vec![config.template.clone()])
        .with_jobs(config.jobs.clone())
        .workers(config.workers)
        .max_running(config.max_running)
        .woken_by(signal);
    let stop = runner.stop_handle();
    let running = std::thread::spawn(move || runner.run());
    config.wait_for_stop(|| running.is_finished());
    stop.stop();
    match running.join() {
        Ok(Ok(summary)) if summary.ok() => {}
        Ok(Ok(summary)) => panic!("the runner's summary: {summary}"),
        Ok(Err(e)) => panic!("{e}"),
        Err(_) => panic!("the runner panicked"),
    }
}

#[cfg(test)]
mod fleet {
    use std::process::Command;

    use cronslot_tests::burst::{self, Burst, Fleet};

    use super::*;

    /// Not a test: the entry point of a runner process. The tests below
    /// start this binary with `--ignored --exact` on it.
    #[test]
    #[ignore = "the entry point of a runner process of the burst tests"]
    fn burst_child_entry() {
        if burst::is_child() {
            run_child();
        }
    }

    fn ten_thousand() -> Burst {
        Burst {
            slots: 10_000,
            jitter: Duration::ZERO,
            runners: 3,
            workers: 2,
            max_running: 64,
            work: Duration::from_millis(10),
        }
    }

    fn child() -> Command {
        let mut c = Command::new(std::env::current_exe().expect("this test binary"));
        c.args([
            "--ignored",
            "--exact",
            "burst::fleet::burst_child_entry",
            "--nocapture",
            "--test-threads=1",
        ]);
        c
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("burst")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        dir
    }

    /// The burst on `store` (the parent's handle on the fleet's store at
    /// `url`): every slot once, none twice, no lease left.
    fn drains<S: cronslot_core::coord::StateStore + cronslot_core::coord::TickIndex + Clone>(
        store: S,
        url: &str,
        name: &str,
    ) {
        let burst = ten_thousand();
        let (at, _) = burst::prepare(store.clone(), &burst, Duration::from_secs(5));
        let fleet = Fleet::spawn(url, &burst, &scratch(name), child);
        let drained = burst::wait_until_drained(&store, at, Duration::from_secs(600));
        fleet.stop();
        assert!(drained, "slots still due ten minutes after {at}");
        let outcome = burst::check(store, &burst, at);
        assert_eq!(
            (
                outcome.schedules,
                outcome.once,
                outcome.twice,
                outcome.not_run,
                outcome.stuck
            ),
            (10_000, 10_000, 0, 0, 0),
            "every slot once, none twice, nothing stuck"
        );
    }

    #[test]
    fn a_burst_of_ten_thousand_slots_starts_each_once_on_postgres() {
        let pg = cronslot_tests::postgres::shared();
        let url = pg.url(&pg.fresh_database("burst"));
        let store = cronslot_core::coord::exec::block_on(PgStore::connect(&url)).expect("store");
        drains(store, &url, "postgres");
    }

    #[test]
    fn a_burst_of_ten_thousand_slots_starts_each_once_on_redis() {
        let redis = cronslot_tests::redis::shared();
        let url = redis.url("burst");
        let store = cronslot_core::coord::exec::block_on(RedisStore::connect(&url)).expect("store");
        drains(store, &url, "redis");
    }
}
