//! `fuseraft exec` against a loopback OpenAI-compatible server whose model the bundled price
//! table does not know: the config's `Pricing` prices its calls in the summary, `--json` and
//! the events, and `MaxTotalCost` stops the run when they add up past it.

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-pcost-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A one-agent rotation on the server at `endpoint`, priced at $2 / $10 per million tokens.
fn config(dir: &Path, endpoint: &str, budget: Option<&str>) -> PathBuf {
    let path = dir.join("config.yaml");
    let budget = budget.map_or(String::new(), |usd| format!("  MaxTotalCost: {usd}\n"));
    std::fs::write(
        &path,
        format!(
            "Orchestration:\n  Name: Priced\n{budget}  Agents:\n    - Name: Worker\n      Instructions: Work.\n      Model:\n        Provider: openai-compatible\n        ModelId: local-model\n        Endpoint: \"{endpoint}\"\n        Pricing: {{ InputPerMillion: 2, OutputPerMillion: 10 }}\n  Selection: {{ Type: roundrobin }}\n  Termination: {{ Type: maxiterations, MaxIterations: 5 }}\n"
        ),
    )
    .unwrap();
    path
}

/// A reply of 1,000 input and 200 output tokens: $0.004 at the config's prices.
fn reply(text: &str) -> String {
    serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 200},
    })
    .to_string()
}

/// Runs the config with `--json` and the events file against a server answering `replies`
/// in order; when the run asks for fewer, the rest are never sent (the server is woken to
/// end). The output, the `--json` summary, the events and how many requests came.
fn run(
    dir: &Path,
    replies: Vec<String>,
    budget: Option<&str>,
    extra: &[&str],
) -> (Output, serde_json::Value, Vec<serde_json::Value>, usize) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = config(dir, &format!("http://127.0.0.1:{port}/v1"), budget);
    let expected = replies.len();
    let server = common::serve(listener, replies);
    let events = dir.join("events.jsonl");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            config.to_str().unwrap(),
            "--task",
            "t",
            "--json",
            "--ephemeral",
        ])
        .args(["--events", events.to_str().unwrap()])
        .args(["--work-dir", dir.join("work").to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    let mut seen = 0;
    while !server.is_finished() && seen < expected {
        // Requests the run never made: connect so the server stops waiting.
        let _ = std::net::TcpStream::connect(("127.0.0.1", port));
        seen += 1;
    }
    let heads = server.join().unwrap();
    let requests = heads.iter().filter(|head| head.starts_with("POST")).count();
    let summary = serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim())
        .unwrap_or_else(|_| panic!("a JSON summary: {output:?}"));
    let events = std::fs::read_to_string(&events)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (output, summary, events, requests)
}

#[test]
fn a_configured_price_shows_in_the_summary_json_and_events() {
    let dir = scratch("price");
    let replies = vec![reply("one"), reply("two")];
    let (output, summary, events, requests) = run(&dir, replies, None, &["--max-turns", "2"]);
    assert_eq!((output.status.code(), requests), (Some(0), 2), "{output:?}");
    // Two calls of 1,000 in at $2 and 200 out at $10 per million: $0.008.
    let usd = summary["cost"]["usd"].as_f64().expect("a cost");
    assert!((usd - 0.008).abs() < 1e-12, "{summary}");
    assert_eq!(summary["cost"]["complete"], true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cost $0.0080"), "{stderr}");
    assert!(
        stderr.contains("cost $0.0040"),
        "each turn shows its own: {stderr}"
    );
    let turn_costs: Vec<f64> = events
        .iter()
        .filter(|event| event["event_type"] == "turn_end")
        .map(|event| {
            event["payload"]["cost"]["usd"]
                .as_f64()
                .expect("a turn's cost")
        })
        .collect();
    assert_eq!(turn_costs.len(), 2, "{events:?}");
    assert!(turn_costs.iter().all(|usd| (usd - 0.004).abs() < 1e-12));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_cost_budget_stops_the_run_once_its_calls_cost_more() {
    let dir = scratch("budget");
    // $0.004 a call: the second call ($0.008) is over a budget of $0.005.
    let replies = vec![reply("one"), reply("two"), reply("three")];
    let (output, summary, events, requests) = run(&dir, replies, Some("0.005"), &[]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "over budget is a failed run: {output:?}"
    );
    assert_eq!(requests, 2, "the third reply is never asked for");
    assert_eq!(summary["outcome"], "budget", "{summary}");
    let reason = summary["error_message"].as_str().unwrap_or_default();
    assert!(
        reason.contains("over the cost budget of $0.005"),
        "{summary}"
    );
    let exceeded = events
        .iter()
        .find(|event| event["event_type"] == "budget_exceeded")
        .expect("a budget_exceeded event");
    assert_eq!(exceeded["payload"]["max_total_cost"], 0.005);
    // Every call was priced: no warning that the budget cannot see some.
    assert!(events.iter().all(|event| event["event_type"] != "warning"));
    let _ = std::fs::remove_dir_all(dir);
}
