//! Run-time benchmark: the peers' agent-turn workload through the real `fuseraft exec` path.
//!
//! Run with `cargo bench --bench exec` (builds the release `fuseraft` binary first). The
//! workload is `../shared/bench/common.py`'s, ported byte for byte (see `text` below):
//! agents Planner, Developer, Tester and Reviewer, ~1.95 KB markdown replies whose last
//! line is a routing keyword in one of four styles (`KW`, `**KW**`, `_Kw_`, `  __kw__  `),
//! prose lines that mention keywords inline, one Planner turn and then a 10-turn cycle, so
//! a run has `1 + 10k` turns (1,001 and 10,001 are the "1k" and "10k" cases).
//!
//! For each size the bench writes a `keyword` selection config and a replay file that
//! gives every agent its replies in script order, into a scratch directory, then times the
//! release `fuseraft exec CONFIG --task T --replay REPLAY --work-dir D --json` as a child
//! process (whole process: start, config compile, replay parse, the run, the summary).
//!
//! Honesty checks (a mis-routed run fails the bench, it never produces a number):
//! - one run per size and variant with `--events` first: the `turn_start` agents must equal
//!   the expected trace, every `agent_routed` must carry the scripted keyword and target,
//!   the last must route `APPROVED` to `end`, and the session must end `completed`;
//! - every timed run's `--json` summary must say `outcome: completed`, `turns: N`, exit 0.
//!
//! Fixed cost: the same config with a replay of the Planner's single reply and
//! `--max-turns 1` (outcome `max_turns` after 1 turn). µs per turn is
//! `(median wall(N) - median wall(1)) / N`. On a loaded machine the wall clock also
//! counts time the child waited for a CPU, so the bench reports the same difference in CPU
//! time (user + system, the kernel's accounting of the reaped children, mean per run).
//!
//! Peak memory: one extra run per case under `/usr/bin/time -f %M` (the child's
//! `ru_maxrss`, what `/usr/bin/time -v` prints); without `/usr/bin/time` the bench polls
//! the child's `VmHWM` every millisecond (a lower bound, marked `~`).
//!
//! Options (after `--`): `--turns 1001,10001`, `--runs N` (timed runs per case, default 5),
//! `--format yaml|json|both` (replay file format, default both), `--events` (also time runs
//! that write the events file), `--keep DIR` (write the files there and keep them),
//! `--generate DIR` (only write the files for `--turns`, then exit), `--fuseraft PATH` (time
//! another build of the binary), `--extra ARG` (repeatable: an argument added to every
//! `fuseraft exec`, such as `--extra --ephemeral`). A case that fails its checks prints
//! `FAILED` and why, the other cases still run, and the bench exits with status 1.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The release binary cargo built for this bench (`--fuseraft PATH` times another one).
const FUSERAFT: &str = env!("CARGO_BIN_EXE_fuseraft");
const TASK: &str = "Add a --verbose flag to the parser CLI and test it.";

/// The workload of `common.py`, ported exactly.
mod text;

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Format {
    Yaml,
    Json,
}

impl Format {
    fn ext(self) -> &'static str {
        match self {
            Format::Yaml => "yaml",
            Format::Json => "json",
        }
    }
}

/// The keyword-routing config: any agent's keyword routes; `APPROVED` ends the run through
/// the self-route terminal convention (a route to the agent itself, from itself).
fn config_yaml() -> String {
    let mut out = String::from("Orchestration:\n  Name: ExecBench\n  Agents:\n");
    for (agent, job) in text::AGENTS.iter().zip([
        "Plan the work.",
        "Write the code.",
        "Run the tests.",
        "Review the change.",
    ]) {
        let _ = writeln!(out, "    - {{ Name: {agent}, Instructions: {job} }}");
    }
    out.push_str("  Selection:\n    Type: keyword\n    DefaultAgent: Planner\n    Routes:\n");
    for (keyword, target) in text::KEYWORD_TARGET {
        match target {
            Some(agent) => {
                let _ = writeln!(out, "      - {{ Keyword: {keyword}, Agent: {agent} }}");
            }
            None => {
                let _ = writeln!(
                    out,
                    "      - {{ Keyword: {keyword}, Agent: Reviewer, SourceAgents: [Reviewer] }}"
                );
            }
        }
    }
    // A cap above every size, so the run ends where the replay does (a config with no cap
    // gets fuseraft's default of 50 turns).
    out.push_str("  Termination:\n    Type: maxiterations\n    MaxIterations: 10000000\n");
    out
}

