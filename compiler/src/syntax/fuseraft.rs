//! The typed syntax of a fuseraft config (`Orchestration:` root), read from the node tree.
//!
//! Every value keeps its span; every key is checked against the upstream schema
//! (`research/fuseraft-semantics.md` §20). Selection blocks live in `selection.rs`.

use std::path::{Path, PathBuf};

use super::fields::{Fields, Spanned};
use super::model_limits::{read_max_total_cost, read_pricing, read_timeouts};
pub use super::model_limits::{PricingDecl, TimeoutsDecl};
use super::node::{Node, NodeKind};
use super::selection::{read_selection, SelectionDecl};
use super::Loader;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::Span;

pub const ROOT_KEYS: &[&str] = &[
    "SchemaVersion",
    "Name",
    "Description",
    "SystemPromptPath",
    "SystemPrompt",
    "Models",
    "Agents",
    "Selection",
    "Termination",
    "Security",
    "MaxTotalTokens",
    "MaxTotalCost",
    "WarnTurnTokens",
    "ContextBudget",
    "McpServers",
    "Compaction",
    "Validation",
    "ChangeTracking",
    "Scratchpad",
    "Events",
    "Chatroom",
    "Telemetry",
    "Checkpoint",
    "ApiProfiles",
    "Saga",
    "EvidenceStore",
    "Contracts",
    "Verifier",
    "FailureHandling",
    "Brownfield",
    "TestSelector",
    "SkillCuration",
    "Memory",
    "Output",
    "RoutingInstructions",
];

pub(crate) const AGENT_KEYS: &[&str] = &[
    "Name",
    "Instructions",
    "Description",
    "Model",
    "Plugins",
    "FunctionChoice",
    "TrustScore",
    "Capabilities",
    "ContextWindow",
    "Context",
    "Isolation",
    "SkipExecutionState",
    "MaxToolCallsPerTurn",
    "MaxInTurnContextTokens",
    "MaxInTurnToolPairs",
    "KnowledgeWeight",
    "SubAgentModel",
    "SubAgentPlugins",
    "SubAgentMaxToolCalls",
    "Produces",
    "Requires",
    "RemoteAgent",
    "AgentFile",
    "EnableMemory",
];

pub const MODEL_KEYS: &[&str] = &[
    "ModelId",
    "Endpoint",
    "ApiKey",
    "ApiKeyEnvVar",
    "Provider",
    "MaxTokens",
    "Temperature",
    "ReasoningEffort",
    "MaxContextTokens",
    "Pricing",
    "ConnectTimeoutSeconds",
    "IdleTimeoutSeconds",
    "TimeoutSeconds",
];

pub(crate) const CONTEXT_WINDOW_KEYS: &[&str] = &[
    "TextOnly",
    "ExcludeAgents",
    "MaxTailMessages",
    "ContextCapFraction",
    "MaxTurnAge",
    "MaxToolResultChars",
    "MaxReplayChars",
    "ToolResultCharOverrides",
];

pub const CONTEXT_SOURCE_KEYS: &[&str] = &["Source", "MaxChars", "Label"];

pub(crate) const TERMINATION_KEYS: &[&str] = &[
    "Type",
    "Pattern",
    "MaxIterations",
    "AgentNames",
    "Strategies",
    "Validators",
    "Condition",
    "MaxTokens",
];

/// The `Termination.Type` values (compared trimmed and case-insensitively).
pub(crate) const TERMINATION_TYPES: &[&str] = &[
    "regex",
    "maxiterations",
    "composite",
    "structured",
    "tokenbudget",
];

/// The `FunctionChoice` values (compared trimmed and case-insensitively) the lowering maps
/// to tool choices.
pub(crate) const FUNCTION_CHOICES: &[&str] = &["auto", "required", "none"];

/// The `Isolation` values (compared case-insensitively) the lowering maps to context modes.
pub(crate) const ISOLATIONS: &[&str] = &["fresh", "shared", "fork"];

/// The keys of an `ApiProfiles` entry.
pub(crate) const API_PROFILE_KEYS: &[&str] = &["BaseUrl", "DefaultHeaders", "TimeoutSeconds"];

pub(crate) const CONTRACT_KEYS: &[&str] = &["Name", "Requires", "Description"];

