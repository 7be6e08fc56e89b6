//! Decoding an OpenAI chat-completions response: `chat.completion.chunk` events of an SSE
//! stream (or one `chat.completion` document) into a reply.
//!
//! The hot path of a streamed reply: each event is deserialised into small typed structs
//! that borrow from the event's text (`Cow<str>`: borrowed unless the JSON escapes
//! something), never into a generic `serde_json::Value` tree, and the SSE framing hands
//! each event over without allocating (`sse::Sse::each`); the usual text-only chunk is read
//! by a scanner first (`openai_chunk`), falling back to serde for any other shape. Unknown
//! fields are skipped; an event that is not JSON, or whose known fields have other types,
//! fails the call.

use std::borrow::Cow;

use serde::Deserialize;

use super::http::{Decoder, Failure};
use super::openai_chunk::Chunks;
use super::openai_framed;
use super::sse::{self, Sse};
use super::{fallback_call_id, parse_arguments, TokenSink};
use crate::effect::ModelReply;
use crate::history::{ToolCall, Usage};

/// One event's JSON: a `chat.completion.chunk`, a `chat.completion`, or an error.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<UsageFields>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    /// A whole `chat.completion` (a server that did not stream) has `message`.
    #[serde(borrow, default)]
    message: Option<Delta<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Fragment<'a>>>,
}

#[derive(Deserialize)]
struct Fragment<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<Function<'a>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Arguments<'a>>,
}

/// Tool arguments: a JSON string (the API's shape), or an object some servers send.
#[derive(Deserialize)]
#[serde(untagged)]
enum Arguments<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Other(serde_json::Value),
}

#[derive(Deserialize)]
struct UsageFields {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
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
    /// The usual chunks' scanner, which knows the shape of this stream's chunks.
    chunks: Chunks,
    /// The reply's text so far, always UTF-8: only checked text and bytes checked to be
    /// ASCII are appended (`openai_framed::usual_events`, `openai_chunk::string_into`);
    /// checked again once it is whole.
    text: Vec<u8>,
    calls: Vec<PartialCall>,
    usage: Usage,
    done: bool,
    /// Bytes of text, tool names and arguments so far.
    size: usize,
}

/// The room a reply's text starts with.
const REPLY_BYTES: usize = 4096;

/// The reply's text bytes as a `String`; they are UTF-8 by construction (never lost if not).
fn utf8(text: Vec<u8>) -> String {
    String::from_utf8(text)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

impl Stream {
    pub(crate) fn new(agent: &str, sink: Option<TokenSink>) -> Stream {
        Stream {
            agent: agent.to_string(),
            sink,
            sse: Sse::default(),
            chunks: Chunks::default(),
            // A reply of a few kilobytes grows into it without copying itself again.
            text: Vec::with_capacity(REPLY_BYTES),
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
        match self.chunks.read(data) {
            Some(text) => {
                self.text(&text);
                Ok(())
            }
            None => self.typed(data),
        }
    }

    /// The events of one chunk of the body. Between events, the usual chunks of the learnt
    /// shape are read straight from the bytes (`openai_framed`); anything else goes through
    /// the SSE framing up to the next blank line, and then the bytes are looked at again.
    fn events(&mut self, mut chunk: &[u8]) -> Result<(), Failure> {
        loop {
            if !self.done && self.sse.idle() {
                let before = self.text.len();
                // Checked ASCII or checked text: the reply's bytes stay UTF-8.
                let read = openai_framed::usual_events(&self.chunks, chunk, &mut self.text);
                chunk = chunk.get(read..).unwrap_or_default();
                self.size += self.text.len() - before;
            }
            if chunk.is_empty() {
                return Ok(());
            }
            let (piece, rest) =
                chunk.split_at(openai_framed::event_end(chunk).unwrap_or(chunk.len()));
            let mut sse = std::mem::take(&mut self.sse);
            let fed = sse.each(piece, &mut |_, data| self.event(data));
            self.sse = sse;
            fed?;
            chunk = rest;
        }
    }

    /// Text the reply adds: kept, counted and shown as it comes.
    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.size += text.len();
        self.text.extend_from_slice(text.as_bytes());
    }

    /// Shows the text added since `from` (what one piece of the body brought: the sink
    /// is called once per network chunk, not once per event).
    fn show(&self, from: usize) {
        let new = self.text.get(from..).map(std::str::from_utf8);
        if let (Some(sink), Some(Ok(text))) = (&self.sink, new) {
            if !text.is_empty() {
                sink(&self.agent, text);
            }
        }
    }

    /// An event of any shape, decoded by serde into the typed structs.
    fn typed(&mut self, data: &str) -> Result<(), Failure> {
        let chunk: Chunk<'_> = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(error) => {
                // Not JSON at all (the usual message), or JSON of another shape.
                sse::json(data)?;
                return Err(Failure::fatal(format!(
                    "a stream event of an unexpected shape ({error}): `{}`",
                    sse::snippet(data)
                )));
            }
        };
        if let Some(error) = chunk.error.filter(|error| !error.is_null()) {
            let message = error
                .get("message")
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            return Err(Failure::fatal(format!(
                "the stream reported an error: {message}"
            )));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
                cache_read_tokens: usage
                    .prompt_tokens_details
                    .and_then(|details| details.cached_tokens)
                    .unwrap_or(0),
                cache_write_tokens: 0,
            };
        }
        let Some(choice) = chunk.choices.and_then(|choices| choices.into_iter().next()) else {
            return Ok(());
        };
        let Some(delta) = choice.delta.or(choice.message) else {
            return Ok(());
        };
        if let Some(text) = delta.content {
            self.text(&text);
        }
        for fragment in delta.tool_calls.into_iter().flatten() {
            self.tool_fragment(fragment);
        }
        Ok(())
    }

    /// Folds one `tool_calls[i]` fragment into the call it continues.
    fn tool_fragment(&mut self, fragment: Fragment<'_>) {
        let index = fragment.index;
        let id = fragment.id.unwrap_or_default();
        let (name, arguments) = match fragment.function {
            Some(function) => (
                function.name.unwrap_or_default(),
                match function.arguments {
                    Some(Arguments::Text(text)) => text,
                    Some(Arguments::Other(serde_json::Value::Null)) | None => Cow::Borrowed(""),
                    // Some servers send the arguments as an object.
                    Some(Arguments::Other(other)) => Cow::Owned(other.to_string()),
                },
            ),
            None => (Cow::Borrowed(""), Cow::Borrowed("")),
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
            call.id = id.into_owned();
        }
        if call.name.is_empty() {
            self.size += name.len();
            call.name = name.into_owned();
        }
        self.size += arguments.len();
        call.arguments.push_str(&arguments);
    }
}

