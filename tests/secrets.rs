//! The API key never lands anywhere a run writes: a real provider run against a loopback
//! OpenAI-compatible server (which checks the key arrives in the header), with a tool call
//! that dumps the environment, and then every file the run wrote (checkpoint, events,
//! change log, artifacts) and everything it printed is searched for the key.

use crate::common;

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

const KEY: &str = "sk-test-7f3a9c1e5b2d8f4a6c0e";

fn files_containing(root: &Path, needle: &str, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_containing(&path, needle, found);
        } else if std::fs::read(&path)
            .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(needle))
        {
            found.push(path.display().to_string());
        }
    }
}

#[test]
fn the_api_key_is_sent_to_the_model_and_written_nowhere() {
    let dir = std::env::temp_dir().join(format!("fuseraft-secrets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "Orchestration:\n  Name: Secret\n  Agents:\n    - Name: Worker\n      Instructions: Work.\n      Plugins: [Shell]\n      Model: {{ Provider: openai, ModelId: local-model, Endpoint: \"http://127.0.0.1:{port}/v1\", ApiKeyEnvVar: FUSERAFT_TEST_API_KEY }}\n  Selection:\n    Type: keyword\n    Routes:\n      - {{ Keyword: FINISHED, Agent: Worker, SourceAgents: [Worker] }}\n"
        ),
    )
    .unwrap();
    let tool_call = serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "shell_run", "arguments": "{\"command\": \"env | sort\"}"}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    });
    let final_reply = serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Checked the environment.\nFINISHED"}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
    });
    let server = common::serve(
        listener,
        vec![tool_call.to_string(), final_reply.to_string()],
    );
    let work = dir.join("work");
    let events = dir.join("events.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            config.to_str().unwrap(),
            "--task",
            "Look around.",
            "--json",
        ])
        .args([
            "--work-dir",
            work.to_str().unwrap(),
            "--events",
            events.to_str().unwrap(),
        ])
        .env("FUSERAFT_TEST_API_KEY", KEY)
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("fuseraft runs");
    let headers = server.join().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("\"outcome\":\"completed\""), "{stdout}");
    assert_eq!(
        headers.len(),
        2,
        "both model calls reached the loopback server"
    );
    assert!(
        headers
            .iter()
            .all(|head| head.contains(&format!("Bearer {KEY}"))),
        "the key is sent in the Authorization header"
    );

    let mut found = Vec::new();
    files_containing(&dir, KEY, &mut found);
    assert!(found.is_empty(), "the API key was written to {found:?}");
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "the API key was printed"
    );
    // The run really wrote what we searched: a checkpoint, events and the shell's output.
    let sessions: Vec<_> = std::fs::read_dir(work.join(".fuseraft/sessions"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        sessions.iter().any(|name| name.ends_with(".json"))
            && sessions
                .iter()
                .any(|name| name.ends_with(".messages.jsonl")),
        "a session state and its message log were written: {sessions:?}"
    );
    assert!(std::fs::read_to_string(&events)
        .unwrap()
        .contains("session_end"));
    let changes = std::fs::read_to_string(work.join(".fuseraft/state/changes.json")).unwrap();
    assert!(
        changes.contains("env | sort") && changes.contains("PATH="),
        "the environment dump was recorded"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A config that names `OPENAI_API_KEY` as its `ApiKeyEnvVar` and aims it at `endpoint`.
fn aimed_config(dir: &Path, endpoint: &str) -> std::path::PathBuf {
    let config = dir.join("aimed.yaml");
    std::fs::write(
        &config,
        format!(
            "Orchestration:\n  Name: Aimed\n  Agents:\n    - Name: Worker\n      Instructions: Work.\n      Model: {{ Provider: openai, ModelId: gpt-4o, Endpoint: \"{endpoint}\", ApiKeyEnvVar: OPENAI_API_KEY }}\n  Selection:\n    Type: keyword\n    Routes:\n      - {{ Keyword: FINISHED, Agent: Worker, SourceAgents: [Worker] }}\n"
        ),
    )
    .unwrap();
    config
}

fn exec_aimed(config: &Path, work: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["exec", config.to_str().unwrap(), "--task", "t", "--json"])
        .args(["--work-dir", work.to_str().unwrap()])
        .args(extra)
        .env("OPENAI_API_KEY", KEY)
        .output()
        .expect("fuseraft runs")
}

#[test]
fn a_config_cannot_aim_a_well_known_key_at_another_host() {
    let dir = std::env::temp_dir().join(format!("fuseraft-aimed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    let config = aimed_config(&dir, &endpoint);
    let work = dir.join("work");

    // Refused before any call, with what, why and how to allow it; the key is not printed.
    let refused = exec_aimed(&config, &work, &[]);
    let stderr = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    for part in [
        &format!("agent `Worker`: refusing to send OPENAI_API_KEY to {endpoint}"),
        "goes only to https://api.openai.com",
        &format!("`--endpoint {endpoint}`"),
        "`--api-key-env OPENAI_API_KEY`",
    ] {
        assert!(stderr.contains(part), "{part}: {stderr}");
    }
    assert!(!stderr.contains(KEY) && !String::from_utf8_lossy(&refused.stdout).contains(KEY));
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "no request was made");
    listener.set_nonblocking(false).unwrap();

    // The command line allows it: `--api-key-env`, then `--endpoint`.
    let reply = serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "FINISHED"}}]
    })
    .to_string();
    let server = common::serve(listener, vec![reply.clone(), reply]);
    let by_variable = exec_aimed(&config, &work, &["--api-key-env", "OPENAI_API_KEY"]);
    assert_eq!(
        by_variable.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&by_variable.stderr)
    );
    let by_endpoint = exec_aimed(&config, &work, &["--endpoint", &endpoint]);
    assert_eq!(
        by_endpoint.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&by_endpoint.stderr)
    );
    let heads = server.join().unwrap();
    assert_eq!(heads.len(), 2);
    assert!(heads
        .iter()
        .all(|head| head.contains(&format!("Bearer {KEY}"))));
    let _ = std::fs::remove_dir_all(dir);
}