pub(crate) const PREDICATE_KEYS: &[&str] = &[
    "Type",
    "Source",
    "Field",
    "Path",
    "Pattern",
    "PatternSource",
    "PatternField",
    "NoFailures",
    "HasAssertions",
];

pub(crate) const PREDICATE_TYPES: &[&str] = &[
    "FilesWritten",
    "CommandSucceeded",
    "FileExists",
    "TestReport",
    "RelatedTestsPass",
    "ChecklistComplete",
];

pub(crate) const FAILURE_KEYS: &[&str] = &[
    "MissingEvidence",
    "InvalidTransition",
    "ConflictingEvidence",
    "NoProgress",
    "MaxConsecutiveTurnsWithoutSignal",
    "MaxConsecutiveContractFailures",
];

pub(crate) const FAILURE_RULE_KEYS: &[&str] = &["Action", "Threshold"];

/// Sections fuseraft reads only for settings, with the keys each one knows.
pub(crate) const SETTING_SECTIONS: &[(&str, &[&str])] = &[
    (
        "Validation",
        &[
            "BriefPath",
            "TestReportPath",
            "ChangeLogPath",
            "TestAssertionPatterns",
        ],
    ),
    (
        "Security",
        &[
            "FileSystemSandboxPath",
            "HttpAllowedHosts",
            "AllowPrivateHosts",
            "ReadFileSizeLimit",
            "ChangeEnvelope",
            "FileSystemPermissions",
            "ShellPolicy",
            "DenyCredentialFiles",
            "Permissions",
            "Sandbox",
            "DenyRead",
        ],
    ),
    ("TestSelector", &["FindRelatedCommand", "FullSuiteCommand"]),
    ("ChangeTracking", &["Path", "IntentLogPath"]),
    ("EvidenceStore", &["Path"]),
    ("Events", &["Path"]),
    ("Chatroom", &["Path"]),
    ("Checkpoint", &["Mode", "Path"]),
    ("Telemetry", &["OtlpEndpoint", "CaptureContent"]),
    ("Memory", &["Provider", "Webhook"]),
    ("Output", &["Json"]),
    (
        "Verifier",
        &[
            "AgentName",
            "EveryNTurns",
            "TriggerOnSuspiciousTransition",
            "FindingsKeyword",
        ],
    ),
    (
        "Compaction",
        &[
            "TriggerTurnCount",
            "KeepRecentTurns",
            "Model",
            "Mode",
            "TokenBudget",
            "IncludeReasoning",
            "IncludeSymbolGraph",
            "IncludeExploration",
            "PinLastRoutingSignal",
            "SummaryTemplate",
            "MaxCharsPerHistoryMessage",
            "AntiThrashMinSavingsRatio",
            "AntiThrashWindow",
        ],
    ),
    (
        "ContextBudget",
        &[
            "WarnAt",
            "CutoverAt",
            "MaxSingleTurnInputTokens",
            "MaxToolResultTokens",
        ],
    ),
    (
        "Brownfield",
        &[
            "EntryPoints",
            "DiscoveryBriefPath",
            "ConventionProfilePath",
            "SeedEnvelopeFromBrief",
        ],
    ),
];

/// A whole config.
#[derive(Clone, Debug)]
pub struct Config {
    pub span: Span,
    pub name: Option<Spanned<String>>,
    pub models: Vec<(Spanned<String>, ModelDecl)>,
    pub agents: Vec<AgentDecl>,
    /// `Agents:` is written (even when it held nothing usable): no "no agents" follow-on.
    pub agents_written: bool,
    pub selection: SelectionDecl,
    pub termination: Option<TerminationDecl>,
    pub contracts: Vec<ContractDecl>,
    pub failure: FailureDecl,
    pub max_total_tokens: Option<Spanned<u64>>,
    /// `MaxTotalCost`, in US dollars.
    pub max_total_cost: Option<Spanned<f64>>,
    /// Scalar settings by dotted key (`Validation.BriefPath`), in source order.
    pub settings: Vec<(String, Spanned<String>)>,
    /// `McpServers`.
    pub mcp_servers: Vec<super::mcp::McpServerDecl>,
    /// The `Orchestration` mapping as written, for the checks that walk every written key.
    pub root: Node,
}

