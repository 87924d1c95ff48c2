//! Rules on single values that hold however the manifest reached cronslot:
//! shared by the TOML validation (`table.rs`) and the precompiled form
//! (`precompiled.rs`), so both refuse the same values.

/// Headers cronslot sets on every request itself.
const RESERVED_HEADERS: [&str; 2] = ["Idempotency-Key", "Cronslot-Fence"];

fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

/// Why `url` is not an absolute http(s) URL with a host, if it is not.
pub(super) fn url_problem(url: &str) -> Option<&'static str> {
    let lower = url.to_ascii_lowercase();
    let Some(rest) = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
    else {
        return Some("is not an http:// or https:// URL");
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("contains spaces or control characters; percent-encode them");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, p)) => (h, p.strip_prefix(':')),
            None => return Some("has an unclosed [ in its host"),
        }
    } else {
        match host_port.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return Some("has no host");
    }
    if let Some(p) = port {
        if p.parse::<u16>().map_or(true, |n| n == 0) {
            return Some("has an invalid port");
        }
    }
    None
}

/// Why `name` cannot be the name of a header of an `http` job, if it cannot.
pub(super) fn header_name_problem(name: &str) -> Option<String> {
    if !is_token(name) {
        return Some(format!("{name:?} is not a valid HTTP header name"));
    }
    RESERVED_HEADERS
        .iter()
        .find(|r| r.eq_ignore_ascii_case(name))
        .map(|reserved| format!("header {reserved} is set by cronslot on every request"))
}

/// Why `value` cannot be the value of header `name`, if it cannot.
pub(super) fn header_value_problem(name: &str, value: &str) -> Option<String> {
    value
        .chars()
        .any(|ch| ch.is_control() && ch != '\t')
        .then(|| format!("the value of header {name:?} contains a line break or control character"))
}

/// Why `name` cannot be an environment variable of a command job, if it
/// cannot.
pub(super) fn env_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.contains(['=', '\0']) {
        Some(format!("{name:?} is not a valid environment variable name"))
    } else if name.to_ascii_uppercase().starts_with("CRONSLOT_") {
        Some(format!(
            "environment variable {name} is reserved: cronslot sets the CRONSLOT_ variables"
        ))
    } else {
        None
    }
}

/// Why `value` cannot be the value of environment variable `name`, if it
/// cannot.
pub(super) fn env_value_problem(name: &str, value: &str) -> Option<String> {
    value
        .contains('\0')
        .then(|| format!("the value of environment variable {name:?} contains a NUL character"))
}
