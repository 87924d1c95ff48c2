//! A small block-style YAML writer for CloudFormation templates: mappings
//! in insertion order, comments above entries, intrinsic-function tags on
//! scalars, and strings quoted whenever a YAML 1.1 reader (cfn-lint, SAM,
//! PyYAML) could read them as anything but a string (`OFF` is a boolean
//! there).

use std::fmt::Write as _;

/// A YAML node.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Str(String),
    Int(i64),
    Bool(bool),
    /// A scalar with an intrinsic-function tag: `!Ref Name`, `!GetAtt X.Arn`,
    /// `!Sub "..."`.
    Tagged(&'static str, String),
    Map(Vec<Entry>),
    Seq(Vec<Node>),
}

/// One key of a mapping, with comment lines written above it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub comment: Vec<String>,
    pub key: String,
    pub value: Node,
}

/// A mapping under construction.
#[derive(Debug, Clone, Default)]
pub struct Map(Vec<Entry>);

impl Map {
    pub fn new() -> Map {
        Map(Vec::new())
    }

    pub fn put(mut self, key: &str, value: impl Into<Node>) -> Map {
        self.0.push(Entry {
            comment: Vec::new(),
            key: key.to_string(),
            value: value.into(),
        });
        self
    }

    /// Adds `key` only when `value` is `Some`.
    pub fn put_opt(self, key: &str, value: Option<impl Into<Node>>) -> Map {
        match value {
            Some(v) => self.put(key, v),
            None => self,
        }
    }

    pub fn push(&mut self, key: &str, value: impl Into<Node>) {
        self.0.push(Entry {
            comment: Vec::new(),
            key: key.to_string(),
            value: value.into(),
        });
    }

    pub fn push_commented(&mut self, comment: Vec<String>, key: &str, value: impl Into<Node>) {
        self.0.push(Entry {
            comment,
            key: key.to_string(),
            value: value.into(),
        });
    }
}

impl From<Map> for Node {
    fn from(map: Map) -> Node {
        Node::Map(map.0)
    }
}

impl From<&str> for Node {
    fn from(s: &str) -> Node {
        Node::Str(s.to_string())
    }
}

impl From<String> for Node {
    fn from(s: String) -> Node {
        Node::Str(s)
    }
}

impl From<i64> for Node {
    fn from(n: i64) -> Node {
        Node::Int(n)
    }
}

impl From<u64> for Node {
    fn from(n: u64) -> Node {
        Node::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl From<u32> for Node {
    fn from(n: u32) -> Node {
        Node::Int(i64::from(n))
    }
}

impl From<bool> for Node {
    fn from(b: bool) -> Node {
        Node::Bool(b)
    }
}

impl From<Vec<Node>> for Node {
    fn from(items: Vec<Node>) -> Node {
        Node::Seq(items)
    }
}

/// `!Ref name`.
pub fn r#ref(name: &str) -> Node {
    Node::Tagged("!Ref", name.to_string())
}

/// `!GetAtt resource.attribute`.
pub fn get_att(resource: &str, attribute: &str) -> Node {
    Node::Tagged("!GetAtt", format!("{resource}.{attribute}"))
}

/// `!Sub "text"`.
pub fn sub(text: &str) -> Node {
    Node::Tagged("!Sub", text.to_string())
}

/// Writes `root` (a mapping) as a YAML document.
pub fn write_document(out: &mut String, root: &Node) {
    if let Node::Map(entries) = root {
        write_entries(out, entries, 0);
    } else {
        write_inline(out, root);
        out.push('\n');
    }
}

fn indent(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push(' ');
    }
}

fn write_entries(out: &mut String, entries: &[Entry], depth: usize) {
    for entry in entries {
        for line in &entry.comment {
            indent(out, depth);
            if line.is_empty() {
                out.push_str("#\n");
            } else {
                let _ = writeln!(out, "# {line}");
            }
        }
        indent(out, depth);
        out.push_str(&scalar_text(&entry.key));
        out.push(':');
        write_value(out, &entry.value, depth);
    }
}

