//! The events file reads as upstream fuseraft-cli's `events.jsonl` too: after each event
//! upstream names otherwise comes a line under upstream's name and payload keys
//! (`keyword_detected {keyword}`, `hitl_escalation`, `hitl_rejected`, `parallel_start`,
//! `parallel_merge`, `tool_call {tool_name, args, ok}`), and fuseraft's own lines are
//! unchanged, in the same order.

use std::path::Path;
use std::process::Command;

use serde_json::Value as Json;

/// Runs the bundled case `fixtures/run/<case>` with `--events` and returns the lines.
fn events_of(case: &str, approve: &str) -> Vec<Json> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/run")
        .join(case);
    let dir = std::env::temp_dir().join(format!("fuseraft-upstream-{}-{case}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let events = dir.join("events.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["exec", root.join("config.yaml").to_str().unwrap()])
        .args(["--task", "t", "--ephemeral", "--approve", approve])
        .args(["--replay", root.join("replay.yaml").to_str().unwrap()])
        .args(["--work-dir", dir.join("work").to_str().unwrap()])
        .args(["--events", events.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        output.status.code().is_some_and(|code| code <= 1),
        "{case}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Json> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // `log events` shows fuseraft's own lines, each once, and no repeated one.
    let logged = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["log", "events", events.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(logged.status.code(), Some(0), "{case}");
    let shown = String::from_utf8_lossy(&logged.stdout);
    let own = lines
        .iter()
        .filter(|line| !fuseraft::events::upstream::NAMES.contains(&kind(line)))
        .count();
    assert_eq!(shown.lines().count(), own, "{case}: {shown}");
    let _ = std::fs::remove_dir_all(dir);
    lines
}

fn kind(line: &Json) -> &str {
    line["event_type"].as_str().unwrap_or_default()
}

/// Each upstream line, with the fuseraft kind of the line it follows (its source).
fn upstream_after(lines: &[Json], name: &str) -> Vec<(String, Json)> {
    lines
        .windows(2)
        .filter(|pair| kind(&pair[1]) == name)
        .map(|pair| (kind(&pair[0]).to_string(), pair[1]["payload"].clone()))
        .collect()
}

#[test]
fn upstream_consumers_find_their_events_after_fuseraft_own() {
    let keyword = events_of("keyword", "all");
    let detected: Vec<&Json> = keyword
        .iter()
        .filter(|line| kind(line) == "signal_detected")
        .collect();
    let aliases = upstream_after(&keyword, "keyword_detected");
    assert_eq!(aliases.len(), detected.len());
    for ((source, payload), signal) in aliases.iter().zip(&detected) {
        assert_eq!(source, "signal_detected");
        assert_eq!(payload["keyword"], signal["payload"]["signal"]);
    }
    assert_eq!(kind(&keyword[0]), "session_start");
    assert_eq!(kind(keyword.last().unwrap()), "session_end");

    let refused = events_of("escalate-to-human-refused", "none");
    let escalation = upstream_after(&refused, "hitl_escalation");
    assert_eq!(escalation.len(), 1, "{refused:?}");
    assert_eq!(escalation[0].0, "hitl_requested");
    assert!(escalation[0].1["reason"]
        .as_str()
        .is_some_and(|reason| reason.starts_with("escalation:")));
    assert_eq!(
        upstream_after(&refused, "hitl_rejected")[0].0,
        "hitl_answered"
    );

    let fork = events_of("fork-merge", "all");
    assert_eq!(upstream_after(&fork, "parallel_start")[0].0, "fork_start");
    assert_eq!(upstream_after(&fork, "parallel_merge")[0].0, "fork_join");

    let stuck = events_of("stuck", "all");
    let calls = upstream_after(&stuck, "tool_call");
    assert!(!calls.is_empty(), "{stuck:?}");
    assert_eq!(calls[0].0, "turn_end");
    assert_eq!(calls[0].1["tool_name"], "shell_run");
    assert_eq!(calls[0].1["args"]["command"], "echo compiled");
    assert_eq!(calls[0].1["ok"], true);
}
