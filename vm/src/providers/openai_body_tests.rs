//! Tests of `openai_body.rs`: the written body against the document serialised from
//! scratch with `serde_json` (the way requests were built before bodies were kept), on
//! random histories that grow, shrink and change as a run's requests do.

use fuseraft_compiler::ir::ToolChoice;
use serde_json::{json, Map, Value as Json};

use super::{same, write, Bodies, Options};
use crate::effect::{ChatMessage, ChatRole, ModelCall, ToolSchema};
use crate::history::ToolCall;
use crate::providers::body::Form;

/// The body as one JSON document, serialised by `serde_json`: the reference.
fn reference(call: &ModelCall, options: &Options<'_>) -> Json {
    let mut body = Map::new();
    body.insert("model".into(), json!(options.model));
    let messages: Vec<Json> = call
        .messages
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
                json!({ "role": "assistant", "content": message.content, "tool_calls": calls })
            }
            ChatRole::Tool => json!({
                "role": "tool",
                "tool_call_id": message.tool_call_id.clone().unwrap_or_default(),
                "content": message.content,
            }),
        })
        .collect();
    body.insert("messages".into(), Json::Array(messages));
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
        match options.choice {
            ToolChoice::Auto => {
                body.insert("tool_choice".into(), json!("auto"));
            }
            ToolChoice::Required => {
                let choice = match &call.tools[..] {
                    [only] => json!({ "type": "function", "function": { "name": only.name } }),
                    _ => json!("required"),
                };
                body.insert("tool_choice".into(), choice);
            }
            ToolChoice::None => {
                body.insert("tool_choice".into(), json!("none"));
            }
        }
    }
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = options.max_tokens {
        let name = if options.official {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(name.into(), json!(max_tokens));
    }
    if let Some(effort) = options.reasoning_effort {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    if let Some(key) = options.cache_key {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if let Some(format) = options.format {
        body.insert("response_format".into(), format.clone());
    }
    Json::Object(body)
}

/// xorshift64*: a fixed seed, so a failure is the same on every run.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn text(&mut self) -> String {
        const PARTS: [&str; 12] = [
            "Plan the work.",
            " ",
            "\"quoted\"",
            "back\\slash",
            "line\nbreak\ttab",
            "\u{0}\u{1f}\u{7f}",
            "caf\u{e9} \u{2603} \u{1f980}",
            "\u{2028}\u{2029}",
            "</script>",
            "[Developer]: ",
            "HANDOFF TO TESTER",
            "",
        ];
        let mut text = String::new();
        for _ in 0..self.below(8) {
            text.push_str(PARTS[self.below(PARTS.len())]);
        }
        if self.below(5) == 0 {
            // Longer than both ends the fingerprint reads.
            text.push_str(&"x".repeat(self.below(400)));
            text.push_str(PARTS[self.below(PARTS.len())]);
        }
        text
    }

    fn args(&mut self) -> Json {
        match self.below(4) {
            0 => json!({}),
            1 => json!({ "path": self.text(), "content": self.text() }),
            2 => json!({ "n": self.below(1000), "f": 0.25, "list": [self.text(), null, true] }),
            _ => Json::String(self.text()),
        }
    }

    fn message(&mut self) -> ChatMessage {
        let role = [
            ChatRole::System,
            ChatRole::User,
            ChatRole::Assistant,
            ChatRole::Tool,
        ][self.below(4)];
        let tool_calls = if role == ChatRole::Assistant && self.below(2) == 0 {
            (0..1 + self.below(3))
                .map(|idx| ToolCall {
                    id: format!("call_{idx}_{}", self.below(9)),
                    name: ["write_file", "read_file", "handoff", "Shell-run"][self.below(4)].into(),
                    args: self.args(),
                    result: None,
                    ok: true,
                    denied: None,
                })
                .collect()
        } else {
            Vec::new()
        };
        ChatMessage {
            role,
            content: self.text().into(),
            tool_calls,
            tool_call_id: (role == ChatRole::Tool && self.below(4) != 0)
                .then(|| format!("call_{}", self.below(9))),
        }
    }

    fn tools(&mut self) -> Vec<ToolSchema> {
        (0..self.below(4))
            .map(|idx| ToolSchema {
                name: format!("tool_{idx}"),
                description: self.text(),
                parameters: json!({
                    "type": "object",
                    "properties": { "path": { "type": "string", "description": self.text() } },
                    "required": ["path"],
                }),
            })
            .collect()
    }
}

