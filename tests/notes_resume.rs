//! The session's notes (scratchpad, session context, chatroom) are kept with the session: a
//! run stopped after its first turn and resumed with `--resume` reads back, in its second
//! turn, what the first turn noted, through the real binary, session files and replay.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-notes-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fuseraft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("the fuseraft binary runs")
}

fn exec(work: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "exec",
        "fixtures/resume/notes/config.yaml",
        "--replay",
        "fixtures/resume/notes/replay.yaml",
        "--work-dir",
        work.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    let output = fuseraft(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    serde_json::from_slice(&output.stdout).expect("a JSON summary")
}

#[test]
fn notes_survive_a_resume() {
    let work = scratch("resume");
    let first = exec(&work, &["--task", "Keep notes.", "--max-turns", "1"]);
    assert_eq!(first["outcome"], "max_turns", "{first}");
    let session = first["session_id"].as_str().unwrap().to_string();

    let resumed = exec(&work, &["--resume", &session]);
    assert_eq!(resumed["outcome"], "completed", "{resumed}");

    let shown = fuseraft(&[
        "sessions",
        "show",
        &session,
        "--work-dir",
        work.to_str().unwrap(),
    ]);
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let checkpoint: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let notes = &checkpoint["Machine"]["Notes"];
    assert_eq!(notes["SessionContext"]["Text"], "- step 1 done", "{notes}");
    assert_eq!(
        notes["Scratchpads"]["Keeper"][0]["Value"], "three steps",
        "{notes}"
    );
    assert_eq!(notes["Global"][0]["Key"], "owner", "{notes}");

    // The second turn (after the resume) read back what the first one wrote.
    let messages = checkpoint["Messages"].as_array().unwrap();
    let second = messages
        .iter()
        .rfind(|message| message["Role"] == "assistant")
        .expect("a reply");
    let results: Vec<&str> = second["ToolCalls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| {
            assert_eq!(call["Succeeded"], true, "{call}");
            call["Result"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        results,
        [
            "[plan]  tags: release  turn: 0\nthree steps",
            "[owner]  turn: 0\nteam-a",
            "[Session context, written by Keeper in turn 0]\n\n- step 1 done",
            "=== Chatroom (last 1 message(s)) ===\n\n[turn 0] Keeper → All\nstep 1 done",
        ]
    );
    let _ = std::fs::remove_dir_all(work);
}
