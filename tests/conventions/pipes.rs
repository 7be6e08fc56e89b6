//! A closed standard output ends every command quietly: its reader is gone before the
//! first write (the read end of a real pipe is closed before the process starts), and the
//! command exits with the code it would have had (or 141, as SIGPIPE would), never with a
//! panic (101).

use std::process::Stdio;

use super::{fuseraft, scratch, stderr, text};

/// Runs `args` with standard output a pipe whose read end is already closed.
fn with_closed_stdout(args: &[&str]) -> std::process::Output {
    let (read, write) = rustix::pipe::pipe().expect("pipe");
    drop(read);
    fuseraft()
        .args(args)
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .expect("the fuseraft binary runs")
}

fn assert_quiet(args: &[&str], codes: &[i32]) {
    let output = with_closed_stdout(args);
    let err = stderr(&output);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{args:?}: {err}"
    );
    let code = output.status.code().expect("exited, not killed");
    assert!(
        codes.contains(&code),
        "{args:?} exited {code}, expected one of {codes:?}: {err}"
    );
}

#[test]
fn compile_check_test_and_help_end_quietly() {
    assert_quiet(
        &["compile", "fixtures/compile/ok/graph.yaml", "--emit", "ir"],
        &[0],
    );
    assert_quiet(
        &[
            "compile",
            "fixtures/compile/ok/graph.yaml",
            "--emit",
            "mermaid",
        ],
        &[0],
    );
    assert_quiet(&["check", "fixtures/cli/tree/team.yaml"], &[0]);
    // The findings still decide the exit code.
    assert_quiet(&["check", "fixtures/cli/tree/nested/broken.yaml"], &[1]);
    assert_quiet(
        &["check", "--paths", "fixtures/compile/ok/graph.yaml"],
        &[0],
    );
    assert_quiet(&["check", "--explain", "FR201"], &[0]);
    assert_quiet(
        &["test", "fixtures/scenarios/selection/keyword.scenario.yaml"],
        &[0],
    );
    assert_quiet(&["completions", "bash"], &[0]);
    assert_quiet(&["--help"], &[0, 141]);
    assert_quiet(&["check", "--help"], &[0, 141]);
}

#[test]
fn sessions_list_and_show_end_quietly() {
    let work = scratch("pipes-sessions");
    let ran = fuseraft()
        .args([
            "exec",
            "fixtures/run/keyword/config.yaml",
            "--task",
            "Add a --verbose flag.",
            "--replay",
            "fixtures/run/keyword/replay.yaml",
            "--work-dir",
            text(&work),
        ])
        .output()
        .expect("runs");
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    // The run completed: `--all` lists it.
    assert_quiet(
        &["sessions", "list", "--all", "--work-dir", text(&work)],
        &[0],
    );
    let listed = fuseraft()
        .args(["sessions", "list", "--all", "--work-dir", text(&work)])
        .output()
        .expect("runs");
    let id = String::from_utf8_lossy(&listed.stdout)
        .split_whitespace()
        .next()
        .expect("one session listed")
        .to_string();
    assert_quiet(&["sessions", "show", &id, "--work-dir", text(&work)], &[0]);
    let _ = std::fs::remove_dir_all(work);
}

#[test]
fn exec_json_ends_quietly() {
    let work = scratch("pipes-exec");
    assert_quiet(
        &[
            "exec",
            "fixtures/run/keyword/config.yaml",
            "--task",
            "Add a --verbose flag.",
            "--replay",
            "fixtures/run/keyword/replay.yaml",
            "--work-dir",
            text(&work),
            "--json",
        ],
        &[0, 141],
    );
    // Without `--json` the run's own output goes to the closed stdout; the run still ends.
    assert_quiet(
        &[
            "exec",
            "fixtures/run/keyword/config.yaml",
            "--task",
            "Add a --verbose flag.",
            "--replay",
            "fixtures/run/keyword/replay.yaml",
            "--work-dir",
            text(&work),
            "--ephemeral",
        ],
        &[0, 141],
    );
    // An early failure's summary too.
    assert_quiet(
        &[
            "exec",
            "no/such.yaml",
            "--task",
            "t",
            "--json",
            "--work-dir",
            text(&work),
        ],
        &[2, 141],
    );
    let _ = std::fs::remove_dir_all(work);
}

/// As a user types it: `fuseraft compile ... | head -1` with output larger than a pipe's
/// buffer, so that the writer is still writing when `head` exits.
#[test]
fn head_dash_one_as_a_user_types_it() {
    let dir = scratch("pipes-head");
    let mut config = String::from(
        "Orchestration:\n  Name: Long\n  Selection: { Type: sequential }\n  Agents:\n",
    );
    for n in 0..3000 {
        config.push_str(&format!(
            "    - {{ Name: Agent{n}, Instructions: \"{}\" }}\n",
            "Work carefully. ".repeat(4)
        ));
    }
    let path = dir.join("long.yaml");
    std::fs::write(&path, config).unwrap();
    let script = format!(
        "set -o pipefail; \"$0\" compile {} --emit ir | head -1 >/dev/null; echo \"${{PIPESTATUS[0]}}\"",
        text(&path)
    );
    let output = std::process::Command::new("bash")
        .args(["-c", &script, env!("CARGO_BIN_EXE_fuseraft")])
        .output()
        .expect("bash runs");
    let err = stderr(&output);
    assert!(!err.contains("panicked"), "{err}");
    let code = String::from_utf8_lossy(&output.stdout).trim().to_string();
    assert!(code == "0" || code == "141", "exit {code}: {err}");
    let _ = std::fs::remove_dir_all(dir);
}
