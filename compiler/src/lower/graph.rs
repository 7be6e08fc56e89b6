//! Lowering `graph` and `workflow` selection: one state per node, edges as `signal(strict)`
//! exits (`always` without a keyword), parallel node groups as `fork` states, terminal
//! nodes as `run_once` states whose validators guard their exit to `end`.
//!
//! Back edges are classified after lowering (`ir::classify_edges`); in `graph` configs they
//! also carry `phase_break` (added by `Builder::finish`).

use super::routes::validator_guards;
use super::{missing_block, Builder};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{
    EdgeClass, Exit, Fork, Guard, Matcher, Merge, NoMatch, SelectionKind, StateId, StateKind,
    Target, TerminalMode, Trigger,
};
use crate::syntax::fuseraft::Config;
use crate::syntax::selection::EdgeDecl;

const DEFAULT_MAX_RETRIES: u64 = 4;
const DEFAULT_TURNS_MULTIPLIER: u64 = 10;

pub(super) fn lower(config: &Config, kind: SelectionKind, builder: &mut Builder<'_>) -> Option<()> {
    let Some(graph) = &config.selection.graph else {
        missing_block(builder, "Graph", kind, config.selection.span);
        return None;
    };
    if graph.nodes.is_empty() {
        builder.diags.push(
            Diagnostic::error(Code::MissingRequiredKey, "the graph has no `Nodes`")
                .with_label(graph.span, "add `Nodes:` to `Graph`"),
        );
        return None;
    }
    let max_retries = graph
        .max_retries
        .as_ref()
        .map_or(DEFAULT_MAX_RETRIES, |max| max.value);
    let multiplier = graph
        .max_total_turns_multiplier
        .as_ref()
        .map_or(DEFAULT_TURNS_MULTIPLIER, |max| max.value);

    // Nodes.
    let mut nodes: Vec<(StateId, bool)> = Vec::new();
    for node in &graph.nodes {
        let Some(id) = &node.id else {
            builder.diags.push(
                Diagnostic::error(Code::MissingRequiredKey, "a graph node has no `Id`")
                    .with_label(node.span, "add `Id:` to this node"),
            );
            continue;
        };
        if builder.find_state(&id.value).is_some() {
            builder.diags.push(
                Diagnostic::error(
                    Code::DuplicateName,
                    format!("node `{}` is defined twice", id.value),
                )
                .with_label(id.span, "node ids compare case-insensitively"),
            );
            continue;
        }
        if let Some(sub_graph) = &node.sub_graph {
            builder.diags.push(
                Diagnostic::warning(
                    Code::UnsupportedFeature,
                    "sub-graph nodes are not supported yet",
                )
                .with_label(
                    sub_graph.span,
                    "this node is lowered as a state without an agent",
                )
                .with_help("inline the sub-graph's nodes into this graph"),
            );
        }
        let agent = match &node.agent {
            Some(name) => builder.agent_ref(name, "node agent"),
            None if node.sub_graph.is_none() => {
                builder.diags.push(
                    Diagnostic::error(
                        Code::MissingRequiredKey,
                        format!("node `{}` has no `Agent`", id.value),
                    )
                    .with_label(id.span, "add `Agent:` to this node"),
                );
                None
            }
            None => None,
        };
        let state_kind = if node.terminal {
            StateKind::Terminal(TerminalMode::RunOnce)
        } else {
            StateKind::Turn
        };
        let state = builder.add_state(&id.value, agent, state_kind, Some(id.span));
        let state_mut = builder.state_mut(state);
        state_mut.stuck.max_retries = Some(max_retries.min(u32::MAX as u64) as u32);
        state_mut.stuck.max_visit_turns =
            Some((max_retries * multiplier).min(u32::MAX as u64) as u32);
        if node.terminal {
            // A terminal node runs once; its validators gate the end of the run.
            state_mut.exits.push(Exit {
                trigger: Trigger::Always,
                guards: validator_guards(&node.validators, &None, &None),
                effects: Vec::new(),
                target: Target::End,
                class: EdgeClass::Forward,
                recovery: None,
                loc: None,
            });
            state_mut.no_match = NoMatch::Correct { nudge: false };
        }
        nodes.push((state, node.parallel));
    }
    if nodes.is_empty() {
        return None;
    }
    builder.program.entry = match &graph.entry_node {
        Some(entry) => match builder.find_state(&entry.value) {
            Some(id) => id,
            None => {
                builder.diags.push(
                    Diagnostic::error(
                        Code::UnknownInitial,
                        format!("entry node `{}` is not a node", entry.value),
                    )
                    .with_label(entry.span, "no node has this id"),
                );
                nodes[0].0
            }
        },
        None => nodes[0].0,
    };
    let is_parallel = |id: StateId| {
        nodes
            .iter()
            .any(|(node, parallel)| *node == id && *parallel)
    };

    // Edges, grouped by their source in declaration order.
    let mut exits: Vec<Vec<(Option<String>, Exit)>> =
        vec![Vec::new(); builder.program.states.len()];
    for edge in &graph.edges {
        let Some((from, exit)) = lower_edge(edge, kind, builder) else {
            continue;
        };
        let keyword = match &exit.trigger {
            Trigger::Signal { text, .. } => Some(text.clone()),
            _ => None,
        };
        exits[from.0 as usize].push((keyword, exit));
    }

    // Parallel groups: edges from one source with one keyword into parallel nodes become a
    // fork whose join is the first route declared on a parallel node of the group.
    for from in 0..exits.len() {
        let mut grouped: Vec<(Option<String>, Exit)> = Vec::new();
        let mut done: Vec<Option<String>> = Vec::new();
        for (keyword, exit) in exits[from].clone() {
            let target = match exit.target {
                Target::State(target) if is_parallel(target) => target,
                _ => {
                    grouped.push((keyword, exit));
                    continue;
                }
            };
            if done.contains(&keyword) {
                continue;
            }
            done.push(keyword.clone());
            let branches: Vec<StateId> = exits[from]
                .iter()
                .filter(|(other, other_exit)| {
                    *other == keyword
                        && matches!(other_exit.target, Target::State(t) if is_parallel(t))
                })
                .filter_map(|(_, other_exit)| match other_exit.target {
                    Target::State(t) => Some(t),
                    Target::End => None,
                })
                .collect();
            let join = branches
                .iter()
                .find_map(|branch| {
                    exits[branch.0 as usize]
                        .first()
                        .map(|(_, e)| e.target.clone())
                })
                .unwrap_or(Target::End);
            let source_name = builder.program.states[from].name.clone();
            let fork_name = match &keyword {
                Some(keyword) => format!("{source_name}/parallel:{keyword}"),
                None => format!("{source_name}/parallel"),
            };
            let fork = builder.add_state(
                &fork_name,
                None,
                StateKind::Fork(Fork {
                    branches,
                    join,
                    merge: Merge::Union,
                    merge_agent: None,
                    per_item: None,
                    per_line: false,
                    sequential: false,
                }),
                None,
            );
            exits.push(Vec::new());
            let mut fork_exit = exit;
            fork_exit.target = Target::State(fork);
            let _ = target;
            grouped.push((keyword, fork_exit));
        }
        exits[from] = grouped;
    }

    for (idx, state_exits) in exits.into_iter().enumerate() {
        if state_exits.is_empty() {
            continue;
        }
        let state = &mut builder.program.states[idx];
        if matches!(state.kind, StateKind::Terminal(_)) {
            // Outgoing edges of a terminal node are ignored upstream; `check` reports them.
            continue;
        }
        state.exits = state_exits.into_iter().map(|(_, exit)| exit).collect();
        state.no_match = NoMatch::Correct { nudge: true };
    }
    Some(())
}

