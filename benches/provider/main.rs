//! Provider-path benchmark: the peers' agent-turn workload (`../exec/text.rs`) answered by a
//! loopback OpenAI-compatible server instead of a replay file, so every turn goes through a
//! real HTTP request, a streamed reply decoded chunk by chunk and the streamed text written
//! to standard output (a file here: not a terminal).
//!
//! Run with `cargo bench --bench provider` (builds the release `fuseraft` binary first). The
//! server (in this process, on 127.0.0.1) answers each run's N-th request with the
//! script's N-th reply, ~1.95 KB, streamed at once as OpenAI `chat.completion.chunk` events
//! of about one token (4 bytes) each, then a usage event and `data: [DONE]`. It checks
//! that the request is the agent the script expects at that turn (by the agent's
//! instructions in the system message) and answers anything else with an HTTP 400, so a
//! mis-routed run fails instead of producing a number; after each run it must have served
//! exactly the script's turns.
//!
//! CPU per turn: `(median CPU(N turns) − median CPU(1 turn)) / (N − 1)` over the runs, the CPU (user +
//! system, `getrusage` of the reaped children) of whole `fuseraft exec` processes (start,
//! compile, the run, the summary), so the fixed cost cancels out; the server's own CPU is
//! this process's and is not counted. With `--python PATH` (a Python with `langgraph` and
//! `langchain-openai`), the same is measured for `langgraph_peer.py`: a LangGraph
//! `StateGraph` whose nodes call `ChatOpenAI(streaming=True)` against the same server with
//! the whole history, routed by `../shared/bench/common.py`'s router.
//!
//! Options (after `--`): `--turns N` (default 201, `1 + 10k`), `--runs N` (default 5),
//! `--python PATH`, `--common DIR` (where `common.py` is, default `../shared/bench`),
//! `--fuseraft PATH` (time another build).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;
use serde_json::{json, Value};

// Shared with the exec bench, which uses all of it.
#[path = "../exec/text.rs"]
#[allow(dead_code)]
mod text;

const FUSERAFT: &str = env!("CARGO_BIN_EXE_fuseraft");
const TASK: &str = "Add a --verbose flag to the parser CLI and test it.";
/// Each agent's instructions: how the server tells who is asking.
const INSTRUCTIONS: [(&str, &str); 4] = [
    ("Planner", "Plan the work."),
    ("Developer", "Write the code."),
    ("Tester", "Run the tests."),
    ("Reviewer", "Review the change."),
];

/// A run the server is answering: how many turns its script has, how many it served, and
/// the first thing that went wrong.
#[derive(Default)]
struct RunState {
    total: usize,
    served: usize,
    error: Option<String>,
}

type Runs = Arc<Mutex<HashMap<u64, RunState>>>;

/// The streamed body of the script's reply at `turn`.
fn sse_body(reply: &str) -> String {
    let mut body = String::new();
    let mut chunk = |delta: Value, finish: Value| {
        let event = json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
            "model": "bench",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        let _ = write!(body, "data: {event}\n\n");
    };
    chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    let mut piece = String::new();
    for c in reply.chars() {
        piece.push(c);
        if piece.len() >= 4 {
            chunk(json!({"content": piece}), Value::Null);
            piece.clear();
        }
    }
    if !piece.is_empty() {
        chunk(json!({"content": piece}), Value::Null);
    }
    chunk(json!({}), json!("stop"));
    let usage = json!({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
        "model": "bench", "choices": [],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500},
    });
    let _ = write!(body, "data: {usage}\n\ndata: [DONE]\n\n");
    body
}

/// The agent whose instructions open the request's system message.
fn asking_agent(request: &Value) -> Option<&'static str> {
    let messages = request.get("messages")?.as_array()?;
    let system = messages
        .iter()
        .find(|message| message.get("role").and_then(Value::as_str) == Some("system"))?;
    let content = system.get("content")?.as_str()?;
    INSTRUCTIONS
        .iter()
        .find(|(_, instructions)| content.contains(instructions))
        .map(|(agent, _)| *agent)
}

