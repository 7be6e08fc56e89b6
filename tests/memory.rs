//! Memory across sessions (`EnableMemory`, upstream's `Memory: { Provider: local }`): what an
//! agent remembers in one session, through a real provider run against a loopback server, is
//! in its instructions and found by `memory_search` in the next session of the same agent
//! and project; a kill right after the write loses nothing; `check` calls neither key inert;
//! the project's layers (`MEMORY.md`, today's daily notes) join the prompt;
//! the `webhook` provider loads a block before a turn and saves the turn after, sending a
//! header variable only when the user allowed it.

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value as Json};

fn config(dir: &Path) -> PathBuf {
    let path = dir.join("config.yaml");
    std::fs::write(
        &path,
        "Orchestration:\n  Name: Remembering\n  Agents:\n    - Name: Ops\n      Instructions: Keep the project's facts.\n      EnableMemory: true\n      Plugins: [Shell]\n      Model: { Provider: openai, ModelId: gpt-4o-mini }\n  Selection:\n    Type: keyword\n    Routes:\n      - { Keyword: FINISHED, Agent: Ops, SourceAgents: [Ops] }\n",
    )
    .unwrap();
    path
}

fn tool_call(name: &str, args: Json) -> String {
    json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}}],
    })
    .to_string()
}

fn finished() -> String {
    json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Done.\nFINISHED"}}]})
        .to_string()
}

/// A session of the config in `work` against a loopback server answering `replies`: its
/// `--json` summary and the requests the server saw.
fn session(dir: &Path, replies: Vec<String>) -> (Json, Vec<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/v1", listener.local_addr().unwrap());
    let server = common::serve(listener, replies);
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            config(dir).to_str().unwrap(),
            "--task",
            "Check the staging database.",
        ])
        .args([
            "--work-dir",
            dir.join("work").to_str().unwrap(),
            "--endpoint",
            &endpoint,
            "--json",
        ])
        .output()
        .unwrap();
    let requests = server.join().unwrap();
    let summary = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    (summary, requests)
}

#[test]
fn a_memory_written_in_one_session_is_found_in_the_next() {
    let dir = std::env::temp_dir().join(format!("fuseraft-memory-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let checked = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["check", config(&dir).to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
    assert!(!String::from_utf8_lossy(&checked.stdout).contains("FR007"));

    let remember = tool_call(
        "memory_append",
        json!({"text": "The staging database is orders-stage.", "tags": "db"}),
    );
    let (first, requests) = session(&dir, vec![remember, finished()]);
    assert_eq!(first["outcome"], "completed", "{first}");
    assert!(requests[0].contains("memory_append"), "the tool is offered");
    assert!(
        !requests[0].contains("## Your memories"),
        "nothing remembered yet"
    );

    // The memory is in today's daily note too; the people's MEMORY.md joins it.
    let (today, _) = fuseraft_vm::memory::today_and_yesterday();
    let note = std::fs::read_to_string(
        dir.join("work/.fuseraft/memory/daily")
            .join(format!("{today}.md")),
    )
    .unwrap();
    assert!(
        note.contains("Ops: The staging database is orders-stage."),
        "{note}"
    );
    std::fs::write(
        dir.join("work/.fuseraft/memory/MEMORY.md"),
        "Deploys happen on Tuesdays.\n",
    )
    .unwrap();

    let search = tool_call("memory_search", json!({"query": "which staging database"}));
    let (second, requests) = session(&dir, vec![search, finished()]);
    assert!(
        requests[0].contains("## Project memory")
            && requests[0].contains("### MEMORY.md\\nDeploys happen on Tuesdays.")
            && requests[0].contains(&format!("### Notes of {today}")),
        "the project's layers are in the prompt: {}",
        requests[0]
    );
    assert_eq!(second["outcome"], "completed", "{second}");
    assert!(
        requests[0].contains("## Your memories")
            && requests[0].contains("[1] The staging database is orders-stage."),
        "the next session's instructions carry it: {}",
        requests[0]
    );
    // The search's result went back to the model with the second request.
    assert!(
        requests[1].contains("[1] The staging database is orders-stage."),
        "{}",
        requests[1]
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_kill_right_after_the_write_loses_nothing() {
    let dir = std::env::temp_dir().join(format!("fuseraft-memory-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/v1", listener.local_addr().unwrap());
    let both = json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "memory_append", "arguments": "{\"text\": \"Kill-proof fact.\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "shell_run", "arguments": "{\"command\": \"sleep 30\"}"}}
            ]}}],
    });
    let server = common::serve(listener, vec![both.to_string()]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            config(&dir).to_str().unwrap(),
            "--task",
            "Remember.",
        ])
        .args([
            "--work-dir",
            dir.join("work").to_str().unwrap(),
            "--endpoint",
            &endpoint,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let root = dir.join("work");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while fuseraft_vm::memory::all(&root, "Ops")
        .unwrap_or_default()
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the memory was never written"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill(); // SIGKILL, the shell command still running
    let _ = child.wait();
    let _ = server.join();
    let kept = fuseraft_vm::memory::all(&root, "Ops").unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].text, "Kill-proof fact.");
    let _ = std::fs::remove_dir_all(dir);
}

