//! End-to-end tests of `fuseraft exec`: exit codes, the `--json` summary, the events file,
//! and clear errors for bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `fuseraft exec` from the checkout (fixture paths are relative to it), in a scratch
/// work dir unless the test names one: nothing a run writes lands in the repository.
fn exec(args: &[&str]) -> Output {
    let default_work_dir = scratch("default-work-dir");
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command.arg("exec").args(args);
    if !args.contains(&"--work-dir") {
        command.arg("--work-dir").arg(&default_work_dir);
    }
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("the fuseraft binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-exec-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn case(name: &str) -> (String, String) {
    (
        format!("fixtures/run/{name}/config.yaml"),
        format!("fixtures/run/{name}/replay.yaml"),
    )
}

#[test]
fn completed_run_exits_zero_with_a_json_summary_and_events() {
    let dir = scratch("ok");
    let events = dir.join("events.jsonl");
    let (config, replay) = case("keyword");
    let output = exec(&[
        &config,
        "--task",
        "Add a flag.",
        "--replay",
        &replay,
        "--work-dir",
        dir.join("work").to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(text(&output.stdout).trim()).expect("stdout is one JSON object");
    assert_eq!(summary["outcome"], "completed");
    assert_eq!(summary["turns"], 5);
    assert_eq!(summary["succeeded"], true);
    assert!(summary["session_id"]
        .as_str()
        .is_some_and(|id| id.len() == 8));
    assert!(
        text(&output.stderr).contains("── turn 1 · Planner · Planner ──"),
        "turn headers stream to stderr with --json"
    );

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&events)
        .expect("events were written")
        .lines()
        .map(|line| serde_json::from_str(line).expect("each events line is JSON"))
        .collect();
    for line in &lines {
        for field in ["ts", "session", "turn", "event_type"] {
            assert!(line.get(field).is_some(), "event without `{field}`: {line}");
        }
        assert_eq!(line["session"], summary["session_id"]);
    }
    let types: Vec<&str> = lines
        .iter()
        .filter_map(|line| line["event_type"].as_str())
        .collect();
    assert_eq!(types.first(), Some(&"session_start"));
    assert_eq!(types.last(), Some(&"session_end"));
    assert_eq!(lines.last().unwrap()["payload"]["outcome"], "completed");
    assert!(
        types.contains(&"agent_routed")
            && types.contains(&"turn_start")
            && types.contains(&"turn_end")
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn stuck_and_error_runs_exit_one() {
    for (name, outcome) in [("stuck", "stuck"), ("replay-exhausted", "error")] {
        let dir = scratch(name);
        let (config, replay) = case(name);
        let output = exec(&[
            &config,
            "--task",
            "t",
            "--replay",
            &replay,
            "--work-dir",
            dir.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{name}: {}",
            text(&output.stderr)
        );
        let summary: serde_json::Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
        assert_eq!(summary["outcome"], outcome);
        assert!(summary["error_message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn keys_without_effect_are_reported_before_the_first_turn() {
    // The keyword case with upstream sections fuseraft parses but does not act on: the run
    // goes ahead, and says first which keys did nothing and why (FR007).
    let dir = scratch("inert");
    let (config, replay) = case("keyword");
    let written = std::fs::read_to_string(&config).expect("the keyword config");
    let inert = dir.join("config.yaml");
    std::fs::write(
        &inert,
        format!("{written}  Compaction:\n    SummaryTemplate: \"Summarise.\"\n  Saga:\n    Enabled: true\n"),
    )
    .unwrap();
    let output = exec(&[
        inert.to_str().unwrap(),
        "--task",
        "t",
        "--replay",
        &replay,
        "--work-dir",
        dir.join("work").to_str().unwrap(),
        // The turn headers go to stderr too, after the findings.
        "--json",
    ]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let first_turn = stderr
        .find("── turn 1")
        .unwrap_or_else(|| panic!("no first turn: {stderr}"));
    for (key, why) in [
        (
            "`Compaction.SummaryTemplate` has no effect",
            "custom template",
        ),
        ("`Saga` has no effect", "saga compensation"),
    ] {
        let at = stderr
            .find(key)
            .unwrap_or_else(|| panic!("{key}: {stderr}"));
        assert!(
            at < first_turn,
            "{key} is reported after the first turn: {stderr}"
        );
        assert!(stderr[at..first_turn].contains(why), "{why}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn max_turns_is_a_normal_end() {
    let dir = scratch("max");
    let (config, replay) = case("keyword");
    let output = exec(&[
        &config,
        "--task",
        "t",
        "--replay",
        &replay,
        "--work-dir",
        dir.to_str().unwrap(),
        "--max-turns",
        "2",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("max_turns after 2 turn(s)"),
        "{}",
        text(&output.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_input_exits_two_with_a_located_message() {
    let dir = scratch("bad");
    let replay = dir.join("replay.yaml");
    std::fs::write(
        &replay,
        "replies:\n  Planner:\n    - text: \"unterminated\n",
    )
    .unwrap();
    let (config, _) = case("keyword");
    let output = exec(&[&config, "--task", "t", "--replay", replay.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let err = text(&output.stderr);
    assert!(
        err.contains("replay.yaml:"),
        "names the replay file with a position: {err}"
    );
    // Submitted to a server, the same file is refused here, the same way, before any call.
    let on = ["--on", "http://127.0.0.1:9"];
    let args = [&config, "--task", "t", "--replay", replay.to_str().unwrap()];
    let remote = exec(&[&args[..], &on[..]].concat());
    assert_eq!(remote.status.code(), Some(2));
    assert_eq!(
        text(&remote.stderr),
        err,
        "a served run reads its replay as a local one"
    );

    std::fs::write(&replay, "replies:\n  Planner: not-a-list\n").unwrap();
    let output = exec(&[&config, "--task", "t", "--replay", replay.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("replies.Planner must be a list"),
        "{}",
        text(&output.stderr)
    );

    let no_task = exec(&[&config, "--replay", replay.to_str().unwrap()]);
    assert_eq!(no_task.status.code(), Some(2));
    assert!(text(&no_task.stderr).contains("--task"));

    let missing = exec(&[&config, "--task", "t", "--replay", "no/such/replay.yaml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("cannot read replay file"),
        "{}",
        text(&missing.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_printed_ir_file_runs_like_its_config() {
    let dir = scratch("fir");
    let fir = dir.join("keyword.fir");
    let compiled = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "compile",
            "fixtures/run/keyword/config.yaml",
            "-o",
            fir.to_str().unwrap(),
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(compiled.status.code(), Some(0));
    let (_, replay) = case("keyword");
    let output = exec(&[
        fir.to_str().unwrap(),
        "--task",
        "t",
        "--replay",
        &replay,
        "--work-dir",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let summary: serde_json::Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    assert_eq!(summary["turns"], 5);
    assert!(Path::new(&fir).exists());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_error_far_along_a_very_long_line_is_reported_not_a_panic() {
    let dir = scratch("long-line");
    let replay = dir.join("replay.json");
    // A syntax error past column 65,535, where a drawn snippet cannot go.
    std::fs::write(
        &replay,
        format!(
            "{{\"replies\": {{\"Planner\": [\"{}\", ]}}}}",
            "x".repeat(70_000)
        ),
    )
    .unwrap();
    let (config, _) = case("keyword");
    let output = exec(&[
        &config,
        "--task",
        "t",
        "--replay",
        replay.to_str().unwrap(),
        "--ephemeral",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("replay.json:1:70028"),
        "{}",
        text(&output.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn every_way_a_run_ends_prints_a_json_summary_with_the_same_keys() {
    let (config, replay) = case("sequential");
    let keys = |output: &Output| -> Vec<String> {
        let line = text(&output.stdout);
        let summary: serde_json::Value = serde_json::from_str(line.trim())
            .unwrap_or_else(|_| panic!("one JSON line: {line}{}", text(&output.stderr)));
        let mut keys: Vec<String> = summary.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    let run = |extra: &[&str]| {
        let mut args = vec![config.as_str(), "--replay", replay.as_str(), "--json"];
        args.extend_from_slice(extra);
        exec(&args)
    };
    let ends = [
        ("completed", run(&["--task", "Move the records."])),
        ("max_turns", run(&["--task", "Move.", "--max-turns", "1"])),
        // `--hitl` without a terminal: the first pause stops the run, resumable.
        ("cancelled", run(&["--task", "Move.", "--hitl"])),
        ("not_started", run(&[])),
    ];
    let (first, first_output) = &ends[0];
    for (outcome, output) in &ends {
        let summary: serde_json::Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
        assert_eq!(summary["outcome"], *outcome, "{}", text(&output.stderr));
        assert_eq!(
            keys(output),
            keys(first_output),
            "`{outcome}` and `{first}` summaries differ in their keys"
        );
    }
}
