//! Tool-call turns on the wire, as each API documents them: an assistant message with only
//! tool calls (empty content, never `null`), two calls in one turn and their results by id;
//! `FunctionChoice` as each provider's `tool_choice`; a server that refuses streaming
//! (answered once without streaming, then remembered); a slow but steady stream that is not
//! cut; a retry mid-stream reported as a `model_retry` event.

use std::time::{Duration, Instant};

use fuseraft_compiler::ir;
use fuseraft_vm::driver::Models;
use fuseraft_vm::effect::{ChatMessage, ChatRole, ModelCall};
use fuseraft_vm::event::{EventKind, Resend};
use fuseraft_vm::history::ToolCall;
use fuseraft_vm::providers::{Overrides, Providers, Settings};
use serde_json::{json, Value as Json};

use super::common::*;
use super::server::*;

/// A call whose history holds a turn of two tool calls with no text, and both results.
fn two_tool_turn(agent: &str, model: ir::Model) -> ModelCall {
    let tool = |id: &str, name: &str, args: Json| ToolCall {
        id: id.into(),
        name: name.into(),
        args,
        result: Some("done".into()),
        ok: true,
        denied: None,
    };
    let result = |id: &str, content: &str| ChatMessage {
        role: ChatRole::Tool,
        content: content.into(),
        tool_calls: Vec::new(),
        tool_call_id: Some(id.into()),
    };
    let mut call = call(agent, Some(model));
    call.messages.truncate(2);
    call.messages.push(ChatMessage {
        role: ChatRole::Assistant,
        content: "".into(),
        tool_calls: vec![
            tool("call_r1", "read_file", json!({ "path": "a.md" })),
            tool("call_r2", "list_dir", json!({ "path": "." })),
        ],
        tool_call_id: None,
    });
    call.messages.push(result("call_r1", "# A"));
    call.messages.push(result("call_r2", "a.md\nb.md"));
    call
}

/// Providers for agent `Planner` on `model` (its endpoint given as by `--endpoint`), with
/// the agent's `FunctionChoice`.
fn providers_for(
    model: &ir::Model,
    choice: ir::ToolChoice,
    settings: Settings,
) -> (Providers, Tokens) {
    let mut program = program(&[("Planner", Some(model.clone()))]);
    program.agents[0].tool_choice = choice;
    let overrides = Overrides {
        endpoint: model.endpoint.clone(),
        ..Overrides::default()
    };
    let (tokens, sink) = sink();
    let providers =
        Providers::new(&program, &overrides, settings, &env_with_keys, Some(sink)).unwrap();
    (providers, tokens)
}

/// The `model_retry` events the providers queued since the last look:
/// `(caller, resend, attempt, reason)`.
fn retries(providers: &Providers) -> Vec<(String, Resend, u32, String)> {
    let notices = providers
        .notices()
        .expect("providers report retries")
        .take();
    notices
        .into_iter()
        .map(|notice| match notice.kind {
            EventKind::ModelRetry {
                resend,
                attempt,
                reason,
                ..
            } => (notice.caller.to_string(), resend, attempt, reason),
            other => panic!("not a retry: {other:?}"),
        })
        .collect()
}

fn body(request: &Recorded) -> Json {
    serde_json::from_str(&request.body).unwrap()
}

fn ollama_model(server: &Server) -> ir::Model {
    model(Some("ollama"), "qwen3", &server.url)
}

fn ollama_text(text: &str) -> String {
    format!(
        "{}\n{}\n",
        json!({ "model": "qwen3", "message": { "role": "assistant", "content": text }, "done": false }),
        json!({ "model": "qwen3", "message": { "role": "assistant", "content": "" }, "done": true,
            "prompt_eval_count": 9, "eval_count": 3 })
    )
}

