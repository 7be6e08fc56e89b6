//! The usual events read from the bytes against the SSE framing: a stream fed whole (where
//! they are read from the bytes) and fed a byte at a time (where they never are: no byte
//! holds a whole event) must come out the same, on written and generated streams.

use super::*;
use crate::providers::http::Decoder;
use crate::providers::openai_stream::Stream;

/// A reply's text, tool calls, input and output tokens, or the failure's message.
type Reply = Result<(String, usize, u64, u64), String>;

/// What a stream makes of `body` fed in the pieces `cuts` gives: the reply's text, its
/// tool calls, its usage, or the failure's message; and the bytes counted as the reply.
fn outcome(body: &[u8], cuts: &[usize]) -> (Reply, usize) {
    let mut stream = Stream::new("A", None);
    let mut start = 0;
    for &cut in cuts.iter().chain([body.len()].iter()) {
        let cut = cut.clamp(start, body.len());
        if let Err(failure) = stream.feed(&body[start..cut]) {
            return (Err(failure.message), stream.size());
        }
        start = cut;
    }
    let size = stream.size();
    let reply = stream.finish().map(|reply| {
        (
            reply.text,
            reply.tool_calls.len(),
            reply.usage.input_tokens,
            reply.usage.output_tokens,
        )
    });
    (reply.map_err(|failure| failure.message), size)
}

/// `body` fed whole, a byte at a time, and cut at each of `cuts` (one at a time) comes out
/// the same.
fn same_fed_any_way(body: &[u8], cuts: &[usize]) {
    let bytewise: Vec<usize> = (1..body.len()).collect();
    let expected = outcome(body, &bytewise);
    let shown = String::from_utf8_lossy(body);
    assert_eq!(outcome(body, &[]), expected, "fed whole: `{shown}`");
    for &cut in cuts {
        assert_eq!(outcome(body, &[cut]), expected, "cut at {cut}: `{shown}`");
    }
}

/// Where a chunk can end with the framing between lines but perhaps not between events.
fn line_ends(body: &[u8]) -> Vec<usize> {
    (1..body.len())
        .filter(|&at| body[at - 1] == b'\n')
        .collect()
}

/// The first event read on its own: the text it reads and the event's length.
fn read_usual(chunks: &Chunks, bytes: &[u8]) -> Option<(String, usize)> {
    let (start, end) = chunks.event_shape()?;
    let mut text = b"kept ".to_vec();
    let read = usual_event(start, end, bytes, &mut text);
    let text = String::from_utf8(text).expect("UTF-8");
    match read {
        Some(len) => Some((text.strip_prefix("kept ")?.to_string(), len)),
        None => {
            assert_eq!(text, "kept ", "a refused event leaves the text as it was");
            None
        }
    }
}

const HEAD: &str = r#"{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"#;
const TAIL: &str = r#"},"finish_reason":null}]}"#;

/// A usual event of the one shape these streams use, around `string` (written as is).
fn usual(string: &str) -> String {
    format!("data: {HEAD}{string}{TAIL}\n\n")
}

/// Strings in the place of the text: plain, escaped, `\u`, broken out of, cut, raw breaks.
const STRINGS: &[&str] = &[
    r#""tok ""#,
    r#""""#,
    r#""a\nb \"q\" \\ \/""#,
    r#""\u2603""#,
    r#""☃ é""#,
    "\"raw\nbreak\"",
    "\"raw\rreturn\"",
    "\"tab\there\"",
    r#""a","x":"""#,
    r#""\""#,
    r#""a\x""#,
    "null",
    "7",
    r#""open"#,
];

/// Events of other shapes and the framing's other forms, between usual ones.
const OTHERS: &[&str] = &[
    "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\n",
    "data: [DONE]\n\n",
    ": keep-alive\n\n",
    "event: message\n",
    "\n",
    "\r\n",
    "data:{\"choices\":[{\"delta\":{\"content\":\"nospace\"}}]}\n\n",
    "data: {\"choices\":[{\"delta\":\n",
    "data: {\"content\":1}}]}\n\n",
    "data: {\"error\":{\"message\":\"stop\"}}\n\n",
    "data: {not json}\n\n",
    "\u{ff}\n\n",
    "id: 4\n",
];

