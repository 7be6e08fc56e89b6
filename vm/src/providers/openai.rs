//! OpenAI-compatible chat completions (OpenAI, Azure OpenAI, vLLM, llama.cpp, LM Studio,
//! Ollama's `/v1`): the request body and the SSE stream decoder.
//!
//! Streamed with `stream_options.include_usage`: text arrives in `choices[0].delta.content`,
//! tool calls as `delta.tool_calls[i]` fragments (id and name first, then pieces of the
//! `arguments` JSON) assembled by `index`, usage in the last chunk, then `data: [DONE]`.
//! A stream that ends before `[DONE]` is truncated, and retried.

use fuseraft_compiler::ir::ToolChoice;
use serde_json::{json, Map, Value as Json};

use super::http::{Decoder, Failure, Post};
use super::sse::{self, Sse};
use super::{fallback_call_id, parse_arguments, Kind, Target, TokenSink};
use crate::effect::{ChatRole, ModelCall, ModelReply};
use crate::history::{ToolCall, Usage};

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

#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

/// Decodes a chat-completions SSE stream.
pub(crate) struct Stream {
    agent: String,
    sink: Option<TokenSink>,
    sse: Sse,
    text: String,
    calls: Vec<PartialCall>,
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
            sse: Sse::default(),
            text: String::new(),
            calls: Vec::new(),
            usage: Usage::default(),
            done: false,
            size: 0,
        }
    }

    fn event(&mut self, data: &str) -> Result<(), Failure> {
        if self.done {
            return Ok(());
        }
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk = sse::json(data)?;
        if let Some(error) = chunk.get("error").filter(|error| !error.is_null()) {
            let message = error
                .get("message")
                .and_then(Json::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            return Err(Failure::fatal(format!(
                "the stream reported an error: {message}"
            )));
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| !usage.is_null()) {
            let count = |key: &str| usage.get(key).and_then(Json::as_u64).unwrap_or(0);
            self.usage = Usage {
                input_tokens: count("prompt_tokens"),
                output_tokens: count("completion_tokens"),
            };
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Json::as_array)
            .and_then(|choices| choices.first())
        else {
            return Ok(());
        };
        let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Json::as_str) {
            if !text.is_empty() {
                self.size += text.len();
                self.text.push_str(text);
                if let Some(sink) = &self.sink {
                    sink(&self.agent, text);
                }
            }
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Json::as_array) {
            for fragment in calls {
                self.tool_fragment(fragment);
            }
        }
        Ok(())
    }

    /// Folds one `tool_calls[i]` fragment into the call it continues.
    fn tool_fragment(&mut self, fragment: &Json) {
        let index = fragment.get("index").and_then(Json::as_u64);
        let id = fragment.get("id").and_then(Json::as_str).unwrap_or("");
        let function = fragment.get("function");
        let name = function
            .and_then(|function| function.get("name"))
            .and_then(Json::as_str)
            .unwrap_or("");
        let arguments = match function.and_then(|function| function.get("arguments")) {
            Some(Json::String(text)) => text.clone(),
            Some(Json::Null) | None => String::new(),
            // Some servers send the arguments as an object.
            Some(other) => other.to_string(),
        };
        // The call this continues: same index (unless a new id says otherwise), or the
        // last one when the server sends no index and no id.
        let existing = match index {
            Some(index) => self
                .calls
                .iter()
                .rposition(|call| call.index == Some(index))
                .filter(|&at| {
                    id.is_empty() || self.calls[at].id.is_empty() || self.calls[at].id == id
                }),
            None if id.is_empty() => self.calls.len().checked_sub(1),
            None => None,
        };
        let call = match existing {
            Some(at) => &mut self.calls[at],
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.last_mut().expect("just pushed")
            }
        };
        if call.id.is_empty() {
            call.id = id.to_string();
        }
        if call.name.is_empty() {
            call.name = name.to_string();
            self.size += name.len();
        }
        self.size += arguments.len();
        call.arguments.push_str(&arguments);
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
        // A `chat.completion` object: `choices[0].message` in place of deltas.
        let text = std::str::from_utf8(body)
            .map_err(|_| Failure::fatal("the response is not valid UTF-8"))?;
        self.event(text)?;
        self.done = true;
        self.finish()
    }

    fn size(&self) -> usize {
        self.size
    }

    fn calls(&self) -> usize {
        self.calls.len()
    }

    fn finish(mut self) -> Result<ModelReply, Failure> {
        if let Some(event) = self.sse.finish()? {
            self.event(&event.data)?;
        }
        if !self.done {
            return Err(Failure::transient(
                "the stream ended before `data: [DONE]` (truncated response)",
            ));
        }
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(idx, call)| ToolCall {
                id: if call.id.is_empty() {
                    fallback_call_id(idx)
                } else {
                    call.id
                },
                name: call.name,
                args: parse_arguments(&call.arguments),
                result: None,
                ok: false,
            })
            .collect();
        Ok(ModelReply {
            text: self.text,
            tool_calls,
            usage: self.usage,
            ..ModelReply::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effect::ChatMessage;

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

    fn decode(body: &str) -> Result<ModelReply, Failure> {
        let mut stream = Stream::new("A", None);
        stream.feed(body.as_bytes())?;
        stream.finish()
    }

    #[test]
    fn tool_fragments_without_index_or_with_reused_index() {
        // No `index`: a fragment with an id starts a call, one without continues it.
        let body = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\":1}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"h\",\"arguments\":\"not json\"}}]}}]}\n\n",
            "data: [DONE]\n\n",
        );
        let reply = decode(body).unwrap();
        let calls: Vec<(&str, &str, Json)> = reply
            .tool_calls
            .iter()
            .map(|call| (call.id.as_str(), call.name.as_str(), call.args.clone()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("a", "f", json!({ "x": 1 })),
                ("b", "g", json!({})),
                // Arguments that are not JSON reach the tool as text, which reports them.
                ("c", "h", json!("not json")),
            ]
        );
    }

    #[test]
    fn an_error_in_the_stream_fails_the_call() {
        let error =
            decode("data: {\"error\":{\"message\":\"context length exceeded\"}}\n\n").unwrap_err();
        assert_eq!(
            error.message,
            "the stream reported an error: context length exceeded"
        );
        assert!(!error.retry);
    }
}
