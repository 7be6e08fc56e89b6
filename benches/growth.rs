//! Growth benchmark (issue 17): every engine path at sizes growing ×10, per-unit cost at each
//! size and the ratio largest / smallest, so a cost that grows faster than the work shows as
//! a number above 1.
//!
//! Run with `cargo bench --bench growth` (builds the release `fuseraft` binary for the exec
//! rows). A small std-only harness; each case is measured `--runs` times (default 5) after
//! one untimed warm-up, and the medians are reported: CPU time (user + system, `getrusage`
//! of this process, or of the reaped children for the exec rows), which a loaded machine
//! disturbs far less than the wall time, and the wall time beside it. Paths and units:
//!
//! - `compile`: `fuseraft_compiler::compile` of the generated state-machine chain of
//!   `benches/compile.rs` (in memory), per state: 100, 1,000, 10,000 states.
//! - `exec --ephemeral` and `exec` (durable session): the release binary as a child process
//!   replaying a JSON script of a two-agent handoff (replies of about 60 bytes), per turn:
//!   1,000, 10,000, 100,000 turns. The fixed cost (a 2-turn run of the same config) is
//!   subtracted first.
//! - `fuseraft test`: `scenario::run_all` on one thread, per scenario (50 turns each, with a
//!   recorded `write_file`): 1, 10, 100 scenarios.
//! - `write_file` calls per turn: `tools::execute` with recording on, per call: 5 turns of 4,
//!   40, 400 calls.
//! - `write_file` turns: the same, per call: 2, 20, 200 turns of 40 calls.
//! - change-log records: `changes::store::record` straight, per record: 800, 8,000, 80,000.
//!
//! Honesty checks: every compile must give the expected states, every exec must exit 0
//! with `turns` = N and outcome `completed`, every scenario must pass, every tool call must
//! succeed and be recorded (the change log holds one entry per turn with all its files).
//!
//! Options (after `--`): `--runs N`, `--only compile,exec,durable,test,calls,turns,records`,
//! `--small` (the two smaller sizes only), `--write-chain STATES FILE` (only write the
//! generated config, to time `fuseraft compile FILE` as a whole process).

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fuseraft::render::Style;
use fuseraft::scenario::{self, Settings, Verdict};
use fuseraft_vm::changes::{store, ChangeLog, Entry};
use fuseraft_vm::history::ToolCall;
use fuseraft_vm::tools::{execute, ToolContext};
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;
use serde_json::{json, Value};

const FUSERAFT: &str = env!("CARGO_BIN_EXE_fuseraft");

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "fuseraft-bench-growth-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2.0
    }
}

/// CPU seconds (user + system) of this process (`Self_`) or of its reaped children.
fn cpu(who: UsageWho) -> f64 {
    let usage = getrusage(who).expect("getrusage");
    let seconds = |time: TimeVal| time.tv_sec() as f64 + time.tv_usec() as f64 / 1e6;
    seconds(usage.user_time()) + seconds(usage.system_time())
}

/// One measured run: CPU seconds (of this process, or of the children it reaped) and wall
/// seconds.
#[derive(Clone, Copy)]
struct Sample {
    cpu: f64,
    wall: f64,
}

/// Measures `once`: the CPU time it cost (this process's, or with `children` its
/// children's) and its wall time.
fn measure(children: bool, once: &mut impl FnMut() -> Duration) -> Sample {
    let who = if children {
        UsageWho::RUSAGE_CHILDREN
    } else {
        UsageWho::RUSAGE_SELF
    };
    let before = cpu(who);
    let wall = once().as_secs_f64();
    Sample {
        cpu: cpu(who) - before,
        wall,
    }
}

/// The medians (CPU, wall) of `runs` measured calls after one warm-up. `once` returns the
/// wall time of the part it times; the CPU time covers the whole call.
fn timed(runs: usize, children: bool, mut once: impl FnMut() -> Duration) -> Sample {
    once();
    let samples: Vec<Sample> = (0..runs).map(|_| measure(children, &mut once)).collect();
    let mut cpu: Vec<f64> = samples.iter().map(|sample| sample.cpu).collect();
    let mut wall: Vec<f64> = samples.iter().map(|sample| sample.wall).collect();
    Sample {
        cpu: median(&mut cpu),
        wall: median(&mut wall),
    }
}