/// Every agent's replies in script order, for `turns` turns (`turns` 1 gives the Planner's
/// first reply only: the fixed-cost run).
fn replies(turns: usize, total: usize) -> Vec<(&'static str, Vec<String>)> {
    let filler = text::filler();
    let mut queues: Vec<(&'static str, Vec<String>)> = text::AGENTS
        .iter()
        .map(|agent| (*agent, Vec::new()))
        .collect();
    for turn in 0..turns {
        let (agent, _) = text::expected_step(turn, total);
        let queue = queues
            .iter_mut()
            .find(|(name, _)| *name == agent)
            .expect("the script only names agents of text::AGENTS");
        queue.1.push(text::reply(&filler, turn, total));
    }
    queues.retain(|(_, list)| !list.is_empty());
    queues
}

/// The replay file: YAML literal block scalars (every reply ends with one newline, so the
/// default "clip" chomping keeps it exactly), or JSON.
fn replay_file(queues: &[(&str, Vec<String>)], format: Format) -> String {
    match format {
        Format::Json => {
            let mut object = serde_json::Map::new();
            for (agent, list) in queues {
                let items: Vec<Value> = list.iter().map(|text| json!({ "text": text })).collect();
                object.insert(agent.to_string(), Value::Array(items));
            }
            serde_json::to_string(&json!({ "replies": object })).unwrap()
        }
        Format::Yaml => {
            let mut out = String::from("replies:\n");
            for (agent, list) in queues {
                let _ = writeln!(out, "  {agent}:");
                for text in list {
                    // Block scalars need a first line that is not indented and no line
                    // ending in spaces at the very end; both hold for every reply.
                    assert!(!text.starts_with(' ') && text.ends_with('\n'));
                    out.push_str("    - text: |\n");
                    for line in text.trim_end_matches('\n').split('\n') {
                        if line.is_empty() {
                            out.push('\n');
                        } else {
                            let _ = writeln!(out, "        {line}");
                        }
                    }
                }
            }
            out
        }
    }
}

struct Case {
    config: PathBuf,
    replay: PathBuf,
    replay_bytes: usize,
    work_dir: PathBuf,
}

/// Writes a case's config and replay under `dir` (a path the user may have given).
fn write_case(dir: &Path, turns: usize, total: usize, format: Format) -> Result<Case, String> {
    let written = |path: &Path, result: std::io::Result<()>| {
        result.map_err(|error| format!("cannot write `{}`: {error}", path.display()))
    };
    written(dir, fs::create_dir_all(dir))?;
    let config = dir.join("config.yaml");
    written(&config, fs::write(&config, config_yaml()))?;
    let replay = dir.join(format!("replay-{turns}.{}", format.ext()));
    let body = replay_file(&replies(turns, total), format);
    written(&replay, fs::write(&replay, &body))?;
    let work_dir = dir.join("work");
    written(&work_dir, fs::create_dir_all(&work_dir))?;
    Ok(Case {
        config,
        replay,
        replay_bytes: body.len(),
        work_dir,
    })
}

/// The binary to time and the extra arguments given to every run.
struct Exe {
    binary: PathBuf,
    extra: Vec<String>,
}

fn command(exe: &Exe, case: &Case, events: Option<&Path>, max_turns: Option<usize>) -> Command {
    // Each run starts from an empty work dir (the session checkpoint goes there).
    let _ = fs::remove_dir_all(&case.work_dir);
    let _ = fs::create_dir_all(&case.work_dir);
    let mut cmd = Command::new(&exe.binary);
    cmd.arg("exec")
        .arg(&case.config)
        .arg("--task")
        .arg(TASK)
        .arg("--replay")
        .arg(&case.replay)
        .arg("--work-dir")
        .arg(&case.work_dir)
        .arg("--json");
    if let Some(events) = events {
        cmd.arg("--events").arg(events);
    }
    if let Some(max) = max_turns {
        cmd.arg("--max-turns").arg(max.to_string());
    }
    cmd.args(&exe.extra);
    // `--json` streams the turns to standard error and prints only the summary on
    // standard output.
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd
}

/// Runs once; returns the wall time and the parsed `--json` summary, or why it failed.
fn run_once(mut cmd: Command) -> Result<(Duration, Value), String> {
    let start = Instant::now();
    let output = cmd
        .output()
        .map_err(|e| format!("cannot start fuseraft: {e}"))?;
    let wall = start.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary: Value = serde_json::from_str(stdout.trim()).map_err(|e| {
        // Only the untimed check run keeps standard error; show its last lines.
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(6)..].join("\n");
        format!(
            "no JSON summary on standard output ({e}); exit {:?}: {stdout}{tail}",
            output.status.code()
        )
    })?;
    if summary["exit_code"].as_i64() != output.status.code().map(i64::from) {
        return Err(format!("exit code mismatch: {summary}"));
    }
    Ok((wall, summary))
}

