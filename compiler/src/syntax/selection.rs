//! The typed syntax of `Selection:`: keyword and structured routes, state machines, graphs,
//! adversarial stages, llm/magentic managers, map-reduce and scatter-gather.

use super::fields::{Fields, Spanned};
use super::fuseraft::{
    missing_key, read_context_sources, read_model, ContextSourceDecl, ModelDecl,
};
use super::node::{Node, NodeKind};
use crate::diagnostic::Diagnostic;
use crate::source::Span;

pub(crate) const SELECTION_KEYS: &[&str] = &[
    "Type",
    "Prompt",
    "Model",
    "Routes",
    "StructuredRoutes",
    "DefaultAgent",
    "Magentic",
    "StateMachine",
    "Graph",
    "Adversarial",
    "MapReduce",
    "ScatterGather",
];
pub(crate) const ROUTE_KEYS: &[&str] = &[
    "Keyword",
    "Agent",
    "Validator",
    "Validators",
    "SourceAgents",
    "RequiredCommandPattern",
    "ShellFallbackPattern",
    "RequireHumanApproval",
    "Condition",
    "PreferStructuredOutput",
    "RecoveryAgent",
    "Contracts",
];
pub(crate) const STRUCTURED_ROUTE_KEYS: &[&str] = &["Agent", "Condition", "SourceAgents"];
pub(crate) const CONDITION_KEYS: &[&str] = &["Field", "Is", "IsNot", "Contains", "Exists"];
pub(crate) const STATE_MACHINE_KEYS: &[&str] = &["Initial", "States"];
pub(crate) const STATE_KEYS: &[&str] = &["Agent", "Transitions", "Terminal"];
pub(crate) const TRANSITION_KEYS: &[&str] = &[
    "To",
    "Signal",
    "Contract",
    "Contracts",
    "SourceAgents",
    "RecoveryAgent",
    "Parallel",
    "Targets",
    "Merge",
    "HandoffContext",
    "MaxRevisits",
    "ReviewArtifactPath",
];
pub(crate) const MERGE_KEYS: &[&str] = &["Strategy", "Agent"];
pub(crate) const GRAPH_KEYS: &[&str] = &[
    "Nodes",
    "Edges",
    "EntryNode",
    "MaxRetries",
    "MaxTotalTurnsMultiplier",
    "SubGraphs",
];
pub(crate) const NODE_KEYS: &[&str] = &[
    "Id",
    "Agent",
    "Terminal",
    "Parallel",
    "SubGraphId",
    "Validators",
];
pub(crate) const EDGE_KEYS: &[&str] = &[
    "From",
    "To",
    "Keyword",
    "Validator",
    "Validators",
    "RequiredCommandPattern",
    "ShellFallbackPattern",
    "SourceAgents",
    "RequireHumanApproval",
    "RecoveryAgent",
];
pub(crate) const ADVERSARIAL_KEYS: &[&str] = &["Stages", "Rounds", "PassKeyword"];
pub(crate) const STAGE_KEYS: &[&str] = &["Generator", "Critic", "Label"];
pub(crate) const MAGENTIC_KEYS: &[&str] = &[
    "Model",
    "Instructions",
    "MaxRoundCount",
    "MaxStallCount",
    "MaxResetCount",
    "EnablePlanReview",
];
pub(crate) const MAP_REDUCE_KEYS: &[&str] = &[
    "Splitter",
    "Mapper",
    "Reducer",
    "ItemsJsonPath",
    "MaxConcurrency",
    "MaxSplitterRetries",
];
pub(crate) const SCATTER_GATHER_KEYS: &[&str] = &["Participants", "Synthesizer", "MaxConcurrency"];

#[derive(Clone, Debug, Default)]
pub struct SelectionDecl {
    pub span: Span,
    pub kind: Option<Spanned<String>>,
    pub prompt: Option<Spanned<String>>,
    pub model: Option<ModelDecl>,
    pub default_agent: Option<Spanned<String>>,
    pub routes: Vec<RouteDecl>,
    pub structured_routes: Vec<StructuredRouteDecl>,
    pub state_machine: Option<StateMachineDecl>,
    pub graph: Option<GraphDecl>,
    pub adversarial: Option<AdversarialDecl>,
    pub magentic: Option<MagenticDecl>,
    pub map_reduce: Option<MapReduceDecl>,
    pub scatter_gather: Option<ScatterGatherDecl>,
}

