//! One conformance suite for every coordinator (docs/design.md §5), in the manner
//! of `object_store`'s `integration` module: async functions that take any
//! [`Coordinator`] and assert the guarantees of docs/design.md §3. Memory and
//! SQLite run it in `cargo test`; DynamoDB (moto) and the Durable Object
//! (workerd) run the same functions.
//!
//! Each function uses its own job names under a namespace `ns` (lowercase
//! letters, digits, `-`), so one store can host every test, and a rerun
//! against a persistent store can pick a new namespace. Time is virtual:
//! every instant is passed in.
//!
//! This is test code: a failed expectation panics, which fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::coord::exec::join_all;
use crate::coord::{
    Claim, CoordError, Coordinator, EffectBegin, FailOutcome, Idle, JobContext, Lease, MissReason,
    Origin, Refusal, SkipReason, Trigger, TriggerError,
};
use crate::manifest::{JobSpec, parse_manifest};

mod catch_up;
mod claims;
mod effects;
mod failures;
mod leases;
mod operator;
mod overlap;
/// Public, as `schedules` is.
pub mod runs;
/// Public: a store's own test can run one test of the schedules suite
/// (the Durable Objects' in workerd runs them through the Worker).
pub mod schedules;
mod schema;
mod tick;

pub use catch_up::{
    catch_up_all_after_outage, catch_up_latest_after_outage, catch_up_none_after_outage,
};
pub use claims::{
    concurrent_claimers_run_each_slot_once, dedicated_trigger_for_non_slot_is_refused,
    first_claim_wins,
};
pub use effects::effect_ledger_skips_recorded_effect;
pub use failures::{
    at_most_once, checkpoint_resumes_on_retry, exhausted_retries_dead_then_redrive,
    transient_failure_retries_same_slot,
};
pub use leases::{
    heartbeat_extends_lease, lease_expiry_takeover_with_higher_fence,
    redelivery_after_lease_expiry_retries, superseded_completion_refused,
};
pub use operator::{
    backfill_runs_past_slots, manual_trigger_keeps_fates, pause_and_resume,
    schedule_change_keeps_cursor,
};
pub use overlap::{overlap_allow, overlap_forbid, overlap_replace};
pub use runs::{
    a_dead_keyed_run_is_redriven, a_key_is_remembered_for_its_retention_then_forgotten,
    a_keyed_run_answers_its_status_through_its_life, concurrent_enqueues_of_one_key_create_one_run,
    keyed_runs_are_listed_in_key_order_with_status,
    two_keys_in_one_minute_keep_their_effects_apart,
};
pub use schedules::{
    a_bulk_write_answers_each_schedule, a_schedule_runs_and_a_recreate_fences_out_old_runs,
    concurrent_bulk_writes_of_one_set_end_at_version_1,
    concurrent_upserts_of_one_spec_end_at_version_1, listing_pages_each_schedule_once,
    versions_preconditions_and_tombstones,
};
pub use schema::{schema_1_record, schema_1_record_loads};
pub use tick::tick_index_contract;

/// Every test of the suite, named once. [`TESTS`](crate::conformance::TESTS),
/// [`run`](crate::conformance::run) and the `#[test]` functions of
/// [`conformance_suite!`](crate::conformance_suite) are generated from this
/// list, so they cannot disagree; a store's test file names no test (it
/// invokes `conformance_suite!`), so it cannot miss one. A unit test of this
/// module checks that every `pub async fn name<C: Coordinator>(c: &C, ns:
/// &str)` of the module is on the list.
///
/// `conformance_tests!([path::to::callback] args…)` expands to
/// `path::to::callback! { args…; first_claim_wins, …, manual_trigger_keeps_fates }`:
/// the tokens in brackets name the macro to call, and whatever follows them
/// is handed back before the `;`.
#[macro_export]
macro_rules! conformance_tests {
    ([$($callback:tt)*] $($args:tt)*) => {
        $($callback)*! {
            $($args)*;
            first_claim_wins,
            concurrent_claimers_run_each_slot_once,
            overlap_forbid,
            overlap_allow,
            overlap_replace,
            lease_expiry_takeover_with_higher_fence,
            redelivery_after_lease_expiry_retries,
            superseded_completion_refused,
            transient_failure_retries_same_slot,
            exhausted_retries_dead_then_redrive,
            catch_up_latest_after_outage,
            catch_up_all_after_outage,
            catch_up_none_after_outage,
            pause_and_resume,
            at_most_once,
            effect_ledger_skips_recorded_effect,
            checkpoint_resumes_on_retry,
            schedule_change_keeps_cursor,
            dedicated_trigger_for_non_slot_is_refused,
            backfill_runs_past_slots,
            heartbeat_extends_lease,
            manual_trigger_keeps_fates,
        }
    };
}

