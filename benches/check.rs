//! Check benchmark: `fuseraft_compiler::check::check` over every config of the shared
//! corpus, and over generated `statemachine` configs of 100, 1,000 and 10,000 states.
//!
//! Run with `cargo bench --bench check`. A small std-only harness: each case gets one
//! untimed warm-up, then N timed runs; the median is reported. Compilation (YAML to IR) is
//! timed separately from the checks, so the cost of the linter stage itself is visible. The
//! inputs come from memory (generated) or are read once before timing (corpus), so no disk
//! IO is measured.
//!
//! The generated graph is the one of `benches/compile.rs`: a chain of K states, a
//! transition back to state `i - 9` from every state `i` with `(i + 1) % 10 == 0`, the last
//! state terminal, 10 agents shared round-robin, and instructions that name both signals
//! (so the prompt/route check compares real text).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fuseraft_compiler::check;
use fuseraft_compiler::compile;

const AGENTS: usize = 10;

/// Files held in memory.
type Memory = fuseraft_compiler::MemoryFiles;

fn generate(k: usize) -> String {
    let mut out = String::with_capacity(k * 120 + AGENTS * 80 + 256);
    out.push_str("Orchestration:\n  Name: CheckBench\n  Agents:\n");
    for agent in 0..AGENTS {
        let _ = writeln!(out, "    - Name: Agent{agent}");
        let _ = writeln!(
            out,
            "      Instructions: You are agent {agent}. Say NEXT when your step is done, BACK to redo the phase."
        );
    }
    out.push_str("  Selection:\n    Type: statemachine\n    StateMachine:\n      Initial: S0\n      States:\n");
    for i in 0..k {
        let _ = writeln!(out, "        S{i}:");
        let _ = writeln!(out, "          Agent: Agent{}", i % AGENTS);
        if i == k - 1 {
            out.push_str("          Terminal: true\n");
            continue;
        }
        out.push_str("          Transitions:\n");
        let _ = writeln!(out, "            - To: S{}", i + 1);
        out.push_str("              Signal: NEXT\n");
        if (i + 1) % 10 == 0 {
            let _ = writeln!(out, "            - To: S{}", i - 9);
            out.push_str("              Signal: BACK\n");
        }
    }
    let _ = writeln!(
        out,
        "  Termination:\n    Type: maxiterations\n    MaxIterations: {}",
        k * 3
    );
    out
}

struct Stats {
    median: Duration,
    min: Duration,
    max: Duration,
}

fn time<T>(runs: usize, mut run: impl FnMut() -> T) -> Stats {
    black_box(run());
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(run());
            start.elapsed()
        })
        .collect();
    samples.sort();
    let n = samples.len();
    let median = if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2
    };
    Stats {
        median,
        min: samples[0],
        max: samples[n - 1],
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The corpus in memory: every file under `../shared/corpus`, and the inputs among them
/// (orchestration configs and fsm agents, as `tests/check.rs` selects them).
fn corpus() -> Option<(Memory, Vec<PathBuf>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !root.is_dir() {
        return None;
    }
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut memory = BTreeMap::new();
    let mut inputs = Vec::new();
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let is_config = (name.ends_with(".yaml") || name.ends_with(".json"))
            && (text.starts_with("Orchestration:")
                || text.contains("\nOrchestration:")
                || text.trim_start().starts_with("{\n  \"Orchestration\""));
        let is_fsm = name == "AGENT.md" && text.contains("\npattern: fsm");
        // The tama variant's siblings are those of the example at HEAD.
        if is_config || (is_fsm && !path.to_string_lossy().contains("/variants/")) {
            inputs.push(path.clone());
        }
        memory.insert(path, text);
    }
    Some((fuseraft_compiler::MemoryFiles(memory), inputs))
}

