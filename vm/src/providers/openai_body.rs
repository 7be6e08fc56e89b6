//! The OpenAI chat-completions request body written straight into bytes. The bytes are
//! exactly what serialising the document with `serde_json` gives (the tests compare both on
//! random histories).
//!
//! Each agent's last body is kept ([`Bodies`]): the next request of that agent usually
//! carries the same messages and then a few more (the shared history grows by a message or
//! two a turn), so the body keeps the bytes of the messages it carries again, where they
//! are, and writes only the rest. Messages share their text ([`ChatMessage::content`] is an
//! `Arc`), so telling the same message again is a pointer comparison, not a comparison of
//! the whole history.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;

use fuseraft_compiler::ir::ToolChoice;
use serde_json::{json, Value as Json};

use super::body::Body;
use crate::effect::{ChatMessage, ChatRole, ModelCall, ToolSchema};
use crate::json_string::write_str;

/// An agent's body that no request was written for in this many calls is dropped.
const KEEP_CALLS: u64 = 64;

/// Each agent's last body.
#[derive(Debug, Default)]
pub(crate) struct Bodies {
    last: HashMap<String, Last>,
    /// The JSON of the tool lists written lately, newest last. A list is shared by every
    /// call of an agent in a state, so the pointer tells it (and holding it keeps the
    /// address from being reused).
    tools: Vec<KeptTools>,
    /// Calls written so far.
    calls: u64,
}

/// A tool list and its JSON.
type KeptTools = (Arc<[ToolSchema]>, Box<[u8]>);

/// How many tool lists' JSON is kept (one per agent and state in use).
const KEEP_TOOL_LISTS: usize = 16;

/// The body last written for an agent.
#[derive(Debug)]
struct Last {
    /// Shared with the request that sent it: taken back, not copied, once that is done.
    /// It starts with its head, `{"model":…,"messages":[`.
    bytes: Bytes,
    /// The messages it carries, each with where its JSON ends.
    messages: Vec<(ChatMessage, usize)>,
    used: u64,
}

/// Whether `a` and `b` are the same message: the same text (the same shared text, almost
/// always), role, id and calls.
fn same(a: &ChatMessage, b: &ChatMessage) -> bool {
    a.role == b.role
        && (Arc::ptr_eq(&a.content, &b.content) || a.content == b.content)
        && a.tool_call_id == b.tool_call_id
        && a.tool_calls == b.tool_calls
}

impl Bodies {
    /// Appends the JSON of `tools`: kept, or written now and kept.
    fn write_tools(&mut self, out: &mut Vec<u8>, tools: &Arc<[ToolSchema]>) {
        if let Some((_, json)) = self.tools.iter().find(|(kept, _)| Arc::ptr_eq(kept, tools)) {
            out.extend_from_slice(json);
            return;
        }
        let start = out.len();
        write_tool_list(out, tools);
        if self.tools.len() == KEEP_TOOL_LISTS {
            self.tools.remove(0);
        }
        self.tools.push((Arc::clone(tools), out[start..].into()));
    }

    /// Drops the bodies of agents no request was written for lately, every so often.
    fn sweep(&mut self) {
        if !self.calls.is_multiple_of(KEEP_CALLS) {
            return;
        }
        let oldest = self.calls.saturating_sub(KEEP_CALLS);
        self.last.retain(|_, last| last.used >= oldest);
    }

