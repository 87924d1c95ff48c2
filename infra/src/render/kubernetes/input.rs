//! What `render kubernetes` is given: the names (DNS-1123 labels and
//! subdomains, a CronJob's shorter limit), the image reference, the
//! default name from the manifest's file, and the refusal of function
//! jobs. Apart because it checks the command line before anything is
//! rendered.

use super::*;

/// A CronJob's name is at most 52 characters: its Jobs add 11.
const MAX_CRONJOB_NAME: usize = 52;
const MAX_LABEL: usize = 63;

/// Whether `s` is a DNS-1123 label: lowercase letters, digits and dashes,
/// starting and ending with a letter or digit, at most `max` characters.
pub fn is_dns_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS-1123 subdomain: dot-separated labels, at most 253.
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(|label| is_dns_label(label, MAX_LABEL))
}

/// The longest `--name` of a kind.
pub fn max_name(kind: KubernetesKind) -> usize {
    match kind {
        KubernetesKind::Deployment => MAX_LABEL,
        KubernetesKind::CronJob => MAX_CRONJOB_NAME,
    }
}

pub fn check_name(name: &str, kind: KubernetesKind) -> Result<(), Failure> {
    let max = max_name(kind);
    if is_dns_label(name, max) {
        return Ok(());
    }
    let why = if kind == KubernetesKind::CronJob && is_dns_label(name, MAX_LABEL) {
        " (a CronJob's name is at most 52: its Jobs add 11 characters)"
    } else {
        ""
    };
    Err(Failure::bad_input(format!(
        "error: --name {name:?}: a Kubernetes name here is a DNS-1123 label: 1 to {max} lowercase letters, digits and dashes, starting and ending with a letter or digit{why}"
    )))
}

pub fn check_namespace(namespace: &str) -> Result<(), Failure> {
    if is_dns_label(namespace, MAX_LABEL) {
        return Ok(());
    }
    Err(Failure::bad_input(format!(
        "error: --namespace {namespace:?}: a namespace is a DNS-1123 label: 1 to 63 lowercase letters, digits and dashes, starting and ending with a letter or digit"
    )))
}

pub fn check_secret(secret: &str) -> Result<(), Failure> {
    if is_dns_subdomain(secret) {
        return Ok(());
    }
    Err(Failure::bad_input(format!(
        "error: --secret {secret:?}: a Secret's name is a DNS-1123 subdomain: at most 253 lowercase letters, digits, dashes and dots, each dot-separated part starting and ending with a letter or digit"
    )))
}

/// An image reference: no whitespace or control characters, not empty.
pub fn check_image(image: &str) -> Result<(), Failure> {
    let ok = !image.is_empty()
        && image.len() <= 4096
        && !image.starts_with(['-', ':', '@', '/'])
        && image
            .chars()
            .all(|c| c.is_ascii_graphic() && !matches!(c, '"' | '\'' | '\\' | '$' | '`'));
    if ok {
        return Ok(());
    }
    Err(Failure::bad_input(format!(
        "error: --image {image:?}: an image reference such as registry.example.com/team/cronslot:1.2.3 or …@sha256:DIGEST (no spaces or quotes)"
    )))
}

/// The manifest's file stem made a DNS-1123 label of at most `max`
/// characters, or `cronslot`.
pub fn default_name(manifest: &Path, kind: KubernetesKind) -> String {
    let stem = manifest
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut cleaned = String::new();
    for c in stem.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            cleaned.push(c);
        } else if !cleaned.ends_with('-') {
            cleaned.push('-');
        }
    }
    let cleaned: String = cleaned
        .trim_matches('-')
        .chars()
        .take(max_name(kind))
        .collect();
    let cleaned = cleaned.trim_end_matches('-').to_string();
    if cleaned.is_empty() {
        "cronslot".to_string()
    } else {
        cleaned
    }
}

/// `cronslot run` and `cronslot tick` run command and http jobs only.
pub fn refuse_functions(manifest: &Manifest) -> Result<(), Failure> {
    let names: Vec<String> = manifest
        .jobs
        .iter()
        .filter(|j| j.action == Action::Function)
        .map(|j| format!("{:?}", j.name.as_str()))
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    Err(Failure::bad_input(format!(
        "error: `cronslot run` and `cronslot tick` run command and http jobs only; these jobs need a Rust function registered by a program that embeds cronslot-runner: {}",
        names.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels() {
        assert!(is_dns_label("cronslot", 63));
        assert!(is_dns_label("a-1", 63));
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", &"a".repeat(64)] {
            assert!(!is_dns_label(bad, 63), "{bad:?}");
        }
        assert!(is_dns_subdomain("jobs.store-1"));
        assert!(!is_dns_subdomain("jobs..store"));
        assert!(check_name(&"a".repeat(53), KubernetesKind::CronJob).is_err());
        assert!(check_name(&"a".repeat(53), KubernetesKind::Deployment).is_ok());
    }

    #[test]
    fn default_names_come_from_the_file_stem() {
        let d = KubernetesKind::Deployment;
        assert_eq!(default_name(Path::new("x/cronslot.toml"), d), "cronslot");
        assert_eq!(default_name(Path::new("My_Jobs.toml"), d), "my-jobs");
        assert_eq!(default_name(Path::new("__.toml"), d), "cronslot");
        let long = format!("{}.toml", "a".repeat(80));
        assert_eq!(
            default_name(Path::new(&long), KubernetesKind::CronJob).len(),
            52
        );
    }
}
