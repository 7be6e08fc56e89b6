//! Bounds on a model response, against loopback servers that never stop: an endless line,
//! endless events (text, tool-call arguments, keep-alives), NDJSON without newlines, and a
//! server that stalls mid-stream. Each ends in a clear, final error in bounded time, after
//! the client read a bounded number of bytes and hung up.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fuseraft_vm::providers::Settings;
use serde_json::json;

use super::common::*;
use super::server::*;

/// A 64 KiB reply cap (so a 192 KiB line cap and a 1 MiB body cap), a 300 ms idle timeout.
fn small() -> Settings {
    Settings {
        timeout: Duration::from_secs(20),
        max_retries: 0,
        base_backoff: Duration::from_millis(1),
        max_response_bytes: 64 * 1024,
        idle_timeout: Duration::from_millis(300),
        ..Settings::default()
    }
}

/// What the endless server sent before the client hung up.
async fn sent_before_hangup(slot: &Arc<Mutex<Option<usize>>>) -> usize {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(sent) = *slot.lock().unwrap() {
            return sent;
        }
        assert!(Instant::now() < until, "the client never hung up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs one call against an endless reply; the error, after checking time and bytes.
async fn endless_call(
    model: fn(&Server) -> fuseraft_compiler::ir::Model,
    reply: (Reply, Arc<Mutex<Option<usize>>>),
) -> String {
    let (reply, sent) = reply;
    let server = Server::start(vec![reply]).await;
    let (result, _, elapsed) = ask(model(&server), small()).await;
    let error = result.unwrap_err();
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}: {error}");
    let sent = sent_before_hangup(&sent).await;
    // The body cap (1 MiB) plus what socket buffers held when the client stopped.
    assert!(sent < 24 * 1024 * 1024, "the server sent {sent} bytes");
    // Final: a second request would meet the same endless stream.
    assert_eq!(server.requests().len(), 1, "{error}");
    error
}

#[tokio::test]
async fn an_endless_line_is_an_error() {
    let error = endless_call(
        openai_model,
        endless(
            "text/event-stream",
            r#"data: {"choices":[{"index":0,"delta":{"content":""#,
            &"x".repeat(4096),
        ),
    )
    .await;
    assert!(
        error.contains("a line of the response stream passed 192 KiB without ending"),
        "{error}"
    );
}

#[tokio::test]
async fn endless_text_events_hit_the_reply_cap() {
    let event = format!(
        "data: {}\n\n",
        openai_chunk(json!({ "content": "a".repeat(1000) }), None)
    );
    let error = endless_call(openai_model, endless("text/event-stream", "", &event)).await;
    assert!(
        error.contains("the reply passed the limit of 64 KiB (text and tool-call arguments)"),
        "{error}"
    );
}

#[tokio::test]
async fn endless_tool_call_arguments_hit_the_reply_cap() {
    let start = format!(
        "data: {}\n\n",
        openai_chunk(
            json!({ "tool_calls": [{ "index": 0, "id": "call_1", "type": "function",
                "function": { "name": "write_file", "arguments": "{\"content\":\"" } }] }),
            None
        )
    );
    let piece = format!(
        "data: {}\n\n",
        openai_chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "b".repeat(900) } }] }),
            None
        )
    );
    let error = endless_call(openai_model, endless("text/event-stream", &start, &piece)).await;
    assert!(
        error.contains("the reply passed the limit of 64 KiB"),
        "{error}"
    );
}

#[tokio::test]
async fn endless_keep_alives_hit_the_body_cap() {
    let error = endless_call(
        openai_model,
        endless("text/event-stream", "", ": keep-alive\n\n"),
    )
    .await;
    assert!(
        error.contains("the response body passed 1 MiB without completing the reply"),
        "{error}"
    );
}

#[tokio::test]
async fn endless_anthropic_text_hits_the_reply_cap() {
    let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
    let piece = format!(
        "event: content_block_delta\ndata: {}\n\n",
        json!({ "type": "content_block_delta", "index": 0,
            "delta": { "type": "text_delta", "text": "c".repeat(1000) } })
    );
    let error = endless_call(anthropic_model, endless("text/event-stream", start, &piece)).await;
    assert!(
        error.contains("the reply passed the limit of 64 KiB"),
        "{error}"
    );
}

fn ollama_model(server: &Server) -> fuseraft_compiler::ir::Model {
    model(Some("ollama"), "qwen3", &server.url)
}

#[tokio::test]
async fn an_endless_ndjson_line_is_an_error() {
    let error = endless_call(
        ollama_model,
        endless(
            "application/x-ndjson",
            r#"{"message":{"role":"assistant","content":""#,
            &"o".repeat(4096),
        ),
    )
    .await;
    assert!(error.contains("without ending"), "{error}");
}

#[tokio::test]
async fn a_stall_mid_stream_ends_at_the_idle_timeout() {
    let server = Server::start(vec![
        Reply::Stall(stream_start()),
        Reply::Stall(stream_start()),
    ])
    .await;
    let settings = Settings {
        max_retries: 1,
        ..small()
    };
    let (reply, tokens, elapsed) = ask(openai_model(&server), settings).await;
    let error = reply.unwrap_err();
    assert!(
        error.ends_with(
            "the server sent nothing for 0.3s mid-response (stalled; the idle timeout) (gave up after 2 attempts)"
        ),
        "{error}"
    );
    // Two attempts of 0.3 s of silence each, well before the 20 s attempt timeout.
    assert!(elapsed >= Duration::from_millis(600), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert!(streamed_text(&tokens).1.starts_with("Writing"));
}

#[tokio::test]
async fn a_server_silent_before_its_headers_ends_at_the_idle_timeout() {
    let server = Server::start(vec![Reply::Hang]).await;
    let (reply, _, elapsed) = ask(openai_model(&server), small()).await;
    let error = reply.unwrap_err();
    assert!(
        error.ends_with("the server sent nothing for 0.3s before the response began (stalled; the idle timeout)"),
        "{error}"
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}