    /// The start of `agent`'s next body, whose head is `head` and whose messages are
    /// `messages`: its last body cut after the messages both carry (its bytes taken back
    /// when the request that sent them is done, else copied) and those messages with their
    /// ends; or only `head`. (A head is the model as a JSON string between fixed bytes, so
    /// one that starts another is that one.)
    fn start(
        &mut self,
        agent: &str,
        head: &[u8],
        messages: &[ChatMessage],
    ) -> (Vec<u8>, Vec<(ChatMessage, usize)>) {
        let Some(Last {
            bytes,
            messages: mut kept,
            ..
        }) = self
            .last
            .remove(agent)
            .filter(|last| last.bytes.starts_with(head))
        else {
            let mut out = Vec::with_capacity(head.len() + 1024);
            out.extend_from_slice(head);
            return (out, Vec::new());
        };
        let keep = kept
            .iter()
            .zip(messages)
            .take_while(|((kept, _), message)| same(kept, message))
            .count();
        let cut = keep
            .checked_sub(1)
            .map_or(head.len(), |last_kept| kept[last_kept].1);
        let mut out = match bytes.try_into_mut() {
            Ok(mine) => Vec::from(mine),
            Err(shared) => shared[..cut].to_vec(),
        };
        out.truncate(cut);
        kept.truncate(keep);
        (out, kept)
    }
}

/// `tools` in the API's shape: `[{"type": "function", "function": {…}}, …]`.
fn write_tool_list(out: &mut Vec<u8>, tools: &[ToolSchema]) {
    write_array(out, tools, |out, tool| {
        out.extend_from_slice(b"{\"type\":\"function\",\"function\":{\"name\":");
        write_str(out, &tool.name);
        out.extend_from_slice(b",\"description\":");
        write_str(out, &tool.description);
        out.extend_from_slice(b",\"parameters\":");
        write_json(out, &tool.parameters);
        out.extend_from_slice(b"}}");
    });
}

/// `items` as a JSON array, each written by `write_item`.
fn write_array<T>(out: &mut Vec<u8>, items: &[T], write_item: impl Fn(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (idx, item) in items.iter().enumerate() {
        if idx > 0 {
            out.push(b',');
        }
        write_item(out, item);
    }
    out.push(b']');
}

/// Any serialisable value, as `serde_json` writes it.
fn write_json(out: &mut Vec<u8>, value: &Json) {
    let _ = serde_json::to_writer(&mut *out, value);
}

/// One message in the API's shape. An assistant message with tool calls carries its text
/// (`""` when it has none, never `null`: OpenAI accepts either with tool calls, but
/// llama.cpp's server, and others, answer `content: null` with a 500).
fn write_message(out: &mut Vec<u8>, message: &ChatMessage) {
    let role = match message.role {
        ChatRole::System => "system",
        ChatRole::User => "user",
        ChatRole::Assistant => "assistant",
        ChatRole::Tool => "tool",
    };
    out.extend_from_slice(b"{\"role\":\"");
    out.extend_from_slice(role.as_bytes());
    out.push(b'"');
    if message.role == ChatRole::Tool {
        out.extend_from_slice(b",\"tool_call_id\":");
        write_str(out, message.tool_call_id.as_deref().unwrap_or_default());
    }
    out.extend_from_slice(b",\"content\":");
    write_str(out, &message.content);
    if message.role == ChatRole::Assistant && !message.tool_calls.is_empty() {
        out.extend_from_slice(b",\"tool_calls\":");
        write_array(out, &message.tool_calls, |out, call| {
            out.extend_from_slice(b"{\"id\":");
            write_str(out, &call.id);
            out.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":");
            write_str(out, &call.name);
            out.extend_from_slice(b",\"arguments\":");
            write_str(out, &call.args.to_string());
            out.extend_from_slice(b"}}");
        });
    }
    out.push(b'}');
}

/// What the per-call parts of a body depend on besides the call.
pub(crate) struct Options<'a> {
    pub model: &'a str,
    pub choice: ToolChoice,
    pub temperature: Option<f64>,
    /// Sent as `max_completion_tokens` to OpenAI's own service, else as `max_tokens`.
    pub max_tokens: Option<u64>,
    pub official: bool,
    pub reasoning_effort: Option<&'a str>,
    /// `prompt_cache_key`, for servers that take it.
    pub cache_key: Option<&'a str>,
    /// `response_format`, when the reply must be JSON (`reply_format.rs`).
    pub format: Option<&'a Json>,
}

