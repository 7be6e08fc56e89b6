//! `fuseraft exec` with a real provider: a missing key is refused before any call, a model
//! that fails ends the run with an error and a loadable session, and Ctrl-C cancels with a
//! resumable checkpoint.

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-provider-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn config(dir: &Path, endpoint: &str, extra: &str) -> PathBuf {
    let path = dir.join("config.yaml");
    std::fs::write(
        &path,
        format!(
            "Orchestration:\n  Name: Live\n  Agents:\n    - Name: Worker\n      Instructions: Work.\n      Plugins: [Shell]\n      Model: {{ Provider: openai, ModelId: local-model, Endpoint: \"{endpoint}\", ApiKeyEnvVar: FUSERAFT_TEST_KEY }}\n  Selection:\n    Type: keyword\n    Routes:\n      - {{ Keyword: FINISHED, Agent: Worker, SourceAgents: [Worker] }}\n{extra}"
        ),
    )
    .unwrap();
    path
}

fn session_file(work: &Path) -> serde_json::Value {
    let entry = std::fs::read_dir(work.join(".fuseraft/sessions"))
        .expect("a sessions folder")
        .flatten()
        .find(|entry| entry.file_name().to_string_lossy().ends_with(".json"))
        .expect("a session file");
    serde_json::from_str(&std::fs::read_to_string(entry.path()).unwrap())
        .expect("the session file is valid JSON")
}

#[test]
fn a_missing_key_is_refused_before_any_call() {
    let dir = scratch("nokey");
    let config = config(&dir, "http://127.0.0.1:9/v1", "");
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            config.to_str().unwrap(),
            "--task",
            "t",
            "--work-dir",
            dir.join("work").to_str().unwrap(),
        ])
        .env_remove("FUSERAFT_TEST_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("Worker") && err.contains("FUSERAFT_TEST_KEY"),
        "names the agent and the variable: {err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_failing_model_ends_the_run_with_a_loadable_session() {
    let dir = scratch("fail");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    let server = common::serve(
        listener,
        vec![r#"!400 {"error": {"message": "model `local-model` does not exist"}}"#.to_string()],
    );
    let config = config(&dir, &endpoint, "");
    let work = dir.join("work");
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            config.to_str().unwrap(),
            "--task",
            "t",
            "--json",
            "--work-dir",
            work.to_str().unwrap(),
        ])
        .env("FUSERAFT_TEST_KEY", "k-123456789")
        .output()
        .unwrap();
    server.join().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let summary: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim()).unwrap();
    assert_eq!(summary["outcome"], "error");
    assert!(
        summary["error_message"]
            .as_str()
            .unwrap()
            .contains("does not exist"),
        "{summary}"
    );
    let session = session_file(&work);
    assert_eq!(session["Machine"]["Outcome"], "error");
    assert_eq!(
        session["IsComplete"], false,
        "an errored session can be resumed"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[cfg(unix)]
#[test]
fn ctrl_c_cancels_and_keeps_a_resumable_checkpoint() {
    let dir = scratch("cancel");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    // The first reply runs a slow command; the run is interrupted during it.
    let slow = serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "shell_run", "arguments": "{\"command\": \"sleep 5\"}"}}]}}]
    });
    let server = common::serve(listener, vec![slow.to_string()]);
    let config = config(&dir, &endpoint, "");
    let work = dir.join("work");
    let child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            config.to_str().unwrap(),
            "--task",
            "t",
            "--json",
            "--work-dir",
            work.to_str().unwrap(),
        ])
        .env("FUSERAFT_TEST_KEY", "k-123456789")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let output = child.wait_with_output().unwrap();
    server.join().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let summary: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim()).unwrap();
    assert_eq!(summary["outcome"], "cancelled");
    let session = session_file(&work);
    assert_eq!(session["Cancelled"], true);
    assert_eq!(session["IsComplete"], false);
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--resume"),
        "says how to resume"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn usage_no_server_reported_is_unknown_everywhere_not_zero() {
    let dir = scratch("unknown-usage");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    // A whole chat completion without `usage`, as some local servers answer.
    let reply = serde_json::json!({
        "id": "c1", "object": "chat.completion", "created": 1, "model": "local-model",
        "choices": [{ "index": 0, "finish_reason": "stop",
            "message": { "role": "assistant", "content": "Done.\nFINISHED" } }],
    })
    .to_string();
    let server = common::serve(listener, vec![reply]);
    let config = config(&dir, &endpoint, "");
    let work = dir.join("work");
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            config.to_str().unwrap(),
            "--task",
            "t",
            "--json",
            "--work-dir",
        ])
        .arg(&work)
        .env("FUSERAFT_TEST_KEY", "k-123456789")
        .output()
        .unwrap();
    server.join().unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim()).unwrap();
    assert_eq!(summary["outcome"], "completed", "{summary}");
    assert!(summary["tokens"].is_null(), "{summary}");
    assert_eq!(summary["usage"]["known"], false, "{summary}");
    let transcript = std::fs::read_to_string(summary["transcript_path"].as_str().unwrap()).unwrap();
    assert!(
        transcript.contains("tokens unknown (the server reported no usage)")
            && !transcript.contains("tokens in 0 / out 0"),
        "{transcript}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
