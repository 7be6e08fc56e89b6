//! The OpenTelemetry tier: replayed workflows run by the real `fuseraft exec --otlp` against
//! a real OpenTelemetry backend, Arize Phoenix (`.ci/otel-deps.sh` installs it; without it
//! every test here fails, naming the script), and their spans read back through Phoenix's
//! own REST API: the trace's shape, the GenAI attributes, the content opt-in, a resumed
//! session's one trace. And a collector that accepts connections and never answers: the
//! run takes no longer than without telemetry.
#![cfg(feature = "otel-tests")]

mod phoenix;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value as Json;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Runs `exec` with `args` in `work`, returning its output.
fn exec(work: &Path, args: &[&str]) -> Output {
    exec_with(work, args, None)
}

/// `exec` with `OTEL_EXPORTER_OTLP_ENDPOINT` set to `endpoint` (else unset).
fn exec_with(work: &Path, args: &[&str], endpoint: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command
        .arg("exec")
        .args(args)
        .args(["--work-dir", work.to_str().expect("a UTF-8 temp dir")])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        // Phoenix shares the test machine with the other servers of this tier: give its
        // answers the time a loaded machine needs, so no span is left in the queue.
        .env("OTEL_BSP_EXPORT_TIMEOUT", "10000");
    if let Some(endpoint) = endpoint {
        command.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    }
    command.output().expect("fuseraft runs")
}

/// The spans of a replayed fixture run sent to Phoenix, once its root is in.
fn fixture_trace(phoenix: &phoenix::Phoenix, case: &str, task: &str, approve: &str) -> Vec<Json> {
    let work = tempfile::tempdir().expect("a temp dir");
    let config = fixture(&format!("fixtures/run/{case}/config.yaml"));
    let replay = fixture(&format!("fixtures/run/{case}/replay.yaml"));
    let output = exec(
        work.path(),
        &[
            config.to_str().unwrap(),
            "--replay",
            replay.to_str().unwrap(),
            "--task",
            task,
            "--approve",
            approve,
            "--json",
            "--otlp",
            &phoenix.url(),
        ],
    );
    let trace = fuseraft::telemetry::trace_id(&session_of(&output)).to_string();
    phoenix.spans_of(&trace, 2, &|spans| named(spans, "session ").len() == 1)
}

/// The name of `span`'s parent among `spans`.
fn parent_name<'a>(spans: &'a [Json], span: &Json) -> &'a str {
    spans
        .iter()
        .find(|parent| span_id(parent) == span["parent_id"].as_str().unwrap_or("-"))
        .and_then(|parent| parent["name"].as_str())
        .unwrap_or("")
}

/// The `--json` summary's session id.
fn session_of(output: &Output) -> String {
    let summary: Json = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "no JSON summary ({error}); stderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    summary["session_id"]
        .as_str()
        .expect("the summary names its session")
        .to_string()
}

fn attr<'a>(span: &'a Json, key: &str) -> &'a Json {
    &span["attributes"][key]
}

fn named<'a>(spans: &'a [Json], prefix: &str) -> Vec<&'a Json> {
    spans
        .iter()
        .filter(|span| {
            span["name"]
                .as_str()
                .is_some_and(|name| name.starts_with(prefix))
        })
        .collect()
}

fn span_id(span: &Json) -> &str {
    span["context"]["span_id"].as_str().unwrap_or_default()
}

const SECRET_TASK: &str = "Make the tests pass; the word only the prompt holds is PERIWINKLE-42.";

