//! Token usage a server does not report is counted as unreported (unknown), not as 0
//! tokens: on every provider, and when only some calls report it. Calls to a model of the
//! price table cost their tokens; others are unpriced.

use fuseraft_vm::driver::Models;
use fuseraft_vm::providers::Overrides;
use serde_json::json;

use super::common::*;
use super::server::*;

fn openai_without_usage(text: &str) -> String {
    let mut body = data_events(&[
        openai_chunk(json!({ "role": "assistant", "content": text }), None),
        openai_chunk(json!({}), Some("stop")),
    ]);
    body.push_str("data: [DONE]\n\n");
    body
}

#[tokio::test]
async fn usage_absent_is_unreported_and_usage_on_some_calls_is_partial() {
    let server = Server::start(vec![
        sse(&openai_text_stream("with usage")),
        sse(&openai_without_usage("without usage")),
        sse(&openai_text_stream("with usage again")),
    ])
    .await;
    let model = openai_model(&server);
    let program = program(&[("Planner", Some(model.clone()))]);
    let overrides = Overrides {
        endpoint: model.endpoint.clone(),
        ..Overrides::default()
    };
    let providers = providers(&program, &overrides, quick());
    assert_eq!(providers.usage_unreported(), 0);
    let first = providers
        .call(&call("Planner", Some(model.clone())))
        .await
        .unwrap();
    assert_eq!(first.usage.input_tokens, 5);
    assert_eq!(providers.usage_unreported(), 0);
    let second = providers
        .call(&call("Planner", Some(model.clone())))
        .await
        .unwrap();
    assert_eq!(second.text, "without usage");
    assert_eq!(second.usage.total(), 0);
    assert_eq!(providers.usage_unreported(), 1, "counted as unreported");
    providers.call(&call("Planner", Some(model))).await.unwrap();
    assert_eq!(providers.usage_unreported(), 1);
}

#[tokio::test]
async fn anthropic_and_ollama_without_usage_are_unreported() {
    let anthropic = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"hi\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let ollama = "{\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":true}\n";
    let server = Server::start(vec![sse(anthropic), ndjson(ollama)]).await;
    for model in [
        anthropic_model(&server),
        model(Some("ollama"), "qwen3", &server.url),
    ] {
        let program = program(&[("Planner", Some(model.clone()))]);
        let overrides = Overrides {
            endpoint: model.endpoint.clone(),
            ..Overrides::default()
        };
        let providers = providers(&program, &overrides, quick());
        let reply = providers
            .call(&call("Planner", Some(model.clone())))
            .await
            .unwrap();
        assert_eq!(reply.text, "hi", "{model:?}");
        assert_eq!(providers.usage_unreported(), 1, "{model:?}");
    }
}

#[tokio::test]
async fn a_priced_model_costs_its_tokens_and_a_reply_without_usage_is_unpriced() {
    let server = Server::start(vec![sse(&anthropic_stream()), sse(&anthropic_stream())]).await;
    let claude = anthropic_model(&server);
    let priced = program(&[("Planner", Some(claude.clone()))]);
    let overrides = Overrides {
        endpoint: claude.endpoint.clone(),
        ..Overrides::default()
    };
    let anthropic = providers(&priced, &overrides, quick());
    assert_eq!(anthropic.cost().priced, 0);
    for _ in 0..2 {
        anthropic
            .call(&call("Planner", Some(claude.clone())))
            .await
            .unwrap();
    }
    // claude-sonnet-4-5 at $3 / $15 per million: 250 in and 89 out, twice.
    let cost = anthropic.cost();
    assert_eq!((cost.priced, cost.unpriced), (2, 0));
    assert!((cost.usd - 2.0 * 0.002085).abs() < 1e-12, "{cost:?}");

    // An OpenAI-compatible server is not priced, whatever the model is called.
    let server = Server::start(vec![sse(&openai_text_stream("hi"))]).await;
    let local = model(Some("vllm"), "gpt-4o", &format!("{}/v1", server.url));
    let program = program(&[("Planner", Some(local.clone()))]);
    let overrides = Overrides {
        endpoint: local.endpoint.clone(),
        ..Overrides::default()
    };
    let providers = providers(&program, &overrides, quick());
    providers.call(&call("Planner", Some(local))).await.unwrap();
    let cost = providers.cost();
    assert_eq!((cost.priced, cost.unpriced, cost.usd), (0, 1, 0.0));
    assert!(cost.json().is_null());
}
