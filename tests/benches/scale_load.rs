//! Loading a manifest must cost little per job (issue 14): this loads
//! generated manifests of 10 and of 10,000 jobs (varied schedules, six
//! zones, `cronslot_tests::scale`) from TOML (`parse_manifest`, what the CLI
//! does) and from the precompiled JSON (`load_precompiled`, what a Lambda
//! function or a Worker does), and prints the ratio 10,000 / 10 of each.
//!
//! Run with `cargo bench -p cronslot-tests --bench scale_load`. A linear
//! cost gives a ratio near 1,000; the fixed cost of a load (reading the
//! `[defaults]`, the first use of a zone) makes it smaller.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use cronslot_core::manifest::{load_precompiled, parse_manifest};
use cronslot_tests::scale::{Mix, manifest};

struct Input {
    jobs: usize,
    toml: String,
    json: String,
}

impl Input {
    fn new(jobs: usize) -> Input {
        let toml = manifest(jobs, Mix::Varied, false);
        let json = match parse_manifest(&toml, "scale.toml") {
            Ok(m) => m.to_precompiled("scale.toml"),
            Err(e) => panic!("generated manifest of {jobs} jobs: {e}"),
        };
        Input { jobs, toml, json }
    }
}

/// Mean time of one load of `input` in `form`, over at least `at_least`
/// of loads (and at least three). Criterion prints its own estimates; this
/// one is measured again here so that the ratio can be printed.
fn mean_load(input: &Input, form: &str, at_least: Duration) -> Duration {
    let load = || match form {
        "toml" => parse_manifest(&input.toml, "scale.toml")
            .map(|m| m.jobs.len())
            .ok(),
        _ => load_precompiled(&input.json).map(|m| m.jobs.len()).ok(),
    };
    let start = Instant::now();
    let mut n = 0u32;
    while n < 3 || start.elapsed() < at_least {
        black_box(load());
        n += 1;
    }
    start.elapsed() / n
}

fn main() {
    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    let inputs = [Input::new(10), Input::new(10_000)];
    for input in &inputs {
        let jobs = input.jobs;
        criterion.bench_function(&format!("load_toml_{jobs}"), |b| {
            b.iter(|| parse_manifest(black_box(&input.toml), "scale.toml").map(|m| m.jobs.len()))
        });
        criterion.bench_function(&format!("load_precompiled_{jobs}"), |b| {
            b.iter(|| load_precompiled(black_box(&input.json)).map(|m| m.jobs.len()))
        });
    }
    criterion.final_summary();
    for form in ["toml", "precompiled"] {
        let small = mean_load(&inputs[0], form, Duration::from_millis(500));
        let large = mean_load(&inputs[1], form, Duration::from_secs(1));
        println!(
            "load from {form}: 10 jobs {:.3} ms, 10,000 jobs {:.3} ms, ratio 10,000/10: {:.0}x",
            small.as_secs_f64() * 1e3,
            large.as_secs_f64() * 1e3,
            large.as_secs_f64() / small.as_secs_f64()
        );
    }
}
