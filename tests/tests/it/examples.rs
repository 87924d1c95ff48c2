//! The repository's manifests, read as they are now: every example's
//! `cronslot.toml` and the test fixtures the adapters load. They parse
//! without errors or warnings and survive the precompiled round trip the
//! Lambda and the Worker load them through.
//!
//! These tests live here, not in `cronslot-core`, because they read files
//! outside the core's directory: a published crate reads only its own.

use std::path::{Path, PathBuf};

use cronslot_core::manifest::{Action, Manifest, Trigger, load_precompiled, parse_manifest};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repository")
        .to_path_buf()
}

/// Every `cronslot.toml` under `examples/`, and the adapters' fixtures.
fn manifests() -> Vec<PathBuf> {
    let root = repository();
    let mut found = Vec::new();
    let mut dirs = vec![root.join("examples")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read examples/") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                // Build output of the example Worker, never a manifest.
                if path
                    .file_name()
                    .is_some_and(|n| n != "build" && n != "target")
                {
                    dirs.push(path);
                }
            } else if path.file_name().is_some_and(|n| n == "cronslot.toml") {
                found.push(path);
            }
        }
    }
    found.push(root.join("aws-adapter/tests/fixtures/cronslot.toml"));
    found.sort();
    found
}

fn parse(path: &Path) -> Manifest {
    let text = std::fs::read_to_string(path).expect("read manifest");
    let name = path.display().to_string();
    parse_manifest(&text, &name).unwrap_or_else(|e| panic!("{name}:\n{e}"))
}

#[test]
fn every_example_manifest_parses_without_warnings() {
    let paths = manifests();
    // The four platforms' examples, the demo and the Lambda fixture.
    for wanted in [
        "examples/cronslot.toml",
        "examples/aws-jobs/cronslot.toml",
        "examples/cf-jobs/cronslot.toml",
        "examples/local-jobs/cronslot.toml",
        "examples/fleet/cronslot.toml",
    ] {
        assert!(
            paths.iter().any(|p| p.ends_with(wanted)),
            "{wanted} not found among {paths:?}"
        );
    }
    for path in &paths {
        let manifest = parse(path);
        assert!(
            manifest.warnings.is_empty(),
            "{}: {:?}",
            path.display(),
            manifest.warnings
        );
        assert!(!manifest.jobs.is_empty(), "{}: no jobs", path.display());
    }
}

#[test]
fn every_example_manifest_survives_the_precompiled_round_trip() {
    for path in manifests() {
        let file = path.display().to_string();
        let parsed = parse(&path);
        let json = parsed.to_precompiled(&file);
        let loaded = load_precompiled(&json).unwrap_or_else(|e| panic!("{file}: {e}"));
        // Dynamic jobs too: a Worker's precompiled manifest carries them,
        // their schedules limited to the zones the file carries (those of
        // the jobs, without `precompile_manifest_with_zones`).
        let mut unzoned = loaded.clone();
        for t in &mut unzoned.templates {
            t.zones.clear();
        }
        assert_eq!(unzoned, parsed, "{file}");
        let carried: Vec<&str> = parsed.jobs.iter().map(|j| j.timezone.as_str()).collect();
        for t in &loaded.templates {
            for z in &t.zones {
                assert!(carried.contains(&z.name()), "{file}: {}", z.name());
            }
        }
        for (l, p) in loaded.jobs.iter().zip(&parsed.jobs) {
            assert_eq!(l.spec_hash(), p.spec_hash(), "{file}: {}", p.name.as_str());
        }
        // Writing the loaded manifest again gives the same text.
        assert_eq!(loaded.to_precompiled(&file), json, "{file}");
    }
}

/// The README's first command runs this manifest with the CLI, which runs
/// command jobs only; its daily job shows a dedicated trigger in a zone
/// with DST, and an every-minute job keeps the demo busy.
#[test]
fn the_demo_manifest_is_command_jobs_with_a_dst_zone_and_a_minutely_job() {
    let m = parse(&repository().join("examples/cronslot.toml"));
    assert!(m.jobs.len() >= 5);
    assert!(
        m.jobs
            .iter()
            .all(|j| matches!(j.action, Action::Command { .. }))
    );
    let daily = m
        .jobs
        .iter()
        .find(|j| j.trigger == Trigger::Dedicated)
        .expect("a dedicated job");
    assert_eq!(daily.timezone, "America/New_York");
    assert!(m.jobs.iter().any(|j| j.schedule_text == "* * * * *"));
}
