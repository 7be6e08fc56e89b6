//! # FR902 `suppression-missing-reason`
//!
//! ## What it does
//! Finds `# fuseraft: allow(CODE)` comments with no reason after the closing parenthesis.
//! The suppression still applies; the missing reason is an error, as in Biome.
//!
//! ## Why is this bad?
//! A suppression records a decision. Without the reason, the next reader cannot tell a
//! considered exception from a silenced bug.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!       # fuseraft: allow(FR001)
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

use crate::diagnostic::{Code, Diagnostic};
use crate::source::Span;

pub(crate) fn diagnostic(span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::SuppressionMissingReason,
        "this suppression gives no reason",
    )
    .with_label(span, "add the reason after `)`")
    .with_help("write why the finding is acceptable: `# fuseraft: allow(FR302) NOT APPROVED is never emitted`")
}
