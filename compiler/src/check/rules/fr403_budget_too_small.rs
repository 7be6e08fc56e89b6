//! # FR403 `budget-too-small`
//!
//! ## What it does
//! Compares the turn cap (`Termination.MaxIterations`, or a `maxiterations` child of a
//! composite) with the shortest path from the entry state to a terminal state, counted in
//! agent turns. When the cap is smaller, even a run where every agent gets it right the
//! first time is stopped before it finishes. Graph configs count phases, not turns, and
//! are skipped.
//!
//! ## Why is this bad?
//! The workflow is guaranteed to fail on the happy path, after paying for every turn.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Plan
//!     - Name: Build
//!     - Name: Test
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Planning
//!       States:
//!         Planning: { Agent: Plan, Transitions: [{ To: Building, Signal: PLANNED }] }
//!         Building: { Agent: Build, Transitions: [{ To: Testing, Signal: BUILT }] }
//!         Testing: { Agent: Test, Transitions: [{ To: Done, Signal: PASSED }] }
//!         Done: { Agent: Test, Terminal: true }
//!   Termination:
//!     Type: maxiterations
//!     MaxIterations: 2
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Plan
//!     - Name: Build
//!     - Name: Test
//!   Selection:
//!     Type: statemachine
//!     StateMachine:
//!       Initial: Planning
//!       States:
//!         Planning: { Agent: Plan, Transitions: [{ To: Building, Signal: PLANNED }] }
//!         Building: { Agent: Build, Transitions: [{ To: Testing, Signal: BUILT }] }
//!         Testing: { Agent: Test, Transitions: [{ To: Done, Signal: PASSED }] }
//!         Done: { Agent: Test, Terminal: true }
//!   Termination:
//!     Type: maxiterations
//!     MaxIterations: 20
//! ```

use std::collections::VecDeque;

use super::super::context::Ctx;
use super::super::flow::{show_path, Flow};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Program, StateId, StateKind, TermCond, TurnUnit};

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program, flow: &Flow) {
    if program.termination.unit == TurnUnit::Phases {
        return;
    }
    let Some(cap) = program
        .termination
        .any
        .iter()
        .filter_map(|cond| match cond {
            TermCond::MaxTurns(max) => Some(*max),
            _ => None,
        })
        .min()
    else {
        return;
    };
    let Some((turns, path)) = shortest_turns(program, flow) else {
        return;
    };
    if turns <= cap as usize {
        return;
    }
    let mut diag = Diagnostic::warning(
        Code::BudgetTooSmall,
        format!(
            "the run is capped at {cap} turns, but the shortest path to a terminal state takes {turns}: {}",
            show_path(program, &path)
        ),
    );
    if let Some(span) = cap_span(ctx) {
        diag = diag.with_label(span, format!("stops the run after {cap} turns"));
    }
    ctx.push(diag.with_help(format!(
        "raise the cap to at least {turns}, plus room for retries and review loops"
    )));
}

/// Turns spent in a state: one per state whose agent runs (a terminal counts once).
fn cost(program: &Program, id: StateId) -> usize {
    let state = program.state(id);
    match state.kind {
        StateKind::Terminal(crate::ir::TerminalMode::EndNow) => 0,
        StateKind::Fork(_) | StateKind::Select(_) => 0,
        _ => usize::from(state.agent.is_some()),
    }
}

/// 0-1 BFS over control edges: the fewest turns from the entry to a terminal state.
fn shortest_turns(program: &Program, flow: &Flow) -> Option<(usize, Vec<StateId>)> {
    let n_states = program.states.len();
    let mut best = vec![usize::MAX; n_states];
    let mut parent: Vec<Option<StateId>> = vec![None; n_states];
    let entry = program.entry;
    best[entry.0 as usize] = cost(program, entry);
    let mut queue = VecDeque::from([entry]);
    while let Some(id) = queue.pop_front() {
        for next in &flow.control[id.0 as usize] {
            let step = cost(program, *next);
            let total = best[id.0 as usize] + step;
            if total < best[next.0 as usize] {
                best[next.0 as usize] = total;
                parent[next.0 as usize] = Some(id);
                if step == 0 {
                    queue.push_front(*next);
                } else {
                    queue.push_back(*next);
                }
            }
        }
    }
    let goal = program
        .state_ids()
        .filter(|id| {
            matches!(program.state(*id).kind, StateKind::Terminal(_))
                || flow.ends_here[id.0 as usize]
        })
        .filter(|id| best[id.0 as usize] != usize::MAX)
        .min_by_key(|id| (best[id.0 as usize], id.0))?;
    let mut path = vec![goal];
    let mut cursor = goal;
    while let Some(prev) = parent[cursor.0 as usize] {
        path.push(prev);
        cursor = prev;
    }
    path.reverse();
    Some((best[goal.0 as usize], path))
}

fn cap_span(ctx: &Ctx<'_>) -> Option<crate::source::Span> {
    let decl = ctx.config?.termination.as_ref()?;
    if let Some(max) = &decl.max_iterations {
        return Some(max.span);
    }
    decl.strategies
        .iter()
        .find_map(|child| child.max_iterations.as_ref().map(|m| m.span))
}
