//! A real Restate server, `fuseraft serve` workers and an HAProxy balancer in front of them
//! for the durable-sessions tier: installed by `.ci/restate-deps.sh`, each started on free
//! loopback ports (the server with a data dir of its own), killed (SIGKILL) and started
//! again on the same ports and data, and killed when the test ends.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where `.ci/restate-deps.sh` installs the server: `FUSERAFT_RESTATE_DIR`, else
/// `${XDG_CACHE_HOME:-$HOME/.cache}/fuseraft-ci/restate`.
fn server_binary() -> PathBuf {
    let dir = match std::env::var_os("FUSERAFT_RESTATE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
            .expect("HOME or XDG_CACHE_HOME is set")
            .join("fuseraft-ci/restate"),
    };
    let binary = dir.join("node_modules/@restatedev/restate-server-linux-x64/bin/restate-server");
    assert!(
        binary.exists(),
        "the durable-sessions tier is not installed: `{}` is missing; run `.ci/restate-deps.sh` (it installs the Restate server)",
        binary.display()
    );
    binary
}

pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("its address").port()
}

/// Waits until `url` answers 200.
fn wait_healthy(url: &str, within: Duration, log: &Path) {
    let started = Instant::now();
    while started.elapsed() < within {
        if answers_200(url) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "`{url}` did not answer within {within:?}; its log:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// Whether `url` (`http://HOST:PORT/PATH`) answers a GET with 200.
fn answers_200(url: &str) -> bool {
    use std::io::{Read, Write};
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(mut stream) = std::net::TcpStream::connect(host) else {
        return false;
    };
    let request = format!("GET /{path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}

/// One Restate server.
pub struct Restate {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub ingress: String,
    pub admin: String,
}

impl Restate {
    pub fn start() -> Restate {
        Restate::start_with("")
    }

    /// A server whose config ends with `extra` (TOML).
    pub fn start_with(extra: &str) -> Restate {
        let dir = tempfile::tempdir().expect("a data dir for the server");
        let (node, admin, ingress) = (free_port(), free_port(), free_port());
        let config = format!(
            "cluster-name = \"fuseraft-test\"\nnode-name = \"n1\"\ndisable-telemetry = true\n\
             base-dir = \"{}\"\nbind-address = \"127.0.0.1:{node}\"\n\
             advertised-address = \"http://127.0.0.1:{node}\"\n\n\
             [admin]\nbind-address = \"127.0.0.1:{admin}\"\n\n\
             [ingress]\nbind-address = \"127.0.0.1:{ingress}\"\n",
            dir.path().join("data").display()
        ) + extra;
        std::fs::write(dir.path().join("restate.toml"), config).expect("the config is written");
        let mut server = Restate {
            child: None,
            dir,
            ingress: format!("http://127.0.0.1:{ingress}"),
            admin: format!("http://127.0.0.1:{admin}"),
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let log_path = self.dir.path().join("server.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("the server log opens");
        let child = Command::new(server_binary())
            .arg("--config-file")
            .arg(self.dir.path().join("restate.toml"))
            .arg("--no-logo")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log handle clones"))
            .stderr(log)
            .spawn()
            .expect("the Restate server starts");
        self.child = Some(child);
        wait_healthy(
            &format!("{}/health", self.admin),
            Duration::from_secs(60),
            &log_path,
        );
        wait_healthy(
            &format!("{}/restate/health", self.ingress),
            Duration::from_secs(60),
            &log_path,
        );
    }

    /// POSTs `body` (JSON, or nothing when empty) to `path` of `base`, over HTTP/1.0 so the
    /// answer comes whole; the answer's body.
    fn post(base: &str, path: &str, body: &str) -> String {
        use std::io::{Read, Write};
        let host = base.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(host).expect("the server answers");
        write!(
            stream,
            "POST /{path} HTTP/1.0\r\nhost: {host}\r\ncontent-type: application/json\r\naccept: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default()
    }

    /// A handler's JSON answer through the ingress (`FuseraftSession/ID/watch`, ...).
    pub fn call(&self, path: &str, body: &str) -> serde_json::Value {
        let answer = Restate::post(&self.ingress, path, body);
        serde_json::from_str(&answer).unwrap_or_else(|error| panic!("{error}: {answer}"))
    }

    /// The rows the admin API's SQL `query` answers.
    pub fn query(&self, query: &str) -> Vec<serde_json::Value> {
        let body = serde_json::json!({ "query": query }).to_string();
        let answer = Restate::post(&self.admin, "query", &body);
        let rows: serde_json::Value =
            serde_json::from_str(&answer).unwrap_or_else(|error| panic!("{error}: {answer}"));
        rows["rows"].as_array().cloned().unwrap_or_default()
    }

    /// The server's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILLs the server, then starts it again on the same ports and data.
    pub fn kill_and_restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.spawn();
    }
}

impl Drop for Restate {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One `fuseraft serve` worker.
pub struct Worker {
    child: Option<Child>,
    admin: String,
    pub port: u16,
    work_root: PathBuf,
    env: Vec<(String, String)>,
    flags: Vec<String>,
    log: PathBuf,
}

impl Worker {
    pub fn start(restate: &Restate, work_root: &Path, env: &[(&str, &str)]) -> Worker {
        Worker::on_port(free_port(), restate, work_root, env, &[])
    }

    /// A worker on `port`, started with `flags` too (`--advertise URL`, `--no-register`).
    pub fn on_port(
        port: u16,
        restate: &Restate,
        work_root: &Path,
        env: &[(&str, &str)],
        flags: &[String],
    ) -> Worker {
        let mut worker = Worker {
            child: None,
            admin: restate.admin.clone(),
            port,
            work_root: work_root.to_path_buf(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            flags: flags.to_vec(),
            log: work_root.join(format!("worker-{port}.log")),
        };
        worker.spawn();
        worker
    }

    fn spawn(&mut self) {
        let before = self.log().len();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("the worker log opens");
        let child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
            .args(["serve", "--restate", &self.admin, "--listen"])
            .arg(format!("127.0.0.1:{}", self.port))
            .arg("--work-root")
            .arg(&self.work_root)
            .args(&self.flags)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log handle clones"))
            .stderr(log)
            .spawn()
            .expect("the worker starts");
        self.child = Some(child);
        // Registered once it says so (after what earlier runs of it logged).
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if self
                .log()
                .get(before..)
                .is_some_and(|new| new.contains("serving sessions on"))
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the worker did not register: {}", self.log());
    }

    /// The worker's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILLs the worker.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the worker again on the same port.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Starts the worker again on the same port with `flags` instead of its own.
    pub fn restart_with(&mut self, flags: &[String]) {
        self.flags = flags.to_vec();
        self.restart();
    }
}

/// Two workers behind an HAProxy balancer whose URL the server calls: the first worker
/// registers it, the second registers nothing.
pub struct Fleet {
    pub workers: [Worker; 2],
    front: u16,
    _balancer: Balancer,
}

impl Fleet {
    /// Two workers with `env` and `flags`, and the balancer in front of them.
    pub fn start(
        restate: &Restate,
        work_root: &Path,
        env: &[(&str, &str)],
        flags: &[String],
    ) -> Fleet {
        let (front, first, second) = (free_port(), free_port(), free_port());
        let balancer = Balancer::start(front, &[first, second]);
        let second = Worker::on_port(
            second,
            restate,
            work_root,
            env,
            &Fleet::flags(1, front, flags),
        );
        let first = Worker::on_port(
            first,
            restate,
            work_root,
            env,
            &Fleet::flags(0, front, flags),
        );
        Fleet {
            workers: [first, second],
            front,
            _balancer: balancer,
        }
    }

    /// Worker `n`'s flags: `flags`, and what makes the balancer's URL the one registered.
    fn flags(n: usize, front: u16, flags: &[String]) -> Vec<String> {
        let mut all = flags.to_vec();
        match n {
            0 => all.extend([
                "--advertise".to_string(),
                format!("http://127.0.0.1:{front}"),
            ]),
            _ => all.push("--no-register".to_string()),
        }
        all
    }

    /// SIGKILLs both workers.
    pub fn kill(&mut self) {
        for worker in &mut self.workers {
            worker.kill();
        }
    }

    /// Starts both workers again on their ports, with `flags` (the server keeps calling the
    /// same URL, so the invocations pinned to it go on).
    pub fn restart_with(&mut self, flags: &[String]) {
        let front = self.front;
        for (n, worker) in self.workers.iter_mut().enumerate().rev() {
            worker.restart_with(&Fleet::flags(n, front, flags));
        }
    }

    /// Both workers' logs.
    pub fn log(&self) -> String {
        format!("{}\n{}", self.workers[0].log(), self.workers[1].log())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// HAProxy balancing each HTTP/2 request over the workers' ports, as a fleet behind one
/// registered URL needs (the server calls one URL per deployment).
pub struct Balancer {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Balancer {
    pub fn start(port: u16, workers: &[u16]) -> Balancer {
        let dir = tempfile::tempdir().expect("a dir for the balancer");
        let servers: String = workers
            .iter()
            .enumerate()
            .map(|(n, port)| format!("  server w{n} 127.0.0.1:{port} proto h2\n"))
            .collect();
        let config = format!(
            "global\n  maxconn 4096\n\ndefaults\n  mode http\n  timeout connect 5s\n  \
             timeout client 1h\n  timeout server 1h\n\n\
             frontend workers_front\n  bind 127.0.0.1:{port} proto h2\n  default_backend workers\n\n\
             backend workers\n  balance roundrobin\n{servers}"
        );
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, config).expect("the balancer's config is written");
        let child = Command::new("haproxy")
            .arg("-f")
            .arg(&path)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("HAProxy starts (`.ci/restate-deps.sh` installs it)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "HAProxy does not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Balancer { child, _dir: dir }
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
