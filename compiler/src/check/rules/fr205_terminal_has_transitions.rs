//! # FR205 `terminal-has-transitions`
//!
//! ## What it does
//! Finds a `Terminal: true` state that also lists `Transitions`, and a terminal graph node
//! with outgoing edges. Upstream never fires them (`fuseraft validate` warns the same).
//!
//! ## Why is this bad?
//! The transitions look live but are ignored; the author probably meant a non-terminal
//! state, or left the transitions behind after a refactor.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Work
//!       States:
//!         Work:
//!           Agent: Dev
//!           Transitions:
//!             - To: Done
//!               Signal: DONE
//!         Done:
//!           Agent: Dev
//!           Terminal: true
//!           Transitions:
//!             - To: Work
//!               Signal: REOPEN
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Work
//!       States:
//!         Work:
//!           Agent: Dev
//!           Transitions:
//!             - To: Done
//!               Signal: DONE
//!         Done:
//!           Agent: Dev
//!           Terminal: true
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let mut found = Vec::new();
    if let Some(machine) = &config.selection.state_machine {
        for state in machine
            .states
            .iter()
            .filter(|s| s.terminal && !s.transitions.is_empty())
        {
            let mut diag = Diagnostic::warning(
                Code::TerminalHasTransitions,
                format!(
                    "terminal state `{}` has transitions that will never fire",
                    state.name.value
                ),
            )
            .with_label(
                state.name.span,
                "`Terminal: true` keeps running this state's agent until a termination fires",
            );
            for transition in &state.transitions {
                diag = diag.with_label(transition.span, "ignored");
            }
            found.push(diag.with_help("remove `Terminal: true`, or remove the transitions"));
        }
    }
    if let Some(graph) = &config.selection.graph {
        for node in graph.nodes.iter().filter(|n| n.terminal) {
            let Some(id) = &node.id else { continue };
            let edges: Vec<_> = graph
                .edges
                .iter()
                .filter(|e| {
                    e.from
                        .as_ref()
                        .is_some_and(|f| f.value.eq_ignore_ascii_case(&id.value))
                })
                .collect();
            if edges.is_empty() {
                continue;
            }
            let mut diag = Diagnostic::warning(
                Code::TerminalHasTransitions,
                format!(
                    "terminal node `{}` has outgoing edges that will never be followed",
                    id.value
                ),
            )
            .with_label(
                id.span,
                "a terminal node ends the run once its validators pass",
            );
            for edge in edges {
                diag = diag.with_label(edge.span, "ignored");
            }
            found.push(diag.with_help("remove `Terminal: true`, or remove the edges"));
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
