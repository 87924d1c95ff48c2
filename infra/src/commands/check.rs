//! `cronslot check`: a template (SAM/CloudFormation, wrangler.toml or a
//! Kubernetes YAML from `render kubernetes`), or
//! with `--live aws` the deployed EventBridge Scheduler schedules,
//! compared with the manifest by fire times. Exit 0 when consistent, 1
//! with the differences, 2 on bad input.

use std::path::PathBuf;

use clap::Args;

use crate::check::fires::Span;
use crate::check::{
    aws, bad_template, cfn, cloudflare, conclude, is_wrangler, kubernetes, live, wrangler,
};
use crate::cli::{ApiPlatform, Format, ManifestFlag};
use crate::exit::Failure;
use crate::manifest::read_manifest;
use crate::parse::parse_instant;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  cronslot check template.yaml --manifest cronslot.toml\n  \
                        cronslot check wrangler.toml --manifest cronslot.toml --cron-limit 250\n  \
                        cronslot check --live aws --manifest cronslot.toml --group cronslot"
)]
pub struct CheckArgs {
    /// A SAM/CloudFormation template (.yaml, .yml, .json, .template), a wrangler.toml,
    /// or a Kubernetes YAML (`render kubernetes`).
    #[arg(
        value_name = "TEMPLATE",
        required_unless_present = "live",
        conflicts_with = "live"
    )]
    pub template: Option<PathBuf>,
    /// Compare what is deployed instead of a template: the EventBridge
    /// Scheduler schedules of --group (and --prefix) in the account.
    #[arg(long, value_enum, value_name = "PLATFORM")]
    pub live: Option<ApiPlatform>,
    /// --live: the schedule group [default: cronslot].
    #[arg(long, value_name = "GROUP", requires = "live")]
    pub group: Option<String>,
    /// --live: only schedules whose names start with this.
    #[arg(long, value_name = "PREFIX", requires = "live")]
    pub prefix: Option<String>,
    /// --live: the AWS region (default: AWS_REGION or the profile's).
    #[arg(long, value_name = "REGION", requires = "live")]
    pub region: Option<String>,
    /// --live: the API endpoint (default: AWS_ENDPOINT_URL, else AWS's).
    #[arg(long, value_name = "URL", requires = "live")]
    pub endpoint_url: Option<String>,
    /// The manifest the template should match.
    #[command(flatten)]
    pub manifest: ManifestFlag,
    /// Compare fire times over the year after this RFC 3339 instant (default: now).
    #[arg(long, value_name = "RFC3339")]
    pub after: Option<String>,
    /// wrangler: the account's cron trigger limit, counting the tick (5 on Free, 250 on Paid).
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub cron_limit: u32,
    /// Output format: text (one finding per line), or json (one document,
    /// printed also when there are differences).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn exec(args: CheckArgs) -> Result<(), Failure> {
    if let Some(platform) = args.live {
        return live::check(&args, platform);
    }
    let Some(template) = &args.template else {
        return Err(Failure::bad_input(
            "error: pass a TEMPLATE, or --live aws to check what is deployed",
        ));
    };
    let path = args.manifest.path();
    let (manifest_text, manifest) = read_manifest(&path)?;
    let after = parse_instant("--after", args.after.as_deref())?;
    let span = Span::year_after(after);
    let file = template.display().to_string();
    let text = std::fs::read_to_string(template)
        .map_err(|e| Failure::bad_input(format!("error: cannot read template {file}: {e}")))?;
    let report = if is_wrangler(template) {
        let w = wrangler::read(&text)
            .map_err(|e| bad_template(&file, e.line, &format!("not valid TOML: {}", e.message)))?;
        cloudflare::check(&file, &w, &manifest, &manifest_text, span, args.cron_limit)?
    } else if let Some(docs) = kubernetes::read(&text) {
        kubernetes::check(&file, &text, &docs, &manifest, &manifest_text, span)?
    } else {
        let entries = cfn::read(&text).map_err(|e| bad_template(&file, e.line, &e.message))?;
        aws::check(&file, &entries, &manifest, span)?
    };
    conclude(&file, &path, &report, span, args.format)
}