/// A keyword route (`Selection.Routes[]`).
#[derive(Clone, Debug)]
pub struct RouteDecl {
    pub span: Span,
    pub keyword: Option<Spanned<String>>,
    pub agent: Option<Spanned<String>>,
    pub validators: Vec<Spanned<String>>,
    pub source_agents: Vec<Spanned<String>>,
    pub required_command_pattern: Option<Spanned<String>>,
    pub shell_fallback_pattern: Option<Spanned<String>>,
    pub require_human_approval: bool,
    pub condition: Option<ConditionDecl>,
    pub prefer_structured_output: bool,
    pub recovery_agent: Option<Spanned<String>>,
    pub contracts: Vec<Spanned<String>>,
}

/// A routing condition: upstream's object form or the string form of `grammar/condition.pest`.
#[derive(Clone, Debug)]
pub enum ConditionDecl {
    Object {
        span: Span,
        field: Option<Spanned<String>>,
        is: Option<Spanned<String>>,
        is_not: Option<Spanned<String>>,
        contains: Option<Spanned<String>>,
        exists: Option<Spanned<bool>>,
    },
    Text(Spanned<String>),
}

#[derive(Clone, Debug)]
pub struct StructuredRouteDecl {
    pub span: Span,
    pub agent: Option<Spanned<String>>,
    pub condition: Option<ConditionDecl>,
    pub source_agents: Vec<Spanned<String>>,
}

#[derive(Clone, Debug)]
pub struct StateMachineDecl {
    pub span: Span,
    pub initial: Option<Spanned<String>>,
    pub states: Vec<StateDecl>,
    /// `States:` is written (even when it is not a mapping).
    pub states_written: bool,
}

#[derive(Clone, Debug)]
pub struct StateDecl {
    pub name: Spanned<String>,
    pub span: Span,
    pub agent: Option<Spanned<String>>,
    pub terminal: bool,
    pub transitions: Vec<TransitionDecl>,
}

#[derive(Clone, Debug)]
pub struct TransitionDecl {
    pub span: Span,
    pub to: Option<Spanned<String>>,
    pub signal: Option<Spanned<String>>,
    pub contracts: Vec<Spanned<String>>,
    pub source_agents: Vec<Spanned<String>>,
    pub recovery_agent: Option<Spanned<String>>,
    pub parallel: bool,
    pub targets: Vec<Spanned<String>>,
    pub merge_strategy: Option<Spanned<String>>,
    pub merge_agent: Option<Spanned<String>>,
    pub handoff_context: Vec<ContextSourceDecl>,
    pub max_revisits: Option<Spanned<u64>>,
    pub review_artifact_path: Option<Spanned<String>>,
}

#[derive(Clone, Debug)]
pub struct GraphDecl {
    pub span: Span,
    pub nodes: Vec<GraphNodeDecl>,
    pub edges: Vec<EdgeDecl>,
    pub entry_node: Option<Spanned<String>>,
    pub max_retries: Option<Spanned<u64>>,
    pub max_total_turns_multiplier: Option<Spanned<u64>>,
}

#[derive(Clone, Debug)]
pub struct GraphNodeDecl {
    pub span: Span,
    pub id: Option<Spanned<String>>,
    pub agent: Option<Spanned<String>>,
    pub terminal: bool,
    pub parallel: bool,
    pub sub_graph: Option<Spanned<String>>,
    pub validators: Vec<Spanned<String>>,
}

#[derive(Clone, Debug)]
pub struct EdgeDecl {
    pub span: Span,
    pub from: Option<Spanned<String>>,
    pub to: Option<Spanned<String>>,
    pub keyword: Option<Spanned<String>>,
    pub validators: Vec<Spanned<String>>,
    pub required_command_pattern: Option<Spanned<String>>,
    pub shell_fallback_pattern: Option<Spanned<String>>,
    pub source_agents: Vec<Spanned<String>>,
    pub require_human_approval: bool,
    pub recovery_agent: Option<Spanned<String>>,
}

#[derive(Clone, Debug)]
pub struct AdversarialDecl {
    pub span: Span,
    pub stages: Vec<StageDecl>,
    pub rounds: Option<Spanned<u64>>,
    pub pass_keyword: Option<Spanned<String>>,
}

