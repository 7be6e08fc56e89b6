//! `fuseraft exec INPUT --task TEXT [--replay FILE] [--events FILE] [--work-dir DIR]
//! [--max-turns N] [--approve all|none] [--json]`: run a workflow.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use fuseraft_vm::driver::{self, Approvals, Env};
use fuseraft_vm::event::Event;
use fuseraft_vm::history::Role;
use fuseraft_vm::machine::{Options, Run};
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
        ("--resume", args.resume.is_some()),
    ] {
        if given {
            return usage_error(&format!(
                "`{flag}` is not available yet (network providers and sessions are being built)"
            ));
        }
    }
    let Some(task) = args.task.clone() else {
        return usage_error("`--task TEXT` is required: it is what the first agent is asked to do");
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
    let work_dir = args.work_dir.clone().unwrap_or_else(|| PathBuf::from("."));
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
    let session = session_id();
    let options = Options {
        session_id: session.clone(),
        task: task.clone(),
        max_turns: args.max_turns,
        skip_prompts: false,
    };
    let env = Env {
        work_dir,
        approvals,
    };
    let replay = Replay::new(script);
    let json_mode = args.json;
    let mut on_event = |event: &Event, run: &Run| {
        events.write(event, &session);
        print_event(event, run, json_mode);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return usage_error(&format!("cannot start the runtime: {error}")),
    };
    let summary = runtime.block_on(driver::run(&program, options, &replay, &env, &mut on_event));
    let elapsed = started.elapsed().as_secs_f64();
    let code = summary.outcome.exit_code();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "── {} after {} turn(s) · tokens in {} / out {} · {:.2}s{}",
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
