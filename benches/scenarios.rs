//! `fuseraft test` benchmark: 100 scenarios of 50 turns each, checked against their snapshots.
//!
//! Run with `cargo bench --bench scenarios`. A small std-only harness: it generates a project
//! in a temporary directory (one state-machine config of five agents in a ring, and 100
//! scenarios of 50 turns with inline replies: routing signals, a missing-signal correction
//! and a file write in each), accepts their snapshots once, then times whole
//! `scenario::run_all` passes (discovery excluded) on the default thread pool and asserts
//! every scenario passed, so a broken run cannot be timed by mistake.
//!
//! `cargo bench --bench scenarios -- --keep` leaves the project in place and prints its
//! path, to time the CLI as a whole process:
//! `/usr/bin/time -v target/release/fuseraft test DIR`.
//!
//! `-- --threads N` runs on N threads instead of one per available core.
//!
//! Output: a markdown row and one JSON line.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fuseraft::render::Style;
use fuseraft::scenario::{self, pool, Settings, Verdict};

const SCENARIOS: usize = 100;
const TURNS: usize = 50;
const AGENTS: usize = 5;
const RUNS: usize = 10;

fn config() -> String {
    let mut out = String::from("Orchestration:\n  Name: ScenarioBench\n  Agents:\n");
    for agent in 0..AGENTS {
        let _ = writeln!(
            out,
            "    - {{ Name: Agent{agent}, Instructions: Work then hand off., Plugins: [FileSystem, Handoff] }}"
        );
    }
    out.push_str("  Selection:\n    Type: statemachine\n    StateMachine:\n      Initial: S0\n      States:\n");
    for state in 0..AGENTS {
        let next = (state + 1) % AGENTS;
        let _ = writeln!(
            out,
            "        S{state}:\n          Agent: Agent{state}\n          Transitions:\n            - {{ To: S{next}, Signal: HANDOFF TO S{next} }}\n            - {{ To: S0, Signal: START OVER }}"
        );
    }
    let _ = writeln!(
        out,
        "  Termination:\n    Type: maxiterations\n    MaxIterations: {TURNS}"
    );
    out
}

/// Scenario `n`: every agent hands on; agent `n % 5` forgets the signal once (a
/// correction), and agent 0 writes a file on its first turn.
fn scenario(n: usize) -> String {
    let mut out = format!("config: config.yaml\ntask: Bench task {n}.\nreplies:\n");
    for agent in 0..AGENTS {
        let next = (agent + 1) % AGENTS;
        let _ = writeln!(out, "  Agent{agent}:");
        if agent == 0 {
            let _ = writeln!(
                out,
                "    - tool_calls: [ {{ name: write_file, args: {{ path: notes/{n}.md, content: \"scenario {n}\\n\" }} }} ]\n      text: \"Started.\\nHANDOFF TO S{next}\""
            );
        }
        if agent == n % AGENTS {
            let _ = writeln!(out, "    - text: \"Thinking about it.\"");
        }
        let _ = writeln!(
            out,
            "    - text: \"Step done.\\nHANDOFF TO S{next}\"\n      times: {TURNS}"
        );
    }
    out
}

fn generate(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config.yaml"), config()).unwrap();
    for n in 0..SCENARIOS {
        std::fs::write(dir.join(format!("s{n:03}.scenario.yaml")), scenario(n)).unwrap();
    }
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let keep = std::env::args().any(|arg| arg == "--keep");
    let dir: PathBuf =
        std::env::temp_dir().join(format!("fuseraft-scenario-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    generate(&dir);
    let scenarios = scenario::discover::discover(std::slice::from_ref(&dir)).unwrap();
    assert_eq!(scenarios.len(), SCENARIOS);
    let threads = std::env::args()
        .skip_while(|arg| arg != "--threads")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(pool::default_threads);
    let settings = Settings {
        accept: true,
        coverage: false,
        style: Style::plain(),
        threads,
        trust_mcp: false,
    };
    // Accept once (also the warm-up), then check.
    let reports = scenario::run_all(&scenarios, settings);
    assert!(reports
        .iter()
        .all(|r| !r.verdict.is_error() && !r.verdict.is_failure()));
    let turns: usize = reports
        .iter()
        .map(|r| r.trace.lines().filter(|l| l.contains(" → ")).count())
        .sum();
    let check = Settings {
        accept: false,
        ..settings
    };
    let mut samples = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let reports = scenario::run_all(&scenarios, check);
        samples.push(started.elapsed());
        assert!(
            reports.iter().all(|r| matches!(r.verdict, Verdict::Passed)),
            "every scenario passes"
        );
    }
    let min = *samples.iter().min().unwrap();
    let max = *samples.iter().max().unwrap();
    let median = median(&mut samples);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("| scenarios | turns each | routes taken (all) | threads | median | min / max |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| {SCENARIOS} | {TURNS} | {turns} | {threads} | **{:.1} ms** | {:.1} / {:.1} ms |",
        ms(median),
        ms(min),
        ms(max)
    );
    println!(
        "{{\"scenarios\":{SCENARIOS},\"turns\":{TURNS},\"routes\":{turns},\"threads\":{threads},\"runs\":{RUNS},\"median_ms\":{:.2},\"min_ms\":{:.2},\"max_ms\":{:.2},\"per_scenario_ms\":{:.3}}}",
        ms(median),
        ms(min),
        ms(max),
        ms(median) / SCENARIOS as f64
    );
    if keep {
        println!("project kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
