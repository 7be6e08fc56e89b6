//! The chunk scanner against serde's typed decoding, on written and generated events.

use super::*;
use crate::history::Usage;
use crate::providers::openai_stream::typed_outcome;

/// Whenever the scanner answers, serde's decoding of the event yields the same text and
/// nothing else (no tool call, no usage, no failure).
fn agrees(data: &str) -> bool {
    match scan(data) {
        Some(usual) => {
            assert_eq!(
                typed_outcome(data),
                Ok((usual.text.into_owned(), 0, Usage::default())),
                "the scanner read `{data}` otherwise than serde"
            );
            true
        }
        None => false,
    }
}

#[test]
fn the_usual_chunks_are_scanned() {
    for data in [
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732000000,"model":"bench","system_fingerprint":null,"choices":[{"index":0,"delta":{"content":"tok "},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":null},"finish_reason":null}],"usage":null}"#,
        r#"{"choices":[{"delta":{"content":"line\nnext \"q\" \\ \/ tab\t"}}]}"#,
        r#" { "choices" : [ { "delta" : { "content" : "spaced ☃" } , "finish_reason" : "stop" } ] } "#,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"x":[1,-2.5e+3,true,false,{"a":[{}]}]}"#,
        r#"{"choices":[{"delta":null}],"error":null}"#,
        r#"{"choices":null}"#,
        r#"{}"#,
    ] {
        assert!(agrees(data), "not scanned: {data}");
    }
    assert_eq!(
        scan(r#"{"choices":[{"delta":{"content":"a\nb"}}]}"#).map(|usual| usual.text),
        Some(Cow::Owned::<str>("a\nb".to_string()))
    );
}

#[test]
fn other_shapes_are_left_to_serde() {
    for data in [
        // Tool calls, usage, errors, a whole completion, several choices.
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a"}]}}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":1}}"#,
        r#"{"error":{"message":"no"}}"#,
        r#"{"choices":[{"message":{"content":"whole"}}]}"#,
        r#"{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}"#,
        // Escapes serde must decode, keys given twice, wrong types, broken JSON.
        r#"{"choices":[{"delta":{"content":"\u2603"}}]}"#,
        r#"{"cho\u0069ces":[]}"#,
        r#"{"choices":[],"choices":[]}"#,
        r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
        r#"{"choices":[{"delta":{"content":7}}]}"#,
        r#"{"choices":[{"delta""#,
        r#"{"choices":[]} x"#,
        r#"{"n":01}"#,
        r#"{"n":1.}"#,
        "{\"s\":\"raw\ttab\"}",
        "[DONE]",
        "",
    ] {
        assert!(scan(data).is_none(), "scanned: {data}");
    }
}

/// Builds random events near the usual shape, and breaks some of them.
struct Events {
    rng: fastrand::Rng,
    out: String,
}

impl Events {
    fn space(&mut self) {
        if self.rng.u8(..8) == 0 {
            let pad = self.pick(&[" ", "\n", "\t", "\r\n ", "  "]);
            self.out.push_str(pad);
        }
    }

    /// One of `choices`, at random.
    fn pick<'s>(&mut self, choices: &[&'s str]) -> &'s str {
        choices[self.rng.usize(..choices.len())]
    }

    fn push(&mut self, text: &str) {
        self.space();
        self.out.push_str(text);
        self.space();
    }

    fn string(&mut self) {
        let pieces = [
            "tok",
            " ",
            "é",
            "☃",
            "\\n",
            "\\\"",
            "\\\\",
            "\\/",
            "\\t",
            "\\u00e9",
            "\\x",
            "\t",
            "\\ud83d\\ude00",
            "",
        ];
        self.out.push('"');
        for _ in 0..self.rng.usize(..4) {
            let piece = self.pick(&pieces);
            self.out.push_str(piece);
        }
        self.out.push('"');
    }

    fn scalar(&mut self) {
        match self.rng.u8(..7) {
            0 => self.string(),
            1 => self.push("null"),
            2 => {
                let word = self.pick(&["true", "false", "nul", "tru"]);
                self.push(word);
            }
            3 => {
                let number =
                    self.pick(&["0", "-1", "17", "1.5", "2e9", "-0.25E-3", "01", "1.", "-"]);
                self.push(number);
            }
            4 => self.push("{}"),
            5 => self.push("[]"),
            _ => self.push("[1,{\"a\":null}]"),
        }
    }

    /// An object of keys chosen from `keys`, each value written by `value`.
    fn object(&mut self, keys: &[&str], value: &mut dyn FnMut(&mut Self, &str)) {
        self.push("{");
        let count = self.rng.usize(..=keys.len().min(5));
        for index in 0..count {
            if index > 0 {
                self.push(",");
            }
            let key = self.pick(keys);
            self.out.push('"');
            self.out.push_str(key);
            self.out.push('"');
            self.push(":");
            value(self, key);
        }
        self.push("}");
    }

    fn delta(&mut self) {
        match self.rng.u8(..8) {
            0 => self.push("null"),
            1 => self.scalar(),
            _ => self.object(
                &["content", "content", "role", "refusal", "tool_calls"],
                &mut |events, key| match key {
                    "content" if events.rng.u8(..4) != 0 => events.string(),
                    "tool_calls" if events.rng.bool() => events.push(
                        "[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]",
                    ),
                    _ => events.scalar(),
                },
            ),
        }
    }

    fn choice(&mut self) {
        self.object(
            &[
                "delta",
                "delta",
                "index",
                "finish_reason",
                "logprobs",
                "message",
            ],
            &mut |events, key| match key {
                "delta" | "message" => events.delta(),
                _ => events.scalar(),
            },
        );
    }

    fn event(&mut self) -> String {
        self.out.clear();
        self.object(
            &[
                "choices", "choices", "id", "object", "created", "model", "usage", "error", "x",
            ],
            &mut |events, key| match key {
                "choices" => match events.rng.u8(..8) {
                    0 => events.push("null"),
                    1 => events.push("[]"),
                    2 => {
                        events.push("[");
                        events.choice();
                        events.push(",");
                        events.choice();
                        events.push("]");
                    }
                    3 => events.scalar(),
                    _ => {
                        events.push("[");
                        events.choice();
                        events.push("]");
                    }
                },
                "usage" if events.rng.bool() => {
                    events.push("{\"prompt_tokens\":3,\"completion_tokens\":4}")
                }
                "error" if events.rng.u8(..4) == 0 => events.push("{\"message\":\"e\"}"),
                _ => events.scalar(),
            },
        );
        let mut event = self.out.clone();
        // Break one in four: cut it short, or put a stray byte somewhere.
        match self.rng.u8(..8) {
            0 => {
                let cut = boundary(&event, self.rng.usize(..=event.len()));
                event.truncate(cut);
            }
            1 => {
                let at = boundary(&event, self.rng.usize(..=event.len()));
                let stray = self.pick(&["{", "}", "[", "]", ",", ":", "\"", "\\", "0", "-", "x"]);
                event.insert_str(at, stray);
            }
            _ => {}
        }
        event
    }
}

