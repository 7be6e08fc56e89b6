//! Compaction over long runs (issue 15): a 300-turn replay of the keyword team in
//! `fixtures/compaction/` routes exactly as the same run without compaction, in every mode
//! (`llm`, `lossless` with no model call, `hybrid`, `window`) and when triggered by the
//! model's context window; its requests stop growing once compaction starts, the session
//! history keeps every message, and a resumed run's requests carry the summary the
//! checkpoint kept.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fuseraft_compiler::ir::Program;
use fuseraft_compiler::MemoryFiles;
use fuseraft_vm::driver::{drive, Approvals, Env, Models, Summary};
use fuseraft_vm::effect::{ChatRole, ModelCall, ModelReply, Request};
use fuseraft_vm::history::Role;
use fuseraft_vm::machine::{Machine, Options};
use fuseraft_vm::replay::{Replay, Script};
use serde_json::{json, Value as Json};

const TURNS: usize = 300;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/compaction")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn program(compaction: bool) -> Program {
    program_with(compaction.then_some("compaction.yaml"), None)
}

/// The team with the `Compaction` section of `section` appended, its model given a
/// `MaxContextTokens` of `window` tokens.
fn program_with(section: Option<&str>, window: Option<u64>) -> Program {
    let mut config = fixture("team.yaml");
    if let Some(window) = window {
        config = config.replace(
            "ModelId: gpt-4o,",
            &format!("ModelId: gpt-4o, MaxContextTokens: {window},"),
        );
    }
    if let Some(section) = section {
        config.push_str(&fixture(section));
    }
    let files = MemoryFiles::new().with("team.yaml", config);
    let compiled = fuseraft_compiler::compile(Path::new("team.yaml"), &files);
    compiled
        .program
        .unwrap_or_else(|| panic!("{:?}", compiled.diagnostics))
}

/// Replies of about 1 KB: each names its agent and index, so a request shows which
/// replies it carries. The tester sends every third reply back to the planner.
fn script() -> Script {
    let pad = "The work so far is described here in some detail. ".repeat(18);
    let replies = |agent: &str, signal: &dyn Fn(usize) -> &'static str| -> Json {
        (0..TURNS)
            .map(|idx| json!({ "text": format!("{agent} reply #{idx}. {pad}\n{}", signal(idx)) }))
            .collect()
    };
    Script::from_json(json!({
        "replies": {
            "Planner": replies("Planner", &|_| "HANDOFF TO DEVELOPER"),
            "Developer": replies("Developer", &|_| "HANDOFF TO TESTER"),
            "Tester": replies("Tester", &|idx| if idx % 3 == 2 { "HANDOFF TO PLANNER" } else { "HANDOFF TO DEVELOPER" }),
            "compaction": [{
                "text": format!("Summary: the team planned, built and tested in turns. {pad}"),
                "times": 100,
                "usage": { "input_tokens": 5000, "output_tokens": 300, "cache_read_tokens": 4000 },
            }],
        },
        "on_exhausted": "error",
    }))
    .expect("a valid script")
}

/// The replay provider, made to read prompts: records each request's size as an
/// OpenAI-compatible `messages` array in JSON, and the requests' texts.
struct Measured {
    replay: Replay,
    requests: Mutex<Vec<(String, usize, String)>>,
}

impl Models for Measured {
    async fn call(&self, call: &ModelCall) -> Result<ModelReply, String> {
        let messages: Vec<Json> = call
            .messages
            .iter()
            .map(|message| {
                let role = match message.role {
                    ChatRole::System => "system",
                    ChatRole::User => "user",
                    ChatRole::Assistant => "assistant",
                    ChatRole::Tool => "tool",
                };
                json!({ "role": role, "content": message.content })
            })
            .collect();
        let text = serde_json::to_string(&messages).unwrap();
        self.requests
            .lock()
            .unwrap()
            .push((call.agent.to_string(), text.len(), text));
        self.replay.next(call)
    }
}

struct Work(PathBuf);

