//! Liveness: every state a run can be in must still be able to finish. The states that
//! cannot end up, after finitely many steps, in a *trap*: a bottom strongly connected
//! component of the control graph with no terminal. A trap is a dead end (`FR204`, one
//! state with no way out) or a cycle without exit (`FR206`). Each trap is reported once,
//! with the states that can only lead into it attached as `FR202` related findings.

use super::super::context::Ctx;
use super::super::flow::{show_path, Flow};
use super::{
    fr201_unreachable_state, fr202_no_path_to_terminal, fr204_dead_end_state,
    fr206_cycle_without_exit,
};
use crate::ir::{Program, StateId, StateKind};

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program, flow: &Flow) {
    let mut member = vec![false; program.states.len()];
    let mut traps: Vec<Vec<StateId>> = flow
        .components()
        .into_iter()
        .filter(|component| is_trap(program, flow, component, &mut member))
        .collect();
    // Deterministic order: by the earliest source position in each trap, then by id.
    traps.sort_by_key(|component| component.iter().map(|id| position(ctx, program, *id)).min());
    let entry_finishes = flow.finishes[program.entry.0 as usize];
    let unresolved = fr201_unreachable_state::unresolved_targets(ctx, program);
    let mut trap_diags = Vec::new();
    for component in &traps {
        let start = *component
            .iter()
            .min_by_key(|id| position(ctx, program, **id))
            .unwrap_or(&component[0]);
        let diag = if component.len() == 1 && !flow.control[start.0 as usize].contains(&start) {
            fr204_dead_end_state::diagnostic(ctx, program, start, entry_finishes)
        } else {
            let cycle = flow.cycle_through(start, component);
            fr206_cycle_without_exit::diagnostic(ctx, program, &cycle, component, entry_finishes)
        };
        // A state left without exits by an unresolved target is that target's consequence.
        // So is one whose only ways out can never fire (a dead exit's finding).
        let cause = unresolved
            .iter()
            .find(|(_, from, _)| component.contains(from))
            .map(|(idx, ..)| *idx)
            .or_else(|| {
                ctx.dead
                    .iter()
                    .find(|dead| component.contains(&dead.state))
                    .map(|dead| dead.cause)
            });
        let idx = match cause {
            Some(cause) => {
                ctx.diags[cause].related.push(diag);
                None
            }
            None => Some(ctx.push(diag)),
        };
        trap_diags.push((component.clone(), idx, cause));
    }

    // States that are not in a trap but can only lead into one, each with its shortest path
    // into the nearest trap: one backward breadth-first search from every trap at once.
    let n_states = program.states.len();
    let mut trap_of: Vec<Option<usize>> = vec![None; n_states];
    for (trap_idx, component) in traps.iter().enumerate() {
        for id in component {
            trap_of[id.0 as usize] = Some(trap_idx);
        }
    }
    let mut reverse = vec![Vec::new(); n_states];
    for (from, nexts) in flow.control.iter().enumerate() {
        for next in nexts {
            reverse[next.0 as usize].push(StateId(from as u32));
        }
    }
    let mut toward: Vec<Option<StateId>> = vec![None; n_states];
    let mut reached = trap_of.iter().map(Option::is_some).collect::<Vec<bool>>();
    let mut queue: std::collections::VecDeque<StateId> = traps.iter().flatten().copied().collect();
    while let Some(id) = queue.pop_front() {
        for prev in &reverse[id.0 as usize] {
            let idx = prev.0 as usize;
            if !reached[idx] && flow.reach_control[idx] && !flow.finishes[idx] {
                reached[idx] = true;
                toward[idx] = Some(id);
                queue.push_back(*prev);
            }
        }
    }
    let mut leading: Vec<StateId> = program
        .state_ids()
        .filter(|id| toward[id.0 as usize].is_some())
        .collect();
    leading.sort_by_key(|id| position(ctx, program, *id));
    for id in leading {
        let mut path = vec![id];
        let mut cursor = id;
        while let Some(next) = toward[cursor.0 as usize] {
            path.push(next);
            cursor = next;
        }
        let Some(trap_idx) = trap_of[cursor.0 as usize] else {
            continue;
        };
        let (_, idx, cause) = &trap_diags[trap_idx];
        let related =
            fr202_no_path_to_terminal::diagnostic(ctx, program, id, &show_path(program, &path));
        match (idx, cause) {
            (Some(idx), _) => ctx.diags[*idx].related.push(related),
            (None, Some(cause)) => ctx.diags[*cause].related.push(related),
            (None, None) => {}
        }
    }
}

/// A bottom component without a terminal state and without an exit that ends the run.
fn is_trap(program: &Program, flow: &Flow, component: &[StateId], member: &mut [bool]) -> bool {
    for id in component {
        member[id.0 as usize] = true;
    }
    let trap = component.iter().all(|id| {
        let idx = id.0 as usize;
        !flow.finishes[idx]
            && !matches!(program.state(*id).kind, StateKind::Terminal(_))
            && flow.control[idx].iter().all(|next| member[next.0 as usize])
    });
    for id in component {
        member[id.0 as usize] = false;
    }
    trap
}

/// Source order key of a state: (file, line, column), synthesised states last.
fn position(ctx: &Ctx<'_>, program: &Program, id: StateId) -> (u32, u32, u32, u32) {
    match ctx.state_span(program, id) {
        Some(span) => (span.file.0, span.start, 0, id.0),
        None => (u32::MAX, u32::MAX, 0, id.0),
    }
}