fn check_summary(summary: &Value, turns: usize, outcome: &str) -> Result<(), String> {
    if summary["outcome"] != outcome || summary["turns"] != turns as u64 {
        return Err(format!(
            "expected outcome `{outcome}` after {turns} turns, got {summary}"
        ));
    }
    Ok(())
}

/// The events file must show exactly the scripted trace.
fn check_events(path: &Path, total: usize, turns: usize) -> Result<(), String> {
    let body = fs::read_to_string(path).map_err(|e| format!("events file: {e}"))?;
    let mut starts = Vec::new();
    let mut routes = Vec::new();
    let mut end = None;
    for line in body.lines() {
        let event: Value = serde_json::from_str(line).map_err(|e| format!("events: {e}"))?;
        match event["event_type"].as_str().unwrap_or_default() {
            "turn_start" => starts.push(event["agent"].as_str().unwrap_or_default().to_string()),
            "agent_routed" => routes.push(event["payload"].clone()),
            "session_end" => end = Some(event["payload"].clone()),
            "correction_injected" | "model_error" | "warning" => {
                return Err(format!("unexpected event: {line}"))
            }
            _ => {}
        }
    }
    if starts.len() != turns || routes.len() != turns {
        return Err(format!(
            "{} turn_start and {} agent_routed events, expected {turns}",
            starts.len(),
            routes.len()
        ));
    }
    for turn in 0..turns {
        let (agent, keyword) = text::expected_step(turn, total);
        if starts[turn] != agent {
            return Err(format!(
                "turn {turn}: {} ran, the script expected {agent}",
                starts[turn]
            ));
        }
        let to = text::target(keyword).unwrap_or("end");
        let route = &routes[turn];
        if route["signal"] != keyword || route["to"] != to || route["from"] != agent {
            return Err(format!(
                "turn {turn}: routed {route}, expected {agent} -[{keyword}]-> {to}"
            ));
        }
    }
    let end = end.ok_or("no session_end event")?;
    if end["outcome"] != "completed" || end["turns"] != turns as u64 {
        return Err(format!("session_end {end}"));
    }
    Ok(())
}

