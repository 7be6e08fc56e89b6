//! Reading a replay file (YAML or JSON) into the VM's replay script. YAML stays on this side
//! of the boundary: the VM receives JSON.

use std::path::Path;

use fuseraft_compiler::syntax::{Budget, Node, NodeKind};
use fuseraft_compiler::{Diagnostic, SourceFile, SourceMap, Span};
use serde_json::Value as Json;

/// A YAML scalar the way YAML 1.2's core schema types it; quoted scalars stay strings.
fn scalar(text: String, quoted: bool) -> Json {
    if quoted {
        return Json::String(text);
    }
    match text.as_str() {
        "true" | "True" | "TRUE" => return Json::Bool(true),
        "false" | "False" | "FALSE" => return Json::Bool(false),
        _ => {}
    }
    if let Ok(number) = text.parse::<i64>() {
        return Json::from(number);
    }
    if let Ok(number) = text.parse::<f64>() {
        if number.is_finite() && text.chars().any(|ch| ch.is_ascii_digit()) {
            return Json::from(number);
        }
    }
    Json::String(text)
}

/// A node tree as JSON (a scenario's inline replies).
pub fn to_json(node: &Node) -> Json {
    into_json(node.clone())
}

/// A node tree as JSON, moving its text rather than copying it (replay files are large).
fn into_json(node: Node) -> Json {
    match node.kind {
        NodeKind::Null => Json::Null,
        NodeKind::Scalar { text, quoted } => scalar(text, quoted),
        NodeKind::Seq(items) => Json::Array(items.into_iter().map(into_json).collect()),
        NodeKind::Map(pairs) => Json::Object(
            pairs
                .into_iter()
                .map(|(key, value)| {
                    let key = match key.kind {
                        NodeKind::Scalar { text, .. } => text,
                        _ => String::new(),
                    };
                    (key, into_json(value))
                })
                .collect(),
        ),
    }
}

/// Why a replay file could not be used, with the source to render it against.
pub type LoadError = Box<(SourceMap, Diagnostic)>;

/// The replay script in `path`, or a diagnostic (with file, line and column when the file
/// does not parse).
pub fn load(path: &Path) -> Result<fuseraft_vm::replay::Script, LoadError> {
    match crate::disk::read_at_most(path, crate::disk::MAX_REPLAY_BYTES) {
        Ok(text) => parse(path, text),
        Err(error) => Err(unreadable(path, &error)),
    }
}

/// The diagnostic of a replay file that cannot be read.
pub fn unreadable(path: &Path, error: &std::io::Error) -> LoadError {
    Box::new((
        SourceMap::new(),
        Diagnostic::error(
            fuseraft_compiler::Code::MissingFile,
            format!("cannot read replay file `{}`: {error}", path.display()),
        ),
    ))
}

/// A replay script from `text`, read from `path` (a `.json` extension selects JSON).
pub fn parse(path: &Path, text: String) -> Result<fuseraft_vm::replay::Script, LoadError> {
    let mut sources = SourceMap::new();
    let is_json = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
    let invalid = |sources: SourceMap, span: Span, message: String| {
        let diag = Diagnostic::error(
            fuseraft_compiler::Code::InvalidValue,
            format!("invalid replay file: {message}"),
        )
        .with_label(span, "in this replay file");
        Box::new((sources, diag))
    };
    // Replay files are data: allow more text and nodes than a config, keep the depth limit.
    let budget = Budget {
        max_bytes: crate::disk::MAX_REPLAY_BYTES as usize,
        max_nodes: 50_000_000,
        ..Budget::default()
    };
    // A well-formed JSON file is read straight into the script. Any other goes to
    // serde_json as a whole value, which `Script::from_json` checks for the error to show;
    // the span-keeping parser below runs only to point at what is wrong (including nesting
    // deeper than the budget, which serde_json would accept up to 128 levels).
    if is_json {
        if let Some(script) = fuseraft_vm::replay::Script::from_json_text(&text, budget.max_depth) {
            return Ok(script);
        }
        if let Ok(value) = serde_json::from_str::<Json>(&text)
            .map_err(drop)
            .and_then(|value| {
                if depth(&value) <= budget.max_depth {
                    Ok(value)
                } else {
                    Err(())
                }
            })
        {
            return fuseraft_vm::replay::Script::from_json(value).map_err(|message| {
                let end = text.len();
                let file = sources.add(SourceFile::new(path.display().to_string(), path, text));
                invalid(sources, Span::new(file, 0, end), message)
            });
        }
    }
    let file = sources.add(SourceFile::new(path.display().to_string(), path, text));
    let source = sources.get(file);
    let parsed = if is_json {
        fuseraft_compiler::syntax::parse_json(file, &source.text, &budget)
    } else {
        fuseraft_compiler::syntax::parse_yaml(file, &source.text, &budget)
    };
    let node = match parsed {
        Ok(node) => node,
        Err(diag) => return Err(Box::new((sources, diag))),
    };
    let span = node.span;
    fuseraft_vm::replay::Script::from_json(into_json(node))
        .map_err(|message| invalid(sources, span, message))
}

/// How deeply lists and mappings nest in `value`; the root collection is level 1, as in
/// [`Budget::max_depth`].
fn depth(value: &Json) -> usize {
    match value {
        Json::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Json::Object(entries) => 1 + entries.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replay whose one tool call's arguments nest `levels` mappings deep.
    fn nested(levels: usize) -> String {
        let args = "{\"a\": ".repeat(levels) + "1" + &"}".repeat(levels);
        format!(
            "{{\"replies\": {{\"A\": [{{\"tool_calls\": [{{\"name\": \"t\", \"args\": {args}}}]}}]}}}}"
        )
    }

    #[test]
    fn json_and_yaml_replays_share_the_depth_limit() {
        // Root, replies, queue, reply, tool_calls, call: six levels before the arguments.
        let limit = Budget::default().max_depth;
        for (levels, accepted) in [
            (limit - 6, true),
            (limit - 5, false),
            (100, false),
            (200, false),
        ] {
            for name in ["replay.json", "replay.yaml"] {
                let result = parse(Path::new(name), nested(levels));
                assert_eq!(result.is_ok(), accepted, "{name} at {levels} levels");
                if let Err(error) = result {
                    assert!(
                        error.1.message.contains("nesting is deeper than 64 levels"),
                        "{name}: {}",
                        error.1.message
                    );
                }
            }
        }
    }
}
