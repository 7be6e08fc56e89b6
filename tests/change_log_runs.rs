//! The change log under real runs (issue 17): two `fuseraft exec` runs at once in one work
//! dir lose no entry, and at the end `changes.json` alone holds every record, in upstream's
//! shape.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use fuseraft_vm::changes::ChangeLog;
use serde_json::Value as Json;

const TURNS: usize = 25;
const CALLS: usize = 30;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "fuseraft-changes-run-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A one-agent workflow whose every turn writes `CALLS` files under `prefix/`.
fn workflow(dir: &Path, prefix: &str) -> (PathBuf, PathBuf) {
    let config = dir.join(format!("{prefix}.yaml"));
    std::fs::write(
        &config,
        "Orchestration:\n  Name: Writer\n  Agents:\n    - { Name: Writer, Instructions: Write., Plugins: [FileSystem] }\n  Selection: { Type: sequential }\n",
    )
    .unwrap();
    let calls: Vec<String> = (0..CALLS)
        .map(|call| {
            format!("        - {{ name: write_file, args: {{ path: \"{prefix}/f{call}.txt\", content: \"{call}\" }} }}")
        })
        .collect();
    let replay = dir.join(format!("{prefix}.replay.yaml"));
    std::fs::write(
        &replay,
        format!(
            "replies:\n  Writer:\n    - tool_calls:\n{}\n      text: \"Wrote.\"\n      times: {TURNS}\n",
            calls.join("\n")
        ),
    )
    .unwrap();
    (config, replay)
}

#[test]
fn two_runs_at_once_in_one_work_dir_lose_no_change_log_entry() {
    let dir = scratch("two");
    let work = dir.join("work");
    let runs: Vec<_> = ["a", "b"]
        .iter()
        .map(|prefix| {
            let (config, replay) = workflow(&dir, prefix);
            Command::new(env!("CARGO_BIN_EXE_fuseraft"))
                .arg("exec")
                .arg(&config)
                .arg("--replay")
                .arg(&replay)
                .arg("--work-dir")
                .arg(&work)
                .args([
                    "--task",
                    "Write.",
                    "--max-turns",
                    &TURNS.to_string(),
                    "--json",
                ])
                .env("NO_COLOR", "1")
                .env("FUSERAFT_SESSION_KEY", dir.join("key/session.key"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the fuseraft binary runs")
        })
        .collect();
    let mut sessions = Vec::new();
    for run in runs {
        let output = run.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert!(!stderr.contains("not recorded"), "{stderr}");
        let summary: Json = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(summary["turns"], TURNS as u64);
        sessions.push(summary["session_id"].as_str().unwrap().to_string());
    }
    let path = work.join(".fuseraft/state/changes.json");
    // Both runs compacted at their end: `changes.json` alone holds everything.
    let text = std::fs::read_to_string(&path).unwrap();
    let alone = ChangeLog::parse(&text).unwrap();
    assert_eq!(alone, ChangeLog::load(&path).unwrap());
    for (session, prefix) in sessions.iter().zip(["a", "b"]) {
        let entries: Vec<_> = alone
            .entries
            .iter()
            .filter(|entry| &entry.session_id == session)
            .collect();
        assert_eq!(entries.len(), TURNS, "{session}");
        for entry in entries {
            let expected: Vec<String> = (0..CALLS)
                .map(|call| format!("{prefix}/f{call}.txt"))
                .collect();
            assert_eq!(
                entry.files_written, expected,
                "{session} turn {}",
                entry.turn_index
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
