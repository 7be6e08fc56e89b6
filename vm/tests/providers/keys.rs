//! Where keys go, seen from outside: a config cannot aim a well-known key at a host of its
//! choosing (refused before any call, with an explanation), a hand-parsing trick does not
//! make a host Anthropic's, the command line (`--endpoint`, `--api-key-env`) can, a 401
//! says how to pass a key, and a redirect is not followed with the key.

use fuseraft_vm::driver::Models;
use fuseraft_vm::providers::{Overrides, Providers};

use super::common::*;
use super::server::*;

fn resolve(
    model: fuseraft_compiler::ir::Model,
    overrides: &Overrides,
) -> Result<Providers, String> {
    Providers::new(
        &program_with(model),
        overrides,
        quick(),
        &env_with_keys,
        None,
    )
}

#[tokio::test]
async fn a_config_aiming_a_well_known_key_elsewhere_is_refused_before_any_call() {
    let server = Server::start(vec![sse(&openai_text_stream("ok"))]).await;
    let cases = [
        keyed(
            model(Some("openai"), "gpt-4o", &format!("{}/v1", server.url)),
            "OPENAI_API_KEY",
        ),
        keyed(model(None, "claude-x", &server.url), "ANTHROPIC_API_KEY"),
        keyed(
            model(None, "claude-x", "https://evil.example/v1"),
            "ANTHROPIC_API_KEY",
        ),
        keyed(
            model(None, "claude-x", r"https://evil.example\.anthropic.com"),
            "ANTHROPIC_API_KEY",
        ),
        keyed(
            model(None, "claude-x", "http://api.anthropic.com"),
            "ANTHROPIC_API_KEY",
        ),
        keyed(
            model(None, "gpt-4o", "https://api.openai.com.evil.example/v1"),
            "OPENAI_API_KEY",
        ),
        model(Some("azure"), "deploy", &server.url),
        model(
            Some("azure"),
            "deploy",
            "https://openai.azure.com.evil.example",
        ),
    ];
    for model in cases {
        let endpoint = model.endpoint.clone().unwrap();
        let error = resolve(model, &Overrides::default()).unwrap_err();
        assert!(
            error.starts_with("agent `Planner`: refusing to send "),
            "{endpoint}: {error}"
        );
        for part in ["--endpoint", "--api-key-env", "ApiKeyEnvVar"] {
            assert!(error.contains(part), "{endpoint}: {part}: {error}");
        }
        assert_clean(&error);
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_backslash_does_not_make_a_host_anthropics() {
    // `http://127.0.0.1:PORT\.anthropic.com` is host 127.0.0.1 (the URL standard reads `\`
    // as `/`): the provider's own key is not sent there.
    let server = Server::start(vec![sse(&anthropic_stream())]).await;
    let endpoint = format!(r"{}\.anthropic.com", server.url);
    let model = model(None, "claude-sonnet-4-5", &endpoint);
    let providers = resolve(model.clone(), &Overrides::default()).unwrap();
    providers.call(&call("Planner", Some(model))).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests[0].path, "/.anthropic.com/v1/messages");
    assert!(
        requests[0]
            .headers
            .iter()
            .all(|(_, value)| !value.contains(FAKE_KEY)),
        "{:?}",
        requests[0].headers
    );
}

#[tokio::test]
async fn the_command_line_may_send_a_key_anywhere() {
    // `--endpoint`: the user chose the endpoint, so the config's ApiKeyEnvVar goes there.
    let server = Server::start(vec![
        sse(&openai_text_stream("one")),
        sse(&openai_text_stream("two")),
    ])
    .await;
    let configured = keyed(
        model(Some("openai"), "gpt-4o", "https://evil.example/v1"),
        "OPENAI_API_KEY",
    );
    let overrides = Overrides {
        endpoint: Some(format!("{}/v1", server.url)),
        ..Overrides::default()
    };
    let providers = resolve(configured.clone(), &overrides).unwrap();
    providers
        .call(&call("Planner", Some(configured)))
        .await
        .unwrap();
    // `--api-key-env`: the user named the key, so it goes to the config's endpoint.
    let local = model(Some("vllm"), "qwen", &format!("{}/v1", server.url));
    let overrides = Overrides {
        api_key_env: Some("ANTHROPIC_API_KEY".into()),
        ..Overrides::default()
    };
    let providers = resolve(local.clone(), &overrides).unwrap();
    providers.call(&call("Planner", Some(local))).await.unwrap();
    let requests = server.requests();
    let bearer = format!("Bearer {FAKE_KEY}");
    assert_key_only_in(&requests[0], "authorization", &bearer);
    assert_key_only_in(&requests[1], "authorization", &bearer);
}

#[tokio::test]
async fn a_variable_of_the_configs_own_may_go_to_its_endpoint() {
    let server = Server::start(vec![sse(&openai_text_stream("ok"))]).await;
    let proxy = keyed(
        model(Some("openai"), "gpt-4o", &format!("{}/v1", server.url)),
        "MY_PROXY_KEY",
    );
    let providers = resolve(proxy.clone(), &Overrides::default()).unwrap();
    providers.call(&call("Planner", Some(proxy))).await.unwrap();
    assert_key_only_in(
        &server.requests()[0],
        "authorization",
        &format!("Bearer {FAKE_KEY}"),
    );
}

#[tokio::test]
async fn unauthorized_says_how_to_pass_a_key() {
    let body = r#"{"error":{"message":"Missing bearer authentication"}}"#;
    let server = Server::start(vec![
        status(401, "Unauthorized", &[], body),
        status(403, "Forbidden", &[], body),
    ])
    .await;
    let bare = model(Some("vllm"), "qwen", &format!("{}/v1", server.url));
    let providers = resolve(bare.clone(), &Overrides::default()).unwrap();
    let error = providers
        .call(&call("Planner", Some(bare)))
        .await
        .unwrap_err();
    assert!(
        error.contains("HTTP 401 Unauthorized: Missing bearer authentication (no key was sent"),
        "{error}"
    );
    assert!(error.contains("`--api-key-env VARIABLE`"), "{error}");
    let (reply, _, _) = ask(
        keyed(
            model(Some("vllm"), "q", &format!("{}/v1", server.url)),
            "MY_PROXY_KEY",
        ),
        quick(),
    )
    .await;
    let error = reply.unwrap_err();
    assert!(error.contains("HTTP 403 Forbidden"), "{error}");
    assert!(
        error.contains("the key sent came from MY_PROXY_KEY"),
        "{error}"
    );
    assert!(error.contains("`--api-key-env VARIABLE`"), "{error}");
}

#[tokio::test]
async fn redirects_are_not_followed_with_the_key() {
    let elsewhere = Server::start(vec![sse(&openai_text_stream("stolen"))]).await;
    let location = format!("{}/v1/chat/completions", elsewhere.url);
    let server = Server::start(vec![status(
        307,
        "Temporary Redirect",
        &[("Location", &location)],
        "{}",
    )])
    .await;
    let (reply, _, _) = ask(
        keyed(
            model(Some("vllm"), "q", &format!("{}/v1", server.url)),
            "MY_PROXY_KEY",
        ),
        quick(),
    )
    .await;
    let error = reply.unwrap_err();
    assert!(error.contains("HTTP 307 redirect to"), "{error}");
    assert!(error.contains("redirects are not followed"), "{error}");
    assert_eq!(server.requests().len(), 1, "not retried");
    assert!(elsewhere.requests().is_empty());
}
