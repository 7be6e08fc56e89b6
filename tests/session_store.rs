//! The session store (`src/session/`) end to end: a long reply is kept whole in the session
//! log and bounded in memory (issue 7), a torn or damaged end of the log resumes from the
//! checkpoint before it, and a full disk costs the run one warning and nothing else.
//!
//! Kills at any moment are `tests/kill.rs`; an unwritable store is `tests/regressions.rs`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use common::case_settings;
use fuseraft::disk::Disk;
use fuseraft_compiler::ir::Program;
use fuseraft_vm::checkpoint::message_json;
use fuseraft_vm::driver::{self, Approvals, Checkpoint, Env, Models};
use fuseraft_vm::effect::{ModelCall, ModelReply};
use fuseraft_vm::event::Outcome;
use fuseraft_vm::history::Role;
use fuseraft_vm::machine::{Machine, Options, MAX_MESSAGE_CHARS};
use serde_json::{json, Value as Json};

const MARKER: &str = "characters omitted here; the full message is in the session file";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn fuseraft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the fuseraft binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

const CONFIG: &str = "fixtures/run/keyword/config.yaml";
const REPLAY: &str = "fixtures/run/keyword/replay.yaml";

/// `fuseraft exec` of the keyword fixture (or `replay`) in `work`, with `extra` arguments.
fn exec(work: &Path, replay: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "exec",
        CONFIG,
        "--replay",
        replay,
        "--work-dir",
        work.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    fuseraft(&args)
}

/// The id of the only session in `work`.
fn session_id(work: &Path) -> String {
    let ids: Vec<String> = std::fs::read_dir(work.join(".fuseraft/sessions"))
        .expect("a session directory")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().to_string_lossy().to_string();
            let id = name.strip_suffix(".json")?;
            (!id.starts_with('.')).then(|| id.to_string())
        })
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

fn log_path(work: &Path, id: &str) -> PathBuf {
    work.join(format!(".fuseraft/sessions/{id}.messages.jsonl"))
}

