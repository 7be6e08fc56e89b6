//! A loopback HTTP/1.1 server that plays scripted replies (chunked streams, errors,
//! resets, silence) and records every request; and the providers' recorded streams.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value as Json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with one connection.
pub enum Reply {
    /// Writes these pieces, flushing and pausing between them, then closes.
    Pieces(Vec<Vec<u8>>),
    /// Writes these pieces with this pause between them (a slow but steady stream), then
    /// closes.
    Slow(Vec<Vec<u8>>, Duration),
    /// Writes these pieces, then resets the connection (RST).
    Reset(Vec<Vec<u8>>),
    /// Reads the request and never answers.
    Hang,
    /// Writes these pieces, then goes silent with the connection open.
    Stall(Vec<Vec<u8>>),
    /// A 200 with this content type, then `start` once and `piece` over and over as
    /// chunks, until the client hangs up (or 30 s pass). Reports the bytes it sent.
    Endless {
        content_type: String,
        start: Vec<u8>,
        piece: Vec<u8>,
        sent: Arc<Mutex<Option<usize>>>,
    },
}

#[derive(Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Lower-cased names, sorted; `host`, `content-length` and `user-agent` left out.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    /// The request as snapshotted: request line, headers, pretty JSON body.
    pub fn render(&self) -> String {
        let mut text = format!("{} {}\n", self.method, self.path);
        for (name, value) in &self.headers {
            text.push_str(&format!("{name}: {value}\n"));
        }
        let body: Json = serde_json::from_str(&self.body).expect("the request body is JSON");
        text.push('\n');
        text.push_str(&serde_json::to_string_pretty(&body).unwrap());
        text
    }
}

pub struct Server {
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    pub async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let recorded = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let recorded = recorded.clone();
                let replies = replies.clone();
                tokio::spawn(async move {
                    handle(stream, recorded, replies).await;
                });
            }
        });
        Server { url, requests }
    }

    pub fn requests(&self) -> std::sync::MutexGuard<'_, Vec<Recorded>> {
        self.requests.lock().unwrap()
    }
}

pub async fn handle(
    mut stream: TcpStream,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    replies: Arc<Mutex<VecDeque<Reply>>>,
) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
    let reply = replies.lock().unwrap().pop_front();
    match reply {
        Some(Reply::Pieces(pieces)) => {
            write_pieces(&mut stream, &pieces).await;
            let _ = stream.shutdown().await;
        }
        Some(Reply::Slow(pieces, pause)) => {
            for piece in pieces {
                if stream.write_all(&piece).await.is_err() {
                    return;
                }
                let _ = stream.flush().await;
                tokio::time::sleep(pause).await;
            }
            let _ = stream.shutdown().await;
        }
        Some(Reply::Reset(pieces)) => {
            write_pieces(&mut stream, &pieces).await;
            let _ = stream.set_zero_linger();
            drop(stream);
        }
        Some(Reply::Stall(pieces)) => {
            write_pieces(&mut stream, &pieces).await;
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        Some(Reply::Endless {
            content_type,
            start,
            piece,
            sent,
        }) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            );
            let mut total = 0;
            let chunk = |bytes: &[u8]| {
                let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
                chunk.extend_from_slice(bytes);
                chunk.extend_from_slice(b"\r\n");
                chunk
            };
            let mut pieces = vec![head.into_bytes()];
            if !start.is_empty() {
                pieces.push(chunk(&start));
            }
            let piece = chunk(&piece);
            let until = tokio::time::Instant::now() + Duration::from_secs(30);
            'send: loop {
                for bytes in pieces
                    .drain(..)
                    .chain(std::iter::repeat_n(piece.clone(), 64))
                {
                    if stream.write_all(&bytes).await.is_err() {
                        break 'send;
                    }
                    total += bytes.len();
                }
                if tokio::time::Instant::now() > until {
                    break;
                }
            }
            *sent.lock().unwrap() = Some(total);
        }
        Some(Reply::Hang) => {
            // Bounded: the client gives up long before.
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        None => {
            let body = "no scripted reply left";
            let response = format!(
                "HTTP/1.1 500 Internal Server Error\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        }
    }
}

pub async fn write_pieces(stream: &mut TcpStream, pieces: &[Vec<u8>]) {
    for piece in pieces {
        if stream.write_all(piece).await.is_err() {
            return;
        }
        let _ = stream.flush().await;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

pub async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|window| window == b"\r\n\r\n") {
            break at;
        }
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let path = request_line.next()?.to_string();
    let mut headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    headers.retain(|(name, _)| !matches!(name.as_str(), "host" | "content-length" | "user-agent"));
    headers.sort();
    Some(Recorded {
        method,
        path,
        headers,
        body: String::from_utf8(body).ok()?,
    })
}

// ---------------------------------------------------------------- responses

/// A 200 streamed with chunked transfer encoding, `body` cut into pieces of `piece` bytes
/// (so lines, events and JSON are split across chunks).
pub fn streamed(content_type: &str, body: &str, piece: usize) -> Reply {
    let mut pieces = vec![format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .into_bytes()];
    for part in body.as_bytes().chunks(piece) {
        let mut chunk = format!("{:x}\r\n", part.len()).into_bytes();
        chunk.extend_from_slice(part);
        chunk.extend_from_slice(b"\r\n");
        pieces.push(chunk);
    }
    pieces.push(b"0\r\n\r\n".to_vec());
    Reply::Pieces(pieces)
}

/// An endless 200 (see [`Reply::Endless`]) and the slot where it reports what it sent.
pub fn endless(content_type: &str, start: &str, piece: &str) -> (Reply, Arc<Mutex<Option<usize>>>) {
    let sent = Arc::new(Mutex::new(None));
    (
        Reply::Endless {
            content_type: content_type.to_string(),
            start: start.as_bytes().to_vec(),
            piece: piece.as_bytes().to_vec(),
            sent: sent.clone(),
        },
        sent,
    )
}

pub fn sse(body: &str) -> Reply {
    streamed("text/event-stream", body, 37)
}

pub fn ndjson(body: &str) -> Reply {
    streamed("application/x-ndjson", body, 29)
}

/// A whole response with a JSON body.
pub fn status(code: u16, reason: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut head = format!("HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    Reply::Pieces(vec![head.into_bytes()])
}

/// SSE `data:` events, one per JSON value.
pub fn data_events(events: &[Json]) -> String {
    events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect()
}

pub fn openai_chunk(delta: Json, finish: Option<&str>) -> Json {
    json!({
        "id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_1",
        "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }],
        "usage": null,
    })
}

/// A realistic chat-completions stream: text, then two tool calls whose arguments arrive
/// in fragments, usage in the last chunk, `[DONE]`.
pub fn openai_stream() -> String {
    let mut body = data_events(&[
        openai_chunk(
            json!({ "role": "assistant", "content": "", "refusal": null }),
            None,
        ),
        openai_chunk(json!({ "content": "Writing" }), None),
        openai_chunk(json!({ "content": " the brief." }), None),
        openai_chunk(
            json!({ "tool_calls": [{ "index": 0, "id": "call_abc", "type": "function",
                "function": { "name": "write_file", "arguments": "" } }] }),
            None,
        ),
        openai_chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "{\"path\": \"br" } }] }),
            None,
        ),
        openai_chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "ief.md\", \"content\": \"# Brief ☃\"}" } }] }),
            None,
        ),
        openai_chunk(
            json!({ "tool_calls": [{ "index": 1, "id": "call_def", "type": "function",
                "function": { "name": "handoff", "arguments": "{\"route_" } }] }),
            None,
        ),
        openai_chunk(
            json!({ "tool_calls": [{ "index": 1, "function": { "arguments": "keyword\": \"DEVELOPER\"}" } }] }),
            None,
        ),
        openai_chunk(json!({}), Some("tool_calls")),
        json!({
            "id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": "gpt-4o-2024-08-06", "choices": [],
            "usage": { "prompt_tokens": 120, "completion_tokens": 42, "total_tokens": 162 },
        }),
    ]);
    body.push_str("data: [DONE]\n\n");
    body
}

