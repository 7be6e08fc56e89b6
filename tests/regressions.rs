//! Inputs that once crashed or hung fuseraft (found by the fuzz targets under `fuzz/` or by
//! hand), replayed on every `cargo test`, and the hostile-input cases of docs/reliability.md
//! that no other test covers.
//!
//! `fixtures/regressions/` holds one kind of input per folder:
//!
//! - `config/*.yaml|json`: compiled (and checked); a program must round-trip through IR text.
//! - `condition/*.txt`: parsed as a routing condition; a parsed one must round-trip.
//! - `ir/*.fir`: parsed as IR text; a program must round-trip, render its JSON, DOT and
//!   Mermaid views, and run in the machine with every request answered plainly, without a
//!   panic.
//! - `run/<case>/`: `config.yaml` or `program.fir` with `replay.yaml`, run through the real
//!   driver and the replay provider in a scratch work dir; any outcome but a panic is fine.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use fuseraft::disk::Disk;
use fuseraft_compiler::ir::{self, Program};
use fuseraft_vm::driver::{self, Approvals, Env};
use fuseraft_vm::effect::{CheckResult, ModelReply, Request, Response};
use fuseraft_vm::event::Outcome;
use fuseraft_vm::history::{Role, ToolCall, Usage};
use fuseraft_vm::machine::{Machine, Options, MAX_TOOL_CALLS_PER_TURN};
use fuseraft_vm::replay::Replay;
use serde_json::json;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root().join("fixtures/regressions").join(dir)) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
    paths.sort();
    paths
}

/// A program must print to IR text that parses back to an equal program.
fn assert_round_trip(program: &Program, what: &Path) {
    let text = ir::print(program, &ir::PrintOptions::default());
    match ir::parse(&text) {
        Ok(back) => assert!(
            back == *program,
            "{}: the IR round trip changed the program:\n{text}",
            what.display()
        ),
        Err(error) => panic!(
            "{}: printed IR does not parse: {error}\n{text}",
            what.display()
        ),
    }
}

/// Answers every request of `machine` the same plain way (the reply text cycles through
/// `replies`) until the run ends or `max_steps` pass; returns the run's outcome.
fn drive(machine: &mut Machine<'_>, replies: &[String], max_steps: usize) -> Option<Outcome> {
    let mut replies = replies.iter().cycle();
    for _ in 0..max_steps {
        let request = machine.step();
        let before = machine.run().history.len();
        let response = match &request {
            Request::Done => return machine.outcome(),
            Request::Model(_) => Response::Model(Ok(ModelReply {
                text: replies.next().cloned().unwrap_or_default(),
                ..ModelReply::default()
            })),
            Request::Fork(branches) => {
                for branch in branches.clone() {
                    let done = branch.run_with(&mut |request| match request {
                        Request::Tools { calls, .. } => Response::Tools(
                            calls
                                .iter()
                                .map(|call| ToolCall {
                                    result: Some("done".to_string()),
                                    ok: true,
                                    ..call.clone()
                                })
                                .collect(),
                        ),
                        _ => Response::Model(Ok(ModelReply {
                            text: replies.next().cloned().unwrap_or_default(),
                            ..ModelReply::default()
                        })),
                    });
                    machine.resume(Response::Branch(Box::new(done)));
                }
                continue;
            }
            Request::Tools { calls, .. } => Response::Tools(
                calls
                    .iter()
                    .map(|call| ToolCall {
                        result: Some("done".to_string()),
                        ok: true,
                        ..call.clone()
                    })
                    .collect(),
            ),
            Request::Validate { checks, .. } => {
                Response::Validate(checks.iter().map(|_| CheckResult::pass()).collect())
            }
            Request::Approve { .. } => Response::Approve(true),
            Request::Ask { .. } => Response::Answer(Some(String::new())),
            Request::Context { sources, .. } => {
                Response::Context(sources.iter().map(|_| String::new()).collect())
            }
        };
        machine.resume(response);
        assert!(machine.run().history.len() >= before, "the history shrank");
    }
    machine.outcome()
}

fn options(task: &str) -> Options {
    Options {
        session_id: "regr0000".to_string(),
        task: task.to_string(),
        max_turns: Some(50),
        skip_prompts: false,
    }
}