/// The char boundary at or before `at`.
fn boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[test]
fn generated_events_read_the_same_as_serde_reads_them() {
    let mut events = Events {
        rng: fastrand::Rng::with_seed(0x5eed_c4a7),
        out: String::new(),
    };
    let mut scanned = 0;
    let total = 20_000;
    for _ in 0..total {
        let event = events.event();
        if agrees(&event) {
            scanned += 1;
        }
    }
    // The generator reaches both paths often (so neither side of the test is idle).
    assert!(scanned > total / 20, "only {scanned} of {total} scanned");
    assert!(scanned < total * 9 / 10, "{scanned} of {total} scanned");
}

/// Other text in the place of a scanned chunk's `content`: valid strings and the ways a
/// string body can break out of its quotes.
const BODIES: &[&str] = &[
    "",
    "tok",
    "two words",
    "é☃",
    "a\\nb",
    "q\\\"",
    "\\\\",
    "\\u00e9",
    "\\",
    "a\\",
    "\"",
    "a\",\"x\":\"",
    "\"}]}",
    "tab\there",
    "\\x",
];

#[test]
fn a_stream_read_by_its_learnt_shape_reads_as_serde_reads_it() {
    let mut events = Events {
        rng: fastrand::Rng::with_seed(0x5eed_5a9e),
        out: String::new(),
    };
    // Chunks as servers send them (OpenAI, llama.cpp, vLLM), then generated ones.
    let written = [
        r#"{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"obfuscation":"x1"}"#,
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" there"}}],"created":1732000000,"id":"chatcmpl-c","model":"smollm2","system_fingerprint":"b1","object":"chat.completion.chunk"}"#,
        r#"{"id":"cmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    ];
    let mut bases: Vec<String> = written.iter().map(|event| event.to_string()).collect();
    bases.extend((0..20_000).map(|_| events.event()));
    let (mut by_shape, mut total) = (0, 0);
    for event in bases {
        let Some(Usual {
            span: Some(span), ..
        }) = scan(&event)
        else {
            continue;
        };
        let mut chunks = Chunks::default();
        for _ in 0..8 {
            let body = events.pick(BODIES);
            let next = match events.rng.u8(..6) {
                // Another event of any shape now and then.
                0 => events.event(),
                _ => format!("{}\"{body}\"{}", &event[..span.start], &event[span.end..]),
            };
            total += 1;
            let shaped = chunks.same_shape(&next).is_some();
            if let Some(text) = chunks.read(&next) {
                by_shape += usize::from(shaped);
                assert_eq!(
                    typed_outcome(&next),
                    Ok((text.into_owned(), 0, Usage::default())),
                    "the learnt shape read `{next}` otherwise than serde"
                );
            }
        }
    }
    assert!(
        by_shape > total / 3,
        "only {by_shape} of {total} read by shape"
    );
}

#[test]
fn hostile_bytes_never_panic_and_never_read_otherwise_than_serde() {
    // Sequences of JSON's significant pieces, in any order: what a hostile or broken server
    // could send. Whatever the scanner or a learnt shape accepts, serde reads the same.
    let pieces = [
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "\\",
        "\"choices\"",
        "\"delta\"",
        "\"content\"",
        "\"tool_calls\"",
        "null",
        "1",
        "-",
        "e",
        "☃",
        " ",
        "\n",
        "\u{0}",
        "\"x\"",
    ];
    let mut rng = fastrand::Rng::with_seed(0x0bad_5eed);
    let mut chunks = Chunks::default();
    for _ in 0..50_000 {
        let event: String = (0..rng.usize(..24))
            .map(|_| pieces[rng.usize(..pieces.len())])
            .collect();
        agrees(&event);
        if let Some(text) = chunks.read(&event) {
            assert_eq!(
                typed_outcome(&event),
                Ok((text.into_owned(), 0, Usage::default())),
                "`{event}`"
            );
        }
    }
}