/// The webhook provider: a config whose `Memory` names a loopback webhook, run against a
/// loopback model; the run's `--json` summary, its stderr, and what each server saw.
fn webhook_session(dir: &Path, flags: &[&str]) -> (std::process::Output, Vec<String>, Vec<String>) {
    let hooks = TcpListener::bind("127.0.0.1:0").unwrap();
    let hook_url = format!("http://{}", hooks.local_addr().unwrap());
    let path = dir.join("webhook.yaml");
    std::fs::write(
        &path,
        format!("Orchestration:\n  Name: Remote\n  Agents:\n    - Name: Ops\n      Instructions: Keep the project's facts.\n      Model: {{ Provider: openai, ModelId: gpt-4o-mini }}\n  Memory:\n    Provider: webhook\n    Webhook:\n      LoadUrl: {hook_url}/load\n      SaveUrl: {hook_url}/save\n      Headers: {{ Authorization: \"Bearer ${{MEMORY_TOKEN}}\" }}\n      SaveEveryNTurns: 1\n  Selection:\n    Type: keyword\n    Routes:\n      - {{ Keyword: FINISHED, Agent: Ops, SourceAgents: [Ops] }}\n"),
    )
    .unwrap();
    let models = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/v1", models.local_addr().unwrap());
    let model_server = common::serve(models, vec![finished()]);
    let hook_server = common::serve(
        hooks,
        vec![
            json!({"block": "The staging database is pg-2."}).to_string(),
            "{}".to_string(),
        ],
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command
        .args(["exec", path.to_str().unwrap(), "--task", "Check staging."])
        .args(["--work-dir", dir.join("work").to_str().unwrap()])
        .args(["--endpoint", &endpoint, "--json"])
        .env("MEMORY_TOKEN", "s3cret-token");
    command.args(flags);
    let output = command.output().unwrap();
    if !output.status.success() {
        // Nothing was asked of the servers: let their threads end.
        let _ = std::net::TcpStream::connect(models_addr(&endpoint));
        let _ = std::net::TcpStream::connect(hook_url.trim_start_matches("http://"));
        let _ = std::net::TcpStream::connect(hook_url.trim_start_matches("http://"));
    }
    (
        output,
        model_server.join().unwrap(),
        hook_server.join().unwrap(),
    )
}

fn models_addr(endpoint: &str) -> String {
    endpoint
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string()
}

#[test]
fn a_webhook_memory_is_loaded_before_a_turn_and_the_turn_saved_after() {
    let dir = std::env::temp_dir().join(format!("fuseraft-memory-hook-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let (output, model_requests, hook_requests) =
        webhook_session(&dir, &["--trust-mcp", "--mcp-env", "MEMORY_TOKEN"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(hook_requests.len(), 2, "{hook_requests:?}");
    let (load, save) = (&hook_requests[0], &hook_requests[1]);
    assert!(load.starts_with("POST /load"), "{load}");
    assert!(
        load.to_ascii_lowercase()
            .contains("authorization: bearer s3cret-token"),
        "{load}"
    );
    assert!(load.ends_with(r#"{"agent":"Ops"}"#), "{load}");
    assert!(
        model_requests[0].contains("## Memory\\nThe staging database is pg-2."),
        "the block reached the prompt: {}",
        model_requests[0]
    );
    assert!(save.starts_with("POST /save"), "{save}");
    let body: Json = serde_json::from_str(save.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["agent"], "Ops");
    let history = body["history"].as_array().unwrap();
    assert_eq!(history.last().unwrap()["content"], "Done.\nFINISHED");
    assert!(!stderr.contains("s3cret-token"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_webhook_header_naming_a_variable_the_user_did_not_allow_refuses_the_run() {
    let dir = std::env::temp_dir().join(format!("fuseraft-memory-refused-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let (output, model_requests, hook_requests) = webhook_session(&dir, &["--trust-mcp"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`${MEMORY_TOKEN}`") && stderr.contains("--mcp-env MEMORY_TOKEN"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret-token"), "{stderr}");
    assert!(
        model_requests
            .iter()
            .chain(&hook_requests)
            .all(|r| r.is_empty() || !r.contains("POST")),
        "nothing was sent: {model_requests:?} {hook_requests:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_webhook_the_user_did_not_trust_is_never_called() {
    let dir =
        std::env::temp_dir().join(format!("fuseraft-memory-untrusted-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work")).unwrap();
    // No terminal, no `--trust-mcp`, no user-level list: the config's URL is refused.
    let (output, model_requests, hook_requests) =
        webhook_session(&dir, &["--mcp-env", "MEMORY_TOKEN"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the memory webhook `http://127.0.0.1:") && stderr.contains("--trust-mcp"),
        "{stderr}"
    );
    assert!(
        model_requests
            .iter()
            .chain(&hook_requests)
            .all(|r| !r.contains("POST")),
        "nothing was sent: {model_requests:?} {hook_requests:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