/// The body of `call`: `{"model", "messages", "tools"?, "tool_choice"?, "stream",
/// "stream_options", "temperature"?, "max_tokens" | "max_completion_tokens"?,
/// "reasoning_effort"?, "prompt_cache_key"?, "response_format"?}`, in that order.
pub(crate) fn write(call: &ModelCall, options: &Options<'_>, bodies: &mut Bodies) -> Body {
    bodies.calls += 1;
    let mut head = Vec::with_capacity(64);
    head.extend_from_slice(b"{\"model\":");
    write_str(&mut head, options.model);
    head.extend_from_slice(b",\"messages\":[");
    let (mut out, mut messages) = bodies.start(&call.agent.queue(), &head, &call.messages);
    for (idx, message) in call.messages.iter().enumerate().skip(messages.len()) {
        if idx > 0 {
            out.push(b',');
        }
        write_message(&mut out, message);
        messages.push((message.clone(), out.len()));
    }
    out.push(b']');
    if !call.tools.is_empty() {
        out.extend_from_slice(b",\"tools\":");
        bodies.write_tools(&mut out, &call.tools);
        match options.choice {
            // `"auto"` is the API's default with tools, but llama.cpp's Python server reads
            // a missing `tool_choice` as `"none"` and leaves the tools out of the prompt.
            ToolChoice::Auto => out.extend_from_slice(b",\"tool_choice\":\"auto\""),
            ToolChoice::Required => {
                out.extend_from_slice(b",\"tool_choice\":");
                write_json(&mut out, &required_choice(call));
            }
            ToolChoice::None => out.extend_from_slice(b",\"tool_choice\":\"none\""),
        }
    }
    out.push(b',');
    let stream_start = out.len();
    out.extend_from_slice(b"\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    let stream = stream_start..out.len();
    if let Some(temperature) = options.temperature {
        out.extend_from_slice(b",\"temperature\":");
        write_json(&mut out, &json!(temperature));
    }
    if let Some(max_tokens) = options.max_tokens {
        // OpenAI's own service deprecated `max_tokens` (reasoning models reject it);
        // other servers may not know `max_completion_tokens`.
        out.extend_from_slice(if options.official {
            b",\"max_completion_tokens\":"
        } else {
            b",\"max_tokens\":"
        });
        write_json(&mut out, &json!(max_tokens));
    }
    if let Some(effort) = options.reasoning_effort {
        out.extend_from_slice(b",\"reasoning_effort\":");
        write_str(&mut out, effort);
    }
    if let Some(key) = options.cache_key {
        out.extend_from_slice(b",\"prompt_cache_key\":");
        write_str(&mut out, key);
    }
    let format = options.format.map(|format| {
        let start = out.len();
        out.extend_from_slice(b",\"response_format\":");
        write_json(&mut out, format);
        start..out.len()
    });
    out.push(b'}');
    let bytes = Bytes::from(out);
    bodies.last.insert(
        call.agent.to_string(),
        Last {
            bytes: bytes.clone(),
            messages,
            used: bodies.calls,
        },
    );
    bodies.sweep();
    Body::Written {
        bytes,
        stream: Some(stream),
        format,
    }
}

/// `FunctionChoice: required` on the wire: with one tool offered, that tool by name
/// (`{"type": "function", "function": {"name": …}}`), which asks the same of OpenAI and is the
/// only form llama.cpp's Python server honours (its `chatml-function-calling` format then
/// constrains the arguments to the tool's JSON schema, `enum`s included, and it fails on
/// `"required"`); with several, `"required"`.
fn required_choice(call: &ModelCall) -> Json {
    match &call.tools[..] {
        [only] => json!({ "type": "function", "function": { "name": only.name } }),
        _ => json!("required"),
    }
}

#[cfg(test)]
#[path = "openai_body_tests.rs"]
mod tests;
