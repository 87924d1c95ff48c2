//! `cronslot new NAME --platform P`: a standalone Cargo project in `./NAME`
//! with a job written against the runtime's `RunContext`, its manifest,
//! the platform's build (a build script that precompiles the manifest for
//! a Lambda or a Worker) and its deployment template, rendered by the same
//! code as `cronslot render` (for postgres, a Deployment of the program
//! itself, with the render module's numbers: `render kubernetes` runs the
//! `cronslot` image, which has no Rust functions). Exit 0, or 2 on bad input (a bad NAME, an
//! existing path, a directory that is not a cronslot checkout), or 1 when
//! the files could not be written; nothing is left half-written.
//!
//! The project's files are in `infra/scaffold/`, embedded at build time
//! (`Cargo.toml.in`: cargo leaves a directory with a `Cargo.toml` out of
//! the published crate).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use cronslot_core::manifest::{format_duration, parse_manifest};

use crate::cli::{Format, KubernetesKind};
use crate::exit::Failure;
use crate::render::{Source, aws, kubernetes, plan, wrangler};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  cronslot new my-jobs --platform aws\n  \
                        cronslot new my-jobs --platform local --cronslot-path ~/src/cronslot")]
pub struct NewArgs {
    /// The project's directory (created in the current one) and Cargo package name:
    /// lowercase letters, digits, '-' and '_', starting with a letter.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Where the jobs run.
    #[arg(long, value_enum, value_name = "PLATFORM")]
    pub platform: NewPlatform,
    /// Depend on the cronslot crates in this checkout of cronslot's repository
    /// (path dependencies) instead of their releases on crates.io.
    #[arg(long, value_name = "DIR")]
    pub cronslot_path: Option<PathBuf>,
    /// Output format: text, or json (the project's path and files) for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// The platform `cronslot new` writes a project for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NewPlatform {
    /// An AWS Lambda function (EventBridge Scheduler, DynamoDB), with a SAM template.
    Aws,
    /// A Cloudflare Worker (Cron Triggers, Durable Objects), with its wrangler.toml.
    Cloudflare,
    /// A program running the jobs on one machine (SQLite).
    Local,
    /// A program for a fleet of servers sharing one PostgreSQL.
    Postgres,
}

/// The crates a project may depend on: package name and its directory in a
/// cronslot checkout.
const CRATES: &[(&str, &str)] = &[
    ("cronslot-core", "core"),
    ("cronslot-runtime", "runtime"),
    ("cronslot-aws", "aws-adapter"),
    ("cronslot-cf", "cf-adapter"),
    ("cronslot-runner", "runner"),
    ("cronslot-stores", "stores"),
];

/// Names a project cannot take: the crates it depends on (a package cannot
/// depend on its own name), names cargo refuses or reserves, and names
/// Windows cannot give a directory.
const RESERVED: &[&str] = &[
    "cronslot-core",
    "cronslot-runtime",
    "cronslot-aws",
    "cronslot-cf",
    "cronslot-runner",
    "cronslot-stores",
    "cronslot-store-kit",
    "cronslot-sqlite",
    "cronslot-postgres",
    "cronslot-redis",
    "cronslot-dynamodb",
    "cronslot-cli",
    "clap",
    "tokio",
    "worker",
    "wasm-bindgen",
    "test",
    "core",
    "std",
    "alloc",
    "proc-macro",
    "build",
    "deps",
    "examples",
    "incremental",
    "con",
    "prn",
    "aux",
    "nul",
    "com1",
    "com2",
    "com3",
    "com4",
    "com5",
    "com6",
    "com7",
    "com8",
    "com9",
    "lpt1",
    "lpt2",
    "lpt3",
    "lpt4",
    "lpt5",
    "lpt6",
    "lpt7",
    "lpt8",
    "lpt9",
];

/// Rust keywords, strict and reserved: cargo refuses them as package names.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "abstract", "become", "box", "do", "final", "gen", "macro", "override",
    "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// The longest name crates.io takes.
const MAX_NAME: usize = 64;

