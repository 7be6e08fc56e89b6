//! Anthropic Messages (`POST /v1/messages`): the request body and the SSE stream decoder.
//!
//! The system prompt is top-level; tool calls are `tool_use` blocks of the assistant, tool
//! results `tool_result` blocks of a user message; consecutive messages of one role are
//! merged into one (the API wants user and assistant to alternate). The stream:
//! `message_start` (input usage), `content_block_start` (text or tool_use),
//! `content_block_delta` (`text_delta`, `input_json_delta`), `content_block_stop`,
//! `message_delta` (stop reason, output usage), `message_stop`; `ping` and unknown events
//! are skipped; `error` fails the attempt. A stream without `message_stop` is truncated.
//!
//! Prompt caching: a request marks its stable prefix with `cache_control: {"type":
//! "ephemeral"}` at [`MAX_BREAKPOINTS`] places at most, in the API's prefix order: the last
//! tool definition, the system prompt, and the last content blocks of the last two messages
//! (the conversation so far, which the next request of the agent starts with: the newest
//! as the tail, the one before as a fallback when the tail's entry is gone). A later
//! request that starts with a cached prefix reads it at a tenth of the input price; the
//! usage's `cache_read_input_tokens` and `cache_creation_input_tokens` are kept apart.

use fuseraft_compiler::ir::ToolChoice;
use serde_json::{json, Map, Value as Json};

use super::body::Body;
use super::http::{Decoder, Failure, Post};
use super::sse::{self, Sse};
use super::{fallback_call_id, parse_arguments, Target, TokenSink};
use crate::effect::{ChatRole, ModelCall, ModelReply};
use crate::history::{ToolCall, Usage};

/// The API version sent in `anthropic-version`.
pub(crate) const VERSION: &str = "2023-06-01";
/// `max_tokens` is required; this is sent when the config sets none.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 8192;
/// The most `cache_control` breakpoints the API accepts in one request.
pub(crate) const MAX_BREAKPOINTS: usize = 4;

/// A `cache_control` breakpoint.
fn ephemeral() -> Json {
    json!({ "type": "ephemeral" })
}

/// The request for `call`. `choice` (the agent's `FunctionChoice`): `required` is
/// `tool_choice: {"type": "any"}`, `auto` is the API's default, `none` sends no tools, or,
/// when the history holds tool calls (the API refuses `tool_use` blocks without the tools
/// defined), the tools with `tool_choice: {"type": "none"}`.
pub(crate) fn request(target: &Target, call: &ModelCall, choice: ToolChoice) -> Post {
    let mut body = Map::new();
    body.insert("model".into(), json!(target.model));
    body.insert(
        "max_tokens".into(),
        json!(target.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    let system: Vec<&str> = call
        .messages
        .iter()
        .filter(|message| message.role == ChatRole::System)
        .map(|message| &*message.content)
        .filter(|content| !content.is_empty())
        .collect();
    if !system.is_empty() {
        body.insert(
            "system".into(),
            json!([{ "type": "text", "text": system.join("\n\n"), "cache_control": ephemeral() }]),
        );
    }
    let mut turns = messages(call);
    // The conversation's tail and the message before it, newest first: the two breakpoints
    // left beside the tools' and the system prompt's.
    for turn in turns.iter_mut().rev().take(MAX_BREAKPOINTS - 2) {
        if let Some(block) = turn
            .get_mut("content")
            .and_then(Json::as_array_mut)
            .and_then(|blocks| blocks.last_mut())
        {
            block["cache_control"] = ephemeral();
        }
    }
    body.insert("messages".into(), Json::Array(turns));
    let tool_history = call
        .messages
        .iter()
        .any(|message| !message.tool_calls.is_empty() || message.role == ChatRole::Tool);
    if !call.tools.is_empty() && (choice != ToolChoice::None || tool_history) {
        let mut tools: Vec<Json> = call
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.parameters,
                })
            })
            .collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = ephemeral();
        }
        body.insert("tools".into(), Json::Array(tools));
        match choice {
            ToolChoice::Auto => {}
            ToolChoice::Required => {
                body.insert("tool_choice".into(), json!({ "type": "any" }));
            }
            ToolChoice::None => {
                body.insert("tool_choice".into(), json!({ "type": "none" }));
            }
        }
    }
    if let Some(temperature) = target.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    body.insert("stream".into(), json!(true));
    Post {
        label: target.label(),
        url: target.url.clone(),
        key_variable: target.key_variable.clone(),
        headers: vec![
            ("anthropic-version", VERSION.to_string()),
            ("accept", "text/event-stream".to_string()),
        ],
        auth: target.key.clone().map(|key| ("x-api-key", key)),
        body: Body::Json(Json::Object(body)),
        // The API honours `{"type": "any"}` over any number of tools.
        forced: None,
    }
}

