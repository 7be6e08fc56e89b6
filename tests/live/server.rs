//! The live tier's model server: llama.cpp's OpenAI-compatible Python server
//! (`llama_cpp.server`, installed by `.ci/live-deps.sh`) serving SmolLM2 on a free loopback
//! port, started once per test binary and stopped with it.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `chat_format` whose requests honour tools: with `tool_choice` naming a function it
/// constrains the arguments by a grammar built from the function's JSON schema (`enum`s
/// included); without `tool_choice` the model answers in text.
pub const CHAT_FORMAT: &str = "chatml-function-calling";

/// How long loading the model may take before the tier gives up.
const READY_WITHIN: Duration = Duration::from_secs(180);

/// Where `.ci/live-deps.sh` installs the tier: `FUSERAFT_LIVE_DIR`, else
/// `${XDG_CACHE_HOME:-$HOME/.cache}/fuseraft-ci/live`.
pub fn live_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FUSERAFT_LIVE_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .expect("HOME or XDG_CACHE_HOME is set");
    cache.join("fuseraft-ci/live")
}

/// A running server; dropping it stops the process. The one the tests share lives in a
/// static, which is never dropped: its process watches its standard input, a pipe this
/// process holds, and exits when the pipe closes, which the kernel does when this test
/// binary ends however it ends.
pub struct Server {
    child: Child,
    pub port: u16,
    /// The server's standard output and error.
    pub log: PathBuf,
}

impl Server {
    /// Starts the server and waits until it answers `GET /v1/models`. Panics, naming the
    /// install script, when the tier is not installed.
    pub fn start() -> Server {
        let dir = live_dir();
        let python = dir.join("venv/bin/python");
        let model = dir.join("model.gguf");
        for needed in [&python, &model] {
            assert!(
                needed.exists(),
                "the live tier is not installed: `{}` is missing; run `.ci/live-deps.sh` (it installs llama.cpp's server and the SmolLM2 model under `{}`)",
                needed.display(),
                dir.display()
            );
        }
        let port = free_port();
        let log =
            std::env::temp_dir().join(format!("fuseraft-live-server-{}.log", std::process::id()));
        let log_file = std::fs::File::create(&log).expect("the server log can be created");
        // The server module runs in a process that ends itself when its stdin closes.
        let launcher = "import os, runpy, sys, threading\n\
                        threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()\n\
                        sys.argv = ['llama_cpp.server'] + sys.argv[1:]\n\
                        runpy.run_module('llama_cpp.server', run_name='__main__')\n";
        let child = Command::new(&python)
            .arg("-c")
            .arg(launcher)
            .args(["--model", model.to_str().expect("a UTF-8 model path")])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--chat_format", CHAT_FORMAT])
            // Deterministic: a fixed seed (the requests also ask for temperature 0).
            .args(["--seed", "42", "--n_ctx", "4096", "--n_threads", "2"])
            .args(["--model_alias", "smollm2"])
            .stdin(Stdio::piped())
            .stdout(log_file.try_clone().expect("the log handle clones"))
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "`{}` does not start: {error}; run `.ci/live-deps.sh`",
                    python.display()
                )
            });
        let mut server = Server { child, port, log };
        server.wait_ready();
        server
    }

    fn wait_ready(&mut self) {
        let log = &self.log;
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the live model server exited ({status}) before it was ready; its log:\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            if models_answer(self.port) {
                return;
            }
            assert!(
                started.elapsed() < READY_WITHIN,
                "the live model server was not ready within {READY_WITHIN:?}; its log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("its address").port()
}

/// Does `GET /v1/models` answer 200?
fn models_answer(port: u16) -> bool {
    use std::io::Write;
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request =
        format!("GET /v1/models HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nconnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}