const JOBS: &str = include_str!("../../scaffold/common/jobs.rs");
const GITIGNORE: &str = include_str!("../../scaffold/common/gitignore");
const PROFILES: &str = include_str!("../../scaffold/common/profiles.toml");
const BUILD_RS: &str = include_str!("../../scaffold/common/build.rs");
/// A Worker's: it also writes the dashboard's static assets.
const WORKER_BUILD_RS: &str = include_str!("../../scaffold/cloudflare/build.rs");

/// The project's files, relative to its directory, with their contents.
type Files = Vec<(&'static str, String)>;

pub fn exec(args: NewArgs) -> Result<(), Failure> {
    check_name(&args.name)?;
    let target = PathBuf::from(&args.name);
    refuse_existing(&target)?;
    let deps = match &args.cronslot_path {
        Some(dir) => Deps::Path(checkout(dir)?),
        None => Deps::Version(env!("CARGO_PKG_VERSION")),
    };
    let (files, notes) = project(&args.name, args.platform, &deps)?;
    write_project(&target, &files)?;
    for note in &notes {
        eprintln!("note: {note}");
    }
    let shown = std::fs::canonicalize(&target).unwrap_or(target);
    match args.format {
        Format::Text => {
            println!(
                "created {} ({} project), with:",
                shown.display(),
                platform_name(args.platform)
            );
            for (path, _) in &files {
                println!("  {path}");
            }
            println!("README.md there says how to build, run and deploy it.");
        }
        Format::Json => {
            let doc = serde_json::json!({
                "path": shown.display().to_string(),
                "name": args.name,
                "platform": platform_name(args.platform),
                "files": files.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
            });
            println!("{doc}");
        }
    }
    Ok(())
}

fn platform_name(platform: NewPlatform) -> &'static str {
    match platform {
        NewPlatform::Aws => "aws",
        NewPlatform::Cloudflare => "cloudflare",
        NewPlatform::Local => "local",
        NewPlatform::Postgres => "postgres",
    }
}

/// NAME is the project's directory and its Cargo package name (and the
/// binary's, the Worker's): lowercase ASCII letters, digits, `-` and `_`.
fn check_name(name: &str) -> Result<(), Failure> {
    let bad = |why: String| {
        Failure::bad_input(format!(
            "error: NAME {name:?} (the new project's directory in the current one, and its Cargo package name): {why}"
        ))
    };
    const RULE: &str = "a name is 1 to 64 lowercase ASCII letters, digits, '-' and '_', starting with a letter and not ending with '-' or '_'";
    if name.is_empty() {
        return Err(bad(format!("it is empty; {RULE}")));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '_'))
    {
        let what = if c == '/' || c == '\\' {
            "a path separator (cronslot new writes ./NAME: run it in the directory that should hold the project)".to_string()
        } else if c.is_ascii_uppercase() {
            "an uppercase letter".to_string()
        } else {
            format!("{c:?}")
        };
        return Err(bad(format!("it contains {what}; {RULE}")));
    }
    if name.len() > MAX_NAME {
        return Err(bad(format!("it is {} characters long; {RULE}", name.len())));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(bad(format!("it does not start with a letter; {RULE}")));
    }
    if name.ends_with(['-', '_']) {
        return Err(bad(format!(
            "it ends with {:?}; {RULE}",
            &name[name.len() - 1..]
        )));
    }
    if KEYWORDS.contains(&name) {
        return Err(bad(
            "it is a Rust keyword, which cargo refuses as a package name".to_string(),
        ));
    }
    let normal = name.replace('_', "-");
    if RESERVED.contains(&normal.as_str()) {
        return Err(bad(
            "the name is taken: by a crate the project depends on, by Rust's own crates, by cargo's build directories, or by a device name on Windows".to_string(),
        ));
    }
    Ok(())
}

