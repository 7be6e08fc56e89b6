//! `fuseraft exec` against a loopback OpenAI-compatible server: a session remembers how it
//! was run (`--model`, `--endpoint`, `--api-key-env`), so after a SIGINT or SIGTERM its
//! exact resume hint and a bare `--resume ID` both continue against the same server; and
//! token usage a server does not report is "unknown" or "partial", never 0.

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-psess-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A one-agent config whose own model points at a port where nothing listens: only the
/// command line's (or the session's) provider options reach the test server.
fn config(dir: &Path) -> PathBuf {
    let path = dir.join("config.yaml");
    std::fs::write(
        &path,
        "Orchestration:\n  Name: Live\n  Agents:\n    - Name: Worker\n      Instructions: Work.\n      Plugins: [Shell]\n      Model: { Provider: openai, ModelId: configured-model, Endpoint: \"http://127.0.0.1:9/v1\" }\n  Selection:\n    Type: keyword\n    Routes:\n      - { Keyword: FINISHED, Agent: Worker, SourceAgents: [Worker] }\n",
    )
    .unwrap();
    path
}

fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    (listener, endpoint)
}

fn tool_call(command: &str, usage: bool) -> String {
    let mut reply = serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "shell_run",
                "arguments": serde_json::json!({"command": command}).to_string()}}]}}]
    });
    if usage {
        reply["usage"] = serde_json::json!({"prompt_tokens": 1200, "completion_tokens": 30});
    }
    reply.to_string()
}

fn text_reply(text: &str) -> String {
    serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]
    })
    .to_string()
}

fn exec(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command
        .arg("exec")
        .args(args)
        .env("FUSERAFT_TEST_KEY", "k-123456789")
        .env_remove("OPENAI_API_KEY");
    command
}

fn summary(output: &Output) -> serde_json::Value {
    serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim())
        .unwrap_or_else(|_| panic!("a JSON summary: {output:?}"))
}

