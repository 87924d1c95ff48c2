//! Two scheduled jobs in one Lambda: a Rust function (`nightly-report`,
//! from `examples/jobs`, the same function the Worker and local examples
//! run) and a webhook (`ping-webhook`, declared in the manifest only).
//! EventBridge Scheduler invokes the function once per slot; cronslot makes
//! each slot run once in effect, with its state in DynamoDB
//! (`CRONSLOT_TABLE`).
//!
//! The manifest, `cronslot.toml`, is validated by `build.rs` and embedded
//! precompiled: a manifest error fails the build, and the function carries
//! no TOML parser.

use cronslot_aws::ManifestSource;

fn main() -> Result<(), cronslot_aws::lambda::Error> {
    cronslot_aws::run(
        example_jobs::jobs(),
        ManifestSource::precompiled(include_str!(concat!(env!("OUT_DIR"), "/manifest.json"))),
    )
}
