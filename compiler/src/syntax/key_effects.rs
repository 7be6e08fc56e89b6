//! What every key the fuseraft config readers accept does at run time: the one registry
//! `FR007` (inert keys) reads. A key either acts (lowered into the IR, or a setting the VM
//! reads), annotates (for readers only), is already reported where it is written by another
//! code, or is inert: parsed for compatibility with upstream fuseraft-cli and nothing acts
//! on it. A test walks every key table and fails on a key that is not classified here.
//!
//! To flip a key when its feature lands, change its one line to `Acts`.

use super::fuseraft as config;
use super::mcp::MCP_SERVER_KEYS;
use super::selection as sel;
use crate::diagnostic::Code;

/// What a written key does.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum KeyEffect {
    /// Lowered into the IR, or read by the VM as a setting.
    Acts,
    /// Describes the config for its readers (a name, a description); not meant to act.
    Annotation,
    /// Has no effect, already reported where it is written by this code.
    Reported(Code),
    /// Parsed for compatibility with upstream fuseraft-cli; nothing acts on it. The text
    /// says why, as a clause ("fuseraft does not implement … yet").
    Inert(&'static str),
}

use KeyEffect::{Acts, Annotation, Inert, Reported};

/// How a key's value holds the table it leads to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One mapping of the child table.
    Map,
    /// A list of mappings of the child table.
    List,
    /// A mapping of names to mappings of the child table (`Models`).
    Named,
}

const COMPACTION: &str = "fuseraft's summaries hold no reasoning excerpts, symbol graph, exploration history or custom template, so it does not read this key";
const CONTEXT_BUDGET: &str =
    "fuseraft does not implement token-budget warnings or cutover yet (`MaxTotalTokens` and `Termination.MaxTokens` bound a run)";
const BROWNFIELD: &str = "fuseraft does not implement brownfield discovery yet";
const IN_TURN: &str = "fuseraft does not implement per-turn tool limits yet";
const CONCURRENCY: &str = "fuseraft runs a fan-out's branches without a concurrency cap";
const CHECKPOINT: &str =
    "fuseraft checkpoints every run in its own session store (`fuseraft exec --session`)";

