//! `fuseraft check --format sarif`: SARIF 2.1.0, one run, every rule in
//! `tool.driver.rules` (not only those that fired), suppressed findings kept with an
//! `inSource` suppression and their reason.

use serde_json::{json, Value};

use super::{all, position, Checked, Position};
use fuseraft_compiler::check::all_docs;
use fuseraft_compiler::{Code, Diagnostic, Severity, SourceMap};

const DOCS: &str = "https://github.com/fuseraft/fuseraft/blob/main/docs/diagnostics.md";

pub fn render(checked: &[Checked<'_>]) -> String {
    let docs = all_docs();
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|code| {
            let text = docs
                .iter()
                .find(|(documented, _)| documented == code)
                .map(|(_, text)| text.as_str())
                .unwrap_or_default();
            rule(*code, text)
        })
        .collect();
    let mut results = Vec::new();
    for (diag, reason, sources) in all(checked) {
        let mut result = result(diag, sources);
        if let (Some(reason), Value::Object(map)) = (reason, &mut result) {
            map.insert(
                "suppressions".into(),
                json!([{ "kind": "inSource", "justification": reason }]),
            );
        }
        results.push(result);
    }
    let report = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "fuseraft",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": DOCS,
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    let mut text = serde_json::to_string_pretty(&report).unwrap_or_default();
    text.push('\n');
    text
}

fn rule(code: Code, docs: &str) -> Value {
    let short = section(docs, "## What it does")
        .lines()
        .next()
        .unwrap_or(code.name())
        .to_string();
    json!({
        "id": code.as_str(),
        "name": code.name(),
        "shortDescription": { "text": short },
        "fullDescription": { "text": section(docs, "## What it does") },
        "help": { "text": docs, "markdown": docs },
        "helpUri": format!("{DOCS}#{}", code.as_str().to_ascii_lowercase()),
    })
}

/// The text under a `##` heading, up to the next heading.
fn section(docs: &str, heading: &str) -> String {
    let Some(start) = docs.find(heading) else {
        return String::new();
    };
    let rest = &docs[start + heading.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].trim().to_string()
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Advice => "note",
    }
}

fn location(at: &Position, message: Option<&str>, id: Option<usize>) -> Value {
    let mut value = json!({
        "physicalLocation": {
            "artifactLocation": { "uri": at.file.replace('\\', "/") },
            "region": {
                "startLine": at.line,
                "startColumn": at.column,
                "endLine": at.end_line,
                "endColumn": at.end_column,
            },
        },
    });
    if let Value::Object(map) = &mut value {
        if let Some(message) = message {
            map.insert("message".into(), json!({ "text": message }));
        }
        if let Some(id) = id {
            map.insert("id".into(), json!(id));
        }
    }
    value
}

fn result(diag: &Diagnostic, sources: &SourceMap) -> Value {
    let rule_index = Code::ALL.iter().position(|code| *code == diag.code);
    let mut text = diag.message.clone();
    if let Some(help) = &diag.help {
        text.push_str(&format!("\nhelp: {help}"));
    }
    let locations: Vec<Value> = diag
        .span()
        .and_then(|span| position(sources, span))
        .map(|at| vec![location(&at, None, None)])
        .unwrap_or_default();
    let mut related = Vec::new();
    for label in diag.labels.iter().filter(|label| !label.primary) {
        if let Some(at) = position(sources, label.span) {
            related.push(location(&at, Some(&label.message), Some(related.len())));
        }
    }
    for consequence in &diag.related {
        if let Some(at) = consequence.span().and_then(|span| position(sources, span)) {
            let message = format!(
                "{}[{}]: {}",
                consequence.severity.as_str(),
                consequence.code.as_str(),
                consequence.message
            );
            related.push(location(&at, Some(&message), Some(related.len())));
        }
    }
    json!({
        "ruleId": diag.code.as_str(),
        "ruleIndex": rule_index,
        "level": level(diag.severity),
        "message": { "text": text },
        "locations": locations,
        "relatedLocations": related,
    })
}