fn messages(call: &ModelCall) -> Vec<Json> {
    // (role, content blocks), merged by role.
    let mut turns: Vec<(&str, Vec<Json>)> = Vec::new();
    for message in &call.messages {
        let (role, blocks) = match message.role {
            ChatRole::System => continue,
            ChatRole::User => ("user", vec![text_block(&message.content)]),
            ChatRole::Assistant => {
                let mut blocks = Vec::new();
                if !message.content.trim().is_empty() {
                    blocks.push(text_block(&message.content));
                }
                for call in &message.tool_calls {
                    let input = if call.args.is_object() {
                        call.args.clone()
                    } else {
                        json!({})
                    };
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": input,
                    }));
                }
                if blocks.is_empty() {
                    blocks.push(text_block(""));
                }
                ("assistant", blocks)
            }
            ChatRole::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                    "content": message.content,
                })],
            ),
        };
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, mut blocks)| {
            // Tool results must come first in their user message.
            blocks.sort_by_key(|block| block.get("type") != Some(&json!("tool_result")));
            json!({ "role": role, "content": blocks })
        })
        .collect()
}

/// A text block; the API rejects empty ones.
fn text_block(text: &str) -> Json {
    let text = if text.trim().is_empty() {
        "(empty)"
    } else {
        text
    };
    json!({ "type": "text", "text": text })
}

#[derive(Debug)]
enum Block {
    Text,
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// Decodes a Messages SSE stream.
pub(crate) struct Stream {
    agent: String,
    sink: Option<TokenSink>,
    sse: Sse,
    text: String,
    /// Content blocks by their `index`.
    blocks: Vec<(u64, Block)>,
    usage: Usage,
    /// Of the input tokens, those read from the prompt cache.
    started: bool,
    done: bool,
    /// Bytes of text, tool names and tool input so far.
    size: usize,
}

impl Stream {
    pub(crate) fn new(agent: &str, sink: Option<TokenSink>) -> Stream {
        Stream {
            agent: agent.to_string(),
            sink,
            sse: Sse::default(),
            text: String::new(),
            blocks: Vec::new(),
            usage: Usage::default(),
            started: false,
            done: false,
            size: 0,
        }
    }

    fn block(&mut self, index: u64) -> Option<&mut Block> {
        self.blocks
            .iter_mut()
            .rev()
            .find(|(at, _)| *at == index)
            .map(|(_, block)| block)
    }

    fn read_usage(&mut self, usage: Option<&Json>) {
        let Some(usage) = usage else { return };
        let count = |key: &str| usage.get(key).and_then(Json::as_u64);
        if let Some(input) = count("input_tokens") {
            let written = count("cache_creation_input_tokens").unwrap_or(0);
            let read = count("cache_read_input_tokens").unwrap_or(0);
            let total = input.saturating_add(written).saturating_add(read);
            self.usage.input_tokens = self.usage.input_tokens.max(total);
            self.usage.cache_read_tokens = self.usage.cache_read_tokens.max(read);
            self.usage.cache_write_tokens = self.usage.cache_write_tokens.max(written);
        }
        if let Some(output) = count("output_tokens") {
            // Cumulative in `message_delta`.
            self.usage.output_tokens = self.usage.output_tokens.max(output);
        }
    }