#[test]
fn written_bodies_are_byte_for_byte_the_serde_serialisation() {
    let mut random = Random(0x5eed_f00d_1234_5678);
    // One cache for every case, as for a run: each history continues, cuts or changes the
    // one before it, so kept bodies are written on, cut, copied and swept.
    let mut bodies = Bodies::default();
    let mut history: Vec<ChatMessage> = Vec::new();
    let (mut reused, mut total) = (0usize, 0usize);
    // A body still held (a request in flight) when the next is written: its bytes are
    // copied, not taken back.
    let mut held = None;
    // A tool list is often the very list of the call before (an agent's, in its state).
    let mut tools: std::sync::Arc<[ToolSchema]> = random.tools().into();
    for case in 0..600 {
        if random.below(2) == 0 {
            tools = random.tools().into();
        }
        match random.below(6) {
            0 => history.clear(),
            1 if !history.is_empty() => {
                // Fitting leaves older messages out; a window keeps the newest.
                let drop = random.below(history.len());
                history.drain(1.min(history.len())..1 + drop.min(history.len() - 1));
            }
            2 if !history.is_empty() => {
                // A message changed in place (a tool result cut to fit).
                let at = random.below(history.len());
                history[at].content = format!("{}!", history[at].content).into();
            }
            _ => {}
        }
        for _ in 0..random.below(4) {
            history.push(random.message());
        }
        let call = ModelCall {
            agent: crate::effect::Caller::from_queue(["Planner", "Critic"][random.below(2)]),
            model: None,
            messages: history.clone(),
            tools: std::sync::Arc::clone(&tools),
            turn: case,
            reply_fields: Default::default(),
        };
        let temperatures = [None, Some(0.0), Some(0.2), Some(1.0 / 3.0), Some(1e-7)];
        let format = json!({ "type": "json_object", "schema": { "type": "object" } });
        let options = Options {
            model: ["gpt-4o", "qwen \"2.5\"", ""][random.below(3)],
            choice: [ToolChoice::Auto, ToolChoice::Required, ToolChoice::None][random.below(3)],
            temperature: temperatures[random.below(temperatures.len())],
            max_tokens: [None, Some(0), Some(4096), Some(u64::MAX)][random.below(4)],
            official: random.below(2) == 0,
            reasoning_effort: [None, Some("low"), Some("high")][random.below(3)],
            cache_key: [None, Some("fuseraft-0123456789abcdef")][random.below(2)],
            format: [None, Some(&format)][random.below(2)],
        };
        // How many messages the agent's last body carries again, in front.
        let kept = bodies
            .last
            .get(call.agent.queue().as_ref())
            .map_or(0, |last| {
                last.messages
                    .iter()
                    .zip(&history)
                    .take_while(|((kept, _), message)| same(kept, message))
                    .count()
            });
        let body = write(&call, &options, &mut bodies);
        let expected = reference(&call, &options);
        let form = |unstreamed, unformatted| Form {
            unstreamed,
            unformatted,
        };
        let written = body.bytes(form(false, false)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&written),
            serde_json::to_string(&expected).unwrap(),
            "case {case}"
        );
        // Without streaming: the same document, `stream` false and no `stream_options`.
        let mut unstreamed = expected;
        unstreamed["stream"] = json!(false);
        unstreamed.as_object_mut().unwrap().remove("stream_options");
        let sent: Json = serde_json::from_slice(&body.bytes(form(true, false)).unwrap()).unwrap();
        assert_eq!(sent, unstreamed, "case {case}");
        // Without a reply format too: the same, and no `response_format`.
        unstreamed
            .as_object_mut()
            .unwrap()
            .remove("response_format");
        let sent: Json = serde_json::from_slice(&body.bytes(form(true, true)).unwrap()).unwrap();
        assert_eq!(sent, unstreamed, "case {case}");
        total += history.len();
        reused += kept;
        held = (random.below(4) == 0).then_some(body);
    }
    drop(held);
    // The bodies are doing their job: many messages were kept, not serialised again.
    assert!(reused * 4 > total, "{reused} of {total} reused");
}

/// A user message of `content`.
fn user(content: &str) -> ChatMessage {
    ChatMessage {
        role: ChatRole::User,
        content: content.into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

/// Options with nothing but a model.
fn plain_options() -> Options<'static> {
    Options {
        model: "m",
        choice: ToolChoice::Auto,
        temperature: None,
        max_tokens: None,
        official: false,
        reasoning_effort: None,
        cache_key: None,
        format: None,
    }
}

#[test]
fn a_message_replaced_by_one_of_the_same_size_is_written_anew() {
    let alike = |c: char| format!("{}{c}{}", "a".repeat(64), "z".repeat(64));
    let options = plain_options();
    let mut bodies = Bodies::default();
    for content in [alike('1'), alike('1'), alike('2'), alike('1')] {
        let call = ModelCall {
            agent: crate::effect::Caller::from_queue("A"),
            model: None,
            messages: vec![user("task"), user(&content)],
            tools: Vec::new().into(),
            turn: 0,
            reply_fields: Default::default(),
        };
        let body = write(&call, &options, &mut bodies).json();
        assert_eq!(body["messages"][1]["content"], json!(content));
    }
}

#[test]
fn an_agents_next_body_takes_back_the_last_ones_bytes_and_writes_only_new_messages() {
    let message = user;
    let options = plain_options();
    let call = |messages: &[ChatMessage]| ModelCall {
        agent: crate::effect::Caller::from_queue("A"),
        model: None,
        messages: messages.to_vec(),
        tools: Vec::new().into(),
        turn: 0,
        reply_fields: Default::default(),
    };
    let mut bodies = Bodies::default();
    let mut history = vec![message("task"), message(&"long ".repeat(1000))];
    let first = write(&call(&history), &options, &mut bodies);
    let first_at = first.bytes(Form::default()).unwrap().as_ptr();
    drop(first);
    history.push(message("next"));
    let second = write(&call(&history), &options, &mut bodies);
    let second_bytes = second.bytes(Form::default()).unwrap();
    assert_eq!(
        second_bytes.as_ptr(),
        first_at,
        "the sent request was done: its buffer is written on"
    );
    assert_eq!(second.json()["messages"][2]["content"], json!("next"));
    // Held (a request in flight): the next body is a copy, the held one is untouched.
    let before = second_bytes.to_vec();
    history[1] = message("changed");
    let third = write(&call(&history), &options, &mut bodies);
    assert_eq!(&second_bytes[..], &before[..]);
    assert_ne!(
        third.bytes(Form::default()).unwrap().as_ptr(),
        second_bytes.as_ptr()
    );
    assert_eq!(third.json()["messages"][1]["content"], json!("changed"));
    assert_eq!(third.json()["messages"][2]["content"], json!("next"));
}
