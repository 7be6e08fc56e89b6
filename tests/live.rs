//! The live tier: real workflows (`fixtures/live/<case>/`: `config.yaml` and `case.yaml`)
//! run by the real `fuseraft exec` against a real local model, SmolLM2 served by llama.cpp's
//! OpenAI-compatible server on loopback (`.ci/live-deps.sh` installs both; without them
//! every test here fails, naming the script). A recording proxy between the two keeps every
//! request, so a test sees what reached the server as well as how the run ended.
//! Deterministic: temperature 0 in every config and a fixed server seed.
#![cfg(feature = "live-tests")]

mod common;
#[path = "live/eval.rs"]
mod eval;
#[path = "live/proxy.rs"]
mod proxy;
#[path = "live/server.rs"]
mod server;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};

/// The longest a run may take: a run that does not end is a fuseraft bug the tier reports.
const RUN_WITHIN: Duration = Duration::from_secs(600);

/// One run of a case: how `exec` ended, its events and the requests the server saw.
struct Run {
    case: Json,
    exit: Option<i32>,
    summary: Json,
    events: Vec<Json>,
    requests: Vec<Json>,
    stderr: String,
}

impl Run {
    /// What to show when an assertion about the run fails.
    fn story(&self) -> String {
        let events: Vec<String> = self.events.iter().map(Json::to_string).collect();
        format!(
            "exit {:?}\nsummary: {}\nstderr:\n{}\nevents:\n{}\nthe server's log: {}",
            self.exit,
            self.summary,
            self.stderr,
            events.join("\n"),
            server().log.display()
        )
    }

    fn events_of(&self, event_type: &str) -> Vec<&Json> {
        self.events
            .iter()
            .filter(|event| event["event_type"] == event_type)
            .collect()
    }

    /// The agents of the run's turns, a run of turns by one agent counted once.
    fn agents(&self) -> Vec<String> {
        let mut agents: Vec<String> = Vec::new();
        for event in self.events_of("turn_start") {
            let agent = event["agent"].as_str().unwrap_or_default().to_string();
            if agents.last() != Some(&agent) {
                agents.push(agent);
            }
        }
        agents
    }
}

fn server() -> &'static server::Server {
    static SERVER: OnceLock<server::Server> = OnceLock::new();
    SERVER.get_or_init(server::Server::start)
}

fn case_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/live")
        .join(name)
}

/// The runs made so far, by case. Its lock is the server's turn: whoever holds it runs
/// against the server alone (`live/eval.rs` takes it too).
static RUNS: Mutex<BTreeMap<String, Arc<Run>>> = Mutex::new(BTreeMap::new());

/// The run of case `name`, made once per test binary: the server answers one request at
/// a time, so runs go one after another and tests that look at the same run share it.
fn run(name: &str) -> Arc<Run> {
    let mut runs = RUNS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(run) = runs.get(name) {
        return Arc::clone(run);
    }
    let run = Arc::new(execute(name));
    runs.insert(name.to_string(), Arc::clone(&run));
    run
}

