//! # FR202 `no-path-to-terminal`
//!
//! ## What it does
//! Finds states from which no sequence of routes reaches a terminal state or the end of
//! the run, and shows a witness: the shortest path from the state into the trap that holds
//! it (a cycle without exit, `FR206`, or a dead end, `FR204`). These states are reported as
//! related information of that trap, the root cause, rather than one error each.
//!
//! ## Why is this bad?
//! A run that enters such a state can only stop by burning its whole budget
//! (`MaxIterations`, `MaxRetries`) or by a human interrupting it. No anchor linter checks
//! this: the Step Functions validators only check that *some* terminal exists.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Tester
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Plan
//!       States:
//!         Plan:
//!           Agent: Dev
//!           Transitions:
//!             - To: Build
//!               Signal: PLANNED
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - To: Test
//!               Signal: BUILT
//!         Test:
//!           Agent: Tester
//!           Transitions:
//!             - To: Build
//!               Signal: BUGS FOUND
//!         Done:
//!           Agent: Tester
//!           Terminal: true
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Dev
//!     - Name: Tester
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Plan
//!       States:
//!         Plan:
//!           Agent: Dev
//!           Transitions:
//!             - To: Build
//!               Signal: PLANNED
//!         Build:
//!           Agent: Dev
//!           Transitions:
//!             - To: Test
//!               Signal: BUILT
//!         Test:
//!           Agent: Tester
//!           Transitions:
//!             - To: Build
//!               Signal: BUGS FOUND
//!             - To: Done
//!               Signal: ALL TESTS PASS
//!         Done:
//!           Agent: Tester
//!           Terminal: true
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Program, StateId};

/// `state` cannot finish; `witness` is the path from it into the trap.
pub(crate) fn diagnostic(
    ctx: &Ctx<'_>,
    program: &Program,
    state: StateId,
    witness: &str,
) -> Diagnostic {
    let name = &program.state(state).name;
    let mut diag = Diagnostic::error(
        Code::NoPathToTerminal,
        format!("no path from `{name}` reaches a terminal state: every route leads into the trap ({witness})"),
    );
    if let Some(span) = ctx.state_span(program, state) {
        diag = diag.with_label(span, "a run that gets here cannot finish");
    }
    diag
}