#[test]
fn regression_configs_compile_without_panicking() {
    for path in files("config") {
        let compiled = fuseraft_compiler::compile(&path, &Disk);
        if let Some(program) = &compiled.program {
            assert_round_trip(program, &path);
        }
        let _ = fuseraft_compiler::check::check(&compiled);
    }
}

#[test]
fn regression_conditions_parse_or_fail_cleanly() {
    for path in files("condition") {
        let text = std::fs::read_to_string(&path).unwrap();
        if let Ok(cond) = fuseraft_compiler::condition::parse(&text) {
            let printed = cond.to_string();
            assert_eq!(
                fuseraft_compiler::condition::parse(&printed),
                Ok(cond),
                "{}",
                path.display()
            );
        }
    }
}

#[test]
fn regression_ir_files_parse_and_run_without_panicking() {
    let words = ["DONE".to_string(), "APPROVED".to_string(), String::new()];
    for path in files("ir") {
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(program) = ir::parse(&text) else {
            continue;
        };
        assert_round_trip(&program, &path);
        let _ = ir::to_json(&program);
        let _ = ir::to_dot(&program);
        let _ = ir::to_mermaid(&program);
        let mut machine = Machine::new(&program, options("regression"));
        drive(&mut machine, &words, 500);
    }
}

#[test]
fn regression_runs_end_without_panicking() {
    for dir in files("run") {
        let input = if dir.join("program.fir").exists() {
            dir.join("program.fir")
        } else {
            dir.join("config.yaml")
        };
        let compiled = fuseraft_compiler::compile(&input, &Disk);
        let Some(program) = compiled.program else {
            continue;
        };
        let script = fuseraft::replay_file::load(&dir.join("replay.yaml"))
            .unwrap_or_else(|error| panic!("{}: bad replay: {}", dir.display(), error.1.message));
        let work = std::env::temp_dir().join(format!(
            "fuseraft-regression-{}-{}",
            std::process::id(),
            dir.file_name().unwrap().to_string_lossy()
        ));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        let env = Env {
            pause: None,
            work_dir: std::fs::canonicalize(&work).unwrap(),
            deny_read: Vec::new(),
            approvals: Approvals::All,
        };
        let replay = Replay::new(script);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let summary = runtime.block_on(driver::run(
            &program,
            options("regression"),
            &replay,
            &env,
            &mut |_, _| {},
        ));
        let _ = std::fs::remove_dir_all(&work);
        assert!(summary.turns <= 50, "{}", dir.display());
    }
}

// ---------------------------------------------------------------------------------------------
// Hostile replies and effect results (docs/reliability.md, "Replies and tool calls").

fn keyword_program() -> Program {
    fuseraft_compiler::compile(&root().join("fixtures/run/keyword/config.yaml"), &Disk)
        .program
        .expect("the keyword fixture compiles")
}

