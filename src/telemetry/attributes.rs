//! The attributes of fuseraft's spans: the GenAI semantic conventions' `gen_ai.*` keys,
//! OpenInference's few keys that backends such as Phoenix read (`openinference.span.kind`,
//! `llm.*`, `session.id`), and `fuseraft.*` for the rest of an event's payload.
//!
//! Text a model or the operator wrote (the task, prompts, replies, tool arguments and
//! results) enters only with `Telemetry.CaptureContent: true`; API keys and the environment
//! never do: no attribute is read from either.

use std::collections::HashMap;

use fuseraft_compiler::ir::Program;
use fuseraft_vm::event::EventKind;
use fuseraft_vm::history::{Message, Role, ToolCall};
use opentelemetry::{KeyValue, Value};
use serde_json::{json, Value as Json};

/// Longest string an attribute taken from an event payload carries.
const MAX_TEXT: usize = 1000;

/// A model as the spans name it.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub provider: String,
    pub id: String,
}

/// Each agent's model (`--model` over the config's), and the one for an agent not listed.
pub fn models(program: &Program, flag: Option<&str>) -> (HashMap<String, Model>, Model) {
    let of = |model: Option<&fuseraft_compiler::ir::Model>| {
        let id = flag
            .map(str::to_string)
            .or_else(|| model.map(|model| model.id.clone()))
            .unwrap_or_else(|| "unknown".to_string());
        let provider = model
            .and_then(|model| model.provider.clone())
            .unwrap_or_else(|| provider_of(&id).to_string());
        Model { provider, id }
    };
    let models = program
        .agents
        .iter()
        .map(|agent| (agent.name.clone(), of(agent.model.as_ref())))
        .collect();
    (models, of(None))
}

/// The provider a model id with no `Provider` goes to, as the VM picks it by default.
fn provider_of(id: &str) -> &'static str {
    if id.starts_with("claude") {
        "anthropic"
    } else {
        "openai"
    }
}

pub fn root(session: &str, program: &str, replay: bool, resumed: bool) -> Vec<KeyValue> {
    vec![
        KeyValue::new("openinference.span.kind", "CHAIN"),
        KeyValue::new("gen_ai.conversation.id", session.to_string()),
        KeyValue::new("session.id", session.to_string()),
        KeyValue::new("fuseraft.session", session.to_string()),
        KeyValue::new("fuseraft.program", program.to_string()),
        KeyValue::new("fuseraft.replay", replay),
        KeyValue::new("fuseraft.resumed", resumed),
    ]
}

pub fn turn(agent: &str, state: &str, turn: u32) -> Vec<KeyValue> {
    vec![
        KeyValue::new("openinference.span.kind", "AGENT"),
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        KeyValue::new("gen_ai.agent.name", agent.to_string()),
        KeyValue::new("fuseraft.state", state.to_string()),
        KeyValue::new("fuseraft.turn", i64::from(turn)),
    ]
}

pub fn chat(model: &Model) -> Vec<KeyValue> {
    vec![
        KeyValue::new("openinference.span.kind", "LLM"),
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", model.provider.clone()),
        KeyValue::new("gen_ai.system", model.provider.clone()),
        KeyValue::new("gen_ai.request.model", model.id.clone()),
        KeyValue::new("llm.model_name", model.id.clone()),
        KeyValue::new("llm.provider", model.provider.clone()),
    ]
}

/// A turn's tokens; the cached ones only when the provider reported them.
pub fn usage(input: u64, output: u64, read: Option<u64>, write: Option<u64>) -> Vec<KeyValue> {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let mut attrs = vec![
        KeyValue::new("gen_ai.usage.input_tokens", count(input)),
        KeyValue::new("gen_ai.usage.output_tokens", count(output)),
        KeyValue::new("llm.token_count.prompt", count(input)),
        KeyValue::new("llm.token_count.completion", count(output)),
        KeyValue::new("llm.token_count.total", count(input.saturating_add(output))),
    ];
    if let Some(read) = read {
        attrs.push(KeyValue::new(
            "gen_ai.usage.cache_read.input_tokens",
            count(read),
        ));
    }
    if let Some(write) = write {
        attrs.push(KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            count(write),
        ));
    }
    attrs
}

