//! OpenAI-compatible chat completions (OpenAI, Azure OpenAI, vLLM, llama.cpp, LM Studio,
//! Ollama's `/v1`): the request body; the SSE stream decoder is `openai_stream.rs`.
//!
//! Streamed with `stream_options.include_usage`: text arrives in `choices[0].delta.content`,
//! tool calls as `delta.tool_calls[i]` fragments (id and name first, then pieces of the
//! `arguments` JSON) assembled by `index`, usage in the last chunk, then `data: [DONE]`.
//! A stream that ends before `[DONE]` is truncated, and retried.

use fuseraft_compiler::ir::ToolChoice;

use super::http::Post;
use super::openai_body::{self, Bodies, Options};
pub(crate) use super::openai_stream::Stream;
use super::{Kind, Target};
use crate::effect::ModelCall;

/// The request for `call`, its body written on from `bodies` (`openai_body.rs`); `choice`
/// (the agent's `FunctionChoice`) is sent as `tool_choice` `"auto"`, `"required"` (or the
/// one tool by name) or `"none"`.
pub(crate) fn request(
    target: &Target,
    call: &ModelCall,
    choice: ToolChoice,
    bodies: &mut Bodies,
) -> Post {
    let (azure, official) = match target.kind {
        Kind::OpenAi { azure, official } => (azure, official),
        _ => (false, false),
    };
    // Only OpenAI's own service is sent `prompt_cache_key`: servers that validate their
    // requests strictly (Mistral's, some proxies) refuse fields they do not know.
    let cache_key =
        (official && !azure).then(|| prompt_cache_key(&call.agent.queue(), &target.model));
    let format = (!call.reply_fields.is_empty())
        .then(|| super::reply_format::openai(&call.reply_fields, official));
    let options = Options {
        model: &target.model,
        choice,
        temperature: target.temperature,
        max_tokens: target.max_tokens,
        official,
        reasoning_effort: target.reasoning_effort.as_deref(),
        cache_key: cache_key.as_deref(),
        format: format.as_ref(),
    };
    let body = openai_body::write(call, &options, bodies);
    let auth = target.key.clone().map(|key| {
        let header = if azure { "api-key" } else { "authorization" };
        (header, key)
    });
    let forced = (choice == ToolChoice::Required && call.tools.len() > 1)
        .then(|| format!("`tool_choice` \"required\" over {} tools", call.tools.len()));
    Post {
        label: target.label(),
        url: target.url.clone(),
        key_variable: target.key_variable.clone(),
        headers: vec![("accept", "text/event-stream".to_string())],
        auth,
        body,
        forced,
    }
}

/// The `prompt_cache_key` of `agent`'s requests to `model`: the same in every run and
/// session of the agent (its requests share their start: instructions, then the task), so
/// OpenAI routes them to the machines that hold that prefix. FNV-1a, stable across builds.
pub(crate) fn prompt_cache_key(agent: &str, model: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in agent.bytes().chain([0]).chain(model.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fuseraft-{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::{ChatMessage, ChatRole};
    use crate::history::ToolCall;
    use serde_json::json;

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
            agent: crate::effect::Caller::from_queue("A"),
            model: None,
            messages: vec![ChatMessage {
                role: ChatRole::Assistant,
                content: "".into(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "finish".into(),
                    args: json!({}),
                    result: None,
                    ok: false,
                    denied: None,
                }],
                tool_call_id: None,
            }],
            tools: Vec::new().into(),
            turn: 0,
            reply_fields: Default::default(),
        }
    }

    #[test]
    fn openai_itself_gets_max_completion_tokens_and_a_bearer_key() {
        let official = Kind::OpenAi {
            azure: false,
            official: true,
        };
        let post = request(
            &target(official),
            &call(),
            ToolChoice::Auto,
            &mut Bodies::default(),
        );
        let body = post.body.json();
        assert_eq!(body["max_completion_tokens"], json!(100));
        assert!(body.get("max_tokens").is_none());
        assert_eq!(body["reasoning_effort"], json!("high"));
        assert!(body.get("tools").is_none());
        // An assistant message with only tool calls has empty content, never null.
        assert_eq!(body["messages"][0]["content"], json!(""));
        // OpenAI's own service gets a prompt cache key, the same for every call of the agent.
        assert_eq!(
            body["prompt_cache_key"],
            json!(prompt_cache_key("A", "o4-mini"))
        );
        assert_eq!(
            prompt_cache_key("A", "o4-mini"),
            prompt_cache_key("A", "o4-mini")
        );
        assert_ne!(
            prompt_cache_key("A", "o4-mini"),
            prompt_cache_key("B", "o4-mini")
        );
        assert_eq!(
            post.auth.as_ref().map(|(name, _)| *name),
            Some("authorization")
        );
        let azure = Kind::OpenAi {
            azure: true,
            official: true,
        };
        let post = request(
            &target(azure),
            &call(),
            ToolChoice::Auto,
            &mut Bodies::default(),
        );
        assert_eq!(post.auth.as_ref().map(|(name, _)| *name), Some("api-key"));
        // Azure and other compatible servers are not sent fields they may refuse.
        assert!(post.body.json().get("prompt_cache_key").is_none());
    }

    #[test]
    fn openai_itself_is_asked_for_a_named_json_schema() {
        let official = Kind::OpenAi {
            azure: false,
            official: true,
        };
        let mut structured = call();
        structured.reply_fields = vec!["verdict".to_string()].into();
        let post = request(
            &target(official),
            &structured,
            ToolChoice::Auto,
            &mut Bodies::default(),
        );
        assert_eq!(
            post.body.json()["response_format"],
            json!({ "type": "json_schema", "json_schema": { "name": "routing", "schema": {
                "type": "object", "properties": { "verdict": {} }, "required": ["verdict"] } } })
        );
    }
}

#[cfg(test)]
#[path = "openai_wire_tests.rs"]
mod wire_tests;
