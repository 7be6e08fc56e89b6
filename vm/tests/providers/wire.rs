//! Each provider against a server speaking its wire format: streamed text and tool
//! calls decoded, and the exact requests sent, snapshotted.

use fuseraft_vm::history::Usage;
use serde_json::json;

use super::common::*;
use super::server::*;

#[tokio::test]
async fn openai_streams_text_and_assembles_tool_call_deltas() {
    let server = Server::start(vec![sse(&openai_stream())]).await;
    // A well-known key goes to its provider's own host only: a loopback stand-in for
    // OpenAI gets it through ApiKeyEnvVar.
    let mut model = openai_model(&server);
    model.temperature = Some("0.2".into());
    model.max_tokens = Some(2048);
    model.reasoning_effort = Some("Low".into());
    let (reply, tokens, _) = ask(model, quick()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Writing the brief.");
    assert_eq!(calls_of(&reply), expected_tool_calls(true));
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 42,
            ..Usage::default()
        }
    );
    let (agents, text) = streamed_text(&tokens);
    assert_eq!(text, "Writing the brief.");
    assert!(agents.iter().all(|agent| agent == "Planner") && agents.len() == 2);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_key_only_in(&requests[0], "authorization", &format!("Bearer {FAKE_KEY}"));
    insta::assert_snapshot!("openai_request", requests[0].render());
}

#[tokio::test]
async fn openai_compatible_servers_get_max_tokens_and_no_openai_key() {
    let server = Server::start(vec![sse(&openai_text_stream("ok"))]).await;
    // vLLM / llama.cpp / LM Studio: inferred from the endpoint, no key sent.
    let mut model = model(None, "qwen2.5-coder", &format!("{}/v1", server.url));
    model.max_tokens = Some(512);
    let (reply, _, _) = ask(model, quick()).await;
    assert_eq!(reply.unwrap().text, "ok");
    let requests = server.requests();
    assert!(requests[0]
        .headers
        .iter()
        .all(|(name, _)| name != "authorization"));
    insta::assert_snapshot!("openai_compatible_request", requests[0].render());
}

#[tokio::test]
async fn a_reply_is_bounded_when_the_model_sets_no_max_tokens() {
    // llama.cpp's, vLLM's and Ollama's servers generate until the context is full unless
    // asked for less: one small model's reply ran to 8,001 tokens over 273 s.
    let server = Server::start(vec![
        sse(&openai_text_stream("ok")),
        ndjson(&ollama_stream()),
        sse(&anthropic_stream()),
    ])
    .await;
    let compatible = model(None, "qwen2.5-coder", &format!("{}/v1", server.url));
    let ollama = model(Some("ollama"), "qwen3", &server.url);
    for model in [compatible, ollama, anthropic_model(&server)] {
        assert_eq!(model.max_tokens, None);
        let (reply, _, _) = ask(model, quick()).await;
        reply.unwrap();
    }
    let requests = server.requests();
    let body = |idx: usize| serde_json::from_str::<serde_json::Value>(&requests[idx].body).unwrap();
    assert_eq!(body(0)["max_tokens"], json!(4096));
    assert_eq!(body(1)["options"]["num_predict"], json!(4096));
    assert_eq!(body(2)["max_tokens"], json!(8192));
}

#[tokio::test]
async fn azure_sends_the_key_as_api_key_to_the_deployment() {
    let server = Server::start(vec![sse(&openai_text_stream("ok"))]).await;
    let model = model(Some("azure"), "gpt4o-prod", &server.url);
    let (reply, _, _) = ask(model, quick()).await;
    assert_eq!(reply.unwrap().text, "ok");
    let requests = server.requests();
    assert_eq!(
        requests[0].path,
        "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21"
    );
    assert_key_only_in(&requests[0], "api-key", FAKE_KEY);
}

