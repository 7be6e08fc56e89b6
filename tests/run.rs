//! Run snapshots: every case under `fixtures/run/<case>/` (a config, a replay, a `case.yaml`)
//! runs through the real driver with the replay provider in a fresh work dir; the event
//! trace, the outcome and the files the run left are snapshotted.
//!
//! `case.yaml` keys: `task` (required), `input` (default `config.yaml`, relative to the case),
//! `replay` (default `replay.yaml`), `approve` (`all` | `none`, default `all`), `max_turns`,
//! `no_replan` (`true`: the program without its `REPLAN` transitions, as `--no-replan` runs it),
//! `prompts` (`true`: also snapshot what each model call is sent: the system prompt with the
//! agent's instructions elided, the message roles, the newest orchestrator message, every
//! context block and the routing tools' parameters), `messages` (a list of agents: their
//! calls also show every message after the system prompt whole, role and content), `output` (`true`: also snapshot the run's output),
//! `redirect` (text: the operator answers with `--hitl` pauses on, and the first pause, an
//! escalated failure's question, is answered with this text; later ones go on),
//! `operator` (text: the line an operator gives each tama `human` step, approving the rest),
//! `workdir` (a folder of the case copied into the work dir before the run), `git` (`true`:
//! the work dir is a real git repository whose first commit holds those files; after the
//! run, `.git/` is left out of the file list and the repository is snapshotted instead:
//! each commit's subject, author and patch, and what is left uncommitted).

use crate::common;

use std::path::Path;
use std::sync::Mutex;

use common::case_settings;
use fuseraft::disk::Disk;
use fuseraft_vm::driver::{self, Approval, Approvals, Env, Models, Pause, PauseFn, Paused};
use fuseraft_vm::effect::{ChatRole, ModelCall, ModelReply, Question};
use fuseraft_vm::machine::Options;
use fuseraft_vm::replay::Replay;

/// The files under `root`, relative, with their sizes.
fn files_under(root: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    common::walk(root, &mut paths);
    paths
        .iter()
        .map(|path| {
            let relative = path
                .strip_prefix(root)
                .unwrap_or(path)
                .to_string_lossy()
                .replace('\\', "/");
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            format!("{relative} ({size} bytes)")
        })
        .collect()
}

/// Copies the files under `from` into `to`, keeping their relative paths.
fn copy_tree(from: &Path, to: &Path) {
    let mut paths = Vec::new();
    common::walk(from, &mut paths);
    for path in paths {
        let target = to.join(path.strip_prefix(from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&path, &target).unwrap();
    }
}

/// Runs the real `git` for the harness in `dir`, with a fixed identity and date and no
/// configuration of the user's, so that the fixture's first commit is the same everywhere.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A git repository in `dir` whose first commit holds the files there.
fn git_repo(dir: &Path) {
    git(dir, &["init", "--quiet", "--initial-branch=main"]);
    git(dir, &["config", "user.name", "Fixture"]);
    git(dir, &["config", "user.email", "fixture@example.com"]);
    git(dir, &["add", "--all"]);
    git(dir, &["commit", "--quiet", "--message=Initial project"]);
}

/// The repository in `dir` as the snapshot shows it: no hash and no date, which differ
/// from run to run.
fn git_summary(dir: &Path) -> String {
    let mut out = git(
        dir,
        &["log", "--reverse", "--patch", "--format=commit: %s (%an)"],
    );
    out.push_str("uncommitted:\n");
    out.push_str(&git(
        dir,
        &["status", "--porcelain", "--untracked-files=all"],
    ));
    out.replace("\n\n", "\n")
}

/// The replay provider, reading prompts and recording their structure (`prompts: true`).
struct Recording<'a> {
    replay: &'a Replay,
    program: &'a fuseraft_compiler::ir::Program,
    calls: Mutex<Vec<String>>,
    /// The agents whose calls are shown message by message (`messages`).
    whole: Vec<String>,
}

