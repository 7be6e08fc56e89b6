//! Starts `fuseraft exec … --ui` for the browser tests: the page's URL read from standard
//! error (the rest of it collected in the background, so the run never blocks on a full
//! pipe), the process killed if a test ends early.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/run")
        .join(name)
}

/// A fresh, empty directory for one test.
pub fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-page-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `exec` of a fixture's config and replay in `work`, with the web view.
pub fn exec(fixture: &Path, task: &str, work: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command
        .arg("exec")
        .arg(fixture.join("config.yaml"))
        .args(["--task", task, "--replay"])
        .arg(fixture.join("replay.yaml"))
        .arg("--work-dir")
        .arg(work)
        .env("FUSERAFT_SESSION_KEY", work.with_extension("key"))
        .args(extra)
        .stdin(Stdio::null());
    command
}

pub struct Live {
    child: Child,
    pub url: String,
    stderr: Arc<Mutex<String>>,
}

impl Live {
    /// Spawns `command` (which must pass `--ui`) and waits for its URL line.
    pub fn start(mut command: Command) -> Live {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut reader = BufReader::new(child.stderr.take().unwrap());
        let mut before = String::new();
        let url = loop {
            let mut line = String::new();
            let read = reader.read_line(&mut line).unwrap();
            assert!(read > 0, "no URL line; stderr: {before}");
            if let Some(url) = line.strip_prefix("web view: ") {
                break url.trim().to_string();
            }
            before.push_str(&line);
        };
        assert!(url.starts_with("http://127.0.0.1:"), "not loopback: {url}");
        let stderr = Arc::new(Mutex::new(before));
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Live { child, url, stderr }
    }

    /// Whether the run is still going.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits for the run to end: its status, standard output and standard error.
    pub fn wait(mut self) -> (ExitStatus, String, String) {
        let until = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < until, "the run did not end");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        let _ = self
            .child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout);
        std::thread::sleep(Duration::from_millis(50));
        let stderr = self.stderr.lock().unwrap().clone();
        (status, stdout, stderr)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
