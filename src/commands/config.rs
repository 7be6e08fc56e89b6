//! `fuseraft config show [CONFIG]`: a fuseraft config as the compiler read it, printed as
//! YAML: anchors and aliases expanded, JSON turned to YAML, a key written twice shown once
//! with its last value (`FR003`), and every key renamed to its
//! canonical spelling. The spelling comes from the config's JSON Schema (`fuseraft schema`,
//! generated from the compiler's key tables), so it is the one list `check` and editors use.
//! A config with errors gets `check`'s diagnostics on standard error instead.
//!
//! Exit codes: 0 printed, 1 the config has errors, 2 it could not be read or is not a
//! fuseraft config.

use std::path::PathBuf;

use fuseraft_compiler::check;
use fuseraft_compiler::syntax::{Node, NodeKind};
use fuseraft_compiler::Syntax;
use serde_json::Value as Json;

use super::exit;
use crate::cli::{ConfigAction, ConfigArgs};
use crate::disk::Project;
use crate::render::Style;
use crate::report::Checked;

/// Upstream's default config, when none is named.
const DEFAULT: &str = ".fuseraft/config/orchestration.yaml";

pub fn run(args: &ConfigArgs, style: Style) -> u8 {
    let ConfigAction::Show { config } = &args.action;
    let named = config.clone().unwrap_or_else(|| PathBuf::from(DEFAULT));
    let path = super::inputs::workflow_in(&named);
    let compiled = fuseraft_compiler::compile(&path, &Project::new());
    let findings = check::check(&compiled);
    if compiled.unreadable || findings.has_errors() {
        let checked = [Checked {
            input: &path,
            findings: &findings,
            sources: &compiled.sources,
        }];
        eprint!("{}", super::check::human(&checked, style));
        return if compiled.unreadable {
            exit::USAGE
        } else {
            exit::FINDINGS
        };
    }
    let Syntax::Config(parsed) = &compiled.syntax else {
        eprintln!(
            "error: `{}` is not a fuseraft config (YAML or JSON with an `Orchestration:` root); `fuseraft compile` shows what it compiles to",
            path.display()
        );
        return exit::USAGE;
    };
    let schema = fuseraft_compiler::syntax::schema::json_schema();
    let mut out = String::from("Orchestration:");
    let root = resolve(&schema, &schema["properties"]["Orchestration"]);
    emit(&parsed.root, root, &schema, 1, &mut out);
    out.push('\n');
    super::print_or_fail(&out).unwrap_or(exit::OK)
}

/// `schema` with its `$ref` followed (`#/$defs/NAME`).
fn resolve<'s>(root: &'s Json, schema: &'s Json) -> &'s Json {
    match schema.get("$ref").and_then(Json::as_str) {
        Some(reference) => reference
            .strip_prefix("#/$defs/")
            .and_then(|name| root["$defs"].get(name))
            .unwrap_or(&Json::Null),
        None => schema,
    }
}

/// `schema` and the alternatives it allows (`anyOf`, `oneOf`, `allOf`), `$ref`s followed.
fn alternatives<'s>(root: &'s Json, schema: &'s Json, out: &mut Vec<&'s Json>) {
    let schema = resolve(root, schema);
    out.push(schema);
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in schema
            .get(key)
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            if out.len() < 64 {
                alternatives(root, branch, out);
            }
        }
    }
}

/// The canonical spelling of `key` under `schema` and the schema of its value; the key as
/// written when the schema does not name it.
fn key_of<'s>(root: &'s Json, schema: &'s Json, key: &str) -> (String, &'s Json) {
    let mut all = Vec::new();
    alternatives(root, schema, &mut all);
    for one in &all {
        let properties = one.get("properties").and_then(Json::as_object);
        if let Some((name, child)) = properties
            .into_iter()
            .flatten()
            .find(|(name, _)| name.eq_ignore_ascii_case(key.trim()))
        {
            return (name.clone(), child);
        }
    }
    let extra = all
        .iter()
        .find_map(|one| one.get("additionalProperties").filter(|v| v.is_object()));
    (key.to_string(), extra.unwrap_or(&Json::Null))
}

