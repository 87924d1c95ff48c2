//! `cronslot render FORMAT`: a template (SAM, CloudFormation, wrangler.toml,
//! Kubernetes) or the operations table (Markdown) from the manifest, on
//! stdout or into `--out`. Exit 0, or 2 on bad input.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::cli::{KubernetesKind, ManifestInput};
use crate::exit::Failure;
use crate::manifest::read_manifest;
use crate::parse::parse_instant;
use crate::render::{
    Source, aws, cargo_binary, default_code_uri, kubernetes, markdown, plan, refuse_commands,
    wrangler, write_file,
};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  cronslot render sam examples/aws-jobs/cronslot.toml --out template.yaml\n  \
                        cronslot render wrangler cronslot.toml --name my-jobs --cron-limit 250\n  \
                        cronslot render markdown cronslot.toml > JOBS.md\n  \
                        cronslot render kubernetes cronslot.toml --kind cronjob --namespace jobs"
)]
pub struct RenderArgs {
    /// What to write.
    #[arg(value_enum, value_name = "FORMAT")]
    pub format: RenderFormat,
    #[command(flatten)]
    pub manifest: ManifestInput,
    /// Write here instead of stdout (parent directories are created).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// wrangler: the Worker's name (default: the manifest's directory name, or "cronslot").
    /// kubernetes: the objects' name, a DNS-1123 label (default: the manifest's file stem).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// wrangler: the account's cron trigger limit, counting the tick (5 on Free, 250 on Paid).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub cron_limit: Option<u32>,
    /// sam: the function's CodeUri (default: the manifest's directory, relative to --out's).
    #[arg(long, value_name = "DIR")]
    pub code_uri: Option<String>,
    /// sam, cloudformation: the binary cargo-lambda builds (default: from the Cargo.toml beside the manifest).
    #[arg(long, value_name = "NAME")]
    pub binary: Option<String>,
    /// markdown: list the next runs after this RFC 3339 instant (default: now).
    #[arg(long, value_name = "RFC3339")]
    pub after: Option<String>,
    /// kubernetes: a Deployment running `cronslot run`, or a CronJob running `cronslot tick` [default: deployment].
    #[arg(long, value_enum, value_name = "KIND")]
    pub kind: Option<KubernetesKind>,
    /// kubernetes --kind deployment: how many replicas (each slot still runs once) [default: 2].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub replicas: Option<u32>,
    /// kubernetes: the container image with the cronslot binary (and whatever the command
    /// jobs run) [default: ghcr.io/cronslot/cronslot:VERSION]; pin your own.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// kubernetes: the namespace of every object (default: none, kubectl's current one).
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// kubernetes: the Secret whose key `url` holds the store URL [default: NAME-store].
    #[arg(long, value_name = "SECRET")]
    pub secret: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderFormat {
    /// AWS SAM template (AWS::Serverless::Function, built by cargo-lambda).
    Sam,
    /// Plain CloudFormation (no SAM transform; code from S3).
    Cloudformation,
    /// wrangler.toml for the Cloudflare Worker.
    Wrangler,
    /// A table of every job for the people who operate them.
    Markdown,
    /// A Deployment (`cronslot run`) or a CronJob (`cronslot tick`), with the manifest in a ConfigMap.
    Kubernetes,
}

pub fn exec(args: RenderArgs) -> Result<(), Failure> {
    check_flags(&args)?;
    let path = args.manifest.path();
    let (text, manifest) = read_manifest(&path)?;
    let source = Source {
        manifest: &manifest,
        path: &path,
        text: &text,
        hash: plan::manifest_hash(&text),
    };
    let rendered = match args.format {
        RenderFormat::Sam | RenderFormat::Cloudformation => {
            refuse_commands(
                &manifest,
                "Lambda (provided.al2023 has no tools a command could rely on)",
            )?;
            let sam = args.format == RenderFormat::Sam;
            let binary = match &args.binary {
                Some(b) => Some(b.clone()),
                None => cargo_binary(&path)?,
            };
            let code_uri = match &args.code_uri {
                Some(c) => c.clone(),
                None => default_code_uri(&path, args.out.as_deref()),
            };
            aws::render(
                &source,
                &aws::Options {
                    sam,
                    code_uri,
                    binary,
                },
            )
        }
        RenderFormat::Wrangler => {
            refuse_commands(&manifest, "a Worker (it cannot start processes)")?;
            let name = match &args.name {
                Some(name) => {
                    wrangler::check_worker_name(name)?;
                    name.clone()
                }
                None => wrangler::default_worker_name(&path),
            };
            wrangler::render(
                &source,
                &name,
                args.cron_limit.unwrap_or(wrangler::DEFAULT_CRON_LIMIT),
            )
        }
        RenderFormat::Markdown => {
            let after = parse_instant("--after", args.after.as_deref())?;
            markdown::render(&source, after)
        }
        RenderFormat::Kubernetes => {
            let options = kubernetes_options(&args, &path)?;
            kubernetes::refuse_functions(&manifest)?;
            kubernetes::render(&source, &options)
        }
    };
    for note in &rendered.notes {
        eprintln!("note: {note}");
    }
    match &args.out {
        None => {
            print!("{}", rendered.text);
            Ok(())
        }
        Some(out) => write_file(out, &rendered.text),
    }
}

/// `render kubernetes`' flags, checked, with their defaults.
fn kubernetes_options(args: &RenderArgs, path: &Path) -> Result<kubernetes::Options, Failure> {
    let kind = args.kind.unwrap_or(KubernetesKind::Deployment);
    if kind == KubernetesKind::CronJob && args.replicas.is_some() {
        return Err(Failure::bad_input(
            "error: --replicas does not apply to `cronslot render kubernetes --kind cronjob` (a CronJob runs one tick at a time)",
        ));
    }
    let name = match &args.name {
        Some(name) => {
            kubernetes::check_name(name, kind)?;
            name.clone()
        }
        None => kubernetes::default_name(path, kind),
    };
    if let Some(namespace) = &args.namespace {
        kubernetes::check_namespace(namespace)?;
    }
    let secret = match &args.secret {
        Some(secret) => {
            kubernetes::check_secret(secret)?;
            secret.clone()
        }
        None => kubernetes::default_secret(&name),
    };
    let image = match &args.image {
        Some(image) => {
            kubernetes::check_image(image)?;
            image.clone()
        }
        None => kubernetes::default_image(),
    };
    Ok(kubernetes::Options {
        kind,
        name,
        namespace: args.namespace.clone(),
        image,
        replicas: args.replicas.unwrap_or(kubernetes::DEFAULT_REPLICAS),
        secret,
    })
}

/// Flags that do not apply to the format are refused rather than ignored.
fn check_flags(args: &RenderArgs) -> Result<(), Failure> {
    let format = match args.format {
        RenderFormat::Sam => "sam",
        RenderFormat::Cloudformation => "cloudformation",
        RenderFormat::Wrangler => "wrangler",
        RenderFormat::Markdown => "markdown",
        RenderFormat::Kubernetes => "kubernetes",
    };
    let allowed: &[&str] = match args.format {
        RenderFormat::Sam => &["code-uri", "binary"],
        RenderFormat::Cloudformation => &["binary"],
        RenderFormat::Wrangler => &["name", "cron-limit"],
        RenderFormat::Markdown => &["after"],
        RenderFormat::Kubernetes => &["name", "kind", "replicas", "image", "namespace", "secret"],
    };
    let given = [
        ("name", args.name.is_some()),
        ("cron-limit", args.cron_limit.is_some()),
        ("code-uri", args.code_uri.is_some()),
        ("binary", args.binary.is_some()),
        ("after", args.after.is_some()),
        ("kind", args.kind.is_some()),
        ("replicas", args.replicas.is_some()),
        ("image", args.image.is_some()),
        ("namespace", args.namespace.is_some()),
        ("secret", args.secret.is_some()),
    ];
    for (flag, present) in given {
        if present && !allowed.contains(&flag) {
            return Err(Failure::bad_input(format!(
                "error: --{flag} does not apply to `cronslot render {format}`"
            )));
        }
    }
    Ok(())
}