impl Recording<'_> {
    fn describe(&self, call: &ModelCall) -> String {
        let instructions = self
            .program
            .agent_named(&call.agent.queue())
            .map(|id| self.program.agent(id).instructions.clone())
            .filter(|text| !text.is_empty());
        let roles: Vec<&str> = call
            .messages
            .iter()
            .map(|message| match message.role {
                ChatRole::System => "system",
                ChatRole::User => "user",
                ChatRole::Assistant => "assistant",
                ChatRole::Tool => "tool",
            })
            .collect();
        let mut out = format!(
            "== turn {} {}: {}\n",
            call.turn,
            call.agent,
            roles.join(", ")
        );
        if let Some(system) = call.messages.iter().find(|m| m.role == ChatRole::System) {
            let text = match &instructions {
                Some(own) => system.content.replacen(own.as_str(), "<instructions>", 1),
                None => system.content.to_string(),
            };
            out.push_str(&format!("system:\n{text}\n"));
        }
        // A call that is one user message (an `llm` manager's filled prompt): shown whole.
        if let [only] = call.messages.as_slice() {
            if only.role == ChatRole::User {
                out.push_str(&format!("prompt:\n{}\n", only.content));
            }
        }
        if let Some(last) = call.messages.last() {
            let orchestrator = last.role == ChatRole::User
                && call.messages.len() > 2
                && !last.content.starts_with('[');
            if orchestrator {
                out.push_str(&format!("newest: {}\n", last.content));
            }
        }
        // Context blocks (`HandoffContext`, an agent's `Context` sources, the session
        // context), whole.
        for message in &call.messages {
            let content = &message.content;
            if message.role == ChatRole::User
                && (content.starts_with("[Context: ") || content.starts_with("[Session Context]"))
            {
                out.push_str(&format!("context: {}\n", message.content));
            }
        }
        if self.whole.contains(&call.agent.to_string()) {
            for message in call.messages.iter().filter(|m| m.role != ChatRole::System) {
                let role = format!("{:?}", message.role).to_lowercase();
                out.push_str(&format!("| {role}: {}\n", message.content));
            }
        }
        let tools: Vec<String> = call.tools.iter().map(|tool| tool.name.clone()).collect();
        out.push_str(&format!("tools: {}\n", tools.join(", ")));
        for tool in call.tools.iter() {
            if matches!(tool.name.as_str(), "handoff" | "finish") {
                out.push_str(&format!(
                    "{}: {}\n",
                    tool.name, tool.parameters["properties"]
                ));
            }
        }
        out
    }
}

impl Models for Recording<'_> {
    async fn call(&self, call: &ModelCall) -> Result<ModelReply, String> {
        let described = self.describe(call);
        self.calls.lock().unwrap().push(described);
        self.replay.next(call)
    }
}

/// A `true` case setting (YAML `true` or the text `true`).
fn flag(settings: &serde_json::Value, name: &str) -> bool {
    settings[name].as_bool() == Some(true) || settings[name].as_str() == Some("true")
}

