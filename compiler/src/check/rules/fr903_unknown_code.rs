//! # FR903 `unknown-code`
//!
//! ## What it does
//! Finds codes in `# fuseraft: allow(...)` comments that are not diagnostic codes (codes
//! are written `FR302` or by name, `shadowed-keyword`).
//!
//! ## Why is this bad?
//! A misspelt code suppresses nothing, so the finding it was meant to silence still fires,
//! or the suppression outlives the code's rename unnoticed.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!       # fuseraft: allow(FR01) read by our fork of the runner
//!       Temprature: 1
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!       # fuseraft: allow(FR001) read by our fork of the runner
//!       Temprature: 1
//! ```

use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::source::Span;

pub(crate) fn diagnostic(text: &str, span: Span) -> Diagnostic {
    let codes = Code::ALL.iter().map(|code| code.as_str());
    let help = did_you_mean(text, codes).unwrap_or_else(|| "run `fuseraft check --explain FR001` to see a code's documentation; docs/diagnostics.md lists them all".to_string());
    Diagnostic::error(
        Code::UnknownSuppressionCode,
        format!("`{text}` is not a diagnostic code"),
    )
    .with_label(span, "unknown code")
    .with_help(help)
}
