//! Reading a replay file (YAML or JSON) into the VM's replay script. YAML stays on this side
//! of the boundary: the VM receives JSON.

use std::path::Path;

use fuseraft_compiler::syntax::{Budget, Node, NodeKind};
use fuseraft_compiler::{Diagnostic, SourceFile, SourceMap};
use serde_json::Value as Json;

/// A YAML scalar the way YAML 1.2's core schema types it; quoted scalars stay strings.
fn scalar(text: &str, quoted: bool) -> Json {
    if quoted {
        return Json::String(text.to_string());
    }
    match text {
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
    Json::String(text.to_string())
}

pub fn to_json(node: &Node) -> Json {
    match &node.kind {
        NodeKind::Null => Json::Null,
        NodeKind::Scalar { text, quoted } => scalar(text, *quoted),
        NodeKind::Seq(items) => Json::Array(items.iter().map(to_json).collect()),
        NodeKind::Map(pairs) => Json::Object(
            pairs
                .iter()
                .map(|(key, value)| (key.as_str().unwrap_or_default().to_string(), to_json(value)))
                .collect(),
        ),
    }
}

/// Why a replay file could not be used, with the source to render it against.
pub type LoadError = Box<(SourceMap, Diagnostic)>;

/// The replay script in `path`, or a diagnostic (with file, line and column when the file
/// does not parse).
pub fn load(path: &Path) -> Result<fuseraft_vm::replay::Script, LoadError> {
    let mut sources = SourceMap::new();
    let text = match crate::disk::read_at_most(path, crate::disk::MAX_REPLAY_BYTES) {
        Ok(text) => text,
        Err(error) => {
            return Err(Box::new((
                sources,
                Diagnostic::error(
                    fuseraft_compiler::Code::MissingFile,
                    format!("cannot read replay file `{}`: {error}", path.display()),
                ),
            )))
        }
    };
    let file = sources.add(SourceFile::new(path.display().to_string(), path, text));
    let source = sources.get(file);
    let is_json = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
    // Replay files are data: allow more text and nodes than a config, keep the depth limit.
    let budget = Budget {
        max_bytes: crate::disk::MAX_REPLAY_BYTES as usize,
        max_nodes: 50_000_000,
        ..Budget::default()
    };
    let parsed = if is_json {
        fuseraft_compiler::syntax::parse_json(file, &source.text, &budget)
    } else {
        fuseraft_compiler::syntax::parse_yaml(file, &source.text, &budget)
    };
    let node = match parsed {
        Ok(node) => node,
        Err(diag) => return Err(Box::new((sources, diag))),
    };
    fuseraft_vm::replay::Script::from_json(&to_json(&node)).map_err(|message| {
        let diag = Diagnostic::error(
            fuseraft_compiler::Code::InvalidValue,
            format!("invalid replay file: {message}"),
        )
        .with_label(node.span, "in this replay file");
        Box::new((sources, diag))
    })
}