/// `TESTS` and `run`, from the list of [`conformance_tests!`](crate::conformance_tests).
macro_rules! tests_and_run {
    (; $($name:ident),* $(,)?) => {
        /// Every test of the suite, by name, for runners that iterate.
        pub const TESTS: &[&str] = &[$(stringify!($name)),*];

        /// Runs the named test; `false` when the name is unknown.
        pub async fn run<C: Coordinator>(name: &str, c: &C, ns: &str) -> bool {
            match name {
                $(stringify!($name) => $name(c, ns).await,)*
                _ => return false,
            }
            true
        }
    };
}

crate::conformance_tests!([tests_and_run]);

/// A Monday, 00:00 UTC: the suite's time zero.
pub fn t0() -> Timestamp {
    "2026-01-05T00:00:00Z".parse().expect("valid instant")
}

/// `t0` plus whole seconds.
pub fn at(seconds: i64) -> Timestamp {
    t0().checked_add(SignedDuration::from_secs(seconds))
        .expect("in range")
}

/// A minute, in seconds (for [`at`]).
pub const MIN: i64 = 60;
/// An hour, in seconds (for [`at`]).
pub const HOUR: i64 = 3600;

/// A job spec from manifest lines (`name` and `schedule` included).
pub fn job(ns: &str, name: &str, body: &str) -> JobSpec {
    let text = format!("[[job]]\nname = \"{ns}-{name}\"\n{body}\n");
    let manifest = parse_manifest(&text, "conformance.toml")
        .unwrap_or_else(|e| panic!("conformance manifest is invalid:\n{e}"));
    manifest.jobs.into_iter().next().expect("one job")
}

/// Creates the job's record at `now` (a claim with nothing due).
pub async fn create<C: Coordinator>(c: &C, spec: &JobSpec, now: Timestamp) {
    match c.claim(spec, now, Trigger::Tick, "creator").await {
        Ok(Claim::Idle(_)) => {}
        other => panic!(
            "creating {} claimed something: {other:?}",
            spec.name.as_str()
        ),
    }
}

async fn claimed<C: Coordinator>(
    c: &C,
    spec: &JobSpec,
    now: Timestamp,
    trigger: Trigger,
    owner: &str,
) -> Lease {
    match c.claim(spec, now, trigger, owner).await {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("{owner} expected a claim at {now}, got {other:?}"),
    }
}

async fn idle<C: Coordinator>(
    c: &C,
    spec: &JobSpec,
    now: Timestamp,
    trigger: Trigger,
    owner: &str,
) -> Idle {
    match c.claim(spec, now, trigger, owner).await {
        Ok(Claim::Idle(idle)) => idle,
        other => panic!("{owner} expected no claim at {now}, got {other:?}"),
    }
}

/// Runs every test of the suite, each in its own namespace under `ns`,
/// with `block_on` driving the futures.
pub fn run_all_blocking<C: Coordinator>(make: impl Fn() -> C, ns: &str) {
    for name in TESTS {
        let c = make();
        let ns = format!("{ns}-{}", name.replace('_', "-"));
        let future = run(name, &c, &ns);
        assert!(block_on_named(name, future), "unknown test {name}");
    }
}

fn block_on_named<F: Future<Output = bool>>(name: &str, f: F) -> bool {
    eprintln!("conformance: {name}");
    crate::coord::exec::block_on(f)
}

