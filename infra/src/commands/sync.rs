//! `cronslot sync aws`: make the EventBridge Scheduler schedules of a
//! group match the manifest. Exit 0 when in sync or synced, 1 on AWS
//! errors, 2 on bad input.

use crate::cli::{ApiPlatform, SyncArgs};
use crate::exit::Failure;
use crate::manifest::read_manifest;
use crate::sync::scheduler::{self, valid_name};
use crate::sync::{TargetFlags, desired, run};

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