impl Config {
    /// Every validator name written in the config: keyword routes, graph edges and nodes,
    /// and `Termination` (composite children included).
    pub fn validator_names(&self) -> Vec<&Spanned<String>> {
        fn termination<'a>(decl: &'a TerminationDecl, out: &mut Vec<&'a Spanned<String>>) {
            out.extend(decl.validators.iter());
            for child in &decl.strategies {
                termination(child, out);
            }
        }
        let mut out = Vec::new();
        let selection = &self.selection;
        for route in &selection.routes {
            out.extend(route.validators.iter());
        }
        if let Some(graph) = &selection.graph {
            for edge in &graph.edges {
                out.extend(edge.validators.iter());
            }
            for node in &graph.nodes {
                out.extend(node.validators.iter());
            }
        }
        if let Some(decl) = &self.termination {
            termination(decl, &mut out);
        }
        out
    }
}

#[derive(Clone, Debug, Default)]
pub struct ModelDecl {
    pub span: Span,
    pub model_id: Option<Spanned<String>>,
    pub endpoint: Option<Spanned<String>>,
    pub api_key: Option<Spanned<String>>,
    pub api_key_env: Option<Spanned<String>>,
    pub provider: Option<Spanned<String>>,
    pub max_tokens: Option<Spanned<u64>>,
    pub temperature: Option<Spanned<String>>,
    pub reasoning_effort: Option<Spanned<String>>,
    /// `MaxContextTokens`: the model's context window in tokens.
    pub max_context_tokens: Option<Spanned<u64>>,
    pub pricing: Option<PricingDecl>,
    pub timeouts: TimeoutsDecl,
}

#[derive(Clone, Debug, Default)]
pub struct AgentDecl {
    pub span: Span,
    pub name: Option<Spanned<String>>,
    pub instructions: Option<Spanned<String>>,
    pub description: Option<Spanned<String>>,
    pub model: Option<ModelDecl>,
    pub plugins: Vec<Spanned<String>>,
    pub function_choice: Option<Spanned<String>>,
    pub isolation: Option<Spanned<String>>,
    pub text_only: Option<Spanned<bool>>,
    /// `EnableMemory`: the agent keeps memories across sessions (`Memory`).
    pub enable_memory: Option<Spanned<bool>>,
    pub exclude_agents: Vec<Spanned<String>>,
    pub max_tail: Option<Spanned<u64>>,
    pub max_turn_age: Option<Spanned<u64>>,
    pub max_tool_result_chars: Option<Spanned<u64>>,
    pub max_replay_chars: Option<Spanned<u64>>,
    /// `ContextWindow.ContextCapFraction`, as written (checked by the lowering).
    pub context_cap_fraction: Option<Spanned<String>>,
    /// `ContextWindow.ToolResultCharOverrides: { tool: chars }`.
    pub tool_result_overrides: Vec<(Spanned<String>, Spanned<u64>)>,
    pub context: Vec<ContextSourceDecl>,
    /// `Capabilities: { Plugin: [tags] }`.
    pub capabilities: Vec<(Spanned<String>, Vec<Spanned<String>>)>,
    /// `SubAgentModel` (an alias or a model mapping).
    pub sub_agent_model: Option<ModelDecl>,
    /// `SubAgentPlugins`.
    pub sub_agent_plugins: Vec<Spanned<String>>,
    /// `SubAgentMaxToolCalls`.
    pub sub_agent_max_tool_calls: Option<Spanned<u64>>,
    /// The agent mapping of its `AgentFile`, as written, when it has one.
    pub file_body: Option<Node>,
}

#[derive(Clone, Debug)]
pub struct ContextSourceDecl {
    pub span: Span,
    pub source: Spanned<String>,
    pub max_chars: Option<Spanned<u64>>,
    pub label: Option<Spanned<String>>,
}

#[derive(Clone, Debug)]
pub struct TerminationDecl {
    pub span: Span,
    pub kind: Option<Spanned<String>>,
    pub pattern: Option<Spanned<String>>,
    pub max_iterations: Option<Spanned<u64>>,
    pub agent_names: Vec<Spanned<String>>,
    pub strategies: Vec<TerminationDecl>,
    pub validators: Vec<Spanned<String>>,
    pub condition: Option<super::selection::ConditionDecl>,
    pub max_tokens: Option<Spanned<u64>>,
}

#[derive(Clone, Debug)]
pub struct ContractDecl {
    pub span: Span,
    pub name: Option<Spanned<String>>,
    pub requires: Vec<PredicateDecl>,
}

