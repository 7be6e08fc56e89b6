//! # FR006 `incompatible-settings`
//!
//! ## What it does
//! Finds settings that upstream's `fuseraft validate` rejects in combination (errors there,
//! errors here):
//! - `magentic` selection with an agent whose `Isolation` is `Fresh` (the manager needs a
//!   shared history); an agent without `Isolation` is a warning, because upstream's newest
//!   default is `Fresh`;
//! - `workflow` selection with a node agent that lacks the `Handoff` plugin, or an edge with
//!   `RequireHumanApproval` or `RecoveryAgent` (use `graph` for those);
//! - `ContextBudget.CutoverAt` or `MaxSingleTurnInputTokens` without a `Compaction` section,
//!   and `ContextBudget.WarnAt` not below `CutoverAt`;
//! - a `tokenbudget` termination whose `MaxTokens` is not below `MaxTotalTokens` (a
//!   warning: the hard budget aborts first).
//!
//! ## Why is this bad?
//! Upstream refuses to load the config, or one setting silently defeats the other.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Researcher
//!       Isolation: Fresh
//!   Selection:
//!     Type: magentic
//!     Magentic:
//!       Model: { ModelId: gpt-4o }
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Researcher
//!       Isolation: Shared
//!   Selection:
//!     Type: magentic
//!     Magentic:
//!       Model: { ModelId: gpt-4o }
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::SelectionKind;
use crate::syntax::fuseraft::TerminationDecl;

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let kind = config
        .selection
        .kind
        .as_ref()
        .and_then(|kind| SelectionKind::parse(&kind.value));
    let mut found = Vec::new();
    if kind == Some(SelectionKind::Magentic) {
        for agent in &config.agents {
            let Some(name) = &agent.name else { continue };
            match &agent.isolation {
                Some(isolation) if isolation.value.eq_ignore_ascii_case("fresh") => found.push(
                    Diagnostic::error(
                        Code::IncompatibleSettings,
                        format!("agent `{}` has `Isolation: Fresh`, which magentic selection rejects", name.value),
                    )
                    .with_label(isolation.span, "the manager's agents need the shared history")
                    .with_help("use `Isolation: Shared` or `Isolation: Fork`"),
                ),
                None => found.push(
                    Diagnostic::warning(
                        Code::IncompatibleSettings,
                        format!("agent `{}` has no `Isolation`: upstream's newest default is `Fresh`, which magentic selection rejects", name.value),
                    )
                    .with_label(name.span, "add `Isolation: Shared` to this agent")
                    .with_help("fuseraft runs it with a shared history; say so explicitly so upstream agrees"),
                ),
                Some(_) => {}
            }
        }
    }
    if kind == Some(SelectionKind::Workflow) {
        if let Some(graph) = &config.selection.graph {
            for node in &graph.nodes {
                let Some(agent_name) = &node.agent else {
                    continue;
                };
                let Some(agent) = ctx.agent_decl(&agent_name.value) else {
                    continue;
                };
                if !agent
                    .plugins
                    .iter()
                    .any(|p| p.value.eq_ignore_ascii_case("Handoff"))
                {
                    found.push(
                        Diagnostic::error(
                            Code::IncompatibleSettings,
                            format!(
                                "workflow node agent `{}` lacks the `Handoff` plugin",
                                agent_name.value
                            ),
                        )
                        .with_label(
                            agent_name.span,
                            "workflow routes only through `handoff(route_keyword: …)`",
                        )
                        .with_help(format!(
                            "add `Handoff` to the `Plugins` of `{}`",
                            agent_name.value
                        )),
                    );
                }
            }
            for edge in &graph.edges {
                if edge.require_human_approval {
                    found.push(
                        Diagnostic::error(
                            Code::IncompatibleSettings,
                            "workflow edges cannot require human approval",
                        )
                        .with_label(
                            edge.span,
                            "`RequireHumanApproval` is only supported by `Type: graph`",
                        )
                        .with_help("use `Type: graph`, or remove `RequireHumanApproval`"),
                    );
                }
                if let Some(recovery) = &edge.recovery_agent {
                    found.push(
                        Diagnostic::error(
                            Code::IncompatibleSettings,
                            "workflow edges cannot have a `RecoveryAgent`",
                        )
                        .with_label(recovery.span, "only supported by `Type: graph`")
                        .with_help("use `Type: graph`, or remove `RecoveryAgent`"),
                    );
                }
            }
        }
    }
    let setting = |key: &str| {
        config
            .settings
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.value.trim().parse::<u64>().ok().map(|n| (n, v.span)))
    };
    let has_compaction = config
        .settings
        .iter()
        .any(|(k, _)| k.starts_with("Compaction."));
    for key in [
        "ContextBudget.CutoverAt",
        "ContextBudget.MaxSingleTurnInputTokens",
    ] {
        if let Some((value, span)) = setting(key).filter(|(v, _)| *v > 0) {
            if !has_compaction {
                let short = key.trim_start_matches("ContextBudget.");
                found.push(
                    Diagnostic::error(
                        Code::IncompatibleSettings,
                        format!("`ContextBudget.{short}: {value}` needs a `Compaction` section"),
                    )
                    .with_label(span, "cuts over to compaction, which is not configured")
                    .with_help("add a `Compaction` section, or remove this budget"),
                );
            }
        }
    }
    if let (Some((warn, warn_span)), Some((cutover, cutover_span))) = (
        setting("ContextBudget.WarnAt"),
        setting("ContextBudget.CutoverAt"),
    ) {
        if warn > 0 && cutover > 0 && warn >= cutover {
            found.push(
                Diagnostic::error(
                    Code::IncompatibleSettings,
                    format!("`WarnAt` ({warn}) must be below `CutoverAt` ({cutover})"),
                )
                .with_label(warn_span, "the warning would come after the cutover")
                .with_label(cutover_span, "cutover")
                .with_help("lower `WarnAt`, or raise `CutoverAt`"),
            );
        }
    }
    if let (Some(total), Some(termination)) = (&config.max_total_tokens, &config.termination) {
        let mut budgets = Vec::new();
        collect_budgets(termination, &mut budgets);
        for budget in budgets {
            if budget.value >= total.value && total.value > 0 {
                found.push(
                    Diagnostic::warning(
                        Code::IncompatibleSettings,
                        format!("`tokenbudget` of {} is not below `MaxTotalTokens` ({}): the hard budget aborts the run first", budget.value, total.value),
                    )
                    .with_label(budget.span, "never reached")
                    .with_label(total.span, "aborts the run first")
                    .with_help("set the termination budget below `MaxTotalTokens`"),
                );
            }
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}

fn collect_budgets<'a>(
    decl: &'a TerminationDecl,
    out: &mut Vec<&'a crate::syntax::fields::Spanned<u64>>,
) {
    let is_budget = decl
        .kind
        .as_ref()
        .is_some_and(|k| k.value.eq_ignore_ascii_case("tokenbudget"));
    if is_budget {
        out.extend(decl.max_tokens.as_ref());
    }
    for child in &decl.strategies {
        collect_budgets(child, out);
    }
}
