//! `fuseraft check --format json`: one object with every finding.
//!
//! Stable: the field names and their meaning, codes and names, severities. Not stable: the
//! wording of `message`, `help` and label texts.

use serde_json::{json, Map, Value};

use super::{all, position, Checked};
use fuseraft_compiler::{Diagnostic, Severity, SourceMap};

pub fn render(checked: &[Checked<'_>]) -> String {
    let mut findings = Vec::new();
    for (diag, reason, sources) in all(checked) {
        let mut value = finding(diag, sources);
        if let (Some(reason), Value::Object(map)) = (reason, &mut value) {
            map.insert(
                "suppressed".into(),
                json!({ "kind": "inSource", "reason": reason }),
            );
        }
        findings.push(value);
    }
    let count = |severity: Severity| {
        checked
            .iter()
            .flat_map(|c| &c.findings.diagnostics)
            .filter(|d| d.severity == severity)
            .count()
    };
    let suppressed: usize = checked.iter().map(|c| c.findings.suppressed.len()).sum();
    let report = json!({
        "version": 1,
        "findings": findings,
        "summary": {
            "errors": count(Severity::Error),
            "warnings": count(Severity::Warning),
            "advice": count(Severity::Advice),
            "suppressed": suppressed,
        },
    });
    let mut text = serde_json::to_string_pretty(&report).unwrap_or_default();
    text.push('\n');
    text
}

fn finding(diag: &Diagnostic, sources: &SourceMap) -> Value {
    let mut map = Map::new();
    map.insert("code".into(), json!(diag.code.as_str()));
    map.insert("name".into(), json!(diag.code.name()));
    map.insert("severity".into(), json!(diag.severity.as_str()));
    map.insert("message".into(), json!(diag.message));
    map.insert("help".into(), json!(diag.help));
    let primary = diag.span().and_then(|span| position(sources, span));
    insert_position(&mut map, primary.as_ref());
    let labels: Vec<Value> = diag
        .labels
        .iter()
        .map(|label| {
            let mut entry = Map::new();
            entry.insert("message".into(), json!(label.message));
            entry.insert("primary".into(), json!(label.primary));
            insert_position(&mut entry, position(sources, label.span).as_ref());
            Value::Object(entry)
        })
        .collect();
    map.insert("labels".into(), Value::Array(labels));
    let related: Vec<Value> = diag.related.iter().map(|r| finding(r, sources)).collect();
    map.insert("related".into(), Value::Array(related));
    Value::Object(map)
}

fn insert_position(map: &mut Map<String, Value>, at: Option<&super::Position>) {
    match at {
        Some(at) => {
            map.insert("file".into(), json!(at.file));
            map.insert("offset".into(), json!(at.offset));
            map.insert("length".into(), json!(at.length));
            map.insert("line".into(), json!(at.line));
            map.insert("column".into(), json!(at.column));
            map.insert("end_line".into(), json!(at.end_line));
            map.insert("end_column".into(), json!(at.end_column));
        }
        None => {
            for key in [
                "file",
                "offset",
                "length",
                "line",
                "column",
                "end_line",
                "end_column",
            ] {
                map.insert(key.into(), Value::Null);
            }
        }
    }
}
