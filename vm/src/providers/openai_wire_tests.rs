//! `prompt_cache_key` on the wire: a loopback server stands in for OpenAI's own service
//! (the target is marked official, as an `api.openai.com` endpoint is) and for a
//! compatible server, and records the request bodies fuseraft sends them.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use fuseraft_compiler::ir::ToolChoice;
use serde_json::Value as Json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::super::http::Http;
use super::super::openai_body::Bodies;
use super::super::{retry, Kind, Settings, Target, Timeouts};
use super::{request, Stream};
use crate::effect::{ChatMessage, ChatRole, ModelCall};

/// A streamed reply of `ok`, with usage, as OpenAI sends it.
const REPLY: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"}}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1}}\n\n",
    "data: [DONE]\n\n",
);

/// Serves every connection one request and the reply; returns its URL and the bodies.
async fn server() -> (String, Arc<Mutex<Vec<Json>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let recorded = bodies.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut buffer = [0u8; 8192];
            // Headers, then as many body bytes as `content-length` says.
            let body = loop {
                let read = socket.read(&mut buffer).await.unwrap_or(0);
                if read == 0 {
                    break None;
                }
                request.extend_from_slice(&buffer[..read]);
                let text = String::from_utf8_lossy(&request).to_string();
                let Some(end) = text.find("\r\n\r\n") else {
                    continue;
                };
                let length: usize = text[..end]
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                if request.len() >= end + 4 + length {
                    break Some(request[end + 4..end + 4 + length].to_vec());
                }
            };
            let Some(body) = body else { continue };
            recorded
                .lock()
                .unwrap()
                .push(serde_json::from_slice(&body).expect("the request is JSON"));
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{REPLY}",
                REPLY.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    (url, bodies)
}

fn target(url: &str, official: bool) -> Target {
    Target {
        kind: Kind::OpenAi {
            azure: false,
            official,
        },
        provider: "openai".into(),
        model: "gpt-4o".into(),
        url: url.into(),
        key: None,
        key_variable: None,
        temperature: None,
        max_tokens: None,
        reasoning_effort: None,
        context_window: None,
    }
}

fn call(agent: &str) -> ModelCall {
    let message = |role, content: &str| ChatMessage {
        role,
        content: content.into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    };
    ModelCall {
        agent: crate::effect::Caller::from_queue(agent),
        model: None,
        messages: vec![
            message(ChatRole::System, "You plan."),
            message(ChatRole::User, "Build a CLI that greets."),
        ],
        tools: Vec::new().into(),
        turn: 1,
        reply_fields: Default::default(),
    }
}

#[tokio::test]
async fn openai_itself_gets_one_prompt_cache_key_per_agent_and_others_none() {
    let (url, bodies) = server().await;
    let settings = Settings::default();
    let http = Http::new(settings, &[]).unwrap();
    let unstreamed = AtomicBool::new(false);
    let unformatted = AtomicBool::new(false);
    let how = retry::How {
        unstreamed: &unstreamed,
        unformatted: &unformatted,
        notice: &|_| {},
        timeouts: Timeouts {
            overall: settings.timeout,
            idle: settings.idle_timeout,
            connect: settings.connect_timeout,
        },
    };
    let mut pieces = Bodies::default();
    for (agent, official) in [
        ("Planner", true),
        ("Planner", true),
        ("Tester", true),
        ("Planner", false),
    ] {
        let post = request(
            &target(&url, official),
            &call(agent),
            ToolChoice::Auto,
            &mut pieces,
        );
        let reply = http
            .send(&post, || Stream::new(agent, None), &how)
            .await
            .unwrap();
        assert_eq!(reply.text, "ok");
    }
    let bodies = bodies.lock().unwrap();
    let keys: Vec<Option<&str>> = bodies
        .iter()
        .map(|body| {
            body.get("prompt_cache_key")
                .map(|key| key.as_str().unwrap())
        })
        .collect();
    let planner = keys[0].expect("OpenAI's own service gets a key");
    assert!(
        planner.starts_with("fuseraft-") && planner.len() == 25,
        "{planner}"
    );
    // Stable across an agent's calls, apart between agents, absent for other servers.
    assert_eq!(keys[1], Some(planner));
    assert!(keys[2].is_some_and(|tester| tester != planner));
    assert_eq!(keys[3], None);
    assert_eq!(
        bodies[0]["messages"][1]["content"],
        "Build a CLI that greets."
    );
}