#[cfg(unix)]
fn interrupted_then_resumed(signal: &str) {
    let dir = scratch(&format!("resume-{signal}"));
    let (listener, endpoint) = listen();
    // The first reply runs a slow command, during which the run is interrupted; the
    // resumed run redoes the turn and gets the second.
    let server = common::serve(
        listener,
        vec![tool_call("sleep 5", true), text_reply("resumed fine")],
    );
    let config = config(&dir);
    let work = dir.join("work");
    let child = exec(&[
        config.to_str().unwrap(),
        "--task",
        "t",
        "--json",
        "--work-dir",
        work.to_str().unwrap(),
        "--model",
        "openai:local-model",
        "--endpoint",
        &endpoint,
        "--api-key-env",
        "FUSERAFT_TEST_KEY",
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let cancelled = summary(&output);
    assert_eq!(cancelled["outcome"], "cancelled");
    let session = cancelled["session_id"].as_str().unwrap().to_string();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let hint = format!(
        "resume with: fuseraft exec {} --resume {session} --work-dir {} --model openai:local-model --endpoint {endpoint} --api-key-env FUSERAFT_TEST_KEY",
        config.display(),
        std::fs::canonicalize(&work).unwrap().display()
    );
    assert!(stderr.contains(&hint), "the hint is exact:\n{stderr}");
    assert!(!stderr.contains("k-123456789"), "no key in the output");
    let recorded = std::fs::read_to_string(
        work.join(".fuseraft/sessions")
            .join(format!("{session}.json")),
    )
    .unwrap_or_default();
    assert!(!recorded.contains("k-123456789"), "no key in the session");

    // No provider flags: the session's own.
    let output = exec(&[
        config.to_str().unwrap(),
        "--resume",
        &session,
        "--json",
        "--work-dir",
        work.to_str().unwrap(),
        "--max-turns",
        "1",
    ])
    .output()
    .unwrap();
    let heads = server.join().unwrap();
    let resumed = summary(&output);
    assert_eq!(resumed["outcome"], "max_turns", "{output:?}");
    assert_eq!(resumed["provider"]["endpoint"], endpoint.as_str());
    assert_eq!(resumed["provider"]["model"], "openai:local-model");
    assert_eq!(heads.len(), 2, "both calls reached the test server");
    assert!(
        heads[1].contains("Bearer k-123456789"),
        "the key of the recorded variable: {}",
        heads[1]
    );
    // The redone turn's reply reported no usage: unknown, not 0.
    assert_eq!(resumed["usage"]["complete"], false);
    assert_eq!(resumed["usage"]["known"], false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("tokens unknown"),
        "the summary says unknown:\n{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[cfg(unix)]
#[test]
fn a_model_run_interrupted_by_sigint_resumes_against_the_same_server() {
    interrupted_then_resumed("INT");
}

#[cfg(unix)]
#[test]
fn a_model_run_interrupted_by_sigterm_resumes_against_the_same_server() {
    interrupted_then_resumed("TERM");
}

#[test]
fn usage_reported_on_some_calls_only_is_partial() {
    let dir = scratch("partial");
    let (listener, endpoint) = listen();
    let server = common::serve(listener, vec![tool_call("true", true), text_reply("done")]);
    let config = config(&dir);
    let work = dir.join("work");
    let events = dir.join("events.jsonl");
    let output = exec(&[
        config.to_str().unwrap(),
        "--task",
        "t",
        "--json",
        "--ephemeral",
        "--max-turns",
        "1",
        "--events",
        events.to_str().unwrap(),
        "--work-dir",
        work.to_str().unwrap(),
        "--model",
        "openai:local-model",
        "--endpoint",
        &endpoint,
    ])
    .output()
    .unwrap();
    server.join().unwrap();
    let result = summary(&output);
    assert_eq!(result["outcome"], "max_turns", "{output:?}");
    assert_eq!(
        result["usage"],
        serde_json::json!({"input_tokens": 1200, "output_tokens": 30, "complete": false, "known": true})
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("tokens in 1200+ (partial) / out 30+"),
        "{stderr}"
    );
    let events = std::fs::read_to_string(&events).unwrap();
    let turn_end = events
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|event| event["event_type"] == "turn_end")
        .expect("a turn_end event");
    assert_eq!(
        turn_end["payload"]["usage"]["complete"], false,
        "{turn_end}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[cfg(unix)]
#[test]
fn an_interrupted_ephemeral_run_prints_no_resume_hint() {
    let dir = scratch("ephemeral");
    let (listener, endpoint) = listen();
    let server = common::serve(listener, vec![tool_call("sleep 5", true)]);
    let config = config(&dir);
    let child = exec(&[
        config.to_str().unwrap(),
        "--task",
        "t",
        "--ephemeral",
        "--work-dir",
        dir.join("work").to_str().unwrap(),
        "--model",
        "openai:local-model",
        "--endpoint",
        &endpoint,
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    server.join().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cancelled (SIGINT)"), "{stderr}");
    assert!(!stderr.contains("--resume"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_priced_model_shows_its_cost_per_turn_and_in_the_summary() {
    let dir = scratch("cost");
    let (listener, _) = listen();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let message = serde_json::json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "FINISHED"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1000, "output_tokens": 200},
    });
    let server = common::serve(listener, vec![message.to_string()]);
    let config = config(&dir);
    let events = dir.join("events.jsonl");
    let output = exec(&[
        config.to_str().unwrap(),
        "--task",
        "t",
        "--json",
        "--ephemeral",
        "--max-turns",
        "1",
        "--events",
        events.to_str().unwrap(),
        "--work-dir",
        dir.join("work").to_str().unwrap(),
        "--model",
        "anthropic:claude-sonnet-4-5",
        "--endpoint",
        &endpoint,
        "--api-key-env",
        "FUSERAFT_TEST_KEY",
    ])
    .output()
    .unwrap();
    server.join().unwrap();
    let result = summary(&output);
    // $3 / $15 per million tokens: 1000 in, 200 out.
    let usd = result["cost"]["usd"].as_f64().expect("a cost");
    assert!((usd - 0.006).abs() < 1e-12, "{result}");
    assert_eq!(result["cost"]["complete"], true);
    assert!(result["cost"]["prices"].is_string());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cost $0.0060"), "{stderr}");
    let turn_end = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|event| event["event_type"] == "turn_end")
        .expect("a turn_end event");
    assert_eq!(turn_end["payload"]["cost"]["complete"], true, "{turn_end}");
    let _ = std::fs::remove_dir_all(dir);
}
