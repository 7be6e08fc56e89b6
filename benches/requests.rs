//! Request-size benchmark (issues 14 and 15): the bytes fuseraft sends to a model server per
//! turn and in total over long runs, with and without compaction, context fitting and
//! prompt caching. Not a timing: the figures are byte counts, the same on every machine.
//!
//! Run with `cargo bench --bench requests`. The keyword team of
//! `fixtures/compaction/team.yaml` (Planner → Developer → Tester, the tester sending every
//! third reply back to the planner) runs through the real OpenAI-compatible provider
//! against a loopback server (std only, in this file) that answers each agent with a reply
//! of about 1 KB ending in its routing keyword, answers compaction calls with a summary of
//! about 1 KB, and records every request body as sent. Cases:
//!
//! - `300 turns`: as written, and with `fixtures/compaction/compaction.yaml`'s `Compaction`
//!   (trigger 20 assistant turns, keep 6 messages), and with `lossless.yaml`'s (the same,
//!   `Mode: lossless`: no summarising call).
//! - `1,000 turns`: without fitting (the model's window set out of reach) and with fitting
//!   to a 128,000-token window (`gpt-4o`'s, from the bundled table).
//!
//! Cached bytes: a provider's prefix cache can serve at most the bytes a request shares,
//! from its start, with an earlier one (OpenAI caches prefixes automatically; Anthropic
//! from the `cache_control` breakpoints, which fuseraft places at the conversation's
//! tail). The bench counts, per request, the longest byte prefix it shares with one of the
//! three requests before it (one cycle of the three agents) as "cacheable", and the rest
//! as "uncached": what a run pays for at the full input price.
//!
//! Honesty checks: every run must end `max_turns` after exactly N turns, and the run with
//! compaction must take the same turns and routes as the run without it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use fuseraft_compiler::ir::Program;
use fuseraft_compiler::MemoryFiles;
use fuseraft_vm::driver::{drive, Approvals, Env};
use fuseraft_vm::event::EventKind;
use fuseraft_vm::machine::{Machine, Options};
use fuseraft_vm::providers::{Overrides, Providers, Settings};

/// A loopback OpenAI-compatible server: records request bodies, answers by agent.
struct Server {
    url: String,
    bodies: Arc<Mutex<Vec<String>>>,
}

fn reply_for(body: &str, tester_turns: &mut usize) -> String {
    let pad = "The step is described here in some detail for the next agent. ".repeat(15);
    if body.contains("You compact the history") {
        return format!("Summary: the team planned, built and tested in turns. {pad}");
    }
    let role = |name: &str| body.contains(&format!("\"content\":\"{name}"));
    let signal = if role("Plan the next step") {
        "HANDOFF TO DEVELOPER"
    } else if role("Do the step") {
        "HANDOFF TO TESTER"
    } else {
        *tester_turns += 1;
        if (*tester_turns).is_multiple_of(3) {
            "HANDOFF TO PLANNER"
        } else {
            "HANDOFF TO DEVELOPER"
        }
    };
    format!("{pad}\n{signal}")
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let recorded = bodies.clone();
        std::thread::spawn(move || {
            let mut tester_turns = 0;
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(value) = lower.strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    continue;
                }
                let body = String::from_utf8(body).unwrap_or_default();
                let text = reply_for(&body, &mut tester_turns);
                recorded.lock().unwrap().push(body);
                let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": "stop"}]});
                let usage = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}});
                let sse = format!("data: {chunk}\n\ndata: {usage}\n\ndata: [DONE]\n\n");
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{sse}",
                    sse.len()
                );
                let _ = stream.write_all(response.as_bytes());
            }
        });
        Server { url, bodies }
    }
}

/// The team, with the `Compaction` section of `section` (a file of `fixtures/compaction/`).
fn program(section: Option<&str>, window: Option<u64>) -> Program {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compaction");
    let mut config = std::fs::read_to_string(root.join("team.yaml")).expect("the team");
    if let Some(section) = section {
        config.push_str(&std::fs::read_to_string(root.join(section)).unwrap());
    }
    let config = config.replace("MaxIterations: 300", "MaxIterations: 100000");
    let files = MemoryFiles::new().with("team.yaml", config);
    let compiled = fuseraft_compiler::compile(Path::new("team.yaml"), &files);
    let mut program = compiled
        .program
        .unwrap_or_else(|| panic!("{:?}", compiled.diagnostics));
    for agent in &mut program.agents {
        if let Some(model) = &mut agent.model {
            model.context_window = window;
        }
    }
    program
}

