//! The JSON Schema of a fuseraft config (`fuseraft schema`), for editors (the YAML language
//! server) and CI. Each section lists exactly the keys its reader checks keys against (the
//! same tables), so the schema cannot drift from the syntax; the value types follow the
//! readers: scalars are text that YAML may write as numbers or booleans, whole numbers and
//! booleans may be quoted, lists and sections may be left empty (`null`).

use serde_json::{json, Map, Value};

use super::fuseraft as config;
use super::key_effects::{effect, KeyEffect};
use super::schema_required::requirements;
use super::schema_values as values;
use super::schema_values::Closed;
use super::selection as sel;

/// A value's shape.
pub(crate) enum Ty {
    /// A scalar read as text.
    Text,
    /// A non-negative whole number.
    Whole,
    /// A number (temperatures, fractions).
    Number,
    /// `true` or `false`.
    Flag,
    /// A list of scalars.
    Texts,
    /// A mapping with the section's keys.
    Section(&'static Section),
    /// A list of mappings with the section's keys.
    Sections(&'static Section),
    /// A scalar shorthand or a mapping with the section's keys (`Model: fast`).
    TextOr(&'static Section),
    /// A list of context sources: scalars (`file:PATH`, `session_context`) or mappings with
    /// the section's keys (`Context`, `HandoffContext`).
    Sources(&'static Section),
    /// One value of a closed set.
    Name(&'static Closed),
    /// A list of values of a closed set.
    Names(&'static Closed),
    /// A path relative to the work dir, which may not leave it.
    Path,
    /// A decimal in 0.0–1.0.
    Fraction,
    /// A shape of its own (`Capabilities`, `Security.Permissions`).
    Custom(fn() -> Value),
    /// A mapping of names the author chooses to values of one shape.
    Named(&'static Ty),
    /// A list of values of one shape.
    ListOf(&'static Ty),
    /// Either shape.
    Either(&'static Ty, &'static Ty),
    /// A one-key mapping naming one of `kinds`, whose value has the section's keys
    /// (`- FileExists: { Path: brief.json }`).
    OneKey(&'static Closed, &'static Section),
}

/// One mapping of the config: its name in `$defs`, the keys it accepts (the reader's
/// table) and the types of those whose shape is known (the others take any value: they are
/// read elsewhere, or not at all, which `check` reports).
pub(crate) struct Section {
    pub name: &'static str,
    pub keys: &'static [&'static str],
    pub types: &'static [(&'static str, Ty)],
}

use Ty::*;

pub(crate) static MODEL: Section = Section {
    name: "Model",
    keys: config::MODEL_KEYS,
    types: &[
        ("ModelId", Text),
        ("Endpoint", Text),
        ("ApiKey", Text),
        ("ApiKeyEnvVar", Text),
        ("Provider", Text),
        ("MaxTokens", Whole),
        ("Temperature", Number),
        ("ReasoningEffort", Text),
        ("MaxContextTokens", Whole),
        ("Pricing", Section(&PRICING)),
        ("ConnectTimeoutSeconds", Number),
        ("IdleTimeoutSeconds", Number),
        ("TimeoutSeconds", Number),
    ],
};

pub(crate) static PRICING: Section = Section {
    name: "Pricing",
    keys: super::model_limits::PRICING_KEYS,
    types: &[
        ("InputPerMillion", Number),
        ("OutputPerMillion", Number),
        ("CachedInputPerMillion", Number),
    ],
};

static CONTEXT_SOURCE: Section = Section {
    name: "ContextSource",
    keys: config::CONTEXT_SOURCE_KEYS,
    types: &[
        ("Source", Custom(values::context_source)),
        ("MaxChars", Whole),
        ("Label", Text),
    ],
};

static CONTEXT_WINDOW: Section = Section {
    name: "ContextWindow",
    keys: config::CONTEXT_WINDOW_KEYS,
    types: &[
        ("TextOnly", Flag),
        ("ExcludeAgents", Texts),
        ("MaxTailMessages", Whole),
        ("ContextCapFraction", Fraction),
        ("MaxTurnAge", Whole),
        ("MaxToolResultChars", Whole),
        ("MaxReplayChars", Whole),
        ("ToolResultCharOverrides", Custom(values::tool_overrides)),
    ],
};

static AGENT: Section = Section {
    name: "Agent",
    keys: config::AGENT_KEYS,
    types: &[
        ("Name", Text),
        ("Instructions", Text),
        ("Description", Text),
        ("Model", TextOr(&MODEL)),
        ("Plugins", Texts),
        ("FunctionChoice", Name(&values::FUNCTION_CHOICES)),
        ("TrustScore", Number),
        ("Capabilities", Custom(values::capabilities)),
        ("ContextWindow", Section(&CONTEXT_WINDOW)),
        ("Context", Sources(&CONTEXT_SOURCE)),
        ("Isolation", Name(&values::ISOLATIONS)),
        ("MaxToolCallsPerTurn", Whole),
        ("SubAgentMaxToolCalls", Whole),
        ("SubAgentPlugins", Names(&values::PLUGINS)),
        ("AgentFile", Path),
        ("EnableMemory", Flag),
    ],
};

static CONDITION: Section = Section {
    name: "Condition",
    keys: sel::CONDITION_KEYS,
    types: &[
        ("Field", Text),
        ("Is", Text),
        ("IsNot", Text),
        ("Contains", Text),
        ("Exists", Flag),
    ],
};

static TERMINATION: Section = Section {
    name: "Termination",
    keys: config::TERMINATION_KEYS,
    types: &[
        ("Type", Name(&values::TERMINATION_TYPES)),
        ("Pattern", Text),
        ("MaxIterations", Whole),
        ("AgentNames", Texts),
        ("Strategies", Sections(&TERMINATION)),
        ("Validators", Names(&values::VALIDATORS)),
        ("Condition", TextOr(&CONDITION)),
        ("MaxTokens", Whole),
    ],
};

static PREDICATE: Section = Section {
    name: "Predicate",
    keys: config::PREDICATE_KEYS,
    types: &[
        ("Type", Name(&values::PREDICATE_TYPES)),
        ("Source", Path),
        ("Field", Text),
        ("Path", Path),
        ("Pattern", Text),
        ("PatternSource", Path),
        ("PatternField", Text),
        ("NoFailures", Flag),
        ("HasAssertions", Flag),
    ],
};

static CONTRACT: Section = Section {
    name: "Contract",
    keys: config::CONTRACT_KEYS,
    types: &[
        ("Name", Text),
        (
            "Requires",
            ListOf(&Either(
                &Section(&PREDICATE),
                &OneKey(&values::PREDICATE_TYPES, &PREDICATE),
            )),
        ),
        ("Description", Text),
    ],
};

static FAILURE_RULE: Section = Section {
    name: "FailureRule",
    keys: config::FAILURE_RULE_KEYS,
    types: &[
        ("Action", Name(&values::FAILURE_ACTIONS)),
        ("Threshold", Whole),
    ],
};

static FAILURE: Section = Section {
    name: "FailureHandling",
    keys: config::FAILURE_KEYS,
    types: &[
        ("MissingEvidence", Section(&FAILURE_RULE)),
        ("InvalidTransition", Section(&FAILURE_RULE)),
        ("ConflictingEvidence", Section(&FAILURE_RULE)),
        ("NoProgress", Section(&FAILURE_RULE)),
        ("MaxConsecutiveTurnsWithoutSignal", Whole),
        ("MaxConsecutiveContractFailures", Whole),
    ],
};

static ROUTE: Section = Section {
    name: "Route",
    keys: sel::ROUTE_KEYS,
    types: &[
        ("Keyword", Text),
        ("Agent", Text),
        ("Validator", Name(&values::VALIDATORS)),
        ("Validators", Names(&values::VALIDATORS)),
        ("SourceAgents", Texts),
        ("RequiredCommandPattern", Text),
        ("ShellFallbackPattern", Text),
        ("RequireHumanApproval", Flag),
        ("Condition", TextOr(&CONDITION)),
        ("PreferStructuredOutput", Flag),
        ("RecoveryAgent", Text),
        ("Contracts", Texts),
    ],
};

static STRUCTURED_ROUTE: Section = Section {
    name: "StructuredRoute",
    keys: sel::STRUCTURED_ROUTE_KEYS,
    types: &[
        ("Agent", Text),
        ("Condition", TextOr(&CONDITION)),
        ("SourceAgents", Texts),
    ],
};

static MERGE: Section = Section {
    name: "Merge",
    keys: sel::MERGE_KEYS,
    types: &[("Strategy", Name(&values::MERGES)), ("Agent", Text)],
};

static TRANSITION: Section = Section {
    name: "Transition",
    keys: sel::TRANSITION_KEYS,
    types: &[
        ("To", Text),
        ("Signal", Text),
        ("Contract", Text),
        ("Contracts", Texts),
        ("SourceAgents", Texts),
        ("RecoveryAgent", Text),
        ("Parallel", Flag),
        ("Targets", Texts),
        ("Merge", Section(&MERGE)),
        ("HandoffContext", Sources(&CONTEXT_SOURCE)),
        ("MaxRevisits", Whole),
        ("ReviewArtifactPath", Path),
    ],
};

static STATE: Section = Section {
    name: "State",
    keys: sel::STATE_KEYS,
    types: &[
        ("Agent", Text),
        ("Transitions", Sections(&TRANSITION)),
        ("Terminal", Flag),
    ],
};

static STATE_MACHINE: Section = Section {
    name: "StateMachine",
    keys: sel::STATE_MACHINE_KEYS,
    types: &[("Initial", Text), ("States", Named(&Section(&STATE)))],
};

static NODE: Section = Section {
    name: "GraphNode",
    keys: sel::NODE_KEYS,
    types: &[
        ("Id", Text),
        ("Agent", Text),
        ("Terminal", Flag),
        ("Parallel", Flag),
        ("SubGraphId", Text),
        ("Validators", Names(&values::VALIDATORS)),
    ],
};

static EDGE: Section = Section {
    name: "GraphEdge",
    keys: sel::EDGE_KEYS,
    types: &[
        ("From", Text),
        ("To", Text),
        ("Keyword", Text),
        ("Validator", Name(&values::VALIDATORS)),
        ("Validators", Names(&values::VALIDATORS)),
        ("RequiredCommandPattern", Text),
        ("ShellFallbackPattern", Text),
        ("SourceAgents", Texts),
        ("RequireHumanApproval", Flag),
        ("RecoveryAgent", Text),
    ],
};

static GRAPH: Section = Section {
    name: "Graph",
    keys: sel::GRAPH_KEYS,
    types: &[
        ("Nodes", Sections(&NODE)),
        ("Edges", Sections(&EDGE)),
        ("EntryNode", Text),
        ("MaxRetries", Whole),
        ("MaxTotalTurnsMultiplier", Whole),
    ],
};

static STAGE: Section = Section {
    name: "AdversarialStage",
    keys: sel::STAGE_KEYS,
    types: &[("Generator", Text), ("Critic", Text), ("Label", Text)],
};

static ADVERSARIAL: Section = Section {
    name: "Adversarial",
    keys: sel::ADVERSARIAL_KEYS,
    types: &[
        ("Stages", Sections(&STAGE)),
        ("Rounds", Whole),
        ("PassKeyword", Text),
    ],
};

static MAGENTIC: Section = Section {
    name: "Magentic",
    keys: sel::MAGENTIC_KEYS,
    types: &[
        ("Model", TextOr(&MODEL)),
        ("Instructions", Text),
        ("MaxRoundCount", Whole),
        ("MaxStallCount", Whole),
        ("MaxResetCount", Whole),
        ("EnablePlanReview", Flag),
    ],
};

static MAP_REDUCE: Section = Section {
    name: "MapReduce",
    keys: sel::MAP_REDUCE_KEYS,
    types: &[
        ("Splitter", Text),
        ("Mapper", Text),
        ("Reducer", Text),
        ("ItemsJsonPath", Text),
        ("MaxConcurrency", Whole),
        ("MaxSplitterRetries", Whole),
    ],
};

static SCATTER_GATHER: Section = Section {
    name: "ScatterGather",
    keys: sel::SCATTER_GATHER_KEYS,
    types: &[
        ("Participants", Texts),
        ("Synthesizer", Text),
        ("MaxConcurrency", Whole),
    ],
};

static SELECTION: Section = Section {
    name: "Selection",
    keys: sel::SELECTION_KEYS,
    types: &[
        ("Type", Name(&values::SELECTION_TYPES)),
        ("Prompt", Text),
        ("Model", TextOr(&MODEL)),
        ("Routes", Sections(&ROUTE)),
        ("StructuredRoutes", Sections(&STRUCTURED_ROUTE)),
        ("DefaultAgent", Text),
        ("Magentic", Section(&MAGENTIC)),
        ("StateMachine", Section(&STATE_MACHINE)),
        ("Graph", Section(&GRAPH)),
        ("Adversarial", Section(&ADVERSARIAL)),
        ("MapReduce", Section(&MAP_REDUCE)),
        ("ScatterGather", Section(&SCATTER_GATHER)),
    ],
};

static ORCHESTRATION: Section = Section {
    name: "Orchestration",
    keys: config::ROOT_KEYS,
    types: &[
        ("Name", Text),
        ("Description", Text),
        ("SystemPromptPath", Text),
        ("SystemPrompt", Text),
        ("Models", Named(&TextOr(&MODEL))),
        ("Agents", Sections(&AGENT)),
        ("Selection", Section(&SELECTION)),
        ("Termination", Section(&TERMINATION)),
        ("MaxTotalTokens", Whole),
        ("MaxTotalCost", Number),
        ("WarnTurnTokens", Whole),
        ("Contracts", Sections(&CONTRACT)),
        ("FailureHandling", Section(&FAILURE)),
        ("RoutingInstructions", Flag),
        ("McpServers", Sections(&MCP_SERVER)),
        ("ApiProfiles", Named(&Section(&API_PROFILE))),
    ],
};

static MCP_SERVER: Section = Section {
    name: "McpServer",
    keys: super::mcp::MCP_SERVER_KEYS,
    types: &[
        ("Name", Custom(values::mcp_server_name)),
        ("Transport", Name(&values::TRANSPORTS)),
        ("Command", Text),
        ("Args", Texts),
        ("Env", Named(&Text)),
        ("WorkingDirectory", Path),
        ("Url", Text),
        ("Headers", Named(&Text)),
        ("TransportMode", Name(&values::HTTP_MODES)),
        ("TimeoutSeconds", Whole),
    ],
};

static API_PROFILE: Section = Section {
    name: "ApiProfile",
    keys: config::API_PROFILE_KEYS,
    types: &[
        ("BaseUrl", Custom(values::http_url)),
        ("DefaultHeaders", Named(&Text)),
        ("TimeoutSeconds", Custom(values::positive)),
    ],
};

/// Every section with a type table, for the tests that hold the tables to the readers.
pub(crate) fn sections() -> Vec<&'static Section> {
    vec![
        &ORCHESTRATION,
        &MODEL,
        &PRICING,
        &AGENT,
        &CONTEXT_SOURCE,
        &CONTEXT_WINDOW,
        &CONDITION,
        &TERMINATION,
        &PREDICATE,
        &CONTRACT,
        &FAILURE_RULE,
        &FAILURE,
        &SELECTION,
        &ROUTE,
        &STRUCTURED_ROUTE,
        &MERGE,
        &TRANSITION,
        &STATE,
        &STATE_MACHINE,
        &NODE,
        &EDGE,
        &GRAPH,
        &STAGE,
        &ADVERSARIAL,
        &MAGENTIC,
        &MAP_REDUCE,
        &SCATTER_GATHER,
        &MCP_SERVER,
        &API_PROFILE,
    ]
}

fn nullable(mut schema: Value) -> Value {
    if let Some(types) = schema.get_mut("type").and_then(Value::as_array_mut) {
        types.push(json!("null"));
    }
    schema
}

fn reference(section: &Section) -> Value {
    json!({ "$ref": format!("#/$defs/{}", section.name) })
}

fn ty(shape: &Ty) -> Value {
    match shape {
        Text => json!({ "type": ["string", "number", "boolean", "null"] }),
        Whole => json!({
            "type": ["integer", "string", "null"],
            "minimum": 0,
            "pattern": "^\\s*[0-9]+\\s*$",
        }),
        Number => json!({
            "type": ["number", "string", "null"],
            "pattern": "^\\s*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*$",
        }),
        Flag => json!({
            "type": ["boolean", "string", "null"],
            "pattern": "^\\s*([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])\\s*$",
        }),
        Texts => nullable(json!({ "type": ["array"], "items": ty(&Text) })),
        Section(section) => reference(section),
        Sections(section) => json!({ "type": ["array", "null"], "items": reference(section) }),
        TextOr(section) => json!({ "anyOf": [ty(&Text), reference(section)] }),
        Sources(section) => json!({
            "type": ["array", "null"],
            "items": { "anyOf": [values::context_source(), reference(section)] },
        }),
        Name(set) => values::one_of(set),
        Names(set) => json!({ "type": ["array", "null"], "items": values::one_of(set) }),
        Path => values::path(),
        Fraction => values::fraction(),
        Custom(shape) => shape(),
        Named(value) => json!({
            "type": ["object", "null"],
            "additionalProperties": ty(value),
        }),
        ListOf(item) => json!({ "type": ["array", "null"], "items": ty(item) }),
        Either(first, second) => json!({ "anyOf": [ty(first), ty(second)] }),
        OneKey(kinds, section) => json!({
            "type": "object",
            "minProperties": 1,
            "maxProperties": 1,
            "propertyNames": { "pattern": values::pattern(kinds) },
            "additionalProperties": reference(section),
        }),
    }
}

fn definition(section: &Section) -> Value {
    let mut properties = Map::new();
    for key in section.keys {
        let shape = section
            .types
            .iter()
            .find(|(typed, _)| typed == key)
            .map_or_else(|| json!({}), |(_, shape)| ty(shape));
        properties.insert((*key).to_string(), mark_inert(section.name, key, shape));
    }
    // A section left empty (`ContextWindow:`) is `null`, which the readers take as absent.
    let mut out = Map::new();
    out.insert("type".into(), json!(["object", "null"]));
    out.insert("properties".into(), Value::Object(properties));
    out.insert("additionalProperties".into(), json!(false));
    out.extend(requirements(section.name));
    Value::Object(out)
}

/// The sections read only for settings (`Security`, `Validation`, ...): their keys, with
/// the values fuseraft judges typed (`schema_values::setting`), any others open.
fn setting_definition(section: &str, keys: &[&str]) -> Value {
    let properties: Map<String, Value> = keys
        .iter()
        .map(|key| {
            let shape = values::setting(section, key).unwrap_or_else(|| json!({}));
            ((*key).to_string(), mark_inert(section, key, shape))
        })
        .collect();
    json!({ "type": ["object", "null"], "properties": properties, "additionalProperties": false })
}

/// A key fuseraft parses but does not act on (`FR007`) is `deprecated`, with the reason, so
/// an editor strikes it through.
fn mark_inert(section: &str, key: &str, mut schema: Value) -> Value {
    if let Some((_, KeyEffect::Inert(why))) = effect(section, key) {
        if let Some(object) = schema.as_object_mut() {
            object.insert("deprecated".into(), json!(true));
            object.insert(
                "description".into(),
                json!(format!(
                    "Parsed for compatibility with upstream fuseraft-cli; no effect: {why}."
                )),
            );
        }
    }
    schema
}

/// The JSON Schema (draft 2020-12) of a fuseraft config file.
pub fn json_schema() -> Value {
    let mut defs = Map::new();
    for section in sections() {
        defs.insert(section.name.to_string(), definition(section));
    }
    let mut root = definition(&ORCHESTRATION);
    if let Some(properties) = root.get_mut("properties").and_then(Value::as_object_mut) {
        for (name, keys) in config::SETTING_SECTIONS {
            let section = mark_inert("Orchestration", name, setting_definition(name, keys));
            properties.insert((*name).to_string(), section);
        }
    }
    defs.insert(ORCHESTRATION.name.to_string(), root);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "fuseraft config",
        "description": "A fuseraft workflow config (upstream fuseraft-cli's format). Keys are matched case-insensitively by fuseraft; this schema lists their canonical spelling.",
        "type": "object",
        "properties": { "Orchestration": { "$ref": "#/$defs/Orchestration" } },
        "required": ["Orchestration"],
        "$defs": defs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_typed_key_is_a_key_its_reader_accepts() {
        for section in sections() {
            for (key, _) in section.types {
                assert!(
                    section.keys.contains(key),
                    "`{key}` is typed in `{}` but its reader does not accept it",
                    section.name
                );
            }
        }
    }

    #[test]
    fn inert_keys_are_deprecated_with_their_reason() {
        let schema = json_schema();
        let defs = &schema["$defs"];
        let budget = &defs["Orchestration"]["properties"]["ContextBudget"];
        assert_eq!(budget["deprecated"], json!(true));
        let why = budget["description"].as_str().unwrap_or_default();
        assert!(why.contains("token-budget"), "{why}");
        assert!(
            defs["Orchestration"]["properties"]["Compaction"]
                .get("deprecated")
                .is_none(),
            "compaction acts"
        );
        let trust = &defs["Agent"]["properties"]["TrustScore"];
        assert_eq!(trust["deprecated"], json!(true));
        let denial =
            &defs["Orchestration"]["properties"]["Security"]["properties"]["DenyCredentialFiles"];
        assert_eq!(denial["deprecated"], json!(true));
        let hosts =
            &defs["Orchestration"]["properties"]["Security"]["properties"]["HttpAllowedHosts"];
        assert!(
            hosts.get("deprecated").is_none(),
            "the Http plugin reads it"
        );
        // Keys that act, and annotations, are not.
        assert!(defs["Agent"]["properties"]["Plugins"]
            .get("deprecated")
            .is_none());
        assert!(defs["Orchestration"]["properties"]["Description"]
            .get("deprecated")
            .is_none());
        // Every section the registry names is a section of the schema (the names agree).
        for (table, key, effect) in super::super::key_effects::KEY_EFFECTS {
            if !matches!(effect, KeyEffect::Inert(_)) {
                continue;
            }
            let in_defs = defs[*table]["properties"].get(*key).is_some();
            let in_settings = defs["Orchestration"]["properties"][*table]["properties"]
                .get(*key)
                .is_some();
            assert!(
                in_defs || in_settings,
                "`{table}.{key}` is not in the schema"
            );
        }
    }

    #[test]
    fn every_section_reference_is_defined() {
        let schema = json_schema();
        let text = schema.to_string();
        for part in text.split("#/$defs/").skip(1) {
            let name: String = part.chars().take_while(|c| c.is_alphanumeric()).collect();
            assert!(
                schema["$defs"].get(&name).is_some(),
                "`{name}` is not defined"
            );
        }
    }
}
