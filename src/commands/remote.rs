//! Runs kept by a Restate server: `exec --on URL` compiles here, submits the program (its IR
//! text), the task and the model options, then follows the session's events until it ends
//! (`--detach` returns its id at once); `fuseraft approve` answers the question a session
//! waits on. Exit codes are `exec`'s: the run's outcome, 2 for a usage error or a server
//! that cannot be reached.

use std::path::Path;
use std::time::Duration;

use fuseraft_compiler::ir;
use fuseraft_vm::event::Outcome;

use super::streamed::StreamView;
use super::{exit, usage};
use crate::cli::{Approve, ApproveArgs, ExecArgs};
use crate::render::Style;
use crate::serve::client;
use crate::serve::job::{Answer, Job, Replayed, Waiting};
use crate::terminal::neutralise;

fn runtime() -> Result<tokio::runtime::Runtime, u8> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| usage(&format!("cannot start a runtime: {error}")))
}

/// The `exec` flags a run on a server does not take yet, by their spelling.
fn unsupported(args: &ExecArgs) -> Option<&'static str> {
    [
        (args.resume.is_some(), "--resume"),
        (args.ui.is_some(), "--ui"),
        (args.hitl, "--hitl"),
        (args.ci, "--ci"),
        (args.output.is_some(), "--output"),
        (args.snapshot, "--snapshot"),
        (args.otlp.is_some(), "--otlp"),
        (!args.deny_read.is_empty(), "--deny-read"),
        (args.trust_mcp, "--trust-mcp"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

/// `exec --on URL`.
pub fn exec_on(args: &ExecArgs, on: &str, style: Style) -> u8 {
    let job = match submission(args, style) {
        Ok(job) => job,
        Err(code) => return code,
    };
    let session = crate::session::new_id();
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    if let Err(refused) = runtime.block_on(client::submit(on, &session, &job)) {
        return usage(&format!("the run was not submitted: {refused}"));
    }
    if args.detach {
        println!("{session}");
        return exit::OK;
    }
    eprintln!("session {session} runs on {on}");
    runtime.block_on(follow(on, &session, args))
}

/// The run `args` describe, as a server takes it: compiled and checked here, its IR text,
/// task, work dir, replay file and model options.
pub(crate) fn submission(args: &ExecArgs, style: Style) -> Result<Job, u8> {
    if let Some(flag) = unsupported(args) {
        return Err(usage(&format!(
            "`{flag}` is not available with `--on` (the run is kept by the server)"
        )));
    }
    let Some(task) = args.task.clone() else {
        return Err(usage(
            "`--task TEXT` is required: it is what the first agent is asked to do",
        ));
    };
    let program = super::exec::compiled_for_server(args, style)?;
    let text = ir::print(&program, &ir::PrintOptions::default());
    if ir::parse(&text).is_err() {
        return Err(usage(
            "this workflow's IR does not read back, so it cannot be sent to a server",
        ));
    }
    let work_dir = args.work_dir.clone().unwrap_or_else(|| ".".into());
    let work_dir = match std::fs::canonicalize(&work_dir) {
        Ok(dir) if dir.is_dir() => dir,
        _ => {
            return Err(usage(&format!(
                "the work dir `{}` is not a directory",
                work_dir.display()
            )))
        }
    };
    let replay = match &args.replay {
        Some(path) => Some(Replayed {
            name: path.display().to_string(),
            text: super::exec::replay_for_server(path, style)?,
        }),
        None => None,
    };
    let job = Job {
        ir: text,
        task,
        work_dir: work_dir.display().to_string(),
        max_turns: args.max_turns,
        approve: args.approve.map(|approve| match approve {
            Approve::All => "all".to_string(),
            Approve::None => "none".to_string(),
        }),
        replay,
        model: args.model.clone(),
        endpoint: args.endpoint.clone(),
        api_key_env: args.api_key_env.clone(),
    };
    Ok(job)
}

/// Prints the session's events as they are stored, says which question it waits on, and
/// returns the exit code of its outcome.
async fn follow(on: &str, session: &str, args: &ExecArgs) -> u8 {
    let mut events = match &args.events {
        Some(path) => match crate::events::EventsFile::open(path) {
            Ok(file) => file,
            Err(error) => {
                return usage(&format!(
                    "cannot open the events file `{}`: {error}",
                    path.display()
                ))
            }
        },
        None => crate::events::EventsFile::none(),
    };
    let mut seen = 0u32;
    let mut announced: Option<Waiting> = None;
    let mut unreachable = 0u32;
    // A replayed run streams nothing; `--json` shows no text.
    let mut streamed = (args.replay.is_none() && !args.json).then(StreamView::default);
    loop {
        let watch = match client::watch(on, session, seen).await {
            Ok(watch) => {
                unreachable = 0;
                watch
            }
            // A server restarting: keep following for a while.
            Err(refused) if refused.status.is_none() && unreachable < 600 => {
                unreachable += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            Err(refused) => return usage(&format!("cannot follow session {session}: {refused}")),
        };
        // The text streamed so far, before the events that end its turn; a stream that is
        // not the one shown (another turn, another attempt) after them.
        let mut after_events = String::new();
        if let Some(view) = streamed.as_mut() {
            let waiting = watch.status.waiting.is_some();
            if let (false, Ok(Some(text))) =
                (waiting, client::text(on, session, view.cursor()).await)
            {
                match view.continues(&text) || watch.events.is_empty() {
                    true => eprint!("{}", view.render(text)),
                    false => after_events = view.render(text),
                }
            }
            if !watch.events.is_empty() {
                eprint!("{}", view.end_line());
            }
        }
        for line in &watch.events {
            events.write_line(line);
            if !args.json {
                if let Some(words) = super::log::in_words(line) {
                    eprint!("{words}");
                }
            }
        }
        eprint!("{after_events}");
        seen += watch.events.len() as u32;
        let status = watch.status;
        if status.waiting != announced {
            if let Some(waiting) = &status.waiting {
                eprintln!(
                    "waiting for an answer to question {} ({} → {}: {}): fuseraft approve {} [--no] --on {on}",
                    waiting.id,
                    neutralise(&waiting.from),
                    neutralise(&waiting.to),
                    neutralise(&waiting.question),
                    session
                );
            }
            announced = status.waiting.clone();
        }
        if let Some(outcome) = &status.outcome {
            if seen >= status.events {
                return ended(
                    session,
                    outcome,
                    status.reason.as_deref(),
                    status.turn,
                    args,
                );
            }
            continue;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The last line (or the `--json` object) and the exit code of a finished run.
fn ended(session: &str, outcome: &str, reason: Option<&str>, turns: u32, args: &ExecArgs) -> u8 {
    let code = match outcome {
        "completed" => Outcome::Completed,
        "max_turns" => Outcome::MaxTurns,
        "stuck" => Outcome::Stuck,
        "budget" => Outcome::Budget,
        "cancelled" => Outcome::Cancelled,
        _ => Outcome::Error,
    }
    .exit_code();
    if args.json {
        let summary = serde_json::json!({
            "session_id": session,
            "outcome": outcome,
            "succeeded": code == 0,
            "error_message": reason,
            "exit_code": code,
            "turns": turns,
        });
        println!("{summary}");
    } else {
        let why = reason
            .map(|reason| format!(": {}", neutralise(reason)))
            .unwrap_or_default();
        eprintln!("── session {session} {outcome} after {turns} turns{why}");
    }
    code
}

/// `fuseraft approve ID [--no | --redirect TEXT] --on URL`.
pub fn approve(args: &ApproveArgs) -> u8 {
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    runtime.block_on(answer(args))
}

async fn answer(args: &ApproveArgs) -> u8 {
    let question = match args.id.split_once('.') {
        Some((session, _)) if crate::session::valid_id(session) => args.id.clone(),
        Some(_) => return usage(&format!("`{}` is no question id (`SESSION.N`)", args.id)),
        None if crate::session::valid_id(&args.id) => {
            match client::watch(&args.on, &args.id, u32::MAX).await {
                Ok(watch) => match watch.status.waiting {
                    Some(waiting) => waiting.id,
                    None => {
                        eprintln!("error: session {} waits on no question", args.id);
                        return exit::FINDINGS;
                    }
                },
                Err(refused) => {
                    return usage(&format!("cannot read session {}: {refused}", args.id))
                }
            }
        }
        None => return usage(&crate::session::invalid_id(&args.id)),
    };
    let (decision, text) = match (&args.redirect, args.no) {
        (Some(text), _) => ("redirect", Some(text.clone())),
        (None, true) => ("no", None),
        (None, false) => ("yes", None),
    };
    let answer = Answer {
        decision: decision.to_string(),
        text,
        by: args
            .by
            .clone()
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "unknown".to_string()),
        at: crate::events::timestamp(),
    };
    // The question reaches its object just after the session lists it: a moment's retry.
    let mut tries = 0;
    loop {
        match client::answer(&args.on, &question, &answer).await {
            Ok(answered) => {
                eprintln!(
                    "answered question {} ({}): {}",
                    answered.id,
                    neutralise(&answered.question),
                    answered.answer.decision
                );
                return exit::OK;
            }
            Err(refused) if refused.status == Some(404) && tries < 20 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(refused) if refused.status.is_some() => {
                eprintln!("error: {}", neutralise(&refused.message));
                return exit::FINDINGS;
            }
            Err(refused) => return usage(&refused.message),
        }
    }
}

/// `sessions list --on URL`: one line per session the server runs, with its turn and the
/// question it waits on.
pub fn sessions_on(on: &str) -> u8 {
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    runtime.block_on(async {
        let running = match client::running(on).await {
            Ok(running) => running,
            Err(refused) => return usage(&format!("cannot list the sessions of {on}: {refused}")),
        };
        if running.is_empty() {
            eprintln!("no session runs on {on}");
        }
        for (id, status) in running {
            let state = match (&status.outcome, &status.waiting) {
                (Some(outcome), _) => outcome.clone(),
                (None, Some(waiting)) => format!(
                    "waits on {} ({} → {}: {})",
                    waiting.id,
                    neutralise(&waiting.from),
                    neutralise(&waiting.to),
                    neutralise(&waiting.question)
                ),
                (None, None) => "running".to_string(),
            };
            let line = format!("{id}  {:>4} turns  {state}\n", status.turn);
            if let Some(code) = super::print_or_fail(&line) {
                return code;
            }
        }
        exit::OK
    })
}

/// Session `id` of the server as `export` hands it, or the exit code of why not (said).
fn exported(on: &str, id: &str) -> Result<crate::serve::job::Exported, u8> {
    if !crate::session::valid_id(id) {
        return Err(usage(&crate::session::invalid_id(id)));
    }
    match runtime()?.block_on(client::export(on, id)) {
        Ok(exported) => Ok(exported),
        Err(refused) if refused.status.is_some() => {
            eprintln!("error: {}", neutralise(&refused.message));
            Err(exit::FINDINGS)
        }
        Err(refused) => Err(usage(&refused.message)),
    }
}

/// `sessions show ID --on URL`: session `id` of the server as `sessions show` prints a local
/// one (its state, the history as `Messages`), with what the server adds under `Served`
/// (its turn, outcome, the question it waits on, every answer given).
pub fn sessions_show_on(on: &str, id: &str) -> u8 {
    let exported = match exported(on, id) {
        Ok(exported) => exported,
        Err(code) => return code,
    };
    let mut state = match exported.checkpoint {
        Some(serde_json::Value::Object(state)) => state,
        _ => serde_json::Map::new(),
    };
    state.insert("Task".into(), exported.job.task.clone().into());
    state.insert("Messages".into(), exported.messages.into());
    let served = serde_json::to_value(&exported.status).unwrap_or_default();
    state.insert("Served".into(), served);
    // Model and tool text: printed as JSON with every control character escaped.
    let mut text = crate::terminal::json_safe(
        serde_json::to_string_pretty(&serde_json::Value::Object(state)).unwrap_or_default(),
    );
    text.push('\n');
    super::print_or_fail(&text).unwrap_or(exit::OK)
}

/// `sessions export ID --on URL [--work-dir DIR]`: writes session `id` of the server as a
/// local session of the work dir (its log, recorded config and snapshot, authenticated
/// under this user's session key), so `sessions show`, `ui`, `test` and a local
/// `exec --resume` read it as any other. An existing local session of that id is kept.
pub fn sessions_export(on: &str, id: &str, work_dir: &Path) -> u8 {
    let exported = match exported(on, id) {
        Ok(exported) => exported,
        Err(code) => return code,
    };
    let Some(mut state) = exported.checkpoint else {
        eprintln!("error: session {id} has no turn saved yet");
        return exit::FINDINGS;
    };
    let program = match ir::parse(&exported.job.ir) {
        Ok(program) => program,
        Err(error) => {
            return usage(&format!(
                "session {id}'s program does not read back: {error}"
            ))
        }
    };
    let text = crate::session::config::normalized(&program);
    let key = match crate::session::Key::load_or_create() {
        Ok(key) => key,
        Err(problem) => return usage(&format!("cannot export session {id}: {problem}")),
    };
    match crate::session::dir(work_dir) {
        Ok(dir) if dir.exists(&format!("{id}.json")) => {
            return usage(&format!(
                "a local session {id} exists in `{}`; it is kept",
                work_dir.display()
            ));
        }
        Ok(_) => {}
        Err(error) => return usage(&error.message),
    }
    if let Some(object) = state.as_object_mut() {
        let job = &exported.job;
        object.insert("ConfigPath".into(), format!("{on} (served)").into());
        object.insert(
            "ConfigDigest".into(),
            crate::session::config::digest(&text).into(),
        );
        object.insert("WorkingDirectory".into(), job.work_dir.clone().into());
        object.insert("LastUpdatedAt".into(), crate::events::timestamp().into());
        if job.model.is_some() || job.endpoint.is_some() || job.api_key_env.is_some() {
            let options = serde_json::json!({"Model": job.model, "Endpoint": job.endpoint, "ApiKeyEnv": job.api_key_env});
            object.insert("ProviderOptions".into(), options);
        }
    }
    let mut lines = Vec::new();
    for message in &exported.messages {
        if serde_json::to_writer(&mut lines, message).is_err() {
            return usage("a message of the session does not write back");
        }
        lines.push(b'\n');
    }
    match crate::session::fork::write_session(work_dir, id, lines, state, Some(&text), &key) {
        Ok(()) => {
            eprintln!(
                "session {id} ({}, {} turns) written to `{}`",
                exported.status.outcome.as_deref().unwrap_or("not ended"),
                exported.status.turn,
                work_dir.join(crate::session::DIR).display()
            );
            exit::OK
        }
        Err(message) => usage(&format!("cannot write session {id}: {message}")),
    }
}
