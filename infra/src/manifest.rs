//! Reading the manifest a command names, and finding a job in it. Every
//! problem is bad input (exit 2), listing all errors with file, line and
//! column.

use std::path::Path;

use cronslot_core::manifest::{JobSpec, JobTemplate, Manifest, parse_manifest};

use crate::exit::Failure;

/// Reads and checks a manifest.
pub fn load_manifest(path: &Path) -> Result<Manifest, Failure> {
    read_manifest(path).map(|(_, manifest)| manifest)
}

/// Reads and validates a manifest, keeping its text for the hash.
pub fn read_manifest(path: &Path) -> Result<(String, Manifest), Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            let cwd = std::env::current_dir()
                .map(|d| format!(" in {}", d.display()))
                .unwrap_or_default();
            Failure::bad_input(format!(
                "error: cannot read manifest {}: there is no such file{cwd}; name yours with \
                 --manifest FILE (or {}), or start a project with \
                 `cronslot new NAME --platform local`",
                path.display(),
                crate::cli::MANIFEST_ENV
            ))
        } else {
            Failure::bad_input(format!(
                "error: cannot read manifest {}: {e}",
                path.display()
            ))
        }
    })?;
    let manifest = parse_manifest(&text, &path.display().to_string())
        .map_err(|errors| Failure::bad_input(errors.to_string()))?;
    Ok((text, manifest))
}

/// The job named `name`, or bad input listing the jobs the manifest has.
/// The dynamic job `name` (`dynamic = true`) of the manifest, else bad
/// input saying why: a static job's schedule is the manifest's, or there
/// is no such job; either way the dynamic jobs are named.
pub fn find_template<'m>(
    manifest: &'m Manifest,
    path: &Path,
    name: &str,
) -> Result<&'m JobTemplate, Failure> {
    if let Some(t) = manifest.template(name) {
        return Ok(t);
    }
    let dynamic: Vec<&str> = manifest.templates.iter().map(|t| t.name.as_str()).collect();
    let dynamic = if dynamic.is_empty() {
        "it has no dynamic jobs (dynamic = true)".to_string()
    } else {
        format!("its dynamic jobs: {}", dynamic.join(", "))
    };
    let what = if manifest.job(name).is_some() {
        format!("job {name:?} is not dynamic (its schedule is the manifest's)")
    } else {
        format!("no job {name:?}")
    };
    Err(Failure::bad_input(format!(
        "error: {what} in manifest {}; {dynamic}",
        path.display()
    )))
}

pub fn find_job<'m>(
    manifest: &'m Manifest,
    path: &Path,
    name: &str,
) -> Result<&'m JobSpec, Failure> {
    manifest.job(name).ok_or_else(|| {
        let known: Vec<&str> = manifest.jobs.iter().map(|j| j.name.as_str()).collect();
        let close = cronslot_core::suggest::close_names(name, known.iter().copied(), 3);
        let known = match (known.len(), close.as_slice()) {
            (0, _) => "it defines no jobs".to_string(),
            (_, [_, ..]) => format!("did you mean {}?", close.join(", ")),
            // A short list is shown whole; a long one would bury the error.
            (1..=10, []) => format!("known jobs: {}", known.join(", ")),
            (n, []) => {
                format!("none of its {n} jobs is named like it (`cronslot status` lists them)")
            }
        };
        Failure::bad_input(format!(
            "error: no job {name:?} in manifest {}; {known}",
            path.display()
        ))
    })
}
