//! Which exit of the IR an `agent_routed` event took.
//!
//! The event says `from`, `to` and `signal`; the exit is the one of state `from` whose target
//! is `to` and whose trigger carries that signal (or, without a signal, a trigger that carries
//! none). When several fit (two structured routes to one target), their conditions are
//! evaluated against the reply that was routed. If the event ever carries the exit's index
//! (`payload.exit`), that index is used as is.

use fuseraft_compiler::ir::{CondInput, Guard, NoMatch, Program, StateKind, Target, Trigger};
use fuseraft_vm::event::{Event, EventKind};
use fuseraft_vm::history::Role;
use fuseraft_vm::machine::Run;

/// How a route was taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Taken {
    /// Exit `n` of the `from` state.
    Exit(usize),
    /// One of these exits (the event does not say which).
    Ambiguous(Vec<usize>),
    /// No exit matched and the state continued at its fallback (`DefaultAgent`).
    Fallback,
    /// A fork's branches joined.
    Join,
    /// Nothing in the IR explains the route.
    Unknown,
}

/// An `agent_routed` event, resolved against the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// Index of the `from` state in `Program::states`.
    pub state: usize,
    pub taken: Taken,
}

fn target_name(program: &Program, target: &Target) -> String {
    match target {
        Target::State(id) => program.state(*id).name.clone(),
        Target::End => "end".to_string(),
    }
}

/// The route an `agent_routed` event took (`None` for other events). `after_not_found`: the
/// event just before it was a `keyword_not_found`.
pub fn infer(program: &Program, event: &Event, after_not_found: bool, run: &Run) -> Option<Route> {
    let EventKind::AgentRouted {
        from,
        to,
        signal,
        exit,
    } = &event.kind
    else {
        return None;
    };
    let (to, signal) = (to.as_str(), signal.as_deref());
    let state_id = program.state_named(from)?;
    let state = program.state(state_id);
    let index = state_id.0 as usize;
    let route = |taken| {
        Some(Route {
            state: index,
            taken,
        })
    };
    if let Some(exit) = *exit {
        return route(Taken::Exit(exit));
    }
    if matches!(state.kind, StateKind::Fork(_)) {
        return route(Taken::Join);
    }
    if after_not_found {
        if let NoMatch::Fallback(target) = state.no_match {
            if program.state(target).name == to {
                return route(Taken::Fallback);
            }
        }
    }
    let candidates: Vec<usize> = state
        .exits
        .iter()
        .enumerate()
        .filter(|(_, exit)| target_name(program, &exit.target) == to)
        .filter(|(_, exit)| match (&exit.trigger, signal) {
            (Trigger::Signal { text, .. }, Some(signal)) => text.eq_ignore_ascii_case(signal),
            (Trigger::FinishKey(key), Some(signal)) => key.eq_ignore_ascii_case(signal),
            (Trigger::Signal { .. } | Trigger::FinishKey(_), None) => false,
            (_, Some(_)) => false,
            (_, None) => true,
        })
        .map(|(idx, _)| idx)
        .collect();
    match candidates.len() {
        0 => route(Taken::Unknown),
        1 => route(Taken::Exit(candidates[0])),
        _ => {
            let held = holding(program, index, &candidates, run);
            match held.len() {
                1 => route(Taken::Exit(held[0])),
                0 => route(Taken::Ambiguous(candidates)),
                _ => route(Taken::Ambiguous(held)),
            }
        }
    }
}

/// The candidates whose conditions (trigger and condition guards) hold for the newest reply,
/// narrowed to the first such one when the others have nothing the machine could not decide.
fn holding(program: &Program, state: usize, candidates: &[usize], run: &Run) -> Vec<usize> {
    let Some(reply) = run
        .history
        .iter()
        .rev()
        .find(|message| message.role == Role::Assistant)
    else {
        return candidates.to_vec();
    };
    let json = fuseraft_compiler::ir::extract_json(&reply.content);
    let input = CondInput {
        last_agent: &reply.agent,
        last_message: &reply.content,
        json: json.as_ref(),
    };
    let exits = &program.states[state].exits;
    let held: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|idx| {
            let exit = &exits[*idx];
            let trigger = match &exit.trigger {
                Trigger::Cond { cond, .. } => cond.eval(&input),
                _ => true,
            };
            trigger
                && exit.guards.iter().all(|guard| match guard {
                    Guard::Cond(cond) => cond.eval(&input),
                    _ => true,
                })
        })
        .collect();
    // The machine takes the first exit that fires; only a counter guard (which this side
    // cannot see) could have passed over it.
    match held.first() {
        Some(first)
            if !exits[*first]
                .guards
                .iter()
                .any(|guard| matches!(guard, Guard::CounterBelow(..))) =>
        {
            vec![*first]
        }
        _ => held,
    }
}