#[tokio::test]
async fn anthropic_streams_text_and_tool_use_blocks() {
    let server = Server::start(vec![sse(&anthropic_stream())]).await;
    let mut model = anthropic_model(&server);
    model.temperature = Some("0.5".into());
    let (reply, tokens, _) = ask(model, quick()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Writing the brief.");
    assert_eq!(
        calls_of(&reply),
        vec![(
            "toolu_01A".to_string(),
            "write_file".to_string(),
            json!({ "path": "brief.md", "content": "# Brief ☃" })
        )]
    );
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 250,
            output_tokens: 89,
            ..Usage::default()
        }
    );
    assert_eq!(streamed_text(&tokens).1, "Writing the brief.");
    let requests = server.requests();
    assert_key_only_in(&requests[0], "x-api-key", FAKE_KEY);
    insta::assert_snapshot!("anthropic_request", requests[0].render());
}

#[tokio::test]
async fn ollama_streams_ndjson_with_tool_calls() {
    let server = Server::start(vec![ndjson(&ollama_stream())]).await;
    let mut model = model(Some("ollama"), "qwen3", &server.url);
    model.temperature = Some("0".into());
    model.max_tokens = Some(1024);
    let (reply, tokens, _) = ask(model, quick()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Writing the brief.");
    assert_eq!(calls_of(&reply), expected_tool_calls(false));
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 61,
            output_tokens: 25,
            ..Usage::default()
        }
    );
    assert_eq!(streamed_text(&tokens).1, "Writing the brief.");
    let requests = server.requests();
    assert!(requests[0]
        .headers
        .iter()
        .all(|(name, _)| name != "authorization"));
    insta::assert_snapshot!("ollama_request", requests[0].render());
}

#[tokio::test]
async fn servers_that_answer_without_streaming_are_understood() {
    let openai = json!({
        "id": "chatcmpl-9", "object": "chat.completion", "created": 1_700_000_000, "model": "m",
        "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Writing the brief.",
            "tool_calls": [
                { "id": "call_abc", "type": "function", "function": { "name": "write_file",
                    "arguments": "{\"path\": \"brief.md\", \"content\": \"# Brief ☃\"}" } },
                { "id": "call_def", "type": "function", "function": { "name": "handoff",
                    "arguments": "{\"route_keyword\": \"DEVELOPER\"}" } }
            ] } }],
        "usage": { "prompt_tokens": 120, "completion_tokens": 42, "total_tokens": 162 },
    });
    let anthropic = json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            { "type": "text", "text": "Writing the brief." },
            { "type": "tool_use", "id": "call_abc", "name": "write_file",
              "input": { "path": "brief.md", "content": "# Brief ☃" } },
            { "type": "tool_use", "id": "call_def", "name": "handoff",
              "input": { "route_keyword": "DEVELOPER" } }
        ],
        "stop_reason": "tool_use", "usage": { "input_tokens": 120, "output_tokens": 42 },
    });
    let ollama = json!({
        "model": "qwen3", "created_at": "2025-05-27T22:54:58Z", "done": true,
        "message": { "role": "assistant", "content": "Writing the brief.", "tool_calls": [
            { "id": "call_abc", "function": { "name": "write_file",
                "arguments": { "path": "brief.md", "content": "# Brief ☃" } } },
            { "id": "call_def", "function": { "name": "handoff",
                "arguments": { "route_keyword": "DEVELOPER" } } }
        ] },
        "prompt_eval_count": 120, "eval_count": 42,
    });
    let server = Server::start(vec![
        status(200, "OK", &[], &openai.to_string()),
        status(200, "OK", &[], &anthropic.to_string()),
        status(200, "OK", &[], &ollama.to_string()),
    ])
    .await;
    let models = [
        openai_model(&server),
        anthropic_model(&server),
        model(Some("ollama"), "qwen3", &server.url),
    ];
    for model in models {
        let (reply, tokens, _) = ask(model.clone(), quick()).await;
        let reply = reply.unwrap();
        assert_eq!(reply.text, "Writing the brief.", "{model:?}");
        assert_eq!(calls_of(&reply), expected_tool_calls(true), "{model:?}");
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 120,
                output_tokens: 42,
                ..Usage::default()
            }
        );
        assert_eq!(streamed_text(&tokens).1, "Writing the brief.");
    }
}