/// The turn's messages (opt-in only): what came in, and the reply.
pub fn content(messages: &[&Message]) -> Vec<KeyValue> {
    let part = |message: &Message| {
        let role = match message.role {
            Role::Assistant => "assistant",
            Role::User => "user",
        };
        json!({ "role": role, "parts": [{ "type": "text", "content": &*message.content }] })
    };
    let (output, input): (Vec<&&Message>, Vec<&&Message>) = messages
        .iter()
        .partition(|message| message.role == Role::Assistant);
    let input: Vec<Json> = input.iter().map(|message| part(message)).collect();
    let reply = output.last().map(|message| message.content.to_string());
    let mut attrs = vec![KeyValue::new(
        "gen_ai.input.messages",
        Json::Array(input).to_string(),
    )];
    if let Some(reply) = reply {
        let messages =
            json!([{ "role": "assistant", "parts": [{ "type": "text", "content": reply }] }]);
        attrs.push(KeyValue::new(
            "gen_ai.output.messages",
            messages.to_string(),
        ));
        attrs.push(KeyValue::new("output.value", reply));
    }
    attrs
}

pub fn tool(call: &ToolCall, capture: bool) -> Vec<KeyValue> {
    let mut attrs = vec![
        KeyValue::new("openinference.span.kind", "TOOL"),
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("gen_ai.tool.name", call.name.clone()),
        KeyValue::new("gen_ai.tool.type", "function"),
        KeyValue::new("gen_ai.tool.call.id", call.id.clone()),
        KeyValue::new("tool.name", call.name.clone()),
        KeyValue::new("fuseraft.tool.ok", call.ok),
        // The events carry no time per tool call: the span marks the end of its turn.
        KeyValue::new("fuseraft.timing", "turn_end"),
    ];
    if capture {
        attrs.push(KeyValue::new(
            "gen_ai.tool.call.arguments",
            call.args.to_string(),
        ));
        if let Some(result) = &call.result {
            attrs.push(KeyValue::new("gen_ai.tool.call.result", result.clone()));
        }
    }
    attrs
}

/// Payload fields whose text fuseraft wrote (states, signals, validator names, its own
/// messages) rather than a model or the operator.
const PLAIN: &[&str] = &[
    "state",
    "start_state",
    "program",
    "from",
    "to",
    "signal",
    "via",
    "validator",
    "agent",
    "tool",
    "strategy",
    "mode",
    "outcome",
    "class",
    "keyword",
    "keywords",
    "server",
    "name",
    "transport",
    "stage",
    "next",
    "after",
    "fallback",
    "branches",
    "kept",
    "expected_signals",
    "foreign_signals",
    "key",
    "fields",
    "reason",
    "error",
    "message",
    "next_speaker",
];

/// An event's payload as `fuseraft.*` attributes: numbers and flags always, text only from
/// the fields fuseraft writes, unless content is captured.
pub fn payload(kind: &EventKind, capture: bool) -> Vec<KeyValue> {
    let Ok(Json::Object(mut tagged)) = serde_json::to_value(kind) else {
        return Vec::new();
    };
    let plain = |key: &str| {
        // The manager's ledger reasons are a model's words.
        capture
            || (PLAIN.contains(&key) && !(kind.name().starts_with("magentic_") && key == "reason"))
    };
    let mut attrs = Vec::new();
    if let Some(Json::Object(fields)) = tagged.remove("payload") {
        for (key, value) in fields {
            flatten(&format!("fuseraft.{key}"), &key, &value, &plain, &mut attrs);
        }
    }
    attrs
}

fn flatten(
    name: &str,
    key: &str,
    value: &Json,
    plain: &dyn Fn(&str) -> bool,
    out: &mut Vec<KeyValue>,
) {
    let value = match value {
        Json::Bool(flag) => Value::from(*flag),
        Json::Number(number) => match number.as_i64() {
            Some(n) => Value::from(n),
            None => Value::from(number.as_f64().unwrap_or_default()),
        },
        Json::String(text) if plain(key) => Value::from(clipped(text)),
        Json::Array(items) if plain(key) => {
            let texts: Vec<String> = items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map_or_else(|| item.to_string(), str::to_string)
                })
                .collect();
            Value::from(clipped(&texts.join(", ")))
        }
        Json::Object(fields) => {
            for (inner, value) in fields {
                flatten(&format!("{name}.{inner}"), inner, value, plain, out);
            }
            return;
        }
        _ => return,
    };
    out.push(KeyValue::new(name.to_string(), value));
}

fn clipped(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}