    fn event(&mut self, data: &str) -> Result<(), Failure> {
        if self.done {
            return Ok(());
        }
        let event = sse::json(data)?;
        let kind = event.get("type").and_then(Json::as_str).unwrap_or("");
        let index = event.get("index").and_then(Json::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                self.started = true;
                self.read_usage(event.pointer("/message/usage"));
            }
            "content_block_start" => {
                let block = event.get("content_block").cloned().unwrap_or(Json::Null);
                let block = match block.get("type").and_then(Json::as_str) {
                    Some("text") => {
                        let text = block.get("text").and_then(Json::as_str).unwrap_or("");
                        self.text_delta(text);
                        Block::Text
                    }
                    Some("tool_use") => Block::Tool {
                        id: block.get("id").and_then(Json::as_str).unwrap_or("").into(),
                        name: block
                            .get("name")
                            .and_then(Json::as_str)
                            .unwrap_or("")
                            .into(),
                        // The start carries `input: {}`; the input streams as JSON text.
                        json: match block.get("input") {
                            Some(Json::Object(input)) if !input.is_empty() => {
                                Json::Object(input.clone()).to_string()
                            }
                            _ => String::new(),
                        },
                    },
                    _ => Block::Other, // thinking, redacted_thinking, server tools
                };
                if let Block::Tool { name, json, .. } = &block {
                    self.size += name.len() + json.len();
                }
                self.blocks.push((index, block));
            }
            "content_block_delta" => {
                let delta = event.get("delta").cloned().unwrap_or(Json::Null);
                match delta.get("type").and_then(Json::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Json::as_str).unwrap_or("");
                        self.text_delta(text);
                    }
                    Some("input_json_delta") => {
                        let part = delta
                            .get("partial_json")
                            .and_then(Json::as_str)
                            .unwrap_or("");
                        match self.block(index) {
                            Some(Block::Tool { json, .. }) => {
                                json.push_str(part);
                                self.size += part.len();
                            }
                            _ => {
                                return Err(Failure::fatal(format!(
                                    "input_json_delta for content block {index}, which is not a tool_use block"
                                )))
                            }
                        }
                    }
                    _ => {} // thinking_delta, signature_delta, citations
                }
            }
            "content_block_stop" | "ping" => {}
            "message_delta" => self.read_usage(event.get("usage")),
            "message_stop" => self.done = true,
            "error" => {
                let error_type = event
                    .pointer("/error/type")
                    .and_then(Json::as_str)
                    .unwrap_or("error");
                let message = event
                    .pointer("/error/message")
                    .and_then(Json::as_str)
                    .unwrap_or("");
                let text = format!("the stream reported an error: {error_type}: {message}");
                return Err(if matches!(error_type, "overloaded_error" | "api_error") {
                    Failure::transient(text)
                } else {
                    Failure::fatal(text)
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn text_delta(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.size += text.len();
        self.text.push_str(text);
        if let Some(sink) = &self.sink {
            sink(&self.agent, text);
        }
    }
}

impl Decoder for Stream {
    fn feed(&mut self, chunk: &[u8]) -> Result<(), Failure> {
        for event in self.sse.push(chunk)? {
            self.event(&event.data)?;
        }
        Ok(())
    }

    fn whole(mut self, body: &[u8]) -> Result<ModelReply, Failure> {
        // A `message` object: its content blocks whole.
        let text = std::str::from_utf8(body)
            .map_err(|_| Failure::fatal("the response is not valid UTF-8"))?;
        let message = sse::json(text)?;
        if message.get("type").and_then(Json::as_str) == Some("error") {
            return self
                .event(text)
                .and_then(|()| Err(Failure::fatal("the response reported an error")));
        }
        self.started = true;
        self.read_usage(message.get("usage"));
        let blocks = message.get("content").and_then(Json::as_array);
        for (index, block) in blocks.into_iter().flatten().enumerate() {
            match block.get("type").and_then(Json::as_str) {
                Some("text") => {
                    self.text_delta(block.get("text").and_then(Json::as_str).unwrap_or(""));
                }
                Some("tool_use") => self.blocks.push((
                    index as u64,
                    Block::Tool {
                        id: block.get("id").and_then(Json::as_str).unwrap_or("").into(),
                        name: block
                            .get("name")
                            .and_then(Json::as_str)
                            .unwrap_or("")
                            .into(),
                        json: block.get("input").map(Json::to_string).unwrap_or_default(),
                    },
                )),
                _ => {}
            }
        }
        self.done = true;
        self.finish()
    }

    fn size(&self) -> usize {
        self.size
    }

    fn calls(&self) -> usize {
        self.blocks.len()
    }

    fn finish(mut self) -> Result<ModelReply, Failure> {
        if let Some(event) = self.sse.finish()? {
            self.event(&event.data)?;
        }
        if !self.done {
            let what = if self.started {
                "the stream ended before `message_stop` (truncated response)"
            } else {
                "the stream ended before `message_start` (empty or truncated response)"
            };
            return Err(Failure::transient(what));
        }
        let tool_calls = self
            .blocks
            .into_iter()
            .filter_map(|(_, block)| match block {
                Block::Tool { id, name, json } => Some((id, name, json)),
                _ => None,
            })
            .enumerate()
            .map(|(idx, (id, name, json))| ToolCall {
                id: if id.is_empty() {
                    fallback_call_id(idx)
                } else {
                    id
                },
                name,
                args: parse_arguments(&json),
                result: None,
                ok: false,
                denied: None,
            })
            .collect();
        Ok(ModelReply {
            text: self.text,
            tool_calls,
            usage: self.usage,
            cost: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::ChatMessage;

    fn message(role: ChatRole, content: &str, tool_call_id: Option<&str>) -> ChatMessage {
        ChatMessage {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: tool_call_id.map(str::to_string),
        }
    }

    #[test]
    fn roles_alternate_and_tool_results_come_first() {
        let call = ModelCall {
            agent: crate::effect::Caller::Manager,
            model: None,
            messages: vec![
                message(ChatRole::System, "sys one", None),
                message(ChatRole::User, "task", None),
                message(ChatRole::User, "", None),
                message(ChatRole::Assistant, "", None),
                message(ChatRole::Tool, "result", Some("t1")),
                message(ChatRole::System, "sys two", None),
            ],
            tools: Vec::new().into(),
            turn: 0,
            reply_fields: Default::default(),
        };
        let target = Target {
            kind: super::super::Kind::Anthropic,
            provider: "anthropic".into(),
            model: "claude-x".into(),
            url: "http://127.0.0.1:1/v1/messages".into(),
            key: None,
            key_variable: None,
            temperature: None,
            max_tokens: None,
            reasoning_effort: Some("high".into()),
            context_window: None,
        };
        let post = request(&target, &call, ToolChoice::Auto);
        let body = post.body.json();
        assert_eq!(
            body["system"],
            json!([{ "type": "text", "text": "sys one\n\nsys two", "cache_control": { "type": "ephemeral" } }])
        );
        assert_eq!(body["max_tokens"], json!(DEFAULT_MAX_TOKENS));
        assert!(body.get("reasoning_effort").is_none());
        assert_eq!(
            body["messages"],
            json!([
                { "role": "user", "content": [
                    { "type": "text", "text": "task" },
                    { "type": "text", "text": "(empty)" }
                ] },
                { "role": "assistant", "content": [
                    { "type": "text", "text": "(empty)", "cache_control": { "type": "ephemeral" } }
                ] },
                { "role": "user", "content": [
                    { "type": "tool_result", "tool_use_id": "t1", "content": "result",
                      "cache_control": { "type": "ephemeral" } }
                ] }
            ])
        );
    }
}