/// Serves one keep-alive connection: `POST /run/<id>/v1/chat/completions`.
fn serve_connection(stream: TcpStream, runs: Runs, bodies: Arc<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("a socket clone"));
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let id: Option<u64> = request_line
            .split_whitespace()
            .nth(1)
            .and_then(|path| path.strip_prefix("/run/"))
            .and_then(|rest| rest.split('/').next())
            .and_then(|id| id.parse().ok());
        let answer = {
            let mut runs = runs.lock().expect("the runs");
            match id.and_then(|id| runs.get_mut(&id)) {
                None => Err("no such run".to_string()),
                Some(run) => {
                    let turn = run.served;
                    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let asking = asking_agent(&request);
                    let expected =
                        (turn < run.total).then(|| text::expected_step(turn, run.total).0);
                    if expected.is_some() && asking == expected {
                        run.served += 1;
                        Ok(turn)
                    } else {
                        let error = format!(
                            "turn {turn}: {asking:?} asked, the script expects {expected:?}"
                        );
                        run.error.get_or_insert(error.clone());
                        Err(error)
                    }
                }
            }
        };
        let response = match answer {
            Ok(turn) => {
                let body = &bodies[turn];
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                )
            }
            Err(error) => {
                let body = json!({"error": {"message": error}}).to_string();
                format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                )
            }
        };
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// Starts the server; returns its port.
fn start_server(runs: Runs, turns: usize) -> u16 {
    let filler = text::filler();
    let bodies: Arc<Vec<String>> = Arc::new(
        (0..turns)
            .map(|turn| sse_body(&text::reply(&filler, turn, turns)))
            .collect(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (runs, bodies) = (Arc::clone(&runs), Arc::clone(&bodies));
            std::thread::spawn(move || serve_connection(stream, runs, bodies));
        }
    });
    port
}

/// The keyword-routing config of the exec bench, with each agent's model on the server.
fn config_yaml() -> String {
    let mut out = String::from("Orchestration:\n  Name: ProviderBench\n  Agents:\n");
    for (agent, instructions) in INSTRUCTIONS {
        let _ = writeln!(
            out,
            "    - {{ Name: {agent}, Instructions: {instructions} }}"
        );
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
    out.push_str("  Termination:\n    Type: maxiterations\n    MaxIterations: 10000000\n");
    out
}

/// CPU seconds (user + system) of the children reaped so far.
fn children_cpu() -> f64 {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let seconds = |time: TimeVal| time.tv_sec() as f64 + time.tv_usec() as f64 / 1e6;
    seconds(usage.user_time()) + seconds(usage.system_time())
}

/// Who is measured.
enum Peer<'a> {
    Fuseraft {
        exe: &'a str,
        config: &'a Path,
    },
    LangGraph {
        python: &'a str,
        script: &'a Path,
        common: &'a Path,
    },
}

impl Peer<'_> {
    fn name(&self) -> &'static str {
        match self {
            Peer::Fuseraft { .. } => "fuseraft",
            Peer::LangGraph { .. } => "langgraph+langchain-openai",
        }
    }

    fn command(&self, url: &str, turns: usize, dir: &Path) -> Command {
        match self {
            Peer::Fuseraft { exe, config } => {
                let mut cmd = Command::new(exe);
                cmd.arg("exec")
                    .arg(config)
                    .args(["--task", TASK, "--model", "openai-compatible:bench"])
                    .args(["--endpoint", url, "--ephemeral", "--work-dir"])
                    .arg(dir);
                if turns == 1 {
                    cmd.args(["--max-turns", "1"]);
                }
                cmd
            }
            Peer::LangGraph {
                python,
                script,
                common,
            } => {
                let mut cmd = Command::new(python);
                cmd.arg(script)
                    .args(["--base-url", url, "--turns", &turns.to_string(), "--common"])
                    .arg(common);
                cmd
            }
        }
    }
}