#[derive(Clone, Debug)]
pub struct PredicateDecl {
    pub span: Span,
    /// `Type`, or the key of the shorthand form `- FileExists: { Path: … }`.
    pub kind: Option<Spanned<String>>,
    pub params: Vec<(String, Spanned<String>)>,
    pub shorthand: bool,
}

/// One `FailureHandling.<Kind>: { Action, Threshold }` entry.
#[derive(Clone, Debug)]
pub struct FailureRuleDecl {
    pub kind: Spanned<String>,
    pub action: Option<Spanned<String>>,
    pub threshold: Option<Spanned<u64>>,
}

#[derive(Clone, Debug, Default)]
pub struct FailureDecl {
    pub rules: Vec<FailureRuleDecl>,
    pub max_without_signal: Option<Spanned<u64>>,
    pub max_contract_failures: Option<Spanned<u64>>,
}

/// Reads a whole config from its root node. Errors that make the config unusable
/// (no `Orchestration:` root) return `None`; everything else is reported and skipped.
///
/// Takes the parsed tree by value: its `Orchestration` mapping moves into [`Config::root`]
/// (a copy of a large tree cost a tenth of a 10,000-state compile).
pub fn read_config(root: Node, file_dir: &Path, loader: &mut Loader<'_>) -> Option<Config> {
    let written = take_root(root, loader)?;
    let orchestration = &written;
    let fields = Fields::new(
        orchestration,
        "`Orchestration`",
        ROOT_KEYS,
        &mut loader.diags,
    );
    let diags = &mut loader.diags;
    let name = fields.non_empty_str("Name", diags);

    let mut models = Vec::new();
    if let Some(node) = fields.get("Models") {
        match &node.kind {
            NodeKind::Map(pairs) => {
                for (key, value) in pairs {
                    let alias = Spanned::new(key.as_str().unwrap_or("").to_string(), key.span);
                    models.push((alias, read_model(value, &mut loader.diags)));
                }
            }
            _ => loader
                .diags
                .push(super::fields::wrong_type(node, "a mapping", "Models")),
        }
    }

    let mut agents = Vec::new();
    let agents_written = fields
        .get("Agents")
        .is_some_and(|node| !node.items().is_empty() || !matches!(node.kind, NodeKind::Seq(_)));
    for item in fields.list("Agents", &mut loader.diags) {
        if let Some(agent) = read_agent_with_file(item, file_dir, loader) {
            agents.push(agent);
        }
    }

    let selection = read_selection(fields.get("Selection"), fields.span(), &mut loader.diags);
    let termination = fields
        .get("Termination")
        .map(|node| read_termination(node, &mut loader.diags));
    let mut contracts = Vec::new();
    for item in fields.list("Contracts", &mut loader.diags) {
        contracts.push(read_contract(item, &mut loader.diags));
    }
    let failure = fields
        .get("FailureHandling")
        .map(|node| read_failure(node, &mut loader.diags))
        .unwrap_or_default();
    let max_total_tokens = fields.uint("MaxTotalTokens", &mut loader.diags);
    let max_total_cost = read_max_total_cost(&fields, &mut loader.diags);
    let mcp_servers = super::mcp::read_mcp_servers(
        fields.list("McpServers", &mut loader.diags),
        &mut loader.diags,
    );

    let mut settings = Vec::new();
    // fuseraft's own: `RoutingInstructions: false` turns off the routing block each model
    // call carries after the agent's instructions (docs/semantics.md).
    if let Some(flag) = fields.bool("RoutingInstructions", &mut loader.diags) {
        settings.push((
            crate::ir::ROUTING_INSTRUCTIONS.to_string(),
            Spanned::new(flag.value.to_string(), flag.span),
        ));
    }
    // `ApiProfiles`: profile names are the user's, so the whole mapping is kept as dotted
    // keys (`ApiProfiles.github.DefaultHeaders.Authorization`) for the Http plugin.
    if let Some(profiles) = fields.get("ApiProfiles") {
        flatten_setting("ApiProfiles", profiles, &mut settings);
    }
    for (section, keys) in SETTING_SECTIONS {
        if let Some(sub) = fields.section(section, keys, &mut loader.diags) {
            for key in keys.iter() {
                if let Some(value) = sub.get(key) {
                    flatten_setting(&format!("{section}.{key}"), value, &mut settings);
                }
            }
        }
    }

    Some(Config {
        span: orchestration.span,
        name,
        models,
        agents,
        agents_written,
        selection,
        termination,
        contracts,
        failure,
        max_total_tokens,
        max_total_cost,
        settings,
        mcp_servers,
        root: written,
    })
}