fn lower_edge(
    edge: &EdgeDecl,
    kind: SelectionKind,
    builder: &mut Builder<'_>,
) -> Option<(StateId, Exit)> {
    let Some(from_name) = &edge.from else {
        builder.diags.push(
            Diagnostic::error(Code::MissingRequiredKey, "a graph edge has no `From`")
                .with_label(edge.span, "add `From:` to this edge"),
        );
        return None;
    };
    let Some(to_name) = &edge.to else {
        builder.diags.push(
            Diagnostic::error(Code::MissingRequiredKey, "a graph edge has no `To`")
                .with_label(edge.span, "add `To:` to this edge"),
        );
        return None;
    };
    let from = builder.state_ref(from_name, "edge source")?;
    let to = builder.state_ref(to_name, "edge target")?;
    let sources = builder.agent_refs(&edge.source_agents, "source agent");
    if let Some(own) = builder.program.state(from).agent {
        if !sources.is_empty() && !sources.contains(&own) {
            // Upstream drops such an edge when it builds the route tables.
            builder.diags.push(
                Diagnostic::warning(
                    Code::UnsupportedFeature,
                    format!("edge from `{}` can never fire: its `SourceAgents` exclude the node's own agent", from_name.value),
                )
                .with_label(edge.span, "this edge is dropped")
                .with_help("add the node's agent to `SourceAgents`, or remove the list"),
            );
            return None;
        }
    }
    let trigger = match &edge.keyword {
        Some(keyword) => Trigger::Signal {
            text: keyword.value.clone(),
            matcher: Matcher::Strict,
            sources,
        },
        None => {
            if kind == SelectionKind::Workflow {
                builder.diags.push(
                    Diagnostic::error(Code::MissingRequiredKey, "a workflow edge has no `Keyword`")
                        .with_label(edge.span, "workflow edges are routes: add `Keyword:`")
                        .with_help("use `Type: graph` for unconditional edges"),
                );
            }
            Trigger::Always
        }
    };
    let mut guards = validator_guards(
        &edge.validators,
        &edge.required_command_pattern,
        &edge.shell_fallback_pattern,
    );
    if edge.require_human_approval {
        guards.push(Guard::HumanApproval);
    }
    let recovery = edge
        .recovery_agent
        .as_ref()
        .and_then(|name| builder.agent_ref(name, "recovery agent"));
    let loc = builder.loc(edge.span);
    Some((
        from,
        Exit {
            trigger,
            guards,
            effects: Vec::new(),
            target: Target::State(to),
            class: EdgeClass::Forward,
            recovery,
            loc,
        },
    ))
}