/// The child's peak RSS in KiB: `/usr/bin/time -f %M` when installed, else `VmHWM` polled
/// every millisecond (`approximate` is then true).
fn peak_rss(cmd: &Command) -> Result<(u64, bool), String> {
    let time = Path::new("/usr/bin/time");
    if time.exists() {
        let out =
            std::env::temp_dir().join(format!("fuseraft-exec-bench-rss-{}", std::process::id()));
        let mut wrapped = Command::new(time);
        wrapped.arg("-f").arg("%M").arg("-o").arg(&out);
        wrapped.arg(cmd.get_program()).args(cmd.get_args());
        wrapped
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let status = wrapped.status().map_err(|e| e.to_string())?;
        let text = fs::read_to_string(&out).map_err(|e| e.to_string())?;
        let _ = fs::remove_file(&out);
        if !status.success() {
            return Err(format!("measured run failed: {status}: {text}"));
        }
        let kib = text
            .lines()
            .last()
            .and_then(|line| line.trim().parse().ok())
            .ok_or_else(|| format!("unreadable /usr/bin/time output: {text}"))?;
        return Ok((kib, false));
    }
    let mut cmd2 = Command::new(cmd.get_program());
    cmd2.args(cmd.get_args())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd2.spawn().map_err(|e| e.to_string())?;
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(status) = fs::read_to_string(&status_path) {
            if let Some(kib) = status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            {
                peak = peak.max(kib);
            }
        }
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok((peak, true))
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

struct Timing {
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
    /// Mean CPU time (user + system) of the timed runs, from the kernel's accounting of
    /// reaped children.
    cpu_ms: Option<f64>,
}

/// User + system CPU of this process's reaped children, in ms (`/proc/self/stat` fields
/// `cutime` and `cstime`, clock ticks of 10 ms). Summed over several runs, the error of the
/// mean is 10 ms / runs at most.
fn children_cpu_ms() -> Option<f64> {
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; cutime and cstime are fields 16 and 17.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let cutime: f64 = fields.get(13)?.parse().ok()?;
    let cstime: f64 = fields.get(14)?.parse().ok()?;
    Some((cutime + cstime) * 10.0)
}

/// One warm-up, then `runs` timed runs, each checked.
fn time_runs(
    make: &dyn Fn() -> Command,
    runs: usize,
    turns: usize,
    outcome: &str,
) -> Result<Timing, String> {
    let (_, summary) = run_once(make())?;
    check_summary(&summary, turns, outcome)?;
    let mut samples = Vec::with_capacity(runs);
    let cpu_before = children_cpu_ms();
    for _ in 0..runs {
        let (wall, summary) = run_once(make())?;
        check_summary(&summary, turns, outcome)?;
        samples.push(wall.as_secs_f64() * 1e3);
    }
    let cpu_ms = match (cpu_before, children_cpu_ms()) {
        (Some(before), Some(after)) => Some((after - before) / runs as f64),
        _ => None,
    };
    let min_ms = samples.iter().cloned().fold(f64::INFINITY, f64::min);
    let max_ms = samples.iter().cloned().fold(0.0, f64::max);
    Ok(Timing {
        median_ms: median(&mut samples),
        min_ms,
        max_ms,
        cpu_ms,
    })
}

struct Options {
    turns: Vec<usize>,
    runs: usize,
    formats: Vec<Format>,
    events: bool,
    keep: Option<PathBuf>,
    generate: Option<PathBuf>,
    binary: PathBuf,
    /// Extra arguments for every `fuseraft exec` (`--extra --ephemeral`).
    extra: Vec<String>,
}

fn parse_options() -> Options {
    let mut options = Options {
        turns: vec![1001, 10001],
        runs: 5,
        formats: vec![Format::Yaml, Format::Json],
        events: false,
        keep: None,
        generate: None,
        binary: PathBuf::from(FUSERAFT),
        extra: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| panic!("{name} needs a value"))
        };
        match arg.as_str() {
            "--bench" => {} // passed by `cargo bench`
            "--turns" => {
                options.turns = value("--turns")
                    .split(',')
                    .map(|n| n.trim().parse().expect("--turns: numbers"))
                    .collect()
            }
            "--runs" => options.runs = value("--runs").parse().expect("--runs: a number"),
            "--format" => {
                options.formats = match value("--format").as_str() {
                    "yaml" => vec![Format::Yaml],
                    "json" => vec![Format::Json],
                    "both" => vec![Format::Yaml, Format::Json],
                    other => panic!("--format yaml|json|both, not {other}"),
                }
            }
            "--events" => options.events = true,
            "--keep" => options.keep = Some(PathBuf::from(value("--keep"))),
            "--generate" => options.generate = Some(PathBuf::from(value("--generate"))),
            "--fuseraft" => options.binary = PathBuf::from(value("--fuseraft")),
            "--extra" => {
                let extra = value("--extra");
                options.extra.push(extra);
            }
            other => panic!("unknown option {other}"),
        }
    }
    for &turns in &options.turns {
        assert!(
            turns >= 11 && (turns - 1) % 10 == 0,
            "turns must be 1 + 10*k with k >= 1 (11, 1001, 10001...), got {turns}"
        );
    }
    options
}