/// Declares one `#[test]` per conformance test (the list of
/// [`conformance_tests!`](crate::conformance_tests), so a failure names its
/// test) for a coordinator made by
/// `$make` (an expression evaluated afresh in each test), driven by
/// `$block_on` (`cronslot_core::coord::exec::block_on` for stores without a
/// runtime; a runtime's `block_on` otherwise).
#[macro_export]
macro_rules! conformance_suite {
    ($make:expr, $block_on:path, $ns:literal) => {
        $crate::conformance_tests!([$crate::conformance_suite] @each $make, $block_on, $ns);
    };
    (@each $make:expr, $block_on:path, $ns:literal; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let coordinator = $make;
                $block_on($crate::conformance::$name(
                    &coordinator,
                    concat!($ns, "-", stringify!($name)),
                ));
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    use super::TESTS;

    /// The files of this module: this one, then each submodule by name.
    const SOURCES: &[(&str, &str)] = &[
        ("conformance", include_str!("conformance.rs")),
        ("catch_up", include_str!("conformance/catch_up.rs")),
        ("claims", include_str!("conformance/claims.rs")),
        ("effects", include_str!("conformance/effects.rs")),
        ("failures", include_str!("conformance/failures.rs")),
        ("leases", include_str!("conformance/leases.rs")),
        ("operator", include_str!("conformance/operator.rs")),
        ("overlap", include_str!("conformance/overlap.rs")),
        ("runs", include_str!("conformance/runs.rs")),
        ("schedules", include_str!("conformance/schedules.rs")),
        ("schema", include_str!("conformance/schema.rs")),
        ("tick", include_str!("conformance/tick.rs")),
    ];

    /// The tests of this module's files: every `pub async fn` that takes
    /// only a coordinator and a namespace.
    fn test_functions() -> Vec<String> {
        let mut found = Vec::new();
        for (_, source) in SOURCES {
            for (at, _) in source.match_indices("\npub async fn ") {
                let rest = &source[at + "\npub async fn ".len()..];
                let Some(end) = rest.find('{') else { continue };
                let signature: String =
                    rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
                if let Some(name) = signature.strip_suffix("<C: Coordinator>(c: &C, ns: &str)") {
                    found.push(name.to_string());
                }
            }
        }
        found
    }

    /// The scan of [`test_functions`] misses no file: every `mod` that
    /// conformance.rs declares is in [`SOURCES`].
    #[test]
    fn the_scan_reads_every_submodule() {
        let (_, root) = SOURCES[0];
        let mut declared: Vec<&str> = root
            .lines()
            .filter_map(|l| {
                l.strip_prefix("pub mod ")
                    .or_else(|| l.strip_prefix("mod "))?
                    .strip_suffix(';')
            })
            .collect();
        declared.sort_unstable();
        let mut read: Vec<&str> = SOURCES[1..].iter().map(|(name, _)| *name).collect();
        read.sort_unstable();
        assert!(declared.len() > 5, "the scan found {declared:?}");
        assert_eq!(
            declared, read,
            "add each submodule of conformance.rs to SOURCES"
        );
    }

    #[test]
    fn every_test_function_is_on_the_list() {
        let functions = test_functions();
        assert!(functions.len() > 10, "the scan found {functions:?}");
        let missing: Vec<_> = functions
            .iter()
            .filter(|f| !TESTS.contains(&f.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "conformance tests missing from `conformance_tests!`: {missing:?}"
        );
        // And the other way round (`run` would not compile otherwise, but
        // a name listed twice would).
        let mut listed: Vec<&str> = TESTS.to_vec();
        listed.sort_unstable();
        listed.dedup();
        assert_eq!(listed.len(), TESTS.len(), "a test is listed twice");
        assert_eq!(listed.len(), functions.len());
    }

    #[test]
    fn run_refuses_an_unknown_name() {
        use crate::coord::exec::block_on;
        use crate::coord::{CasCoordinator, MemoryStore};
        let c = CasCoordinator::new(MemoryStore::new(), 7);
        assert!(!block_on(super::run("no_such_test", &c, "x")));
    }
}
