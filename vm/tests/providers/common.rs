//! Programs, calls, keys and assertions shared by the provider tests.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fuseraft_compiler::ir;
use fuseraft_vm::driver::Models;
use fuseraft_vm::effect::{ChatMessage, ChatRole, ModelCall, ModelReply, ToolSchema};
use fuseraft_vm::history::ToolCall;
use fuseraft_vm::providers::{Overrides, Providers, Settings, TokenSink};
use serde_json::{json, Value as Json};

use super::server::{openai_stream, sse, Recorded, Reply, Server};

pub const FAKE_KEY: &str = "sk-test-FAKEKEY-0123456789abcdef";

pub fn model(provider: Option<&str>, id: &str, endpoint: &str) -> ir::Model {
    ir::Model {
        provider: provider.map(str::to_string),
        id: id.to_string(),
        endpoint: Some(endpoint.to_string()),
        ..ir::Model::default()
    }
}

pub fn program(agents: &[(&str, Option<ir::Model>)]) -> ir::Program {
    ir::Program {
        agents: agents
            .iter()
            .map(|(name, model)| ir::Agent {
                name: name.to_string(),
                description: None,
                model: model.clone(),
                instructions: String::new(),
                tools: Vec::new(),
                tool_choice: ir::ToolChoice::Auto,
                capabilities: Vec::new(),
                context: ir::Context::default(),
                pattern: None,
                sub_agent: ir::SubAgentSettings::default(),
                loc: None,
            })
            .collect(),
        states: Vec::new(),
        ..ir::Program::new(
            "providers".into(),
            ir::Origin::Fuseraft(ir::SelectionKind::Sequential),
        )
    }
}

pub fn message(role: ChatRole, content: &str) -> ChatMessage {
    ChatMessage {
        role,
        content: content.into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

/// A call with every message kind: system, user, an assistant tool call, its result.
pub fn call(agent: &str, model: Option<ir::Model>) -> ModelCall {
    let read = ToolCall {
        id: "call_read1".into(),
        name: "read_file".into(),
        args: json!({ "path": "README.md" }),
        result: Some("# Project".into()),
        ok: true,
        denied: None,
    };
    ModelCall {
        agent: fuseraft_vm::effect::Caller::from_queue(agent),
        model: model.map(Box::new),
        messages: vec![
            message(ChatRole::System, "You are the Planner. Write the brief."),
            message(ChatRole::User, "Build a CLI that greets."),
            ChatMessage {
                role: ChatRole::Assistant,
                content: "Reading the README first.".into(),
                tool_calls: vec![read],
                tool_call_id: None,
            },
            ChatMessage {
                role: ChatRole::Tool,
                content: "# Project".into(),
                tool_calls: Vec::new(),
                tool_call_id: Some("call_read1".into()),
            },
        ],
        tools: vec![
            ToolSchema {
                name: "write_file".into(),
                description: "Write a file in the work dir".into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "path": { "type": "string" }, "content": { "type": "string" } },
                    "required": ["path", "content"],
                }),
            },
            ToolSchema {
                name: "handoff".into(),
                description: "Hand the turn to another agent".into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "route_keyword": { "type": "string" } },
                    "required": ["route_keyword"],
                }),
            },
        ]
        .into(),
        turn: 3,
        reply_fields: Default::default(),
    }
}

pub fn env_with_keys(name: &str) -> Option<String> {
    match name {
        "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" | "AZURE_OPENAI_API_KEY" | "MY_PROXY_KEY" => {
            Some(FAKE_KEY.to_string())
        }
        _ => None,
    }
}

pub fn quick() -> Settings {
    Settings {
        timeout: Duration::from_secs(10),
        max_retries: 2,
        base_backoff: Duration::from_millis(1),
        ..Settings::default()
    }
}

pub type Tokens = Arc<Mutex<Vec<(String, String)>>>;

pub fn sink() -> (Tokens, TokenSink) {
    let tokens: Tokens = Arc::new(Mutex::new(Vec::new()));
    let seen = tokens.clone();
    let sink: TokenSink = Arc::new(move |agent: &str, text: &str| {
        seen.lock()
            .unwrap()
            .push((agent.to_string(), text.to_string()));
    });
    (tokens, sink)
}