// ---- compile ----

const AGENTS: usize = 10;

/// The chain of `benches/compile.rs`: K states, a `BACK` transition every 10 states.
fn chain(k: usize) -> String {
    let mut out = String::from("Orchestration:\n  Name: CompileBench\n  Agents:\n");
    for agent in 0..AGENTS {
        let _ = writeln!(out, "    - Name: Agent{agent}");
        let _ = writeln!(
            out,
            "      Instructions: You are agent {agent}. Do your step and hand off."
        );
    }
    out.push_str("  Selection:\n    Type: statemachine\n    StateMachine:\n      Initial: S0\n      States:\n");
    for i in 0..k {
        let _ = writeln!(out, "        S{i}:\n          Agent: Agent{}", i % AGENTS);
        if i == k - 1 {
            out.push_str("          Terminal: true\n");
            continue;
        }
        let _ = writeln!(
            out,
            "          Transitions:\n            - To: S{}\n              Signal: NEXT",
            i + 1
        );
        if (i + 1) % 10 == 0 {
            let _ = writeln!(
                out,
                "            - To: S{}\n              Signal: BACK",
                i - 9
            );
        }
    }
    out
}

fn compile_case(states: usize, runs: usize) -> Sample {
    let path = PathBuf::from("bench/statemachine.yaml");
    let text = chain(states);
    let reader = fuseraft_compiler::MemoryFiles::new().with(path.clone(), text.as_str());
    timed(runs, false, || {
        let started = Instant::now();
        let compiled = fuseraft_compiler::compile(black_box(&path), &reader);
        let elapsed = started.elapsed();
        let program = compiled.program.expect("the generated config compiles");
        assert_eq!(program.states.len(), states, "state count");
        elapsed
    })
}

// ---- exec ----

/// A cap above every size, so the run ends where the replay does (a config with no cap
/// gets fuseraft's default of 50 turns).
fn exec_config() -> &'static str {
    "Orchestration:\n  Name: GrowthExec\n  Agents:\n    - { Name: A, Instructions: Do the work. }\n    - { Name: B, Instructions: Check the work. }\n  Selection:\n    Type: keyword\n    DefaultAgent: A\n    Routes:\n      - { Keyword: HANDOFF TO B, Agent: B }\n      - { Keyword: HANDOFF TO A, Agent: A }\n      - { Keyword: APPROVED, Agent: B, SourceAgents: [B] }\n  Termination:\n    Type: maxiterations\n    MaxIterations: 10000000\n"
}

/// A JSON replay of `turns` turns (even): A and B hand off in turn, B's last reply approves.
fn exec_replay(turns: usize) -> String {
    let prose = "I changed what the task needed and checked it.";
    let mut a = Vec::new();
    let mut b = Vec::new();
    for turn in 0..turns {
        if turn % 2 == 0 {
            a.push(json!({"text": format!("Turn {turn}. {prose}\nHANDOFF TO B")}));
        } else if turn + 1 == turns {
            b.push(json!({"text": format!("Turn {turn}. {prose}\nAPPROVED")}));
        } else {
            b.push(json!({"text": format!("Turn {turn}. {prose}\nHANDOFF TO A")}));
        }
    }
    json!({"replies": {"A": a, "B": b}}).to_string()
}

