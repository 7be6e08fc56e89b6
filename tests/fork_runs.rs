//! A fork's branches run at once: `fuseraft exec` against a loopback OpenAI-compatible
//! server that takes its time over every reply. Each branch is a full turn (a `write_file`
//! call, then a final reply), and four branches take about as long as one. The terminal
//! shows each branch under its own heading.

use crate::common;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the server takes over each reply.
const DELAY: Duration = Duration::from_millis(400);

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-fork-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Requests in flight now and at most.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// The reply to a request: the planner plans; a branch agent (named in its instructions as
/// `agent:NAME`) first writes `NAME.txt`, then, once it has the tool's result, answers.
fn reply_to(body: &str) -> String {
    let agent = body
        .split("agent:")
        .nth(1)
        .map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect::<String>()
        })
        .unwrap_or_default();
    let text = |text: &str| {
        serde_json::json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": text}}]})
        .to_string()
    };
    if agent == "Planner" {
        return text("Split the work.\nPLANNED");
    }
    if body.contains("\"role\":\"tool\"") {
        return text(&format!("{agent} wrote its part."));
    }
    let arguments =
        serde_json::json!({"path": format!("{agent}.txt"), "content": format!("by {agent}\n")});
    serde_json::json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{agent}"),
            "type": "function", "function": {"name": "write_file", "arguments": arguments.to_string()}}]}}]})
    .to_string()
}

/// Serves every connection on its own thread, each reply after [`DELAY`].
fn serve(listener: TcpListener, in_flight: Arc<InFlight>) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let in_flight = in_flight.clone();
            std::thread::spawn(move || {
                let body = String::from_utf8_lossy(&common::read_request(&stream).1).into_owned();
                let now = in_flight.now.fetch_add(1, Ordering::SeqCst) + 1;
                in_flight.most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(DELAY);
                let reply = reply_to(&body);
                in_flight.now.fetch_sub(1, Ordering::SeqCst);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            });
        }
    });
}

/// A planner, then a fork over `branches` agents merged by union, then the end.
fn config(dir: &Path, endpoint: &str, branches: &[&str]) -> PathBuf {
    let model = format!(
        "{{ Provider: openai, ModelId: local-model, Endpoint: \"{endpoint}\", ApiKeyEnvVar: FUSERAFT_TEST_KEY }}"
    );
    let mut text = format!(
        "Orchestration:\n  Name: Parallel\n  Agents:\n    - {{ Name: Planner, Instructions: \"agent:Planner\", Model: {model} }}\n"
    );
    for agent in branches {
        text.push_str(&format!(
            "    - {{ Name: {agent}, Instructions: \"agent:{agent}\", Plugins: [FileSystem], Model: {model} }}\n"
        ));
    }
    text.push_str(&format!(
        "  Selection:\n    Type: statemachine\n    StateMachine:\n      Initial: Plan\n      States:\n        Plan:\n          Agent: Planner\n          Transitions:\n            - {{ To: Done, Signal: PLANNED, Parallel: true, Targets: [{}], Merge: {{ Strategy: union }} }}\n",
        branches
            .iter()
            .map(|agent| format!("{agent}Work"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for agent in branches {
        text.push_str(&format!(
            "        {agent}Work:\n          Agent: {agent}\n          Transitions: [ {{ To: Done }} ]\n"
        ));
    }
    text.push_str("        Done:\n          Terminal: true\n  Termination: { Type: maxiterations, MaxIterations: 5 }\n");
    let path = dir.join("config.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs the fan-out over `branches`; returns how long it took and the most requests the
/// server had in flight at once.
fn fan_out(name: &str, branches: &[&str]) -> (Duration, usize) {
    let dir = scratch(name);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    let in_flight = Arc::new(InFlight::default());
    serve(listener, in_flight.clone());
    let config = config(&dir, &endpoint, branches);
    let work = dir.join("work");
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("exec")
        .arg(&config)
        .args(["--task", "build", "--json", "--work-dir"])
        .arg(&work)
        .env("FUSERAFT_TEST_KEY", "k-123456789")
        .output()
        .unwrap();
    let took = started.elapsed();
    let summary: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim())
            .unwrap_or_else(|_| panic!("a JSON summary: {output:?}"));
    assert_eq!(summary["outcome"], "completed", "{output:?}");
    for agent in branches {
        assert_eq!(
            std::fs::read_to_string(work.join(format!("{agent}.txt"))).unwrap_or_default(),
            format!("by {agent}\n"),
            "the branch of {agent} wrote its file through the tools"
        );
    }
    let output = summary["output"].as_str().unwrap_or_default().to_string();
    if branches.len() > 1 {
        for agent in branches {
            assert!(
                output.contains(&format!("{agent} wrote its part.")),
                "the merge has the reply of {agent}: {output}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    (took, in_flight.most.load(Ordering::SeqCst))
}

#[test]
fn four_branches_take_about_one_branchs_time() {
    let (one, _) = fan_out("one", &["Alpha"]);
    let (four, most) = fan_out("four", &["Alpha", "Beta", "Gamma", "Delta"]);
    assert_eq!(most, 4, "the four branches asked the server at once");
    // One branch is two replies after the planner's; four in a row would be eight.
    assert!(
        four < one * 2,
        "four branches took {four:?}, one took {one:?}: they did not run at once"
    );
}

#[test]
fn the_terminal_shows_each_branch_under_its_own_heading() {
    let dir = scratch("terminal");
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/run/fork-tools");
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("exec")
        .arg(case.join("config.yaml"))
        .arg("--replay")
        .arg(case.join("replay.yaml"))
        .args(["--task", "build", "--work-dir"])
        .arg(dir.join("work"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let section = |heading: &str| -> String {
        let start = stdout
            .find(heading)
            .unwrap_or_else(|| panic!("no `{heading}` in:\n{stdout}"));
        let rest = &stdout[start + heading.len()..];
        // Up to the next heading or the fork's join.
        let end = [rest.find("──"), rest.find("  → ")]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(rest.len());
        rest[..end].to_string()
    };
    let backend = section("── turn 2 · BackendDev · Backend ──");
    assert!(
        backend.contains(
            "⚙ write_file api/server.py (ok)\n  ⚙ read_file api/server.py (ok)\n  ⚙ write_file api/test_server.py (ok)\nBackend: api/server.py"
        ),
        "the backend branch's tools and reply: {backend}"
    );
    assert!(!backend.contains("Frontend:"), "{backend}");
    let frontend = section("── turn 2 · FrontendDev · Frontend ──");
    assert!(
        frontend.contains("⊘ write_file refused: [DENIED")
            && frontend.contains("(failed)\nFrontend: web/index.html"),
        "the frontend branch's refused write and reply: {frontend}"
    );
    assert!(!frontend.contains("Backend:"), "{frontend}");
    let _ = std::fs::remove_dir_all(dir);
}