/// Runs `peer` for `turns` turns `runs` times (after one warm-up); the median CPU seconds
/// (a run that another process on the machine slowed down moves a mean, not the median).
fn measure(
    peer: &Peer<'_>,
    runs_state: &Runs,
    port: u16,
    turns: usize,
    runs: usize,
    root: &Path,
) -> Result<f64, String> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let mut spent_by_run = Vec::with_capacity(runs);
    for round in 0..=runs {
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // The 1-turn run's script is the full one's first turn.
        runs_state.lock().expect("the runs").insert(
            id,
            RunState {
                total: turns,
                ..RunState::default()
            },
        );
        let dir = root.join(format!("run-{id}"));
        std::fs::create_dir_all(&dir).map_err(|error| error.to_string())?;
        let out = std::fs::File::create(root.join(format!("out-{id}.txt")))
            .map_err(|error| error.to_string())?;
        let url = format!("http://127.0.0.1:{port}/run/{id}/v1");
        let before = children_cpu();
        let status = peer
            .command(&url, turns, &dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(Stdio::null())
            .status()
            .map_err(|error| format!("{}: {error}", peer.name()))?;
        let spent = children_cpu() - before;
        let state = runs_state
            .lock()
            .expect("the runs")
            .remove(&id)
            .expect("the run");
        if let Some(error) = state.error {
            return Err(format!(
                "{}: the server refused a request: {error}",
                peer.name()
            ));
        }
        if !status.success() {
            return Err(format!(
                "{}: exit status {status} (output in {})",
                peer.name(),
                root.display()
            ));
        }
        if state.served != turns {
            return Err(format!(
                "{}: {} requests served, the script has {turns}",
                peer.name(),
                state.served
            ));
        }
        if round > 0 {
            spent_by_run.push(spent);
        }
    }
    spent_by_run.sort_by(f64::total_cmp);
    let middle = spent_by_run.len() / 2;
    Ok(if spent_by_run.len() % 2 == 1 {
        spent_by_run[middle]
    } else {
        (spent_by_run[middle - 1] + spent_by_run[middle]) / 2.0
    })
}

fn main() {
    let mut turns = 201;
    let mut runs = 5;
    let mut python: Option<String> = None;
    let mut common = PathBuf::from("../shared/bench");
    let mut exe = FUSERAFT.to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--turns" => turns = value().parse().expect("--turns N"),
            "--runs" => runs = value().parse().expect("--runs N"),
            "--python" => python = Some(value()),
            "--common" => common = PathBuf::from(value()),
            "--fuseraft" => exe = value(),
            "--bench" => {}
            other => panic!("unknown option {other}"),
        }
    }
    assert!(
        turns > 1 && (turns - 1) % 10 == 0,
        "--turns must be 1 + 10k"
    );
    let root = std::env::temp_dir().join(format!("fuseraft-bench-provider-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("a scratch directory");
    let config = root.join("config.yaml");
    std::fs::write(&config, config_yaml()).expect("the config");
    let state: Runs = Arc::default();
    let port = start_server(Arc::clone(&state), turns);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/provider/langgraph_peer.py");
    let mut peers = vec![Peer::Fuseraft {
        exe: &exe,
        config: &config,
    }];
    if let Some(python) = &python {
        peers.push(Peer::LangGraph {
            python,
            script: &script,
            common: &common,
        });
    }
    let mut failed = false;
    for peer in &peers {
        let result = measure(peer, &state, port, turns, runs, &root).and_then(|full| {
            let fixed = measure(peer, &state, port, 1, runs, &root)?;
            Ok((full, fixed))
        });
        match result {
            Ok((full, fixed)) => {
                let per_turn_us = (full - fixed) / (turns - 1) as f64 * 1e6;
                println!(
                    "{}",
                    json!({
                        "peer": peer.name(), "turns": turns, "runs": runs,
                        "cpu_s": full, "fixed_cpu_s": fixed,
                        "cpu_us_per_turn": per_turn_us.round(),
                    })
                );
                println!(
                    "  {}: {:.0} µs of CPU per turn ({turns} turns {full:.3} s, 1 turn {fixed:.3} s, medians of {runs})",
                    peer.name(),
                    per_turn_us
                );
            }
            Err(error) => {
                println!("FAILED {error}");
                failed = true;
            }
        }
    }
    if !failed {
        let _ = std::fs::remove_dir_all(&root);
    }
    std::process::exit(i32::from(failed));
}
