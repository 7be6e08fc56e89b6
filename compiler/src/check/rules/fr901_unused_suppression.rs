//! # FR901 `unused-suppression`
//!
//! ## What it does
//! Finds `# fuseraft: allow(CODE) reason` comments that silenced nothing: no finding with
//! that code starts in the node the comment applies to.
//!
//! ## Why is this bad?
//! Stale suppressions hide the next real problem of that kind at that place, and they
//! mislead readers into thinking a problem exists.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     # fuseraft: allow(FR001) kept for the old runner
//!     - Name: Writer
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//! ```

use crate::diagnostic::{Code, Diagnostic};
use crate::source::Span;

pub(crate) fn diagnostic(code: Code, code_span: Span, _allow: Span) -> Diagnostic {
    Diagnostic::warning(
        Code::UnusedSuppression,
        format!("unused suppression: no `{}` finding in the node this comment applies to", code.as_str()),
    )
    .with_label(code_span, "suppresses nothing")
    .with_help("remove it; a suppression covers the next node (or the node on its own line) and everything indented below it")
}
