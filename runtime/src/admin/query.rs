//! Query strings and path segments: percent-decoding and parameter checks.

use std::collections::BTreeMap;

use super::{ErrorDoc, ErrorKind, Reply};

/// Decodes `%XX` escapes; `+` stays `+` (RFC 3986: only HTML forms make
/// it a space, and RFC 3339 offsets contain it). `None`: a malformed escape
/// or bytes that are not UTF-8.
pub(crate) fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_string());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = bytes.get(i + 1).and_then(|b| (*b as char).to_digit(16))?;
            let lo = bytes.get(i + 2).and_then(|b| (*b as char).to_digit(16))?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A 400 naming the parameter.
pub(crate) fn bad_parameter(parameter: &str, message: impl Into<String>) -> Reply {
    let mut doc = ErrorDoc::new(400, ErrorKind::BadRequest, message);
    doc.parameter = Some(parameter.to_string());
    Reply::error_doc(doc)
}

/// Parses a query into its parameters, refusing malformed escapes,
/// parameters the route does not take and parameters given twice.
/// Empty pairs (`a=1&&b=2`) are ignored; `name` alone has the value "".
pub(crate) fn parse_query(
    query: Option<&str>,
    allowed: &[&str],
) -> Result<BTreeMap<String, String>, Reply> {
    let mut params = BTreeMap::new();
    let Some(query) = query else {
        return Ok(params);
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(name) = percent_decode(raw_name) else {
            return Err(bad_parameter(
                &printable(raw_name),
                format!(
                    "query parameter name {:?} has a malformed percent-escape or is not UTF-8",
                    printable(raw_name)
                ),
            ));
        };
        if !allowed.contains(&name.as_str()) {
            let takes = if allowed.is_empty() {
                "this route takes no query parameters".to_string()
            } else {
                format!("this route takes: {}", allowed.join(", "))
            };
            return Err(bad_parameter(
                &printable(&name),
                format!("unknown query parameter {:?}; {takes}", printable(&name)),
            ));
        }
        let Some(value) = percent_decode(raw_value) else {
            return Err(bad_parameter(
                &name,
                format!(
                    "parameter {name:?}: {:?} has a malformed percent-escape or is not UTF-8",
                    printable(raw_value)
                ),
            ));
        };
        if params.contains_key(&name) {
            return Err(bad_parameter(
                &name,
                format!("parameter {name:?} is given more than once"),
            ));
        }
        params.insert(name, value);
    }
    Ok(params)
}

/// At most 100 characters of untrusted text, for messages.
pub(crate) fn printable(text: &str) -> String {
    const MAX: usize = 100;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes() {
        assert_eq!(percent_decode("a%20b").as_deref(), Some("a b"));
        assert_eq!(percent_decode("+01:00").as_deref(), Some("+01:00"));
        assert_eq!(percent_decode("%2B01%3A00").as_deref(), Some("+01:00"));
        assert_eq!(percent_decode("%"), None);
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%ff"), None);
        assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
    }

    #[test]
    fn parses() {
        let p = parse_query(Some("job=a&&dry_run"), &["job", "dry_run"]).unwrap();
        assert_eq!(p.get("job").map(String::as_str), Some("a"));
        assert_eq!(p.get("dry_run").map(String::as_str), Some(""));
        assert_eq!(
            parse_query(Some("jobs=a"), &["job"]).unwrap_err().status,
            400
        );
        assert_eq!(
            parse_query(Some("job=a&job=b"), &["job"])
                .unwrap_err()
                .status,
            400
        );
    }
}