/// The value after `key:` (or after `- `): inline for scalars and empty
/// collections, on the following lines otherwise.
fn write_value(out: &mut String, value: &Node, depth: usize) {
    match value {
        Node::Map(entries) if !entries.is_empty() => {
            out.push('\n');
            write_entries(out, entries, depth + 2);
        }
        Node::Seq(items) if !items.is_empty() => {
            out.push('\n');
            write_items(out, items, depth + 2);
        }
        other => {
            out.push(' ');
            write_inline(out, other);
            out.push('\n');
        }
    }
}

fn write_items(out: &mut String, items: &[Node], depth: usize) {
    for item in items {
        indent(out, depth);
        out.push_str("- ");
        match item {
            Node::Map(entries) if !entries.is_empty() => {
                // The first key sits on the dash's line; the rest align with it.
                let mut first = String::new();
                write_entries(&mut first, &entries[..1], depth + 2);
                out.push_str(first.trim_start_matches(' '));
                write_entries(out, &entries[1..], depth + 2);
            }
            Node::Seq(inner) if !inner.is_empty() => {
                out.push('\n');
                write_items(out, inner, depth + 2);
            }
            other => {
                write_inline(out, other);
                out.push('\n');
            }
        }
    }
}

fn write_inline(out: &mut String, node: &Node) {
    match node {
        Node::Str(s) => out.push_str(&scalar_text(s)),
        Node::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Node::Tagged(tag, s) => {
            out.push_str(tag);
            out.push(' ');
            out.push_str(&scalar_text(s));
        }
        Node::Map(_) => out.push_str("{}"),
        Node::Seq(_) => out.push_str("[]"),
    }
}

/// Words a YAML 1.1 or 1.2 reader takes for something other than a string.
const RESERVED: [&str; 14] = [
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "nan", "inf", ".nan", ".inf",
];

/// `s` as a plain scalar when that cannot be misread, else double-quoted
/// (JSON escapes are valid YAML double-quoted escapes).
pub fn scalar_text(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | ':'))
        && !s.ends_with(':')
        && !s.contains(": ")
        && !RESERVED.contains(&s.to_ascii_lowercase().as_str());
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(node: Node) -> String {
        let mut out = String::new();
        write_document(&mut out, &node);
        out
    }

    #[test]
    fn ambiguous_scalars_are_quoted() {
        assert_eq!(scalar_text("OFF"), "\"OFF\"");
        assert_eq!(scalar_text("yes"), "\"yes\"");
        assert_eq!(scalar_text("2010-09-09"), "\"2010-09-09\"");
        assert_eq!(scalar_text("cron(0 2 * * ? *)"), "\"cron(0 2 * * ? *)\"");
        assert_eq!(scalar_text("provided.al2023"), "provided.al2023");
        assert_eq!(scalar_text("AWS::DynamoDB::Table"), "AWS::DynamoDB::Table");
        assert_eq!(scalar_text("a\"b"), "\"a\\\"b\"");
    }

    #[test]
    fn nested_blocks() {
        let node = Map::new()
            .put("A", Map::new().put("B", 1u32).put("C", r#ref("X")))
            .put(
                "L",
                vec![
                    Node::from(Map::new().put("K", "v").put("M", get_att("R", "Arn"))),
                    Node::from("s"),
                ],
            )
            .put("E", Node::Seq(vec![]));
        let mut node = node;
        node.push_commented(vec!["note".to_string()], "S", sub("${AWS::StackName}-x"));
        let node: Node = node.into();
        assert_eq!(
            doc(node),
            "A:\n  B: 1\n  C: !Ref X\nL:\n  - K: v\n    M: !GetAtt R.Arn\n  - s\nE: []\n# note\nS: !Sub \"${AWS::StackName}-x\"\n"
        );
    }
}
