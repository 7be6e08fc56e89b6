//! Lowering `statemachine` selection: one state per `States` entry, transitions as
//! `signal(relaxed)` exits gated by contracts, `Parallel` fan-outs as `fork` states.

use super::{missing_block, Builder};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{
    EdgeClass, Effect, Exit, Fork, Guard, Matcher, Merge, NoMatch, SelectionKind, StateId,
    StateKind, Target, TerminalMode, Trigger,
};
use crate::syntax::fuseraft::Config;
use crate::syntax::selection::TransitionDecl;

pub(super) fn lower(config: &Config, builder: &mut Builder<'_>) -> Option<()> {
    let Some(machine) = &config.selection.state_machine else {
        missing_block(
            builder,
            "StateMachine",
            SelectionKind::StateMachine,
            config.selection.span,
        );
        return None;
    };
    if machine.states.is_empty() {
        if machine.states_written {
            return None;
        }
        builder.diags.push(
            Diagnostic::error(
                Code::MissingRequiredKey,
                "the state machine has no `States`",
            )
            .with_label(machine.span, "add `States:` to `StateMachine`"),
        );
        return None;
    }
    // Pass 1: every state exists before any transition names it.
    builder.program.states.reserve_exact(machine.states.len());
    let mut ids = Vec::with_capacity(machine.states.len());
    for decl in &machine.states {
        if builder.find_state(&decl.name.value).is_some() {
            builder.diags.push(
                Diagnostic::error(
                    Code::DuplicateName,
                    format!("state `{}` is defined twice", decl.name.value),
                )
                .with_label(decl.name.span, "state names compare case-insensitively"),
            );
        }
        let agent = match &decl.agent {
            Some(name) => builder.agent_ref(name, "state agent"),
            None => {
                if !decl.terminal {
                    builder.diags.push(
                        Diagnostic::error(
                            Code::MissingRequiredKey,
                            format!("state `{}` has no `Agent`", decl.name.value),
                        )
                        .with_label(decl.name.span, "add `Agent:` to this state"),
                    );
                }
                None
            }
        };
        let kind = if decl.terminal {
            StateKind::Terminal(TerminalMode::RunUntilTermination)
        } else {
            StateKind::Turn
        };
        ids.push(builder.add_state(&decl.name.value, agent, kind, Some(decl.name.span)));
    }
    builder.program.entry = match &machine.initial {
        Some(initial) => match builder.find_state(&initial.value) {
            Some(id) => id,
            None => {
                let names: Vec<&str> = machine
                    .states
                    .iter()
                    .map(|s| s.name.value.as_str())
                    .collect();
                let help = crate::diagnostic::did_you_mean(&initial.value, names.iter().copied())
                    .unwrap_or_else(|| crate::diagnostic::known_list(names.iter().copied()));
                builder.diags.push(
                    Diagnostic::error(
                        Code::UnknownInitial,
                        format!("initial state `{}` is not defined", initial.value),
                    )
                    .with_label(initial.span, "no state has this name")
                    .with_help(help),
                );
                ids[0]
            }
        },
        None => {
            builder.diags.push(
                Diagnostic::error(
                    Code::UnknownInitial,
                    "the state machine has no `Initial` state",
                )
                .with_label(machine.span, "add `Initial:` naming the first state"),
            );
            ids[0]
        }
    };

    // Pass 2: transitions.
    let max_without_signal = config
        .failure
        .max_without_signal
        .as_ref()
        .map(|max| max.value.min(u32::MAX as u64) as u32)
        .filter(|max| *max > 0);
    for (decl, id) in machine.states.iter().zip(ids) {
        builder.state_mut(id).stuck.max_without_signal = max_without_signal;
        if decl.terminal {
            // Transitions of a terminal state never fire upstream; `check` reports them.
            continue;
        }
        // Exactly as many as written (an `Exit` is large; a vector grown by push holds
        // four, and 10,000 states carried 7.7 MB of them at the peak).
        let mut exits = Vec::with_capacity(decl.transitions.len());
        for (idx, transition) in decl.transitions.iter().enumerate() {
            if let Some(exit) = lower_transition(&decl.name.value, idx, transition, builder) {
                exits.push(exit);
            }
        }
        let state = builder.state_mut(id);
        state.exits = exits;
        state.no_match = NoMatch::Correct { nudge: true };
    }
    Some(())
}

fn lower_transition(
    from: &str,
    idx: usize,
    decl: &TransitionDecl,
    builder: &mut Builder<'_>,
) -> Option<Exit> {
    let to = builder.state_ref(decl.to.as_ref()?, "transition target")?;
    let sources = builder.agent_refs(&decl.source_agents, "source agent");
    let trigger = match &decl.signal {
        Some(signal) => Trigger::Signal {
            text: signal.value.clone(),
            matcher: Matcher::Relaxed,
            sources,
        },
        None => Trigger::Always,
    };
    let recovery = decl
        .recovery_agent
        .as_ref()
        .and_then(|name| builder.agent_ref(name, "recovery agent"));
    let loc = builder.loc(decl.span);
    let mut exit = Exit {
        trigger,
        guards: Vec::new(),
        effects: Vec::new(),
        target: Target::State(to),
        class: EdgeClass::Forward,
        recovery,
        loc,
    };
    if decl.parallel && !decl.targets.is_empty() {
        // Contracts are not evaluated on parallel transitions (upstream).
        let branches: Vec<StateId> = decl
            .targets
            .iter()
            .filter_map(|target| builder.state_ref(target, "parallel target"))
            .collect();
        let merge = match &decl.merge_strategy {
            None => Merge::Union,
            Some(strategy) => Merge::parse(&strategy.value).unwrap_or_else(|| {
                builder.diags.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("unknown merge strategy `{}`", strategy.value),
                    )
                    .with_label(strategy.span, "not a merge strategy")
                    .with_help(
                        "strategies: union, consensus, vote, ranked, semantic_diff, benchmark",
                    ),
                );
                Merge::Union
            }),
        };
        let merge_agent = decl
            .merge_agent
            .as_ref()
            .and_then(|name| builder.agent_ref(name, "merge agent"));
        let fork = builder.add_state(
            &format!("{from}/parallel{}", idx + 1),
            None,
            StateKind::Fork(Fork {
                branches,
                join: Target::State(to),
                merge,
                merge_agent,
                per_item: None,
                per_line: false,
                sequential: false,
            }),
            Some(decl.span),
        );
        exit.target = Target::State(fork);
        return Some(exit);
    }
    for name in &decl.contracts {
        if let Some(contract) = builder.contract_ref(name) {
            exit.guards.push(Guard::Contract(contract));
        }
    }
    if !decl.handoff_context.is_empty() {
        exit.effects
            .push(Effect::InjectContext(super::agents::lower_sources(
                &decl.handoff_context,
                false,
                builder,
            )));
    }
    if let Some(max) = decl.max_revisits.as_ref().filter(|max| max.value > 0) {
        let target_name = builder.program.state(to).name.clone();
        let counter = builder.add_counter(format!("revisits:{from}->{target_name}"));
        exit.effects.push(Effect::Revisit {
            counter,
            max: max.value.min(u32::MAX as u64) as u32,
            objections: decl
                .review_artifact_path
                .as_ref()
                .map(|path| path.value.clone()),
        });
    }
    Some(exit)
}
