//! `exec --json` prints exactly one summary object on standard output, also when the run
//! never started: `succeeded: false`, the reason in `error_message`, the exit code.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value as Json;

use super::{run, scratch, stderr, stdout, text};

/// Runs `exec --json` and returns the one object it printed (asserting there is one).
fn summary(args: &[&str]) -> (Json, i32) {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let work = scratch(&format!(
        "exec-json-{}",
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    let mut all = vec!["exec", "--json", "--work-dir", text(&work)];
    all.extend_from_slice(args);
    let output = run(&all);
    let out = stdout(&output);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "one line on stdout: {out}\nstderr: {}",
        stderr(&output)
    );
    let object: Json = serde_json::from_str(lines[0]).expect("a JSON object");
    let code = output.status.code().expect("exited");
    assert_eq!(object["exit_code"], code, "{object}");
    let _ = std::fs::remove_dir_all(work);
    (object, code)
}

fn assert_failed(args: &[&str], message: &str) -> Json {
    let (object, code) = summary(args);
    assert_eq!(code, 2, "{object}");
    assert_eq!(object["succeeded"], false, "{object}");
    assert_eq!(object["outcome"], "not_started", "{object}");
    assert_eq!(object["turns"], 0, "{object}");
    let got = object["error_message"].as_str().unwrap_or_default();
    assert!(got.contains(message), "`{message}` in {object}");
    object
}

#[test]
fn early_failures_print_one_summary() {
    let replay = "fixtures/run/keyword/replay.yaml";
    let config = "fixtures/run/keyword/config.yaml";
    // An unreadable config.
    let object = assert_failed(
        &["no/such/config.yaml", "--task", "t", "--replay", replay],
        "does not exist",
    );
    assert_eq!(object["task"], "t");
    // Compile errors, located.
    assert_failed(
        &[
            "fixtures/cli/tree/nested/broken.yaml",
            "--task",
            "t",
            "--replay",
            replay,
        ],
        "fixtures/cli/tree/nested/broken.yaml:6:11: unknown selection type `statemachin`",
    );
    // A bad replay file.
    assert_failed(
        &[
            config,
            "--task",
            "t",
            "--replay",
            "fixtures/cli/tree/team.yaml",
        ],
        "fixtures/cli/tree/team.yaml",
    );
    assert_failed(
        &[config, "--task", "t", "--replay", "no/such/replay.yaml"],
        "no/such/replay.yaml",
    );
    // A missing task.
    assert_failed(&[config, "--replay", replay], "`--task TEXT` is required");
    // A sandbox that does not exist.
    assert_failed(
        &[
            "fixtures/cli/missing-sandbox.yaml",
            "--task",
            "t",
            "--replay",
            replay,
        ],
        "missing-sandbox.yaml",
    );
    // A session id that cannot be one.
    assert_failed(
        &[config, "--resume", "../x", "--replay", replay],
        "`../x` is not a session id",
    );
}

#[test]
fn a_refused_command_line_prints_one_summary() {
    for args in [
        vec![
            "exec",
            "--json",
            "fixtures/run/keyword/config.yaml",
            "--max-turns",
            "many",
        ],
        vec!["--color", "never", "run", "--json", "--no-such-flag"],
    ] {
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let object: Json = serde_json::from_str(stdout(&output).trim()).expect("one object");
        assert_eq!(object["succeeded"], false);
        assert_eq!(object["exit_code"], 2);
        assert!(
            object["error_message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{object}"
        );
    }
    // Without `--json`, stdout stays empty.
    let plain = run(&["exec", "--max-turns", "many"]);
    assert!(stdout(&plain).is_empty());
}

#[test]
fn a_finished_run_prints_one_summary() {
    let (object, code) = summary(&[
        "fixtures/run/keyword/config.yaml",
        "--task",
        "Add a --verbose flag.",
        "--replay",
        "fixtures/run/keyword/replay.yaml",
    ]);
    assert_eq!(code, 0);
    assert_eq!(object["succeeded"], true);
    assert!(object["error_message"].is_null(), "{object}");
}
