//! Reading criterion's own estimates back after a run, so a benchmark can
//! print the ratio of two of its measurements (shared by the benches).

use std::path::PathBuf;
use std::time::SystemTime;

/// Criterion's output directory, found the way criterion finds it.
pub fn criterion_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    let from_metadata = std::env::var_os("CARGO").and_then(|cargo| {
        let out = std::process::Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        Some(PathBuf::from(v.get("target_directory")?.as_str()?))
    });
    from_metadata
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("criterion")
}

/// The mean time per iteration (ns) criterion estimated for `id` in this
/// run (`None` if the file is missing or older than `since`).
pub fn criterion_mean(group: &str, id: &str, since: SystemTime) -> Option<f64> {
    // Criterion writes `utc/1-minute` as the directory `utc_1-minute`.
    let path = criterion_home()
        .join(group)
        .join(id.replace('/', "_"))
        .join("new")
        .join("estimates.json");
    let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
    if modified < since {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    v.get("mean")?.get("point_estimate")?.as_f64()
}
