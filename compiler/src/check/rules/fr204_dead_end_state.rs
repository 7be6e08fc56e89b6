//! # FR204 `dead-end-state`
//!
//! ## What it does
//! Finds reachable states that are not terminal and have no way out: no transition, no edge
//! and no fallback (or only exits that can never fire). States that only run as branches of
//! a parallel fan-out are exempt: control continues at the fork's join.
//!
//! ## Why is this bad?
//! In a state machine the state's agent is re-invoked with a nudge listing the valid
//! signals, of which there are none, until the budget runs out. In a graph the node ends
//! the run without the terminal node's validators.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!     - Name: Editor
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Draft
//!       States:
//!         Draft:
//!           Agent: Writer
//!           Transitions:
//!             - To: Edit
//!               Signal: DRAFTED
//!             - To: Done
//!               Signal: SKIP EDIT
//!         Edit:
//!           Agent: Editor
//!         Done:
//!           Agent: Editor
//!           Terminal: true
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!     - Name: Editor
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Draft
//!       States:
//!         Draft:
//!           Agent: Writer
//!           Transitions:
//!             - To: Edit
//!               Signal: DRAFTED
//!             - To: Done
//!               Signal: SKIP EDIT
//!         Edit:
//!           Agent: Editor
//!           Transitions:
//!             - To: Done
//!               Signal: EDITED
//!         Done:
//!           Agent: Editor
//!           Terminal: true
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Origin, Program, SelectionKind, StateId};

pub(crate) fn diagnostic(
    ctx: &Ctx<'_>,
    program: &Program,
    state: StateId,
    entry_finishes: bool,
) -> Diagnostic {
    let name = &program.state(state).name;
    let (consequence, help) = match program.origin {
        Origin::Fuseraft(SelectionKind::Graph | SelectionKind::Workflow) => (
            "the run stops here without passing a terminal node's validators",
            format!("add an edge from `{name}`, or mark it `Terminal: true`"),
        ),
        Origin::Tama => (
            "the fsm stops here with an error",
            format!("give `{name}` a next state, or `~` to end the fsm"),
        ),
        _ => (
            "its agent is nudged for a signal that no transition accepts, until the budget runs out",
            format!("add a transition from `{name}`, or mark it `Terminal: true`"),
        ),
    };
    let mut message = format!("state `{name}` is not terminal and has no way out: {consequence}");
    if !entry_finishes {
        message.push_str("; no run of this workflow can finish");
    }
    let mut diag = Diagnostic::error(Code::DeadEndState, message);
    if let Some(span) = ctx.state_span(program, state) {
        diag = diag.with_label(span, "no transition leaves this state");
    }
    diag.with_help(help)
}