fn main() {
    let options = parse_options();
    if let Some(dir) = &options.generate {
        for &turns in &options.turns {
            for &format in &options.formats {
                let case = match write_case(dir, turns, turns, format) {
                    Ok(case) => case,
                    Err(error) => {
                        eprintln!("exec bench FAILED: {error}");
                        std::process::exit(1);
                    }
                };
                println!(
                    "{} ({} bytes), {}",
                    case.replay.display(),
                    case.replay_bytes,
                    case.config.display()
                );
            }
        }
        return;
    }
    let root = options.keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("fuseraft-exec-bench-{}", std::process::id()))
    });
    let result = bench(&options, &root);
    if options.keep.is_none() {
        let _ = fs::remove_dir_all(&root);
    }
    if let Err(error) = result {
        eprintln!("exec bench FAILED: {error}");
        std::process::exit(1);
    }
}

fn bench(options: &Options, root: &Path) -> Result<(), String> {
    let exe = &Exe {
        binary: options.binary.clone(),
        extra: options.extra.clone(),
    };
    println!(
        "fuseraft exec benchmark: {} exec ... --json {}",
        exe.binary.display(),
        exe.extra.join(" ")
    );
    println!(
        "{} timed runs per case after one warm-up; wall = the whole child process\n",
        options.runs
    );
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    let mut table = String::from(
        "| replay | events | turns | replay bytes | wall median [min-max] ms | fixed wall (1 turn) ms | µs/turn (wall) | CPU mean ms | fixed CPU ms | µs/turn (CPU) | peak RSS MiB |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for &format in &options.formats {
        let variants: &[bool] = if options.events {
            &[false, true]
        } else {
            &[false]
        };
        for &events in variants {
            let name = format!("{}{}", format.ext(), if events { "-events" } else { "" });
            let dir = root.join(&name);
            let events_path = dir.join("events.jsonl");
            let ev = events.then_some(events_path.as_path());
            // The fixed cost: the same config, a one-reply replay, one turn.
            let fixed_case = write_case(&dir, 1, 11, format)?;
            let fixed = match time_runs(
                &|| {
                    let _ = fs::remove_file(&events_path);
                    command(exe, &fixed_case, ev, Some(1))
                },
                options.runs,
                1,
                "max_turns",
            ) {
                Ok(fixed) => fixed,
                Err(error) => {
                    failures.push(format!("{name}, 1 turn: {error}"));
                    continue;
                }
            };
            for &turns in &options.turns {
                let case = write_case(&dir, turns, turns, format)?;
                let measured = measure(exe, &case, &dir, ev, turns, options.runs);
                let _ = fs::remove_file(&events_path);
                let (timing, rss_kib, approx) = match measured {
                    Ok(measured) => measured,
                    Err(error) => {
                        let _ = writeln!(
                            table,
                            "| {} | {} | {turns} | {} | FAILED | | | | | | |",
                            format.ext(),
                            if events { "yes" } else { "no" },
                            case.replay_bytes
                        );
                        failures.push(format!("{name}, {turns} turns: {error}"));
                        continue;
                    }
                };
                let us_per_turn = (timing.median_ms - fixed.median_ms) * 1e3 / turns as f64;
                let cpu_us_per_turn = match (timing.cpu_ms, fixed.cpu_ms) {
                    (Some(cpu), Some(fixed)) => Some((cpu - fixed) * 1e3 / turns as f64),
                    _ => None,
                };
                let show = |value: Option<f64>, digits: usize| {
                    value.map_or("-".to_string(), |v| format!("{v:.digits$}"))
                };
                let rss_mib = rss_kib as f64 / 1024.0;
                let _ = writeln!(
                    table,
                    "| {} | {} | {turns} | {} | {:.1} [{:.1}-{:.1}] | {:.1} | {:.2} | {} | {} | {} | {}{:.1} |",
                    format.ext(),
                    if events { "yes" } else { "no" },
                    case.replay_bytes,
                    timing.median_ms,
                    timing.min_ms,
                    timing.max_ms,
                    fixed.median_ms,
                    us_per_turn,
                    show(timing.cpu_ms, 1),
                    show(fixed.cpu_ms, 1),
                    show(cpu_us_per_turn, 2),
                    if approx { "~" } else { "" },
                    rss_mib
                );
                lines.push(json!({
                    "peer": "fuseraft",
                    "case": format!("exec-{name}"),
                    "extra_args": exe.extra.join(" "),
                    "turns": turns,
                    "replay_bytes": case.replay_bytes,
                    "runs": options.runs,
                    "wall_median_ms": round(timing.median_ms, 3),
                    "wall_min_ms": round(timing.min_ms, 3),
                    "wall_max_ms": round(timing.max_ms, 3),
                    "fixed_median_ms": round(fixed.median_ms, 3),
                    "us_per_turn": round(us_per_turn, 3),
                    "us_per_turn_plain": round(timing.median_ms * 1e3 / turns as f64, 3),
                    "cpu_mean_ms": timing.cpu_ms.map(|v| round(v, 1)),
                    "fixed_cpu_mean_ms": fixed.cpu_ms.map(|v| round(v, 1)),
                    "cpu_us_per_turn": cpu_us_per_turn.map(|v| round(v, 3)),
                    "peak_rss_mb": round(rss_mib, 1),
                    "peak_rss_approx": approx,
                }));
            }
        }
    }
    println!("{table}");
    for line in lines {
        println!("{line}");
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// The honesty check (with the events file), the timed runs, and the peak-RSS run.
fn measure(
    exe: &Exe,
    case: &Case,
    dir: &Path,
    events: Option<&Path>,
    turns: usize,
    runs: usize,
) -> Result<(Timing, u64, bool), String> {
    let check_path = dir.join("check-events.jsonl");
    let _ = fs::remove_file(&check_path);
    let mut check = command(exe, case, Some(&check_path), None);
    check.stderr(Stdio::piped());
    let (_, summary) = run_once(check)?;
    check_summary(&summary, turns, "completed")?;
    check_events(&check_path, turns, turns)?;
    let _ = fs::remove_file(&check_path);
    let timing = time_runs(
        &|| {
            if let Some(events) = events {
                let _ = fs::remove_file(events);
            }
            command(exe, case, events, None)
        },
        runs,
        turns,
        "completed",
    )?;
    if let Some(events) = events {
        let _ = fs::remove_file(events);
    }
    let (rss_kib, approx) = peak_rss(&command(exe, case, events, None))?;
    Ok((timing, rss_kib, approx))
}

fn round(value: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}
