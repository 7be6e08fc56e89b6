//! A model's own timeouts and prices from the config: its `IdleTimeoutSeconds` cuts a
//! stalled stream the default would wait on for a minute, a flag beats it, and its
//! `Pricing` prices a server the bundled table does not know, cached input tokens apart.

use std::time::{Duration, Instant};

use fuseraft_compiler::ir;
use fuseraft_vm::driver::Models;
use fuseraft_vm::providers::{Overrides, Settings, TimeoutFlags};
use serde_json::json;

use super::common::*;
use super::server::*;

/// One call of `model` against a server that sends the head and a few events of a
/// stream, then nothing: the seconds it took and the error.
async fn stalled(model: ir::Model, flags: TimeoutFlags, server: &Server) -> (Duration, String) {
    let program = program(&[("Planner", Some(model.clone()))]);
    let overrides = Overrides {
        endpoint: Some(format!("{}/v1", server.url)),
        timeouts: flags,
        ..Overrides::default()
    };
    let settings = Settings {
        max_retries: 0,
        ..Settings::default()
    };
    // The default would wait a minute for the next bytes.
    assert_eq!(settings.idle_timeout, Duration::from_secs(60));
    let providers = providers(&program, &overrides, settings);
    let started = Instant::now();
    let error = providers
        .call(&call("Planner", Some(model)))
        .await
        .expect_err("a stalled stream fails");
    assert_clean(&error);
    (started.elapsed(), error)
}

#[tokio::test]
async fn a_models_own_idle_timeout_cuts_a_stalled_stream() {
    let server = Server::start(vec![Reply::Stall(stream_start())]).await;
    let mut model = openai_model(&server);
    model.timeouts.idle = Some(0.3);
    let (took, error) = stalled(model, TimeoutFlags::default(), &server).await;
    assert!(
        took < Duration::from_secs(10),
        "cut at the model's 0.3 s: {took:?}"
    );
    assert!(
        error.contains("sent nothing for 0.3s mid-response"),
        "{error}"
    );
}

#[tokio::test]
async fn the_idle_timeout_flag_beats_the_models_own() {
    let server = Server::start(vec![Reply::Stall(stream_start())]).await;
    let mut model = openai_model(&server);
    model.timeouts.idle = Some(30.0);
    let flags = TimeoutFlags {
        idle: Some(Duration::from_millis(200)),
        ..TimeoutFlags::default()
    };
    let (took, error) = stalled(model, flags, &server).await;
    assert!(
        took < Duration::from_secs(10),
        "cut at the flag's 0.2 s: {took:?}"
    );
    assert!(error.contains("sent nothing for 0.2s"), "{error}");
}

#[tokio::test]
async fn a_models_overall_timeout_ends_a_steady_stream() {
    // Pieces 100 ms apart never trip an idle timeout; the model's own overall cap of
    // 0.5 s ends the attempt.
    let Reply::Pieces(pieces) = streamed("text/event-stream", &openai_stream(), 40) else {
        unreachable!()
    };
    let server = Server::start(vec![Reply::Slow(pieces, Duration::from_millis(100))]).await;
    let mut model = openai_model(&server);
    model.timeouts.overall = Some(0.5);
    let (took, error) = stalled(model, TimeoutFlags::default(), &server).await;
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(error.contains("timed out after 0.5s"), "{error}");
}

#[tokio::test]
async fn a_configured_price_prices_an_unlisted_server_with_cached_input_apart() {
    let mut body = data_events(&[
        openai_chunk(json!({ "role": "assistant", "content": "priced" }), None),
        openai_chunk(json!({}), Some("stop")),
        json!({
            "choices": [],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100,
                      "prompt_tokens_details": {"cached_tokens": 600}},
        }),
    ]);
    body.push_str("data: [DONE]\n\n");
    let server = Server::start(vec![sse(&body), sse(&body)]).await;
    let mut local = model(Some("vllm"), "local-model", &format!("{}/v1", server.url));
    let program = program(&[("Planner", Some(local.clone()))]);
    let overrides = Overrides {
        endpoint: local.endpoint.clone(),
        ..Overrides::default()
    };
    // Without a price the server is unpriced.
    let unpriced = providers(&program, &overrides, quick());
    let reply = unpriced
        .call(&call("Planner", Some(local.clone())))
        .await
        .unwrap();
    assert_eq!((reply.cost, reply.usage.cache_read_tokens), (None, 600));

    local.pricing = Some(ir::Pricing {
        input: 2.0,
        output: 10.0,
        cached_input: Some(0.5),
    });
    let program = program_with(local.clone());
    let priced = providers(&program, &overrides, quick());
    let reply = priced.call(&call("Planner", Some(local))).await.unwrap();
    // 400 input tokens at $2, 600 cached at $0.5, 100 output at $10 per million.
    let usd = reply.cost.expect("a priced reply");
    assert!((usd - 0.0021).abs() < 1e-12, "{usd}");
    let cost = priced.cost();
    assert_eq!((cost.priced, cost.unpriced), (1, 0));
}
