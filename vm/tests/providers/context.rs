//! Bounded requests on the wire: Anthropic's `cache_control` breakpoints on the stable
//! prefix and the cache counts read back, OpenAI requests of a growing conversation that
//! share their byte prefix (its automatic cache), a request too large for the model's
//! context window cut to fit, and one that cannot fit refused before anything is sent.

use fuseraft_compiler::ir;
use fuseraft_vm::driver::Models;
use fuseraft_vm::effect::{ChatMessage, ChatRole, ModelCall};
use fuseraft_vm::event::EventKind;
use fuseraft_vm::providers::{Overrides, Providers};
use serde_json::{json, Value as Json};

use super::common::*;
use super::server::*;

/// `call` with `turns` earlier replies of about 300 bytes between the task and its tail.
fn long_call(model: &ir::Model, turns: usize) -> ModelCall {
    let mut call = call("Planner", Some(model.clone()));
    let history: Vec<ChatMessage> = (0..turns)
        .map(|idx| {
            message(
                ChatRole::User,
                &format!("[Developer]: reply {idx}. {}", "done ".repeat(60)),
            )
        })
        .collect();
    call.messages.splice(2..2, history);
    call
}

/// Providers for the agent `Planner` on `model`.
fn fitting(model: &ir::Model) -> Providers {
    let program = program(&[("Planner", Some(model.clone()))]);
    let overrides = Overrides {
        endpoint: model.endpoint.clone(),
        ..Overrides::default()
    };
    Providers::new(&program, &overrides, quick(), &env_with_keys, None).unwrap()
}

/// The `request_fitted` events the providers queued: `(caller, messages_left_out, window)`.
fn fitted(providers: &Providers) -> Vec<(String, usize, u64)> {
    let notices = providers
        .notices()
        .expect("providers report fitting")
        .take();
    notices
        .into_iter()
        .map(|notice| match notice.kind {
            EventKind::RequestFitted {
                messages_left_out,
                window,
                ..
            } => (notice.caller.to_string(), messages_left_out, window),
            other => panic!("not a fitted request: {other:?}"),
        })
        .collect()
}

fn body(request: &Recorded) -> Json {
    serde_json::from_str(&request.body).expect("a JSON body")
}

/// Every `cache_control` in a request body, by its JSON pointer.
fn breakpoints(value: &Json, at: String, found: &mut Vec<String>) {
    match value {
        Json::Object(map) => {
            for (key, inner) in map {
                if key == "cache_control" {
                    assert_eq!(inner, &json!({ "type": "ephemeral" }));
                    found.push(at.clone());
                } else {
                    breakpoints(inner, format!("{at}/{key}"), found);
                }
            }
        }
        Json::Array(items) => {
            for (idx, inner) in items.iter().enumerate() {
                breakpoints(inner, format!("{at}/{idx}"), found);
            }
        }
        _ => {}
    }
}

/// An Anthropic stream whose usage reports a cache read and a cache write.
fn cached_anthropic_stream() -> String {
    anthropic_stream().replace(
        r#""usage":{"input_tokens":250,"output_tokens":1}"#,
        r#""usage":{"input_tokens":250,"cache_creation_input_tokens":1200,"cache_read_input_tokens":9000,"output_tokens":1}"#,
    )
}

#[tokio::test]
async fn anthropic_marks_tools_system_and_the_conversation_tail_for_caching() {
    let stream = cached_anthropic_stream();
    assert!(
        stream.contains("cache_read_input_tokens"),
        "the stream was rewritten"
    );
    let server = Server::start(vec![sse(&stream)]).await;
    let model = anthropic_model(&server);
    let providers = fitting(&model);
    let reply = providers.call(&long_call(&model, 6)).await.unwrap();
    assert_eq!(reply.usage.input_tokens, 250 + 1200 + 9000);
    assert_eq!(reply.usage.cache_read_tokens, 9000);
    assert_eq!(reply.usage.cache_write_tokens, 1200);

    let sent = body(&server.requests()[0]);
    let mut found = Vec::new();
    breakpoints(&sent, String::new(), &mut found);
    let messages = sent["messages"].as_array().unwrap();
    let last_block = |message: &Json| message["content"].as_array().unwrap().len() - 1;
    let (n, tools) = (messages.len(), sent["tools"].as_array().unwrap().len());
    let mut expected = vec![
        format!(
            "/messages/{}/content/{}",
            n - 2,
            last_block(&messages[n - 2])
        ),
        format!(
            "/messages/{}/content/{}",
            n - 1,
            last_block(&messages[n - 1])
        ),
        "/system/0".to_string(),
        format!("/tools/{}", tools - 1),
    ];
    expected.sort();
    found.sort();
    assert_eq!(
        found, expected,
        "at most 4 breakpoints, on the stable prefix"
    );
    assert_eq!(
        sent["system"][0]["text"],
        "You are the Planner. Write the brief."
    );
    // The tail is the tool result the next request will extend.
    assert_eq!(messages[n - 1]["content"][0]["type"], "tool_result");
}