/// Every `(table, key)` the readers accept, with its effect. Tables are named as in
/// [`key_tables`] (and as the `$defs` of `fuseraft schema`).
#[rustfmt::skip]
pub const KEY_EFFECTS: &[(&str, &str, KeyEffect)] = &[
    ("Orchestration", "SchemaVersion", Annotation),
    ("Orchestration", "Name", Acts),
    ("Orchestration", "Description", Annotation),
    ("Orchestration", "SystemPromptPath", Inert("fuseraft does not implement a system prompt shared by all agents yet")),
    ("Orchestration", "SystemPrompt", Inert("fuseraft does not implement a system prompt shared by all agents yet")),
    ("Orchestration", "Models", Acts),
    ("Orchestration", "Agents", Acts),
    ("Orchestration", "Selection", Acts),
    ("Orchestration", "Termination", Acts),
    ("Orchestration", "Security", Acts),
    ("Orchestration", "MaxTotalTokens", Acts),
    ("Orchestration", "MaxTotalCost", Acts),
    ("Orchestration", "WarnTurnTokens", Inert("fuseraft does not implement per-turn token warnings yet")),
    ("Orchestration", "ContextBudget", Inert(CONTEXT_BUDGET)),
    ("Orchestration", "McpServers", Acts),
    ("Orchestration", "Compaction", Acts),
    ("Orchestration", "Validation", Acts),
    ("Orchestration", "ChangeTracking", Acts),
    ("Orchestration", "Scratchpad", Inert("the `Scratchpad` plugin keeps its notes in the run's state and reads no options")),
    ("Orchestration", "Events", Inert("fuseraft writes events where `fuseraft exec --events` says")),
    ("Orchestration", "Chatroom", Acts),
    ("Orchestration", "Telemetry", Acts),
    ("Orchestration", "Checkpoint", Inert(CHECKPOINT)),
    ("Orchestration", "ApiProfiles", Acts),
    ("Orchestration", "Saga", Inert("fuseraft does not implement saga compensation yet")),
    ("Orchestration", "EvidenceStore", Inert("fuseraft keeps evidence in the run's state and its change log")),
    ("Orchestration", "Contracts", Acts),
    ("Orchestration", "Verifier", Acts),
    ("Orchestration", "FailureHandling", Acts),
    ("Orchestration", "Brownfield", Inert(BROWNFIELD)),
    ("Orchestration", "TestSelector", Acts),
    ("Orchestration", "SkillCuration", Inert("fuseraft does not implement skill curation yet")),
    ("Orchestration", "Memory", Acts),
    ("Orchestration", "Output", Inert("fuseraft's output format is chosen on the command line (`--json`)")),
    ("Orchestration", "RoutingInstructions", Acts),
    // An agent.
    ("Agent", "Name", Acts),
    ("Agent", "Instructions", Acts),
    ("Agent", "Description", Acts),
    ("Agent", "Model", Acts),
    ("Agent", "Plugins", Acts),
    ("Agent", "FunctionChoice", Acts),
    ("Agent", "TrustScore", Inert("fuseraft does not implement trust scores yet")),
    ("Agent", "Capabilities", Acts),
    ("Agent", "ContextWindow", Acts),
    ("Agent", "Context", Acts),
    ("Agent", "Isolation", Acts),
    ("Agent", "SkipExecutionState", Inert("fuseraft does not implement the execution-state block yet")),
    ("Agent", "MaxToolCallsPerTurn", Inert(IN_TURN)),
    ("Agent", "MaxInTurnContextTokens", Inert(IN_TURN)),
    ("Agent", "MaxInTurnToolPairs", Inert(IN_TURN)),
    ("Agent", "KnowledgeWeight", Inert("fuseraft does not implement knowledge weighting yet")),
    ("Agent", "SubAgentModel", Acts),
    ("Agent", "SubAgentPlugins", Acts),
    ("Agent", "SubAgentMaxToolCalls", Acts),
    ("Agent", "Produces", Inert("fuseraft does not implement artifact declarations yet")),
    ("Agent", "Requires", Inert("fuseraft does not implement artifact declarations yet")),
    ("Agent", "RemoteAgent", Inert("fuseraft does not implement remote agents yet")),
    ("Agent", "AgentFile", Acts),
    ("Agent", "EnableMemory", Acts),
    // A model (`Models` entries, an agent's or a manager's `Model`).
    ("Model", "ModelId", Acts),
    ("Model", "Endpoint", Acts),
    ("Model", "ApiKey", Acts),
    ("Model", "ApiKeyEnvVar", Acts),
    ("Model", "Provider", Acts),
    ("Model", "MaxTokens", Acts),
    ("Model", "Temperature", Acts),
    ("Model", "ReasoningEffort", Acts),
    ("Model", "MaxContextTokens", Acts),
    ("Model", "Pricing", Acts),
    ("Model", "ConnectTimeoutSeconds", Acts),
    ("Model", "IdleTimeoutSeconds", Acts),
    ("Model", "TimeoutSeconds", Acts),
    ("Pricing", "InputPerMillion", Acts),
    ("Pricing", "OutputPerMillion", Acts),
    ("Pricing", "CachedInputPerMillion", Acts),
    ("ContextWindow", "TextOnly", Acts),
    ("ContextWindow", "ExcludeAgents", Acts),
    ("ContextWindow", "MaxTailMessages", Acts),
    ("ContextWindow", "ContextCapFraction", Acts),
    ("ContextWindow", "MaxTurnAge", Acts),
    ("ContextWindow", "MaxToolResultChars", Acts),
    ("ContextWindow", "MaxReplayChars", Acts),
    ("ContextWindow", "ToolResultCharOverrides", Acts),
    ("ContextSource", "Source", Acts),
    ("ContextSource", "MaxChars", Acts),
    ("ContextSource", "Label", Acts),
    ("Termination", "Type", Acts),
    ("Termination", "Pattern", Acts),
    ("Termination", "MaxIterations", Acts),
    ("Termination", "AgentNames", Acts),
    ("Termination", "Strategies", Acts),
    ("Termination", "Validators", Acts),
    ("Termination", "Condition", Acts),
    ("Termination", "MaxTokens", Acts),
    ("Contract", "Name", Acts),
    ("Contract", "Requires", Acts),
    ("Contract", "Description", Annotation),
    ("Predicate", "Type", Acts),
    ("Predicate", "Source", Acts),
    ("Predicate", "Field", Acts),
    ("Predicate", "Path", Acts),
    ("Predicate", "Pattern", Acts),
    ("Predicate", "PatternSource", Acts),
    ("Predicate", "PatternField", Acts),
    ("Predicate", "NoFailures", Acts),
    ("Predicate", "HasAssertions", Acts),
    ("FailureHandling", "MissingEvidence", Acts),
    ("FailureHandling", "InvalidTransition", Acts),
    ("FailureHandling", "ConflictingEvidence", Acts),
    ("FailureHandling", "NoProgress", Acts),
    ("FailureHandling", "MaxConsecutiveTurnsWithoutSignal", Acts),
    ("FailureHandling", "MaxConsecutiveContractFailures", Acts),
    ("FailureRule", "Action", Acts),
    ("FailureRule", "Threshold", Acts),
    // Setting sections: each key a dotted setting the VM (or the lowering) reads, or not.
    ("Validation", "BriefPath", Acts),
    ("Validation", "TestReportPath", Acts),
    ("Validation", "ChangeLogPath", Acts),
    ("Validation", "TestAssertionPatterns", Acts),
    ("Security", "FileSystemSandboxPath", Acts),
    ("Security", "HttpAllowedHosts", Acts),
    ("Security", "DenyRead", Acts),
    ("Security", "AllowPrivateHosts", Acts),
    ("Security", "ReadFileSizeLimit", Acts),
    ("Security", "ChangeEnvelope", Acts),
    ("Security", "FileSystemPermissions", Inert("fuseraft's file permissions are set by `Security.Permissions`")),
    ("Security", "ShellPolicy", Inert("fuseraft's command permissions are set by `Security.Permissions` and the OS sandbox by `Security.Sandbox`")),
    ("Security", "DenyCredentialFiles", Inert("fuseraft always denies credential files; this cannot turn it off")),
    ("Security", "Permissions", Acts),
    ("Security", "Sandbox", Acts),
    ("TestSelector", "FindRelatedCommand", Acts),
    ("TestSelector", "FullSuiteCommand", Acts),
    ("ChangeTracking", "Path", Acts),
    ("ChangeTracking", "IntentLogPath", Inert("fuseraft does not implement the intent log yet")),
    ("EvidenceStore", "Path", Inert("fuseraft keeps evidence in the run's state and its change log")),
    ("Events", "Path", Inert("fuseraft writes events where `fuseraft exec --events` says")),
    ("Chatroom", "Path", Acts),
    ("Checkpoint", "Mode", Inert(CHECKPOINT)),
    ("Checkpoint", "Path", Inert(CHECKPOINT)),
    // Read by `fuseraft exec` (`src/telemetry/`): where the run's trace goes, and whether
    // its spans carry prompt and completion text.
    ("Telemetry", "OtlpEndpoint", Acts),
    ("Telemetry", "CaptureContent", Acts),
    ("Memory", "Provider", Acts),
    ("Memory", "Webhook", Acts),
    ("Output", "Json", Inert("fuseraft's output format is chosen on the command line (`--json`)")),
    ("Verifier", "AgentName", Acts),
    ("Verifier", "EveryNTurns", Acts),
    ("Verifier", "TriggerOnSuspiciousTransition", Acts),
    ("Verifier", "FindingsKeyword", Acts),
    ("Compaction", "TriggerTurnCount", Acts),
    ("Compaction", "KeepRecentTurns", Acts),
    ("Compaction", "Model", Acts),
    ("Compaction", "Mode", Acts),
    ("Compaction", "TokenBudget", Acts),
    ("Compaction", "IncludeReasoning", Inert(COMPACTION)),
    ("Compaction", "IncludeSymbolGraph", Inert(COMPACTION)),
    ("Compaction", "IncludeExploration", Inert(COMPACTION)),
    ("Compaction", "PinLastRoutingSignal", Acts),
    ("Compaction", "SummaryTemplate", Inert(COMPACTION)),
    ("Compaction", "MaxCharsPerHistoryMessage", Acts),
    ("Compaction", "AntiThrashMinSavingsRatio", Acts),
    ("Compaction", "AntiThrashWindow", Acts),
    ("ContextBudget", "WarnAt", Inert(CONTEXT_BUDGET)),
    ("ContextBudget", "CutoverAt", Inert(CONTEXT_BUDGET)),
    ("ContextBudget", "MaxSingleTurnInputTokens", Inert(CONTEXT_BUDGET)),
    ("ContextBudget", "MaxToolResultTokens", Inert(CONTEXT_BUDGET)),
    ("Brownfield", "EntryPoints", Inert(BROWNFIELD)),
    ("Brownfield", "DiscoveryBriefPath", Inert(BROWNFIELD)),
    ("Brownfield", "ConventionProfilePath", Inert(BROWNFIELD)),
    ("Brownfield", "SeedEnvelopeFromBrief", Inert(BROWNFIELD)),
    // `Selection` and its blocks.
    ("Selection", "Type", Acts),
    ("Selection", "Prompt", Acts),
    ("Selection", "Model", Acts),
    ("Selection", "Routes", Acts),
    ("Selection", "StructuredRoutes", Acts),
    ("Selection", "DefaultAgent", Acts),
    ("Selection", "Magentic", Acts),
    ("Selection", "StateMachine", Acts),
    ("Selection", "Graph", Acts),
    ("Selection", "Adversarial", Acts),
    ("Selection", "MapReduce", Acts),
    ("Selection", "ScatterGather", Acts),
    ("Route", "Keyword", Acts),
    ("Route", "Agent", Acts),
    ("Route", "Validator", Acts),
    ("Route", "Validators", Acts),
    ("Route", "SourceAgents", Acts),
    ("Route", "RequiredCommandPattern", Acts),
    ("Route", "ShellFallbackPattern", Acts),
    ("Route", "RequireHumanApproval", Acts),
    ("Route", "Condition", Acts),
    ("Route", "PreferStructuredOutput", Acts),
    ("Route", "RecoveryAgent", Acts),
    ("Route", "Contracts", Acts),
    ("StructuredRoute", "Agent", Acts),
    ("StructuredRoute", "Condition", Acts),
    ("StructuredRoute", "SourceAgents", Acts),
    ("Condition", "Field", Acts),
    ("Condition", "Is", Acts),
    ("Condition", "IsNot", Acts),
    ("Condition", "Contains", Acts),
    ("Condition", "Exists", Acts),
    ("StateMachine", "Initial", Acts),
    ("StateMachine", "States", Acts),
    ("State", "Agent", Acts),
    ("State", "Transitions", Acts),
    ("State", "Terminal", Acts),
    ("Transition", "To", Acts),
    ("Transition", "Signal", Acts),
    ("Transition", "Contract", Acts),
    ("Transition", "Contracts", Acts),
    ("Transition", "SourceAgents", Acts),
    ("Transition", "RecoveryAgent", Acts),
    ("Transition", "Parallel", Acts),
    ("Transition", "Targets", Acts),
    ("Transition", "Merge", Acts),
    ("Transition", "HandoffContext", Acts),
    ("Transition", "MaxRevisits", Acts),
    ("Transition", "ReviewArtifactPath", Acts),
    ("Merge", "Strategy", Acts),
    ("Merge", "Agent", Acts),
    ("Graph", "Nodes", Acts),
    ("Graph", "Edges", Acts),
    ("Graph", "EntryNode", Acts),
    ("Graph", "MaxRetries", Acts),
    ("Graph", "MaxTotalTurnsMultiplier", Acts),
    ("Graph", "SubGraphs", Inert("fuseraft does not implement sub-graphs yet")),
    ("GraphNode", "Id", Acts),
    ("GraphNode", "Agent", Acts),
    ("GraphNode", "Terminal", Acts),
    ("GraphNode", "Parallel", Acts),
    ("GraphNode", "SubGraphId", Reported(Code::UnsupportedFeature)),
    ("GraphNode", "Validators", Acts),
    ("GraphEdge", "From", Acts),
    ("GraphEdge", "To", Acts),
    ("GraphEdge", "Keyword", Acts),
    ("GraphEdge", "Validator", Acts),
    ("GraphEdge", "Validators", Acts),
    ("GraphEdge", "RequiredCommandPattern", Acts),
    ("GraphEdge", "ShellFallbackPattern", Acts),
    ("GraphEdge", "SourceAgents", Acts),
    ("GraphEdge", "RequireHumanApproval", Acts),
    ("GraphEdge", "RecoveryAgent", Acts),
    ("Adversarial", "Stages", Acts),
    ("Adversarial", "Rounds", Acts),
    ("Adversarial", "PassKeyword", Acts),
    ("AdversarialStage", "Generator", Acts),
    ("AdversarialStage", "Critic", Acts),
    ("AdversarialStage", "Label", Acts),
    ("Magentic", "Model", Acts),
    ("Magentic", "Instructions", Acts),
    ("Magentic", "MaxRoundCount", Acts),
    ("Magentic", "MaxStallCount", Acts),
    ("Magentic", "MaxResetCount", Acts),
    ("Magentic", "EnablePlanReview", Acts),
    ("MapReduce", "Splitter", Acts),
    ("MapReduce", "Mapper", Acts),
    ("MapReduce", "Reducer", Acts),
    ("MapReduce", "ItemsJsonPath", Acts),
    ("MapReduce", "MaxConcurrency", Inert(CONCURRENCY)),
    ("MapReduce", "MaxSplitterRetries", Inert("fuseraft does not retry the splitter yet")),
    ("ScatterGather", "Participants", Acts),
    ("ScatterGather", "Synthesizer", Acts),
    ("ScatterGather", "MaxConcurrency", Inert(CONCURRENCY)),
    ("McpServer", "Name", Acts),
    ("McpServer", "Transport", Acts),
    ("McpServer", "Command", Acts),
    ("McpServer", "Args", Acts),
    ("McpServer", "Env", Acts),
    ("McpServer", "WorkingDirectory", Acts),
    ("McpServer", "Url", Acts),
    ("McpServer", "Headers", Acts),
    ("McpServer", "TransportMode", Acts),
    ("McpServer", "OAuth", Reported(Code::IgnoredSection)),
    ("McpServer", "TimeoutSeconds", Acts),
];

