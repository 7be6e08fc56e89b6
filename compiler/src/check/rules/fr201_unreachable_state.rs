//! # FR201 `unreachable-state`
//!
//! ## What it does
//! Finds states that no run can enter: no path of transitions, edges, fork branches or
//! fallbacks leads to them from the entry state. This is true reachability over every exit
//! kind, not the "has an incoming reference" test of the Step Functions validators, so an
//! orphan pair of states that only point at each other is found too.
//!
//! When a state is unreachable *because* a transition names an unknown state (`FR102`) or
//! an exit can never fire (`FR301`, `FR302`, `FR304`, `FR308`), it is reported as related
//! information of that finding instead.
//!
//! ## Why is this bad?
//! A whole stage of the team never runs, and nothing at run time says so.
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
//!             - To: Done
//!               Signal: FINISHED
//!         Edit:
//!           Agent: Editor
//!           Transitions:
//!             - To: Done
//!               Signal: EDITED
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
//!               Signal: FINISHED
//!         Edit:
//!           Agent: Editor
//!           Transitions:
//!             - To: Done
//!               Signal: EDITED
//!         Done:
//!           Agent: Editor
//!           Terminal: true
//! ```

use super::super::context::{closest, Ctx};
use super::super::flow::Flow;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Program, StateId, StateKind};
use crate::source::Span;

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program, flow: &Flow) {
    let n_states = program.states.len();
    let mut explained = vec![false; n_states];

    // Unreachable only because an exit can never fire: relate to that exit's finding.
    let dead = ctx.dead.clone();
    for exit in &dead {
        if !flow.reach_live[exit.state.0 as usize] {
            continue;
        }
        let Some(target) = target_of(program, exit.state, exit.exit) else {
            continue;
        };
        for id in cone(program, target, |id| !flow.reach_live[id.0 as usize]) {
            if explained[id.0 as usize] || flow.reach_live[id.0 as usize] {
                continue;
            }
            explained[id.0 as usize] = true;
            let related = consequence(
                ctx,
                program,
                id,
                ": the exit that leads there can never fire",
            );
            ctx.diags[exit.cause].related.push(related);
        }
    }

    // Unreachable because the only route there is dropped (a duplicate key loses).
    let dropped = ctx.dropped.clone();
    for (cause, name) in &dropped {
        let Some(start) = program.state_named(name) else {
            continue;
        };
        for id in cone(program, start, |id| !flow.reach_all[id.0 as usize]) {
            if explained[id.0 as usize] {
                continue;
            }
            explained[id.0 as usize] = true;
            let related = consequence(
                ctx,
                program,
                id,
                ": the route that leads there is never used",
            );
            ctx.diags[*cause].related.push(related);
        }
    }

    // Unreachable because a reference did not resolve (compile error `FR102`).
    for (diag_idx, from, suggestion) in unresolved_targets(ctx, program) {
        if !flow.reach_all[from.0 as usize] {
            continue;
        }
        let candidates: Vec<StateId> = match suggestion {
            Some(target) => vec![target],
            None => program
                .state_ids()
                .filter(|id| !flow.reach_all[id.0 as usize])
                .collect(),
        };
        for start in candidates {
            let start_name = program.state(start).name.clone();
            for id in cone(program, start, |id| !flow.reach_all[id.0 as usize]) {
                if explained[id.0 as usize] {
                    continue;
                }
                explained[id.0 as usize] = true;
                let why = if id != start {
                    format!(": only `{start_name}` leads there")
                } else if suggestion.is_some() {
                    "; this target probably meant to name it".to_string()
                } else {
                    ", possibly because this target was meant to lead there".to_string()
                };
                let related = consequence(ctx, program, id, &why);
                ctx.diags[diag_idx].related.push(related);
            }
        }
    }

    for id in program.state_ids() {
        let idx = id.0 as usize;
        if flow.reach_all[idx] || explained[idx] || is_synthetic(program, id) {
            continue;
        }
        let entry = &program.state(program.entry).name;
        let name = &program.state(id).name;
        let mut diag = Diagnostic::warning(
            Code::UnreachableState,
            format!("state `{name}` is unreachable from the entry state `{entry}`"),
        );
        if let Some(span) = ctx.state_span(program, id) {
            diag = diag.with_label(span, "no transition, edge or fallback leads here");
        }
        diag = diag.with_help(format!(
            "add a transition to `{name}` from a reachable state, or delete it"
        ));
        ctx.push(diag);
    }
}

