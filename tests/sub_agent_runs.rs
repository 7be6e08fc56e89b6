//! Sub-agents (`sub_agent_explore`, `sub_agent_locate`) through the real driver with the
//! replay provider, on real files in a fresh work dir: the answer a sub-agent distils from
//! real reads and searches, its refused writes and recursion, its cap, replies that are no
//! answer, and its usage counted toward the run's budget. Each case asserts the results the
//! calling agent was fed.

use std::path::{Path, PathBuf};

use fuseraft::disk::Disk;
use fuseraft_vm::driver::{self, Approvals, Env, Summary};
use fuseraft_vm::event::{Event, EventKind};
use fuseraft_vm::history::ToolCall;
use fuseraft_vm::machine::Options;
use fuseraft_vm::replay::Replay;

/// A fresh work dir with a small project in it.
fn project(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("fuseraft-sub-agent-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work/src")).unwrap();
    let work = std::fs::canonicalize(dir.join("work")).unwrap();
    std::fs::write(
        work.join("src/calc.py"),
        "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    )
    .unwrap();
    std::fs::write(work.join("README.md"), "A calculator. See src/calc.py.\n").unwrap();
    work
}

/// Runs `config` (YAML text) with `replay` (YAML text) in `work`; the summary and events.
fn run(work: &Path, config: &str, replay: &str) -> (Summary, Vec<Event>) {
    let config_path = work.parent().unwrap().join("config.yaml");
    let replay_path = work.parent().unwrap().join("replay.yaml");
    std::fs::write(&config_path, config).unwrap();
    std::fs::write(&replay_path, replay).unwrap();
    let compiled = fuseraft_compiler::compile(&config_path, &Disk);
    let program = compiled
        .program
        .unwrap_or_else(|| panic!("does not compile: {:?}", compiled.diagnostics));
    let script = fuseraft::replay_file::load(&replay_path)
        .unwrap_or_else(|error| panic!("bad replay: {}", error.1.message));
    let env = Env {
        work_dir: work.to_path_buf(),
        deny_read: Vec::new(),
        approvals: Approvals::All,
        pause: None,
    };
    let options = Options {
        session_id: "0000test".to_string(),
        task: "Look around.".to_string(),
        max_turns: None,
        skip_prompts: false,
    };
    let replay = Replay::new(script);
    let mut events = Vec::new();
    let mut on_event = |event: &Event, _: &fuseraft_vm::machine::Run| events.push(event.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let summary = runtime.block_on(driver::run(&program, options, &replay, &env, &mut on_event));
    (summary, events)
}

/// The calls the agent made, in order, with their results.
fn calls(summary: &Summary) -> Vec<&ToolCall> {
    summary
        .history
        .iter()
        .flat_map(|message| message.tool_calls.iter())
        .collect()
}

fn result(call: &ToolCall) -> &str {
    call.result.as_deref().unwrap_or_default()
}

const CONFIG: &str = "\
Orchestration:
  Name: SubAgents
  Security:
    Permissions: { file_write_delete: allow }
  Agents:
    - Name: Dev
      Instructions: Fix the calculator.
      Plugins: [FileSystem, Search, Git, Shell, SubAgent]
      SubAgentMaxToolCalls: 3
  Selection: { Type: sequential }
  Termination: { Type: maxiterations, MaxIterations: 1 }
";

#[test]
fn a_sub_agent_reads_and_searches_real_files_and_its_answer_is_the_result() {
    let work = project("explore");
    let replay = "\
replies:
  Dev:
    - tool_calls:
        - { name: sub_agent_explore, args: { query: Where is addition implemented? } }
      text: Found it.
  Dev/sub_agent:
    - tool_calls:
        - { name: search_content, args: { query: \"def add\" } }
        - { name: search_files, args: { pattern: \"*.py\" } }
      usage: { input_tokens: 100, output_tokens: 10 }
    - tool_calls:
        - { name: read_file, args: { path: src/calc.py } }
      usage: { input_tokens: 200, output_tokens: 10 }
    - text: \"`add` is in src/calc.py:1 and subtracts instead of adding.\"
      usage: { input_tokens: 300, output_tokens: 20 }
";
    let (summary, events) = run(&work, CONFIG, replay);
    let made = calls(&summary);
    assert_eq!(
        made.len(),
        1,
        "the sub-agent's own calls stay out of the history"
    );
    assert!(made[0].ok);
    assert_eq!(
        result(made[0]),
        "`add` is in src/calc.py:1 and subtracts instead of adding."
    );
    // Its conversation never enters the shared history; its usage is the turn's.
    assert!(summary
        .history
        .iter()
        .all(|message| !message.content.contains("subtracts")));
    assert_eq!(summary.usage.total(), 640);
    let tools: Vec<String> = events
        .iter()
        .filter(|event| event.name() == "sub_agent_tool_call")
        .map(|event| {
            format!(
                "{} {}",
                event.payload_value()["tool"],
                event.payload_value()["ok"]
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            "\"search_content\" true",
            "\"search_files\" true",
            "\"read_file\" true"
        ]
    );
    let end = events
        .iter()
        .find(|event| event.name() == "sub_agent_end")
        .expect("a sub_agent_end event");
    assert_eq!(end.payload_value()["outcome"], "completed");
    assert_eq!(end.payload_value()["tool_calls"], 3);
    assert_eq!(end.agent.as_deref(), Some("Dev"));
}

#[test]
fn a_sub_agent_is_refused_every_write_command_and_recursion() {
    let work = project("refused");
    let replay = "\
replies:
  Dev:
    - tool_calls:
        - { name: sub_agent_explore, args: { query: Fix it yourself. } }
      text: Tried.
  Dev/sub_agent:
    - tool_calls:
        - { name: write_file, args: { path: src/calc.py, content: \"hacked\" } }
        - { name: shell_run, args: { command: \"touch pwned\" } }
        - { name: FileSystem-delete_file, args: { path: README.md } }
    - tool_calls:
        - { name: sub_agent_explore, args: { query: recurse } }
        - { name: git_commit, args: { message: sneaky } }
        - { name: launch_missiles, args: {} }
    - text: I could not change anything.
";
    let (summary, events) = run(&work, CONFIG, replay);
    let denied: Vec<String> = events
        .iter()
        .filter(|event| event.name() == "sub_agent_tool_call")
        .map(|event| {
            assert_eq!(event.payload_value()["ok"], false, "{event:?}");
            event.payload_value()["result"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(denied.len(), 3, "the cap of 3 stops the second batch");
    for reason in &denied {
        assert!(
            reason.starts_with("[DENIED: sub-agent] `")
                && reason.contains("is not among the read-only tools of agent `Dev`'s sub-agent; it may call `read_file`"),
            "{reason}"
        );
    }
    // The cap was reached: its last request offered no tools, so the second batch is no
    // call at all, and it answered nothing usable.
    let made = calls(&summary);
    assert!(!made[0].ok);
    assert!(
        result(made[0]).contains("gave no answer"),
        "{}",
        result(made[0])
    );
    assert_eq!(
        std::fs::read_to_string(work.join("src/calc.py")).unwrap(),
        "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
    );
    assert!(work.join("README.md").exists());
    assert!(!work.join("pwned").exists());
}

#[test]
fn unknown_names_recursion_and_git_writes_are_refused_under_the_cap() {
    let work = project("recursion");
    let replay = "\
replies:
  Dev:
    - tool_calls:
        - { name: sub_agent_locate, args: { target: add } }
      text: Located.
  Dev/sub_agent:
    - tool_calls:
        - { name: SubAgent-sub_agent_explore, args: { query: recurse } }
        - { name: git_commit, args: { message: sneaky } }
        - { name: launch_missiles, args: {} }
    - text: \"src/calc.py:1: def add\"
";
    let (summary, events) = run(&work, CONFIG, replay);
    let reasons: Vec<&str> = events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::SubAgentToolCall { result, .. } => result.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 3);
    assert!(reasons[0].starts_with("[DENIED: sub-agent] `SubAgent-sub_agent_explore`"));
    assert!(reasons[1].starts_with("[DENIED: sub-agent] `git_commit`"));
    assert!(reasons[2].starts_with(
        "[DENIED: unknown tool] `launch_missiles` is not a tool of agent `Dev`'s sub-agent"
    ));
    assert_eq!(
        events
            .iter()
            .filter(|event| event.name() == "sub_agent_start")
            .count(),
        1,
        "no sub-agent starts another"
    );
    let made = calls(&summary);
    assert!(made[0].ok);
    assert_eq!(result(made[0]), "src/calc.py:1: def add");
}

#[test]
fn bad_arguments_empty_replies_and_a_failing_model_are_results_not_failures() {
    let work = project("malformed");
    let replay = "\
replies:
  Dev:
    - tool_calls:
        - { name: sub_agent_locate, args: { symbol: add } }
        - { name: sub_agent_explore, args: { query: first, format: yaml } }
        - { name: sub_agent_explore, args: { query: second } }
        - { name: sub_agent_explore, args: { query: third } }
      text: Done looking.
  Dev/sub_agent:
    - text: \"\"
";
    let (summary, events) = run(&work, CONFIG, replay);
    assert_eq!(
        summary.outcome.as_str(),
        "max_turns",
        "{:?}",
        summary.reason
    );
    let made = calls(&summary);
    let results: Vec<&str> = made.iter().map(|call| result(call)).collect();
    assert_eq!(
        results[0],
        "[ERROR] tool `sub_agent_locate` needs a non-empty string argument `target`"
    );
    assert_eq!(
        results[1],
        "[ERROR] tool `sub_agent_explore`: `format` is `prose` or `file_list`, not `yaml`"
    );
    assert_eq!(
        results[2],
        "[ERROR] the sub-agent replied with neither an answer nor a tool call"
    );
    assert!(
        results[3].starts_with("[ERROR] the sub-agent failed: ")
            && results[3].contains("Dev/sub_agent"),
        "{}",
        results[3]
    );
    assert!(made.iter().all(|call| !call.ok));
    let outcomes: Vec<&str> = events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::SubAgentEnd { outcome, .. } => Some(outcome.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes, ["no_answer", "error"]);
}

#[test]
fn a_sub_agents_tokens_count_toward_the_runs_budget() {
    let work = project("budget");
    let config = CONFIG.replace("  Selection:", "  MaxTotalTokens: 500\n  Selection:");
    let replay = "\
replies:
  Dev:
    - tool_calls:
        - { name: sub_agent_explore, args: { query: Summarise the project. } }
      text: Summarised.
      usage: { input_tokens: 50, output_tokens: 5 }
  Dev/sub_agent:
    - text: A calculator with `add` and `mul` in src/calc.py.
      usage: { input_tokens: 900, output_tokens: 40 }
";
    let (summary, events) = run(&work, &config, replay);
    assert_eq!(summary.outcome.as_str(), "budget", "{:?}", summary.reason);
    assert_eq!(summary.usage.total(), 995);
    assert!(events.iter().any(|event| event.name() == "budget_exceeded"));
    // The turn is kept, with the sub-agent's answer.
    let made = calls(&summary);
    assert_eq!(
        result(made[0]),
        "A calculator with `add` and `mul` in src/calc.py."
    );
}