#[tokio::test]
async fn openai_tool_turns_carry_empty_content_and_ids() {
    let server = Server::start(vec![sse(&openai_text_stream("ok"))]).await;
    let model = openai_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::Auto, quick());
    providers
        .call(&two_tool_turn("Planner", model))
        .await
        .unwrap();
    let sent = body(&server.requests()[0]);
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(
        messages[2],
        json!({ "role": "assistant", "content": "", "tool_calls": [
            { "id": "call_r1", "type": "function",
              "function": { "name": "read_file", "arguments": "{\"path\":\"a.md\"}" } },
            { "id": "call_r2", "type": "function",
              "function": { "name": "list_dir", "arguments": "{\"path\":\".\"}" } },
        ] })
    );
    assert_eq!(
        messages[3],
        json!({ "role": "tool", "tool_call_id": "call_r1", "content": "# A" })
    );
    assert_eq!(
        messages[4],
        json!({ "role": "tool", "tool_call_id": "call_r2", "content": "a.md\nb.md" })
    );
    assert!(
        !server.requests()[0].body.contains("null"),
        "no null anywhere (llama.cpp's server answers `content: null` with a 500)"
    );
    // The API's default, said outright: llama.cpp's Python server reads no `tool_choice`
    // as `none` and leaves the tools out of the prompt.
    assert_eq!(sent["tool_choice"], json!("auto"));
}

#[tokio::test]
async fn anthropic_tool_turns_are_tool_use_then_tool_result_blocks() {
    let server = Server::start(vec![sse(&anthropic_stream())]).await;
    let model = anthropic_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::Auto, quick());
    providers
        .call(&two_tool_turn("Planner", model))
        .await
        .unwrap();
    let sent = body(&server.requests()[0]);
    assert_eq!(
        sent["messages"],
        json!([
            { "role": "user", "content": [{ "type": "text", "text": "Build a CLI that greets." }] },
            { "role": "assistant", "content": [
                { "type": "tool_use", "id": "call_r1", "name": "read_file", "input": { "path": "a.md" } },
                // The last blocks of the last two messages are the cache breakpoints.
                { "type": "tool_use", "id": "call_r2", "name": "list_dir", "input": { "path": "." },
                  "cache_control": { "type": "ephemeral" } },
            ] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "call_r1", "content": "# A" },
                { "type": "tool_result", "tool_use_id": "call_r2", "content": "a.md\nb.md",
                  "cache_control": { "type": "ephemeral" } },
            ] },
        ])
    );
    assert!(sent.get("tool_choice").is_none());
}

#[tokio::test]
async fn ollama_tool_turns_name_the_tool_of_each_result() {
    let server = Server::start(vec![ndjson(&ollama_text("ok"))]).await;
    let model = ollama_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::Auto, quick());
    providers
        .call(&two_tool_turn("Planner", model))
        .await
        .unwrap();
    let sent = body(&server.requests()[0]);
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(
        messages[2],
        json!({ "role": "assistant", "content": "", "tool_calls": [
            { "function": { "name": "read_file", "arguments": { "path": "a.md" } } },
            { "function": { "name": "list_dir", "arguments": { "path": "." } } },
        ] })
    );
    assert_eq!(
        messages[3],
        json!({ "role": "tool", "content": "# A", "tool_name": "read_file" })
    );
    assert_eq!(
        messages[4],
        json!({ "role": "tool", "content": "a.md\nb.md", "tool_name": "list_dir" })
    );
}

#[tokio::test]
async fn function_choice_is_each_providers_tool_choice() {
    use ir::ToolChoice::{None as NoTools, Required};
    let server = Server::start(vec![
        sse(&openai_text_stream("a")),
        sse(&openai_text_stream("b")),
        sse(&anthropic_stream()),
        sse(&anthropic_stream()),
        ndjson(&ollama_text("c")),
        ndjson(&ollama_text("d")),
    ])
    .await;
    let models = [
        openai_model(&server),
        anthropic_model(&server),
        ollama_model(&server),
    ];
    // A call whose history holds no tool calls.
    let mut fresh = call("Planner", None);
    fresh.messages.truncate(2);
    for model in &models {
        for choice in [Required, NoTools] {
            let (providers, _) = providers_for(model, choice, quick());
            fresh.model = Some(Box::new(model.clone()));
            providers.call(&fresh).await.unwrap();
        }
    }
    let sent: Vec<Json> = server.requests().iter().map(body).collect();
    // OpenAI: the tools, and `tool_choice` "required" or "none".
    assert_eq!(sent[0]["tool_choice"], json!("required"));
    assert_eq!(sent[0]["tools"].as_array().unwrap().len(), 2);
    assert_eq!(sent[1]["tool_choice"], json!("none"));
    // Anthropic: `{"type": "any"}`; for none, no tools at all.
    assert_eq!(sent[2]["tool_choice"], json!({ "type": "any" }));
    assert_eq!(sent[2]["tools"].as_array().unwrap().len(), 2);
    assert!(sent[3].get("tools").is_none() && sent[3].get("tool_choice").is_none());
    // Ollama has no tool_choice: the tools for required, none for none.
    assert_eq!(sent[4]["tools"].as_array().unwrap().len(), 2);
    assert!(sent[4].get("tool_choice").is_none());
    assert!(sent[5].get("tools").is_none());
}

