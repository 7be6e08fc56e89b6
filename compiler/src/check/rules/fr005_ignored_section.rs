//! # FR005 `ignored-section`
//!
//! ## What it does
//! Finds settings that have no effect where they are written:
//! - a selection block that the chosen `Selection.Type` does not read (`StateMachine:`
//!   under `Type: keyword`, `Routes:` under `Type: graph`, ...);
//! - on a state-machine transition: `Targets` or `Merge` without `Parallel: true`, and
//!   `Contract`/`Contracts` or `RecoveryAgent` on a parallel transition (upstream does not
//!   evaluate contracts on fan-outs);
//! - in tama front matter, `call.max_iter`: tama reads only the top-level `max_iter`.
//!
//! Keys that nothing reads at all are `FR001`.
//!
//! ## Why is this bad?
//! The author believes a gate, a block or a limit applies. It silently does not.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Plugins: [Shell]
//!     - Name: Sec
//!     - Name: Lead
//!   Contracts:
//!     - Name: Built
//!       Requires:
//!         - { Type: CommandSucceeded, Pattern: build }
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - To: Decide
//!               Signal: READY
//!               Contract: Built
//!               Parallel: true
//!               Targets: [Security, Decide2]
//!         Security:
//!           Agent: Sec
//!         Decide2:
//!           Agent: Sec
//!         Decide:
//!           Agent: Lead
//!           Terminal: true
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!       Plugins: [Shell]
//!     - Name: Sec
//!     - Name: Lead
//!   Contracts:
//!     - Name: Built
//!       Requires:
//!         - { Type: CommandSucceeded, Pattern: build }
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Build
//!       States:
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - To: Review
//!               Signal: READY
//!               Contract: Built
//!         Review:
//!           Agent: Dev
//!           Transitions:
//!             - To: Decide
//!               Signal: REVIEW
//!               Parallel: true
//!               Targets: [Security, Decide2]
//!         Security:
//!           Agent: Sec
//!         Decide2:
//!           Agent: Sec
//!         Decide:
//!           Agent: Lead
//!           Terminal: true
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::SelectionKind;
use crate::source::Span;

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    tama(ctx);
    let Some(config) = ctx.config else { return };
    let selection = &config.selection;
    let kind = match &selection.kind {
        None => Some(SelectionKind::Sequential),
        Some(kind) => SelectionKind::parse(&kind.value),
    };
    let Some(kind) = kind else { return };
    let mut found = Vec::new();
    let kind_span = selection.kind.as_ref().map(|k| k.span);
    let mut block = |present: Option<Span>, name: &str, readers: &[SelectionKind]| {
        if let Some(span) = present {
            if !readers.contains(&kind) {
                let readers: Vec<&str> = readers.iter().map(|k| k.as_str()).collect();
                let mut diag = Diagnostic::warning(
                    Code::IgnoredSection,
                    format!("`{name}` is ignored: selection type `{kind}` does not read it"),
                )
                .with_label(
                    span,
                    format!("only read by `Type: {}`", readers.join("` or `Type: ")),
                );
                if let Some(kind_span) = kind_span {
                    diag = diag.with_label(kind_span, "the selection type");
                }
                found.push(diag.with_help(format!("remove `{name}`, or change `Selection.Type`")));
            }
        }
    };
    block(
        selection.state_machine.as_ref().map(|b| b.span),
        "StateMachine",
        &[SelectionKind::StateMachine],
    );
    block(
        selection.graph.as_ref().map(|b| b.span),
        "Graph",
        &[SelectionKind::Graph, SelectionKind::Workflow],
    );
    block(
        selection.adversarial.as_ref().map(|b| b.span),
        "Adversarial",
        &[SelectionKind::Adversarial],
    );
    block(
        selection.magentic.as_ref().map(|b| b.span),
        "Magentic",
        &[SelectionKind::Magentic],
    );
    block(
        selection.map_reduce.as_ref().map(|b| b.span),
        "MapReduce",
        &[SelectionKind::MapReduce],
    );
    block(
        selection.scatter_gather.as_ref().map(|b| b.span),
        "ScatterGather",
        &[SelectionKind::ScatterGather],
    );
    block(
        selection.routes.first().map(|r| r.span),
        "Routes",
        &[SelectionKind::Keyword],
    );
    block(
        selection.structured_routes.first().map(|r| r.span),
        "StructuredRoutes",
        &[SelectionKind::Structured],
    );

    if let Some(machine) = &selection.state_machine {
        for state in &machine.states {
            for transition in &state.transitions {
                let mut ignored = |span: Span, what: &str, why: &str| {
                    found.push(
                        Diagnostic::warning(
                            Code::IgnoredSection,
                            format!("{what} is ignored {why}"),
                        )
                        .with_label(span, "has no effect")
                        .with_help(format!("remove {what}, or fix the transition")),
                    );
                };
                if !transition.parallel {
                    if let Some(first) = transition.targets.first() {
                        ignored(first.span, "`Targets`", "without `Parallel: true`");
                    }
                    if let Some(strategy) = transition
                        .merge_strategy
                        .as_ref()
                        .or(transition.merge_agent.as_ref())
                    {
                        ignored(strategy.span, "`Merge`", "without `Parallel: true`");
                    }
                } else if !transition.targets.is_empty() {
                    for contract in &transition.contracts {
                        ignored(contract.span, "`Contract`", "on a parallel transition: upstream does not evaluate contracts on fan-outs");
                    }
                    if let Some(agent) = &transition.recovery_agent {
                        ignored(agent.span, "`RecoveryAgent`", "on a parallel transition");
                    }
                }
            }
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}

fn tama(ctx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for md in ctx.tama {
        let Some(node) = ctx.tama_front_matter(md) else {
            continue;
        };
        let Some(max_iter) = node.get("call").and_then(|call| call.get("max_iter")) else {
            continue;
        };
        let top = node
            .get("max_iter")
            .and_then(|n| n.as_str())
            .unwrap_or("the default");
        found.push(
            Diagnostic::warning(
                Code::IgnoredSection,
                format!("`call.max_iter` is ignored: tama reads only the top-level `max_iter` ({top} here)"),
            )
            .with_label(max_iter.span, "never read")
            .with_help("move it to a top-level `max_iter:`"),
        );
    }
    for diag in found {
        ctx.push(diag);
    }
}
