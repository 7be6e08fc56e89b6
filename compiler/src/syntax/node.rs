//! The span-keeping node tree that the YAML and JSON loaders produce and the lowering reads.
//!
//! The tree is deliberately schema-free: every scalar stays text (YAML 1.2 core schema is not
//! applied, so `true` and `5` are scalars like any other), only the null forms become
//! [`NodeKind::Null`], and duplicate mapping keys are kept in source order for higher layers to
//! report.

use crate::diagnostic::{Code, Diagnostic};
use crate::source::{FileId, Span};

/// One value of a config file, with the byte span it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub span: Span,
    pub kind: NodeKind,
}

/// What a [`Node`] holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// Plain `~`, `null`, `Null`, `NULL`, an empty value, or JSON `null`.
    Null,
    /// Every other scalar, as text. `quoted` is true for single- or double-quoted and block
    /// scalars in YAML, and for JSON strings.
    Scalar {
        text: String,
        quoted: bool,
    },
    Seq(Vec<Node>),
    /// Key and value nodes in source order; duplicate keys are kept.
    Map(Vec<(Node, Node)>),
}

/// Limits that keep a hostile or broken file from exhausting memory, time or the stack.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The deepest nesting of lists and mappings (the root collection is level 1).
    pub max_depth: usize,
    /// The most nodes (keys included) that YAML aliases may produce by expansion, and the
    /// least node budget of a document's own text (see [`Budget::document_nodes`]).
    pub max_nodes: usize,
    /// The most alias uses (`*name`) in one document.
    pub max_alias_expansions: usize,
    /// The largest input text; in YAML also the most scalar text after alias expansion.
    pub max_bytes: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max_depth: 64,
            max_nodes: 1_000_000,
            max_alias_expansions: 10_000,
            max_bytes: 16 * 1024 * 1024,
        }
    }
}

/// A document may hold one node per this many bytes of its text, whatever `max_nodes` says:
/// a large plain document (a generated 100,000-state machine) is bounded by its size, which
/// `max_bytes` caps, while copies made by aliases stay under `max_nodes`.
const BYTES_PER_NODE: usize = 4;

impl Budget {
    /// The most nodes a document of `bytes` bytes may write out itself (aliases not counted).
    pub fn document_nodes(&self, bytes: usize) -> usize {
        self.max_nodes.max(bytes / BYTES_PER_NODE)
    }
}

impl Node {
    pub fn new(span: Span, kind: NodeKind) -> Node {
        Node { span, kind }
    }

    /// The text of a scalar, quoted or not.
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.kind, NodeKind::Null)
    }

    /// A short description for messages such as "expected a mapping, found a list".
    pub fn kind_name(&self) -> &'static str {
        match &self.kind {
            NodeKind::Null => "null",
            NodeKind::Scalar { quoted: true, .. } => "a string",
            NodeKind::Scalar { quoted: false, .. } => "a scalar",
            NodeKind::Seq(_) => "a list",
            NodeKind::Map(_) => "a mapping",
        }
    }

    /// The value of the first entry whose key equals `key` ignoring case (maps only).
    pub fn get_ci(&self, key: &str) -> Option<&Node> {
        self.entries()
            .iter()
            .find(|(k, _)| k.as_str().is_some_and(|text| eq_ignore_case(text, key)))
            .map(|(_, value)| value)
    }

    /// The value of the first entry whose key is exactly `key` (maps only).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entries()
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, value)| value)
    }

    /// The entries of a mapping; empty for anything else.
    pub fn entries(&self) -> &[(Node, Node)] {
        match &self.kind {
            NodeKind::Map(entries) => entries,
            _ => &[],
        }
    }

    /// The items of a list; empty for anything else.
    pub fn items(&self) -> &[Node] {
        match &self.kind {
            NodeKind::Seq(items) => items,
            _ => &[],
        }
    }
}

