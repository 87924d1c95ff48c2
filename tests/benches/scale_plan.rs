//! Planning a tick must cost little per job (issue 14): which jobs have a
//! slot in a tick's one-minute window, from the manifest alone
//! (`DuePlanner::due`), for manifests of 10 and of 10,000 jobs (varied
//! schedules, six zones, `cronslot_tests::scale`), on an ordinary minute
//! and on a minute within a day of a DST change (where the planner searches
//! each job of the changing zones exactly). Prints the ratio 10,000 / 10
//! and how many jobs each window found due.
//!
//! Run with `cargo bench -p cronslot-tests --bench scale_plan`. The goal:
//! at most 1 ms for 10,000 jobs on an ordinary minute.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use cronslot_core::due::DuePlanner;
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_tests::scale::{Mix, manifest};
use jiff::Timestamp;

struct Input {
    jobs: usize,
    specs: Vec<JobSpec>,
    planner: DuePlanner,
}

impl Input {
    fn new(jobs: usize) -> Input {
        let specs = match parse_manifest(&manifest(jobs, Mix::Varied, false), "scale.toml") {
            Ok(m) => m.jobs,
            Err(e) => panic!("generated manifest of {jobs} jobs: {e}"),
        };
        let planner = DuePlanner::new(&specs, |_| true);
        Input {
            jobs,
            specs,
            planner,
        }
    }

    fn plan(&self, (after, until): (Timestamp, Timestamp)) -> usize {
        self.planner
            .due(&self.specs, black_box(after), black_box(until))
            .len()
    }
}

fn window(after: &str, until: &str) -> (Timestamp, Timestamp) {
    (
        after.parse().expect("instant"),
        until.parse().expect("instant"),
    )
}

/// Mean time of one plan over at least `at_least` (and three plans).
fn mean(input: &Input, w: (Timestamp, Timestamp), at_least: Duration) -> Duration {
    let start = Instant::now();
    let mut n = 0u32;
    while n < 3 || start.elapsed() < at_least {
        black_box(input.plan(w));
        n += 1;
    }
    start.elapsed() / n
}

fn main() {
    let mut criterion = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    let inputs = [Input::new(10), Input::new(10_000)];
    let windows = [
        (
            "ordinary minute",
            window("2026-06-15T12:00:30Z", "2026-06-15T12:01:30Z"),
        ),
        // New York springs forward at 07:00 UTC that day.
        (
            "minute near a DST change",
            window("2026-03-08T06:00:30Z", "2026-03-08T06:01:30Z"),
        ),
    ];
    for input in &inputs {
        for (name, w) in &windows {
            let id = format!("plan_{}_{}", input.jobs, name.replace(' ', "_"));
            criterion.bench_function(&id, |b| b.iter(|| input.plan(*w)));
        }
    }
    criterion.final_summary();
    for (name, w) in &windows {
        let small = mean(&inputs[0], *w, Duration::from_millis(300));
        let large = mean(&inputs[1], *w, Duration::from_secs(1));
        println!(
            "plan a {name}: 10 jobs {:.1} µs ({} due), 10,000 jobs {:.1} µs ({} due), ratio 10,000/10: {:.0}x",
            small.as_secs_f64() * 1e6,
            inputs[0].plan(*w),
            large.as_secs_f64() * 1e6,
            inputs[1].plan(*w),
            large.as_secs_f64() / small.as_secs_f64()
        );
    }
}
