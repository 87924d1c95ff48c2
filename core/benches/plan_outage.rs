//! Planning cost after an outage must not grow with the outage's length
//! (docs/design.md §3.4). This plans (advance + claim) a per-minute job after a
//! one-minute and after a one-year outage and prints the ratio of the two.
//!
//! Run with `cargo bench -p cronslot-core --bench plan_outage`. The last line
//! is the ratio year / minute, measured in this run by an interleaved loop
//! (both cases alternate, so machine noise hits them alike); criterion's own
//! estimates are printed above it.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use cronslot_core::coord::decide::{Trigger, claim};
use cronslot_core::coord::{JobState, SplitMix64};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use jiff::{SignedDuration, Timestamp};

fn spec(catch_up: &str) -> JobSpec {
    let text = format!(
        "[[job]]\nname = \"bench\"\nschedule = \"* * * * *\"\ncatch_up = \"{catch_up}\"\nmax_catch_up = 10\n"
    );
    match parse_manifest(&text, "bench.toml") {
        Ok(mut m) => m.jobs.remove(0),
        Err(e) => panic!("bench manifest: {e}"),
    }
}

struct Case {
    spec: JobSpec,
    state: JobState,
    now: Timestamp,
}

impl Case {
    fn new(catch_up: &str, outage: SignedDuration) -> Case {
        let spec = spec(catch_up);
        let t0: Timestamp = "2026-01-05T00:00:00Z".parse().expect("instant");
        let state = JobState::new("bench", &spec.spec_hash(), t0, false);
        let now = t0
            .checked_add(outage)
            .and_then(|t| t.checked_add(SignedDuration::from_secs(1)))
            .expect("in range");
        Case { spec, state, now }
    }

    fn plan(&self, rng: &mut SplitMix64) -> u64 {
        let mut state = self.state.clone();
        let claim = claim(&self.spec, &mut state, self.now, Trigger::Tick, "w", rng);
        black_box(claim).is_ok() as u64 + state.fence
    }
}

/// Mean ns per plan of each case, alternating the two in short rounds.
fn interleaved(a: &Case, b: &Case) -> (f64, f64) {
    let mut rng = SplitMix64::new(1);
    let (mut ta, mut tb, mut n) = (Duration::ZERO, Duration::ZERO, 0u64);
    let deadline = Instant::now() + Duration::from_secs(4);
    while Instant::now() < deadline {
        let start = Instant::now();
        for _ in 0..200 {
            black_box(a.plan(&mut rng));
        }
        ta += start.elapsed();
        let start = Instant::now();
        for _ in 0..200 {
            black_box(b.plan(&mut rng));
        }
        tb += start.elapsed();
        n += 200;
    }
    (
        ta.as_nanos() as f64 / n as f64,
        tb.as_nanos() as f64 / n as f64,
    )
}

fn main() {
    let minute = SignedDuration::from_secs(60);
    let year = SignedDuration::from_hours(24 * 365);
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    for policy in ["latest", "all"] {
        let short = Case::new(policy, minute);
        let long = Case::new(policy, year);
        let mut rng = SplitMix64::new(7);
        criterion.bench_function(&format!("plan/{policy}/1-minute outage"), |b| {
            b.iter(|| short.plan(&mut rng))
        });
        criterion.bench_function(&format!("plan/{policy}/1-year outage"), |b| {
            b.iter(|| long.plan(&mut rng))
        });
    }
    criterion.final_summary();
    for policy in ["latest", "all"] {
        let (short, long) = interleaved(&Case::new(policy, minute), &Case::new(policy, year));
        println!(
            "ratio plan after 1-year / 1-minute outage (catch_up = {policy}): {:.2}x ({short:.0} ns vs {long:.0} ns per plan)",
            long / short
        );
    }
}
