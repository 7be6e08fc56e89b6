//! Compaction over long runs (issue 15): a 300-turn replay of the keyword team in
//! `fixtures/compaction/` routes exactly as the same run without compaction, its requests
//! stop growing once compaction starts, the session history keeps every message, and a
//! resumed run's requests carry the summary the checkpoint kept.

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
    let mut config = fixture("team.yaml");
    if compaction {
        config.push_str(&fixture("compaction.yaml"));
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
            .push((call.agent.clone(), text.len(), text));
        self.replay.next(call)
    }
}

struct Work(PathBuf);

impl Work {
    fn new(name: &str) -> Work {
        let dir =
            std::env::temp_dir().join(format!("fuseraft-compaction-{name}-{}", std::process::id()));
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
    requests: Vec<(String, usize, String)>,
    checkpoint: Option<Json>,
}

async fn run(program: &Program, max_turns: Option<u32>) -> Outcome {
    let work = Work::new(if program.compaction().is_some() {
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
        approvals: Approvals::All,
        pause: None,
    };
    let mut trace = Vec::new();
    let mut compactions = 0;
    let mut on_event =
        |event: &fuseraft_vm::event::Event, _: &fuseraft_vm::machine::Run| match event.name() {
            "turn_start" => trace.push(format!("turn {} {:?}", event.turn, event.agent)),
            "agent_routed" | "signal_detected" | "no_keyword" | "correction_injected" => {
                trace.push(format!("{} {}", event.name(), event.payload_json()))
            }
            "compaction" => compactions += 1,
            _ => {}
        };
    let mut checkpoint = None;
    let mut on_checkpoint = |saved: fuseraft_vm::driver::Checkpoint<'_>| {
        // What a session file stores (written without building the JSON) is that JSON.
        let mut written = Vec::new();
        saved.write_state(&[], &mut written).expect("written");
        let state = saved.state();
        let parsed: Json = serde_json::from_slice(&written).expect("valid JSON");
        assert_eq!(parsed, state);
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
        requests: models.requests.into_inner().unwrap(),
        checkpoint,
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
        .map(|message| message.content.as_str())
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