#[tokio::test]
async fn required_with_one_tool_names_it_for_openai_compatible_servers() {
    // llama.cpp's Python server fails on `"required"` and constrains the arguments to the
    // schema only for a named function; OpenAI reads both the same with one tool.
    let server = Server::start(vec![sse(&openai_text_stream("a"))]).await;
    let model = openai_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::Required, quick());
    let mut one = call("Planner", Some(model));
    one.messages.truncate(2);
    one.tools = one.tools[..1].to_vec().into();
    let only = one.tools[0].name.clone();
    providers.call(&one).await.unwrap();
    let sent = body(&server.requests()[0]);
    assert_eq!(
        sent["tool_choice"],
        json!({ "type": "function", "function": { "name": only } })
    );
    assert_eq!(sent["tools"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn required_forces_a_tool_call_only_before_the_turns_tools_ran() {
    // After the tools' results the model is asked with `none` (Semantic Kernel's Required
    // advertises the functions in the first request only): forced again, it would call
    // tools until the turn's limit and never answer.
    let server = Server::start(vec![
        sse(&openai_text_stream("a")),
        sse(&anthropic_stream()),
    ])
    .await;
    for model in [openai_model(&server), anthropic_model(&server)] {
        let (providers, _) = providers_for(&model, ir::ToolChoice::Required, quick());
        // `call` ends with the result of the turn's first tool call.
        providers.call(&call("Planner", Some(model))).await.unwrap();
    }
    let sent: Vec<Json> = server.requests().iter().map(body).collect();
    assert_eq!(sent[0]["tool_choice"], json!("none"));
    assert_eq!(sent[0]["tools"].as_array().unwrap().len(), 2);
    assert_eq!(sent[1]["tool_choice"], json!({ "type": "none" }));
}

#[tokio::test]
async fn anthropic_none_with_tool_calls_in_the_history_keeps_the_tools_and_says_none() {
    // The API refuses `tool_use` blocks in a request that defines no tools.
    let server = Server::start(vec![sse(&anthropic_stream())]).await;
    let model = anthropic_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::None, quick());
    providers
        .call(&two_tool_turn("Planner", model))
        .await
        .unwrap();
    let sent = body(&server.requests()[0]);
    assert_eq!(sent["tools"].as_array().unwrap().len(), 2);
    assert_eq!(sent["tool_choice"], json!({ "type": "none" }));
}

/// A chat completion answered whole (as to `stream: false`), with a tool call.
fn completion(id: &str) -> String {
    json!({
        "id": id, "object": "chat.completion", "created": 1_700_000_000, "model": "local",
        "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{ "id": "call_1", "type": "function",
                "function": { "name": "handoff", "arguments": "{\"route_keyword\": \"DONE\"}" } }] } }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 4 },
    })
    .to_string()
}

#[tokio::test]
async fn a_server_refusing_streamed_tools_is_asked_without_streaming_for_the_rest_of_the_run() {
    // llama.cpp's Python server: a 500 for a streamed request with tools.
    let refusal = r#"{"detail": "Streaming with tools is not supported"}"#;
    let server = Server::start(vec![
        status(500, "Internal Server Error", &[], refusal),
        status(200, "OK", &[], &completion("one")),
        status(200, "OK", &[], &completion("two")),
    ])
    .await;
    let model = openai_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::Auto, quick());
    for _ in 0..2 {
        let reply = providers
            .call(&call("Planner", Some(model.clone())))
            .await
            .unwrap();
        assert_eq!(reply.tool_calls[0].name, "handoff");
        assert_eq!(reply.tool_calls[0].args, json!({ "route_keyword": "DONE" }));
        assert_eq!(reply.usage.input_tokens, 10);
    }
    let sent: Vec<Json> = server.requests().iter().map(body).collect();
    assert_eq!(sent.len(), 3, "one refusal, then one request per call");
    assert_eq!(sent[0]["stream"], json!(true));
    assert_eq!(sent[1]["stream"], json!(false));
    assert!(sent[1].get("stream_options").is_none());
    assert_eq!(sent[2]["stream"], json!(false), "remembered for the run");
    let notices = retries(&providers);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].0, "Planner");
    assert!(
        notices[0].3.contains("HTTP 500") && notices[0].1 == Resend::Unstreamed,
        "{notices:?}"
    );
}