/// A setting as dotted keys: scalars as text, lists joined by newlines, mappings one level
/// deeper (`Security.Permissions.Preset`).
fn flatten_setting(key: &str, value: &Node, settings: &mut Vec<(String, Spanned<String>)>) {
    match &value.kind {
        NodeKind::Scalar { text, .. } => {
            settings.push((key.to_string(), Spanned::new(text.clone(), value.span)))
        }
        NodeKind::Seq(items) => {
            let joined: Vec<&str> = items.iter().filter_map(Node::as_str).collect();
            settings.push((key.to_string(), Spanned::new(joined.join("\n"), value.span)));
        }
        NodeKind::Map(pairs) => {
            for (name, inner) in pairs {
                let name = name.as_str().unwrap_or_default();
                flatten_setting(&format!("{key}.{name}"), inner, settings);
            }
        }
        NodeKind::Null => {}
    }
}

/// The `Orchestration` mapping, moved out of the parsed tree.
fn take_root(root: Node, loader: &mut Loader<'_>) -> Option<Node> {
    let index = find_root(&root, loader)?;
    match root.kind {
        NodeKind::Map(mut pairs) => Some(pairs.swap_remove(index).1),
        _ => None,
    }
}

/// The index of the `Orchestration` pair in the top-level mapping (reported when missing).
fn find_root(root: &Node, loader: &mut Loader<'_>) -> Option<usize> {
    if let NodeKind::Map(pairs) = &root.kind {
        if let Some((index, (_, value))) = pairs.iter().enumerate().find(|(_, (key, _))| {
            key.as_str()
                .is_some_and(|k| k.eq_ignore_ascii_case("Orchestration"))
        }) {
            if matches!(value.kind, NodeKind::Map(_)) {
                return Some(index);
            }
            loader.diags.push(super::fields::wrong_type(
                value,
                "a mapping",
                "Orchestration",
            ));
            return None;
        }
        let looks_like_agent = pairs.iter().any(|(key, _)| {
            key.as_str()
                .is_some_and(|k| k.eq_ignore_ascii_case("Instructions"))
        });
        let root_keys_seen = pairs.iter().any(|(key, _)| {
            key.as_str()
                .is_some_and(|k| ROOT_KEYS.iter().any(|known| known.eq_ignore_ascii_case(k)))
        });
        let typo = pairs.iter().find_map(|(key, _)| {
            let name = key.as_str()?;
            crate::diagnostic::did_you_mean(name, ["Orchestration"])
                .map(|hint| (key.span, name.to_string(), hint))
        });
        if let Some((span, name, hint)) = typo {
            loader.diags.push(missing_root(span).with_help(format!(
                "{hint} (the root key is `Orchestration`, not `{name}`)"
            )));
            return None;
        }
        let help = if looks_like_agent {
            "this looks like an agent file; reference it from a config with `AgentFile:`"
        } else if root_keys_seen {
            "indent these keys under a top-level `Orchestration:` key"
        } else {
            "a fuseraft config starts with `Orchestration:` (YAML) or `{\"Orchestration\": {…}}` (JSON)"
        };
        let span = pairs.first().map(|(key, _)| key.span).unwrap_or(root.span);
        loader.diags.push(missing_root(span).with_help(help));
        return None;
    }
    loader.diags.push(missing_root(root.span).with_help(
        "a fuseraft config starts with `Orchestration:` (YAML) or `{\"Orchestration\": {…}}` (JSON)",
    ));
    None
}

fn missing_root(span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::MissingRoot,
        "config has no top-level `Orchestration` key",
    )
    .with_label(span, "expected `Orchestration:` here")
}

