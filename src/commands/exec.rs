//! `fuseraft exec INPUT --task TEXT [--replay FILE] [--events FILE] [--work-dir DIR]
//! [--max-turns N] [--approve all|none] [--json]`: run a workflow.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use fuseraft_vm::driver::{self, Approvals, Env};
use fuseraft_vm::event::{Event, Outcome};
use fuseraft_vm::history::Role;
use fuseraft_vm::machine::{Machine, Options, Run};
use fuseraft_vm::replay::Replay;
use serde_json::json;

use super::exit;
use crate::cli::{Approve, ExecArgs};
use crate::disk::Disk;
use crate::events::EventsFile;
use crate::render::{self, Style};

/// Eight hex digits, as upstream's session ids.
fn session_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
    let mixed = mixed.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    format!("{:08x}", (mixed >> 32) as u32)
}

fn usage_error(message: &str) -> u8 {
    eprintln!("error: {message}");
    exit::USAGE
}

pub fn run(args: &ExecArgs, style: Style) -> u8 {
    let started = Instant::now();
    for (flag, given) in [
        ("--model", args.model.is_some()),
        ("--endpoint", args.endpoint.is_some()),
    ] {
        if given {
            return usage_error(&format!(
                "`{flag}` is not available yet (network providers and sessions are being built)"
            ));
        }
    }
    let work_dir = args.work_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    // A resumed session brings its own task.
    let saved = match &args.resume {
        Some(id) => match crate::session::load(&work_dir, id) {
            Ok(saved) => Some(saved),
            Err(message) => return usage_error(&message),
        },
        None => None,
    };
    let task = match (&saved, &args.task) {
        (Some(saved), given) => {
            let task = saved
                .get("Task")
                .and_then(|task| task.as_str())
                .unwrap_or_default()
                .to_string();
            if given.as_ref().is_some_and(|given| *given != task) {
                eprintln!("warning: `--task` is ignored when resuming; the session's task is kept");
            }
            task
        }
        (None, Some(task)) => task.clone(),
        (None, None) => {
            return usage_error(
                "`--task TEXT` is required: it is what the first agent is asked to do",
            );
        }
    };
    let compiled = fuseraft_compiler::compile(&args.input, &Disk);
    eprint!(
        "{}",
        render::all(&compiled.diagnostics, &compiled.sources, style)
    );
    let Some(program) = compiled.program else {
        return exit::USAGE;
    };
    let Some(replay_path) = &args.replay else {
        return usage_error(
            "no model provider: pass `--replay FILE` to answer model calls from a replay file (network providers are not available yet)",
        );
    };
    let script = match crate::replay_file::load(replay_path) {
        Ok(script) => script,
        Err(error) => {
            let (sources, diag) = *error;
            eprint!("{}", render::human(&diag, &sources, style));
            return exit::USAGE;
        }
    };
    if let Err(error) = std::fs::create_dir_all(&work_dir) {
        return usage_error(&format!(
            "cannot create the work dir `{}`: {error}",
            work_dir.display()
        ));
    }
    let work_dir = match std::fs::canonicalize(&work_dir) {
        Ok(dir) => dir,
        Err(error) => {
            return usage_error(&format!(
                "cannot use the work dir `{}`: {error}",
                work_dir.display()
            ))
        }
    };
    let mut events = match &args.events {
        Some(path) => match EventsFile::open(path) {
            Ok(file) => file,
            Err(error) => {
                return usage_error(&format!(
                    "cannot open the events file `{}`: {error}",
                    path.display()
                ))
            }
        },
        None => EventsFile::none(),
    };
    let approvals = match args.approve {
        Some(Approve::All) => Approvals::All,
        Some(Approve::None) => Approvals::None,
        None if std::io::stdin().is_terminal() => Approvals::Ask(Box::new(ask_on_terminal)),
        None => Approvals::Ask(Box::new(|from: &str, to: &str, _: &str| {
            eprintln!(
                "approval needed for `{from}` → `{to}`, but standard input is not a terminal: refused (pass `--approve all` or `--approve none`)"
            );
            false
        })),
    };
    let session = match &args.resume {
        Some(id) => id.clone(),
        None => session_id(),
    };
    let options = Options {
        session_id: session.clone(),
        task: task.clone(),
        max_turns: args.max_turns,
        skip_prompts: false,
    };
    let replay = Replay::new(script);
    let machine = match &saved {
        Some(saved) => match driver::restore(&program, options, &replay, saved) {
            Ok(machine) => machine,
            Err(message) => return usage_error(&message),
        },
        None => Machine::new(&program, driver::options_for(options, &replay)),
    };
    let session_dir = work_dir.clone();
    let env = Env {
        work_dir,
        approvals,
    };
    let json_mode = args.json;
    let mut on_event = |event: &Event, run: &Run| {
        events.write(event, &session);
        print_event(event, run, json_mode);
    };
    let started_at = saved
        .as_ref()
        .and_then(|saved| saved.get("StartedAt").cloned())
        .unwrap_or_else(|| json!(crate::events::timestamp()));
    let config_path = std::fs::canonicalize(&args.input).unwrap_or_else(|_| args.input.clone());
    let last_checkpoint = std::cell::RefCell::new(None::<serde_json::Value>);
    let mut on_checkpoint = |checkpoint: &serde_json::Value| {
        let mut checkpoint = checkpoint.clone();
        checkpoint["ConfigPath"] = json!(config_path.display().to_string());
        checkpoint["WorkingDirectory"] = json!(session_dir.display().to_string());
        checkpoint["StartedAt"] = started_at.clone();
        checkpoint["LastUpdatedAt"] = json!(crate::events::timestamp());
        if let Err(error) = crate::session::save(&session_dir, &session, &checkpoint) {
            eprintln!("warning: cannot write the session checkpoint: {error}");
        }
        *last_checkpoint.borrow_mut() = Some(checkpoint);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return usage_error(&format!("cannot start the runtime: {error}")),
    };
    let result = runtime.block_on(async {
        tokio::select! {
            summary = driver::drive(machine, &replay, &env, &mut on_event, &mut on_checkpoint) => Some(summary),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    let Some(summary) = result else {
        // Cancelled: the last checkpoint (after the last completed turn) stays resumable.
        if let Some(mut checkpoint) = last_checkpoint.borrow_mut().take() {
            checkpoint["Cancelled"] = json!(true);
            checkpoint["LastUpdatedAt"] = json!(crate::events::timestamp());
            let _ = crate::session::save(&session_dir, &session, &checkpoint);
        }
        eprintln!(
            "── cancelled · resume with: fuseraft exec {} --resume {session} --replay {} --work-dir {}",
            args.input.display(),
            replay_path.display(),
            session_dir.display()
        );
        if json_mode {
            println!(
                "{}",
                json!({"session_id": session, "succeeded": false, "outcome": "cancelled", "exit_code": 1})
            );
        }
        return Outcome::Cancelled.exit_code();
    };
    let elapsed = started.elapsed().as_secs_f64();
    let code = summary.outcome.exit_code();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "── {} after {} turn(s) · session {session} · tokens in {} / out {} · {:.2}s{}",
        summary.outcome.as_str(),
        summary.turns,
        summary.usage.input_tokens,
        summary.usage.output_tokens,
        elapsed,
        summary
            .reason
            .as_deref()
            .map(|reason| format!("\n   {reason}"))
            .unwrap_or_default(),
    );
    if json_mode {
        let object = json!({
            "session_id": session,
            "task": task,
            "config": args.input.display().to_string(),
            "succeeded": code == exit::OK,
            "outcome": summary.outcome.as_str(),
            "error_message": summary.reason,
            "exit_code": code,
            "turns": summary.turns,
            "elapsed_seconds": elapsed,
            "tokens": {"input": summary.usage.input_tokens, "output": summary.usage.output_tokens},
        });
        println!("{object}");
    }
    code
}

/// Streams each turn to the terminal: a header per turn and the reply. With `--json`
/// everything goes to standard error so standard output holds only the summary.
fn print_event(event: &Event, run: &Run, json_mode: bool) {
    let mut out: Box<dyn Write> = if json_mode {
        Box::new(std::io::stderr().lock())
    } else {
        Box::new(std::io::stdout().lock())
    };
    match event.event_type {
        "turn_end" => {
            let Some(message) = run
                .history
                .iter()
                .rev()
                .find(|message| message.role == Role::Assistant)
            else {
                return;
            };
            let state = event
                .payload
                .get("state")
                .and_then(|state| state.as_str())
                .unwrap_or("");
            let _ = writeln!(
                out,
                "── turn {} · {} · {state} ──",
                event.turn + 1,
                message.agent
            );
            for call in &message.tool_calls {
                let outcome = if call.ok { "ok" } else { "failed" };
                let _ = writeln!(out, "  ⚙ {} ({outcome})", call.name);
            }
            if !message.content.is_empty() {
                let _ = writeln!(out, "{}", message.content.trim_end());
            }
        }
        "agent_routed" => {
            let to = event
                .payload
                .get("to")
                .and_then(|to| to.as_str())
                .unwrap_or("");
            let signal = event
                .payload
                .get("signal")
                .and_then(|signal| signal.as_str());
            let via = signal
                .map(|signal| format!(" on `{signal}`"))
                .unwrap_or_default();
            let _ = writeln!(out, "  → {to}{via}");
        }
        "correction_injected"
        | "validation_fail"
        | "recovery_activated"
        | "warning"
        | "tool_blocked" => {
            let _ = writeln!(out, "  ! {} {}", event.event_type, event.payload);
        }
        _ => {}
    }
}

fn ask_on_terminal(from: &str, to: &str, signal: &str) -> bool {
    eprint!("approve route `{from}` → `{to}` on `{signal}`? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