/// What serde's decoding of one event does to a fresh stream: the text, the number of
/// tool calls and the usage it yields, or the failure's message (for the scanner's tests).
#[cfg(test)]
pub(super) fn typed_outcome(data: &str) -> Result<(String, usize, Usage), String> {
    let mut stream = Stream::new("A", None);
    match stream.typed(data) {
        Ok(()) => Ok((utf8(stream.text), stream.calls.len(), stream.usage)),
        Err(failure) => Err(failure.message),
    }
}

impl Decoder for Stream {
    fn feed(&mut self, chunk: &[u8]) -> Result<(), Failure> {
        let from = self.text.len();
        let fed = self.events(chunk);
        // Shown even when the chunk ends in a failure: what streamed is on screen.
        self.show(from);
        fed
    }

    fn whole(mut self, body: &[u8]) -> Result<ModelReply, Failure> {
        // A `chat.completion` object: `choices[0].message` in place of deltas.
        let text = std::str::from_utf8(body)
            .map_err(|_| Failure::fatal("the response is not valid UTF-8"))?;
        self.event(text)?;
        self.show(0);
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
            let from = self.text.len();
            self.event(&event.data)?;
            self.show(from);
        }
        if !self.done {
            if self.text.is_empty() && self.calls.is_empty() {
                return Err(Failure::empty_stream());
            }
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
                denied: None,
            })
            .collect();
        Ok(ModelReply {
            text: utf8(self.text),
            tool_calls,
            usage: self.usage,
            cost: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value as Json};

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
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"d\",\"function\":{\"name\":\"i\",\"arguments\":{\"y\":2}}}]}}]}\n\n",
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
                // Arguments sent as an object rather than a string.
                ("d", "i", json!({ "y": 2 })),
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

    #[test]
    fn escaped_text_nulls_and_unknown_fields_decode_and_usage_counts_cached_tokens() {
        let body = concat!(
            "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"system_fingerprint\":null,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"line one\\nsnow \\u2603 \\\"quoted\\\"\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":12,\"prompt_tokens_details\":{\"cached_tokens\":512}}}\n\n",
            "data: [DONE]\n\n",
        );
        let tokens = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let seen = tokens.clone();
        let sink: TokenSink = std::sync::Arc::new(move |_: &str, text: &str| {
            seen.lock().unwrap().push_str(text);
        });
        let mut stream = Stream::new("A", Some(sink));
        // Fed a byte at a time: events, lines and UTF-8 cut anywhere.
        for byte in body.as_bytes().chunks(1) {
            stream.feed(byte).unwrap();
        }
        let reply = stream.finish().unwrap();
        assert_eq!(reply.text, "line one\nsnow ☃ \"quoted\"");
        assert_eq!(*tokens.lock().unwrap(), reply.text);
        assert_eq!(
            (reply.usage.input_tokens, reply.usage.output_tokens),
            (900, 12)
        );
        assert_eq!(reply.usage.cache_read_tokens, 512);
    }

    #[test]
    fn malformed_or_misshapen_events_fail_the_call() {
        let error = decode("data: {\"choices\":[{\"delta\"\n\n").unwrap_err();
        assert!(
            error.message.starts_with("malformed JSON in the response"),
            "{}",
            error.message
        );
        let error = decode("data: {\"choices\":[{\"delta\":{\"content\":7}}]}\n\n").unwrap_err();
        assert!(
            error
                .message
                .starts_with("a stream event of an unexpected shape"),
            "{}",
            error.message
        );
        assert!(!error.retry);
    }
}