fn refuse_existing(target: &Path) -> Result<(), Failure> {
    if std::fs::symlink_metadata(target).is_ok() {
        let shown = std::fs::canonicalize(target)
            .unwrap_or_else(|_| absolute(target).unwrap_or_else(|| target.to_path_buf()));
        return Err(Failure::bad_input(format!(
            "error: {} exists already; `cronslot new` writes a new directory and never overwrites one (choose another NAME, or move it away)",
            shown.display()
        )));
    }
    Ok(())
}

fn absolute(path: &Path) -> Option<PathBuf> {
    std::env::current_dir().ok().map(|d| d.join(path))
}

/// How the project names the cronslot crates.
enum Deps {
    /// The published crates, at this CLI's version.
    Version(&'static str),
    /// A cronslot checkout (absolute).
    Path(PathBuf),
}

impl Deps {
    /// The inside of the crate's dependency table: `version = "…"` or
    /// `path = "…"`.
    fn spec(&self, dir: &str) -> Result<String, Failure> {
        match self {
            Deps::Version(v) => Ok(format!("version = {}", wrangler::toml_string(v))),
            Deps::Path(root) => {
                let path = root.join(dir);
                let text = path.to_str().ok_or_else(|| {
                    Failure::bad_input(format!(
                        "error: --cronslot-path {}: the path is not UTF-8, which Cargo.toml cannot hold",
                        root.display()
                    ))
                })?;
                Ok(format!("path = {}", wrangler::toml_string(text)))
            }
        }
    }
}

/// `dir`, absolute, after checking that it is a cronslot checkout: a
/// workspace whose crate directories hold the cronslot crates.
fn checkout(dir: &Path) -> Result<PathBuf, Failure> {
    let bad = |why: String| {
        Failure::bad_input(format!(
            "error: --cronslot-path {}: {why}; it must be a checkout of cronslot's repository (the directory with its workspace Cargo.toml and core/, runtime/, aws-adapter/, cf-adapter/, runner/, stores/)",
            dir.display()
        ))
    };
    let root = std::fs::canonicalize(dir).map_err(|e| bad(format!("cannot open it: {e}")))?;
    if !root.is_dir() {
        return Err(bad("it is not a directory".to_string()));
    }
    let read = |path: &Path| -> Result<toml::Table, Failure> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
        toml::from_str(&text).map_err(|e| {
            bad(format!(
                "{} is not a valid Cargo.toml: {}",
                path.display(),
                e.message()
            ))
        })
    };
    let workspace = read(&root.join("Cargo.toml"))?;
    if !workspace.contains_key("workspace") {
        return Err(bad(format!(
            "{} has no [workspace]",
            root.join("Cargo.toml").display()
        )));
    }
    for (package, crate_dir) in CRATES {
        let manifest = root.join(crate_dir).join("Cargo.toml");
        let table = read(&manifest)?;
        let name = table
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str());
        if name != Some(*package) {
            return Err(bad(format!(
                "{} names package {}, not {package}",
                manifest.display(),
                name.map_or_else(|| "none".to_string(), |n| format!("{n:?}"))
            )));
        }
    }
    if root.to_str().is_none() {
        return Err(bad(
            "the path is not UTF-8, which Cargo.toml cannot hold".to_string()
        ));
    }
    Ok(root)
}

/// Fills `{{name}}`, `{{worker}}`, `{{adapter}}` and each crate's
/// `{{cronslot-…}}` dependency spec into a scaffold file.
fn fill(
    template: &str,
    name: &str,
    worker: &str,
    adapter: &str,
    deps: &Deps,
) -> Result<String, Failure> {
    let mut text = template
        .replace("{{name}}", name)
        .replace("{{worker}}", worker)
        .replace("{{adapter}}", adapter);
    for (package, dir) in CRATES {
        let key = format!("{{{{{package}}}}}");
        if text.contains(&key) {
            text = text.replace(&key, &deps.spec(dir)?);
        }
    }
    Ok(text)
}

