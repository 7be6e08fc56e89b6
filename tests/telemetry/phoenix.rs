//! Arize Phoenix for the OpenTelemetry tier: installed by `.ci/otel-deps.sh`, started once
//! per test binary on free loopback ports with its own temporary working directory, and
//! read back through its REST API (`GET /v1/projects/default/spans`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value as Json;

/// How long Phoenix may take to start (it migrates its database first).
const READY_WITHIN: Duration = Duration::from_secs(180);
/// How long spans may take to show in the API after the run ended.
const SPANS_WITHIN: Duration = Duration::from_secs(60);

/// Where `.ci/otel-deps.sh` installs Phoenix: `FUSERAFT_OTEL_DIR`, else
/// `${XDG_CACHE_HOME:-$HOME/.cache}/fuseraft-ci/otel`.
fn otel_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FUSERAFT_OTEL_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .expect("HOME or XDG_CACHE_HOME is set");
    cache.join("fuseraft-ci/otel")
}

/// The running server. It lives in a static, never dropped: its process watches its
/// standard input, a pipe this process holds, and exits when the pipe closes, which the
/// kernel does when this test binary ends however it ends.
pub struct Phoenix {
    _child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
}

pub fn server() -> &'static Phoenix {
    static SERVER: OnceLock<Phoenix> = OnceLock::new();
    SERVER.get_or_init(Phoenix::start)
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("its address").port()
}

impl Phoenix {
    fn start() -> Phoenix {
        let python = otel_dir().join("venv/bin/python");
        assert!(
            python.exists(),
            "the OpenTelemetry tier is not installed: `{}` is missing; run `.ci/otel-deps.sh` (it installs Arize Phoenix)",
            python.display()
        );
        let dir = tempfile::tempdir().expect("a working dir for Phoenix");
        let port = free_port();
        let log = dir.path().join("phoenix.log");
        let log_file = std::fs::File::create(&log).expect("the log can be created");
        let launcher = "import os, sys, threading\n\
                        threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()\n\
                        from phoenix.server.main import main\n\
                        sys.argv = ['phoenix', 'serve']\n\
                        sys.exit(main())\n";
        let child = Command::new(&python)
            .arg("-c")
            .arg(launcher)
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", free_port().to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::piped())
            .stdout(log_file.try_clone().expect("the log handle clones"))
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "`{}` does not start: {error}; run `.ci/otel-deps.sh`",
                    python.display()
                )
            });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the API calls");
        let mut phoenix = Phoenix {
            _child: child,
            port,
            log,
            _dir: dir,
            runtime,
        };
        phoenix.wait_ready();
        phoenix
    }

    fn wait_ready(&mut self) {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self._child.try_wait() {
                panic!(
                    "Phoenix exited ({status}) before it was ready:\n{}",
                    self.log_text()
                );
            }
            if self.get("/healthz").is_some() {
                return;
            }
            assert!(
                started.elapsed() < READY_WITHIN,
                "Phoenix was not ready within {READY_WITHIN:?}:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The base URL `--otlp` takes.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The body of a successful `GET path`.
    fn get(&self, path: &str) -> Option<String> {
        let url = format!("{}{path}", self.url());
        self.runtime.block_on(async {
            let response = reqwest::get(&url).await.ok()?;
            if !response.status().is_success() {
                return None;
            }
            response.text().await.ok()
        })
    }

    /// The spans of `trace` once at least `count` of them are in and `ready` holds of
    /// them (a run's spans arrive as they end, its root last), as the API returns them.
    pub fn spans_of(
        &self,
        trace: &str,
        count: usize,
        ready: &dyn Fn(&[Json]) -> bool,
    ) -> Vec<Json> {
        let started = Instant::now();
        loop {
            let spans: Vec<Json> = self
                .get("/v1/projects/default/spans?limit=1000")
                .and_then(|body| serde_json::from_str::<Json>(&body).ok())
                .and_then(|page| page["data"].as_array().cloned())
                .unwrap_or_default()
                .into_iter()
                .filter(|span| span["context"]["trace_id"] == trace)
                .collect();
            if spans.len() >= count && ready(&spans) {
                return spans;
            }
            assert!(
                started.elapsed() < SPANS_WITHIN,
                "Phoenix holds {} span(s) of trace {trace} after {SPANS_WITHIN:?}, not {count}: {}\nits log:\n{}",
                spans.len(),
                Json::Array(spans.clone()),
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