/// A call of `Planner` on `model` whose history is the task only, so a forced choice applies.
fn fresh(model: &ir::Model) -> ModelCall {
    let mut fresh = call("Planner", Some(model.clone()));
    fresh.messages.truncate(2);
    fresh
}

#[tokio::test]
async fn an_empty_stream_is_asked_again_without_streaming() {
    // llama.cpp's Python server fails a request its chat format cannot honour (automatic
    // tool choice that picks a tool) inside its streaming path: a 200 with no event.
    let server = Server::start(vec![
        sse(""),
        status(200, "OK", &[], &completion("one")),
        status(200, "OK", &[], &completion("two")),
    ])
    .await;
    let model = openai_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::Auto, quick());
    for _ in 0..2 {
        let reply = providers.call(&fresh(&model)).await.unwrap();
        assert_eq!(reply.tool_calls[0].name, "handoff");
    }
    let sent: Vec<Json> = server.requests().iter().map(body).collect();
    assert_eq!(sent.len(), 3, "one empty stream, then one request per call");
    assert_eq!(sent[0]["stream"], json!(true));
    assert_eq!(
        sent[0]["tool_choice"],
        json!("auto"),
        "auto is said, not implied"
    );
    assert_eq!(sent[1]["stream"], json!(false));
    assert_eq!(sent[2]["stream"], json!(false), "remembered for the run");
    let notices = retries(&providers);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].3.contains("before any reply arrived") && notices[0].1 == Resend::Unstreamed,
        "{notices:?}"
    );
}

#[tokio::test]
async fn required_over_several_tools_failed_both_ways_names_tool_choice_at_once() {
    // The same server with `tool_choice: "required"` over two tools: an empty stream, then
    // a 500 unstreamed. Retrying cannot help; the error says what to change.
    let server = Server::start(vec![
        sse(""),
        status(
            500,
            "Internal Server Error",
            &[],
            r#"{"detail": "AssertionError"}"#,
        ),
        sse(&openai_text_stream("never asked")),
    ])
    .await;
    let model = openai_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::Required, quick());
    let error = providers.call(&fresh(&model)).await.unwrap_err();
    assert_eq!(server.requests().len(), 2, "{error}");
    assert!(
        error.contains("`tool_choice` \"required\" over 2 tools")
            && error.contains("`FunctionChoice: auto`"),
        "{error}"
    );
}

/// A call of `Planner` whose reply must hold `verdict` and `review.score` (a structured
/// state's routes read them).
fn structured(model: &ir::Model) -> ModelCall {
    let mut call = fresh(model);
    call.reply_fields = vec!["verdict".to_string(), "review.score".to_string()].into();
    call
}

#[tokio::test]
async fn a_structured_reply_is_asked_for_as_json_where_the_server_can_constrain_it() {
    let server = Server::start(vec![
        sse(&openai_text_stream("{}")),
        ndjson(&ollama_text("{}")),
        sse(&anthropic_stream()),
    ])
    .await;
    for model in [
        openai_model(&server),
        ollama_model(&server),
        anthropic_model(&server),
    ] {
        let (providers, _) = providers_for(&model, ir::ToolChoice::Auto, quick());
        providers.call(&structured(&model)).await.unwrap();
    }
    let sent: Vec<Json> = server.requests().iter().map(body).collect();
    let schema = json!({
        "type": "object",
        "properties": {
            "verdict": {},
            "review": { "type": "object", "properties": { "score": {} }, "required": ["score"] },
        },
        "required": ["verdict", "review"],
    });
    // A compatible server (llama.cpp's, vLLM's): a JSON object with its schema.
    assert_eq!(
        sent[0]["response_format"],
        json!({ "type": "json_object", "schema": schema })
    );
    // Ollama: the schema as `format`.
    assert_eq!(sent[1]["format"], schema);
    // Anthropic has no reply format: the routing block asks for the JSON.
    assert!(sent[2].get("response_format").is_none() && sent[2].get("format").is_none());
    // A free-text reply asks for nothing.
    let server = Server::start(vec![sse(&openai_text_stream("ok"))]).await;
    let model = openai_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::Auto, quick());
    providers.call(&fresh(&model)).await.unwrap();
    assert!(body(&server.requests()[0]).get("response_format").is_none());
}