fn main() {
    let filter: Option<usize> = std::env::args().skip(1).find_map(|arg| arg.parse().ok());
    println!("## corpus\n");
    match corpus() {
        None => println!("skipped: ../shared/corpus is absent"),
        Some((memory, inputs)) => {
            let runs = 50;
            let mut compile_total = Duration::ZERO;
            let mut check_total = Duration::ZERO;
            let mut findings = 0;
            println!("| input | compile median ms | check median ms | findings |");
            println!("| --- | ---: | ---: | ---: |");
            for input in &inputs {
                let compile_stats = time(runs, || compile(input, &memory));
                let compiled = compile(input, &memory);
                let check_stats = time(runs, || check::check(&compiled));
                let found = check::check(&compiled).diagnostics.len();
                findings += found;
                compile_total += compile_stats.median;
                check_total += check_stats.median;
                let shown = input
                    .to_string_lossy()
                    .split("shared/corpus/")
                    .last()
                    .unwrap_or_default()
                    .to_string();
                println!(
                    "| {shown} | {:.3} | {:.3} | {found} |",
                    ms(compile_stats.median),
                    ms(check_stats.median)
                );
            }
            let all = time(20, || {
                for input in &inputs {
                    black_box(check::check(&compile(input, &memory)));
                }
            });
            println!(
                "\ncorpus: {} inputs, {findings} findings; sum of medians: compile {:.3} ms, check {:.3} ms",
                inputs.len(),
                ms(compile_total),
                ms(check_total)
            );
            println!(
                "{{\"case\":\"corpus\",\"inputs\":{},\"runs\":20,\"compile_and_check_all_median_ms\":{:.4},\"min_ms\":{:.4},\"max_ms\":{:.4},\"check_only_sum_ms\":{:.4}}}",
                inputs.len(),
                ms(all.median),
                ms(all.min),
                ms(all.max),
                ms(check_total)
            );
        }
    }

    println!("\n## generated statemachine configs\n");
    println!("| states | runs | compile median ms | check median ms | check min / max ms | µs/state (check) | findings |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut json = Vec::new();
    for (states, runs) in [(100usize, 30usize), (1_000, 30), (10_000, 10)] {
        if filter.is_some_and(|max| states > max) {
            continue;
        }
        let path = PathBuf::from("bench.yaml");
        let memory =
            fuseraft_compiler::MemoryFiles(BTreeMap::from([(path.clone(), generate(states))]));
        let compile_stats = time(runs, || compile(&path, &memory));
        let compiled = compile(&path, &memory);
        assert!(compiled.program.is_some(), "the generated config compiles");
        assert_eq!(
            compiled.program.as_ref().map_or(0, |p| p.states.len()),
            states
        );
        let check_stats = time(runs, || check::check(&compiled));
        let findings = check::check(&compiled);
        assert!(!findings.has_errors(), "the generated config checks clean");
        println!(
            "| {states} | {runs} | {:.3} | {:.3} | {:.3} / {:.3} | {:.3} | {} |",
            ms(compile_stats.median),
            ms(check_stats.median),
            ms(check_stats.min),
            ms(check_stats.max),
            ms(check_stats.median) * 1e3 / states as f64,
            findings.diagnostics.len()
        );
        json.push(format!(
            "{{\"case\":\"generated\",\"states\":{states},\"runs\":{runs},\"compile_median_ms\":{:.4},\"check_median_ms\":{:.4},\"check_min_ms\":{:.4},\"check_max_ms\":{:.4}}}",
            ms(compile_stats.median),
            ms(check_stats.median),
            ms(check_stats.min),
            ms(check_stats.max)
        ));
    }
    // The liveness worst case: the last state routes back to the first, the terminal is
    // declared but unreachable, so the whole chain is one trap of 10,000 states.
    let states = 10_000;
    if filter.is_none_or(|max| states <= max) {
        let path = PathBuf::from("trap.yaml");
        let text = generate(states)
            .replace(
                "          Terminal: true\n",
                "          Transitions:\n            - To: S0\n              Signal: NEXT\n",
            )
            .replace(
                "  Termination:",
                "        Done:\n          Agent: Agent0\n          Terminal: true\n  Termination:",
            );
        let memory = fuseraft_compiler::MemoryFiles(BTreeMap::from([(path.clone(), text)]));
        let compiled = compile(&path, &memory);
        let stats = time(10, || check::check(&compiled));
        let findings = check::check(&compiled);
        assert!(
            findings
                .diagnostics
                .iter()
                .any(|d| d.code.as_str() == "FR206"),
            "the trap is found"
        );
        println!(
            "\n10,000-state trap (one cycle without exit): check median {:.3} ms (min {:.3}, max {:.3}), {} findings",
            ms(stats.median),
            ms(stats.min),
            ms(stats.max),
            findings.diagnostics.len()
        );
        json.push(format!(
            "{{\"case\":\"trap\",\"states\":{states},\"runs\":10,\"check_median_ms\":{:.4},\"check_min_ms\":{:.4},\"check_max_ms\":{:.4}}}",
            ms(stats.median),
            ms(stats.min),
            ms(stats.max)
        ));
    }
    println!();
    for line in json {
        println!("{line}");
    }
}