pub fn read_model(node: &Node, diags: &mut Vec<Diagnostic>) -> ModelDecl {
    // `Model: fast` is shorthand for `Model: { ModelId: fast }`.
    if let NodeKind::Scalar { text, .. } = &node.kind {
        return ModelDecl {
            span: node.span,
            model_id: Some(Spanned::new(text.clone(), node.span)),
            ..ModelDecl::default()
        };
    }
    let fields = Fields::new(node, "`Model`", MODEL_KEYS, diags);
    ModelDecl {
        span: node.span,
        model_id: fields.non_empty_str("ModelId", diags),
        endpoint: fields.non_empty_str("Endpoint", diags),
        api_key: fields.non_empty_str("ApiKey", diags),
        api_key_env: fields.non_empty_str("ApiKeyEnvVar", diags),
        provider: fields.non_empty_str("Provider", diags),
        max_tokens: fields.uint("MaxTokens", diags),
        temperature: fields.number_text("Temperature", diags),
        reasoning_effort: fields.non_empty_str("ReasoningEffort", diags),
        max_context_tokens: fields.uint("MaxContextTokens", diags),
        pricing: read_pricing(&fields, diags),
        timeouts: read_timeouts(&fields, diags),
    }
}

/// `ToolResultCharOverrides`: a mapping of tool names to whole numbers of characters.
fn read_char_overrides(
    node: Option<&Node>,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(Spanned<String>, Spanned<u64>)> {
    let Some(node) = node else {
        return Vec::new();
    };
    let NodeKind::Map(pairs) = &node.kind else {
        if !matches!(node.kind, NodeKind::Null) {
            diags.push(crate::syntax::fields::wrong_type(
                node,
                "a mapping of tool names to characters",
                "ToolResultCharOverrides",
            ));
        }
        return Vec::new();
    };
    let mut overrides = Vec::new();
    for (tool, chars) in pairs {
        let name = Spanned::new(tool.as_str().unwrap_or_default().to_string(), tool.span);
        match chars.as_str().map(|text| text.trim().parse::<u64>()) {
            Some(Ok(count)) => overrides.push((name, Spanned::new(count, chars.span))),
            _ => diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!(
                        "the `ToolResultCharOverrides` entry of `{}` must be a whole number of characters",
                        name.value
                    ),
                )
                .with_label(chars.span, "not a whole number"),
            ),
        }
    }
    overrides
}

fn read_agent(node: &Node, diags: &mut Vec<Diagnostic>) -> AgentDecl {
    let fields = Fields::new(node, "an agent", AGENT_KEYS, diags);
    let mut agent = AgentDecl {
        span: node.span,
        name: fields.non_empty_str("Name", diags),
        instructions: fields.str("Instructions", diags),
        description: fields.non_empty_str("Description", diags),
        model: fields.get("Model").map(|model| read_model(model, diags)),
        plugins: fields.strings("Plugins", diags),
        function_choice: fields.non_empty_str("FunctionChoice", diags),
        isolation: fields.non_empty_str("Isolation", diags),
        sub_agent_model: fields
            .get("SubAgentModel")
            .map(|model| read_model(model, diags)),
        sub_agent_plugins: fields.strings("SubAgentPlugins", diags),
        sub_agent_max_tool_calls: fields.uint("SubAgentMaxToolCalls", diags),
        enable_memory: fields.bool("EnableMemory", diags),
        ..AgentDecl::default()
    };
    if let Some(window) = fields.section("ContextWindow", CONTEXT_WINDOW_KEYS, diags) {
        agent.text_only = window.bool("TextOnly", diags);
        agent.exclude_agents = window.strings("ExcludeAgents", diags);
        agent.max_tail = window.uint("MaxTailMessages", diags);
        agent.max_turn_age = window.uint("MaxTurnAge", diags);
        agent.max_tool_result_chars = window.uint("MaxToolResultChars", diags);
        agent.max_replay_chars = window.uint("MaxReplayChars", diags);
        agent.context_cap_fraction = window.number_text("ContextCapFraction", diags);
        agent.tool_result_overrides =
            read_char_overrides(window.get("ToolResultCharOverrides"), diags);
    }
    agent.context = read_context_sources(fields.list("Context", diags), diags);
    if let Some(capabilities) = fields.get("Capabilities") {
        match &capabilities.kind {
            NodeKind::Map(pairs) => {
                for (plugin, tags) in pairs {
                    let plugin =
                        Spanned::new(plugin.as_str().unwrap_or_default().to_string(), plugin.span);
                    let tags = match &tags.kind {
                        NodeKind::Seq(items) => items
                            .iter()
                            .filter_map(|item| {
                                item.as_str()
                                    .map(|tag| Spanned::new(tag.to_string(), item.span))
                            })
                            .collect(),
                        NodeKind::Scalar { text, .. } => {
                            vec![Spanned::new(text.clone(), tags.span)]
                        }
                        _ => {
                            diags.push(super::fields::wrong_type(
                                tags,
                                "a list of capability tags",
                                &plugin.value,
                            ));
                            Vec::new()
                        }
                    };
                    agent.capabilities.push((plugin, tags));
                }
            }
            _ => diags.push(super::fields::wrong_type(
                capabilities,
                "a mapping of plugin to tags",
                "Capabilities",
            )),
        }
    }
    agent
}

