//! Memory across sessions (`EnableMemory`, upstream's `Memory: { Provider: local }`): what an
//! agent remembers in one session, through a real provider run against a loopback server, is
//! in its instructions and found by `memory_search` in the next session of the same agent
//! and project; a kill right after the write loses nothing; `check` calls neither key inert.

mod common;

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

    let search = tool_call("memory_search", json!({"query": "which staging database"}));
    let (second, requests) = session(&dir, vec![search, finished()]);
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
