//! Reading a wrangler.toml: its crons, the Durable Object binding and
//! migration cronslot's Worker needs, and the manifest hash it records.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::render::wrangler::{DO_BINDING, DO_CLASS, HASH_VAR};

use super::cfn::ReadError;

/// What `check` needs from a wrangler file.
#[derive(Debug, Clone, Default)]
pub struct Wrangler {
    /// Each cron with its line.
    pub crons: Vec<(String, usize)>,
    /// The line of `crons = [...]` (or 1).
    pub crons_line: usize,
    /// `[vars] CRONSLOT_MANIFEST_HASH`.
    pub manifest_hash: Option<String>,
    /// A `[[durable_objects.bindings]]` binds `CRONSLOT_JOBS` to `CronslotJob`.
    pub binding: bool,
    /// A `[[migrations]]` creates `CronslotJob` (SQLite-backed or not).
    pub migration: Option<Migration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migration {
    Sqlite,
    /// `new_classes`: a key-value-backed object; the adapter uses SQL.
    KeyValue,
}

/// 1-based line of a byte offset.
pub fn line_at(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len()))
        .map_or(1, |before| before.matches('\n').count() + 1)
}

fn table<'a, 'i>(value: &'a Spanned<DeValue<'i>>) -> Option<&'a DeTable<'i>> {
    value.get_ref().as_table()
}

fn string<'a>(value: Option<&'a Spanned<DeValue<'_>>>) -> Option<&'a str> {
    match value.map(Spanned::get_ref) {
        Some(DeValue::String(s)) => Some(s.as_ref()),
        _ => None,
    }
}

fn array<'a, 'i>(value: Option<&'a Spanned<DeValue<'i>>>) -> &'a [Spanned<DeValue<'i>>] {
    value
        .and_then(|v| v.get_ref().as_array())
        .map_or(&[], |a| &a[..])
}

pub fn read(text: &str) -> Result<Wrangler, ReadError> {
    let root = DeTable::parse(text).map_err(|e| ReadError {
        line: e.span().map(|s| line_at(text, s.start)),
        message: e.message().trim().to_string(),
    })?;
    let root = root.get_ref();
    let mut out = Wrangler {
        crons_line: 1,
        ..Wrangler::default()
    };
    if let Some(triggers) = root.get("triggers") {
        let Some(triggers) = table(triggers) else {
            return Err(ReadError {
                line: Some(line_at(text, triggers.span().start)),
                message: "triggers is not a table".into(),
            });
        };
        if let Some(crons) = triggers.get("crons") {
            out.crons_line = line_at(text, crons.span().start);
            let Some(items) = crons.get_ref().as_array() else {
                return Err(ReadError {
                    line: Some(out.crons_line),
                    message: "triggers.crons is not an array of strings".into(),
                });
            };
            for item in items {
                let line = line_at(text, item.span().start);
                match item.get_ref().as_str() {
                    Some(cron) => out.crons.push((cron.to_string(), line)),
                    None => {
                        return Err(ReadError {
                            line: Some(line),
                            message: "triggers.crons holds something other than a string".into(),
                        });
                    }
                }
            }
        }
    }
    out.manifest_hash = root
        .get("vars")
        .and_then(table)
        .and_then(|vars| string(vars.get(HASH_VAR)))
        .map(str::to_string);
    let bindings = root
        .get("durable_objects")
        .and_then(table)
        .map(|d| array(d.get("bindings")))
        .unwrap_or(&[]);
    out.binding = bindings.iter().filter_map(table).any(|b| {
        string(b.get("name")) == Some(DO_BINDING) && string(b.get("class_name")) == Some(DO_CLASS)
    });
    for migration in array(root.get("migrations")).iter().filter_map(table) {
        let has = |key: &str| {
            array(migration.get(key))
                .iter()
                .any(|c| c.get_ref().as_str() == Some(DO_CLASS))
        };
        if has("new_sqlite_classes") {
            out.migration = Some(Migration::Sqlite);
        } else if has("new_classes") && out.migration.is_none() {
            out.migration = Some(Migration::KeyValue);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_crons_with_lines() {
        let text = "name = \"x\"\n[triggers]\ncrons = [\n  \"* * * * *\",\n  \"0 9 * * 2-6\", # a\n]\n\n[[durable_objects.bindings]]\nname = \"CRONSLOT_JOBS\"\nclass_name = \"CronslotJob\"\n\n[[migrations]]\ntag = \"v1\"\nnew_sqlite_classes = [\"CronslotJob\"]\n";
        let w = read(text).expect("readable");
        assert_eq!(
            w.crons,
            [("* * * * *".to_string(), 4), ("0 9 * * 2-6".to_string(), 5)]
        );
        assert!(w.binding);
        assert_eq!(w.migration, Some(Migration::Sqlite));
        assert_eq!(w.manifest_hash, None);
    }

    #[test]
    fn syntax_errors_have_a_line() {
        let e = read("a = 1\n[triggers\n").expect_err("broken");
        assert_eq!(e.line, Some(2));
    }
}