#[tokio::test]
async fn a_server_refusing_the_reply_format_is_asked_without_it_for_the_rest_of_the_run() {
    // LM Studio takes only `json_schema`; other servers no `response_format` at all.
    let refusal = r#"{"error": "'response_format.type' must be 'json_schema'"}"#;
    let server = Server::start(vec![
        status(400, "Bad Request", &[], refusal),
        sse(&openai_text_stream(r#"{"verdict": "ok"}"#)),
        sse(&openai_text_stream(r#"{"verdict": "ok"}"#)),
    ])
    .await;
    let model = openai_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::Auto, quick());
    for _ in 0..2 {
        let reply = providers.call(&structured(&model)).await.unwrap();
        assert_eq!(reply.text, r#"{"verdict": "ok"}"#);
    }
    let sent: Vec<Json> = server.requests().iter().map(body).collect();
    assert_eq!(sent.len(), 3, "one refusal, then one request per call");
    assert!(sent[0].get("response_format").is_some());
    assert!(sent[1].get("response_format").is_none());
    assert!(
        sent[2].get("response_format").is_none(),
        "remembered for the run"
    );
    assert_eq!(sent[1]["stream"], json!(true), "still streamed");
    let notices = retries(&providers);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].3.contains("HTTP 400") && notices[0].1 == Resend::Unformatted,
        "{notices:?}"
    );
}

#[tokio::test]
async fn a_bad_request_about_something_else_is_not_retried_unstreamed() {
    let server = Server::start(vec![status(
        400,
        "Bad Request",
        &[],
        r#"{"error": {"message": "model `x` does not exist"}}"#,
    )])
    .await;
    let model = openai_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::Auto, quick());
    let error = providers
        .call(&call("Planner", Some(model)))
        .await
        .unwrap_err();
    assert!(error.contains("does not exist"), "{error}");
    assert_eq!(server.requests().len(), 1);
    assert!(retries(&providers).is_empty());
}

#[tokio::test]
async fn a_slow_but_steady_stream_is_not_cut() {
    // 24 pieces 120 ms apart (about 3 s) against a 0.5 s idle timeout: never idle that
    // long, so the stream runs to its end; the default overall cap is far past the old
    // fixed 120 s.
    assert!(Settings::default().timeout >= Duration::from_secs(30 * 60));
    let Reply::Pieces(pieces) = streamed("text/event-stream", &openai_stream(), 40) else {
        unreachable!()
    };
    assert!(pieces.len() >= 24, "{}", pieces.len());
    let server = Server::start(vec![Reply::Slow(pieces, Duration::from_millis(120))]).await;
    let settings = Settings {
        idle_timeout: Duration::from_millis(500),
        max_retries: 0,
        ..Settings::default()
    };
    let model = openai_model(&server);
    let (providers, _) = providers_for(&model, ir::ToolChoice::Auto, settings);
    let started = Instant::now();
    let reply = providers.call(&call("Planner", Some(model))).await.unwrap();
    assert!(started.elapsed() > Duration::from_millis(2500));
    assert_eq!(calls_of(&reply), expected_tool_calls(true));
    assert!(retries(&providers).is_empty());
}

#[tokio::test]
async fn a_retry_mid_stream_is_announced_and_the_reply_is_the_retrys() {
    let server = Server::start(vec![
        Reply::Reset(stream_start()),
        sse(&openai_text_stream("Second attempt.")),
    ])
    .await;
    let model = openai_model(&server);
    let (providers, tokens) = providers_for(&model, ir::ToolChoice::Auto, quick());
    let reply = providers.call(&call("Planner", Some(model))).await.unwrap();
    assert_eq!(
        reply.text, "Second attempt.",
        "nothing of the first attempt"
    );
    let (_, streamed) = streamed_text(&tokens);
    assert!(
        streamed.starts_with("Writing") && streamed.ends_with("Second attempt."),
        "the failed attempt streamed first: {streamed}"
    );
    let notices = retries(&providers);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].1 == Resend::Again
            && notices[0].2 == 1
            && notices[0].3.contains("broke mid-response"),
        "{notices:?}"
    );
    assert_clean(&notices[0].3);
}