/// The stuck fixture (a Developer calling `shell_run`, a validator failing three times) as
/// one trace: session → turns → chat and tool spans, with the GenAI attributes and no text
/// of the prompt; then `--resume` continues the same trace under the first run's root.
#[test]
fn a_runs_trace_reads_back_from_phoenix_in_the_genai_shape() {
    let phoenix = phoenix::server();
    let work = tempfile::tempdir().expect("a temp dir");
    let config = fixture("fixtures/run/stuck/config.yaml");
    let replay = fixture("fixtures/run/stuck/replay.yaml");
    let output = exec(
        work.path(),
        &[
            config.to_str().unwrap(),
            "--replay",
            replay.to_str().unwrap(),
            "--task",
            SECRET_TASK,
            "--approve",
            "all",
            "--json",
            "--otlp",
            &phoenix.url(),
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("telemetry"), "{stderr}");
    let session = session_of(&output);
    let trace = fuseraft::telemetry::trace_id(&session).to_string();
    // 1 session, 3 turns, 3 chat calls, 3 tool calls, 3 failed validators.
    let spans = phoenix.spans_of(&trace, 13, &|spans| named(spans, "session ").len() == 1);
    let text = Json::Array(spans.clone()).to_string();
    assert!(
        !text.contains("PERIWINKLE"),
        "the prompt is in the spans without the opt-in: {text}"
    );

    let roots = named(&spans, "session ");
    assert_eq!(roots.len(), 1, "{text}");
    let root = roots[0];
    assert_eq!(root["name"], "session Stuck");
    assert!(root["parent_id"].is_null(), "{root}");
    let root_id = fuseraft::telemetry::root_span_id(&session).to_string();
    assert_eq!(span_id(root), root_id);
    assert_eq!(attr(root, "gen_ai.conversation.id"), session.as_str());
    assert_eq!(attr(root, "fuseraft.outcome"), "stuck");
    assert_eq!(root["status_code"], "ERROR");

    let turns = named(&spans, "invoke_agent ");
    assert_eq!(turns.len(), 3, "{text}");
    for turn in &turns {
        assert_eq!(turn["name"], "invoke_agent Developer");
        assert_eq!(turn["parent_id"], root_id.as_str());
        assert_eq!(attr(turn, "gen_ai.operation.name"), "invoke_agent");
        assert_eq!(attr(turn, "gen_ai.agent.name"), "Developer");
        let events: Vec<&str> = turn["events"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|event| event["name"].as_str())
            .collect();
        assert!(events.contains(&"signal_detected"), "{turn}");
    }
    let turn_ids: Vec<&str> = turns.iter().map(|turn| span_id(turn)).collect();
    let under_a_turn = |span: &&Json| {
        span["parent_id"]
            .as_str()
            .is_some_and(|parent| turn_ids.contains(&parent))
    };
    let chats = named(&spans, "chat ");
    assert_eq!(chats.len(), 3, "{text}");
    for chat in &chats {
        assert!(under_a_turn(chat), "{chat}");
        assert_eq!(attr(chat, "gen_ai.operation.name"), "chat");
        assert!(attr(chat, "gen_ai.provider.name").is_string(), "{chat}");
        assert!(attr(chat, "gen_ai.request.model").is_string(), "{chat}");
        assert_eq!(attr(chat, "gen_ai.usage.input_tokens"), 0);
        assert_eq!(attr(chat, "gen_ai.usage.output_tokens"), 0);
    }
    let tools = named(&spans, "execute_tool ");
    assert_eq!(tools.len(), 3, "{text}");
    for tool in &tools {
        assert_eq!(tool["name"], "execute_tool shell_run");
        assert!(under_a_turn(tool), "{tool}");
        assert_eq!(attr(tool, "gen_ai.tool.name"), "shell_run");
        assert!(attr(tool, "gen_ai.tool.call.arguments").is_null(), "{tool}");
    }
    let validators = named(&spans, "validate ");
    assert_eq!(validators.len(), 3, "{text}");
    assert!(validators.iter().all(|span| span["status_code"] == "ERROR"));

    // The session goes on: its spans join the same trace, under the first run's root.
    let resumed = exec(
        work.path(),
        &[
            config.to_str().unwrap(),
            "--resume",
            &session,
            "--replay",
            replay.to_str().unwrap(),
            "--approve",
            "all",
            "--json",
            "--otlp",
            &phoenix.url(),
        ],
    );
    assert_eq!(session_of(&resumed), session);
    let spans = phoenix.spans_of(&trace, 14, &|spans| named(spans, "session ").len() == 2);
    let roots: Vec<&Json> = named(&spans, "session ");
    assert_eq!(roots.len(), 2, "{}", Json::Array(spans.clone()));
    let second = roots
        .iter()
        .find(|span| span_id(span) != root_id)
        .expect("the resumed run's root");
    assert_eq!(second["parent_id"], root_id.as_str());
    assert_eq!(attr(second, "fuseraft.resumed"), true);
}

/// `Telemetry.OtlpEndpoint` in the config sends the trace with no flag, and
/// `Telemetry.CaptureContent: true` lets the task and the reply into the spans.
#[test]
fn the_config_keys_send_the_trace_and_opt_in_to_content() {
    let phoenix = phoenix::server();
    let work = tempfile::tempdir().expect("a temp dir");
    let config = work.path().join("captured.yaml");
    std::fs::write(
        &config,
        format!(
            "Orchestration:\n  Name: Captured\n  Agents:\n    - {{ Name: Writer, Instructions: Write., Model: {{ ModelId: gpt-4o-mini }} }}\n  Telemetry:\n    OtlpEndpoint: {}\n    CaptureContent: true\n",
            phoenix.url()
        ),
    )
    .expect("the config is written");
    let replay = work.path().join("replay.yaml");
    std::fs::write(
        &replay,
        "replies:\n  Writer:\n    - text: \"The reply says TANGERINE-7. DONE\"\n      usage: { input_tokens: 120, output_tokens: 8, cache_read_tokens: 100 }\n",
    )
    .expect("the replay is written");
    let output = exec(
        work.path(),
        &[
            config.to_str().unwrap(),
            "--replay",
            replay.to_str().unwrap(),
            "--task",
            SECRET_TASK,
            "--max-turns",
            "1",
            "--json",
        ],
    );
    let session = session_of(&output);
    let trace = fuseraft::telemetry::trace_id(&session).to_string();
    let spans = phoenix.spans_of(&trace, 3, &|spans| named(spans, "session ").len() == 1);
    let text = Json::Array(spans.clone()).to_string();
    assert!(
        text.contains("PERIWINKLE-42"),
        "the task is not captured: {text}"
    );
    assert!(
        text.contains("TANGERINE-7"),
        "the reply is not captured: {text}"
    );
    let chat = named(&spans, "chat ")[0];
    assert_eq!(chat["name"], "chat gpt-4o-mini");
    assert_eq!(attr(chat, "gen_ai.request.model"), "gpt-4o-mini");
    assert_eq!(attr(chat, "gen_ai.provider.name"), "openai");
    assert_eq!(attr(chat, "gen_ai.usage.input_tokens"), 120);
    assert_eq!(attr(chat, "gen_ai.usage.output_tokens"), 8);
    assert_eq!(attr(chat, "gen_ai.usage.cache_read.input_tokens"), 100);
    assert!(attr(chat, "gen_ai.output.messages")
        .as_str()
        .is_some_and(|messages| messages.contains("TANGERINE-7")));
}

/// A fork's branches are spans of their own under the fork's, each holding its turns; a
/// refused approval is a span under the session; a failed validator one under its turn.
#[test]
fn forks_branches_approvals_and_validators_have_their_spans() {
    let phoenix = phoenix::server();
    let spans = fixture_trace(phoenix, "fork-merge", "Ship the parser.", "all");
    let text = Json::Array(spans.clone()).to_string();
    let forks = named(&spans, "fork ");
    assert_eq!(forks.len(), 1, "{text}");
    assert_eq!(parent_name(&spans, forks[0]), "session ForkMerge");
    assert!(
        forks[0]["events"].to_string().contains("fork_join"),
        "{text}"
    );
    for branch in ["Security", "Style"] {
        let span = named(&spans, &format!("branch {branch}"));
        assert_eq!(span.len(), 1, "{text}");
        assert!(parent_name(&spans, span[0]).starts_with("fork "), "{text}");
        let turn = named(&spans, &format!("invoke_agent {branch}"));
        assert_eq!(
            parent_name(&spans, turn[0]),
            format!("branch {branch}"),
            "{text}"
        );
    }

    let spans = fixture_trace(phoenix, "human-approval-refused", "Release it.", "none");
    let text = Json::Array(spans.clone()).to_string();
    let approvals = named(&spans, "approval ");
    assert!(!approvals.is_empty(), "{text}");
    for approval in &approvals {
        assert_eq!(parent_name(&spans, approval), "session Approval", "{text}");
        assert_eq!(
            attr(approval, "fuseraft.approval.approved"),
            false,
            "{text}"
        );
    }
    let validators = named(&spans, "validate ");
    assert!(!validators.is_empty(), "{text}");
    assert!(validators
        .iter()
        .all(|span| parent_name(&spans, span).starts_with("invoke_agent ")));
}

/// Each request a collector received: its path and body.
type Received = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// A loopback collector that answers 200 to everything, and what it received.
fn recording_collector() -> (String, Received) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let record = std::sync::Arc::clone(&record);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                loop {
                    let mut request = String::new();
                    if reader.read_line(&mut request).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = request.split(' ').nth(1).unwrap_or("").to_string();
                    let mut length = 0;
                    loop {
                        let mut header = String::new();
                        if reader.read_line(&mut header).unwrap_or(0) == 0 {
                            return;
                        }
                        let header = header.trim_end().to_ascii_lowercase();
                        if header.is_empty() {
                            break;
                        }
                        if let Some(value) = header.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    record.lock().unwrap().push((path, body));
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if reader.get_mut().write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://127.0.0.1:{port}"), seen)
}

/// `OTEL_EXPORTER_OTLP_ENDPOINT` sends the run when nothing else names a collector, and
/// `--otlp` beats it; the GenAI client metrics go to `/v1/metrics` beside the spans.
#[test]
fn the_variable_sends_the_run_the_flag_beats_it_and_metrics_go_beside() {
    let work = tempfile::tempdir().expect("a temp dir");
    let config = fixture("fixtures/run/keyword/config.yaml");
    let replay = fixture("fixtures/run/keyword/replay.yaml");
    let (from_env, env_seen) = recording_collector();
    let (from_flag, flag_seen) = recording_collector();
    let args = [
        config.to_str().unwrap(),
        "--replay",
        replay.to_str().unwrap(),
        "--task",
        "Add a --verbose flag.",
        "--ephemeral",
    ];
    let output = exec_with(work.path(), &args, Some(&from_env));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let paths = |seen: &std::sync::Mutex<Vec<(String, Vec<u8>)>>| -> Vec<String> {
        seen.lock()
            .unwrap()
            .iter()
            .map(|(path, _)| path.clone())
            .collect()
    };
    let received = paths(&env_seen);
    assert!(
        received.iter().any(|path| path == "/v1/traces"),
        "{received:?}"
    );
    let metrics: Vec<Vec<u8>> = env_seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(path, _)| path == "/v1/metrics")
        .map(|(_, body)| body.clone())
        .collect();
    assert_eq!(metrics.len(), 1, "{received:?}");
    let body = String::from_utf8_lossy(&metrics[0]);
    assert!(body.contains("gen_ai.client.token.usage"), "{body}");
    assert!(body.contains("gen_ai.client.operation.duration"), "{body}");

    let before = paths(&env_seen).len();
    let mut flagged = args.to_vec();
    flagged.extend(["--otlp", &from_flag]);
    let output = exec_with(work.path(), &flagged, Some(&from_env));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!paths(&flag_seen).is_empty());
    assert_eq!(
        paths(&env_seen).len(),
        before,
        "the variable got spans despite --otlp"
    );
}