fn run_case(dir: &Path) -> String {
    let settings = case_settings(dir);
    let task = settings["task"]
        .as_str()
        .expect("case.yaml has a task")
        .to_string();
    let input = dir.join(settings["input"].as_str().unwrap_or("config.yaml"));
    let replay_path = dir.join(settings["replay"].as_str().unwrap_or("replay.yaml"));
    let compiled = fuseraft_compiler::compile(&input, &Disk);
    let mut program = compiled.program.unwrap_or_else(|| {
        panic!(
            "{} does not compile: {:?}",
            input.display(),
            compiled.diagnostics
        )
    });
    if flag(&settings, "no_replan") {
        assert!(
            !fuseraft_compiler::ir::drop_replan_transitions(&mut program).is_empty(),
            "`no_replan` dropped nothing"
        );
    }
    let script = fuseraft::replay_file::load(&replay_path)
        .unwrap_or_else(|error| panic!("bad replay: {}", error.1.message));

    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let sandbox = std::env::temp_dir().join(format!("fuseraft-run-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&sandbox);
    let work_dir = sandbox.join("work");
    std::fs::create_dir_all(&work_dir).unwrap();
    let work_dir = std::fs::canonicalize(&work_dir).unwrap();
    if let Some(seed) = settings["workdir"].as_str() {
        copy_tree(&dir.join(seed), &work_dir);
    }
    let repo = flag(&settings, "git");
    if repo {
        git_repo(&work_dir);
    }

    let approvals = match settings["approve"].as_str() {
        Some("none") => Approvals::None,
        _ => Approvals::All,
    };
    let options = Options {
        session_id: "0000test".to_string(),
        task,
        max_turns: settings["max_turns"].as_u64().map(|n| n as u32),
        skip_prompts: false,
    };
    let pause = settings["redirect"].as_str().map(|text| {
        let answer = Mutex::new(Some(Pause::Message(text.to_string())));
        std::sync::Arc::new(move |_: &Paused<'_>| {
            answer.lock().unwrap().take().unwrap_or(Pause::Continue)
        }) as std::sync::Arc<PauseFn>
    });
    let approvals = match (pause.is_some(), settings["operator"].as_str()) {
        // An operator at the pauses: a route question would be asked too, and refused.
        (true, _) => Approvals::Ask(std::sync::Arc::new(|_: &str, _: &str, _: &Question| {
            Approval::Refused
        })),
        // An operator who answers a tama `human` step with this line and approves the rest.
        (false, Some(line)) => {
            let line = line.to_string();
            Approvals::Ask(std::sync::Arc::new(
                move |_: &str, _: &str, question: &Question| {
                    if matches!(question, Question::Human { .. }) {
                        Approval::Redirected(line.clone())
                    } else {
                        Approval::Granted
                    }
                },
            ))
        }
        (false, None) => approvals,
    };
    let env = Env {
        pause,
        work_dir: work_dir.clone(),
        deny_read: Vec::new(),
        approvals,
    };
    let replay = Replay::new(script);
    let recording = Recording {
        replay: &replay,
        program: &program,
        calls: Mutex::new(Vec::new()),
        whole: settings["messages"]
            .as_array()
            .map(|agents| {
                agents
                    .iter()
                    .filter_map(|agent| agent.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
    };
    let mut trace = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut on_event = |event: &fuseraft_vm::event::Event, _: &fuseraft_vm::machine::Run| {
        trace.push(event.trace_line());
    };
    let summary = if flag(&settings, "prompts") {
        runtime.block_on(driver::run(
            &program,
            options,
            &recording,
            &env,
            &mut on_event,
        ))
    } else {
        runtime.block_on(driver::run(&program, options, &replay, &env, &mut on_event))
    };

    let mut out = trace.join("\n");
    out.push_str(&format!(
        "\n----- outcome: {} after {} turns ({} history messages)\n",
        summary.outcome.as_str(),
        summary.turns,
        summary.history.len()
    ));
    if let Some(reason) = &summary.reason {
        out.push_str(&format!("reason: {reason}\n"));
    }
    if let Some(shortfall) = &summary.shortfall {
        out.push_str(&format!("shortfall: {shortfall}\n"));
    }
    if flag(&settings, "output") {
        out.push_str(&format!("output: {:?}\n", summary.output));
    }
    let calls = recording.calls.into_inner().unwrap();
    if !calls.is_empty() {
        out.push_str("----- prompts\n");
        for call in calls {
            out.push_str(&call);
        }
    }
    out.push_str("----- files\n");
    for file in files_under(&sandbox) {
        if repo && file.starts_with("work/.git/") {
            continue;
        }
        out.push_str(&file);
        out.push('\n');
    }
    if repo {
        out.push_str("----- git\n");
        out.push_str(&git_summary(&work_dir));
    }
    let _ = std::fs::remove_dir_all(&sandbox);
    out.replace(&work_dir.to_string_lossy().to_string(), "<work>")
        .replace(&sandbox.to_string_lossy().to_string(), "<sandbox>")
}

#[test]
fn run_fixtures() {
    insta::glob!("../fixtures", "run/*/case.yaml", |path| {
        let dir = path.parent().expect("a case directory");
        insta::assert_snapshot!(run_case(dir));
    });
}