pub fn openai_text_stream(text: &str) -> String {
    let mut body = data_events(&[
        openai_chunk(json!({ "role": "assistant", "content": text }), None),
        openai_chunk(json!({}), Some("stop")),
        json!({ "choices": [], "usage": { "prompt_tokens": 5, "completion_tokens": 1 } }),
    ]);
    body.push_str("data: [DONE]\n\n");
    body
}

pub fn anthropic_stream() -> String {
    let events = [
        (
            "message_start",
            json!({ "type": "message_start", "message": {
            "id": "msg_01", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": 250, "output_tokens": 1 } } }),
        ),
        (
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0,
            "content_block": { "type": "text", "text": "" } }),
        ),
        ("ping", json!({ "type": "ping" })),
        (
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0,
            "delta": { "type": "text_delta", "text": "Writing" } }),
        ),
        (
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0,
            "delta": { "type": "text_delta", "text": " the brief." } }),
        ),
        (
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": 0 }),
        ),
        (
            "content_block_start",
            json!({ "type": "content_block_start", "index": 1,
            "content_block": { "type": "tool_use", "id": "toolu_01A", "name": "write_file", "input": {} } }),
        ),
        (
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 1,
            "delta": { "type": "input_json_delta", "partial_json": "" } }),
        ),
        (
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 1,
            "delta": { "type": "input_json_delta", "partial_json": "{\"path\": \"brief.md\", " } }),
        ),
        (
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 1,
            "delta": { "type": "input_json_delta", "partial_json": "\"content\": \"# Brief ☃\"}" } }),
        ),
        (
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": 1 }),
        ),
        (
            "message_delta",
            json!({ "type": "message_delta",
            "delta": { "stop_reason": "tool_use", "stop_sequence": null },
            "usage": { "output_tokens": 89 } }),
        ),
        ("message_stop", json!({ "type": "message_stop" })),
    ];
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

pub fn ollama_stream() -> String {
    let lines = [
        json!({ "model": "qwen3", "created_at": "2025-05-27T22:54:57.641643Z",
            "message": { "role": "assistant", "content": "Writing" }, "done": false }),
        json!({ "model": "qwen3", "created_at": "2025-05-27T22:54:57.741643Z",
            "message": { "role": "assistant", "content": " the brief." }, "done": false }),
        json!({ "model": "qwen3", "created_at": "2025-05-27T22:54:58.100000Z",
            "message": { "role": "assistant", "content": "", "tool_calls": [
                { "function": { "name": "write_file",
                    "arguments": { "path": "brief.md", "content": "# Brief ☃" } } },
                { "function": { "name": "handoff", "arguments": { "route_keyword": "DEVELOPER" } } }
            ] }, "done": false }),
        json!({ "model": "qwen3", "created_at": "2025-05-27T22:54:58.200000Z",
            "message": { "role": "assistant", "content": "" }, "done": true, "done_reason": "stop",
            "total_duration": 4_883_583_458u64, "load_duration": 1_334_875,
            "prompt_eval_count": 61, "prompt_eval_duration": 21_000_000,
            "eval_count": 25, "eval_duration": 4_000_000_000u64 }),
    ];
    lines.iter().map(|line| format!("{line}\n")).collect()
}