/// Every key table of the fuseraft config readers, by the name [`KEY_EFFECTS`] uses.
pub fn key_tables() -> Vec<(&'static str, &'static [&'static str])> {
    let mut tables: Vec<(&'static str, &'static [&'static str])> = vec![
        ("Orchestration", config::ROOT_KEYS),
        ("Agent", config::AGENT_KEYS),
        ("Model", config::MODEL_KEYS),
        ("Pricing", super::model_limits::PRICING_KEYS),
        ("ContextWindow", config::CONTEXT_WINDOW_KEYS),
        ("ContextSource", config::CONTEXT_SOURCE_KEYS),
        ("Termination", config::TERMINATION_KEYS),
        ("Contract", config::CONTRACT_KEYS),
        ("Predicate", config::PREDICATE_KEYS),
        ("FailureHandling", config::FAILURE_KEYS),
        ("FailureRule", config::FAILURE_RULE_KEYS),
        ("Selection", sel::SELECTION_KEYS),
        ("Route", sel::ROUTE_KEYS),
        ("StructuredRoute", sel::STRUCTURED_ROUTE_KEYS),
        ("Condition", sel::CONDITION_KEYS),
        ("StateMachine", sel::STATE_MACHINE_KEYS),
        ("State", sel::STATE_KEYS),
        ("Transition", sel::TRANSITION_KEYS),
        ("Merge", sel::MERGE_KEYS),
        ("Graph", sel::GRAPH_KEYS),
        ("GraphNode", sel::NODE_KEYS),
        ("GraphEdge", sel::EDGE_KEYS),
        ("Adversarial", sel::ADVERSARIAL_KEYS),
        ("AdversarialStage", sel::STAGE_KEYS),
        ("Magentic", sel::MAGENTIC_KEYS),
        ("MapReduce", sel::MAP_REDUCE_KEYS),
        ("ScatterGather", sel::SCATTER_GATHER_KEYS),
        ("McpServer", MCP_SERVER_KEYS),
    ];
    tables.extend(config::SETTING_SECTIONS.iter().copied());
    tables
}

/// Where a key leads to another table: `(table, key, child table, shape)`. The walk of
/// `FR007` follows these from `Orchestration`.
pub const NESTING: &[(&str, &str, &str, Shape)] = &[
    ("Orchestration", "Models", "Model", Shape::Named),
    ("Orchestration", "Agents", "Agent", Shape::List),
    ("Orchestration", "Selection", "Selection", Shape::Map),
    ("Orchestration", "McpServers", "McpServer", Shape::List),
    ("Agent", "Model", "Model", Shape::Map),
    ("Model", "Pricing", "Pricing", Shape::Map),
    ("Agent", "ContextWindow", "ContextWindow", Shape::Map),
    ("Selection", "Model", "Model", Shape::Map),
    ("Selection", "Graph", "Graph", Shape::Map),
    ("Selection", "Magentic", "Magentic", Shape::Map),
    ("Selection", "MapReduce", "MapReduce", Shape::Map),
    ("Selection", "ScatterGather", "ScatterGather", Shape::Map),
    ("Graph", "Nodes", "GraphNode", Shape::List),
    ("Magentic", "Model", "Model", Shape::Map),
];

/// Where `(table, key)` leads, when it leads to a table: the setting sections (by their
/// own name) and [`NESTING`].
pub fn child(table: &str, key: &str) -> Option<(&'static str, Shape)> {
    if table == "Orchestration" {
        if let Some((name, _)) = config::SETTING_SECTIONS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
        {
            return Some((name, Shape::Map));
        }
    }
    NESTING
        .iter()
        .find(|(parent, written, _, _)| *parent == table && written.eq_ignore_ascii_case(key))
        .map(|(_, _, child, shape)| (*child, *shape))
}

/// The effect of `key` (as written, any case) in `table`; `None` for a key the table does
/// not know (reported as `FR001`).
pub fn effect(table: &str, key: &str) -> Option<(&'static str, KeyEffect)> {
    KEY_EFFECTS
        .iter()
        .find(|(owner, known, _)| *owner == table && known.eq_ignore_ascii_case(key))
        .map(|(_, known, effect)| (*known, *effect))
}

/// Upstream plugins fuseraft will not run (out of scope, docs/security.md): listing one is
/// an error, with the reason.
pub const OUT_OF_SCOPE_PLUGINS: &[(&str, &str)] = &[];

#[cfg(test)]
#[path = "key_effects_tests.rs"]
mod tests;
