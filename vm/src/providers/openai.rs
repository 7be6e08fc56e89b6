//! OpenAI-compatible chat completions (OpenAI, Azure OpenAI, vLLM, llama.cpp, LM Studio,
//! Ollama's `/v1`): the request body; the SSE stream decoder is `openai_stream.rs`.
//!
//! Streamed with `stream_options.include_usage`: text arrives in `choices[0].delta.content`,
//! tool calls as `delta.tool_calls[i]` fragments (id and name first, then pieces of the
//! `arguments` JSON) assembled by `index`, usage in the last chunk, then `data: [DONE]`.
//! A stream that ends before `[DONE]` is truncated, and retried.

use fuseraft_compiler::ir::ToolChoice;
use serde_json::{json, Map, Value as Json};

use super::http::Post;
pub(crate) use super::openai_stream::Stream;
use super::{Kind, Target};
use crate::effect::{ChatRole, ModelCall};

/// The request for `call`; `choice` (the agent's `FunctionChoice`) is sent as
/// `tool_choice` `"required"` (see [`required_choice`]) or `"none"` (`"auto"` is the API's
/// default with tools).
pub(crate) fn request(target: &Target, call: &ModelCall, choice: ToolChoice) -> Post {
    let (azure, official) = match target.kind {
        Kind::OpenAi { azure, official } => (azure, official),
        _ => (false, false),
    };
    let mut body = Map::new();
    body.insert("model".into(), json!(target.model));
    body.insert("messages".into(), Json::Array(messages(call)));
    if !call.tools.is_empty() {
        let tools = call
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Json::Array(tools));
        match choice {
            ToolChoice::Auto => {}
            ToolChoice::Required => {
                body.insert("tool_choice".into(), required_choice(call));
            }
            ToolChoice::None => {
                body.insert("tool_choice".into(), json!("none"));
            }
        }
    }
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    if let Some(temperature) = target.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = target.max_tokens {
        // OpenAI's own service deprecated `max_tokens` (reasoning models reject it);
        // other servers may not know `max_completion_tokens`.
        let name = if official {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(name.into(), json!(max_tokens));
    }
    if let Some(effort) = &target.reasoning_effort {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    let auth = target.key.clone().map(|key| {
        let header = if azure { "api-key" } else { "authorization" };
        (header, key)
    });
    Post {
        label: target.label(),
        url: target.url.clone(),
        key_variable: target.key_variable.clone(),
        headers: vec![("accept", "text/event-stream".to_string())],
        auth,
        body: Json::Object(body),
    }
}

/// `FunctionChoice: required` on the wire: with one tool offered, that tool by name
/// (`{"type": "function", "function": {"name": …}}`), which asks the same of OpenAI and is the
/// only form llama.cpp's Python server honours (its `chatml-function-calling` format then
/// constrains the arguments to the tool's JSON schema, `enum`s included, and it fails on
/// `"required"`); with several, `"required"`.
fn required_choice(call: &ModelCall) -> Json {
    match call.tools.as_slice() {
        [only] => json!({ "type": "function", "function": { "name": only.name } }),
        _ => json!("required"),
    }
}

fn messages(call: &ModelCall) -> Vec<Json> {
    call.messages
        .iter()
        .map(|message| match message.role {
            ChatRole::System => json!({ "role": "system", "content": message.content }),
            ChatRole::User => json!({ "role": "user", "content": message.content }),
            ChatRole::Assistant if message.tool_calls.is_empty() => {
                json!({ "role": "assistant", "content": message.content })
            }
            ChatRole::Assistant => {
                let calls: Vec<Json> = message
                    .tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.id,
                            "type": "function",
                            "function": { "name": call.name, "arguments": call.args.to_string() },
                        })
                    })
                    .collect();
                // `""`, never `null`: OpenAI accepts either with tool calls, but llama.cpp's
                // server (and others) answer `content: null` with a 500.
                json!({ "role": "assistant", "content": message.content, "tool_calls": calls })
            }
            ChatRole::Tool => json!({
                "role": "tool",
                "tool_call_id": message.tool_call_id.clone().unwrap_or_default(),
                "content": message.content,
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::ChatMessage;
    use crate::history::ToolCall;

    fn target(kind: Kind) -> Target {
        Target {
            kind,
            provider: "openai".into(),
            model: "o4-mini".into(),
            url: "https://api.openai.com/v1/chat/completions".into(),
            key: Some(super::super::Secret("sk-x".into())),
            key_variable: None,
            temperature: None,
            max_tokens: Some(100),
            reasoning_effort: Some("high".into()),
            context_window: None,
        }
    }

    fn call() -> ModelCall {
        ModelCall {
            agent: "A".into(),
            model: None,
            messages: vec![ChatMessage {
                role: ChatRole::Assistant,
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "finish".into(),
                    args: json!({}),
                    result: None,
                    ok: false,
                }],
                tool_call_id: None,
            }],
            tools: Vec::new(),
            turn: 0,
        }
    }

    #[test]
    fn openai_itself_gets_max_completion_tokens_and_a_bearer_key() {
        let official = Kind::OpenAi {
            azure: false,
            official: true,
        };
        let post = request(&target(official), &call(), ToolChoice::Auto);
        assert_eq!(post.body["max_completion_tokens"], json!(100));
        assert!(post.body.get("max_tokens").is_none());
        assert_eq!(post.body["reasoning_effort"], json!("high"));
        assert!(post.body.get("tools").is_none());
        // An assistant message with only tool calls has empty content, never null.
        assert_eq!(post.body["messages"][0]["content"], json!(""));
        assert_eq!(
            post.auth.as_ref().map(|(name, _)| *name),
            Some("authorization")
        );
        let azure = Kind::OpenAi {
            azure: true,
            official: true,
        };
        let post = request(&target(azure), &call(), ToolChoice::Auto);
        assert_eq!(post.auth.as_ref().map(|(name, _)| *name), Some("api-key"));
    }
}