struct Measured {
    /// Request body sizes in order (agents' and compaction calls').
    sizes: Vec<usize>,
    /// Per request, the bytes shared from its start with one of the three before it.
    cacheable: Vec<usize>,
    trace: Vec<String>,
    compactions: usize,
}

fn run(turns: u32, compaction: Option<&str>, window: Option<u64>) -> Measured {
    let server = Server::start();
    let program = program(compaction, window);
    let overrides = Overrides {
        endpoint: Some(server.url.clone()),
        ..Overrides::default()
    };
    let providers = Providers::new(&program, &overrides, Settings::default(), &|_| None, None)
        .expect("providers");
    let work = std::env::temp_dir().join(format!("fuseraft-bench-requests-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let env = Env {
        work_dir: work.clone(),
        deny_read: Vec::new(),
        approvals: Approvals::All,
        pause: None,
    };
    let machine = Machine::new(
        &program,
        Options {
            session_id: "bench".into(),
            task: "Build the thing, step by step.".into(),
            max_turns: Some(turns),
            skip_prompts: false,
        },
    );
    let mut trace = Vec::new();
    let mut compactions = 0;
    let mut on_event =
        |event: &fuseraft_vm::event::Event, _: &fuseraft_vm::machine::Run| match event.kind {
            EventKind::TurnStart { .. } | EventKind::AgentRouted { .. } => {
                trace.push(format!("{:?} {}", event.agent, event.payload_json()))
            }
            EventKind::Compaction { .. } => compactions += 1,
            _ => {}
        };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let summary = runtime.block_on(drive(machine, &providers, &env, &mut on_event, None));
    let _ = std::fs::remove_dir_all(&work);
    assert_eq!(
        summary.outcome.as_str(),
        "max_turns",
        "{:?}",
        summary.reason
    );
    assert_eq!(summary.turns, turns);
    let bodies = server.bodies.lock().unwrap();
    let sizes = bodies.iter().map(String::len).collect();
    let cacheable = bodies
        .iter()
        .enumerate()
        .map(|(idx, body)| {
            bodies[idx.saturating_sub(3)..idx]
                .iter()
                .map(|earlier| {
                    earlier
                        .bytes()
                        .zip(body.bytes())
                        .take_while(|(a, b)| a == b)
                        .count()
                })
                .max()
                .unwrap_or(0)
        })
        .collect();
    Measured {
        sizes,
        cacheable,
        trace,
        compactions,
    }
}

fn mb(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn kb(bytes: usize) -> String {
    format!("{:.1} KB", bytes as f64 / 1e3)
}

fn row(name: &str, measured: &Measured) -> String {
    let total: usize = measured.sizes.iter().sum();
    let cached: usize = measured.cacheable.iter().sum();
    let at = |turn: usize| {
        measured
            .sizes
            .get(turn.min(measured.sizes.len()) - 1)
            .copied()
            .unwrap_or(0)
    };
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} |",
        measured.sizes.len(),
        measured.compactions,
        kb(at(100)),
        kb(at(measured.sizes.len())),
        kb(*measured.sizes.iter().max().unwrap_or(&0)),
        mb(total),
        mb(cached),
        mb(total - cached),
    )
}

fn main() {
    let header = "| run | requests | compactions | request 100 | last request | largest | total sent | cacheable prefix | uncached |\n|---|---|---|---|---|---|---|---|---|";
    let out_of_reach = Some(1 << 40);
    let plain = run(300, None, out_of_reach);
    let compacted = run(300, Some("compaction.yaml"), out_of_reach);
    let lossless = run(300, Some("lossless.yaml"), out_of_reach);
    for other in [&compacted, &lossless] {
        assert_eq!(plain.trace, other.trace, "compaction changed the routes");
    }
    println!("{header}");
    println!("{}", row("300 turns, no compaction", &plain));
    println!("{}", row("300 turns, compaction (20 / keep 6)", &compacted));
    println!(
        "{}",
        row("300 turns, lossless compaction (20 / keep 6)", &lossless)
    );
    let unfitted = run(1000, None, out_of_reach);
    let fitted = run(1000, None, None);
    println!("{}", row("1,000 turns, no fitting", &unfitted));
    println!("{}", row("1,000 turns, fitted to 128k tokens", &fitted));
    let both = run(1000, Some("compaction.yaml"), None);
    println!("{}", row("1,000 turns, compaction and fitting", &both));
}
