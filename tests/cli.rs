//! End-to-end tests of the `fuseraft` binary: exit codes, output views, `-o`, `.fir` input.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fuseraft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("the fuseraft binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn compile_prints_ir_and_exits_zero() {
    let output = fuseraft(&["compile", "fixtures/compile/ok/keyword.yaml"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("fuseraft-ir 1\n"));
    assert!(
        stderr(&output).is_empty(),
        "no diagnostics expected: {}",
        stderr(&output)
    );
}

#[test]
fn every_view_of_one_program() {
    for emit in ["json", "dot", "mermaid"] {
        let output = fuseraft(&["compile", "fixtures/compile/ok/graph.yaml", "--emit", emit]);
        assert_eq!(output.status.code(), Some(0), "{emit}: {}", stderr(&output));
        insta::assert_snapshot!(format!("emit_{emit}"), stdout(&output));
    }
    let json: serde_json::Value = serde_json::from_str(&stdout(&fuseraft(&[
        "compile",
        "fixtures/compile/ok/graph.yaml",
        "--emit",
        "json",
    ])))
    .expect("--emit json is JSON");
    assert_eq!(json["entry"], "A");
}

#[test]
fn output_file_and_ir_input_round_trip() {
    let dir = scratch("fir");
    let fir = dir.join("team.fir");
    let first = fuseraft(&[
        "compile",
        "fixtures/compile/ok/statemachine.yaml",
        "-o",
        fir.to_str().unwrap(),
    ]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(stdout(&first).is_empty(), "-o writes the file, not stdout");
    let written = std::fs::read_to_string(&fir).expect("-o wrote the file");
    let again = fuseraft(&["compile", fir.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(
        stdout(&again),
        written,
        "compiling the printed IR prints the same IR"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn errors_in_the_input_exit_one_with_a_located_diagnostic() {
    let dir = scratch("err");
    let config = dir.join("bad.yaml");
    std::fs::write(
        &config,
        "Orchestration:\n  Agents:\n    - Name: A\n  Selection:\n    Type: statemachin\n",
    )
    .unwrap();
    let output = fuseraft(&["compile", config.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        err.contains("unknown selection type `statemachin`"),
        "{err}"
    );
    assert!(
        err.contains("bad.yaml:5:11"),
        "points at line 5, column 11: {err}"
    );
    assert!(err.contains("did you mean `statemachine`?"), "{err}");
    assert!(stdout(&output).is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unreadable_input_and_bad_usage_exit_two() {
    let missing = fuseraft(&["compile", "no/such/config.yaml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("does not exist"),
        "{}",
        stderr(&missing)
    );

    let bad_flag = fuseraft(&[
        "compile",
        "fixtures/compile/ok/keyword.yaml",
        "--emit",
        "xml",
    ]);
    assert_eq!(bad_flag.status.code(), Some(2));

    let no_command = fuseraft(&[]);
    assert_eq!(no_command.status.code(), Some(2));
}

#[test]
fn help_names_every_input_kind() {
    let output = fuseraft(&["compile", "--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = stdout(&output);
    for needle in ["AGENT.md", "tama project directory", ".fir", "--emit"] {
        assert!(help.contains(needle), "help mentions {needle}: {help}");
    }
}

#[test]
fn a_directory_holding_a_config_stands_for_it_and_zero_turns_are_refused() {
    let dir = scratch("dir-input");
    let keyword = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/run/keyword/config.yaml"),
    )
    .unwrap();
    std::fs::write(dir.join("fuseraft.yaml"), keyword).unwrap();
    let dir_arg = dir.to_string_lossy().to_string();
    let compiled = fuseraft(&["compile", &dir_arg]);
    assert_eq!(compiled.status.code(), Some(0), "{}", stderr(&compiled));
    assert!(
        stdout(&compiled).contains("fuseraft.yaml"),
        "{}",
        stdout(&compiled)
    );
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let replay = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/run/keyword/replay.yaml");
    let (replay, work) = (replay.to_string_lossy(), work.to_string_lossy());
    let ran = fuseraft(&[
        "exec",
        &dir_arg,
        "--task",
        "t",
        "--replay",
        &replay,
        "--work-dir",
        &work,
        "--ephemeral",
    ]);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let zero = fuseraft(&[
        "exec",
        &dir_arg,
        "--task",
        "t",
        "--replay",
        &replay,
        "--max-turns",
        "0",
    ]);
    assert_eq!(zero.status.code(), Some(2), "{}", stderr(&zero));
    assert!(stderr(&zero).contains("--max-turns"), "{}", stderr(&zero));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn plugins_lists_every_tool_once_with_its_capability_and_category() {
    let output = fuseraft(&["plugins"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!("plugins", stdout(&output));
    // The JSON names each built-in tool exactly once, as the compiler knows them.
    let output = fuseraft(&["plugins", "--json"]);
    let plugins: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let mut names: Vec<String> = plugins
        .as_array()
        .expect("a list")
        .iter()
        .flat_map(|plugin| plugin["tools"].as_array().cloned().unwrap_or_default())
        .map(|tool| tool["name"].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    let mut known: Vec<String> = fuseraft_compiler::ir::Tool::ALL
        .iter()
        .map(|tool| tool.name().to_string())
        .collect();
    known.sort();
    assert_eq!(names, known);
    // One plugin, described; a misspelt one is refused with a suggestion.
    let output = fuseraft(&["plugins", "--plugin", "git"]);
    assert_eq!(output.status.code(), Some(0));
    insta::assert_snapshot!("plugins_git", stdout(&output));
    let output = fuseraft(&["plugins", "--plugin", "filesytem"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("no plugin is named `filesytem`; did you mean `FileSystem`?"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn models_lists_the_bundled_windows_and_prices() {
    let output = fuseraft(&["models"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!("models", stdout(&output));
    let output = fuseraft(&["models", "--json"]);
    let models: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let gpt4o = models["models"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|model| model["model"] == "gpt-4o")
        .expect("gpt-4o is known");
    assert_eq!(gpt4o["context_window"], 128_000);
    assert_eq!(gpt4o["input_per_million"], 2.5);
}

/// A project laid out as upstream's users have it: `.fuseraft/config/orchestration.yaml`, a
/// replay, a task file, a spec and notes.
fn upstream_project(name: &str) -> PathBuf {
    let dir = scratch(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".fuseraft/config")).expect("project dirs");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/run/keyword");
    std::fs::copy(
        root.join("config.yaml"),
        dir.join(".fuseraft/config/orchestration.yaml"),
    )
    .expect("config");
    std::fs::copy(root.join("replay.yaml"), dir.join("replay.yaml")).expect("replay");
    std::fs::write(dir.join("task.md"), "Add a --verbose flag.\n").expect("task");
    std::fs::write(dir.join("spec.md"), "The flag prints each step.\n").expect("spec");
    std::fs::write(dir.join("notes.md"), "Steps go to stderr.\n").expect("notes");
    dir
}

/// `fuseraft ARGS --replay replay.yaml --json` in `dir`: the exit code and the summary.
fn run_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .args(["--replay", "replay.yaml", "--json"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("the fuseraft binary runs");
    let summary = serde_json::from_str(stdout(&output).trim()).unwrap_or_else(|error| {
        panic!(
            "{args:?}: no JSON summary ({error}); stderr:\n{}",
            stderr(&output)
        )
    });
    (output.status.code(), summary)
}

#[test]
fn upstreams_run_command_lines_run_unchanged() {
    let dir = upstream_project("run-forms");
    // (command line, the task the run was given)
    let forms: &[(&[&str], &str)] = &[
        (
            &[
                "run",
                "-c",
                ".fuseraft/config/orchestration.yaml",
                "Add a flag.",
            ],
            "Add a flag.",
        ),
        (
            &[
                "run",
                "--config",
                ".fuseraft/config/orchestration.yaml",
                "Add a flag.",
            ],
            "Add a flag.",
        ),
        (&["run", "Add a flag."], "Add a flag."),
        (&["run", "-f", "task.md"], "Add a --verbose flag."),
        (
            &["run", "--task-file", "task.md", "--devui=127.0.0.1:0"],
            "Add a --verbose flag.",
        ),
        (
            &["run", "--spec", "spec.md"],
            "Implement the specification.\n\n## Specification\n\nThe flag prints each step.",
        ),
        (
            &["run", "Add a flag.", "--context-file", "notes.md"],
            "Add a flag.\n\n## Attached files\n\n### notes.md\n\nSteps go to stderr.\n",
        ),
        // Upstream's flags that change nothing a replayed run shows.
        (
            &["run", "Add a flag.", "--verbose", "--no-banner"],
            "Add a flag.",
        ),
        // fuseraft's own spelling means what it meant.
        (
            &[
                "exec",
                ".fuseraft/config/orchestration.yaml",
                "--task",
                "Add a flag.",
            ],
            "Add a flag.",
        ),
    ];
    for (args, task) in forms {
        let (code, summary) = run_in(&dir, args);
        assert_eq!(code, Some(0), "{args:?}: {summary}");
        assert_eq!(summary["outcome"], "completed", "{args:?}: {summary}");
        assert_eq!(summary["task"], *task, "{args:?}");
    }
    // `-o FILE`: the transcript where the user asked for it.
    let (code, summary) = run_in(&dir, &["run", "Add a flag.", "-o", "transcript.md"]);
    assert_eq!(code, Some(0), "{summary}");
    let written = std::fs::read_to_string(dir.join("transcript.md")).expect("-o wrote it");
    assert!(
        written.starts_with(&format!(
            "# fuseraft session {}",
            summary["session_id"].as_str().unwrap()
        )) && written.contains("**Task:** Add a flag."),
        "{written}"
    );
    // `-r` alone resumes the newest resumable session.
    let (_, stopped) = run_in(&dir, &["run", "Resume me.", "--max-turns", "1"]);
    assert_eq!(stopped["outcome"], "max_turns", "{stopped}");
    let (code, resumed) = run_in(&dir, &["run", "-r"]);
    assert_eq!(code, Some(0), "{resumed}");
    assert_eq!(resumed["session_id"], stopped["session_id"], "{resumed}");
    assert_eq!(resumed["task"], "Resume me.");
    // Nothing to run: a clear refusal naming both spellings.
    let empty = scratch("run-forms-empty");
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["run", "Add a flag."])
        .current_dir(&empty)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("no `.fuseraft/config/orchestration.yaml` here"),
        "{}",
        stderr(&output)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Per-agent totals: `--json`'s `agents`, the footer's lines and `sessions show`'s
/// `AgentTotals` say each agent's turns and tool calls, and a resumed session counts on.
#[test]
fn each_agent_has_its_totals_and_a_resume_counts_on() {
    let dir = upstream_project("agents");
    let (_, stopped) = run_in(&dir, &["run", "Add a flag.", "--max-turns", "2"]);
    assert_eq!(stopped["agents"]["Planner"]["turns"], 1, "{stopped}");
    assert_eq!(stopped["agents"]["Developer"]["turns"], 1, "{stopped}");
    let session = stopped["session_id"].as_str().expect("an id").to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["run", "-r", &session, "--replay", "replay.yaml"])
        .current_dir(&dir)
        .output()
        .expect("runs");
    let footer = stderr(&output);
    assert!(
        footer.contains("   Developer: 2 turn(s) · tokens in 0 / out 0 · 1 tool call(s) · "),
        "{footer}"
    );
    assert!(footer.contains("   Reviewer: 2 turn(s)"), "{footer}");
    let shown = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["sessions", "show", &session])
        .current_dir(&dir)
        .output()
        .expect("runs");
    let state: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("json");
    let totals = &state["AgentTotals"];
    let turns: Vec<u64> = ["Planner", "Developer", "Reviewer"]
        .iter()
        .map(|agent| totals[agent]["turns"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(turns, [1, 2, 2], "{totals}");
    assert!(
        totals["Developer"]["seconds"].as_f64().is_some(),
        "{totals}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `run --snapshot` (and `--tools`, accepted) as upstream's users write them: the run's turns
/// and its summary under the snapshot dir, by project and session.
#[test]
fn a_snapshot_keeps_the_turns_and_the_summary() {
    let dir = upstream_project("snapshot");
    let snapshots = dir.join("snapshots");
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "run",
            "Add a flag.",
            "--snapshot",
            "--tools",
            "--replay",
            "replay.yaml",
            "--json",
        ])
        .current_dir(&dir)
        .env("FUSERAFT_SNAPSHOT_DIR", &snapshots)
        .output()
        .expect("runs");
    let summary: serde_json::Value = serde_json::from_str(stdout(&output).trim()).expect("json");
    assert_eq!(summary["outcome"], "completed", "{}", stderr(&output));
    let session = summary["session_id"].as_str().expect("an id");
    let project = dir
        .file_name()
        .expect("a name")
        .to_string_lossy()
        .to_string();
    let kept = snapshots.join(&project).join(session);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(kept.join("manifest.json")).expect("a manifest"))
            .expect("json");
    assert_eq!(manifest, summary);
    let turns = std::fs::read_to_string(kept.join("turns.jsonl")).expect("turns");
    let replies = turns
        .lines()
        .filter(|line| line.contains("\"Role\":\"assistant\""))
        .count();
    assert_eq!(
        replies as u64,
        summary["turns"].as_u64().expect("turns"),
        "{turns}"
    );
    assert!(stderr(&output).contains(&format!("snapshot: {}", kept.display())));
    let _ = std::fs::remove_dir_all(dir);
}

/// `run --no-replan` as upstream's users write it: the reviewer's `REPLAN` leads nowhere (a
/// correction, then `APPROVED` ends the run in 4 turns instead of 6), the dropped transition
/// is named, and a resume line keeps the flag (the program it changes is the session's).
#[test]
fn no_replan_drops_the_replan_transitions_and_resumes_with_them_dropped() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/run/replan");
    let dir = scratch("no-replan");
    std::fs::copy(fixture.join("replay.yaml"), dir.join("replay.yaml")).expect("replay");
    let config = fixture.join("config.yaml").display().to_string();
    let (code, plain) = run_in(&dir, &["run", "-c", &config, "Ship it."]);
    assert_eq!(
        (code, &plain["turns"]),
        (Some(0), &serde_json::json!(6)),
        "{plain}"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["run", "-c", &config, "Ship it.", "--no-replan"])
        .args(["--replay", "replay.yaml", "--json"])
        .current_dir(&dir)
        .output()
        .expect("runs");
    let summary: serde_json::Value = serde_json::from_str(stdout(&output).trim()).expect("json");
    assert_eq!(summary["outcome"], "completed", "{summary}");
    assert_eq!(summary["turns"], 4, "{summary}");
    assert!(
        stderr(&output).contains("note: `--no-replan` drops `Review` → `Plan` on `REPLAN`"),
        "{}",
        stderr(&output)
    );
    let (_, capped) = run_in(
        &dir,
        &[
            "run",
            "-c",
            &config,
            "Ship it.",
            "--no-replan",
            "--max-turns",
            "1",
        ],
    );
    assert!(
        capped["resume"]
            .as_str()
            .is_some_and(|line| line.ends_with(" --no-replan")),
        "{capped}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `--context-file` of an office document attaches its text: an XLSX workbook written here
/// with rust_xlsxwriter comes in as its sheets' tables; a damaged one is refused naming it.
#[test]
fn a_context_file_document_is_attached_as_its_text() {
    let dir = upstream_project("context-documents");
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.set_name("Stock").expect("a name");
    sheet.write_string(0, 0, "Item").expect("a cell");
    sheet.write_string(0, 1, "Count").expect("a cell");
    sheet.write_string(1, 0, "bolts").expect("a cell");
    sheet.write_number(1, 1, 40.0).expect("a cell");
    workbook.save(dir.join("stock.xlsx")).expect("saved");
    let (code, summary) = run_in(&dir, &["run", "Count it.", "--context-file", "stock.xlsx"]);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(
        summary["task"],
        "Count it.\n\n## Attached files\n\n### stock.xlsx\n\n## Stock\nItem | Count\nbolts | 40\n"
    );
    std::fs::write(dir.join("broken.docx"), "not a document").expect("written");
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "run",
            "Read it.",
            "--context-file",
            "broken.docx",
            "--replay",
            "replay.yaml",
        ])
        .current_dir(&dir)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "cannot attach the context file `broken.docx`: not a readable Office document"
        ),
        "{}",
        stderr(&output)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `fuseraft exec` of the keyword fixture with `extra` arguments in a fresh work dir: the
/// exit code, standard error, and whether a session was written.
fn exec_keyword(name: &str, extra: &[&str]) -> (Option<i32>, String, bool) {
    let work = scratch(name);
    let _ = std::fs::remove_dir_all(&work);
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["exec", "fixtures/run/keyword/config.yaml", "--task", "t"])
        .args(extra)
        .arg("--work-dir")
        .arg(&work)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_API_KEY", "sk-test")
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    let sessions = std::fs::read_dir(work.join(".fuseraft/sessions"))
        .map(|entries| entries.count() > 0)
        .unwrap_or(false);
    let _ = std::fs::remove_dir_all(&work);
    (output.status.code(), stderr(&output), sessions)
}

#[test]
fn a_model_that_cannot_be_meant_is_refused_before_the_first_turn() {
    let cases: &[(&[&str], &str)] = &[
        // A misspelt provider, with the one meant.
        (
            &["--model", "antropic:claude-sonnet-4-5"],
            "`antropic` is not a provider; did you mean `anthropic`?",
        ),
        // No provider and no OpenAI id either.
        (
            &["--model", "foo:bar"],
            "`foo:bar` is no OpenAI model id and `foo` no provider",
        ),
        (&["--model", "llama3.2:3b"], "an Ollama model with a tag is `ollama:llama3.2:3b`"),
        // No model anywhere: neither the config, nor `--model`, nor `--replay`.
        (&[], "agent `Planner` has no model: give it a `Model` in the config, pass `--model PROVIDER:MODEL`"),
    ];
    for (args, says) in cases {
        let (code, message, session) = exec_keyword("refused-model", args);
        assert_eq!(code, Some(2), "{args:?}: {message}");
        assert!(message.contains(says), "{args:?}: {message}");
        assert!(
            !session,
            "{args:?}: no session is written for a run that never started"
        );
        assert!(!message.contains("turn 1"), "{args:?}: {message}");
    }
}

/// A config `check` rejects is not run, even with a replay that would answer every call:
/// exit 1 before any turn, the finding on standard error and in the `--json` summary, and
/// no session written.
#[test]
fn exec_refuses_a_config_check_rejects_before_any_turn() {
    let work = scratch("check-errors");
    let output = fuseraft(&[
        "exec",
        "fixtures/check/FR006_fail_doc.yaml",
        "--task",
        "t",
        "--replay",
        "fixtures/run/keyword/replay.yaml",
        "--json",
        "--work-dir",
        work.to_str().expect("utf-8"),
    ]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(message.contains("FR006"), "{message}");
    assert!(
        message.contains("not run: `fuseraft check` finds errors"),
        "{message}"
    );
    assert!(!message.contains("turn 1"), "{message}");
    let summary: serde_json::Value = serde_json::from_str(stdout(&output).trim()).expect("json");
    assert_eq!(summary["outcome"], "not_started");
    assert_eq!(summary["exit_code"], 1);
    assert!(summary["error_message"]
        .as_str()
        .is_some_and(|error| error.starts_with("fixtures/check/FR006_fail_doc.yaml:5:18: ")));
    assert!(!work.join(".fuseraft/sessions").exists());
    let _ = std::fs::remove_dir_all(&work);
}

/// The README's one-command demo, as written there (its work dir replaced by a fresh one):
/// it runs to the end without a warning before its first turn.
#[test]
fn the_readmes_demo_runs_without_a_warning() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let line = readme
        .lines()
        .find(|line| line.starts_with("cargo run --release -- exec "))
        .expect("the README gives the demo command");
    // The arguments after `--`, quotes honoured, as a shell would split them.
    let mut args: Vec<String> = Vec::new();
    let mut quoted = false;
    let mut current = String::new();
    for ch in line["cargo run --release -- ".len()..].chars() {
        match ch {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !current.is_empty() {
                    args.push(std::mem::take(&mut current));
                }
            }
            _ => current.push(ch),
        }
    }
    args.push(current);
    let work = scratch("readme-demo");
    let at = args
        .iter()
        .position(|arg| arg == "--work-dir")
        .expect("--work-dir");
    args[at + 1] = work.display().to_string();
    let output = fuseraft(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{message}");
    assert!(
        !message.contains("warning") && !message.contains('⚠'),
        "{message}"
    );
    let _ = std::fs::remove_dir_all(work);
}

/// A config whose worker runs a slow command, and a replay that has it do so, in `dir`.
fn slow_team(dir: &std::path::Path) {
    std::fs::write(
        dir.join("config.yaml"),
        "Orchestration:\n  Agents:\n    - { Name: Worker, Instructions: \"Run the command, then say DONE.\", Plugins: [Shell] }\n  Selection:\n    Type: keyword\n    Routes:\n      - { Keyword: DONE, Agent: Worker, SourceAgents: [Worker] }\n",
    )
    .expect("config");
    std::fs::write(
        dir.join("replay.yaml"),
        "replies:\n  Worker:\n    - tool_calls: [ { name: shell_run, args: { command: \"sleep 20\" } } ]\n    - DONE\n",
    )
    .expect("replay");
}

/// The `--json` summary of `fuseraft ARGS` run in `dir`.
fn summary_of(output: &Output) -> serde_json::Value {
    serde_json::from_str(stdout(output).trim()).unwrap_or_else(|error| {
        panic!(
            "no summary ({error}): {}\n{}",
            stdout(output),
            stderr(output)
        )
    })
}

#[cfg(unix)]
#[test]
fn every_ending_has_one_summary_shape_a_resume_line_and_an_end_event() {
    use std::collections::BTreeSet;
    let dir = scratch("endings");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    slow_team(&dir);
    let keys = |summary: &serde_json::Value| -> BTreeSet<String> {
        summary
            .as_object()
            .expect("an object")
            .keys()
            .cloned()
            .collect()
    };
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fuseraft"))
            .args(args)
            .current_dir(&dir)
            .env("NO_COLOR", "1")
            .output()
            .expect("runs")
    };
    let keyword = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/run/keyword");
    let config = keyword.join("config.yaml").display().to_string();
    let replay = keyword.join("replay.yaml").display().to_string();
    let completed = run(&[
        "exec", &config, "--task", "t", "--replay", &replay, "--json",
    ]);
    let capped = run(&[
        "exec",
        &config,
        "--task",
        "t",
        "--replay",
        &replay,
        "--json",
        "--max-turns",
        "1",
    ]);
    let unstarted = run(&["exec", "missing.yaml", "--task", "t", "--json"]);
    // A signal mid-turn (the worker's command sleeps).
    let events = dir.join("events.jsonl");
    let child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            "config.yaml",
            "--task",
            "t",
            "--replay",
            "replay.yaml",
            "--json",
            "--events",
        ])
        .arg(&events)
        .current_dir(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&events)
        .unwrap_or_default()
        .contains("turn_start")
        && started.elapsed() < std::time::Duration::from_secs(20)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The worker's command is running by then.
    std::thread::sleep(std::time::Duration::from_millis(700));
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .expect("SIGINT");
    let cancelled = child.wait_with_output().expect("ends");
    let summaries = [
        ("completed", summary_of(&completed)),
        ("max_turns", summary_of(&capped)),
        ("not_started", summary_of(&unstarted)),
        ("cancelled", summary_of(&cancelled)),
    ];
    for (outcome, summary) in &summaries {
        assert_eq!(summary["outcome"], *outcome, "{summary}");
        assert_eq!(keys(summary), keys(&summaries[0].1), "{outcome}: {summary}");
    }
    // A resumable ending says how to resume, on the terminal and in the summary.
    for (output, summary) in [(&capped, &summaries[1].1), (&cancelled, &summaries[3].1)] {
        let resume = summary["resume"].as_str().expect("a resume command");
        assert!(
            resume.starts_with("fuseraft exec ") && resume.contains("--resume "),
            "{resume}"
        );
        assert!(
            stderr(output).contains("resume with: fuseraft exec"),
            "{}",
            stderr(output)
        );
    }
    assert!(summaries[0].1["resume"].is_null());
    assert!(
        stderr(&capped).contains("`--max-turns 1` was reached"),
        "{}",
        stderr(&capped)
    );
    // The events file of the cancelled run ends with its end.
    let last = std::fs::read_to_string(&events).expect("events");
    let last: serde_json::Value =
        serde_json::from_str(last.lines().last().expect("a line")).expect("JSON");
    assert_eq!(last["event_type"], "session_end", "{last}");
    assert_eq!(last["payload"]["outcome"], "cancelled", "{last}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn man_says_how_to_reach_pages_man_would_not_find() {
    let home = scratch("man-home");
    let out = home.join(".local/share/man/man1");
    let write = |path: &str, manpath: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
        command.args(["man", "--out"]).arg(&out).env("PATH", path);
        match manpath {
            Some(manpath) => command.env("MANPATH", manpath),
            None => command.env_remove("MANPATH"),
        };
        command.output().expect("runs")
    };
    // Debian's man-db finds `~/.local/share/man` only while `~/.local/bin` is on PATH.
    let missing = write("/usr/bin:/bin", None);
    assert_eq!(missing.status.code(), Some(0));
    let tree = std::fs::canonicalize(home.join(".local/share/man")).expect("written");
    assert!(
        stderr(&missing).contains(&format!("export MANPATH=\"{}:$MANPATH\"", tree.display())),
        "{}",
        stderr(&missing)
    );
    let local_bin = format!("{}:/usr/bin", home.join(".local/bin").display());
    assert!(!stderr(&write(&local_bin, None)).contains("MANPATH"));
    let manpath = format!("{}:", tree.display());
    assert!(!stderr(&write("/usr/bin", Some(&manpath))).contains("MANPATH"));
    let _ = std::fs::remove_dir_all(home);
}

#[test]
fn ci_turns_a_fail_row_of_the_test_report_into_exit_2() {
    let dir = scratch("ci");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("config.yaml"),
        "Orchestration:\n  Agents:\n    - { Name: Tester, Instructions: \"Test, write the report, then say DONE.\", Plugins: [FileSystem] }\n  Selection:\n    Type: keyword\n    Routes:\n      - { Keyword: DONE, Agent: Tester, SourceAgents: [Tester] }\n",
    )
    .expect("config");
    let replay = |status: &str| {
        let report = format!(
            "{{\\\"results\\\": [{{\\\"criterion\\\": \\\"prints hi\\\", \\\"status\\\": \\\"PASS\\\"}}, {{\\\"criterion\\\": \\\"exits 0\\\", \\\"status\\\": \\\"{status}\\\"}}]}}"
        );
        format!("replies:\n  Tester:\n    - tool_calls: [ {{ name: write_file, args: {{ path: .fuseraft/artifacts/test-report.json, content: \"{report}\" }} }} ]\n    - DONE\n")
    };
    for (status, code, failed) in [("FAIL", 2, 1), ("PASS", 0, 0)] {
        std::fs::write(dir.join("replay.yaml"), replay(status)).expect("replay");
        let work = dir.join(format!("work-{status}"));
        let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
            .args([
                "run",
                "-c",
                "config.yaml",
                "Test it.",
                "--replay",
                "replay.yaml",
                "--ci",
                "--json",
                "--work-dir",
            ])
            .arg(&work)
            .current_dir(&dir)
            .output()
            .expect("runs");
        let summary = summary_of(&output);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{summary}\n{}",
            stderr(&output)
        );
        assert_eq!(
            summary["ci"]["failed_criteria"].as_array().map(Vec::len),
            Some(failed),
            "{summary}"
        );
        assert_eq!(summary["ci"]["passed"], 2 - failed, "{summary}");
        if failed > 0 {
            assert!(
                stderr(&output).contains("ci: the test report has 1 FAIL row(s): exits 0"),
                "{}",
                stderr(&output)
            );
            assert_eq!(summary["succeeded"], false);
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}
