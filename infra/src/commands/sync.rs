//! `cronslot sync aws`: make the EventBridge Scheduler schedules of a
//! group match the manifest. Exit 0 when in sync or synced, 1 on AWS
//! errors, 2 on bad input.

use clap::Args;

use crate::cli::{ApiPlatform, Format, ManifestInput};
use crate::exit::Failure;
use crate::manifest::read_manifest;
use crate::sync::scheduler::{self, valid_name};
use crate::sync::{TargetFlags, desired, run};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  cronslot sync aws cronslot.toml --dry-run \\\n    \
                        --target-arn arn:aws:lambda:us-east-1:123456789012:function:jobs \\\n    \
                        --role-arn arn:aws:iam::123456789012:role/jobs-scheduler\n  \
                        cronslot check --live aws --manifest cronslot.toml"
)]
pub struct SyncArgs {
    /// Where the schedules live.
    #[arg(value_enum, value_name = "PLATFORM")]
    pub platform: ApiPlatform,
    #[command(flatten)]
    pub manifest: ManifestInput,
    /// The schedule group that holds the manifest's schedules (created when missing).
    #[arg(long, value_name = "GROUP", default_value = "cronslot")]
    pub group: String,
    /// Name every schedule PREFIX+JOB; only schedules with the prefix are touched.
    #[arg(long, value_name = "PREFIX", default_value = "")]
    pub prefix: String,
    /// Print the plan (create, update, delete, unchanged per schedule) and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Output format: text, or json (one document, printed also when
    /// some schedules failed).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// The function every schedule invokes (its ARN). Needed by the first
    /// sync; afterwards, when left out, each schedule keeps its own and a
    /// new one takes the group's.
    #[arg(long, value_name = "ARN")]
    pub target_arn: Option<String>,
    /// The role Scheduler assumes to invoke it (lambda:InvokeFunction,
    /// sqs:SendMessage). Like --target-arn, kept when left out.
    #[arg(long, value_name = "ARN")]
    pub role_arn: Option<String>,
    /// The SQS queue undeliverable events go to (recommended). Kept when left out.
    #[arg(long, value_name = "ARN")]
    pub dead_letter_arn: Option<String>,
    /// The AWS region (default: AWS_REGION or the profile's).
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// The API endpoint (default: AWS_ENDPOINT_URL, else AWS's).
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
}

pub fn exec(args: SyncArgs) -> Result<(), Failure> {
    let ApiPlatform::Aws = args.platform;
    check_args(&args)?;
    let (_, manifest) = read_manifest(&args.manifest.path())?;
    let (want, notes) = desired(&manifest, &args.prefix)?;
    for note in &notes {
        eprintln!("note: {note}");
    }
    let flags = TargetFlags {
        target_arn: args.target_arn.clone(),
        role_arn: args.role_arn.clone(),
        dead_letter_arn: args.dead_letter_arn.clone(),
    };
    let rt = scheduler::runtime()?;
    rt.block_on(async {
        let client =
            scheduler::client(args.region.as_deref(), args.endpoint_url.as_deref()).await?;
        run(&client, &args, &want, &flags).await
    })
}

/// Flags Scheduler or ownership would refuse, refused before any call.
fn check_args(args: &SyncArgs) -> Result<(), Failure> {
    if !valid_name(&args.group) {
        return Err(Failure::bad_input(format!(
            "error: --group {:?}: a schedule group name is 1 to 64 of 0-9 A-Z a-z - _ .",
            args.group
        )));
    }
    if !args.prefix.is_empty() && !valid_name(&args.prefix) {
        return Err(Failure::bad_input(format!(
            "error: --prefix {:?}: a schedule name is up to 64 of 0-9 A-Z a-z - _ .",
            args.prefix
        )));
    }
    if args.group == "default" && args.prefix.is_empty() {
        return Err(Failure::bad_input(
            "error: --group default is shared with every other schedule of the account: pass a --prefix that only this manifest's schedules use, or use a group of their own (the default, cronslot)",
        ));
    }
    for (flag, arn) in [
        ("--target-arn", args.target_arn.as_ref()),
        ("--role-arn", args.role_arn.as_ref()),
        ("--dead-letter-arn", args.dead_letter_arn.as_ref()),
    ] {
        if let Some(arn) = arn.filter(|a| !a.starts_with("arn:")) {
            return Err(Failure::bad_input(format!(
                "error: {flag} {arn:?} is not an ARN (arn:aws:...)"
            )));
        }
    }
    Ok(())
}
