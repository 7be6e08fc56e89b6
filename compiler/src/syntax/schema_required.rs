//! The keys each section of `fuseraft schema` requires, where the lowering reports their
//! absence (FR002 `missing-required-key`): always (`Agents`, an agent's `Name` unless its
//! `AgentFile` names it, an MCP server's `Name`), or by the section's `Type` or `Transport`
//! (a `regex` termination's `Pattern`, a `keyword` selection's route `Keyword`, the block a
//! selection type reads, a `stdio` server's `Command`), written as `if`/`then`.

use serde_json::{json, Map, Value};

use crate::ir::SelectionKind;

/// The `Selection` block a selection type reads (`missing_block` in the lowering).
fn block(kind: SelectionKind) -> Option<&'static str> {
    match kind {
        SelectionKind::StateMachine => Some("StateMachine"),
        SelectionKind::Graph | SelectionKind::Workflow => Some("Graph"),
        SelectionKind::Adversarial => Some("Adversarial"),
        SelectionKind::Magentic => Some("Magentic"),
        SelectionKind::MapReduce => Some("MapReduce"),
        SelectionKind::ScatterGather => Some("ScatterGather"),
        SelectionKind::Sequential
        | SelectionKind::RoundRobin
        | SelectionKind::Keyword
        | SelectionKind::Structured
        | SelectionKind::Llm => None,
    }
}

/// `if` the mapping's `Type` is written as `kind` (trimmed, any case, as the lowering
/// folds it) `then` `then`.
fn when_type(kind: &str, then: Value) -> Value {
    json!({ "if": written_as("Type", kind), "then": then })
}

/// A mapping whose `key` is written as `value` (trimmed, any case).
fn written_as(key: &str, value: &str) -> Value {
    let folded: String = value
        .chars()
        .map(|c| format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase()))
        .collect();
    json!({
        "type": "object",
        "required": [key],
        "properties": { key: { "type": "string", "pattern": format!("^\\s*{folded}\\s*$") } },
    })
}

/// The keywords (`required`, `allOf`) a section adds to its definition.
pub(crate) fn requirements(section: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let (required, conditions): (&[&str], Vec<Value>) = match section {
        "Orchestration" => (&["Agents"], Vec::new()),
        // An agent read from its `AgentFile` takes its name from there.
        "Agent" => (
            &[],
            vec![json!({ "anyOf": [{ "required": ["Name"] }, { "required": ["AgentFile"] }] })],
        ),
        "StateMachine" => (&["States"], Vec::new()),
        "Transition" => (&["To"], Vec::new()),
        "GraphEdge" => (&["From", "To"], Vec::new()),
        "McpServer" => (&["Name"], mcp_transports()),
        "ApiProfile" => (&["BaseUrl"], Vec::new()),
        "Termination" => (
            &[],
            vec![
                when_type("regex", json!({ "required": ["Pattern"] })),
                when_type("composite", json!({ "required": ["Strategies"] })),
                when_type("structured", json!({ "required": ["Condition"] })),
            ],
        ),
        "Selection" => (&[], selection_blocks()),
        _ => (&[], Vec::new()),
    };
    if !required.is_empty() {
        out.insert("required".into(), json!(required));
    }
    if !conditions.is_empty() {
        out.insert("allOf".into(), Value::Array(conditions));
    }
    out
}

/// Each selection type needs its block; a `keyword` selection's routes need `Keyword` and
/// `Agent`.
fn selection_blocks() -> Vec<Value> {
    let mut out: Vec<Value> = SelectionKind::ALL
        .iter()
        .filter_map(|kind| {
            let block = block(*kind)?;
            Some(when_type(kind.as_str(), json!({ "required": [block] })))
        })
        .collect();
    out.push(when_type(
        SelectionKind::Keyword.as_str(),
        json!({
            "properties": {
                "Routes": { "items": { "required": ["Keyword", "Agent"] } },
            },
        }),
    ));
    out
}

/// A `stdio` server (the default) needs its `Command`, an `http` one its `Url`.
fn mcp_transports() -> Vec<Value> {
    let transport = |name: &str| written_as("Transport", name);
    vec![
        json!({
            "if": { "anyOf": [{ "not": { "type": "object", "required": ["Transport"] } }, transport("stdio")] },
            "then": { "required": ["Command"] },
        }),
        json!({ "if": transport("http"), "then": { "required": ["Url"] } }),
    ]
}
