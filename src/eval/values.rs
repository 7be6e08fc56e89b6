//! Reading a suite file's values from the spanned node tree: each reader names the key and
//! points at the value when it has the wrong shape.

use fuseraft_compiler::diagnostic::did_you_mean;
use fuseraft_compiler::syntax::{Node, NodeKind};
use fuseraft_compiler::{Code, Diagnostic, Span};

/// An error at `span` about a value.
pub fn invalid(span: Span, message: impl Into<String>, label: &str) -> Diagnostic {
    Diagnostic::error(Code::InvalidValue, message).with_label(span, label.to_string())
}

/// The entries of a mapping, each key checked against `keys` (an unknown key is an error with
/// a did-you-mean, a repeated one an error pointing at both); `what` names the mapping.
pub fn entries<'a>(
    node: &'a Node,
    keys: &[&str],
    what: &str,
) -> Result<Vec<(&'a str, &'a Node, &'a Node)>, Diagnostic> {
    let NodeKind::Map(pairs) = &node.kind else {
        return Err(invalid(
            node.span,
            format!("{what} is a mapping of keys; found {}", node.kind_name()),
            "expected a mapping",
        ));
    };
    let mut seen: Vec<(&str, &Node, &Node)> = Vec::new();
    for (key, value) in pairs {
        let name = key.as_str().unwrap_or_default();
        if !keys.contains(&name) {
            let help = did_you_mean(name, keys.iter().copied())
                .unwrap_or_else(|| format!("the keys of {what} are: {}", keys.join(", ")));
            return Err(Diagnostic::error(
                Code::UnknownKey,
                format!("unknown key `{name}` in {what}"),
            )
            .with_label(key.span, format!("not a key of {what}"))
            .with_help(help));
        }
        if let Some((_, first, _)) = seen.iter().find(|(seen, _, _)| *seen == name) {
            return Err(
                Diagnostic::error(Code::DuplicateName, format!("`{name}` is given twice"))
                    .with_label(key.span, "given again here")
                    .with_label(first.span, "first given here"),
            );
        }
        seen.push((name, key, value));
    }
    Ok(seen)
}

/// The value of `name` among `entries`.
pub fn get<'a>(entries: &[(&str, &'a Node, &'a Node)], name: &str) -> Option<&'a Node> {
    entries
        .iter()
        .find(|(key, _, _)| *key == name)
        .map(|(_, _, value)| *value)
}

pub fn text(key: &str, value: &Node) -> Result<String, Diagnostic> {
    value.as_str().map(str::to_string).ok_or_else(|| {
        invalid(
            value.span,
            format!("`{key}` must be text, found {}", value.kind_name()),
            "expected text",
        )
    })
}

/// Text that is not blank.
pub fn words(key: &str, value: &Node) -> Result<String, Diagnostic> {
    let found = text(key, value)?;
    if found.trim().is_empty() {
        return Err(invalid(
            value.span,
            format!("`{key}` is empty"),
            "expected some text",
        ));
    }
    Ok(found)
}

pub fn boolean(key: &str, value: &Node) -> Result<bool, Diagnostic> {
    match value.as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        _ => Err(invalid(
            value.span,
            format!("`{key}` is `true` or `false`"),
            "expected true or false",
        )),
    }
}

/// A whole number, at least 0.
pub fn count(key: &str, value: &Node) -> Result<u32, Diagnostic> {
    value
        .as_str()
        .and_then(|text| text.trim().parse::<u32>().ok())
        .ok_or_else(|| {
            invalid(
                value.span,
                format!("`{key}` is a whole number, 0 or more"),
                "expected a number",
            )
        })
}

/// A fraction from 0 to 1.
pub fn fraction(key: &str, value: &Node) -> Result<f64, Diagnostic> {
    value
        .as_str()
        .and_then(|text| text.trim().parse::<f64>().ok())
        .filter(|number| (0.0..=1.0).contains(number))
        .ok_or_else(|| {
            invalid(
                value.span,
                format!("`{key}` is a number from 0 to 1 (e.g. 0.8 for 80% of the runs)"),
                "expected a fraction",
            )
        })
}

/// A list of text items (a single text stands for a list of one); `(text, span)` each.
pub fn list(key: &str, value: &Node) -> Result<Vec<(String, Span)>, Diagnostic> {
    match &value.kind {
        NodeKind::Null => Ok(Vec::new()),
        NodeKind::Scalar { text, .. } => Ok(vec![(text.clone(), value.span)]),
        NodeKind::Seq(items) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(|text| (text.to_string(), item.span))
                    .ok_or_else(|| {
                        invalid(
                            item.span,
                            format!("`{key}` lists text, found {}", item.kind_name()),
                            "expected text",
                        )
                    })
            })
            .collect(),
        NodeKind::Map(_) => Err(invalid(
            value.span,
            format!("`{key}` is a list of text, found a mapping"),
            "expected a list",
        )),
    }
}
