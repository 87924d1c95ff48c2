//! A Lambda function that runs this project's jobs: EventBridge Scheduler
//! invokes it once per slot (the schedules are in template.yaml), and
//! cronslot makes each slot run once in effect, with its state in DynamoDB
//! (`CRONSLOT_TABLE`, set by the template).
//!
//! The manifest, `cronslot.toml`, is validated by `build.rs` and embedded
//! precompiled: a manifest error fails the build.

mod jobs;

use cronslot_aws::ManifestSource;

fn main() -> Result<(), cronslot_aws::lambda::Error> {
    cronslot_aws::run(
        jobs::jobs(),
        ManifestSource::precompiled(include_str!(concat!(env!("OUT_DIR"), "/manifest.json"))),
    )
}
