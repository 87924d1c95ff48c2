//! Two scheduled jobs in one Lambda: a Rust function (`nightly-report`) and
//! a webhook (`ping-webhook`, declared in the manifest only). EventBridge
//! Scheduler invokes the function once per slot; cronslot makes each slot
//! run once in effect, with its state in DynamoDB (`CRONSLOT_TABLE`).
//!
//! The manifest, `cronslot.toml`, is validated by `build.rs` and embedded
//! precompiled: a manifest error fails the build, and the function carries
//! no TOML parser.

use cronslot_aws::{JobError, Jobs, ManifestSource, RunContext};

fn main() -> Result<(), cronslot_aws::lambda::Error> {
    let jobs = Jobs::new().register("nightly-report", nightly_report);
    cronslot_aws::run(
        jobs,
        ManifestSource::precompiled(include_str!(concat!(env!("OUT_DIR"), "/manifest.json"))),
    )
}

/// Builds the report once per night. The upload is an effect: a retry of
/// the same slot (after a crash, a timeout) finds it done and skips it.
async fn nightly_report(ctx: RunContext) -> Result<(), JobError> {
    let key = ctx.idempotency_key();
    let upload = ctx
        .effect("upload", || async {
            // A real job would PUT the report to S3 under `key` here.
            Ok(format!("reports/{key}.csv"))
        })
        .await?;
    let line = serde_json::json!({
        "msg": "report uploaded",
        "slot": key,
        "object": upload,
        "attempt": ctx.attempt(),
    });
    println!("{line}");
    Ok(())
}