#[tokio::test]
async fn openai_requests_of_a_growing_conversation_share_their_byte_prefix() {
    let server = Server::start(vec![
        sse(&openai_text_stream("first")),
        sse(&openai_text_stream("second")),
    ])
    .await;
    let model = openai_model(&server);
    let providers = fitting(&model);
    let first = long_call(&model, 8);
    providers.call(&first).await.unwrap();
    let mut second = first.clone();
    second.messages.push(message(ChatRole::Assistant, "first"));
    second
        .messages
        .push(message(ChatRole::User, "[fuseraft: Planner → Developer]"));
    providers.call(&second).await.unwrap();

    let requests = server.requests();
    let (a, b) = (&requests[0].body, &requests[1].body);
    let shared = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    // Everything the first request said, up to its last message, is the second's prefix.
    let last = a.rfind("call_read1").expect("the last message");
    assert!(
        shared > last,
        "shared {shared} bytes, the first request's messages end near {last}"
    );
    assert!(
        shared * 10 > a.len() * 8,
        "shared {shared} of {} bytes",
        a.len()
    );
}

#[tokio::test]
async fn a_request_too_large_for_the_window_is_cut_to_fit() {
    let server = Server::start(vec![sse(&openai_text_stream("ok"))]).await;
    let mut model = openai_model(&server);
    // 40 replies of ~330 bytes are ~4,400 tokens; the window holds about half.
    model.context_window = Some(3_000);
    model.max_tokens = Some(500);
    let providers = fitting(&model);
    let reply = providers.call(&long_call(&model, 40)).await.unwrap();
    assert_eq!(reply.text, "ok");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = body(&requests[0]);
    let messages = sent["messages"].as_array().unwrap();
    let content = |idx: usize| {
        messages[idx]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(content(0), "You are the Planner. Write the brief.");
    assert_eq!(content(1), "Build a CLI that greets.");
    let notice = content(2);
    assert!(
        notice.contains("older messages are left out here"),
        "{notice}"
    );
    let dropped: usize = notice
        .trim_start_matches("[fuseraft: ")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((10..40).contains(&dropped), "{dropped}");
    assert!(content(3).starts_with(&format!("[Developer]: reply {dropped}. ")));
    // The newest reply and the turn's tool call and result are kept.
    let n = messages.len();
    assert!(content(n - 3).starts_with("[Developer]: reply 39. "));
    assert_eq!(messages[n - 2]["tool_calls"][0]["id"], "call_read1");
    assert_eq!(messages[n - 1]["tool_call_id"], "call_read1");
    assert!(
        requests[0].body.len() < 3_000 * 3,
        "{} bytes",
        requests[0].body.len()
    );
    let window = model.context_window.unwrap();
    assert_eq!(
        fitted(&providers),
        [("Planner".to_string(), dropped, window)]
    );
}

#[tokio::test]
async fn a_request_that_cannot_fit_is_a_clear_error_and_never_sent() {
    let server = Server::start(vec![sse(&openai_text_stream("never"))]).await;
    let mut model = openai_model(&server);
    model.context_window = Some(200);
    let providers = fitting(&model);
    let error = providers.call(&long_call(&model, 10)).await.unwrap_err();
    assert!(
        error.starts_with("agent `Planner`: the request needs about"),
        "{error}"
    );
    assert!(error.contains("context window of `gpt-4o`"), "{error}");
    assert!(error.contains("`MaxContextTokens`"), "{error}");
    assert_clean(&error);
    assert_eq!(server.requests().len(), 0, "not sent, so not retried");
}

/// A two-agent sequential team on `endpoint` that compacts after two turns, keeping two
/// messages (the last reply and the handoff marker after it).
fn compacting_team(endpoint: &str) -> ir::Program {
    let config = format!(
        "Orchestration:
  Name: Compacting
  Models:
    worker: {{ ModelId: gpt-4o, Endpoint: \"{endpoint}\" }}
    summary: {{ ModelId: gpt-4o-mini, Endpoint: \"{endpoint}\" }}
  Agents:
    - {{ Name: Writer, Model: worker, Instructions: Write. }}
    - {{ Name: Editor, Model: worker, Instructions: Edit. }}
  Selection: {{ Type: sequential }}
  Termination: {{ Type: maxiterations, MaxIterations: 3 }}
  Compaction: {{ TriggerTurnCount: 2, KeepRecentTurns: 2, Model: summary }}
"
    );
    let files = fuseraft_compiler::MemoryFiles::new().with("team.yaml", config);
    let compiled = fuseraft_compiler::compile(std::path::Path::new("team.yaml"), &files);
    compiled
        .program
        .unwrap_or_else(|| panic!("{:?}", compiled.diagnostics))
}

#[tokio::test]
async fn a_compaction_is_a_model_call_on_the_wire_and_its_summary_replaces_the_history() {
    use fuseraft_vm::driver::{drive, Approvals, Env};
    use fuseraft_vm::machine::{Machine, Options};

    let server = Server::start(vec![
        sse(&openai_text_stream("Draft one: the greeting is hello.")),
        sse(&openai_text_stream("Edited: the greeting is Hello.")),
        sse(&openai_text_stream(
            "SUMMARY: Writer drafted, Editor capitalised.",
        )),
        sse(&openai_text_stream("Draft two.")),
    ])
    .await;
    let program = compacting_team(&format!("{}/v1", server.url));
    let overrides = Overrides::default();
    let providers = Providers::new(&program, &overrides, quick(), &env_with_keys, None).unwrap();
    let work =
        std::env::temp_dir().join(format!("fuseraft-compaction-wire-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let env = Env {
        work_dir: work.clone(),
        deny_read: Vec::new(),
        approvals: Approvals::All,
        pause: None,
    };
    let options = Options {
        session_id: "wire".into(),
        task: "Write a greeting.".into(),
        max_turns: None,
        skip_prompts: false,
    };
    let mut events = Vec::new();
    let mut on_event = |event: &fuseraft_vm::event::Event, _: &fuseraft_vm::machine::Run| {
        events.push((event.name(), event.payload_value()));
    };
    let summary = drive(
        Machine::new(&program, options),
        &providers,
        &env,
        &mut on_event,
        None,
    )
    .await;
    let _ = std::fs::remove_dir_all(&work);
    assert_eq!(summary.turns, 3, "{:?}", summary.reason);
    // The task, three replies and their handoff markers: every message, no summary.
    assert_eq!(summary.history.len(), 7);
    assert!(summary
        .history
        .iter()
        .all(|message| !message.content.contains("SUMMARY")));

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let compaction = body(&requests[2]);
    assert_eq!(compaction["model"], "gpt-4o-mini", "the `Compaction.Model`");
    assert!(compaction.get("tools").is_none());
    let messages = compaction["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "system");
    assert!(messages[0]["content"]
        .as_str()
        .unwrap()
        .starts_with("You compact the history"));
    let folded = messages[1]["content"].as_str().unwrap();
    assert!(
        folded.starts_with("The task:\nWrite a greeting.\n"),
        "{folded}"
    );
    assert!(
        folded.contains("[turn 0] Writer: Draft one: the greeting is hello."),
        "{folded}"
    );
    assert!(
        !folded.contains("Edited:"),
        "the kept message is not folded in: {folded}"
    );

    // The next request: the task, the summary, the kept message; not the first draft.
    let next = body(&requests[3]);
    let contents: Vec<&str> = next["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(contents[0], "Write.", "{contents:?}");
    assert_eq!(contents[1], "Write a greeting.");
    assert!(
        contents[2].starts_with("[fuseraft: summary of the conversation through turn "),
        "{contents:?}"
    );
    assert!(contents[2].ends_with("SUMMARY: Writer drafted, Editor capitalised."));
    assert!(contents
        .iter()
        .any(|text| text.contains("Edited: the greeting is Hello.")));
    assert!(!contents.iter().any(|text| text.contains("Draft one")));
    let compacted = events
        .iter()
        .find(|(kind, _)| *kind == "compaction")
        .map(|(_, payload)| payload.clone())
        .expect("a compaction event");
    assert_eq!(
        compacted["turns_compacted"], 2,
        "the first reply and its marker"
    );
    assert_eq!(compacted["turns_retained"], 2);
}