/// Every file of the project, and the notes the render gave.
fn project(
    name: &str,
    platform: NewPlatform,
    deps: &Deps,
) -> Result<(Files, Vec<String>), Failure> {
    let worker = name.replace('_', "-");
    let (cargo, manifest, main, readme, adapter) = match platform {
        NewPlatform::Aws => (
            include_str!("../../scaffold/aws/Cargo.toml.in"),
            include_str!("../../scaffold/aws/cronslot.toml"),
            include_str!("../../scaffold/aws/main.rs"),
            include_str!("../../scaffold/aws/README.md"),
            "cronslot_aws",
        ),
        NewPlatform::Cloudflare => (
            include_str!("../../scaffold/cloudflare/Cargo.toml.in"),
            include_str!("../../scaffold/cloudflare/cronslot.toml"),
            include_str!("../../scaffold/cloudflare/lib.rs"),
            include_str!("../../scaffold/cloudflare/README.md"),
            "cronslot_cf",
        ),
        NewPlatform::Local => (
            include_str!("../../scaffold/local/Cargo.toml.in"),
            include_str!("../../scaffold/local/cronslot.toml"),
            include_str!("../../scaffold/local/main.rs"),
            include_str!("../../scaffold/local/README.md"),
            "cronslot_runner",
        ),
        NewPlatform::Postgres => (
            include_str!("../../scaffold/postgres/Cargo.toml.in"),
            include_str!("../../scaffold/postgres/cronslot.toml"),
            include_str!("../../scaffold/postgres/main.rs"),
            include_str!("../../scaffold/postgres/README.md"),
            "cronslot_runner",
        ),
    };
    let fill = |template: &str| fill(template, name, &worker, adapter, deps);
    let mut cargo_toml = fill(cargo)?;
    cargo_toml.push_str(PROFILES);
    let manifest_text = fill(manifest)?;
    let main_path = match platform {
        NewPlatform::Cloudflare => "src/lib.rs",
        _ => "src/main.rs",
    };
    let mut files: Files = vec![
        ("Cargo.toml", cargo_toml),
        ("cronslot.toml", manifest_text.clone()),
        (main_path, fill(main)?),
        ("src/jobs.rs", fill(JOBS)?),
        ("README.md", fill(readme)?),
        (".gitignore", GITIGNORE.to_string()),
    ];
    // The template, rendered as `cronslot render` renders it in the
    // project's directory.
    let path = Path::new("cronslot.toml");
    let parsed = parse_manifest(&manifest_text, "cronslot.toml")
        .map_err(|e| Failure::problem(format!("error: the scaffold's manifest is invalid: {e}")))?;
    let source = Source {
        manifest: &parsed,
        path,
        text: &manifest_text,
        hash: plan::manifest_hash(&manifest_text),
    };
    let mut notes = Vec::new();
    match platform {
        NewPlatform::Aws => {
            files.push(("build.rs", BUILD_RS.to_string()));
            let rendered = aws::render(
                &source,
                &aws::Options {
                    sam: true,
                    code_uri: ".".to_string(),
                    binary: Some(name.to_string()),
                },
            );
            notes.extend(rendered.notes);
            files.push(("template.yaml", rendered.text));
        }
        NewPlatform::Cloudflare => {
            files.push(("build.rs", WORKER_BUILD_RS.to_string()));
            wrangler::check_worker_name(&worker)?;
            let rendered = wrangler::render(&source, &worker, wrangler::DEFAULT_CRON_LIMIT);
            notes.extend(rendered.notes);
            files.push(("wrangler.toml", rendered.text));
        }
        NewPlatform::Postgres => {
            let k8s_name = worker.clone();
            kubernetes::check_name(&k8s_name, KubernetesKind::Deployment)?;
            let secret = kubernetes::default_secret(&k8s_name);
            let (longest, job) = kubernetes::longest_timeout(&parsed);
            let whose = job.map_or_else(String::new, |j| format!(" (job {})", j.name.as_str()));
            let grace_why = format!(
                "the longest job timeout{whose}, {}, + {} s to record the outcome.",
                format_duration(longest),
                kubernetes::GRACE_MARGIN
            );
            let fill_k8s = |template: &str| -> Result<String, Failure> {
                Ok(fill(template)?
                    .replace("{{k8s_name}}", &k8s_name)
                    .replace("{{secret}}", &secret)
                    .replace("{{user}}", &kubernetes::RUN_AS_USER.to_string())
                    .replace(
                        "{{grace}}",
                        &kubernetes::termination_grace(&parsed).to_string(),
                    )
                    .replace("{{grace_why}}", &grace_why))
            };
            for (path, text) in files.iter_mut() {
                if *path == "README.md" {
                    *text = fill_k8s(text)?;
                }
            }
            files.push((
                "kubernetes.yaml",
                fill_k8s(include_str!("../../scaffold/postgres/kubernetes.yaml"))?,
            ));
            files.push((
                "Dockerfile",
                fill_k8s(include_str!("../../scaffold/postgres/Dockerfile"))?,
            ));
            files.push((
                ".dockerignore",
                include_str!("../../scaffold/postgres/dockerignore").to_string(),
            ));
        }
        NewPlatform::Local => {}
    }
    Ok((files, notes))
}