/// A reply of 8 MiB is recorded whole and routed on like any other; the machine stays fast.
#[test]
fn a_reply_of_megabytes_is_kept_and_routed() {
    let program = keyword_program();
    let mut machine = Machine::new(&program, options("big"));
    let big = format!(
        "{}\n**HANDOFF TO DEVELOPER**\n",
        "x".repeat(8 * 1024 * 1024)
    );
    let started = Instant::now();
    let Request::Model(_) = machine.step() else {
        panic!("the first request is a model call");
    };
    machine.resume(Response::Model(Ok(ModelReply {
        text: big.clone(),
        ..ModelReply::default()
    })));
    let reply = machine
        .run()
        .history
        .iter()
        .find(|message| message.role == Role::Assistant)
        .expect("the reply is in the history");
    assert_eq!(reply.content.len(), big.len());
    let Request::Model(call) = machine.step() else {
        panic!("the run goes on");
    };
    assert_eq!(call.agent.queue(), "Developer");
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// A reply holding the same signal thousands of times routes once; one holding thousands of
/// lines of different signals routes like a short reply with those signals would.
#[test]
fn a_reply_with_thousands_of_signals_routes_once() {
    let program = keyword_program();
    let mut machine = Machine::new(&program, options("signals"));
    let _ = machine.step();
    let same = "HANDOFF TO DEVELOPER\n".repeat(5000);
    machine.resume(Response::Model(Ok(ModelReply {
        text: same,
        ..ModelReply::default()
    })));
    let Request::Model(call) = machine.step() else {
        panic!("the run goes on");
    };
    assert_eq!(call.agent.queue(), "Developer");

    let mut machine = Machine::new(&program, options("signals"));
    let _ = machine.step();
    let mixed = "HANDOFF TO DEVELOPER\nREPLAN\nHANDOFF TO REVIEWER\n".repeat(3000);
    let started = Instant::now();
    machine.resume(Response::Model(Ok(ModelReply {
        text: mixed,
        ..ModelReply::default()
    })));
    let request = machine.step();
    let events: Vec<&str> = machine
        .drain_events()
        .iter()
        .map(|event| event.name())
        .collect();
    assert!(events.contains(&"signal_detected"), "{events:?}");
    let Request::Model(call) = request else {
        panic!("the run goes on: {request:?}");
    };
    // Several routes match: the first in route order wins, as in a short reply.
    assert_eq!(call.agent.queue(), "Developer");
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// A reply asking for a thousand tool calls gets the first `MAX_TOOL_CALLS_PER_TURN` run and
/// a `tool_limit` event; handoff calls with missing or wrong-typed arguments are answered,
/// never a panic.
#[test]
fn tool_calls_past_the_bound_and_with_bad_arguments() {
    let program = keyword_program();
    let mut machine = Machine::new(&program, options("tools"));
    let _ = machine.step();
    let calls: Vec<ToolCall> = (0..1000)
        .map(|idx| ToolCall {
            id: format!("call_{idx}"),
            name: "read_file".to_string(),
            args: json!({"path": idx}),
            result: None,
            ok: false,
            denied: None,
        })
        .collect();
    machine.resume(Response::Model(Ok(ModelReply {
        tool_calls: calls,
        ..ModelReply::default()
    })));
    let events = machine.drain_events();
    assert!(events.iter().any(|event| event.name() == "tool_limit"));
    let Request::Tools { calls, .. } = machine.step() else {
        panic!("the tool calls are requested");
    };
    assert_eq!(calls.len(), MAX_TOOL_CALLS_PER_TURN);

    for args in [
        json!({}),
        json!({"route_keyword": 5}),
        json!({"route_keyword": null}),
        json!({"route_keyword": ["HANDOFF TO DEVELOPER"]}),
        json!({"route_keyword": {"x": 1}}),
        json!("not an object"),
        json!(null),
        json!({"route_keyword": ""}),
        json!({"key": 5, "value": [1, 2]}),
    ] {
        for name in ["handoff", "finish", "Routing-handoff", "HANDOFF"] {
            let mut machine = Machine::new(&program, options("args"));
            let _ = machine.step();
            machine.resume(Response::Model(Ok(ModelReply {
                tool_calls: vec![ToolCall {
                    id: "call_1".to_string(),
                    name: name.to_string(),
                    args: args.clone(),
                    result: None,
                    ok: false,
                    denied: None,
                }],
                ..ModelReply::default()
            })));
            let words = ["HANDOFF TO DEVELOPER".to_string()];
            drive(&mut machine, &words, 200);
            assert!(machine.run().history.len() >= 2, "{name} {args}");
        }
    }
}

/// Token counts near `u64::MAX` (a provider, a replay file or a checkpoint may report
/// anything) end the run or go on; they must not overflow (finding 2 of docs/reliability.md).
#[test]
fn huge_token_counts_do_not_overflow() {
    let program = keyword_program();
    for (input, output) in [
        (u64::MAX, 1),
        (u64::MAX / 2 + 1, u64::MAX / 2 + 1),
        (1, u64::MAX),
    ] {
        let mut machine = Machine::new(&program, options("tokens"));
        for _ in 0..3 {
            match machine.step() {
                Request::Model(_) => machine.resume(Response::Model(Ok(ModelReply {
                    text: "REPLAN".to_string(),
                    tool_calls: Vec::new(),
                    usage: Usage {
                        input_tokens: input,
                        output_tokens: output,
                        ..Usage::default()
                    },
                    ..ModelReply::default()
                }))),
                Request::Done => break,
                other => panic!("unexpected {other:?}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Faults of the machine around the run.

/// `--events /dev/full`: every write fails with ENOSPC; fuseraft warns once and the run
/// finishes with its normal outcome and exit code.
#[test]
fn a_full_disk_for_the_events_file_warns_once_and_the_run_finishes() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipping: no /dev/full on this system");
        return;
    }
    let work = std::env::temp_dir().join(format!("fuseraft-full-disk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            "fixtures/run/keyword/config.yaml",
            "--task",
            "Add a flag.",
            "--replay",
            "fixtures/run/keyword/replay.yaml",
            "--work-dir",
            work.to_str().unwrap(),
            "--events",
            "/dev/full",
            "--json",
        ])
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the fuseraft binary runs");
    let _ = std::fs::remove_dir_all(&work);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("cannot write the events file").count(),
        1,
        "{stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON summary on stdout");
    assert_eq!(summary["outcome"], "completed");
}

// ---------------------------------------------------------------------------------------------
// Files that are too big, not text, or include too much.

fn compile_cli(input: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("compile")
        .arg(input)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the fuseraft binary runs")
}

/// An endless input (`/dev/zero`) and a file past the 16 MiB cap are refused after reading at
/// most the cap; a file that is not UTF-8 is refused too. All exit 2 (unreadable input).
#[test]
fn endless_oversized_and_binary_inputs_are_refused() {
    let dir = std::env::temp_dir().join(format!("fuseraft-big-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.yaml");
    let mut text = String::from("Orchestration:\n  Name: Big\n  Description: ");
    text.push_str(&"x".repeat(17 * 1024 * 1024));
    std::fs::write(&big, text).unwrap();
    let binary = dir.join("binary.yaml");
    std::fs::write(&binary, b"Orchestration:\n  Name: \xff\xfe\n").unwrap();
    let mut inputs = vec![big.clone(), binary.clone()];
    if Path::new("/dev/zero").exists() {
        inputs.push(PathBuf::from("/dev/zero"));
    }
    for input in inputs {
        let started = Instant::now();
        let output = compile_cli(&input);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{}: {stderr}",
            input.display()
        );
        assert!(
            stderr.contains("larger than") || stderr.contains("UTF-8"),
            "{}: {stderr}",
            input.display()
        );
        assert!(started.elapsed() < Duration::from_secs(30));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `command` (its output captured) and kills it if it has not finished within `limit`,
/// failing the test: a hang is a failure, never a stuck `cargo test`.
fn output_within(command: &mut Command, limit: Duration) -> std::process::Output {
    use std::io::Read as _;
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<_>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<_>));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the command can be waited for") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} did not finish within {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Stderr and stdout with the line wrapping of rendered diagnostics undone.
fn flat_text(output: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr) + String::from_utf8_lossy(&output.stdout);
    text.replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A scratch directory with a FIFO in it, or `None` (the test is skipped) where `mkfifo` is
/// missing.
#[cfg(unix)]
fn scratch_with_fifo(name: &str) -> Option<(PathBuf, PathBuf)> {
    let dir = std::env::temp_dir().join(format!("fuseraft-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("config.yaml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|status| status.success());
    if !made {
        eprintln!("skipping: cannot make a FIFO (mkfifo) on this system");
        let _ = std::fs::remove_dir_all(&dir);
        return None;
    }
    Some((dir, fifo))
}

/// `fuseraft compile|check|exec` with `config` as the config (exec with the keyword replay,
/// or `replay`, in a scratch work dir).
fn cli(verb: &str, config: &Path, replay: Option<&Path>, work: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command.arg(verb).arg(config);
    if verb == "exec" {
        let replay = replay.map_or_else(
            || root().join("fixtures/run/keyword/replay.yaml"),
            Path::to_path_buf,
        );
        command
            .args(["--task", "Add a flag.", "--replay"])
            .arg(replay)
            .arg("--work-dir")
            .arg(work);
    }
    command.current_dir(root()).env("NO_COLOR", "1");
    command
}

/// A writer process that copies `source` into `fifo` (`cat`), or writes endlessly (`yes`).
#[cfg(unix)]
fn fifo_writer(fifo: &Path, source: Option<&Path>) -> std::process::Child {
    let mut command = Command::new("sh");
    match source {
        Some(source) => command
            .args(["-c", "exec cat \"$1\" > \"$2\"", "sh"])
            .arg(source),
        None => command.args(["-c", "exec yes 'Orchestration:' > \"$1\"", "sh"]),
    };
    command
        .arg(fifo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("sh starts")
}

const VERBS: [&str; 3] = ["compile", "check", "exec"];

/// A FIFO as the config (or the replay) that a writer fills with a valid file and closes: read
/// like a file; `compile`, `check` and `exec` succeed.
#[cfg(unix)]
#[test]
fn a_fifo_config_with_a_writer_is_read_like_a_file() {
    let Some((dir, fifo)) = scratch_with_fifo("fifo-written") else {
        return;
    };
    let config = root().join("fixtures/run/keyword/config.yaml");
    let replay = root().join("fixtures/run/keyword/replay.yaml");
    let work = dir.join("work");
    let mut cases: Vec<(&str, Option<&Path>, &Path)> = VERBS
        .iter()
        .map(|verb| (*verb, None, config.as_path()))
        .collect();
    cases.push(("exec", Some(fifo.as_path()), replay.as_path()));
    for (verb, replay_fifo, source) in cases {
        // The writer starts first and blocks in `open` until fuseraft opens the FIFO.
        let mut writer = fifo_writer(&fifo, Some(source));
        let config_arg = if replay_fifo.is_some() {
            &config
        } else {
            &fifo
        };
        let output = output_within(
            &mut cli(verb, config_arg, replay_fifo, &work),
            Duration::from_secs(60),
        );
        let _ = writer.kill();
        let _ = writer.wait();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{verb}: {stderr}{stdout}");
        if verb == "exec" {
            assert!(stderr.contains("completed after"), "{verb}: {stderr}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A FIFO fed endlessly (`yes > fifo`): refused at the 16 MiB cap like `/dev/zero`, exit 2;
/// the writer gets a broken pipe.
#[cfg(unix)]
#[test]
fn an_endless_fifo_config_is_refused_at_the_size_cap() {
    let Some((dir, fifo)) = scratch_with_fifo("fifo-endless") else {
        return;
    };
    for verb in VERBS {
        let mut writer = fifo_writer(&fifo, None);
        let output = output_within(
            &mut cli(verb, &fifo, None, &dir.join("work")),
            Duration::from_secs(60),
        );
        let _ = writer.kill();
        let _ = writer.wait();
        let text = flat_text(&output);
        assert_eq!(output.status.code(), Some(2), "{verb}: {text}");
        assert!(
            text.contains("larger than the 16 MiB limit"),
            "{verb}: {text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A FIFO that no process opens for writing would block `open` forever: fuseraft waits
/// `FIFO_WRITER_WAIT` (10 s) for a writer, then refuses it with a message saying so, exit 2.
#[cfg(unix)]
#[test]
fn a_fifo_config_without_a_writer_is_refused_after_a_bounded_wait() {
    let Some((dir, fifo)) = scratch_with_fifo("fifo-no-writer") else {
        return;
    };
    let wait = fuseraft::disk::FIFO_WRITER_WAIT;
    assert!(
        wait <= Duration::from_secs(20),
        "a user would think it hangs"
    );
    // The three commands wait side by side.
    let runs: Vec<_> = VERBS
        .iter()
        .map(|verb| {
            let mut command = cli(verb, &fifo, None, &dir.join("work"));
            let verb = verb.to_string();
            std::thread::spawn(move || {
                let started = Instant::now();
                let output = output_within(&mut command, Duration::from_secs(60));
                (verb, output, started.elapsed())
            })
        })
        .collect();
    for run in runs {
        let (verb, output, elapsed) = run.join().expect("no hang");
        let text = flat_text(&output);
        assert_eq!(output.status.code(), Some(2), "{verb}: {text}");
        assert!(
            text.contains("it is a FIFO and no process opened it for writing within 10 s"),
            "{verb}: {text}"
        );
        assert!(elapsed >= wait, "{verb} gave up after {elapsed:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `/dev/zero` as the config of `compile`, `check` and `exec` and as a replay file is refused
/// at the size cap (16 MiB for a config, 512 MiB for a replay); a directory as the replay file
/// is refused as one. All exit 2.
#[test]
fn endless_and_directory_configs_and_replays_are_refused() {
    let work = std::env::temp_dir().join(format!("fuseraft-dev-zero-{}", std::process::id()));
    let config = root().join("fixtures/run/keyword/config.yaml");
    let mut cases: Vec<(&str, PathBuf, Option<PathBuf>, &str)> = Vec::new();
    if Path::new("/dev/zero").exists() {
        for verb in VERBS {
            cases.push((
                verb,
                PathBuf::from("/dev/zero"),
                None,
                "cannot read config `/dev/zero`: larger than the 16 MiB limit",
            ));
        }
        cases.push((
            "exec",
            config.clone(),
            Some(PathBuf::from("/dev/zero")),
            "cannot read replay file `/dev/zero`: larger than the 512 MiB limit",
        ));
    }
    let fixtures = root().join("fixtures");
    cases.push(("exec", config, Some(fixtures), "is a directory"));
    for (verb, config, replay, expected) in cases {
        let output = output_within(
            &mut cli(verb, &config, replay.as_deref(), &work),
            Duration::from_secs(60),
        );
        let text = flat_text(&output);
        assert_eq!(output.status.code(), Some(2), "{verb} {replay:?}: {text}");
        assert!(text.contains(expected), "{verb} {replay:?}: {text}");
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// Serves `count` agent files that each include the next: the loader stops at its include
/// limit with a diagnostic.
struct IncludeChain {
    count: usize,
}

impl fuseraft_compiler::FileReader for IncludeChain {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        if name == "config" {
            let mut text = String::from("Orchestration:\n  Name: Chain\n  Agents:\n");
            for idx in 0..self.count {
                text.push_str(&format!("    - AgentFile: a{idx}.yaml\n"));
            }
            text.push_str("  Selection:\n    Type: sequential\n");
            return Ok(text);
        }
        Ok(format!("Name: {name}\nInstructions: Work.\n"))
    }

    fn is_dir(&self, _path: &Path) -> bool {
        false
    }

    fn exists(&self, _path: &Path) -> bool {
        true
    }
}

#[test]
fn too_many_includes_is_an_error_not_a_hang() {
    let compiled = fuseraft_compiler::compile(
        Path::new("/chain/config.yaml"),
        &IncludeChain { count: 1500 },
    );
    assert!(compiled.program.is_none());
    assert!(
        compiled
            .diagnostics
            .iter()
            .any(|diag| diag.message.contains("included files")),
        "{:?}",
        compiled.diagnostics.first()
    );
}

/// The session store cannot be written (`.fuseraft/sessions` is a file, as a disk fault or a
/// stray file would leave it): the failed write is warned about and the run finishes with its
/// normal outcome; only `--resume` is lost.
#[test]
fn an_unwritable_session_store_warns_and_the_run_finishes() {
    let work = std::env::temp_dir().join(format!("fuseraft-no-sessions-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join(".fuseraft")).unwrap();
    std::fs::write(work.join(".fuseraft/sessions"), "not a directory").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            "fixtures/run/keyword/config.yaml",
            "--task",
            "Add a flag.",
            "--replay",
            "fixtures/run/keyword/replay.yaml",
            "--work-dir",
            work.to_str().unwrap(),
            "--json",
        ])
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the fuseraft binary runs");
    let _ = std::fs::remove_dir_all(&work);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("cannot write the session checkpoint"),
        "{stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON summary on stdout");
    assert_eq!(summary["outcome"], "completed");
}

/// A checkpoint whose turn counters are at their maximum (a corrupted or hand-edited session
/// file: `number(..) as u32` keeps the low 32 bits) resumes and runs a turn without overflow
/// (finding 3 of docs/reliability.md).
#[test]
fn a_checkpoint_with_maximal_counters_resumes_without_overflow() {
    let program = keyword_program();
    let mut machine = Machine::new(&program, options("counters"));
    let _ = machine.step();
    machine.resume(Response::Model(Ok(ModelReply {
        text: "HANDOFF TO DEVELOPER".to_string(),
        ..ModelReply::default()
    })));
    let checkpoint = machine.checkpoint().expect("a checkpoint between turns");
    for field in ["Turn", "VisitTurns", "Phase"] {
        for value in [json!(u32::MAX), json!(u64::MAX), json!(i64::MAX)] {
            let mut corrupted = checkpoint.clone();
            corrupted["Machine"][field] = value.clone();
            let Ok(mut restored) = Machine::restore(&program, options("counters"), &corrupted)
            else {
                continue;
            };
            let words = ["HANDOFF TO REVIEWER".to_string()];
            drive(&mut restored, &words, 20);
            let _ = (field, value);
        }
    }
}