impl Work {
    fn new(name: &str) -> Work {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "fuseraft-compaction-{name}-{}-{run}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Work(dir)
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Outcome {
    summary: Summary,
    /// Who ran each turn and every route taken, in order.
    trace: Vec<String>,
    compactions: usize,
    /// Each compaction event's payload.
    compacted: Vec<Json>,
    /// Each compaction event's turn.
    compaction_turns: Vec<u32>,
    requests: Vec<(String, usize, String)>,
    checkpoint: Option<Json>,
    /// Each checkpoint's turn and compaction count, in order.
    checkpoints: Vec<(u64, u64)>,
}

async fn run(program: &Program, max_turns: Option<u32>) -> Outcome {
    let work = Work::new(if program.compaction.is_some() {
        "with"
    } else {
        "without"
    });
    let models = Measured {
        replay: Replay::new(script()),
        requests: Mutex::new(Vec::new()),
    };
    let machine = Machine::new(
        program,
        Options {
            session_id: "long".into(),
            task: "Build the thing, step by step.".into(),
            max_turns,
            skip_prompts: false,
        },
    );
    let env = Env {
        work_dir: work.0.clone(),
        deny_read: Vec::new(),
        approvals: Approvals::All,
        pause: None,
    };
    let mut trace = Vec::new();
    let mut compactions = 0;
    let mut compacted = Vec::new();
    let mut compaction_turns = Vec::new();
    let mut on_event =
        |event: &fuseraft_vm::event::Event, _: &fuseraft_vm::machine::Run| match event.name() {
            "turn_start" => trace.push(format!("turn {} {:?}", event.turn, event.agent)),
            "agent_routed" | "signal_detected" | "no_keyword" | "correction_injected" => {
                trace.push(format!("{} {}", event.name(), event.payload_json()))
            }
            "compaction" => {
                compactions += 1;
                compacted.push(
                    serde_json::from_str::<serde_json::Value>(&event.payload_json())
                        .expect("a payload is JSON"),
                );
                compaction_turns.push(event.turn);
            }
            _ => {}
        };
    let mut checkpoint = None;
    let mut checkpoints = Vec::new();
    let mut on_checkpoint = |saved: fuseraft_vm::driver::Checkpoint<'_>| {
        // What a session file stores (written without building the JSON) is that JSON.
        let mut written = Vec::new();
        saved
            .write_state(&serde_json::json!({}), &mut written)
            .expect("written");
        let state = saved.state();
        let parsed: Json = serde_json::from_slice(&written).expect("valid JSON");
        assert_eq!(parsed, state);
        let count = state["Machine"]["Compaction"]["Count"]
            .as_u64()
            .unwrap_or(0);
        checkpoints.push((state["Machine"]["Turn"].as_u64().unwrap_or(0), count));
        checkpoint = Some(state);
    };
    let summary = drive(
        machine,
        &models,
        &env,
        &mut on_event,
        Some(&mut on_checkpoint),
    )
    .await;
    Outcome {
        summary,
        trace,
        compactions,
        compacted,
        compaction_turns,
        requests: models.requests.into_inner().unwrap(),
        checkpoint,
        checkpoints,
    }
}

fn largest(requests: &[(String, usize, String)], turns: std::ops::Range<usize>) -> usize {
    requests
        .iter()
        .filter(|(agent, _, _)| agent != "compaction")
        .skip(turns.start)
        .take(turns.len())
        .map(|(_, bytes, _)| *bytes)
        .max()
        .unwrap_or(0)
}

#[tokio::test]
async fn a_300_turn_run_routes_the_same_with_compaction_and_its_requests_stay_bounded() {
    let plain = run(&program(false), None).await;
    let compacted = run(&program(true), None).await;

    for outcome in [&plain, &compacted] {
        assert_eq!(
            outcome.summary.turns, TURNS as u32,
            "{:?}",
            outcome.summary.reason
        );
        assert_eq!(outcome.summary.outcome.as_str(), "max_turns");
    }
    assert_eq!(plain.trace, compacted.trace, "the same turns and routes");
    assert!(plain.trace.len() > 2 * TURNS, "routes were traced");
    assert_eq!(plain.compactions, 0);
    assert!(
        compacted.compactions >= 10,
        "{} compactions",
        compacted.compactions
    );

    // Nothing a session recorded is lost: the history holds every reply, and no summary.
    let replies = |summary: &Summary| {
        summary
            .history
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .count()
    };
    assert_eq!(replies(&compacted.summary), TURNS);
    assert_eq!(compacted.summary.history.len(), plain.summary.history.len());
    assert!(compacted
        .summary
        .history
        .iter()
        .all(|message| !message.content.starts_with("Summary:")));

    // Without compaction a request grows with the run; with it, it stops growing.
    let (plain_max, compacted_max) = (
        largest(&plain.requests, 0..TURNS),
        largest(&compacted.requests, 0..TURNS),
    );
    assert!(
        plain_max > 8 * compacted_max,
        "{plain_max} vs {compacted_max}"
    );
    let early = largest(&compacted.requests, 40..140);
    let late = largest(&compacted.requests, 200..300);
    assert!(late <= early + early / 10, "late {late} vs early {early}");

    // A late request carries the summary and the newest replies, not the first ones.
    let (_, _, last) = compacted
        .requests
        .iter()
        .rev()
        .find(|(agent, _, _)| agent != "compaction")
        .unwrap();
    assert!(last.contains("Summary: the team planned"), "{last}");
    assert!(!last.contains("Developer reply #0."));
    assert!(
        last.contains("Build the thing, step by step."),
        "the task is kept"
    );
    // The summariser is shown the messages it folds in, and the summary before it.
    let summarisers: Vec<&String> = compacted
        .requests
        .iter()
        .filter(|(agent, _, _)| agent == "compaction")
        .map(|(_, _, text)| text)
        .collect();
    assert!(summarisers[0].contains("Developer reply #0."));
    assert!(summarisers[1].contains("The summary so far"));
}

#[tokio::test]
async fn a_resumed_run_keeps_the_summary_in_its_requests() {
    let program = program(true);
    let stopped = run(&program, Some(30)).await;
    assert_eq!(stopped.compactions, 1);
    let mut checkpoint = stopped.checkpoint.expect("a checkpoint");
    assert_eq!(
        checkpoint["Machine"]["Compaction"]["Summary"]["IsCompactionSummary"],
        json!(true)
    );
    checkpoint["Messages"] = Json::Array(
        stopped
            .summary
            .history
            .iter()
            .map(fuseraft_vm::checkpoint::message_json)
            .collect(),
    );
    let options = Options {
        session_id: "long".into(),
        task: "Build the thing, step by step.".into(),
        max_turns: None,
        skip_prompts: false,
    };
    let mut machine = Machine::restore(&program, options, &checkpoint).expect("restores");
    // The summariser's tokens count, its cached ones apart, and the checkpoint keeps them.
    assert_eq!(machine.run().usage.input_tokens, 5000);
    assert_eq!(machine.run().usage.cache_read_tokens, 4000);
    let Request::Model(call) = machine.step() else {
        panic!("a model call comes next");
    };
    let texts: Vec<&str> = call
        .messages
        .iter()
        .map(|message| &*message.content)
        .collect();
    assert!(
        texts
            .iter()
            .any(|text| text.contains("Summary: the team planned")),
        "{texts:?}"
    );
    assert!(!texts
        .iter()
        .any(|text| text.contains("Developer reply #0.")));

    // A checkpoint whose summary claims more messages than it stores is refused.
    checkpoint["Machine"]["Compaction"]["Through"] = json!(100_000);
    let options = Options {
        session_id: "long".into(),
        ..Options::default()
    };
    let error = Machine::restore(&program, options, &checkpoint)
        .err()
        .expect("refused");
    assert!(error.contains("Through"), "{error}");
}

/// The requests the team's agents made (not a summariser's).
fn agent_requests(outcome: &Outcome) -> impl Iterator<Item = &(String, usize, String)> {
    outcome
        .requests
        .iter()
        .filter(|(agent, _, _)| agent != "compaction")
}

/// `outcome` ran the 300 turns, routed as `plain` did, and kept every message.
fn assert_same_run(plain: &Outcome, outcome: &Outcome) {
    assert_eq!(
        outcome.summary.turns, TURNS as u32,
        "{:?}",
        outcome.summary.reason
    );
    assert_eq!(outcome.summary.outcome.as_str(), "max_turns");
    assert_eq!(plain.trace, outcome.trace, "the same turns and routes");
    assert_eq!(outcome.summary.history.len(), plain.summary.history.len());
}

#[tokio::test]
async fn a_300_turn_lossless_run_routes_the_same_with_no_model_call_and_bounded_requests() {
    let plain = run(&program(false), None).await;
    let lossless = run(&program_with(Some("lossless.yaml"), None), None).await;
    assert_same_run(&plain, &lossless);
    assert!(
        lossless.compactions >= 10,
        "{} compactions",
        lossless.compactions
    );
    assert_eq!(
        agent_requests(&lossless).count(),
        lossless.requests.len(),
        "no summariser was asked"
    );
    for payload in &lossless.compacted {
        assert_eq!(payload["mode"], "lossless");
        assert_eq!(payload["reason"], "window_size");
        assert!(payload.get("input_tokens").is_none(), "{payload}");
    }

    let (plain_max, lossless_max) = (
        largest(&plain.requests, 0..TURNS),
        largest(&lossless.requests, 0..TURNS),
    );
    let early = largest(&lossless.requests, 40..140);
    let late = largest(&lossless.requests, 200..300);
    eprintln!("request size, largest: without compaction {plain_max} bytes, lossless {lossless_max} bytes (turns 40-140: {early}, 200-300: {late})");
    assert!(
        plain_max > 8 * lossless_max,
        "{plain_max} vs {lossless_max}"
    );
    assert!(late <= early + early / 10, "late {late} vs early {early}");

    // The reconstruction stands in for the older replies: the state, the routes taken,
    // the change log (empty: no tool ran), and no reply older than the kept ones.
    let (_, _, last) = agent_requests(&lossless).last().unwrap();
    for part in [
        "[context reconstruction through turn",
        "STATE MACHINE POSITION: ",
        "ROUTING (newest last)",
        "[fuseraft: Developer → Tester]",
        "CHANGE LOG",
        "no changes recorded in this session yet",
        "Build the thing, step by step.",
    ] {
        assert!(last.contains(part), "{part} missing from {last}");
    }
    assert!(!last.contains("Developer reply #0."));
}

#[tokio::test]
async fn hybrid_puts_the_model_summary_after_the_reconstruction() {
    let plain = run(&program(false), Some(60)).await;
    let hybrid = run(&program_with(Some("hybrid.yaml"), None), Some(60)).await;
    assert_eq!(plain.trace, hybrid.trace, "the same turns and routes");
    assert!(hybrid.compactions >= 2, "{}", hybrid.compactions);
    assert_eq!(hybrid.compacted[0]["mode"], "hybrid");
    assert_eq!(hybrid.compacted[0]["input_tokens"], 5000);
    let (_, _, last) = agent_requests(&hybrid).last().unwrap();
    let reconstruction = last
        .find("[context reconstruction")
        .expect("reconstruction");
    let summary = last
        .find("Summary: the team planned")
        .expect("model summary");
    assert!(reconstruction < summary, "{last}");
}

#[tokio::test]
async fn window_mode_leaves_the_oldest_out_to_the_token_budget_without_a_summary() {
    let plain = run(&program(false), None).await;
    let window = run(&program_with(Some("window.yaml"), None), None).await;
    assert_same_run(&plain, &window);
    assert!(window.compactions >= 10, "{}", window.compactions);
    assert_eq!(agent_requests(&window).count(), window.requests.len());
    assert_eq!(window.compacted[0]["mode"], "window");
    // `TokenBudget` 4000 estimated tokens (characters / 4) of history at most, plus the
    // system prompt, the task, the pinned signal and the JSON framing.
    let max = largest(&window.requests, 0..TURNS);
    assert!(max < 4000 * 4 + 4000, "{max}");
    let (_, _, last) = agent_requests(&window).last().unwrap();
    assert!(
        !last.contains("summary of the conversation"),
        "no summary: {last}"
    );
    assert!(last.contains("Build the thing, step by step."));
}

#[tokio::test]
async fn the_model_window_triggers_compaction_before_a_request_would_fill_it() {
    // A turn-count trigger never reached; the model's `MaxContextTokens` of 8000 does it.
    let plain = run(&program_with(None, Some(8000)), None).await;
    let compacted = run(&program_with(Some("model-window.yaml"), Some(8000)), None).await;
    assert_same_run(&plain, &compacted);
    assert!(compacted.compactions >= 5, "{}", compacted.compactions);
    for payload in &compacted.compacted {
        assert_eq!(payload["reason"], "context_exceeded", "{payload}");
    }
    // Every request stays under the window (3 bytes a token, as the providers count).
    let max = largest(&compacted.requests, 0..TURNS);
    assert!(max < 8000 * 3, "{max}");
    assert!(largest(&plain.requests, 0..TURNS) > 8000 * 3 * 8);
}

#[tokio::test]
async fn the_anti_thrash_guard_stops_compactions_that_save_too_little() {
    let guarded = run(&program_with(Some("anti-thrash.yaml"), None), Some(40)).await;
    // Each compaction folds about two messages of a dozen (under 0.5): after three in a
    // row, compaction by turn count stops.
    assert_eq!(guarded.compactions, 3, "{:?}", guarded.compacted);
    let checkpoint = guarded.checkpoint.expect("a checkpoint");
    let savings = checkpoint["Machine"]["Compaction"]["RecentSavings"]
        .as_array()
        .expect("kept in the checkpoint")
        .clone();
    assert_eq!(savings.len(), 3);
    // In basis points (hundredths of a percent).
    assert!(savings.iter().all(|ratio| ratio.as_u64().unwrap() < 5000));
}

#[tokio::test]
async fn intent_lists_the_compacted_operations_with_no_model_call() {
    let plain = run(&program(false), Some(60)).await;
    let intent = run(&program_with(Some("intent.yaml"), None), Some(60)).await;
    assert_eq!(plain.trace, intent.trace, "the same turns and routes");
    assert!(intent.compactions >= 2, "{}", intent.compactions);
    assert_eq!(agent_requests(&intent).count(), intent.requests.len());
    assert_eq!(intent.compacted[0]["mode"], "intent");
    let (_, _, last) = agent_requests(&intent).last().unwrap();
    assert!(last.contains("OPERATIONS (chronological)"), "{last}");
    assert!(last.contains("(no tool calls in these turns)"), "{last}");
    assert!(!last.contains("Developer reply #0."));
}

#[tokio::test]
async fn every_compaction_is_checkpointed_before_and_after() {
    let outcome = run(&program_with(Some("lossless.yaml"), None), Some(60)).await;
    assert!(outcome.compactions >= 2, "{}", outcome.compactions);
    // Before: the turn that made the compaction due was checkpointed with the old count;
    // after: a checkpoint at the same turn holds the new one.
    for count in 1..=outcome.compactions as u64 {
        let after = outcome
            .checkpoints
            .iter()
            .position(|(_, saved)| *saved == count)
            .unwrap_or_else(|| {
                panic!(
                    "compaction {count} was not checkpointed: {:?}",
                    outcome.checkpoints
                )
            });
        let (turn, _) = outcome.checkpoints[after];
        assert_eq!(
            outcome.checkpoints[after - 1],
            (turn, count - 1),
            "{:?}",
            outcome.checkpoints
        );
    }
}

#[tokio::test]
async fn a_kept_tail_larger_than_the_window_does_not_compact_every_turn() {
    // The 40 kept messages alone are over 80% of the 8000-token window: each compaction
    // leaves the request too large, and upstream's grace skips the turn right after one.
    let plain = run(&program_with(None, Some(8000)), Some(60)).await;
    let tail = run(
        &program_with(Some("model-window-large-tail.yaml"), Some(8000)),
        Some(60),
    )
    .await;
    assert_eq!(plain.trace, tail.trace, "the same turns and routes");
    assert!(tail.compactions >= 3, "{:?}", tail.compaction_turns);
    for pair in tail.compaction_turns.windows(2) {
        assert!(pair[1] >= pair[0] + 2, "{:?}", tail.compaction_turns);
    }
}