fn execute(name: &str) -> Run {
    let dir = case_dir(name);
    let case = common::case_settings(&dir);
    let proxy = proxy::Proxy::start(server().port);
    let scratch = std::env::temp_dir().join(format!("fuseraft-live-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let work = scratch.join("work");
    std::fs::create_dir_all(&work).expect("a scratch work dir");
    let events = scratch.join("events.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("exec")
        .arg(dir.join("config.yaml"))
        .args([
            "--task",
            case["task"].as_str().expect("case.yaml has a task"),
        ])
        .args(["--endpoint", &format!("http://127.0.0.1:{}/v1", proxy.port)])
        .args(["--model", "openai:smollm2"])
        .arg("--work-dir")
        .arg(&work)
        .arg("--events")
        .arg(&events)
        // A request waits while the single-slot server answers another test's run.
        .args([
            "--idle-timeout",
            "300",
            "--ephemeral",
            "--json",
            "--approve",
            "none",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fuseraft starts");
    let started = Instant::now();
    while child
        .try_wait()
        .expect("the run can be waited on")
        .is_none()
    {
        if started.elapsed() > RUN_WITHIN {
            let _ = child.kill();
            let output = child.wait_with_output().expect("the killed run's output");
            panic!(
                "`{name}` did not end within {RUN_WITHIN:?}; stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().expect("the run's output");
    eprintln!("live: `{name}` ran in {:.1?}", started.elapsed());
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let summary = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!("`{name}`: `--json` printed no JSON ({error}):\n{stdout}\nstderr:\n{stderr}")
    });
    let events = std::fs::read_to_string(&events)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("an event line is JSON"))
        .collect();
    let _ = std::fs::remove_dir_all(&scratch);
    Run {
        case,
        exit: output.status.code(),
        summary,
        events,
        requests: proxy.bodies(),
        stderr,
    }
}

fn strings(value: &Json) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The outcome, exit code and agents `case.yaml` expects; for a stuck run, a reason that
/// names the missing signals and at most `max_corrections` corrections before the stop.
fn assert_ends_as_its_case_says(run: &Run) {
    let story = run.story();
    let case = &run.case;
    assert_eq!(run.summary["outcome"], case["outcome"], "{story}");
    assert_eq!(
        run.exit,
        case["exit"].as_i64().map(|code| code as i32),
        "{story}"
    );
    assert_eq!(run.agents(), strings(&case["agents"]), "{story}");
    if case["outcome"] == "stuck" {
        let reason = run.summary["error_message"].as_str().unwrap_or_default();
        for signal in strings(&case["reason_names"]) {
            assert!(
                reason.contains(&signal),
                "the reason names `{signal}`: {story}"
            );
        }
        let corrections = run.events_of("correction_injected").len();
        let most = case["max_corrections"].as_u64().expect("max_corrections") as usize;
        assert!(corrections <= most, "{corrections} corrections: {story}");
        assert!(
            !run.events_of("keyword_not_found").is_empty(),
            "the stop follows replies without a signal: {story}"
        );
    }
}

/// Every request demanded `handoff` by name (the one tool offered, the form llama.cpp
/// honours), and each agent routed by its call, with one of its own signals, in the order
/// `handoffs` lists.
fn assert_routes_by_handoff(run: &Run) {
    let story = run.story();
    let wanted = run.case["tool_choice"].as_str().expect("tool_choice");
    for request in &run.requests {
        assert_eq!(
            request["tool_choice"],
            json!({"type": "function", "function": {"name": wanted}}),
            "{story}"
        );
    }
    let signals: Vec<String> = run
        .events_of("signal_detected")
        .iter()
        .map(|event| {
            assert_eq!(event["payload"]["via"], "handoff", "{story}");
            format!(
                "{}: {}",
                event["agent"].as_str().unwrap_or_default(),
                event["payload"]["signal"].as_str().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(signals, strings(&run.case["handoffs"]), "{story}");
}

#[test]
fn agents_with_required_handoff_complete_through_both_agents() {
    let run = run("handoff");
    assert_ends_as_its_case_says(&run);
    assert_routes_by_handoff(&run);
}

#[test]
fn a_state_machine_routed_by_required_handoff_reaches_its_terminal_state() {
    let run = run("statemachine-handoff");
    assert_ends_as_its_case_says(&run);
    assert_routes_by_handoff(&run);
}

#[test]
fn a_required_tool_is_called_once_a_turn_then_the_agent_answers() {
    let run = run("required-tool");
    assert_ends_as_its_case_says(&run);
    let story = run.story();
    let calls = run.case["tool_calls_per_turn"]
        .as_u64()
        .expect("tool_calls_per_turn");
    let turns = run.events_of("turn_end");
    assert!(!turns.is_empty(), "{story}");
    for turn in turns {
        assert_eq!(turn["payload"]["tool_calls"], json!(calls), "{story}");
    }
    // A turn's first request demands the tool by name; the one after its result says
    // `none`, and the model answers.
    let wanted = run.case["tool_choice"].as_str().expect("tool_choice");
    for request in &run.requests {
        let after_tools = request["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .is_some_and(|last| last["role"] == "tool");
        let expected = if after_tools {
            json!("none")
        } else {
            json!({"type": "function", "function": {"name": wanted}})
        };
        assert_eq!(request["tool_choice"], expected, "{story}");
    }
    let output = run.summary["output"].as_str().unwrap_or_default();
    assert!(!output.trim().is_empty(), "the last turn answered: {story}");
}

#[test]
fn required_over_two_tools_completes_or_names_tool_choice() {
    let run = run("required-tools");
    assert_ends_as_its_case_says(&run);
    let story = run.story();
    let first = run.requests.first().expect("a request");
    assert_eq!(first["tool_choice"], json!("required"), "{story}");
    assert_eq!(first["tools"].as_array().map(Vec::len), Some(2), "{story}");
    if run.case["outcome"] == "error" {
        let reason = run.summary["error_message"].as_str().unwrap_or_default();
        for name in strings(&run.case["error_names"]) {
            assert!(reason.contains(&name), "the error names {name}: {story}");
        }
        // Streamed, then once unstreamed; retrying a request the server failed both ways
        // would only repeat it.
        assert_eq!(run.requests.len(), 2, "{story}");
        assert_eq!(run.requests[1]["stream"], json!(false), "{story}");
    }
}

#[test]
fn a_keyword_agent_that_only_chats_stops_stuck() {
    assert_ends_as_its_case_says(&run("keyword-chat"));
}

#[test]
fn a_state_machine_agent_that_never_signals_stops_stuck() {
    assert_ends_as_its_case_says(&run("statemachine-silent"));
}

#[test]
fn every_runs_first_request_carries_the_routing_block() {
    let mut cases: Vec<String> = std::fs::read_dir(case_dir(""))
        .expect("fixtures/live")
        .flatten()
        .filter(|entry| entry.path().join("case.yaml").exists())
        .map(|entry| entry.file_name().to_string_lossy().to_string())
        .collect();
    cases.sort();
    assert!(cases.len() >= 5, "{cases:?}");
    for name in cases {
        let run = run(&name);
        let story = run.story();
        let first = run
            .requests
            .first()
            .unwrap_or_else(|| panic!("`{name}` made no request: {story}"));
        // Reproducible: greedy sampling.
        assert_eq!(first["temperature"], json!(0.0), "`{name}`: {first}");
        let system = first["messages"][0]["content"].as_str().unwrap_or_default();
        assert!(
            run.case["routing"].is_array(),
            "`{name}`: case.yaml lists `routing`"
        );
        let signals = strings(&run.case["routing"]);
        if signals.is_empty() {
            // Turn-taking: nothing to emit, no block.
            assert!(!system.contains("## Routing"), "`{name}`: {system}");
            continue;
        }
        assert_eq!(first["messages"][0]["role"], "system", "`{name}`: {first}");
        assert!(system.contains("## Routing\n"), "`{name}`: {system}");
        for signal in signals {
            assert!(
                system.contains(&format!("\n{signal}\n")),
                "`{name}`: `{signal}` alone on its line in\n{system}"
            );
        }
    }
}
