//! Change-log benchmark (issue 17): recorded tool calls at growing sizes.
//!
//! Run with `cargo bench --bench change_log`. A small std-only harness with two tables:
//!
//! - recording: for each size (turns × 40 calls, turns growing ×10 from 20 to 2,000 by
//!   default) every call's record goes through `changes::store::record` as the tools send
//!   it (a written file, and every fourth call a command with 1 KB of output) in a fresh
//!   work dir; then the end-of-run compaction. The time per call must not grow with the
//!   size; the bar is 200 turns × 40 calls in under 1 s.
//! - with `--tools`: the same sizes through the whole tool path
//!   (`fuseraft_vm::tools::execute` of `write_file`), recording on and off, so the
//!   recording's share of a real call shows as the difference.
//!
//! Honesty check: after each recorded pass the change log must hold one entry per turn with
//! its 40 files, before and after the compaction, or the bench fails.
//!
//! Options (after `--`): `--turns 20,200,2000`, `--calls 40`, `--tools`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fuseraft_vm::changes::{store, ChangeLog, Command, Entry};
use fuseraft_vm::history::ToolCall;
use fuseraft_vm::tools::{execute, ToolContext};
use serde_json::json;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "fuseraft-bench-changes-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// Runs `turns × calls` write_file calls in `work`; returns the time they took.
fn pass(
    runtime: &tokio::runtime::Runtime,
    work: &Path,
    turns: u32,
    calls: u32,
    record: bool,
) -> Duration {
    let started = Instant::now();
    runtime.block_on(async {
        for turn in 0..turns {
            let mut ctx = ToolContext::new(work, "0000beef", "Developer", turn).expect("a work dir");
            if !record {
                ctx.change_log = PathBuf::new();
            }
            for call in 0..calls {
                let mut tool_call = ToolCall {
                    id: format!("call_{call}"),
                    name: "write_file".to_string(),
                    args: json!({"path": format!("src/file_{call}.rs"), "content": format!("// turn {turn}\n")}),
                    result: None,
                    ok: false,
                    denied: None,
                };
                execute(&mut tool_call, &ctx).await;
                assert!(tool_call.ok, "{:?}", tool_call.result);
                let result = tool_call.result.unwrap_or_default();
                assert!(!result.contains("not recorded"), "{result}");
            }
        }
    });
    started.elapsed()
}

/// Records `turns × calls` calls' records straight into the store; returns the time taken.
fn record_pass(path: &Path, turns: u32, calls: u32) -> Duration {
    let output = "x".repeat(1024);
    let started = Instant::now();
    for turn in 0..turns {
        for call in 0..calls {
            let mut delta = Entry {
                agent: "Developer".to_string(),
                turn_index: turn,
                timestamp: "2026-01-01T00:00:00Z".to_string(),
                session_id: "0000beef".to_string(),
                files_written: vec![format!("src/file_{call}.rs")],
                ..Entry::default()
            };
            if call % 4 == 0 {
                delta.commands_run.push(Command {
                    command: "cargo test".to_string(),
                    succeeded: true,
                    output: output.clone(),
                });
            }
            store::record(path, &delta).expect("recorded");
        }
    }
    started.elapsed()
}

fn check(path: &Path, turns: u32, calls: u32) -> Result<(), String> {
    let log = ChangeLog::load(path)?;
    if log.entries.len() != turns as usize {
        return Err(format!("{} entries for {turns} turns", log.entries.len()));
    }
    for entry in &log.entries {
        if entry.files_written.len() != calls as usize {
            return Err(format!(
                "turn {} has {} files",
                entry.turn_index,
                entry.files_written.len()
            ));
        }
    }
    Ok(())
}

fn main() {
    let mut sizes = vec![20u32, 200, 2000];
    let mut calls = 40u32;
    let mut tools = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--turns" => {
                sizes = args
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|size| size.trim().parse().ok())
                    .collect()
            }
            "--calls" => {
                calls = args
                    .next()
                    .and_then(|value| value.parse().ok())
                    .unwrap_or(calls)
            }
            "--tools" => tools = true,
            _ => {} // `cargo bench` passes `--bench`.
        }
    }
    let mut failed = false;
    println!("| turns × calls | recording | per call | compact at end |");
    println!("|---|---|---|---|");
    for &turns in &sizes {
        let work = scratch("store");
        let path = work.join(fuseraft_vm::changes::DEFAULT_PATH);
        let recorded = record_pass(&path, turns, calls);
        let compact_started = Instant::now();
        let checked = check(&path, turns, calls)
            .and_then(|()| store::compact(&path))
            .and_then(|()| check(&path, turns, calls));
        let compact = compact_started.elapsed();
        let _ = std::fs::remove_dir_all(&work);
        if let Err(problem) = checked {
            println!("| {turns} × {calls} | FAILED: {problem} |");
            failed = true;
            continue;
        }
        println!(
            "| {turns} × {calls} | {:.3} s | {:.1} µs | {:.1} ms |",
            recorded.as_secs_f64(),
            recorded.as_secs_f64() * 1e6 / f64::from(turns * calls),
            compact.as_secs_f64() * 1e3,
        );
    }
    if tools {
        tool_table(&sizes, calls, &mut failed);
    }
    if failed {
        std::process::exit(1);
    }
}

fn tool_table(sizes: &[u32], calls: u32, failed: &mut bool) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    println!();
    println!("| turns × calls | tool calls, recorded | per call | not recorded | recording per call | compact at end |");
    println!("|---|---|---|---|---|---|");
    for &turns in sizes {
        let total = f64::from(turns * calls);
        let work = scratch("recorded");
        let recorded = pass(&runtime, &work, turns, calls, true);
        let path = work.join(fuseraft_vm::changes::DEFAULT_PATH);
        let compact_started = Instant::now();
        let checked = check(&path, turns, calls)
            .and_then(|()| store::compact(&path))
            .and_then(|()| check(&path, turns, calls));
        let compact = compact_started.elapsed();
        let _ = std::fs::remove_dir_all(&work);
        let work = scratch("plain");
        let plain = pass(&runtime, &work, turns, calls, false);
        let _ = std::fs::remove_dir_all(&work);
        if let Err(problem) = checked {
            println!("| {turns} × {calls} | FAILED: {problem} |");
            *failed = true;
            continue;
        }
        let per_call = |time: Duration| time.as_secs_f64() * 1e6 / total;
        println!(
            "| {turns} × {calls} | {:.3} s | {:.1} µs | {:.3} s | {:.1} µs | {:.1} ms |",
            recorded.as_secs_f64(),
            per_call(recorded),
            plain.as_secs_f64(),
            per_call(recorded.saturating_sub(plain)),
            compact.as_secs_f64() * 1e3,
        );
    }
}
