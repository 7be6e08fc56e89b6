//! Ollama's native chat API (`POST /api/chat`): the request body and the NDJSON stream
//! decoder.
//!
//! Tools go in OpenAI's shape; tool calls come back whole (`message.tool_calls[].function`
//! with `arguments` as an object), usually in one line; a tool result is a `tool` message
//! naming the tool (`tool_name`). Every line is a JSON object; the last has `done: true`
//! with `prompt_eval_count` and `eval_count`. An `{"error": …}` line fails the attempt; a
//! stream without the `done` line is truncated.

use fuseraft_compiler::ir::ToolChoice;
use serde_json::{json, Map, Value as Json};

use super::body::Body;
use super::http::{Decoder, Failure, Post};
use super::sse::{self, Lines};
use super::{fallback_call_id, parse_arguments, Target, TokenSink};
use crate::effect::{ChatRole, ModelCall, ModelReply};
use crate::history::{ToolCall, Usage};

/// The request for `call`. `choice` `none` sends no tools (Ollama has no `tool_choice`).
pub(crate) fn request(target: &Target, call: &ModelCall, choice: ToolChoice) -> Post {
    let mut body = Map::new();
    body.insert("model".into(), json!(target.model));
    body.insert("messages".into(), Json::Array(messages(call)));
    if !call.tools.is_empty() && choice != ToolChoice::None {
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
    }
    body.insert("stream".into(), json!(true));
    let mut options = Map::new();
    if let Some(temperature) = target.temperature {
        options.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = target.max_tokens {
        options.insert("num_predict".into(), json!(max_tokens));
    }
    if !options.is_empty() {
        body.insert("options".into(), Json::Object(options));
    }
    if !call.reply_fields.is_empty() {
        // Ollama constrains the reply to a JSON Schema given as `format`.
        body.insert(
            "format".into(),
            super::reply_format::schema(&call.reply_fields),
        );
    }
    Post {
        label: target.label(),
        url: target.url.clone(),
        key_variable: target.key_variable.clone(),
        headers: Vec::new(),
        // Ollama itself takes no key; a proxy in front of it may (ApiKeyEnvVar).
        auth: target.key.clone().map(|key| ("authorization", key)),
        body: Body::Json(Json::Object(body)),
        forced: None,
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
                        // Arguments are an object on this API; text that was not JSON
                        // goes as `{}` (the tool reported the bad arguments already).
                        let arguments = if call.args.is_object() {
                            call.args.clone()
                        } else {
                            json!({})
                        };
                        json!({ "function": { "name": call.name, "arguments": arguments } })
                    })
                    .collect();
                json!({ "role": "assistant", "content": message.content, "tool_calls": calls })
            }
            ChatRole::Tool => {
                // Ollama matches results to calls by the tool's name.
                let name = message.tool_call_id.as_deref().and_then(|id| {
                    call.messages
                        .iter()
                        .flat_map(|message| &message.tool_calls)
                        .find(|call| call.id == id)
                        .map(|call| call.name.clone())
                });
                let mut tool = json!({ "role": "tool", "content": message.content });
                if let Some(name) = name {
                    tool["tool_name"] = json!(name);
                }
                tool
            }
        })
        .collect()
}

/// Decodes an `/api/chat` NDJSON stream.
pub(crate) struct Stream {
    agent: String,
    sink: Option<TokenSink>,
    lines: Lines,
    text: String,
    calls: Vec<ToolCall>,
    usage: Usage,
    done: bool,
    /// Bytes of text, tool names and arguments so far.
    size: usize,
}

impl Stream {
    pub(crate) fn new(agent: &str, sink: Option<TokenSink>) -> Stream {
        Stream {
            agent: agent.to_string(),
            sink,
            lines: Lines::default(),
            text: String::new(),
            calls: Vec::new(),
            usage: Usage::default(),
            done: false,
            size: 0,
        }
    }

    fn line(&mut self, line: &str) -> Result<(), Failure> {
        if line.trim().is_empty() || self.done {
            return Ok(());
        }
        let chunk = sse::json(line)?;
        if let Some(error) = chunk.get("error").filter(|error| !error.is_null()) {
            let message = error
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            return Err(Failure::fatal(format!(
                "the stream reported an error: {message}"
            )));
        }
        if let Some(message) = chunk.get("message") {
            if let Some(text) = message.get("content").and_then(Json::as_str) {
                if !text.is_empty() {
                    self.size += text.len();
                    self.text.push_str(text);
                    if let Some(sink) = &self.sink {
                        sink(&self.agent, text);
                    }
                }
            }
            if let Some(calls) = message.get("tool_calls").and_then(Json::as_array) {
                for call in calls {
                    let function = call.get("function").unwrap_or(&Json::Null);
                    let args = match function.get("arguments") {
                        Some(Json::String(raw)) => parse_arguments(raw),
                        Some(Json::Null) | None => Json::Object(Map::new()),
                        Some(args) => args.clone(),
                    };
                    let id = call
                        .get("id")
                        .and_then(Json::as_str)
                        .filter(|id| !id.is_empty())
                        .map(str::to_string)
                        .unwrap_or_else(|| fallback_call_id(self.calls.len()));
                    let name = function
                        .get("name")
                        .and_then(Json::as_str)
                        .unwrap_or("")
                        .to_string();
                    self.size += name.len() + args.to_string().len();
                    self.calls.push(ToolCall {
                        id,
                        name,
                        args,
                        result: None,
                        ok: false,
                        denied: None,
                    });
                }
            }
        }
        if chunk.get("done").and_then(Json::as_bool) == Some(true) {
            let count = |key: &str| chunk.get(key).and_then(Json::as_u64).unwrap_or(0);
            self.usage = Usage {
                input_tokens: count("prompt_eval_count"),
                output_tokens: count("eval_count"),
                ..Usage::default()
            };
            self.done = true;
        }
        Ok(())
    }
}

impl Decoder for Stream {
    fn feed(&mut self, chunk: &[u8]) -> Result<(), Failure> {
        for line in self.lines.push(chunk)? {
            self.line(&line)?;
        }
        Ok(())
    }

    fn size(&self) -> usize {
        self.size
    }

    fn calls(&self) -> usize {
        self.calls.len()
    }

    fn finish(mut self) -> Result<ModelReply, Failure> {
        let rest = String::from_utf8_lossy(self.lines.rest()).into_owned();
        if !rest.trim().is_empty() {
            // A last line without its newline is fine if it is whole JSON.
            if serde_json::from_str::<Json>(&rest).is_err() {
                return Err(Failure::transient(format!(
                    "the response was cut off mid-line: `{}`",
                    sse::snippet(&rest)
                )));
            }
            self.line(&rest)?;
        }
        if !self.done {
            return Err(Failure::transient(
                "the stream ended before its `done: true` line (truncated response)",
            ));
        }
        Ok(ModelReply {
            text: self.text,
            tool_calls: self.calls,
            usage: self.usage,
            ..ModelReply::default()
        })
    }
}
