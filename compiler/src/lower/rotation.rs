//! Lowering the families without routing signals: `sequential`/`roundrobin` (a fixed
//! rotation), `llm`/`magentic` (a manager picks), `mapreduce`/`scattergather` (fan-out).

use super::{missing_block, Builder};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{
    AgentId, EdgeClass, Exit, Fork, Merge, NoMatch, Select, SelectStyle, SelectionKind, StateId,
    StateKind, Target, Trigger,
};
use crate::syntax::fuseraft::Config;

fn exit(trigger: Trigger, target: Target) -> Exit {
    Exit {
        trigger,
        guards: Vec::new(),
        effects: Vec::new(),
        target,
        class: EdgeClass::Forward,
        recovery: None,
        loc: None,
    }
}

fn agent_states(builder: &mut Builder<'_>) -> Vec<StateId> {
    (0..builder.program.agents.len())
        .map(|idx| {
            let agent = &builder.program.agents[idx];
            let (name, loc) = (agent.name.clone(), agent.loc);
            let id = builder.add_state(&name, Some(AgentId(idx as u32)), StateKind::Turn, None);
            builder.state_mut(id).loc = loc;
            id
        })
        .collect()
}

/// One state per agent in order; each always continues with the next, the last with the
/// first. The run ends by `Termination`.
pub(super) fn lower_rotation(_config: &Config, builder: &mut Builder<'_>) -> Option<()> {
    let states = agent_states(builder);
    for (idx, state) in states.iter().enumerate() {
        let next = states[(idx + 1) % states.len()];
        builder
            .state_mut(*state)
            .exits
            .push(exit(Trigger::Always, Target::State(next)));
    }
    builder.program.entry = states[0];
    Some(())
}

/// A `select` state whose manager picks the next agent; each agent returns to it.
pub(super) fn lower_select(
    config: &Config,
    kind: SelectionKind,
    builder: &mut Builder<'_>,
) -> Option<()> {
    let selection = &config.selection;
    let (style, model, prompt, span) = if kind == SelectionKind::Magentic {
        let Some(magentic) = &selection.magentic else {
            missing_block(builder, "Magentic", kind, selection.span);
            return None;
        };
        let clamp = |value: Option<&crate::syntax::fields::Spanned<u64>>, default: u32| {
            value.map_or(default, |value| value.value.min(u32::MAX as u64) as u32)
        };
        let style = SelectStyle::Magentic {
            max_rounds: clamp(magentic.max_round_count.as_ref(), 20),
            max_stalls: clamp(magentic.max_stall_count.as_ref(), 3),
            max_resets: clamp(magentic.max_reset_count.as_ref(), 2),
            plan_review: magentic.enable_plan_review,
        };
        if magentic.model.is_none() {
            builder.diags.push(
                Diagnostic::error(
                    Code::MissingRequiredKey,
                    "magentic selection has no manager `Model`",
                )
                .with_label(magentic.span, "add `Model:` to `Magentic`"),
            );
        }
        (
            style,
            magentic.model.as_ref(),
            magentic.instructions.as_ref(),
            magentic.span,
        )
    } else {
        if selection.model.is_none() {
            builder.diags.push(
                Diagnostic::error(Code::MissingRequiredKey, "llm selection has no `Model`")
                    .with_label(
                        selection.span,
                        "add `Model:` under `Selection` for the model that picks agents",
                    ),
            );
        }
        (
            SelectStyle::Llm,
            selection.model.as_ref(),
            selection.prompt.as_ref(),
            selection.span,
        )
    };
    let manager = model.map(|model| super::agents::resolve_model(config, model, builder));
    let select = builder.add_state(
        "select",
        None,
        StateKind::Select(Box::new(Select {
            style,
            manager,
            prompt: prompt.map(|prompt| prompt.value.clone()),
        })),
        Some(span),
    );
    let states = agent_states(builder);
    for state in &states {
        builder
            .state_mut(select)
            .exits
            .push(exit(Trigger::Chosen, Target::State(*state)));
        builder
            .state_mut(*state)
            .exits
            .push(exit(Trigger::Always, Target::State(select)));
    }
    builder.state_mut(select).no_match = NoMatch::Never;
    builder.program.entry = select;
    Some(())
}

/// `mapreduce`: splitter, then the mapper once per item of the splitter's list, then the
/// reducer.
/// `scattergather`: every participant at once, then the synthesizer.
pub(super) fn lower_fan_out(
    config: &Config,
    kind: SelectionKind,
    builder: &mut Builder<'_>,
) -> Option<()> {
    let selection = &config.selection;
    let mut per_item = None;
    let (first, workers, last, span) = if kind == SelectionKind::MapReduce {
        let Some(block) = &selection.map_reduce else {
            missing_block(builder, "MapReduce", kind, selection.span);
            return None;
        };
        per_item = Some(
            block
                .items_json_path
                .as_ref()
                .map_or("items", |path| path.value.trim())
                .split('.')
                .map(str::to_string)
                .collect(),
        );
        (
            block.splitter.clone(),
            block.mapper.iter().cloned().collect::<Vec<_>>(),
            block.reducer.clone(),
            block.span,
        )
    } else {
        let Some(block) = &selection.scatter_gather else {
            missing_block(builder, "ScatterGather", kind, selection.span);
            return None;
        };
        (
            None,
            block.participants.clone(),
            block.synthesizer.clone(),
            block.span,
        )
    };
    let resolve = |name: &Option<crate::syntax::fields::Spanned<String>>,
                   role: &str,
                   builder: &mut Builder<'_>| {
        match name {
            Some(name) => builder.agent_ref(name, role),
            None => {
                builder.diags.push(
                    Diagnostic::error(
                        Code::MissingRequiredKey,
                        format!("`{kind}` selection has no {role}"),
                    )
                    .with_label(span, format!("name the {role} agent here")),
                );
                None
            }
        }
    };
    let splitter = if kind == SelectionKind::MapReduce {
        Some(resolve(&first, "splitter", builder)?)
    } else {
        None
    };
    let synthesizer = resolve(
        &last,
        if kind == SelectionKind::MapReduce {
            "reducer"
        } else {
            "synthesizer"
        },
        builder,
    )?;
    let worker_ids = builder.agent_refs(&workers, "worker");
    let mut branches = Vec::new();
    for agent in &worker_ids {
        let name = builder.program.agent(*agent).name.clone();
        branches.push(builder.add_state(&name, Some(*agent), StateKind::Turn, None));
    }
    let join_name = builder.program.agent(synthesizer).name.clone();
    let fork = builder.add_state(
        "fan-out",
        None,
        StateKind::Fork(Fork {
            branches: Vec::new(),
            join: Target::End,
            merge: Merge::Union,
            merge_agent: None,
            per_item: None,
            per_line: false,
            sequential: false,
        }),
        Some(span),
    );
    let join = builder.add_state(&join_name, Some(synthesizer), StateKind::Turn, None);
    builder
        .state_mut(join)
        .exits
        .push(exit(Trigger::Always, Target::End));
    builder.state_mut(fork).kind = StateKind::Fork(Fork {
        branches,
        join: Target::State(join),
        merge: Merge::Union,
        merge_agent: None,
        per_item,
        per_line: false,
        sequential: false,
    });
    builder.program.entry = fork;
    if let Some(splitter) = splitter {
        let name = builder.program.agent(splitter).name.clone();
        let first = builder.add_state(&name, Some(splitter), StateKind::Turn, None);
        builder
            .state_mut(first)
            .exits
            .push(exit(Trigger::Always, Target::State(fork)));
        builder.program.entry = first;
    }
    Some(())
}