pub fn read_context_sources(items: &[Node], diags: &mut Vec<Diagnostic>) -> Vec<ContextSourceDecl> {
    let mut out = Vec::new();
    for item in items {
        if let NodeKind::Scalar { text, .. } = &item.kind {
            out.push(ContextSourceDecl {
                span: item.span,
                source: Spanned::new(text.clone(), item.span),
                max_chars: None,
                label: None,
            });
            continue;
        }
        let fields = Fields::new(item, "a context source", CONTEXT_SOURCE_KEYS, diags);
        match fields.non_empty_str("Source", diags) {
            Some(source) => out.push(ContextSourceDecl {
                span: item.span,
                source,
                max_chars: fields.uint("MaxChars", diags),
                label: fields.non_empty_str("Label", diags),
            }),
            None => diags.push(missing_key("Source", "a context source", item.span)),
        }
    }
    out
}

/// Reads an agent, merging an `AgentFile` include: inline fields win when they are set.
/// `None` when the include cannot be loaded (already reported).
fn read_agent_with_file(
    node: &Node,
    config_dir: &Path,
    loader: &mut Loader<'_>,
) -> Option<AgentDecl> {
    let inline = read_agent(node, &mut loader.diags);
    let fields = Fields::new(node, "an agent", AGENT_KEYS, &mut Vec::new());
    let Some(file) = fields.non_empty_str("AgentFile", &mut loader.diags) else {
        return Some(inline);
    };
    let path = PathBuf::from(&file.value);
    let path = if path.is_absolute() {
        path
    } else {
        config_dir.join(path)
    };
    let (file_id, root) = loader.load_include(&path, file.span, "agent file")?;
    // The file may be a bare agent or wrapped in `Agent:`.
    let body = match &root.kind {
        NodeKind::Map(pairs)
            if pairs.len() == 1
                && pairs[0]
                    .0
                    .as_str()
                    .is_some_and(|k| k.eq_ignore_ascii_case("Agent")) =>
        {
            pairs[0].1.clone()
        }
        _ => root,
    };
    let _ = file_id;
    let mut merged = read_agent(&body, &mut loader.diags);
    merged.span = node.span;
    merged.file_body = Some(body);
    if inline.name.is_some() {
        merged.name = inline.name;
    }
    if inline
        .instructions
        .as_ref()
        .is_some_and(|text| !text.value.is_empty())
    {
        merged.instructions = inline.instructions;
    }
    if inline.description.is_some() {
        merged.description = inline.description;
    }
    if let Some(model) = inline.model {
        if model.model_id.is_some() {
            merged.model = Some(model);
        }
    }
    if !inline.plugins.is_empty() {
        merged.plugins = inline.plugins;
    }
    if inline
        .function_choice
        .as_ref()
        .is_some_and(|choice| !choice.value.eq_ignore_ascii_case("auto"))
    {
        merged.function_choice = inline.function_choice;
    }
    if inline.isolation.is_some() {
        merged.isolation = inline.isolation;
    }
    if inline.text_only.is_some() {
        merged.text_only = inline.text_only;
    }
    if !inline.exclude_agents.is_empty() {
        merged.exclude_agents = inline.exclude_agents;
    }
    if inline.max_tail.is_some() {
        merged.max_tail = inline.max_tail;
    }
    if inline.max_turn_age.is_some() {
        merged.max_turn_age = inline.max_turn_age;
    }
    if inline.max_tool_result_chars.is_some() {
        merged.max_tool_result_chars = inline.max_tool_result_chars;
    }
    if inline.max_replay_chars.is_some() {
        merged.max_replay_chars = inline.max_replay_chars;
    }
    if inline.context_cap_fraction.is_some() {
        merged.context_cap_fraction = inline.context_cap_fraction;
    }
    if !inline.tool_result_overrides.is_empty() {
        merged.tool_result_overrides = inline.tool_result_overrides;
    }
    if !inline.context.is_empty() {
        merged.context = inline.context;
    }
    if !inline.capabilities.is_empty() {
        merged.capabilities = inline.capabilities;
    }
    Some(merged)
}