#[derive(Clone, Debug)]
pub struct StageDecl {
    pub span: Span,
    pub generator: Option<Spanned<String>>,
    pub critic: Option<Spanned<String>>,
    pub label: Option<Spanned<String>>,
}

#[derive(Clone, Debug)]
pub struct MagenticDecl {
    pub span: Span,
    pub model: Option<ModelDecl>,
    pub instructions: Option<Spanned<String>>,
    pub max_round_count: Option<Spanned<u64>>,
    pub max_stall_count: Option<Spanned<u64>>,
    pub max_reset_count: Option<Spanned<u64>>,
    pub enable_plan_review: bool,
}

#[derive(Clone, Debug)]
pub struct MapReduceDecl {
    pub span: Span,
    pub splitter: Option<Spanned<String>>,
    pub mapper: Option<Spanned<String>>,
    pub reducer: Option<Spanned<String>>,
    /// `ItemsJsonPath`: where the splitter's reply holds the items (default `items`).
    pub items_json_path: Option<Spanned<String>>,
}

#[derive(Clone, Debug)]
pub struct ScatterGatherDecl {
    pub span: Span,
    pub participants: Vec<Spanned<String>>,
    pub synthesizer: Option<Spanned<String>>,
}

pub fn read_selection(
    node: Option<&Node>,
    parent: Span,
    diags: &mut Vec<Diagnostic>,
) -> SelectionDecl {
    let Some(node) = node else {
        return SelectionDecl {
            span: parent,
            ..SelectionDecl::default()
        };
    };
    let fields = Fields::new(node, "`Selection`", SELECTION_KEYS, diags);
    SelectionDecl {
        span: node.span,
        kind: fields.non_empty_str("Type", diags),
        prompt: fields.non_empty_str("Prompt", diags),
        model: fields.get("Model").map(|model| read_model(model, diags)),
        default_agent: fields.non_empty_str("DefaultAgent", diags),
        routes: fields
            .list("Routes", diags)
            .iter()
            .map(|item| read_route(item, diags))
            .collect(),
        structured_routes: fields
            .list("StructuredRoutes", diags)
            .iter()
            .map(|item| read_structured_route(item, diags))
            .collect(),
        state_machine: fields
            .get("StateMachine")
            .map(|value| read_state_machine(value, diags)),
        graph: fields.get("Graph").map(|value| read_graph(value, diags)),
        adversarial: fields
            .get("Adversarial")
            .map(|value| read_adversarial(value, diags)),
        magentic: fields
            .get("Magentic")
            .map(|value| read_magentic(value, diags)),
        map_reduce: fields
            .get("MapReduce")
            .map(|value| read_map_reduce(value, diags)),
        scatter_gather: fields
            .get("ScatterGather")
            .map(|value| read_scatter_gather(value, diags)),
    }
}

/// `Validators` wins over `Validator`, as upstream.
fn validators(fields: &Fields<'_>, diags: &mut Vec<Diagnostic>) -> Vec<Spanned<String>> {
    let list = fields.strings("Validators", diags);
    if !list.is_empty() {
        return list;
    }
    fields
        .non_empty_str("Validator", diags)
        .into_iter()
        .collect()
}

fn flag(fields: &Fields<'_>, key: &str, diags: &mut Vec<Diagnostic>) -> bool {
    fields.bool(key, diags).is_some_and(|value| value.value)
}

fn read_route(node: &Node, diags: &mut Vec<Diagnostic>) -> RouteDecl {
    let fields = Fields::new(node, "a keyword route", ROUTE_KEYS, diags);
    RouteDecl {
        span: node.span,
        keyword: fields.non_empty_str("Keyword", diags),
        agent: fields.non_empty_str("Agent", diags),
        validators: validators(&fields, diags),
        source_agents: fields.strings("SourceAgents", diags),
        required_command_pattern: fields.non_empty_str("RequiredCommandPattern", diags),
        shell_fallback_pattern: fields.non_empty_str("ShellFallbackPattern", diags),
        require_human_approval: flag(&fields, "RequireHumanApproval", diags),
        condition: fields
            .get("Condition")
            .map(|cond| read_condition(cond, diags)),
        prefer_structured_output: flag(&fields, "PreferStructuredOutput", diags),
        recovery_agent: fields.non_empty_str("RecoveryAgent", diags),
        contracts: fields.strings("Contracts", diags),
    }
}

