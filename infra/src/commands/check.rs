//! `cronslot check`: a template (SAM/CloudFormation, wrangler.toml or a
//! Kubernetes YAML from `render kubernetes`), or
//! with `--live aws` the deployed EventBridge Scheduler schedules,
//! compared with the manifest by fire times. Exit 0 when consistent, 1
//! with the differences, 2 on bad input.

use crate::check::fires::Span;
use crate::check::{
    aws, bad_template, cfn, cloudflare, conclude, is_wrangler, kubernetes, live, wrangler,
};
use crate::cli::CheckArgs;
use crate::exit::Failure;
use crate::manifest::read_manifest;
use crate::parse::parse_instant;

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
        cloudflare(&file, &w, &manifest, &manifest_text, span, args.cron_limit)?
    } else if let Some(docs) = kubernetes::read(&text) {
        kubernetes::check(&file, &text, &docs, &manifest, &manifest_text, span)?
    } else {
        let entries = cfn::read(&text).map_err(|e| bad_template(&file, e.line, &e.message))?;
        aws(&file, &entries, &manifest, span)?
    };
    conclude(&file, &path, &report, span, args.format)
}