/// A loopback collector that accepts connections and never answers: every connection is
/// kept open, unread, until the test ends.
fn silent_collector() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// A run of about 4 s that is mostly waiting (each turn's tool call sleeps), so the
/// comparison is about telemetry, not about the machine's load.
fn slow_workflow(dir: &Path) -> (PathBuf, PathBuf) {
    let config = dir.join("slow.yaml");
    std::fs::write(
        &config,
        "Orchestration:\n  Name: Slow\n  Agents:\n    - { Name: Worker, Instructions: Work., Plugins: [Shell] }\n",
    )
    .expect("the config is written");
    let replay = dir.join("slow.yaml.replay");
    std::fs::write(
        &replay,
        "replies:\n  Worker:\n    - tool_calls: [ { name: shell_run, args: { command: \"sleep 0.5\" } } ]\n      text: working\n      times: 8\n",
    )
    .expect("the replay is written");
    (config, replay)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[test]
fn a_collector_that_never_answers_costs_the_run_nothing_noticeable() {
    let work = tempfile::tempdir().expect("a temp dir");
    let (config, replay) = slow_workflow(work.path());
    let collector = silent_collector();
    let run = |otlp: Option<&str>| {
        let mut args = vec![
            config.to_str().unwrap(),
            "--replay",
            replay.to_str().unwrap(),
            "--task",
            "Work.",
            "--approve",
            "all",
            "--max-turns",
            "8",
            "--ephemeral",
        ];
        if let Some(url) = otlp {
            args.extend(["--otlp", url]);
        }
        let started = Instant::now();
        let output = exec(work.path(), &args);
        (started.elapsed(), output)
    };
    let (mut plain, mut traced) = (Vec::new(), Vec::new());
    let mut stderr = String::new();
    for _ in 0..3 {
        plain.push(run(None).0);
        let (elapsed, output) = run(Some(&collector));
        traced.push(elapsed);
        stderr = String::from_utf8_lossy(&output.stderr).to_string();
    }
    let (plain, traced) = (median(plain), median(traced));
    eprintln!("median wall time: {plain:?} without telemetry, {traced:?} with a silent collector");
    assert!(
        plain >= Duration::from_millis(3500),
        "the workflow should take about 4 s: {plain:?}"
    );
    assert!(
        traced.as_secs_f64() <= plain.as_secs_f64() * 1.10,
        "with a silent collector the run took {traced:?}, without telemetry {plain:?}"
    );
    // What did not reach the collector is said once.
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("telemetry"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("did not reach"), "{stderr}");
}
