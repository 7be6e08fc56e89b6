//! # FR603 `unknown-validator`
//!
//! ## What it does
//! Finds validator names (on keyword routes, graph edges and nodes, and `Termination`)
//! that upstream does not know. Names compare case-insensitively; the finding suggests the
//! closest known name.
//!
//! ## Why is this bad?
//! Upstream drops an unknown validator name silently, so the gate the author wrote does
//! not exist and the route is taken unchecked.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Tester
//!   Selection:
//!     Type: keyword
//!     Routes:
//!       - Keyword: READY FOR TEST
//!         Agent: Tester
//!         Validator: RequireShellPas
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Tester
//!   Selection:
//!     Type: keyword
//!     Routes:
//!       - Keyword: READY FOR TEST
//!         Agent: Tester
//!         Validator: RequireShellPass
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{did_you_mean, known_list, Code, Diagnostic};
use crate::syntax::fields::Spanned;
use crate::syntax::fuseraft::TerminationDecl;

pub(crate) const VALIDATORS: &[&str] = &[
    "RequireShellPass",
    "RequireWriteFile",
    "RequireBrief",
    "TestReportValid",
    "RequireReviewJudgement",
    "RequireAllFilesWritten",
    "BlockOnConsecutiveFail",
    "RequireAcceptanceCriteriaPassed",
    "RequireRelatedTestsPass",
    "ArchitectureValidator",
    "RequireSessionContextWrite",
];

/// Every validator name written in the config.
pub(crate) fn validator_names(config: &crate::syntax::fuseraft::Config) -> Vec<&Spanned<String>> {
    let mut out = Vec::new();
    let selection = &config.selection;
    for route in &selection.routes {
        out.extend(route.validators.iter());
    }
    if let Some(graph) = &selection.graph {
        for edge in &graph.edges {
            out.extend(edge.validators.iter());
        }
        for node in &graph.nodes {
            out.extend(node.validators.iter());
        }
    }
    fn termination<'a>(decl: &'a TerminationDecl, out: &mut Vec<&'a Spanned<String>>) {
        out.extend(decl.validators.iter());
        for child in &decl.strategies {
            termination(child, out);
        }
    }
    if let Some(decl) = &config.termination {
        termination(decl, &mut out);
    }
    out
}

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let mut found = Vec::new();
    for name in validator_names(config) {
        if VALIDATORS
            .iter()
            .any(|known| known.eq_ignore_ascii_case(name.value.trim()))
        {
            continue;
        }
        let help = did_you_mean(&name.value, VALIDATORS.iter().copied())
            .unwrap_or_else(|| known_list(VALIDATORS.iter().copied()));
        found.push(
            Diagnostic::warning(
                Code::UnknownValidator,
                format!("unknown validator `{}`: upstream drops it silently, so this gate does not exist", name.value),
            )
            .with_label(name.span, "not a validator")
            .with_help(help),
        );
    }
    for diag in found {
        ctx.push(diag);
    }
}
