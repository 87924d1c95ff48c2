//! The ConfigMap that holds the manifest, written as a YAML literal block
//! so that it reads as the manifest's own text (or as a JSON string when
//! a literal block cannot hold it exactly).

use super::*;

pub(super) fn config_map(source: &Source<'_>, options: &Options, text: &mut String) {
    let comment = comment_lines(
        &format!(
            "The manifest, mounted read-only at {MOUNT_DIR}. The pod template carries its hash, so applying a changed manifest rolls the pods."
        ),
        "",
        0,
    );
    let mut root = Map::new();
    root.push_commented(comment, "apiVersion", "v1");
    root.push("kind", "ConfigMap");
    root.push(
        "metadata",
        metadata(
            options,
            &config_map_name(&options.name),
            "manifest",
            Some(annotations(source)),
        ),
    );
    write_document(text, &root.into());
    let manifest_text = source.text;
    text.push_str("data:\n");
    let _ = write!(text, "  {}: ", scalar_text(MANIFEST_KEY));
    match literal_block(manifest_text, 4) {
        Some(block) => text.push_str(&block),
        None => {
            text.push_str(&serde_json::to_string(manifest_text).unwrap_or_default());
            text.push('\n');
        }
    }
}

/// `text` as a YAML literal block scalar (`|`, `|-` or `|+`, then the
/// lines indented by `indent`), or `None` when a literal block cannot hold
/// it exactly (control characters, carriage returns, leading whitespace).
pub fn literal_block(text: &str, indent: usize) -> Option<String> {
    let printable = |c: char| {
        c == '\t'
            || c == '\n'
            || (' '..='~').contains(&c)
            || (c >= '\u{A0}'
                && !matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{FFFE}' | '\u{FFFF}'
                ))
    };
    // The first line with content sets the block's indentation: it may
    // not begin with whitespace (empty lines before it are fine).
    let first = text.split('\n').find(|l| !l.is_empty())?;
    if first.starts_with([' ', '\t']) || !text.chars().all(printable) {
        return None;
    }
    let body = text.trim_end_matches('\n');
    let trailing = text.len() - body.len();
    let indicator = match trailing {
        0 => "|-",
        1 => "|",
        _ => "|+",
    };
    let mut out = format!("{indicator}\n");
    for line in body.split('\n') {
        if !line.is_empty() {
            out.push_str(&" ".repeat(indent));
            out.push_str(line);
        }
        out.push('\n');
    }
    for _ in 1..trailing {
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use saphyr::{LoadableYamlNode, Yaml};

    #[test]
    fn literal_blocks_read_back_exactly() {
        for text in [
            "a = 1\n",
            "a = 1",
            "a = 1\n\n\n",
            "# c\n\n[x]\n  y = \"two  spaces\"  \n\tz = 1\n",
            "a = \"é ✓\"\n---\n...\n",
            "\n\na = 1\n",
        ] {
            let block = literal_block(text, 4).expect("representable");
            let doc = format!("k: {block}");
            let docs = Yaml::load_from_str(&doc).expect("yaml");
            assert_eq!(docs[0]["k"].as_str(), Some(text), "{doc}");
        }
        for text in ["", "\n\n", " a", "\n a", "\n  \na", "a\r\nb", "a\u{7}"] {
            assert!(literal_block(text, 4).is_none(), "{text:?}");
        }
    }
}