/// One `fuseraft exec` run of the prepared case; its wall time.
fn exec_once(dir: &Path, turns: usize, durable: bool) -> Duration {
    let work = dir.join("work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("a work dir");
    let mut command = Command::new(FUSERAFT);
    command
        .arg("exec")
        .arg(dir.join("config.yaml"))
        .arg("--task")
        .arg("Build it.")
        .arg("--replay")
        .arg(dir.join(format!("replay-{turns}.json")))
        .arg("--work-dir")
        .arg(&work)
        .arg("--json");
    if !durable {
        command.arg("--ephemeral");
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let started = Instant::now();
    let output = command.output().expect("fuseraft starts");
    let elapsed = started.elapsed();
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert!(
        output.status.success()
            && summary["turns"].as_u64() == Some(turns as u64)
            && summary["outcome"].as_str() == Some("completed"),
        "exec of {turns} turns: {} {summary}",
        output.status
    );
    elapsed
}

fn exec_prepare(dir: &Path, sizes: &[usize]) {
    std::fs::write(dir.join("config.yaml"), exec_config()).expect("config written");
    for &turns in sizes.iter().chain(&[2]) {
        std::fs::write(dir.join(format!("replay-{turns}.json")), exec_replay(turns))
            .expect("replay written");
    }
}

// ---- fuseraft test ----

const SCENARIO_TURNS: usize = 50;

fn scenario_config() -> String {
    let mut out = String::from("Orchestration:\n  Name: GrowthScenarios\n  Agents:\n");
    for agent in 0..5 {
        let _ = writeln!(
            out,
            "    - {{ Name: Agent{agent}, Instructions: Work then hand off., Plugins: [FileSystem, Handoff] }}"
        );
    }
    out.push_str("  Selection:\n    Type: statemachine\n    StateMachine:\n      Initial: S0\n      States:\n");
    for state in 0..5 {
        let next = (state + 1) % 5;
        let _ = writeln!(
            out,
            "        S{state}:\n          Agent: Agent{state}\n          Transitions:\n            - {{ To: S{next}, Signal: HANDOFF TO S{next} }}"
        );
    }
    let _ = writeln!(
        out,
        "  Termination:\n    Type: maxiterations\n    MaxIterations: {SCENARIO_TURNS}"
    );
    out
}

fn scenario_file(n: usize) -> String {
    let mut out = format!("config: config.yaml\ntask: Growth task {n}.\nreplies:\n");
    for agent in 0..5 {
        let next = (agent + 1) % 5;
        let _ = writeln!(out, "  Agent{agent}:");
        if agent == 0 {
            let _ = writeln!(
                out,
                "    - tool_calls: [ {{ name: write_file, args: {{ path: notes/{n}.md, content: \"scenario {n}\\n\" }} }} ]\n      text: \"Started.\\nHANDOFF TO S{next}\""
            );
        }
        let _ = writeln!(
            out,
            "    - text: \"Step done.\\nHANDOFF TO S{next}\"\n      times: {SCENARIO_TURNS}"
        );
    }
    out
}

fn test_case(count: usize, runs: usize) -> Sample {
    let dir = scratch(&format!("test-{count}"));
    std::fs::write(dir.join("config.yaml"), scenario_config()).expect("config written");
    for n in 0..count {
        std::fs::write(dir.join(format!("s{n:04}.scenario.yaml")), scenario_file(n))
            .expect("scenario written");
    }
    let scenarios = scenario::discover::discover(std::slice::from_ref(&dir)).expect("found");
    assert_eq!(scenarios.len(), count);
    let settings = Settings {
        accept: true,
        coverage: false,
        style: Style::plain(),
        threads: 1,
        trust_mcp: false,
    };
    let accepted = scenario::run_all(&scenarios, settings);
    assert!(accepted
        .iter()
        .all(|report| !report.verdict.is_error() && !report.verdict.is_failure()));
    let check = Settings {
        accept: false,
        ..settings
    };
    let seconds = timed(runs, false, || {
        let started = Instant::now();
        let reports = scenario::run_all(&scenarios, check);
        let elapsed = started.elapsed();
        assert!(
            reports
                .iter()
                .all(|report| matches!(report.verdict, Verdict::Passed)),
            "every scenario passes"
        );
        elapsed
    });
    let _ = std::fs::remove_dir_all(&dir);
    seconds
}

// ---- tool calls and change-log records ----

/// `turns × calls` recorded `write_file` calls in a fresh work dir; their time.
fn tools_once(runtime: &tokio::runtime::Runtime, turns: u32, calls: u32) -> Duration {
    let work = scratch("tools");
    let started = Instant::now();
    runtime.block_on(async {
        for turn in 0..turns {
            let ctx = ToolContext::new(&work, "0000beef", "Developer", turn).expect("a work dir");
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
    let elapsed = started.elapsed();
    let log = ChangeLog::load(&work.join(fuseraft_vm::changes::DEFAULT_PATH)).expect("a log");
    assert_eq!(log.entries.len(), turns as usize, "one entry per turn");
    assert!(log
        .entries
        .iter()
        .all(|entry| entry.files_written.len() == calls as usize));
    let _ = std::fs::remove_dir_all(&work);
    elapsed
}

fn records_once(records: u32) -> Duration {
    let work = scratch("records");
    let path = work.join(fuseraft_vm::changes::DEFAULT_PATH);
    let started = Instant::now();
    for n in 0..records {
        let delta = Entry {
            agent: "Developer".to_string(),
            turn_index: n / 40,
            timestamp: "2026-01-01T00:00:00Z".to_string(),
            session_id: "0000beef".to_string(),
            files_written: vec![format!("src/file_{}.rs", n % 40)],
            ..Entry::default()
        };
        store::record(&path, &delta).expect("recorded");
    }
    let elapsed = started.elapsed();
    let log = ChangeLog::load(&path).expect("a log");
    assert_eq!(log.entries.len(), records.div_ceil(40) as usize);
    let _ = std::fs::remove_dir_all(&work);
    elapsed
}

// ---- the table ----

struct Row {
    path: &'static str,
    unit: &'static str,
    /// (size, CPU µs per unit, wall µs per unit)
    points: Vec<(usize, f64, f64)>,
}

impl Row {
    fn push(&mut self, size: usize, units: usize, sample: Sample) {
        let per = |seconds: f64| seconds * 1e6 / units as f64;
        self.points.push((size, per(sample.cpu), per(sample.wall)));
    }

    /// Per-unit cost at the largest size over that at the smallest: (CPU, wall).
    fn ratio(&self) -> (f64, f64) {
        match (self.points.first(), self.points.last()) {
            (Some(first), Some(last)) if first.1 > 0.0 && first.2 > 0.0 => {
                (last.1 / first.1, last.2 / first.2)
            }
            _ => (f64::NAN, f64::NAN),
        }
    }
}

fn main() {
    let mut runs = 5usize;
    let mut only: Option<Vec<String>> = None;
    let mut small = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(runs),
            "--only" => {
                only = Some(
                    args.next()
                        .unwrap_or_default()
                        .split(',')
                        .map(str::to_string)
                        .collect(),
                )
            }
            "--small" => small = true,
            "--write-chain" => {
                // Writes the generated state-machine config and stops (for timing
                // `fuseraft compile` as a whole process).
                let states = args.next().and_then(|n| n.parse().ok()).unwrap_or(10_000);
                let file = args.next().unwrap_or_else(|| "chain.yaml".to_string());
                std::fs::write(&file, chain(states)).expect("config written");
                println!("wrote {states} states to {file}");
                return;
            }
            _ => {} // `cargo bench` passes `--bench`.
        }
    }
    let wanted = |name: &str| {
        only.as_ref()
            .is_none_or(|only| only.iter().any(|o| o == name))
    };
    let sizes = |all: [usize; 3]| -> Vec<usize> {
        if small {
            all[..2].to_vec()
        } else {
            all.to_vec()
        }
    };
    let mut rows: Vec<Row> = Vec::new();
    let report = |row: &Row| {
        for &(size, cpu, wall) in &row.points {
            println!(
                "{{\"path\":{},\"unit\":\"{}\",\"size\":{size},\"cpu_us_per_unit\":{cpu:.3},\"wall_us_per_unit\":{wall:.3}}}",
                Value::from(row.path),
                row.unit
            );
        }
    };

    if wanted("compile") {
        let mut row = Row {
            path: "compile (in process)",
            unit: "state",
            points: Vec::new(),
        };
        for states in sizes([100, 1_000, 10_000]) {
            // Enough runs that the smallest size is not within the clock's grain.
            let sample = compile_case(states, runs.max(100_000 / states).max(5));
            row.push(states, states, sample);
        }
        report(&row);
        rows.push(row);
    }
    for (name, durable) in [("exec", false), ("durable", true)] {
        if !wanted(name) {
            continue;
        }
        // Large enough that the smallest run's turns cost more than the noise of starting
        // a process (about 0.2 ms), which a 100-turn run does not.
        let turn_sizes = sizes([1_000, 10_000, 100_000]);
        let dir = scratch(name);
        exec_prepare(&dir, &turn_sizes);
        let fixed = timed(runs, true, || exec_once(&dir, 2, durable));
        let mut row = Row {
            path: if durable {
                "`fuseraft exec` durable, JSON replay (process; minus a 2-turn run)"
            } else {
                "`fuseraft exec --ephemeral`, JSON replay (process; minus a 2-turn run)"
            },
            unit: "turn",
            points: Vec::new(),
        };
        for &turns in &turn_sizes {
            let sample = timed(runs, true, || exec_once(&dir, turns, durable));
            let added = Sample {
                cpu: (sample.cpu - fixed.cpu).max(0.0),
                wall: (sample.wall - fixed.wall).max(0.0),
            };
            row.push(turns, turns - 2, added);
        }
        let _ = std::fs::remove_dir_all(&dir);
        report(&row);
        rows.push(row);
    }
    if wanted("test") {
        let mut row = Row {
            path: "`fuseraft test` (`scenario::run_all`, 1 thread, 50 turns each)",
            unit: "scenario",
            points: Vec::new(),
        };
        for count in sizes([1, 10, 100]) {
            let sample = test_case(count, runs);
            row.push(count, count, sample);
        }
        report(&row);
        rows.push(row);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    if wanted("calls") {
        let mut row = Row {
            path: "`write_file` with recording, calls per turn (5 turns)",
            unit: "call",
            points: Vec::new(),
        };
        for calls in sizes([4, 40, 400]) {
            let sample = timed(runs, false, || tools_once(&runtime, 5, calls as u32));
            row.push(calls, 5 * calls, sample);
        }
        report(&row);
        rows.push(row);
    }
    if wanted("turns") {
        let mut row = Row {
            path: "`write_file` with recording, turns of 40 calls",
            unit: "call",
            points: Vec::new(),
        };
        for turns in sizes([2, 20, 200]) {
            let sample = timed(runs, false, || tools_once(&runtime, turns as u32, 40));
            row.push(turns, turns * 40, sample);
        }
        report(&row);
        rows.push(row);
    }
    if wanted("records") {
        let mut row = Row {
            path: "change-log records (`store::record`)",
            unit: "record",
            points: Vec::new(),
        };
        for records in sizes([800, 8_000, 80_000]) {
            let sample = timed(runs, false, || records_once(records as u32));
            row.push(records, records, sample);
        }
        report(&row);
        rows.push(row);
    }

    println!();
    println!("| path | unit | sizes | CPU µs per unit at each size | wall µs per unit | largest / smallest (CPU) | (wall) |");
    println!("| --- | --- | --- | --- | --- | ---: | ---: |");
    let mut worst: f64 = 0.0;
    for row in &rows {
        let join = |values: Vec<String>| values.join(" / ");
        let sizes = join(row.points.iter().map(|p| p.0.to_string()).collect());
        let cpu = join(row.points.iter().map(|p| format!("{:.2}", p.1)).collect());
        let wall = join(row.points.iter().map(|p| format!("{:.2}", p.2)).collect());
        let (ratio_cpu, ratio_wall) = row.ratio();
        worst = worst.max(ratio_cpu);
        println!(
            "| {} | {} | {sizes} | {cpu} | {wall} | **{ratio_cpu:.2}** | {ratio_wall:.2} |",
            row.path, row.unit
        );
    }
    println!();
    println!("largest per-unit CPU growth: {worst:.2}x (issue 17's bar: at most 1.5x)");
}
