//! Model resolution seen from outside: overrides, missing models and keys, redaction.

use fuseraft_vm::driver::Models;
use fuseraft_vm::providers::{Overrides, Providers, Settings};
use serde_json::Value as Json;

use super::common::*;
use super::server::*;

#[tokio::test]
async fn model_flag_and_endpoint_route_agents_without_a_model() {
    let server = Server::start(vec![ndjson(&ollama_stream())]).await;
    let program = program(&[("Planner", None)]);
    let overrides = Overrides {
        model: Some("ollama:llama3.2:3b".into()),
        endpoint: Some(server.url.clone()),
        ..Overrides::default()
    };
    let providers = providers(&program, &overrides, quick());
    let reply = providers.call(&call("Planner", None)).await.unwrap();
    assert_eq!(reply.usage.output_tokens, 25);
    let requests = server.requests();
    assert_eq!(requests[0].path, "/api/chat");
    let body: Json = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(body["model"], "llama3.2:3b");
}

#[tokio::test]
async fn model_flag_replaces_configured_models() {
    let server = Server::start(vec![sse(&openai_text_stream("ok"))]).await;
    let configured = model(
        Some("anthropic"),
        "claude-opus-4",
        "https://api.anthropic.com",
    );
    let program = program(&[("Planner", Some(configured.clone()))]);
    let overrides = Overrides {
        model: Some("vllm:qwen3-32b".into()),
        endpoint: Some(format!("{}/v1", server.url)),
        ..Overrides::default()
    };
    let providers = providers(&program, &overrides, quick());
    providers
        .call(&call("Planner", Some(configured)))
        .await
        .unwrap();
    let body: Json = serde_json::from_str(&server.requests()[0].body).unwrap();
    assert_eq!(body["model"], "qwen3-32b");
}

#[tokio::test]
async fn an_agent_without_any_model_is_refused_before_any_call() {
    let program = program(&[("Planner", None)]);
    let error = Providers::new(
        &program,
        &Overrides::default(),
        quick(),
        &env_with_keys,
        None,
    )
    .unwrap_err();
    assert_eq!(
        error,
        "agent `Planner` has no model: give it a `Model` in the config, pass `--model PROVIDER:MODEL` (e.g. `openai:gpt-4o-mini`), or answer every call from a replay file with `--replay FILE`"
    );
}

#[test]
fn a_missing_key_fails_before_any_call() {
    let program = program(&[
        (
            "Planner",
            Some(model(Some("ollama"), "qwen3", "http://127.0.0.1:9")),
        ),
        (
            "Reviewer",
            Some(model(
                None,
                "claude-sonnet-4-5",
                "https://api.anthropic.com",
            )),
        ),
    ]);
    let error = Providers::new(
        &program,
        &Overrides::default(),
        Settings::default(),
        &|_| None,
        None,
    )
    .unwrap_err();
    assert_eq!(
        error,
        "agent `Reviewer` uses provider `anthropic`, but ANTHROPIC_API_KEY is not set"
    );
    let mut custom = model(None, "grok-4", "https://api.x.ai/v1");
    custom.api_key_env = Some("XAI_API_KEY".into());
    let error = Providers::new(
        &program_with(custom),
        &Overrides::default(),
        Settings::default(),
        &|_| None,
        None,
    )
    .unwrap_err();
    assert_eq!(
        error,
        "agent `Planner` uses provider `openai-compatible`, but XAI_API_KEY is not set"
    );
}

#[test]
fn debug_output_never_shows_the_key() {
    let program = program(&[
        (
            "Planner",
            Some(model(Some("openai"), "gpt-4o", "https://api.openai.com/v1")),
        ),
        (
            "Reviewer",
            Some(model(
                None,
                "claude-sonnet-4-5",
                "https://api.anthropic.com",
            )),
        ),
    ]);
    let providers = providers(&program, &Overrides::default(), Settings::default());
    let debug = format!("{providers:?} {providers:#?}");
    assert!(debug.contains("gpt-4o") && debug.contains("claude-sonnet-4-5"));
    assert!(
        !debug.contains(FAKE_KEY) && !debug.contains("FAKEKEY"),
        "{debug}"
    );
}

#[test]
fn select_managers_are_resolved_up_front_too() {
    let mut program = program(&[(
        "Planner",
        Some(model(Some("ollama"), "qwen3", "http://127.0.0.1:9")),
    )]);
    program.states.push(fuseraft_compiler::ir::State {
        name: "pick".into(),
        agent: None,
        kind: fuseraft_compiler::ir::StateKind::Select(Box::new(fuseraft_compiler::ir::Select {
            style: fuseraft_compiler::ir::SelectStyle::Llm,
            manager: Some(model(
                Some("openai"),
                "gpt-4o-mini",
                "https://api.openai.com/v1",
            )),
            prompt: None,
        })),
        context: None,
        layer: None,
        exits: Vec::new(),
        step: None,
        no_match: fuseraft_compiler::ir::NoMatch::Never,
        stuck: Default::default(),
        loc: None,
    });
    let error = Providers::new(
        &program,
        &Overrides::default(),
        Settings::default(),
        &|_| None,
        None,
    )
    .unwrap_err();
    assert_eq!(
        error,
        "the manager of state `pick` uses provider `openai`, but OPENAI_API_KEY is not set"
    );
    assert!(Providers::new(
        &program,
        &Overrides::default(),
        Settings::default(),
        &env_with_keys,
        None
    )
    .is_ok());
}