pub fn read_condition(node: &Node, diags: &mut Vec<Diagnostic>) -> ConditionDecl {
    if let NodeKind::Scalar { text, .. } = &node.kind {
        return ConditionDecl::Text(Spanned::new(text.clone(), node.span));
    }
    let fields = Fields::new(node, "a condition", CONDITION_KEYS, diags);
    ConditionDecl::Object {
        span: node.span,
        field: fields.non_empty_str("Field", diags),
        is: fields.str("Is", diags),
        is_not: fields.str("IsNot", diags),
        contains: fields.str("Contains", diags),
        exists: fields.bool("Exists", diags),
    }
}

fn read_structured_route(node: &Node, diags: &mut Vec<Diagnostic>) -> StructuredRouteDecl {
    let fields = Fields::new(node, "a structured route", STRUCTURED_ROUTE_KEYS, diags);
    StructuredRouteDecl {
        span: node.span,
        agent: fields.non_empty_str("Agent", diags),
        condition: fields
            .get("Condition")
            .map(|cond| read_condition(cond, diags)),
        source_agents: fields.strings("SourceAgents", diags),
    }
}

fn read_state_machine(node: &Node, diags: &mut Vec<Diagnostic>) -> StateMachineDecl {
    let fields = Fields::new(node, "`StateMachine`", STATE_MACHINE_KEYS, diags);
    let mut states = Vec::new();
    if let Some(map) = fields.get("States") {
        match &map.kind {
            NodeKind::Map(pairs) => {
                for (key, value) in pairs {
                    let name = Spanned::new(key.as_str().unwrap_or("").to_string(), key.span);
                    states.push(read_state(name, value, diags));
                }
            }
            _ => diags.push(super::fields::wrong_type(map, "a mapping", "States")),
        }
    }
    StateMachineDecl {
        span: node.span,
        initial: fields.non_empty_str("Initial", diags),
        states_written: fields
            .get("States")
            .is_some_and(|node| !matches!(node.kind, NodeKind::Map(_))),
        states,
    }
}

fn read_state(name: Spanned<String>, node: &Node, diags: &mut Vec<Diagnostic>) -> StateDecl {
    let fields = Fields::new(node, "a state", STATE_KEYS, diags);
    let transitions = fields
        .list("Transitions", diags)
        .iter()
        .map(|item| read_transition(item, diags))
        .collect();
    StateDecl {
        span: node.span,
        agent: fields.non_empty_str("Agent", diags),
        terminal: flag(&fields, "Terminal", diags),
        transitions,
        name,
    }
}

fn read_transition(node: &Node, diags: &mut Vec<Diagnostic>) -> TransitionDecl {
    let fields = Fields::new(node, "a transition", TRANSITION_KEYS, diags);
    let mut contracts: Vec<Spanned<String>> = fields
        .non_empty_str("Contract", diags)
        .into_iter()
        .collect();
    contracts.extend(fields.strings("Contracts", diags));
    let merge = fields.section("Merge", MERGE_KEYS, diags);
    let to = fields.non_empty_str("To", diags);
    if to.is_none() {
        diags.push(missing_key("To", "a transition", node.span));
    }
    TransitionDecl {
        span: node.span,
        to,
        signal: fields.non_empty_str("Signal", diags),
        contracts,
        source_agents: fields.strings("SourceAgents", diags),
        recovery_agent: fields.non_empty_str("RecoveryAgent", diags),
        parallel: flag(&fields, "Parallel", diags),
        targets: fields.strings("Targets", diags),
        merge_strategy: merge
            .as_ref()
            .and_then(|m| m.non_empty_str("Strategy", diags)),
        merge_agent: merge.as_ref().and_then(|m| m.non_empty_str("Agent", diags)),
        handoff_context: read_context_sources(fields.list("HandoffContext", diags), diags),
        max_revisits: fields.uint("MaxRevisits", diags),
        review_artifact_path: fields.non_empty_str("ReviewArtifactPath", diags),
    }
}

