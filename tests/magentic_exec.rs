//! The magentic loop through the real binary: what `exec --json` reports for each way the
//! loop ends (exit code, outcome, `succeeded`, the final answer as the output), and the plan
//! review answered on a real terminal (a pseudo-terminal), refused without one, never
//! waited on.

#![cfg(unix)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-magentic-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `fuseraft exec --json` on the run fixture `case`, in `work`.
fn exec(case: &str, work: &Path, extra: &[&str]) -> Command {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/run")
        .join(case);
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command
        .args(["exec", fixture.join("config.yaml").to_str().unwrap()])
        .args(["--task", "Add pagination to the list endpoint.", "--json"])
        .args(["--replay", fixture.join("replay.yaml").to_str().unwrap()])
        .args(["--work-dir", work.to_str().unwrap()])
        .args(extra)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn summary(stdout: &[u8]) -> serde_json::Value {
    serde_json::from_str(String::from_utf8_lossy(stdout).trim()).expect("one JSON summary")
}

#[test]
fn each_ending_of_the_loop_is_reported_as_it_is() {
    // (case, extra arguments, exit code, outcome, succeeded)
    let cases: &[(&str, &[&str], i32, &str, bool)] = &[
        ("magentic-orientation", &[], 0, "completed", true),
        ("magentic-round-limit", &[], 1, "max_turns", false),
        ("magentic-reset-limit", &[], 1, "stuck", false),
        (
            "magentic-plan-review-approved",
            &["--approve", "all"],
            0,
            "completed",
            true,
        ),
        (
            "magentic-plan-review-refused",
            &["--approve", "none"],
            1,
            "stuck",
            false,
        ),
    ];
    for (case, extra, code, outcome, succeeded) in cases {
        let dir = scratch(case);
        let output = exec(case, &dir, extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(*code), "{case}: {stderr}");
        let ran = summary(&output.stdout);
        assert_eq!(ran["outcome"], *outcome, "{case}: {ran}");
        assert_eq!(ran["succeeded"], *succeeded, "{case}: {ran}");
        if !succeeded {
            assert!(
                ran["error_message"].as_str().is_some_and(|m| !m.is_empty()),
                "{case}: {ran}"
            );
        }
        // The plan is shown on the terminal (standard error with `--json`), whole.
        assert!(
            stderr.contains("◇ manager's plan:\n    │ 1."),
            "{case}: {stderr}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
    let dir = scratch("output");
    let output = exec("magentic-orientation", &dir, &[])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let ran = summary(&output.stdout);
    assert_eq!(
        ran["output"],
        "Pagination was added to the list endpoint: page and per_page in src/list.rs."
    );
    let round_limit = exec("magentic-round-limit", &dir, &[])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let ran = summary(&round_limit.stdout);
    assert!(
        ran["shortfall"]
            .as_str()
            .is_some_and(|text| text.contains("never judged the request satisfied")),
        "{ran}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn without_a_terminal_a_plan_review_is_refused_at_once() {
    for extra in [&[][..], &["--hitl"][..]] {
        let dir = scratch("no-terminal");
        let started = Instant::now();
        let output = exec("magentic-plan-review-redirect", &dir, extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(20));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{extra:?}: {stderr}");
        let ran = summary(&output.stdout);
        assert_eq!(ran["outcome"], "stuck", "{extra:?}: {stderr}");
        assert_eq!(ran["turns"], 0);
        assert!(stderr.contains("not a terminal"), "{extra:?}: {stderr}");
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// A pseudo-terminal: the master (written to answer) and a handle on its slave side.
fn terminal() -> (std::fs::File, std::fs::File) {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("a pty");
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(name.to_str().unwrap())
        .unwrap();
    (std::fs::File::from(master), slave)
}

/// Waits until the child's stderr (collected in `seen`) holds `needle` `count` times.
fn wait_for(seen: &std::sync::Mutex<Vec<u8>>, needle: &str, count: usize) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let shown = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
        if shown.matches(needle).count() >= count {
            return;
        }
        assert!(Instant::now() < until, "no `{needle}` ({count}): {shown}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn on_a_terminal_a_typed_line_sends_the_plan_back_and_enter_approves_it() {
    const REVIEW: &str = "is up for review";
    let dir = scratch("terminal");
    let (mut master, slave) = terminal();
    let mut child = exec("magentic-plan-review-redirect", &dir, &["--hitl"])
        .stdin(Stdio::from(slave))
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    wait_for(&seen, REVIEW, 1);
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().unwrap().is_none(), "the review waits");
    master
        .write_all(b"Find the handler before changing anything.\n")
        .unwrap();
    // The revised plan is shown and reviewed again: Enter approves it.
    wait_for(&seen, REVIEW, 2);
    master.write_all(b"\n").unwrap();
    // The pause after the Researcher's turn.
    wait_for(&seen, "── paused after turn 1", 1);
    master.write_all(b"\n").unwrap();
    let output = child.wait_with_output().unwrap();
    reader.join().unwrap();
    let shown = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
    assert_eq!(output.status.code(), Some(0), "{shown}");
    let ran = summary(&output.stdout);
    assert_eq!(ran["outcome"], "completed", "{shown}");
    assert_eq!(
        ran["output"],
        "The handler is in src/list.rs; paging goes there."
    );
    let revised = shown.find("◇ revised plan:\n    │ 1. Researcher finds the handler.");
    let sent_back = shown.find("◇ plan sent back for revision by the operator");
    assert!(sent_back.is_some() && revised > sent_back, "{shown}");
    assert!(shown.contains("◇ plan approved by the operator"), "{shown}");
    let _ = std::fs::remove_dir_all(dir);
}
