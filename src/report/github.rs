//! `fuseraft check --format github`: GitHub Actions workflow commands, one annotation per
//! finding: `::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=FR201
//! unreachable-state::message`. Suppressed findings are not annotated.
//!
//! GitHub shows at most 10 annotations of each kind per step (and 50 per job) and drops the
//! rest silently, so errors come first, and when a kind overflows a last notice says how
//! many findings there are; [`summary`] renders all of them as a Markdown table for
//! `$GITHUB_STEP_SUMMARY`.

use super::{position, Checked};
use fuseraft_compiler::{Diagnostic, Severity};

/// Annotations GitHub shows per kind in one step.
const SHOWN_PER_KIND: usize = 10;

pub fn render(checked: &[Checked<'_>]) -> String {
    let mut out = String::new();
    let mut counts = [0usize; 3];
    for severity in [Severity::Error, Severity::Warning, Severity::Advice] {
        for input in checked {
            for diag in input
                .findings
                .diagnostics
                .iter()
                .filter(|d| d.severity == severity)
            {
                out.push_str(&annotation(diag, input.sources));
                out.push('\n');
                counts[severity as usize] += 1;
            }
        }
    }
    if counts.iter().any(|count| *count > SHOWN_PER_KIND) {
        let [advice, warnings, errors] = counts;
        out.push_str(&format!(
            "::notice title=fuseraft check::{}\n",
            data(&format!(
                "{errors} errors, {warnings} warnings and {advice} advice in all; GitHub shows at most {SHOWN_PER_KIND} annotations of each kind per step, see the job summary or run `fuseraft check` locally"
            ))
        ));
    }
    out
}

/// Every finding as a Markdown table (for `$GITHUB_STEP_SUMMARY`).
pub fn summary(checked: &[Checked<'_>]) -> String {
    let mut out = String::from(
        "### fuseraft check\n\n| severity | code | where | message |\n| --- | --- | --- | --- |\n",
    );
    let mut any = false;
    for input in checked {
        for diag in &input.findings.diagnostics {
            any = true;
            let at = diag
                .span()
                .and_then(|span| position(input.sources, span))
                .map(|at| format!("{}:{}:{}", at.file, at.line, at.column))
                .unwrap_or_default();
            out.push_str(&format!(
                "| {} | {} `{}` | {} | {} |\n",
                diag.severity.as_str(),
                diag.code.as_str(),
                diag.code.name(),
                cell(&at),
                cell(&diag.message)
            ));
        }
    }
    if !any {
        out.push_str("| | | | no problems found |\n");
    }
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
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
