//! Compile-time benchmark: generated `statemachine` configs of 100, 1,000 and 10,000 states.
//!
//! Run with `cargo bench --bench compile`. No criterion: a small std-only harness that
//! times the whole `fuseraft_compiler::compile` (YAML text to checked IR, served from
//! memory so no disk IO is measured) and, separately, `ir::print` of the result.
//!
//! The graph mirrors the peers' compile benchmark (`../shared/bench/bench_langgraph.py`,
//! `build_chain`): a chain of K states; state `i` with `(i + 1) % 10 == 0` also has a
//! transition back to state `i - 9`; the last state is `Terminal: true`; 10 agents are
//! shared round-robin by the states.
//!
//! Output: a markdown table, one JSON line per size (for regenerating the docs), a
//! sub-stage breakdown, and a linear-growth check (µs/state at 10k vs 1k).

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use fuseraft_compiler::compile;
use fuseraft_compiler::ir::{self, PrintOptions};
use fuseraft_compiler::syntax::{fuseraft::read_config, Loader};

const AGENTS: usize = 10;

/// (states, timed runs).
const SIZES: &[(usize, usize)] = &[(100, 30), (1_000, 30), (10_000, 10)];

/// The YAML of a `k`-state chain with a back transition every 10 states.
fn generate(k: usize) -> String {
    let mut out = String::with_capacity(k * 120 + AGENTS * 80 + 256);
    out.push_str("Orchestration:\n  Name: CompileBench\n  Agents:\n");
    for agent in 0..AGENTS {
        let _ = writeln!(out, "    - Name: Agent{agent}");
        let _ = writeln!(
            out,
            "      Instructions: You are agent {agent}. Do your step and hand off."
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
    out
}

#[derive(Clone, Copy)]
struct Stats {
    median: Duration,
    min: Duration,
    max: Duration,
}

fn stats(samples: &mut [Duration]) -> Stats {
    samples.sort_unstable();
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

/// Times `run` `n` times after one untimed warm-up run.
fn time<T>(n: usize, mut run: impl FnMut() -> T) -> Stats {
    black_box(run());
    let mut samples: Vec<Duration> = (0..n)
        .map(|_| {
            let start = Instant::now();
            let out = run();
            let elapsed = start.elapsed();
            drop(black_box(out));
            elapsed
        })
        .collect();
    stats(&mut samples)
}

struct Row {
    states: usize,
    runs: usize,
    bytes: usize,
    compile: Stats,
    print: Stats,
    ir_bytes: usize,
    /// Medians of the sub-stages: read + YAML parse, typed config, the rest (lower + check).
    parse: Duration,
    config: Duration,
}

fn bench(states: usize, runs: usize) -> Row {
    let path = PathBuf::from("bench/statemachine.yaml");
    let text = generate(states);
    let reader = fuseraft_compiler::MemoryFiles::new().with(path.clone(), text.as_str());

    // Correctness first: a benchmark of a failing compile is worthless.
    let compiled = compile(&path, &reader);
    let errors: Vec<String> = compiled
        .diagnostics
        .iter()
        .filter(|diag| diag.is_error())
        .map(|diag| format!("{diag:?}"))
        .collect();
    let program = compiled
        .program
        .unwrap_or_else(|| panic!("{states}-state config did not compile: {errors:#?}"));
    assert_eq!(program.states.len(), states, "state count");
    let exits: usize = program.states.iter().map(|state| state.exits.len()).sum();
    assert_eq!(exits, states - 1 + (states - 1) / 10, "transition count");

    let compile_stats = time(runs, || {
        let compiled = compile(black_box(&path), &reader);
        assert!(compiled.program.is_some());
        compiled
    });
    let options = PrintOptions::default();
    let ir_bytes = ir::print(&program, &options).len();
    let print_stats = time(runs, || ir::print(black_box(&program), &options));

    // Sub-stages through the public syntax API (the lowering itself is crate-private, so it
    // is the remainder of the whole compile).
    let parse = time(runs, || {
        let mut loader = Loader::new(&reader);
        let file = loader.read(&path, None, "config").expect("read");
        let root = loader.parse(file).expect("parse");
        (loader.sources, root)
    });
    let config = time(runs, || {
        let mut loader = Loader::new(&reader);
        let file = loader.read(&path, None, "config").expect("read");
        let root = loader.parse(file).expect("parse");
        let dir = loader.sources.get(file).dir().to_path_buf();
        let config = read_config(root, &dir, &mut loader).expect("config");
        (loader.sources, config)
    });

    Row {
        states,
        runs,
        bytes: text.len(),
        compile: compile_stats,
        print: print_stats,
        ir_bytes,
        parse: parse.median,
        config: config.median,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; an optional number limits the sizes (e.g. `-- 1000`).
    let limit: Option<usize> = std::env::args().skip(1).find_map(|arg| arg.parse().ok());
    let rows: Vec<Row> = SIZES
        .iter()
        .filter(|(states, _)| limit.is_none_or(|limit| *states <= limit))
        .map(|&(states, runs)| bench(states, runs))
        .collect();

    println!(
        "## compile: YAML text -> IR (whole `fuseraft_compiler::compile`, in-memory reader)\n"
    );
    println!("| states | YAML bytes | runs | median ms | min ms | max ms | µs/state | print median ms | IR bytes |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for row in &rows {
        println!(
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.2} | {:.3} | {} |",
            row.states,
            row.bytes,
            row.runs,
            ms(row.compile.median),
            ms(row.compile.min),
            ms(row.compile.max),
            ms(row.compile.median) * 1e3 / row.states as f64,
            ms(row.print.median),
            row.ir_bytes,
        );
    }

    println!("\n## sub-stages (medians)\n");
    println!(
        "| states | read + YAML parse ms | + typed config ms | lower + check ms (remainder) |"
    );
    println!("| ---: | ---: | ---: | ---: |");
    for row in &rows {
        let config_only = row.config.saturating_sub(row.parse);
        let rest = row.compile.median.saturating_sub(row.config);
        println!(
            "| {} | {:.3} | {:.3} | {:.3} |",
            row.states,
            ms(row.parse),
            ms(config_only),
            ms(rest),
        );
    }

    println!();
    for row in &rows {
        println!(
            "{{\"states\":{},\"yaml_bytes\":{},\"runs\":{},\"median_ms\":{:.4},\"min_ms\":{:.4},\"max_ms\":{:.4},\"us_per_state\":{:.3},\"print_median_ms\":{:.4},\"print_min_ms\":{:.4},\"print_max_ms\":{:.4},\"ir_bytes\":{},\"parse_median_ms\":{:.4},\"config_median_ms\":{:.4}}}",
            row.states,
            row.bytes,
            row.runs,
            ms(row.compile.median),
            ms(row.compile.min),
            ms(row.compile.max),
            ms(row.compile.median) * 1e3 / row.states as f64,
            ms(row.print.median),
            ms(row.print.min),
            ms(row.print.max),
            row.ir_bytes,
            ms(row.parse),
            ms(row.config),
        );
    }

    let per_state = |states: usize| {
        rows.iter()
            .find(|row| row.states == states)
            .map(|row| row.compile.median.as_secs_f64() / states as f64)
    };
    println!();
    if let (Some(small), Some(large)) = (per_state(1_000), per_state(10_000)) {
        let ratio = large / small;
        let verdict = if ratio <= 1.5 { "linear" } else { "NOT linear" };
        println!("growth: µs/state at 10k / at 1k = {ratio:.2} ({verdict}; limit 1.5)");
    }
    if let Some(row) = rows.iter().find(|row| row.states == 10_000) {
        let met = row.compile.median < Duration::from_millis(100);
        println!(
            "target: 10,000 states in under 100 ms: {} (median {:.2} ms)",
            if met { "met" } else { "NOT met" },
            ms(row.compile.median)
        );
    }
}