/// A fork state the lowering made for a parallel transition is reported through that
/// transition's own state.
fn is_synthetic(program: &Program, id: StateId) -> bool {
    matches!(program.state(id).kind, StateKind::Fork(_)) && program.state(id).name.contains('/')
}

fn target_of(program: &Program, state: StateId, exit: usize) -> Option<StateId> {
    match program.state(state).exits.get(exit)?.target {
        crate::ir::Target::State(target) => Some(target),
        crate::ir::Target::End => None,
    }
}

/// `start` and every state reachable from it through states satisfying `inside`.
fn cone(program: &Program, start: StateId, inside: impl Fn(StateId) -> bool) -> Vec<StateId> {
    let mut out = Vec::new();
    if !inside(start) {
        return out;
    }
    let mut stack = vec![start];
    let mut seen = vec![false; program.states.len()];
    seen[start.0 as usize] = true;
    while let Some(id) = stack.pop() {
        out.push(id);
        for next in program.successors(id) {
            if !seen[next.0 as usize] && inside(next) {
                seen[next.0 as usize] = true;
                stack.push(next);
            }
        }
    }
    out.sort();
    out
}

fn consequence(ctx: &Ctx<'_>, program: &Program, id: StateId, why: &str) -> Diagnostic {
    let name = &program.state(id).name;
    let mut diag = Diagnostic::warning(
        Code::UnreachableState,
        format!("state `{name}` is unreachable{why}"),
    );
    if let Some(span) = ctx.state_span(program, id) {
        diag = diag.with_label(span, "no other way leads here");
    }
    diag
}

/// Compile errors `FR102` on a transition, edge or fsm target: the diagnostic's index, the
/// state the unresolved exit leaves from, and the state its did-you-mean names.
pub(crate) fn unresolved_targets(
    ctx: &Ctx<'_>,
    program: &Program,
) -> Vec<(usize, StateId, Option<StateId>)> {
    let mut out = Vec::new();
    for (idx, diag) in ctx.diags.iter().enumerate() {
        if diag.code != Code::UnknownState {
            continue;
        }
        let Some(span) = diag.span() else { continue };
        let Some((from, name)) = source_of(ctx, program, span) else {
            continue;
        };
        let names = program.states.iter().map(|state| state.name.as_str());
        let names: Vec<&str> = names.collect();
        let suggestion = closest(&name, &names).and_then(|meant| program.state_named(meant));
        out.push((idx, from, suggestion));
    }
    out
}

/// The state an unresolved target at `span` was written in, and the name written.
fn source_of(ctx: &Ctx<'_>, program: &Program, span: Span) -> Option<(StateId, String)> {
    if let Some(config) = ctx.config {
        let selection = &config.selection;
        if let Some(machine) = &selection.state_machine {
            for state in &machine.states {
                for transition in &state.transitions {
                    if let Some(to) = transition.to.as_ref().filter(|to| to.span == span) {
                        let from = program.state_named(&state.name.value)?;
                        return Some((from, to.value.clone()));
                    }
                }
            }
        }
        if let Some(graph) = &selection.graph {
            for edge in &graph.edges {
                if let Some(to) = edge.to.as_ref().filter(|to| to.span == span) {
                    let from_name = edge.from.as_ref()?;
                    let from = program
                        .states
                        .iter()
                        .position(|s| s.name.eq_ignore_ascii_case(&from_name.value))?;
                    return Some((StateId(from as u32), to.value.clone()));
                }
            }
        }
    }
    for md in ctx.tama {
        for state in md.states.iter().flatten() {
            let written = match &state.next {
                crate::syntax::tama::FsmNext::Goto(target) if target.span == span => {
                    Some(target.value.clone())
                }
                crate::syntax::tama::FsmNext::Keyed(items) => items
                    .iter()
                    .filter_map(|(_, target)| target.as_ref())
                    .find(|target| target.span == span)
                    .map(|target| target.value.clone()),
                _ => None,
            };
            if let Some(written) = written {
                let from = program.state_ids().find(|id| {
                    ctx.state_span(program, *id).map(|s| s.start) == Some(state.name.span.start)
                })?;
                return Some((from, written));
            }
        }
    }
    None
}
