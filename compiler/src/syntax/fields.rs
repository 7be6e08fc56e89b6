//! Reading typed values out of a spanned mapping node, the way upstream's .NET binder does:
//! keys match case-insensitively, scalars are text converted to the field's type, and every
//! key that no field claims is reported (upstream silently ignores it).

use super::node::{Node, NodeKind};
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::source::Span;

/// A value with the span it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: Span) -> Spanned<T> {
        Spanned { value, span }
    }
}

impl Spanned<String> {
    pub fn as_str(&self) -> &str {
        &self.value
    }
}

/// The fields of one mapping node, checked against the keys its section knows.
pub struct Fields<'n> {
    node: &'n Node,
    /// `(key as written, value)`, first occurrence of each case-insensitive key.
    entries: Vec<(&'n Node, &'n Node)>,
}

impl<'n> Fields<'n> {
    /// Reads a mapping of section `section` (e.g. "agent"), reporting unknown and duplicate
    /// keys. `known` lists the keys the section accepts; a non-mapping node is reported as
    /// a wrong type and yields no fields.
    pub fn new(
        node: &'n Node,
        section: &str,
        known: &[&str],
        diags: &mut Vec<Diagnostic>,
    ) -> Fields<'n> {
        let mut entries: Vec<(&Node, &Node)> = Vec::new();
        match &node.kind {
            NodeKind::Map(pairs) => {
                for (key, value) in pairs {
                    let name = key.as_str().unwrap_or("");
                    if let Some((first, _)) = entries
                        .iter()
                        .find(|(seen, _)| seen.as_str().unwrap_or("").eq_ignore_ascii_case(name))
                    {
                        diags.push(duplicate_key(name, key.span, first.span));
                        // The .NET configuration binder keeps the last value.
                        if let Some(slot) = entries.iter_mut().find(|(seen, _)| {
                            seen.as_str().unwrap_or("").eq_ignore_ascii_case(name)
                        }) {
                            *slot = (key, value);
                        }
                        continue;
                    }
                    if !known
                        .iter()
                        .any(|candidate| candidate.eq_ignore_ascii_case(name))
                    {
                        diags.push(unknown_key(name, section, key.span, known));
                    }
                    entries.push((key, value));
                }
            }
            NodeKind::Null => {}
            _ => diags.push(wrong_type(node, "a mapping", section)),
        }
        Fields { node, entries }
    }

    pub fn span(&self) -> Span {
        self.node.span
    }

    pub fn node(&self) -> &'n Node {
        self.node
    }

    /// The value node of `key`, if present and not null.
    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entry(key)
            .map(|(_, value)| value)
            .filter(|value| !value.is_null())
    }

    /// The key node and value node of `key`, if present (even when null).
    pub fn entry(&self, key: &str) -> Option<(&'n Node, &'n Node)> {
        self.entries
            .iter()
            .find(|(name, _)| name.as_str().unwrap_or("").eq_ignore_ascii_case(key))
            .copied()
    }

    pub fn has(&self, key: &str) -> bool {
        self.entry(key).is_some()
    }

    /// A scalar as text. Empty strings count as absent, as they do for the binder's defaults.
    pub fn str(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Option<Spanned<String>> {
        let value = self.get(key)?;
        match &value.kind {
            NodeKind::Scalar { text, .. } => Some(Spanned::new(text.clone(), value.span)),
            _ => {
                diags.push(wrong_type(value, "a string", key));
                None
            }
        }
    }

    /// A scalar as text, keeping empty strings.
    pub fn text(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Option<Spanned<String>> {
        self.str(key, diags)
    }

    pub fn non_empty_str(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Option<Spanned<String>> {
        self.str(key, diags)
            .filter(|value| !value.value.trim().is_empty())
    }

    pub fn bool(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Option<Spanned<bool>> {
        let text = self.str(key, diags)?;
        match text.value.trim().to_ascii_lowercase().as_str() {
            "true" => Some(Spanned::new(true, text.span)),
            "false" => Some(Spanned::new(false, text.span)),
            _ => {
                diags.push(invalid_scalar(&text, key, "`true` or `false`"));
                None
            }
        }
    }

    /// A non-negative whole number.
    pub fn uint(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Option<Spanned<u64>> {
        let text = self.str(key, diags)?;
        match text.value.trim().parse::<u64>() {
            Ok(number) => Some(Spanned::new(number, text.span)),
            Err(_) => {
                // Negative numbers parse as i64: report them as out of range, not as text.
                if text.value.trim().parse::<i64>().is_ok() {
                    diags.push(
                        Diagnostic::error(
                            Code::InvalidValue,
                            format!("`{key}` must not be negative"),
                        )
                        .with_label(text.span, "a negative number"),
                    );
                } else {
                    diags.push(invalid_scalar(&text, key, "a whole number"));
                }
                None
            }
        }
    }

    /// A number kept as written (temperatures, fractions).
    pub fn number_text(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Option<Spanned<String>> {
        let text = self.str(key, diags)?;
        if text.value.trim().parse::<f64>().is_err() {
            diags.push(invalid_scalar(&text, key, "a number"));
            return None;
        }
        Some(Spanned::new(text.value.trim().to_string(), text.span))
    }

    /// A list node's items (null or absent: empty). A scalar is a wrong type.
    pub fn list(&self, key: &str, diags: &mut Vec<Diagnostic>) -> &'n [Node] {
        match self.get(key) {
            None => &[],
            Some(value) => match &value.kind {
                NodeKind::Seq(items) => items,
                _ => {
                    diags.push(wrong_type(value, "a list", key));
                    &[]
                }
            },
        }
    }

    /// A list of scalars.
    pub fn strings(&self, key: &str, diags: &mut Vec<Diagnostic>) -> Vec<Spanned<String>> {
        let mut out = Vec::new();
        for item in self.list(key, diags) {
            match &item.kind {
                NodeKind::Scalar { text, .. } => out.push(Spanned::new(text.clone(), item.span)),
                NodeKind::Null => {}
                _ => diags.push(wrong_type(item, "a string", key)),
            }
        }
        out
    }

    /// A nested mapping's fields (absent or null: `None`).
    pub fn section(
        &self,
        key: &str,
        known: &[&str],
        diags: &mut Vec<Diagnostic>,
    ) -> Option<Fields<'n>> {
        let value = self.get(key)?;
        Some(Fields::new(value, key, known, diags))
    }
}

pub(crate) fn unknown_key(name: &str, section: &str, span: Span, known: &[&str]) -> Diagnostic {
    let mut diag = Diagnostic::warning(
        Code::UnknownKey,
        format!("unknown key `{name}` in {section}"),
    )
    .with_label(
        span,
        "fuseraft does not read this key (upstream ignores it silently)",
    );
    diag = match did_you_mean(name, known.iter().copied()) {
        Some(suggestion) => diag.with_help(suggestion),
        None => diag.with_help(format!("the keys of {section} are: {}", known.join(", "))),
    };
    diag
}

fn duplicate_key(name: &str, span: Span, first: Span) -> Diagnostic {
    Diagnostic::warning(
        Code::DuplicateName,
        format!("key `{name}` appears twice; the last one wins"),
    )
    .with_label(span, "this value replaces the earlier one")
    .with_label(first, "first written here")
    .with_help("keys are matched case-insensitively; remove one of them")
}

pub(crate) fn wrong_type(node: &Node, expected: &str, what: &str) -> Diagnostic {
    Diagnostic::error(
        Code::InvalidValue,
        format!("`{what}` must be {expected}, found {}", node.kind_name()),
    )
    .with_label(node.span, format!("expected {expected}"))
}

fn invalid_scalar(text: &Spanned<String>, key: &str, expected: &str) -> Diagnostic {
    Diagnostic::error(
        Code::InvalidValue,
        format!("`{key}` must be {expected}, found `{}`", text.value),
    )
    .with_label(text.span, format!("expected {expected}"))
}