fn eq_ignore_case(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b);
    }
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

// Helpers shared by the YAML and JSON loaders.

/// A span pointing at the character at `offset` (empty at the end of the text or at a line break).
pub(crate) fn point_span(file: FileId, text: &str, offset: usize) -> Span {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let len = match text[offset..].chars().next() {
        Some('\n' | '\r') | None => 0,
        Some(ch) => ch.len_utf8(),
    };
    Span::new(file, offset, offset + len)
}

/// `16 MiB`, `4 KiB` or `1000 bytes`.
pub(crate) fn describe_bytes(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// The diagnostic for an input larger than [`Budget::max_bytes`]; `language` is `yaml` or `json`.
pub(crate) fn input_too_large(
    file: FileId,
    text: &str,
    max_bytes: usize,
    language: &str,
) -> Diagnostic {
    Diagnostic::error(
        Code::ResourceLimit,
        format!(
            "{language} file is larger than {}",
            describe_bytes(max_bytes)
        ),
    )
    .with_label(
        point_span(file, text, max_bytes),
        "the size limit is reached here",
    )
}

/// `invalid yaml: <what>` with the first letter of `what` lowercased and no trailing period.
pub(crate) fn syntax_error(language: &str, what: &str, span: Span) -> Diagnostic {
    let what = what.trim().trim_end_matches('.');
    let mut chars = what.chars();
    let what = match (chars.next(), chars.clone().next()) {
        (None, _) => "unexpected input".to_string(),
        // Keep acronyms such as `YAML` intact.
        (Some(_), Some(second)) if second.is_uppercase() => what.to_string(),
        (Some(first), _) => first.to_lowercase().chain(chars).collect(),
    };
    Diagnostic::error(Code::SyntaxError, format!("invalid {language}: {what}"))
        .with_label(span, "syntax error here")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(text: &str, quoted: bool) -> Node {
        Node::new(
            Span::default(),
            NodeKind::Scalar {
                text: text.to_string(),
                quoted,
            },
        )
    }

    #[test]
    fn helpers() {
        let map = Node::new(
            Span::new(FileId(0), 0, 10),
            NodeKind::Map(vec![
                (scalar("Name", false), scalar("first", false)),
                (scalar("name", true), scalar("second", true)),
                (
                    Node::new(Span::default(), NodeKind::Null),
                    scalar("x", false),
                ),
                (
                    scalar("ÄGENT", false),
                    Node::new(Span::default(), NodeKind::Seq(vec![])),
                ),
            ]),
        );
        assert_eq!(map.get_ci("NAME").and_then(Node::as_str), Some("first"));
        assert_eq!(map.get("name").and_then(Node::as_str), Some("second"));
        assert_eq!(map.get("NAME"), None);
        assert_eq!(map.get_ci("ägent").map(Node::kind_name), Some("a list"));
        assert_eq!(map.entries().len(), 4);
        assert!(map.items().is_empty());
        assert_eq!(map.kind_name(), "a mapping");
        assert_eq!(scalar("x", true).kind_name(), "a string");
        assert_eq!(scalar("x", false).kind_name(), "a scalar");
        assert!(scalar("x", false).get_ci("x").is_none());
        assert!(Node::new(Span::default(), NodeKind::Null).is_null());
        assert_eq!(Budget::default().max_bytes, 16 * 1024 * 1024);
        assert_eq!(describe_bytes(16 * 1024 * 1024), "16 MiB");
        assert_eq!(describe_bytes(2048), "2 KiB");
        assert_eq!(describe_bytes(1000), "1000 bytes");
        assert_eq!(point_span(FileId(0), "a→b", 2), Span::new(FileId(0), 1, 4));
        assert_eq!(point_span(FileId(0), "a\n", 1), Span::new(FileId(0), 1, 1));
        assert_eq!(point_span(FileId(0), "a", 9), Span::new(FileId(0), 1, 1));
    }
}