/// `--vscode` (upstream's extension injects its key as `FUSERAFT_API_KEY`): that key stands
/// in for an unset `OPENAI_API_KEY` and obeys the same rule, so a config still cannot aim it
/// at another host, and the command line's `--endpoint` can.
#[test]
fn the_vscode_key_stands_in_for_the_providers_and_goes_only_where_it_may() {
    let dir = std::env::temp_dir().join(format!("fuseraft-vscode-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    let config = aimed_config(&dir, &endpoint);
    let work = dir.join("work");
    let exec = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fuseraft"))
            .args(["exec", config.to_str().unwrap(), "--task", "t", "--json"])
            .args(["--work-dir", work.to_str().unwrap()])
            .args(extra)
            .env_remove("OPENAI_API_KEY")
            .env("FUSERAFT_API_KEY", KEY)
            .output()
            .expect("fuseraft runs")
    };
    let aimed = exec(&["--vscode"]);
    let stderr = String::from_utf8_lossy(&aimed.stderr).to_string();
    assert_eq!(aimed.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("refusing to send OPENAI_API_KEY"),
        "{stderr}"
    );
    let unset = exec(&["--endpoint", &endpoint]);
    let stderr = String::from_utf8_lossy(&unset.stderr).to_string();
    assert!(stderr.contains("OPENAI_API_KEY is not set"), "{stderr}");

    let reply = serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "FINISHED"}}]
    })
    .to_string();
    let server = common::serve(listener, vec![reply]);
    let allowed = exec(&["--vscode", "--endpoint", &endpoint]);
    let stderr = String::from_utf8_lossy(&allowed.stderr).to_string();
    assert_eq!(allowed.status.code(), Some(0), "{stderr}");
    let heads = server.join().unwrap();
    assert_eq!(heads.len(), 1);
    assert!(heads[0].contains(&format!("Bearer {KEY}")));
    assert!(!stderr.contains(KEY) && !String::from_utf8_lossy(&allowed.stdout).contains(KEY));
    let _ = std::fs::remove_dir_all(dir);
}
