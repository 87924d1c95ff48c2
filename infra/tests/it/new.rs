//! `cronslot new`: each platform's project is written whole, its manifest
//! validates, its template is what `cronslot render` writes for it, and
//! bad input (a name, an existing path, a directory that is not a cronslot
//! checkout) is refused with exit 2 and nothing left behind.
//!
//! That the projects build and run with their platforms' tools is
//! `scripts/check-guides` (on the projects the guides make).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("infra/ has a parent")
        .to_path_buf()
}

/// A fresh, empty directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("new")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn cronslot_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run cronslot")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The names in `dir`, sorted (hidden ones included).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const PLATFORMS: &[&str] = &["aws", "cloudflare", "local", "postgres"];

#[test]
fn bad_names_are_refused_and_nothing_is_written() {
    let dir = scratch("bad-names");
    let root = workspace_root();
    let root = root.to_str().expect("utf-8 root");
    for (name, says) in [
        ("", "it is empty"),
        ("My-Jobs", "uppercase"),
        ("1jobs", "does not start with a letter"),
        ("jobs-", "ends with"),
        ("my jobs", "' '"),
        ("sub/jobs", "path separator"),
        ("..", "'.'"),
        ("fn", "Rust keyword"),
        ("test", "taken"),
        ("cronslot_aws", "taken"),
    ] {
        let out = cronslot_in(
            &dir,
            &["new", name, "--platform", "local", "--cronslot-path", root],
        );
        assert_eq!(out.status.code(), Some(2), "{name:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!("error: NAME {name:?}")) && err.contains(says),
            "{name:?}: {err}"
        );
        assert!(
            listing(&dir).is_empty(),
            "{name:?} left {:?}",
            listing(&dir)
        );
    }
    let long = "a".repeat(65);
    let out = cronslot_in(&dir, &["new", &long, "--platform", "aws"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("65 characters"), "{}", stderr(&out));
    assert!(listing(&dir).is_empty());
}

#[test]
fn an_existing_path_is_never_overwritten() {
    let dir = scratch("existing");
    std::fs::create_dir(dir.join("jobs")).expect("mkdir");
    std::fs::write(dir.join("jobs/keep.txt"), "mine").expect("write");
    std::fs::write(dir.join("notes"), "a file").expect("write");
    for (name, platform) in [("jobs", "aws"), ("notes", "local")] {
        let out = cronslot_in(&dir, &["new", name, "--platform", platform]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let shown = std::fs::canonicalize(dir.join(name)).expect("exists");
        assert!(
            stderr(&out).contains(&format!("{} exists already", shown.display())),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(read(&dir.join("jobs/keep.txt")), "mine");
    assert_eq!(listing(&dir.join("jobs")), ["keep.txt"]);
    assert_eq!(read(&dir.join("notes")), "a file");
    assert_eq!(listing(&dir), ["jobs", "notes"]);
}

#[test]
fn a_directory_that_is_not_a_cronslot_checkout_is_refused() {
    let dir = scratch("bad-path");
    // A workspace whose aws-adapter is some other crate.
    let fake = dir.join("fake");
    let root = workspace_root();
    for (package, crate_dir) in [
        ("cronslot-core", "core"),
        ("cronslot-runtime", "runtime"),
        ("someone-else", "aws-adapter"),
        ("cronslot-cf", "cf-adapter"),
        ("cronslot-runner", "runner"),
        ("cronslot-stores", "stores"),
    ] {
        std::fs::create_dir_all(fake.join(crate_dir)).expect("mkdir");
        std::fs::write(
            fake.join(crate_dir).join("Cargo.toml"),
            format!("[package]\nname = \"{package}\"\n"),
        )
        .expect("write");
    }
    std::fs::write(fake.join("Cargo.toml"), "[workspace]\n").expect("write");
    let work = dir.join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let fake_aws = std::fs::canonicalize(&fake)
        .expect("fake")
        .join("aws-adapter/Cargo.toml");
    let cases: Vec<(PathBuf, String)> = vec![
        (dir.join("missing"), "cannot open it".to_string()),
        (
            root.join("infra"),
            format!(
                "{} has no [workspace]",
                root.join("infra/Cargo.toml").display()
            ),
        ),
        (
            fake.clone(),
            format!(
                "{} names package \"someone-else\", not cronslot-aws",
                fake_aws.display()
            ),
        ),
        (root.join("README.md"), "it is not a directory".to_string()),
    ];
    for (path, says) in cases {
        let path_text = path.to_str().expect("utf-8");
        let out = cronslot_in(
            &work,
            &[
                "new",
                "jobs",
                "--platform",
                "aws",
                "--cronslot-path",
                path_text,
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!("error: --cronslot-path {path_text}: "))
                && err.contains(&says),
            "{err}"
        );
        assert!(err.contains("checkout of cronslot's repository"), "{err}");
        assert!(listing(&work).is_empty(), "left {:?}", listing(&work));
    }
}

/// The dependency tables of a generated Cargo.toml: name → table.
fn dependencies(cargo: &toml::Table) -> Vec<(String, toml::Table)> {
    let mut out = Vec::new();
    let mut collect = |deps: Option<&toml::Value>| {
        for (name, spec) in deps.and_then(|d| d.as_table()).into_iter().flatten() {
            if let Some(t) = spec.as_table() {
                out.push((name.clone(), t.clone()));
            }
        }
    };
    collect(cargo.get("dependencies"));
    collect(cargo.get("build-dependencies"));
    if let Some(targets) = cargo.get("target").and_then(|t| t.as_table()) {
        for target in targets.values() {
            collect(target.get("dependencies"));
        }
    }
    out
}

#[test]
fn every_platform_gets_a_whole_project_with_the_template_render_writes() {
    let root = workspace_root();
    let root_text = root.to_str().expect("utf-8 root");
    for platform in PLATFORMS {
        let dir = scratch(&format!("platform-{platform}"));
        let name = format!("my_{platform}-jobs");
        let out = cronslot_in(
            &dir,
            &[
                "new",
                &name,
                "--platform",
                platform,
                "--cronslot-path",
                root_text,
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{platform}: {}", stderr(&out));
        // Only the project: no temporary directory left beside it.
        assert_eq!(listing(&dir), std::slice::from_ref(&name), "{platform}");
        let project = dir.join(&name);
        let mut expected = vec![
            ".gitignore",
            "Cargo.toml",
            "README.md",
            "cronslot.toml",
            "src/jobs.rs",
        ];
        match *platform {
            "aws" => expected.extend(["build.rs", "src/main.rs", "template.yaml"]),
            "cloudflare" => expected.extend(["build.rs", "src/lib.rs", "wrangler.toml"]),
            "postgres" => expected.extend([
                "src/main.rs",
                "kubernetes.yaml",
                "Dockerfile",
                ".dockerignore",
            ]),
            _ => expected.push("src/main.rs"),
        }
        for file in &expected {
            let text = read(&project.join(file));
            assert!(!text.trim().is_empty(), "{platform}: {file} is empty");
            assert!(!text.contains("{{"), "{platform}: {file} has a placeholder");
            assert!(
                stdout(&out).contains(&format!("  {file}\n")),
                "{platform}: {file} not listed: {}",
                stdout(&out)
            );
        }
        let mut files = listing(&project);
        files.extend(
            listing(&project.join("src"))
                .iter()
                .map(|f| format!("src/{f}")),
        );
        files.retain(|f| f != "src");
        files.sort();
        let mut want: Vec<String> = expected.iter().map(|f| f.to_string()).collect();
        want.sort();
        assert_eq!(files, want, "{platform}");

        // A standalone package, its cronslot crates from the checkout.
        let cargo: toml::Table = toml::from_str(&read(&project.join("Cargo.toml"))).expect("toml");
        assert_eq!(
            cargo["package"]["name"].as_str(),
            Some(name.as_str()),
            "{platform}"
        );
        assert!(cargo["workspace"].as_table().is_some_and(|t| t.is_empty()));
        assert_eq!(cargo["profile"]["release"]["lto"].as_str(), Some("thin"));
        let deps = dependencies(&cargo);
        let cronslot: Vec<&(String, toml::Table)> = deps
            .iter()
            .filter(|(n, _)| n.starts_with("cronslot-"))
            .collect();
        assert!(!cronslot.is_empty(), "{platform}");
        for (dep, spec) in cronslot {
            let path = spec
                .get("path")
                .and_then(|p| p.as_str())
                .unwrap_or_else(|| panic!("{platform}: {dep} has no path"));
            assert!(Path::new(path).is_absolute(), "{platform}: {dep} {path}");
            let theirs: toml::Table =
                toml::from_str(&read(&Path::new(path).join("Cargo.toml"))).expect("toml");
            assert_eq!(theirs["package"]["name"].as_str(), Some(dep.as_str()));
        }
        let jobs = read(&project.join("src/jobs.rs"));
        assert!(jobs.contains("RunContext"), "{platform}");

        // The manifest validates, and names the job the code registers.
        let out = cronslot_in(&project, &["validate", "cronslot.toml"]);
        assert_eq!(out.status.code(), Some(0), "{platform}: {}", stderr(&out));
        assert!(stdout(&out).contains("hello"), "{platform}");
        assert!(jobs.contains("register(\"hello\""), "{platform}");

        // The template is what `cronslot render` writes in the project.
        let render: Option<(&str, Vec<&str>)> = match *platform {
            "aws" => Some(("template.yaml", vec!["render", "sam", "cronslot.toml"])),
            "cloudflare" => Some((
                "wrangler.toml",
                vec![
                    "render",
                    "wrangler",
                    "cronslot.toml",
                    "--name",
                    "my-cloudflare-jobs",
                ],
            )),
            _ => None,
        };
        if *platform == "postgres" {
            // Not `render kubernetes` (it runs the `cronslot` image, which
            // has no Rust functions), but the same numbers: the grace
            // period is the longest job time limit (the lease, 2m) + 30 s.
            let yaml = read(&project.join("kubernetes.yaml"));
            assert!(
                yaml.contains("terminationGracePeriodSeconds: 150\n"),
                "{yaml}"
            );
            assert!(yaml.contains("name: my-postgres-jobs-store\n"), "{yaml}");
            assert!(read(&project.join("Dockerfile")).contains(&format!("target/release/{name} ")));
        }
        if let Some((file, args)) = render {
            let out = cronslot_in(&project, &args);
            assert_eq!(out.status.code(), Some(0), "{platform}: {}", stderr(&out));
            assert_eq!(
                read(&project.join(file)),
                stdout(&out),
                "{platform}: {file}"
            );
            let check = cronslot_in(&project, &["check", file, "--manifest", "cronslot.toml"]);
            assert_eq!(
                check.status.code(),
                Some(0),
                "{platform}: {}",
                stderr(&check)
            );
        }
    }
}

#[test]
fn without_a_checkout_the_released_crates_of_this_version() {
    let dir = scratch("released");
    let out = cronslot_in(
        &dir,
        &["new", "jobs", "--platform", "postgres", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    let project = std::fs::canonicalize(dir.join("jobs")).expect("created");
    assert_eq!(doc["path"], project.display().to_string());
    assert_eq!(doc["platform"], "postgres");
    assert!(
        doc["files"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "cronslot.toml"))
    );
    let cargo: toml::Table = toml::from_str(&read(&project.join("Cargo.toml"))).expect("toml");
    let deps = dependencies(&cargo);
    let mut cronslot: Vec<&str> = deps
        .iter()
        .filter(|(n, _)| n.starts_with("cronslot-"))
        .map(|(n, spec)| {
            assert_eq!(
                spec.get("version").and_then(|v| v.as_str()),
                Some(env!("CARGO_PKG_VERSION")),
                "{n}"
            );
            assert!(spec.get("path").is_none(), "{n}");
            n.as_str()
        })
        .collect();
    cronslot.sort();
    assert_eq!(
        cronslot,
        ["cronslot-core", "cronslot-runner", "cronslot-stores"]
    );
}