fn read_termination(node: &Node, diags: &mut Vec<Diagnostic>) -> TerminationDecl {
    let fields = Fields::new(node, "`Termination`", TERMINATION_KEYS, diags);
    let strategies = fields
        .list("Strategies", diags)
        .iter()
        .map(|child| read_termination(child, diags))
        .collect();
    TerminationDecl {
        span: node.span,
        kind: fields.non_empty_str("Type", diags),
        pattern: fields.non_empty_str("Pattern", diags),
        max_iterations: fields.uint("MaxIterations", diags),
        agent_names: fields.strings("AgentNames", diags),
        strategies,
        validators: fields.strings("Validators", diags),
        condition: fields
            .get("Condition")
            .map(|cond| super::selection::read_condition(cond, diags)),
        max_tokens: fields.uint("MaxTokens", diags),
    }
}

fn read_contract(node: &Node, diags: &mut Vec<Diagnostic>) -> ContractDecl {
    let fields = Fields::new(node, "a contract", CONTRACT_KEYS, diags);
    let name = fields.non_empty_str("Name", diags);
    if name.is_none() {
        diags.push(missing_key("Name", "a contract", node.span));
    }
    let requires = fields
        .list("Requires", diags)
        .iter()
        .map(|item| read_predicate(item, diags))
        .collect();
    ContractDecl {
        span: node.span,
        name,
        requires,
    }
}

fn read_predicate(node: &Node, diags: &mut Vec<Diagnostic>) -> PredicateDecl {
    // Shorthand `- FileExists: { Path: … }` (used by upstream's open-webui example):
    // one key naming a predicate type, whose value holds the parameters. Accepted as sugar.
    if let NodeKind::Map(pairs) = &node.kind {
        if pairs.len() == 1 {
            let (key, value) = &pairs[0];
            if let Some(kind) = key.as_str() {
                if PREDICATE_TYPES
                    .iter()
                    .any(|known| known.eq_ignore_ascii_case(kind))
                {
                    let params = read_predicate_params(value, diags);
                    return PredicateDecl {
                        span: node.span,
                        kind: Some(Spanned::new(kind.to_string(), key.span)),
                        params,
                        shorthand: true,
                    };
                }
            }
        }
    }
    let fields = Fields::new(node, "a contract predicate", PREDICATE_KEYS, diags);
    let kind = fields.non_empty_str("Type", diags);
    if kind.is_none() {
        diags.push(missing_key("Type", "a contract predicate", node.span));
    }
    PredicateDecl {
        span: node.span,
        kind,
        params: read_predicate_params(node, &mut Vec::new()),
        shorthand: false,
    }
}

fn read_predicate_params(
    node: &Node,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(String, Spanned<String>)> {
    let fields = Fields::new(node, "a contract predicate", PREDICATE_KEYS, diags);
    let mut params = Vec::new();
    for key in PREDICATE_KEYS.iter().filter(|key| **key != "Type") {
        if let Some(value) = fields.str(key, diags) {
            params.push((key.to_string(), value));
        }
    }
    params
}

fn read_failure(node: &Node, diags: &mut Vec<Diagnostic>) -> FailureDecl {
    let fields = Fields::new(node, "`FailureHandling`", FAILURE_KEYS, diags);
    let mut decl = FailureDecl::default();
    for kind in &FAILURE_KEYS[..4] {
        if let Some((key, value)) = fields.entry(kind) {
            let rule = Fields::new(value, kind, FAILURE_RULE_KEYS, diags);
            decl.rules.push(FailureRuleDecl {
                kind: Spanned::new(kind.to_string(), key.span),
                action: rule.non_empty_str("Action", diags),
                threshold: rule.uint("Threshold", diags),
            });
        }
    }
    decl.max_without_signal = fields.uint("MaxConsecutiveTurnsWithoutSignal", diags);
    decl.max_contract_failures = fields.uint("MaxConsecutiveContractFailures", diags);
    decl
}

pub(crate) fn missing_key(key: &str, what: &str, span: Span) -> Diagnostic {
    Diagnostic::error(Code::MissingRequiredKey, format!("{what} has no `{key}`"))
        .with_label(span, format!("`{key}` is required here"))
}