/// The schema of a list's items under `schema`.
fn items_of<'s>(root: &'s Json, schema: &'s Json) -> &'s Json {
    let mut all = Vec::new();
    alternatives(root, schema, &mut all);
    all.iter()
        .find_map(|one| one.get("items"))
        .unwrap_or(&Json::Null)
}

/// Appends `node` as the YAML value after a key (or a `-`), at `depth` levels of indent.
fn emit(node: &Node, schema: &Json, root: &Json, depth: usize, out: &mut String) {
    let indent = "  ".repeat(depth);
    match &node.kind {
        NodeKind::Null => out.push_str(" null"),
        NodeKind::Scalar { text, .. } => {
            out.push(' ');
            scalar(text, &indent, out);
        }
        NodeKind::Map(entries) if entries.is_empty() => out.push_str(" {}"),
        NodeKind::Seq(items) if items.is_empty() => out.push_str(" []"),
        NodeKind::Map(entries) => {
            for (at, (key, value)) in entries.iter().enumerate() {
                let written = key.as_str().unwrap_or("");
                // A key written twice keeps its last value, as the compiler reads it (FR003).
                let same = |(later, _): &(Node, Node)| {
                    later.as_str().unwrap_or("").eq_ignore_ascii_case(written)
                };
                if entries[at + 1..].iter().any(same) {
                    continue;
                }
                let (name, child) = key_of(root, schema, written);
                out.push('\n');
                out.push_str(&indent);
                if name.contains('\n') {
                    out.push_str(&serde_json::to_string(&name).unwrap_or_default());
                } else {
                    scalar(&name, &indent, out);
                }
                out.push(':');
                emit(value, child, root, depth + 1, out);
            }
        }
        NodeKind::Seq(items) => {
            let child = items_of(root, schema);
            for item in items {
                out.push('\n');
                out.push_str(&indent);
                out.push('-');
                // A mapping item starts on the dash's line: `- Name: Developer`.
                let mut text = String::new();
                emit(item, child, root, depth + 1, &mut text);
                let first = format!("\n{indent}  ");
                match text.strip_prefix(&first) {
                    Some(rest) if matches!(item.kind, NodeKind::Map(_)) => {
                        out.push(' ');
                        out.push_str(rest);
                    }
                    _ => out.push_str(&text),
                }
            }
        }
    }
}

/// A scalar: plain when YAML reads it back as the same text, a literal block (its lines at
/// `indent`) for text of several lines, double-quoted (JSON escapes) otherwise.
fn scalar(text: &str, indent: &str, out: &mut String) {
    let plain_char = |c: char| c.is_ascii_alphanumeric() || " _./+-()".contains(c);
    let plain = !text.is_empty()
        && text.chars().all(plain_char)
        && !text.starts_with([' ', '-'])
        && !text.ends_with(' ');
    if plain {
        out.push_str(text);
        return;
    }
    let block = text.contains('\n')
        && !text.starts_with([' ', '\n'])
        && !text.chars().any(|c| c.is_control() && c != '\n')
        && !text.lines().any(|line| line.ends_with(' '));
    if !block {
        out.push_str(&serde_json::to_string(text).unwrap_or_default());
        return;
    }
    let body = text.trim_end_matches('\n');
    let chomp = match text.len() - body.len() {
        0 => "-",
        1 => "",
        _ => "+",
    };
    out.push('|');
    out.push_str(chomp);
    for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(indent);
            out.push_str(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        let mut out = String::new();
        scalar(text, "  ", &mut out);
        out
    }

    #[test]
    fn scalars_are_plain_only_when_yaml_reads_them_back_unchanged() {
        assert_eq!(shown("gpt-4o-mini"), "gpt-4o-mini");
        assert_eq!(shown("HANDOFF TO TESTER"), "HANDOFF TO TESTER");
        assert_eq!(shown("a: b"), "\"a: b\"");
        assert_eq!(shown("- item"), "\"- item\"");
        assert_eq!(shown("#1"), "\"#1\"");
        assert_eq!(shown(""), "\"\"");
        assert_eq!(shown("one\ntwo\n"), "|\n  one\n  two");
        assert_eq!(shown("one\n\ntwo"), "|-\n  one\n\n  two");
        assert_eq!(shown(" lead\nx"), "\" lead\\nx\"");
    }
}
