//! Faults: each ends in a retry or a clear error, and the key is in no error.

use std::time::Duration;

use fuseraft_vm::providers::Settings;
use tokio::net::TcpListener;

use super::common::*;
use super::server::*;

#[tokio::test]
async fn rate_limited_then_success_honours_retry_after() {
    let server = Server::start(vec![
        status(
            429,
            "Too Many Requests",
            &[("Retry-After", "1")],
            r#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}"#,
        ),
        sse(&openai_text_stream("after the wait")),
    ])
    .await;
    let (reply, _, elapsed) = ask(openai_model(&server), quick()).await;
    assert_eq!(reply.unwrap().text, "after the wait");
    assert_eq!(server.requests().len(), 2);
    // The backoff alone would be ~1 ms: the wait came from Retry-After.
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[tokio::test]
async fn rate_limited_past_the_retries_names_the_server_message() {
    let limited = || {
        status(
            429,
            "Too Many Requests",
            &[("retry-after-ms", "5")],
            r#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests"}}"#,
        )
    };
    let server = Server::start(vec![limited(), limited(), limited()]).await;
    let (reply, _, _) = ask(openai_model(&server), quick()).await;
    let error = reply.unwrap_err();
    assert!(
        error.ends_with(
            "HTTP 429 Too Many Requests: Rate limit reached for gpt-4o (gave up after 3 attempts)"
        ),
        "{error}"
    );
    assert!(
        error.starts_with("openai model `gpt-4o` at http://127.0.0.1:"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn server_error_then_success() {
    let server = Server::start(vec![
        status(
            500,
            "Internal Server Error",
            &[],
            r#"{"error":{"message":"The server had an error"}}"#,
        ),
        sse(&openai_text_stream("recovered")),
    ])
    .await;
    let (reply, _, _) = ask(openai_model(&server), quick()).await;
    assert_eq!(reply.unwrap().text, "recovered");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_the_echoed_key_is_redacted() {
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {FAKE_KEY}. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
    );
    let server = Server::start(vec![status(401, "Unauthorized", &[], &body)]).await;
    let (reply, _, _) = ask(openai_model(&server), quick()).await;
    let error = reply.unwrap_err();
    assert!(
        error.contains("HTTP 401 Unauthorized: Incorrect API key provided: <redacted>."),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_connection_reset_mid_stream_is_retried() {
    let server = Server::start(vec![
        Reply::Reset(stream_start()),
        sse(&openai_text_stream("second try")),
    ])
    .await;
    let (reply, tokens, _) = ask(openai_model(&server), quick()).await;
    assert_eq!(reply.unwrap().text, "second try");
    assert_eq!(server.requests().len(), 2);
    // The first attempt's text had streamed before the reset.
    assert!(streamed_text(&tokens).1.starts_with("Writing"));
}

#[tokio::test]
async fn a_connection_reset_mid_stream_ends_in_a_clear_error() {
    let server = Server::start(vec![Reply::Reset(stream_start())]).await;
    let settings = Settings {
        max_retries: 0,
        ..quick()
    };
    let (reply, _, _) = ask(openai_model(&server), settings).await;
    let error = reply.unwrap_err();
    assert!(
        error.contains("the connection broke mid-response"),
        "{error}"
    );
}

#[tokio::test]
async fn a_response_cut_mid_json_is_an_error_not_a_panic() {
    let cut = || {
        let body = openai_stream();
        let at = body.find("\"arguments\":\"{").unwrap() + 5;
        sse(&body[..at])
    };
    let server = Server::start(vec![cut(), cut()]).await;
    let settings = Settings {
        max_retries: 1,
        ..quick()
    };
    let (reply, _, _) = ask(openai_model(&server), settings).await;
    let error = reply.unwrap_err();
    assert!(
        error.contains("the response was cut off mid-event: `data: {\"id\":\"chatcmpl-7\""),
        "{error}"
    );
    assert!(error.ends_with("(gave up after 2 attempts)"), "{error}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_without_done_is_truncated() {
    let body = openai_text_stream("partial").replace("data: [DONE]\n\n", "");
    let server = Server::start(vec![sse(&body)]).await;
    let settings = Settings {
        max_retries: 0,
        ..quick()
    };
    let (reply, _, _) = ask(openai_model(&server), settings).await;
    let error = reply.unwrap_err();
    assert!(
        error.ends_with("the stream ended before `data: [DONE]` (truncated response)"),
        "{error}"
    );
}

#[tokio::test]
async fn a_malformed_event_is_a_clear_error() {
    let server = Server::start(vec![sse("data: {\"choices\": [oops]}\n\ndata: [DONE]\n\n")]).await;
    let (reply, _, _) = ask(openai_model(&server), quick()).await;
    let error = reply.unwrap_err();
    assert!(error.contains("malformed JSON in the response"), "{error}");
    // A server that sends malformed JSON will send it again: not retried.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_hanging_server_times_out() {
    let server = Server::start(vec![Reply::Hang, Reply::Hang]).await;
    let settings = Settings {
        timeout: Duration::from_millis(200),
        max_retries: 1,
        base_backoff: Duration::from_millis(1),
        ..Settings::default()
    };
    let (reply, _, elapsed) = ask(openai_model(&server), settings).await;
    let error = reply.unwrap_err();
    assert!(
        error.ends_with("timed out after 0.2s (gave up after 2 attempts)"),
        "{error}"
    );
    assert!(elapsed >= Duration::from_millis(400), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test]
async fn a_stream_that_stalls_midway_times_out() {
    // The timeout covers the whole call, streaming included.
    let pieces = stream_start();
    let server = Server::start(vec![Reply::Stall(pieces)]).await;
    let settings = Settings {
        timeout: Duration::from_millis(200),
        max_retries: 0,
        base_backoff: Duration::from_millis(1),
        ..Settings::default()
    };
    let (reply, tokens, _) = ask(openai_model(&server), settings).await;
    let error = reply.unwrap_err();
    assert!(error.ends_with(": timed out after 0.2s"), "{error}");
    assert!(streamed_text(&tokens).1.starts_with("Writing"));
}

#[tokio::test]
async fn anthropic_overloaded_then_success() {
    let server = Server::start(vec![
        status(
            529,
            "Overloaded",
            &[],
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        sse(&anthropic_stream()),
    ])
    .await;
    let (reply, _, _) = ask(anthropic_model(&server), quick()).await;
    assert_eq!(reply.unwrap().usage.output_tokens, 89);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn anthropic_errors_and_truncation() {
    let error_event = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long\"}}\n\n";
    let truncated = anthropic_stream().replace(
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        "",
    );
    let bad_request = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}"#;
    let server = Server::start(vec![
        sse(error_event),
        sse(&truncated),
        status(400, "Bad Request", &[], bad_request),
    ])
    .await;
    let settings = Settings {
        max_retries: 0,
        ..quick()
    };
    let model = anthropic_model(&server);
    let (first, _, _) = ask(model.clone(), settings).await;
    assert!(first
        .unwrap_err()
        .ends_with("the stream reported an error: invalid_request_error: prompt is too long"));
    let (second, _, _) = ask(model.clone(), settings).await;
    assert!(second
        .unwrap_err()
        .ends_with("the stream ended before `message_stop` (truncated response)"));
    let (third, _, _) = ask(model, settings).await;
    assert!(third
        .unwrap_err()
        .ends_with("HTTP 400 Bad Request: max_tokens: Field required"));
}

#[tokio::test]
async fn ollama_errors_and_truncation() {
    let not_found = r#"{"error":"model \"qwen9\" not found, try pulling it first"}"#;
    let full = ollama_stream();
    let cut = &full[..full.rfind("\"done\":true").unwrap()];
    let server = Server::start(vec![
        status(404, "Not Found", &[], not_found),
        ndjson(cut),
        ndjson("{\"error\":\"an error was encountered while running the model\"}\n"),
    ])
    .await;
    let settings = Settings {
        max_retries: 0,
        ..quick()
    };
    let model = model(Some("ollama"), "qwen9", &server.url);
    let (first, _, _) = ask(model.clone(), settings).await;
    assert!(first
        .unwrap_err()
        .ends_with("HTTP 404 Not Found: model \"qwen9\" not found, try pulling it first"));
    let (second, _, _) = ask(model.clone(), settings).await;
    assert!(second
        .unwrap_err()
        .contains("the response was cut off mid-line"));
    let (third, _, _) = ask(model, settings).await;
    assert!(third.unwrap_err().ends_with(
        "the stream reported an error: an error was encountered while running the model"
    ));
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    // Bind then drop a listener: nothing answers on that port.
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let model = keyed(
        model(
            Some("openai"),
            "gpt-4o",
            &format!("http://127.0.0.1:{port}/v1"),
        ),
        "OPENAI_API_KEY",
    );
    let (reply, _, _) = ask(model, quick()).await;
    let error = reply.unwrap_err();
    // In a user's words, with what to check; not the client's chain of errors.
    assert!(
        error.contains("cannot connect: connection refused (nothing listens there: is the server running, and is the endpoint right?)"),
        "{error}"
    );
    assert!(!error.contains("client error (Connect)"), "{error}");
    assert!(error.ends_with("(gave up after 3 attempts)"), "{error}");
}
