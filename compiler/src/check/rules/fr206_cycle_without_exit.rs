//! # FR206 `cycle-without-exit`
//!
//! ## What it does
//! Finds every cycle of states that no route leaves and that contains no terminal state (a
//! bottom strongly connected component of the routing graph, by Tarjan's algorithm). Each
//! is printed as a path, starting from the state declared first, and every such cycle is
//! reported, in source order, even when other problems exist.
//!
//! ## Why is this bad?
//! Once a run enters the cycle it can only loop until the iteration budget stops it: an
//! infinite agent loop that costs money on every turn.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Reviewer
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
//!         Review:
//!           Agent: Reviewer
//!           Transitions:
//!             - To: Build
//!               Signal: CHANGES REQUESTED
//!         Done:
//!           Agent: Reviewer
//!           Terminal: true
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Reviewer
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
//!         Review:
//!           Agent: Reviewer
//!           Transitions:
//!             - To: Build
//!               Signal: CHANGES REQUESTED
//!             - To: Done
//!               Signal: APPROVED
//!         Done:
//!           Agent: Reviewer
//!           Terminal: true
//! ```

use super::super::context::Ctx;
use super::super::flow::show_path;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Program, StateId};

/// `cycle` is a witness cycle (first state repeated at the end); `members` the whole trap.
pub(crate) fn diagnostic(
    ctx: &Ctx<'_>,
    program: &Program,
    cycle: &[StateId],
    members: &[StateId],
    entry_finishes: bool,
) -> Diagnostic {
    let start = cycle[0];
    let mut message = if cycle.len() == 2 && cycle[0] == cycle[1] {
        format!(
            "state `{}` only routes back to itself: a run that gets here loops until its budget runs out",
            program.state(start).name
        )
    } else {
        format!(
            "cycle {} has no exit: a run that enters it loops until its budget runs out",
            show_path(program, cycle)
        )
    };
    let on_cycle: std::collections::HashSet<StateId> = cycle.iter().copied().collect();
    let others: Vec<String> = members
        .iter()
        .filter(|id| !on_cycle.contains(id))
        .map(|id| format!("`{}`", program.state(*id).name))
        .collect();
    if !others.is_empty() {
        let shown = others
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        let more = match others.len() {
            n if n > 8 => format!(" and {} more", n - 8),
            _ => String::new(),
        };
        message.push_str(&format!(" (it also traps {shown}{more})"));
    }
    if !entry_finishes {
        message.push_str("; no run of this workflow can finish");
    }
    let mut diag = Diagnostic::error(Code::CycleWithoutExit, message);
    // Label the first states of the cycle (a long one would bury the snippet).
    let mut seen = std::collections::HashSet::new();
    for (idx, id) in cycle.iter().enumerate().take(6) {
        if !seen.insert(*id) {
            continue;
        }
        if let Some(span) = ctx.state_span(program, *id) {
            let text = if idx == 0 {
                "no route from this cycle reaches a terminal state".to_string()
            } else {
                "part of the cycle".to_string()
            };
            diag = diag.with_label(span, text);
        }
    }
    diag.with_help(
        "add a transition out of the cycle to a terminal state (for example on an approval signal)",
    )
}