#[test]
fn a_usual_stream_is_read_from_the_bytes() {
    let mut chunks = Chunks::default();
    // Nothing learnt yet: the framing reads the first event and learns its shape.
    let first = usual(r#""one""#);
    assert_eq!(read_usual(&chunks, first.as_bytes()), None);
    let data = &first["data: ".len()..first.len() - 2];
    assert_eq!(chunks.read(data).as_deref(), Some("one"));
    let body = format!(
        "{}{}data: [DONE]\n\n",
        usual(r#""two""#),
        usual(r#""\"3\"""#)
    );
    let (text, len) = read_usual(&chunks, body.as_bytes()).expect("a usual event");
    assert_eq!((text.as_str(), len), ("two", usual(r#""two""#).len()));
    let rest = &body.as_bytes()[len..];
    let (text, len) = read_usual(&chunks, rest).expect("a usual event");
    assert_eq!(text, "\"3\"");
    assert_eq!(&rest[len..], b"data: [DONE]\n\n");
    assert_eq!(read_usual(&chunks, &rest[len..]), None);
    // Other framings of the same event are left to the framing.
    for other in [
        format!("data: {HEAD}\"x\"{TAIL}\r\n\r\n"),
        format!("data:{HEAD}\"x\"{TAIL}\n\n"),
        format!("data: {HEAD}\"x\"{TAIL}\ndata: {{}}\n\n"),
        format!("data: {HEAD}\"x\"{TAIL}\n"),
        format!("data: {HEAD}\"x\"{TAIL} \n\n"),
        format!("data: {HEAD}\"x\"\n\n"),
        format!("data: {HEAD}\"x\u{0}\"{TAIL}\n\n"),
    ] {
        assert_eq!(read_usual(&chunks, other.as_bytes()), None, "{other}");
    }
    assert_eq!(event_end(b"a\nb\n\nc"), Some(5));
    assert_eq!(event_end(b"a\r\n\r\n"), None);
}

#[test]
fn written_streams_come_out_as_fed_a_byte_at_a_time() {
    let done = "data: [DONE]\n\n";
    let mut bodies: Vec<Vec<u8>> = Vec::new();
    for string in STRINGS {
        for other in OTHERS {
            let body = [
                usual(r#""a""#),
                usual(r#""b""#),
                usual(string),
                other.to_string(),
                usual(r#""c""#),
                done.to_string(),
            ]
            .concat();
            bodies.push(body.into_bytes());
        }
    }
    // Bytes that are not UTF-8 inside the text, and a body cut mid-event.
    let mut broken = [usual(r#""a""#), usual(r#""b""#)].concat().into_bytes();
    broken.extend_from_slice(b"data: ");
    broken.extend_from_slice(HEAD.as_bytes());
    broken.extend_from_slice(b"\"\xe2\x98\"");
    broken.extend_from_slice(TAIL.as_bytes());
    broken.extend_from_slice(b"\n\n");
    bodies.push(broken.clone());
    broken.truncate(broken.len() - 30);
    bodies.push(broken);
    for body in &bodies {
        let mut cuts = line_ends(body);
        cuts.extend([body.len() / 2, body.len() / 2 + 7]);
        same_fed_any_way(body, &cuts);
    }
}

#[test]
fn generated_streams_come_out_as_fed_a_byte_at_a_time() {
    let mut rng = fastrand::Rng::with_seed(0xf2a3_ed00);
    for _ in 0..3_000 {
        let mut body = Vec::new();
        for _ in 0..rng.usize(1..12) {
            match rng.u8(..4) {
                0 => body.extend_from_slice(OTHERS[rng.usize(..OTHERS.len())].as_bytes()),
                1 => body.extend_from_slice(usual(STRINGS[rng.usize(..STRINGS.len())]).as_bytes()),
                _ => body.extend_from_slice(usual(r#""tok""#).as_bytes()),
            }
        }
        if rng.bool() {
            body.extend_from_slice(b"data: [DONE]\n\n");
        }
        if rng.u8(..8) == 0 {
            body.truncate(rng.usize(..=body.len()));
        }
        let mut cuts = line_ends(&body);
        cuts.extend((0..4).map(|_| rng.usize(..=body.len())));
        same_fed_any_way(&body, &cuts);
    }
}

/// Half a character in one token and the rest in the next: refused, as the framing refuses
/// it, never joined into the character (each token must be UTF-8 by itself).
#[test]
fn a_character_split_between_two_tokens_is_refused_not_joined() {
    let event = |content: &[u8]| {
        let mut bytes = format!("data: {HEAD}\"").into_bytes();
        bytes.extend_from_slice(content);
        bytes.extend_from_slice(format!("\"{TAIL}\n\n").as_bytes());
        bytes
    };
    let snowman = "☃".as_bytes();
    let mut body = Vec::new();
    for content in [b"one".as_slice(), b"two", &snowman[..2], &snowman[2..]] {
        body.extend(event(content));
    }
    body.extend_from_slice(b"data: [DONE]\n\n");
    same_fed_any_way(&body, &line_ends(&body));
    let (reply, _) = outcome(&body, &[]);
    assert!(reply.is_err(), "{reply:?}");
}
