//! The CLI's `--store dynamodb://TABLE?region=R[&endpoint=URL]` syntax.

/// Where a DynamoDB store lives, as parsed from a `dynamodb://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamoLocation {
    /// The table's name.
    pub table: String,
    /// `None`: the region of the environment (`AWS_REGION`, the profile).
    pub region: Option<String>,
    /// `None`: the AWS endpoint of the region. Set for DynamoDB Local or
    /// moto.
    pub endpoint: Option<String>,
}

pub use cronslot_core::coord::LocationError;

/// The location as a URL, parameters in a fixed order (there is no secret
/// in it: credentials come from the environment).
impl std::fmt::Display for DynamoLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "dynamodb://{}", self.table)?;
        let mut sep = '?';
        if let Some(region) = &self.region {
            write!(f, "{sep}region={region}")?;
            sep = '&';
        }
        if let Some(endpoint) = &self.endpoint {
            write!(f, "{sep}endpoint={endpoint}")?;
        }
        Ok(())
    }
}
use cronslot_core::coord::location::{DecodeError, decode_component};

const SYNTAX: &str = "expected dynamodb://TABLE?region=REGION[&endpoint=URL], for example dynamodb://cronslot?region=us-east-1 or dynamodb://cronslot?region=us-east-1&endpoint=http://127.0.0.1:5000";

/// Parses `dynamodb://TABLE?region=REGION[&endpoint=URL]` (scheme in any
/// case). The region may be left out when the environment names one;
/// parameter values may be percent-encoded.
pub fn parse_dynamodb_location(input: &str) -> Result<DynamoLocation, LocationError> {
    let error = |message: String| LocationError {
        input: input.to_string(),
        message: format!("store {input:?}: {message}; {SYNTAX}"),
    };
    let trimmed = input.trim();
    let Some((scheme, rest)) = trimmed.split_once(':') else {
        return Err(error("no scheme".into()));
    };
    if !scheme.eq_ignore_ascii_case("dynamodb") {
        return Err(error(format!("scheme {scheme:?} is not dynamodb")));
    }
    let Some(rest) = rest.strip_prefix("//") else {
        return Err(error("the table must follow \"dynamodb://\"".into()));
    };
    let (table, query) = match rest.split_once('?') {
        Some((table, query)) => (table, Some(query)),
        None => (rest, None),
    };
    check_table_name(table).map_err(error)?;
    let mut region = None;
    let mut endpoint = None;
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        if pair.is_empty() {
            continue;
        }
        let Some((name, value)) = pair.split_once('=') else {
            return Err(error(format!(
                "parameter {pair:?} has no value (NAME=VALUE)"
            )));
        };
        let value = percent_decode(value).map_err(error)?;
        if value.is_empty() {
            return Err(error(format!("parameter {name:?} is empty")));
        }
        let slot = match name {
            "region" => &mut region,
            "endpoint" => &mut endpoint,
            other => {
                return Err(error(format!(
                    "unknown parameter {other:?} (known: region, endpoint)"
                )));
            }
        };
        if slot.is_some() {
            return Err(error(format!("parameter {name:?} is given twice")));
        }
        *slot = Some(value);
    }
    if let Some(r) = &region {
        if !r
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(error(format!(
                "region {r:?} is not a region name (like us-east-1)"
            )));
        }
    }
    if let Some(e) = &endpoint {
        if !(e.starts_with("http://") || e.starts_with("https://")) {
            return Err(error(format!(
                "endpoint {e:?} is not an http:// or https:// URL"
            )));
        }
    }
    Ok(DynamoLocation {
        table: table.to_string(),
        region,
        endpoint,
    })
}

/// DynamoDB's table-name rule: 3 to 255 of `A-Z a-z 0-9 _ - .`.
pub(crate) fn check_table_name(table: &str) -> Result<(), String> {
    if table.is_empty() {
        return Err("no table name".into());
    }
    if let Some(bad) = table
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "table name {table:?} has {bad:?}; DynamoDB allows only letters, digits, '_', '-' and '.'"
        ));
    }
    if !(3..=255).contains(&table.len()) {
        return Err(format!(
            "table name {table:?} has {} characters; DynamoDB needs 3 to 255",
            table.len()
        ));
    }
    Ok(())
}

fn percent_decode(text: &str) -> Result<String, String> {
    decode_component(text).map_err(|e| match e {
        DecodeError::BadEscape => format!("{text:?} has a '%' not followed by two hex digits"),
        DecodeError::NotUtf8 => format!("{text:?} decodes to bytes that are not UTF-8"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_table_region_endpoint() {
        let loc = parse_dynamodb_location(
            "dynamodb://cronslot?region=us-east-1&endpoint=http%3A%2F%2F127.0.0.1:5000",
        )
        .unwrap();
        assert_eq!(loc.table, "cronslot");
        assert_eq!(loc.region.as_deref(), Some("us-east-1"));
        assert_eq!(loc.endpoint.as_deref(), Some("http://127.0.0.1:5000"));
        let loc = parse_dynamodb_location("DynamoDB://my.table_1").unwrap();
        assert_eq!(loc.region, None);
        assert_eq!(loc.endpoint, None);
    }

    #[test]
    fn bad_locations_say_what_was_expected() {
        for (input, needle) in [
            ("cronslot", "no scheme"),
            ("sqlite:x.db", "not dynamodb"),
            ("dynamodb:cronslot", "must follow"),
            ("dynamodb://?region=us-east-1", "no table name"),
            ("dynamodb://ab", "3 to 255"),
            ("dynamodb://a/b", "'/'"),
            ("dynamodb://tbl?region", "no value"),
            ("dynamodb://tbl?regoin=us-east-1", "unknown parameter"),
            ("dynamodb://tbl?region=a&region=b", "twice"),
            ("dynamodb://tbl?region=US_EAST", "not a region"),
            ("dynamodb://tbl?endpoint=localhost:8000", "not an http"),
            ("dynamodb://tbl?endpoint=%zz", "hex"),
            ("dynamodb://tbl?endpoint=%+1", "hex"),
            ("dynamodb://tbl?endpoint=%FF", "not UTF-8"),
        ] {
            let err = parse_dynamodb_location(input).unwrap_err();
            assert!(err.message.contains(needle), "{input}: {}", err.message);
            assert!(err.message.contains("expected dynamodb://"), "{err}");
        }
    }
}
