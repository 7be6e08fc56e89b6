//! Machine-readable reports of `fuseraft check` findings: JSON, SARIF 2.1.0 and GitHub
//! workflow annotations. Every position carries both the byte range and the 1-based
//! line/column range (columns count characters), which miette's own JSON lacks.

pub mod github;
pub mod json;
pub mod sarif;

use fuseraft_compiler::check::Findings;
use fuseraft_compiler::diagnostic::Label;
use fuseraft_compiler::{Diagnostic, SourceMap, Span};

/// One checked input, as the reports see it.
pub struct Checked<'a> {
    /// The input as named on the command line (a finding without a span points at it).
    pub input: &'a std::path::Path,
    pub findings: &'a Findings,
    pub sources: &'a SourceMap,
}

/// A resolved position: file name, byte range, and 1-based line/column range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    pub file: String,
    pub offset: u32,
    pub length: u32,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

pub fn position(sources: &SourceMap, span: Span) -> Option<Position> {
    if span.file.0 as usize >= sources.len() {
        return None;
    }
    let file = sources.get(span.file);
    let start = file.line_col(span.start);
    let end = file.line_col(span.end);
    Some(Position {
        file: file.name.clone(),
        offset: span.start,
        length: span.end - span.start,
        line: start.line,
        column: start.column,
        end_line: end.line,
        end_column: end.column,
    })
}

/// The primary label of a diagnostic (or its first).
pub fn primary(diag: &Diagnostic) -> Option<&Label> {
    diag.labels
        .iter()
        .find(|label| label.primary)
        .or(diag.labels.first())
}

/// Every finding of every input, suppressed ones included, with their sources.
pub fn all<'a>(
    checked: &'a [Checked<'a>],
) -> impl Iterator<Item = (&'a Diagnostic, Option<&'a str>, &'a SourceMap)> + 'a {
    checked.iter().flat_map(|input| {
        input
            .findings
            .diagnostics
            .iter()
            .map(move |diag| (diag, None, input.sources))
            .chain(
                input
                    .findings
                    .suppressed
                    .iter()
                    .map(move |s| (&s.diagnostic, Some(s.reason.as_str()), input.sources)),
            )
    })
}