pub fn providers(program: &ir::Program, overrides: &Overrides, settings: Settings) -> Providers {
    Providers::new(program, overrides, settings, &env_with_keys, None).unwrap()
}

/// One call of agent `Planner` on `model`, against `server`. The endpoint is given as the
/// user gives it (`--endpoint`), so a well-known key may go to the loopback server.
pub async fn ask(
    model: ir::Model,
    settings: Settings,
) -> (Result<ModelReply, String>, Tokens, Duration) {
    let program = program(&[("Planner", Some(model.clone()))]);
    let (tokens, sink) = sink();
    let overrides = Overrides {
        endpoint: model.endpoint.clone(),
        ..Overrides::default()
    };
    let providers =
        Providers::new(&program, &overrides, settings, &env_with_keys, Some(sink)).unwrap();
    let started = Instant::now();
    let reply = providers.call(&call("Planner", Some(model))).await;
    if let Err(error) = &reply {
        assert_clean(error);
    }
    (reply, tokens, started.elapsed())
}

/// The key never appears in an error, whole or in part.
pub fn assert_clean(error: &str) {
    assert!(!error.contains(FAKE_KEY), "the key leaked: {error}");
    assert!(
        !error.contains("FAKEKEY"),
        "part of the key leaked: {error}"
    );
}

/// The key went in exactly one header, nowhere in the body or the path.
pub fn assert_key_only_in(request: &Recorded, header: &str, value: &str) {
    assert!(!request.body.contains(FAKE_KEY));
    assert!(!request.path.contains(FAKE_KEY));
    let carrying: Vec<&(String, String)> = request
        .headers
        .iter()
        .filter(|(_, v)| v.contains(FAKE_KEY))
        .collect();
    assert_eq!(carrying, vec![&(header.to_string(), value.to_string())]);
}

pub fn expected_tool_calls(openai_ids: bool) -> Vec<(String, String, Json)> {
    let (first, second) = if openai_ids {
        ("call_abc", "call_def")
    } else {
        ("call_1", "call_2")
    };
    vec![
        (
            first.into(),
            "write_file".into(),
            json!({ "path": "brief.md", "content": "# Brief ☃" }),
        ),
        (
            second.into(),
            "handoff".into(),
            json!({ "route_keyword": "DEVELOPER" }),
        ),
    ]
}

pub fn calls_of(reply: &ModelReply) -> Vec<(String, String, Json)> {
    reply
        .tool_calls
        .iter()
        .map(|call| (call.id.clone(), call.name.clone(), call.args.clone()))
        .collect()
}

pub fn streamed_text(tokens: &Tokens) -> (Vec<String>, String) {
    let tokens = tokens.lock().unwrap();
    let agents: Vec<String> = tokens.iter().map(|(agent, _)| agent.clone()).collect();
    let text: String = tokens.iter().map(|(_, text)| text.as_str()).collect();
    (agents, text)
}

pub fn openai_model(server: &Server) -> ir::Model {
    keyed(
        model(Some("openai"), "gpt-4o", &format!("{}/v1", server.url)),
        "OPENAI_API_KEY",
    )
}

pub fn anthropic_model(server: &Server) -> ir::Model {
    keyed(
        model(None, "claude-sonnet-4-5", &server.url),
        "ANTHROPIC_API_KEY",
    )
}

pub fn keyed(mut model: ir::Model, variable: &str) -> ir::Model {
    model.api_key_env = Some(variable.to_string());
    model
}

/// The head and the first events of a stream, as raw chunked-encoding pieces.
pub fn stream_start() -> Vec<Vec<u8>> {
    let Reply::Pieces(mut pieces) = sse(&openai_stream()) else {
        unreachable!()
    };
    // The head and 19 chunks of 37 bytes: the text has streamed, `[DONE]` is far off.
    pieces.truncate(20);
    pieces
}

pub fn program_with(model: ir::Model) -> ir::Program {
    program(&[("Planner", Some(model))])
}
