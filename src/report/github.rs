//! `fuseraft check --format github`: GitHub Actions workflow commands, one annotation per
//! finding: `::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=FR201
//! unreachable-state::message`. Suppressed findings are not annotated.

use super::{position, Checked};
use fuseraft_compiler::{Diagnostic, Severity};

pub fn render(checked: &[Checked<'_>]) -> String {
    let mut out = String::new();
    for input in checked {
        for diag in &input.findings.diagnostics {
            out.push_str(&annotation(diag, input.sources));
            out.push('\n');
        }
    }
    out
}

fn annotation(diag: &Diagnostic, sources: &fuseraft_compiler::SourceMap) -> String {
    let command = match diag.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Advice => "notice",
    };
    let mut properties = Vec::new();
    if let Some(at) = diag.span().and_then(|span| position(sources, span)) {
        properties.push(format!("file={}", property(&at.file)));
        properties.push(format!("line={}", at.line));
        properties.push(format!("col={}", at.column));
        properties.push(format!("endLine={}", at.end_line));
        properties.push(format!("endColumn={}", at.end_column));
    }
    properties.push(format!(
        "title={}",
        property(&format!("{} {}", diag.code.as_str(), diag.code.name()))
    ));
    let mut message = diag.message.clone();
    if let Some(help) = &diag.help {
        message.push_str(&format!("\nhelp: {help}"));
    }
    for related in &diag.related {
        message.push_str(&format!(
            "\nrelated {}: {}",
            related.code.as_str(),
            related.message
        ));
    }
    format!("::{command} {}::{}", properties.join(","), data(&message))
}

/// Escapes the message of a workflow command.
pub fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value of a workflow command.
pub fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}