/// Writes the files into a fresh directory beside `target` and renames it
/// to `target` at the end: `target` appears whole or not at all.
fn write_project(target: &Path, files: &Files) -> Result<(), Failure> {
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{file_name}.cronslot-new-{}", std::process::id()));
    let fail = |what: &Path, e: std::io::Error| {
        Failure::problem(format!("error: cannot write {}: {e}", what.display()))
    };
    std::fs::create_dir(&tmp).map_err(|e| fail(&tmp, e))?;
    let written = (|| {
        for (path, text) in files {
            let out = tmp.join(path);
            if let Some(dir) = out.parent() {
                std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
            }
            std::fs::write(&out, text).map_err(|e| fail(&out, e))?;
        }
        // Another process may have made it meanwhile: still never overwrite.
        refuse_existing(target)?;
        std::fs::rename(&tmp, target).map_err(|e| fail(target, e))
    })();
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["jobs", "my-jobs", "my_jobs2", "a", &"a".repeat(64)] {
            assert!(check_name(good).is_ok(), "{good:?}");
        }
        for bad in [
            "",
            "1jobs",
            "-jobs",
            "_jobs",
            "jobs-",
            "jobs_",
            "Jobs",
            "my jobs",
            "a/b",
            "..",
            "é",
            "fn",
            "test",
            "cronslot_aws",
            "con",
            &"a".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_failed_write_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("cronslot-new-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch");
        let target = dir.join("jobs");
        // The second file needs a directory where the first is a file.
        let files: Files = vec![
            ("src", "a file".to_string()),
            ("src/main.rs", String::new()),
        ];
        let failure = write_project(&target, &files).expect_err("cannot write src/main.rs");
        assert_eq!(failure.code, Failure::PROBLEM);
        assert!(
            failure.message.contains("cannot write"),
            "{}",
            failure.message
        );
        let left: Vec<_> = std::fs::read_dir(&dir).expect("read").collect();
        assert!(left.is_empty(), "{left:?}");
        // And a good one appears whole, with no temporary directory beside it.
        let files: Files = vec![("src/main.rs", "fn main() {}\n".to_string())];
        write_project(&target, &files).expect("written");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .expect("read")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left, ["jobs"]);
        assert_eq!(
            std::fs::read_to_string(target.join("src/main.rs")).expect("read"),
            "fn main() {}\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn every_placeholder_is_filled() {
        let deps = Deps::Path(PathBuf::from("/src/cronslot"));
        for platform in [
            NewPlatform::Aws,
            NewPlatform::Cloudflare,
            NewPlatform::Local,
            NewPlatform::Postgres,
        ] {
            let (files, _) = project("my_jobs", platform, &deps).expect("project");
            for (path, text) in &files {
                assert!(!text.contains("{{"), "{path}: {text}");
            }
            let cargo: toml::Table = toml::from_str(&files[0].1).expect("Cargo.toml parses");
            assert!(cargo.contains_key("workspace"));
        }
    }
}