/// The session as `fuseraft sessions show` loads it.
fn show(work: &Path, id: &str) -> Json {
    let output = fuseraft(&["sessions", "show", id, "--work-dir", work.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).expect("sessions show prints JSON")
}

/// The history as (agent, content) pairs.
fn history(session: &Json) -> Vec<(String, String)> {
    session["Messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|message| {
            (
                message["AgentName"].as_str().unwrap().to_string(),
                message["Content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The history of an uninterrupted run of the keyword fixture.
fn straight_history() -> Vec<(String, String)> {
    let work = scratch("straight");
    let output = exec(&work, REPLAY, &["--task", "Add a flag."]);
    assert!(output.status.success(), "{}", stderr(&output));
    let session = show(&work, &session_id(&work));
    let _ = std::fs::remove_dir_all(&work);
    history(&session)
}

/// Resumes the session in `work`, which completes after `turns` turns in all; returns it.
fn resume_to_the_end(work: &Path, replay: &str, turns: u64) -> Json {
    let id = session_id(work);
    let output = exec(work, replay, &["--resume", &id]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let session = show(work, &id);
    assert_eq!(session["Machine"]["Outcome"], "completed");
    assert_eq!(session["Machine"]["Turn"], turns);
    session
}

// ---------------------------------------------------------------------------------------------
// A megabyte reply (issue 7): whole in the session log, bounded in the history and prompts.

/// About a megabyte whose routing signal sits in the middle: only the whole reply has it.
fn megabyte_reply() -> String {
    format!(
        "Plan:\n{}\nHANDOFF TO DEVELOPER\n{}\nend of plan",
        "x".repeat(500_000),
        "y".repeat(500_000)
    )
}

/// A model that reads prompts, answering each agent from a script and keeping every call.
struct Scripted {
    replies: Mutex<Vec<(&'static str, String)>>,
    calls: Mutex<Vec<ModelCall>>,
}

impl Scripted {
    fn new(replies: Vec<(&'static str, String)>) -> Scripted {
        Scripted {
            replies: Mutex::new(replies),
            calls: Mutex::new(Vec::new()),
        }
    }
}

impl Models for Scripted {
    async fn call(&self, call: &ModelCall) -> Result<ModelReply, String> {
        self.calls.lock().unwrap().push(call.clone());
        let mut replies = self.replies.lock().unwrap();
        let position = replies
            .iter()
            .position(|(agent, _)| *agent == call.agent.queue())
            .ok_or_else(|| format!("no reply left for {}", call.agent))?;
        let (_, text) = replies.remove(position);
        Ok(ModelReply {
            text,
            ..ModelReply::default()
        })
    }
}

fn keyword_program() -> Program {
    fuseraft_compiler::compile(&root().join(CONFIG), &Disk)
        .program
        .expect("the keyword fixture compiles")
}

fn options() -> Options {
    Options {
        session_id: "0000beef".to_string(),
        task: "Add a flag.".to_string(),
        max_turns: None,
        skip_prompts: false,
    }
}

fn assert_bounded(text: &str) {
    assert!(
        text.chars().count() <= MAX_MESSAGE_CHARS,
        "{} characters",
        text.chars().count()
    );
}

#[test]
fn a_megabyte_reply_is_routed_whole_stored_whole_and_kept_bounded() {
    let program = keyword_program();
    let work = scratch("bounded");
    let env = Env {
        pause: None,
        work_dir: std::fs::canonicalize(&work).unwrap(),
        deny_read: Vec::new(),
        approvals: Approvals::All,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let big = megabyte_reply();
    let models = Scripted::new(vec![
        ("Planner", big.clone()),
        (
            "Developer",
            "Added the flag.\nHANDOFF TO REVIEWER".to_string(),
        ),
        ("Reviewer", "Looks good.\nAPPROVED".to_string()),
    ]);
    // What a session store receives: every checkpoint's state and messages.
    let mut checkpoints: Vec<(Json, Vec<Json>)> = Vec::new();
    let mut sink = |checkpoint: Checkpoint<'_>| {
        let messages = checkpoint.new_messages.iter().map(message_json).collect();
        checkpoints.push((checkpoint.state(), messages));
    };
    let summary = runtime.block_on(driver::drive(
        Machine::new(&program, options()),
        &models,
        &env,
        &mut |_, _| {},
        Some(&mut sink),
    ));
    // Routing read the whole reply: its signal is in the part the history drops.
    assert_eq!(summary.outcome, Outcome::Completed, "{:?}", summary.reason);
    let calls = models.calls.lock().unwrap();
    let agents: Vec<String> = calls.iter().map(|call| call.agent.to_string()).collect();
    assert_eq!(agents, ["Planner", "Developer", "Reviewer"]);
    // The prompts after it carry its head and tail around the marker.
    for call in &calls[1..] {
        for message in &call.messages {
            assert_bounded(&message.content);
        }
        let planner = call
            .messages
            .iter()
            .find(|message| message.content.contains("Plan:"))
            .expect("the plan is in the prompt");
        assert!(planner.content.contains(MARKER), "{}", planner.content);
        assert!(planner.content.contains("end of plan"));
    }
    // The history keeps the head and tail; the store received the whole reply.
    let kept = summary
        .history
        .iter()
        .find(|message| message.role == Role::Assistant && message.agent == "Planner")
        .expect("the plan is in the history");
    assert_bounded(&kept.content);
    assert!(kept.content.contains(MARKER));
    assert!(kept.content.starts_with("Plan:\nxxx") && kept.content.ends_with("yyy\nend of plan"));
    let stored: Vec<Json> = checkpoints
        .iter()
        .flat_map(|(_, messages)| messages.clone())
        .collect();
    assert_eq!(stored.len(), summary.history.len());
    assert_eq!(stored[1]["AgentName"], "Planner");
    assert_eq!(stored[1]["Content"].as_str(), Some(big.as_str()));

    // Resumed after the Planner's turn from what was stored: the history is bounded again
    // and the run goes on.
    let (after_plan, _) = checkpoints
        .iter()
        .find(|(state, _)| state["Machine"]["Turn"] == 1)
        .expect("a checkpoint after the first turn");
    let mut saved = after_plan.clone();
    let count = saved["MessageCount"].as_u64().unwrap() as usize;
    saved["Messages"] = Json::Array(stored[..count].to_vec());
    let models = Scripted::new(vec![
        (
            "Developer",
            "Added the flag.\nHANDOFF TO REVIEWER".to_string(),
        ),
        ("Reviewer", "Looks good.\nAPPROVED".to_string()),
    ]);
    let machine = driver::restore(&program, options(), &models, &saved).expect("restores");
    for message in &machine.run().history {
        assert_bounded(&message.content);
    }
    let summary = runtime.block_on(driver::drive(machine, &models, &env, &mut |_, _| {}, None));
    assert_eq!(summary.outcome, Outcome::Completed, "{:?}", summary.reason);
    assert_eq!(summary.turns, 3);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn a_megabyte_reply_is_whole_in_the_session_file_and_the_session_resumes() {
    let work = scratch("megabyte");
    let big = megabyte_reply();
    let replay = work.join("replay.json");
    let script = json!({"replies": {
        "Planner": [{"text": big}],
        "Developer": [{"text": "Added the flag.\nHANDOFF TO REVIEWER"}],
        "Reviewer": [{"text": "Looks good.\nAPPROVED"}],
    }});
    std::fs::write(&replay, script.to_string()).unwrap();
    let replay = replay.to_str().unwrap();
    let output = exec(
        &work,
        replay,
        &["--task", "Add a flag.", "--max-turns", "1"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = session_id(&work);
    // The log line of the reply holds all of it.
    let log = std::fs::read_to_string(log_path(&work, &id)).unwrap();
    let line = log
        .lines()
        .find(|line| line.contains("\"AgentName\":\"Planner\""))
        .expect("the reply's line");
    let message: Json = serde_json::from_str(line).unwrap();
    assert_eq!(message["Content"].as_str(), Some(big.as_str()));
    // The resumed run restores it bounded and continues where it stopped.
    let session = resume_to_the_end(&work, replay, 3);
    let (agent, content) = &history(&session)[1];
    assert_eq!(
        (agent.as_str(), content.as_str()),
        ("Planner", big.as_str())
    );
    let _ = std::fs::remove_dir_all(&work);
}

// ---------------------------------------------------------------------------------------------
// The checkpoint a turn writes is serialized without building JSON; it must be the JSON.

#[test]
fn written_checkpoints_are_their_json_byte_for_byte_and_restore_to_themselves() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/run"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("case.yaml").exists())
        .collect();
    cases.sort();
    assert!(cases.len() > 10, "{cases:?}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config_path = json!("/some/config \"quoted\".yaml");
    let updated_at = json!("2026-01-01T00:00:00.000Z");
    let extra = serde_json::json!({"ConfigPath": config_path, "LastUpdatedAt": updated_at});
    for case in cases {
        let settings = case_settings(&case);
        let input = case.join(settings["input"].as_str().unwrap_or("config.yaml"));
        let replay = case.join(settings["replay"].as_str().unwrap_or("replay.yaml"));
        let program = fuseraft_compiler::compile(&input, &Disk)
            .program
            .expect("the case compiles");
        let replay = fuseraft_vm::replay::Replay::new(
            fuseraft::replay_file::load(&replay)
                .unwrap_or_else(|error| panic!("{}", error.1.message)),
        );
        let work = scratch("written");
        let env = Env {
            pause: None,
            work_dir: std::fs::canonicalize(&work).unwrap(),
            deny_read: Vec::new(),
            approvals: match settings["approve"].as_str() {
                Some("none") => Approvals::None,
                _ => Approvals::All,
            },
        };
        let options = Options {
            session_id: "0000cafe".to_string(),
            task: settings["task"].as_str().unwrap().to_string(),
            max_turns: settings["max_turns"].as_u64().map(|n| n as u32),
            skip_prompts: false,
        };
        let mut checkpoints = 0;
        // Every message so far, whole, as the log holds them.
        let mut logged: Vec<Json> = Vec::new();
        let restore_options = options.clone();
        let mut sink = |checkpoint: Checkpoint<'_>| {
            // Restoring the checkpoint and taking it again gives the same state (the run's
            // value included, which a checkpoint stores once when it is the newest reply).
            logged.extend(checkpoint.new_messages.iter().map(message_json));
            let mut whole = checkpoint.state();
            whole["Messages"] = Json::Array(logged.clone());
            // Mid-run checkpoints: a completed session refuses to resume, and one that
            // stopped otherwise resumes with its outcome cleared.
            if whole["Machine"]["Outcome"].is_null() {
                let restored = Machine::restore(
                    &program,
                    driver::options_for(restore_options.clone(), &replay),
                    &whole,
                )
                .unwrap_or_else(|error| panic!("{}: {error}", case.display()));
                let mut again = restored.checkpoint_state().expect("restored at a boundary");
                again["Provider"] = whole["Provider"].clone();
                assert_eq!(again, checkpoint.state(), "{}", case.display());
            }
            let mut expected = checkpoint.state();
            for (name, value) in extra.as_object().unwrap() {
                expected[name] = value.clone();
            }
            let mut written = Vec::new();
            checkpoint.write_state(&extra, &mut written).unwrap();
            assert_eq!(
                String::from_utf8(written).unwrap(),
                expected.to_string(),
                "{}",
                case.display()
            );
            let mut written = Vec::new();
            checkpoint.write_messages(&mut written).unwrap();
            let expected: String = checkpoint
                .new_messages
                .iter()
                .map(|message| format!("{}\n", message_json(message)))
                .collect();
            assert_eq!(
                String::from_utf8(written).unwrap(),
                expected,
                "{}",
                case.display()
            );
            checkpoints += 1;
        };
        let machine = Machine::new(&program, driver::options_for(options, &replay));
        runtime.block_on(driver::drive(
            machine,
            &replay,
            &env,
            &mut |_, _| {},
            Some(&mut sink),
        ));
        assert!(checkpoints >= 2, "{}", case.display());
        let _ = std::fs::remove_dir_all(&work);
    }
}

// ---------------------------------------------------------------------------------------------
// The end of the log torn by a crash or damaged.

#[test]
fn a_torn_or_damaged_end_of_the_log_resumes_from_the_checkpoint_before_it() {
    let expected = straight_history();
    type Damage = fn(&mut Vec<u8>);
    let damages: [(&str, Damage); 4] = [
        // A kill in the middle of the last checkpoint's write.
        ("torn state record", |log| {
            log.truncate(log.len() - 40);
        }),
        // A kill in the middle of the last turn's messages.
        ("torn message", |log| {
            let lines: Vec<usize> = log
                .iter()
                .enumerate()
                .filter(|(_, byte)| **byte == b'\n')
                .map(|(at, _)| at)
                .collect();
            let cut = lines[lines.len() - 3] + 20;
            log.truncate(cut);
        }),
        ("a line that is not JSON", |log| {
            log.extend_from_slice(b"{\"AgentName\": \"Plan\n");
        }),
        ("bytes that are not UTF-8", |log| {
            log.extend_from_slice(b"{\"AgentName\":\"\xff\xfe");
        }),
    ];
    for (what, damage) in damages {
        let work = scratch("torn");
        let output = exec(
            &work,
            REPLAY,
            &["--task", "Add a flag.", "--max-turns", "3"],
        );
        assert!(output.status.success(), "{what}: {}", stderr(&output));
        let id = session_id(&work);
        let path = log_path(&work, &id);
        let mut log = std::fs::read(&path).unwrap();
        damage(&mut log);
        std::fs::write(&path, &log).unwrap();
        let session = show(&work, &id);
        let turn = session["Machine"]["Turn"].as_u64().unwrap();
        assert!((2..=3).contains(&turn), "{what}: resumes at turn {turn}");
        let session = resume_to_the_end(&work, REPLAY, 5);
        assert_eq!(history(&session), expected, "{what}");
        let _ = std::fs::remove_dir_all(&work);
    }
}

// ---------------------------------------------------------------------------------------------
// A full disk (docs/reliability.md, "The world around the run").

/// `fuseraft exec` under a file-size limit of `blocks` (512 bytes each under dash, 1024 under
/// bash): a write past it fails with EFBIG, as on a full disk (SIGXFSZ is ignored).
#[cfg(unix)]
fn exec_with_file_limit(work: &Path, blocks: u32) -> Output {
    let script = format!(
        "trap '' XFSZ; ulimit -f {blocks} && exec \"$0\" exec {CONFIG} --replay {REPLAY} --work-dir \"$1\" --task 'Add a flag.' --json"
    );
    Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_fuseraft")])
        .arg(work)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("sh runs")
}

#[cfg(unix)]
#[test]
fn a_full_disk_for_the_session_store_warns_once_and_the_run_finishes() {
    let expected = straight_history();
    // Full partway: the checkpoints that fit are kept and the session resumes from them.
    let work = scratch("full");
    let output = exec_with_file_limit(&work, 4);
    let stderr = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr
            .matches("cannot write the session checkpoint")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("File too large"), "{stderr}");
    assert!(
        stderr.contains("`--resume` continues from the last turn saved"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let summary: Json = serde_json::from_slice(&output.stdout).expect("one JSON summary");
    assert_eq!(summary["outcome"], "completed");
    assert_eq!(summary["turns"], 5);
    let id = session_id(&work);
    let saved = show(&work, &id);
    assert_ne!(
        saved["Machine"]["Outcome"], "completed",
        "the end did not fit"
    );
    let session = resume_to_the_end(&work, REPLAY, 5);
    assert_eq!(history(&session), expected);
    let _ = std::fs::remove_dir_all(&work);

    // Full from the start: nothing is saved, not even an empty log.
    let work = scratch("full-at-once");
    let output = exec_with_file_limit(&work, 1);
    let stderr = self::stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr
            .matches("cannot write the session checkpoint")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("it cannot be resumed"), "{stderr}");
    let summary: Json = serde_json::from_slice(&output.stdout).expect("one JSON summary");
    assert_eq!(summary["outcome"], "completed");
    let left: Vec<_> = std::fs::read_dir(work.join(".fuseraft/sessions"))
        .map(|entries| entries.flatten().map(|entry| entry.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&work);
}