fn read_graph(node: &Node, diags: &mut Vec<Diagnostic>) -> GraphDecl {
    let fields = Fields::new(node, "`Graph`", GRAPH_KEYS, diags);
    let nodes = fields
        .list("Nodes", diags)
        .iter()
        .map(|item| {
            let node_fields = Fields::new(item, "a graph node", NODE_KEYS, diags);
            GraphNodeDecl {
                span: item.span,
                id: node_fields.non_empty_str("Id", diags),
                agent: node_fields.non_empty_str("Agent", diags),
                terminal: flag(&node_fields, "Terminal", diags),
                parallel: flag(&node_fields, "Parallel", diags),
                sub_graph: node_fields.non_empty_str("SubGraphId", diags),
                validators: node_fields.strings("Validators", diags),
            }
        })
        .collect();
    let edges = fields
        .list("Edges", diags)
        .iter()
        .map(|item| {
            let edge = Fields::new(item, "a graph edge", EDGE_KEYS, diags);
            EdgeDecl {
                span: item.span,
                from: edge.non_empty_str("From", diags),
                to: edge.non_empty_str("To", diags),
                keyword: edge.non_empty_str("Keyword", diags),
                validators: validators(&edge, diags),
                required_command_pattern: edge.non_empty_str("RequiredCommandPattern", diags),
                shell_fallback_pattern: edge.non_empty_str("ShellFallbackPattern", diags),
                source_agents: edge.strings("SourceAgents", diags),
                require_human_approval: flag(&edge, "RequireHumanApproval", diags),
                recovery_agent: edge.non_empty_str("RecoveryAgent", diags),
            }
        })
        .collect();
    GraphDecl {
        span: node.span,
        nodes,
        edges,
        entry_node: fields.non_empty_str("EntryNode", diags),
        max_retries: fields.uint("MaxRetries", diags),
        max_total_turns_multiplier: fields.uint("MaxTotalTurnsMultiplier", diags),
    }
}

fn read_adversarial(node: &Node, diags: &mut Vec<Diagnostic>) -> AdversarialDecl {
    let fields = Fields::new(node, "`Adversarial`", ADVERSARIAL_KEYS, diags);
    let stages = fields
        .list("Stages", diags)
        .iter()
        .map(|item| {
            let stage = Fields::new(item, "an adversarial stage", STAGE_KEYS, diags);
            StageDecl {
                span: item.span,
                generator: stage.non_empty_str("Generator", diags),
                critic: stage.non_empty_str("Critic", diags),
                label: stage.non_empty_str("Label", diags),
            }
        })
        .collect();
    AdversarialDecl {
        span: node.span,
        stages,
        rounds: fields.uint("Rounds", diags),
        pass_keyword: fields.non_empty_str("PassKeyword", diags),
    }
}

fn read_magentic(node: &Node, diags: &mut Vec<Diagnostic>) -> MagenticDecl {
    let fields = Fields::new(node, "`Magentic`", MAGENTIC_KEYS, diags);
    MagenticDecl {
        span: node.span,
        model: fields.get("Model").map(|model| read_model(model, diags)),
        instructions: fields.non_empty_str("Instructions", diags),
        max_round_count: fields.uint("MaxRoundCount", diags),
        max_stall_count: fields.uint("MaxStallCount", diags),
        max_reset_count: fields.uint("MaxResetCount", diags),
        enable_plan_review: flag(&fields, "EnablePlanReview", diags),
    }
}

fn read_map_reduce(node: &Node, diags: &mut Vec<Diagnostic>) -> MapReduceDecl {
    let fields = Fields::new(node, "`MapReduce`", MAP_REDUCE_KEYS, diags);
    MapReduceDecl {
        span: node.span,
        splitter: fields.non_empty_str("Splitter", diags),
        mapper: fields.non_empty_str("Mapper", diags),
        reducer: fields.non_empty_str("Reducer", diags),
        items_json_path: fields.non_empty_str("ItemsJsonPath", diags),
    }
}

fn read_scatter_gather(node: &Node, diags: &mut Vec<Diagnostic>) -> ScatterGatherDecl {
    let fields = Fields::new(node, "`ScatterGather`", SCATTER_GATHER_KEYS, diags);
    ScatterGatherDecl {
        span: node.span,
        participants: fields.strings("Participants", diags),
        synthesizer: fields.non_empty_str("Synthesizer", diags),
    }
}
