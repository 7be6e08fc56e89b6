//! The audit chain (`fuseraft audit verify|show`): a run's decisions (its policy, tool calls
//! refused and allowed, an approval asked and answered) are records that verify untouched
//! and go on across a resume; a record edited, dropped or moved in the middle makes
//! `audit verify` fail naming that record.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(case: &str, file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/run")
        .join(case)
        .join(file)
        .display()
        .to_string()
}

fn fuseraft(work: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .args(["--work-dir", work.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// Runs `case` with `extra` in `work` and returns its session id.
fn run(work: &Path, case: &str, extra: &[&str]) -> String {
    let (config, replay) = (fixture(case, "config.yaml"), fixture(case, "replay.yaml"));
    let mut args = vec![
        "exec", &config, "--task", "t", "--replay", &replay, "--json",
    ];
    args.extend_from_slice(extra);
    let output = fuseraft(work, &args);
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    summary["session_id"].as_str().unwrap().to_string()
}

fn audit_log(work: &Path, id: &str) -> PathBuf {
    work.join(format!(".fuseraft/sessions/{id}.audit.jsonl"))
}

fn verify(work: &Path, id: &str) -> (Option<i32>, String) {
    let output = fuseraft(work, &["audit", "verify", id]);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

#[test]
fn decisions_form_a_chain_that_names_the_record_broken_in_the_middle() {
    let work = std::env::temp_dir().join(format!("fuseraft-audit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();

    let denied = run(&work, "http-denials", &[]);
    let shown = fuseraft(&work, &["audit", "show", &denied]);
    let text = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(shown.status.success(), "{text}");
    assert!(
        text.lines()
            .next()
            .is_some_and(|line| line.contains("  run_started  approve: ask")),
        "{text}"
    );
    assert!(
        text.contains(
            "Fetcher: tool_refused  tool: http_get · reason: [DENIED: http] host `evil.example`"
        ),
        "{text}"
    );
    assert!(
        text.contains("Fetcher: tool_allowed  tool: http_head"),
        "{text}"
    );
    assert_eq!(verify(&work, &denied).0, Some(0));

    // Edited in the middle: the third record says another host.
    let path = audit_log(&work, &denied);
    let original = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    assert!(lines.len() > 4);
    let mut edited: Vec<String> = lines.iter().map(|line| line.to_string()).collect();
    edited[2] = edited[2].replacen("127.0.0.1", "127.0.0.2", 1);
    assert_ne!(edited[2], lines[2]);
    std::fs::write(&path, edited.join("\n") + "\n").unwrap();
    let (code, message) = verify(&work, &denied);
    assert_eq!(code, Some(1), "{message}");
    assert!(
        message.contains("breaks at record 3 (line 3): it fails authentication"),
        "{message}"
    );
    // Dropped from the middle: the record after it no longer follows.
    let mut dropped: Vec<&str> = lines.clone();
    dropped.remove(2);
    std::fs::write(&path, dropped.join("\n") + "\n").unwrap();
    let (code, message) = verify(&work, &denied);
    assert_eq!(code, Some(1), "{message}");
    assert!(
        message.contains("breaks at record 3 (line 3): it does not follow"),
        "{message}"
    );
    std::fs::write(&path, &original).unwrap();
    assert_eq!(verify(&work, &denied).0, Some(0));

    // An escalation asked and refused (`--approve none`), then the session resumed: the
    // chain goes on, every record in place.
    let refused = run(&work, "escalate-to-human-refused", &["--approve", "none"]);
    let resumed = fuseraft(
        &work,
        &[
            "exec",
            &fixture("escalate-to-human-refused", "config.yaml"),
            "--resume",
            &refused,
            "--replay",
            &fixture("escalate-to-human-refused", "replay.yaml"),
            "--approve",
            "none",
        ],
    );
    assert!(resumed.status.code().is_some());
    let shown = fuseraft(&work, &["audit", "show", &refused]);
    let text = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(shown.status.success(), "{text}");
    assert!(text.contains("approval_asked  from: Developer · to: Tester · signal: escalation: RequireWriteFile failed"), "{text}");
    assert!(
        text.contains("approval_answered  answer: refused"),
        "{text}"
    );
    assert_eq!(text.matches("run_started").count(), 2, "{text}");
    assert!(text.contains("approve: none"), "{text}");
    let _ = std::fs::remove_dir_all(work);
}
