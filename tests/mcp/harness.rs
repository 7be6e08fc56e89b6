//! The harness of `tests/mcp.rs`: where the servers are installed, a case's scratch
//! directory (its config with the placeholders filled in, its replay, a work dir), running
//! `fuseraft exec` on it, what it left (events, change-log MCP calls, processes), and a
//! loopback model server that records the request it answers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use fuseraft_vm::changes::ChangeLog;
use serde_json::{json, Value as Json};

/// Where `.ci/mcp-deps.sh` installed the servers; fails the test when they are absent.
pub fn deps() -> PathBuf {
    let dir = match std::env::var_os("FUSERAFT_MCP_DEPS") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
            cache.join("fuseraft-ci/mcp")
        }
    };
    for needed in [
        "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
        "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        "venv/bin/python",
    ] {
        assert!(
            dir.join(needed).exists(),
            "the MCP test servers are not installed (`{}` is missing): run `bash .ci/mcp-deps.sh` first",
            dir.join(needed).display()
        );
    }
    dir
}

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A scratch directory holding the case's config (placeholders filled in), its replay and
/// a work dir.
pub struct Case {
    pub dir: PathBuf,
    pub config: PathBuf,
    pub replay: PathBuf,
    pub work: PathBuf,
}

pub fn case(name: &str, port: Option<u16>) -> Case {
    case_with(name, port, "")
}

pub fn case_with(name: &str, port: Option<u16>, endpoint: &str) -> Case {
    let dir = std::env::temp_dir().join(format!("fuseraft-mcp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let fixture = repo().join("fixtures/mcp").join(name);
    let config = std::fs::read_to_string(fixture.join("config.yaml"))
        .unwrap()
        .replace("{deps}", deps().to_str().unwrap())
        .replace("{repo}", repo().to_str().unwrap())
        .replace(
            "{port}",
            &port.map_or(String::new(), |port| port.to_string()),
        )
        .replace("{endpoint}", endpoint);
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    Case {
        config: dir.join("config.yaml"),
        replay: fixture.join("replay.yaml"),
        work,
        dir,
    }
}

impl Case {
    /// Runs the case as a user who trusts their own config (`--trust-mcp`).
    pub fn exec(&self, extra: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_fuseraft"))
            .arg("exec")
            .arg(&self.config)
            .arg("--trust-mcp")
            .args(["--task", "Use the tools."])
            .arg("--replay")
            .arg(&self.replay)
            .arg("--work-dir")
            .arg(&self.work)
            .arg("--events")
            .arg(self.dir.join("events.jsonl"))
            .args(extra)
            .env("NO_COLOR", "1")
            .env("OPENAI_API_KEY", "sk-test-mcp-must-never-reach-a-server")
            .output()
            .expect("the fuseraft binary runs")
    }

    pub fn events(&self) -> Vec<Json> {
        std::fs::read_to_string(self.dir.join("events.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// The events about MCP and refused tools, as `type payload` lines.
    pub fn mcp_events(&self) -> String {
        self.events()
            .iter()
            .filter(|event| {
                let kind = event["event_type"].as_str().unwrap_or_default();
                kind.starts_with("mcp_") || kind == "tool_blocked"
            })
            .map(|event| {
                format!(
                    "{} {}",
                    event["event_type"].as_str().unwrap(),
                    event["payload"]
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The change log's MCP calls, as JSON.
    pub fn mcp_calls(&self) -> Json {
        let log = ChangeLog::load(&self.work.join(fuseraft_vm::changes::DEFAULT_PATH))
            .expect("the change log reads");
        let calls: Vec<Json> = log
            .entries
            .iter()
            .flat_map(|entry| &entry.mcp_calls)
            .map(|call| {
                json!({
                    "server": call.server, "tool": call.tool, "arguments": call.arguments,
                    "succeeded": call.succeeded, "output": call.output,
                })
            })
            .collect();
        Json::Array(calls)
    }

    /// Processes whose working directory is this case's work dir: its servers, if any
    /// outlived the run.
    pub fn processes_left(&self) -> Vec<String> {
        let work = std::fs::canonicalize(&self.work).unwrap();
        let mut left = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if !pid.bytes().all(|byte| byte.is_ascii_digit()) {
                continue;
            }
            if std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == work) {
                let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                left.push(format!(
                    "{pid}: {}",
                    String::from_utf8_lossy(&cmdline).replace('\0', " ")
                ));
            }
        }
        left
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Waits a little for processes to be reaped, then asserts none is left.
pub fn assert_no_server_left(case: &Case) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !case.processes_left().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        case.processes_left(),
        Vec::<String>::new(),
        "servers outlived the run"
    );
}

/// Answers one chat-completions request with a final reply; returns the request body
/// (empty when no request came within a minute).
pub fn model_server(listener: std::net::TcpListener) -> std::thread::JoinHandle<String> {
    use std::io::Write;
    std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(_) => return String::new(),
            }
        };
        stream.set_nonblocking(false).unwrap();
        let body = crate::common::read_request(&stream).1;
        let reply = json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Done."}}]})
        .to_string();
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
            reply.len()
        );
        String::from_utf8(body).unwrap()
    })
}
