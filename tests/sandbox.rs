//! The OS sandbox attacked through the real binary: `shell_run` and validator commands
//! that try to write git metadata, reach the network, outlive their run, read the API
//! keys or write outside the work dir, each spelled several ways, and must all fail; and
//! the same commands, where the policy allows them, that must work.
//!
//! Landlock and unprivileged user namespaces are required: a machine without them fails
//! these tests (it does not skip them).

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_fuseraft");

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-sandbox-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work")).expect("temp dir");
    dir
}

fn git(work: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(work)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A work dir that is a git repository with one commit.
fn repo(dir: &Path) -> PathBuf {
    let work = dir.join("work");
    git(&work, &["init", "-q"]);
    std::fs::write(work.join("README"), "hello\n").unwrap();
    git(&work, &["add", "README"]);
    git(&work, &["commit", "-q", "-m", "init"]);
    work
}

fn commits(work: &Path) -> usize {
    git(work, &["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .unwrap()
}

/// A config with one agent `Dev` (Shell) and the given `Security:` block, and a replay
/// in which `Dev` runs `commands` (each `(command, timeout_seconds)`).
fn write_run(dir: &Path, security: &str, extra_model: &str, commands: &[(&str, Option<f64>)]) {
    let config = format!(
        "Orchestration:\n  Name: Sandbox\n  Security:\n{security}\n  Agents:\n    - Name: Dev\n      Instructions: Work.\n      Plugins: [Shell]\n{extra_model}  Selection: {{ Type: sequential }}\n  Termination: {{ Type: maxiterations, MaxIterations: 1 }}\n"
    );
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    let calls: Vec<Value> = commands
        .iter()
        .map(|(command, timeout)| match timeout {
            Some(seconds) => json!({"name": "shell_run", "args": {"command": command, "timeout_seconds": seconds}}),
            None => json!({"name": "shell_run", "args": {"command": command}}),
        })
        .collect();
    let replay = json!({"replies": {"Dev": [{"tool_calls": calls, "text": "Done."}]}});
    std::fs::write(dir.join("replay.json"), replay.to_string()).unwrap();
}

fn exec_command(dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("exec")
        .arg(dir.join("config.yaml"))
        .args(["--task", "Work.", "--approve", "all", "--replay"])
        .arg(dir.join("replay.json"))
        .arg("--work-dir")
        .arg(dir.join("work"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    cmd
}

fn exec(dir: &Path) -> Output {
    exec_command(dir)
        .output()
        .expect("the fuseraft binary runs")
}

/// The commands the run recorded: command → (succeeded, output).
fn results(dir: &Path) -> BTreeMap<String, (bool, String)> {
    let path = dir.join("work/.fuseraft/state/changes.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("no change log at {}: {error}", path.display()));
    let log: Value = serde_json::from_str(&text).unwrap();
    let mut out = BTreeMap::new();
    for entry in log["entries"].as_array().unwrap() {
        for command in entry["commandsRun"].as_array().into_iter().flatten() {
            out.insert(
                command["command"].as_str().unwrap().to_string(),
                (
                    command["succeeded"].as_bool().unwrap(),
                    command["output"].as_str().unwrap_or_default().to_string(),
                ),
            );
        }
    }
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run_ok(dir: &Path) -> BTreeMap<String, (bool, String)> {
    let output = exec(dir);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
    assert!(
        !text(&output.stderr).contains("OS sandbox is unavailable"),
        "the sandbox must be available here: {}",
        text(&output.stderr)
    );
    results(dir)
}

#[test]
fn the_sandbox_is_available_on_this_machine() {
    let dir = scratch("probe");
    let policy = json!({
        "work_dir": dir.join("work"), "writable": [dir.join("work")], "read_only": [],
        "state_dir": null, "network": false, "parent": 0
    });
    let output = Command::new(BIN)
        .args(["__sandbox", &policy.to_string(), "--", "true"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "Landlock and unprivileged user namespaces are required: {}",
        text(&output.stderr)
    );
}

const GIT_WRITES: &[&str] = &[
    "git -c user.name=a -c user.email=a@b commit --allow-empty -m plain",
    "env git -c user.name=a -c user.email=a@b commit --allow-empty -m env",
    "/usr/bin/git -c user.name=a -c user.email=a@b commit --allow-empty -m path",
    "sh -c 'git -c user.name=a -c user.email=a@b commit --allow-empty -m nested'",
    "$(echo git) -c user.name=a -c user.email=a@b commit --allow-empty -m subst",
    "python3 -c \"import subprocess; subprocess.run(['git','-c','user.name=a','-c','user.email=a@b','commit','--allow-empty','-m','py'], check=True)\"",
    "printf '[core]\\n\\thooksPath = /tmp/evil-hooks\\n' >> .git/config",
    "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
    "rm -rf .git/refs",
    "mv .git .git-moved",
    "umount .git && echo '[core]' >> .git/config",
    "unshare -rm sh -c 'umount -l .git && echo x >> .git/config'",
    "mount -o remount,rw,bind .git && echo x >> .git/config",
];

#[test]
fn git_writes_fail_however_spelled_under_block() {
    let dir = scratch("git-block");
    let work = repo(&dir);
    let config_before = std::fs::read(work.join(".git/config")).unwrap();
    let mut commands: Vec<(&str, Option<f64>)> = GIT_WRITES.iter().map(|c| (*c, None)).collect();
    commands.push(("git status --short && git log --oneline | wc -l", None));
    write_run(
        &dir,
        "    Permissions: { git_write: block, command_execution: allow }",
        "",
        &commands,
    );
    let results = run_ok(&dir);
    for command in GIT_WRITES {
        if let Some((succeeded, output)) = results.get(*command) {
            assert!(!succeeded, "`{command}` got through: {output}");
        }
    }
    assert!(
        !results.contains_key(GIT_WRITES[0]),
        "`git commit` itself is refused before it runs"
    );
    let (read_ok, read_output) = &results["git status --short && git log --oneline | wc -l"];
    assert!(read_ok, "git reads still work: {read_output}");
    assert_eq!(commits(&work), 1, "no commit was made");
    assert_eq!(
        std::fs::read(work.join(".git/config")).unwrap(),
        config_before
    );
    assert!(!work.join(".git/hooks/pre-commit").exists());
    assert!(work.join(".git/refs").is_dir() && !work.join(".git-moved").exists());
}

#[test]
fn git_writes_work_when_allowed() {
    let dir = scratch("git-allow");
    let work = repo(&dir);
    let command = "env git -c user.name=a -c user.email=a@b commit --allow-empty -m allowed";
    write_run(
        &dir,
        "    Permissions: { git_write: allow }",
        "",
        &[(command, None)],
    );
    let results = run_ok(&dir);
    assert!(results[command].0, "{}", results[command].1);
    assert_eq!(commits(&work), 2);
}

#[test]
fn the_network_is_unreachable_under_block_and_reachable_under_allow() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let python = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\""
    );
    let bash = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let curl = format!("command -v curl >/dev/null || exit 7; curl -sS -m 3 http://127.0.0.1:{port}/ && echo connected");
    let dir = scratch("net-block");
    write_run(
        &dir,
        "    Permissions: { network_api: block }",
        "",
        &[(&python, None), (&bash, None), (&curl, None)],
    );
    let results = run_ok(&dir);
    for command in [&python, &bash, &curl] {
        let (succeeded, output) = &results[command.as_str()];
        assert!(!succeeded, "`{command}` reached the network: {output}");
    }
    match listener.accept() {
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a sandboxed command connected to the listener: {other:?}"),
    }

    let dir = scratch("net-allow");
    write_run(
        &dir,
        "    Permissions: { network_api: allow }",
        "",
        &[(&python, None)],
    );
    let results = run_ok(&dir);
    assert!(
        results[&python].0,
        "allowed network works: {}",
        results[&python].1
    );
}

/// Pids of processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) && !cmdline.contains("fuseraft") {
                found.push(format!("{name}: {cmdline}"));
            }
        }
    }
    found
}

fn wait_until_gone(needle: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let found = processes_with(needle);
        if found.is_empty() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn daemons_do_not_outlive_their_command() {
    let dir = scratch("daemons");
    let tag = 900_000 + std::process::id() % 90_000;
    let setsid = format!("setsid sleep {tag}1 >/dev/null 2>&1 < /dev/null &");
    let nohup = format!("nohup sleep {tag}2 >/dev/null 2>&1 &");
    let job = format!("set -m; (sleep {tag}3 &) ; disown -a; true");
    let timed_out = format!("setsid sleep {tag}4 >/dev/null 2>&1 & sleep 100");
    write_run(
        &dir,
        "    Permissions: { command_execution: allow }",
        "",
        &[
            (&setsid, None),
            (&nohup, None),
            (&job, None),
            (&timed_out, Some(1.0)),
        ],
    );
    let started = Instant::now();
    let results = run_ok(&dir);
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(
        results[&timed_out].1.starts_with("[TIMEOUT]"),
        "{:?}",
        results[&timed_out]
    );
    for n in 1..=4 {
        let left = wait_until_gone(&format!("sleep {tag}{n}"));
        assert!(left.is_empty(), "a daemon outlived its command: {left:?}");
    }
}

#[test]
fn killing_fuseraft_kills_the_command_tree() {
    let dir = scratch("kill");
    let tag = 800_000 + std::process::id() % 90_000;
    let command = format!("sleep {tag}1 & setsid sleep {tag}2 >/dev/null 2>&1 & wait");
    write_run(
        &dir,
        "    Permissions: { command_execution: allow }",
        "",
        &[(&command, None)],
    );
    let mut child = exec_command(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while processes_with(&format!("sleep {tag}2")).is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    for n in 1..=2 {
        let left = wait_until_gone(&format!("sleep {tag}{n}"));
        assert!(
            left.is_empty(),
            "the tree outlived a killed fuseraft: {left:?}"
        );
    }
}

#[test]
fn api_keys_are_not_readable_by_commands() {
    let dir = scratch("keys");
    let secret = format!("sk-sandbox-secret-{}", std::process::id());
    let commands = [
        "env",
        "tr '\\0' '\\n' < /proc/$PPID/environ",
        "cat /proc/1/environ /proc/self/environ | tr '\\0' '\\n'",
        // fuseraft's pid is on the launcher's command line; read its environ from there.
        "p=$(tr '\\0' '\\n' < /proc/1/cmdline | grep -o '\"parent\":[0-9]*' | cut -d: -f2); echo \"fuseraft=$p\"; tr '\\0' '\\n' < /proc/$p/environ",
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null | sort -u",
        "python3 -c \"import os; print(dict(os.environ))\"",
    ];
    write_run(
        &dir,
        "    Permissions: { command_execution: allow }",
        // `LC_*` is allow-listed: a key variable named so must be withheld all the same.
        "      Model: { Provider: openai, ModelId: m, ApiKeyEnvVar: LC_FUSERAFT_KEY }\n",
        &commands.iter().map(|c| (*c, None)).collect::<Vec<_>>(),
    );
    let output = exec_command(&dir)
        .env("LC_FUSERAFT_KEY", &secret)
        .env("OPENAI_API_KEY", format!("{secret}-openai"))
        .env("MY_SERVICE_TOKEN", format!("{secret}-token"))
        .env("FUSERAFT_VISIBLE_MARKER", "not-a-secret")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let results = results(&dir);
    for command in commands {
        let (_, out) = results
            .get(command)
            .unwrap_or_else(|| panic!("`{command}` did not run: {results:?}"));
        assert!(!out.contains(&secret), "`{command}` read a key:\n{out}");
        assert!(
            !out.contains("FUSERAFT_VISIBLE_MARKER"),
            "not allow-listed:\n{out}"
        );
    }
    assert!(results["env"].0 && results["env"].1.contains("PATH="));
}

#[test]
fn writes_are_confined_to_the_work_dir_and_temp() {
    let dir = scratch("writes");
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let id = std::process::id();
    let outside = [
        format!("echo x > {home}/fuseraft-sandbox-{id}"),
        format!("touch /etc/fuseraft-sandbox-{id}"),
        format!("mkdir /usr/local/fuseraft-sandbox-{id}"),
        format!("echo x > /var/tmp/fuseraft-sandbox-{id}"),
        "echo forged > .fuseraft/state/changes.json".to_string(),
        "echo forged > .fuseraft/planted".to_string(),
    ];
    let inside = [
        "echo x > inside.txt && mkdir -p sub && echo y > sub/f && rm sub/f".to_string(),
        format!("echo x > /tmp/fuseraft-sandbox-{id} && rm /tmp/fuseraft-sandbox-{id}"),
        "echo x > /dev/null && ls | head -1 | wc -l".to_string(),
        "exit 3".to_string(),
        "yes | head -c 200000".to_string(),
    ];
    let commands: Vec<(&str, Option<f64>)> = outside
        .iter()
        .chain(&inside)
        .map(|c| (c.as_str(), None))
        .collect();
    write_run(
        &dir,
        "    Permissions: { command_execution: allow }",
        "",
        &commands,
    );
    let results = run_ok(&dir);
    for command in &outside {
        assert!(
            !results[command].0,
            "`{command}` wrote outside: {}",
            results[command].1
        );
    }
    assert!(!Path::new(&format!("{home}/fuseraft-sandbox-{id}")).exists());
    assert!(!Path::new(&format!("/etc/fuseraft-sandbox-{id}")).exists());
    assert!(!Path::new(&format!("/var/tmp/fuseraft-sandbox-{id}")).exists());
    assert!(!dir.join("work/.fuseraft/planted").exists());
    for command in &inside[..3] {
        assert!(
            results[command].0,
            "`{command}` failed: {}",
            results[command].1
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("work/inside.txt")).unwrap(),
        "x\n"
    );
    assert!(results["exit 3"].1.starts_with("[EXIT 3]"));
}

#[test]
fn a_validator_command_is_sandboxed_too() {
    let dir = scratch("validator");
    let work = repo(&dir);
    let id = std::process::id();
    let suite = format!(
        "touch validator-ran; touch /etc/fuseraft-validator-{id}; \
         git -c user.name=a -c user.email=a@b commit --allow-empty -m from-validator; \
         printf '[core]\\n\\tfsmonitor = /tmp/x\\n' >> .git/config; true"
    );
    let config = format!(
        "Orchestration:\n  Name: Validator\n  Security:\n    Permissions: {{ git_write: block }}\n  TestSelector:\n    FullSuiteCommand: {}\n  Agents:\n    - {{ Name: Dev, Instructions: Work., Plugins: [Shell] }}\n    - {{ Name: Tester, Instructions: Test. }}\n  Selection:\n    Type: keyword\n    Routes:\n      - {{ Keyword: HANDOFF TO TESTER, Agent: Tester, SourceAgents: [Dev], Validators: [RequireRelatedTestsPass] }}\n      - {{ Keyword: APPROVED, Agent: Tester, SourceAgents: [Tester] }}\n",
        serde_json::to_string(&suite).unwrap()
    );
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    let replay = json!({"replies": {
        "Dev": [{"text": "HANDOFF TO TESTER"}],
        "Tester": [{"text": "APPROVED"}]
    }});
    std::fs::write(dir.join("replay.json"), replay.to_string()).unwrap();
    let config_before = std::fs::read(work.join(".git/config")).unwrap();
    let output = exec(&dir);
    assert!(
        work.join("validator-ran").exists(),
        "the validator ran its command: {}",
        text(&output.stderr)
    );
    assert!(!Path::new(&format!("/etc/fuseraft-validator-{id}")).exists());
    assert_eq!(commits(&work), 1, "the validator's commit did not happen");
    assert_eq!(
        std::fs::read(work.join(".git/config")).unwrap(),
        config_before
    );
}

#[test]
fn masked_daemon_sockets_cannot_be_reached() {
    use std::os::unix::net::UnixListener;
    let dir = scratch("masked");
    let work = dir.join("work");
    let outside = dir.join("daemon");
    std::fs::create_dir_all(&outside).unwrap();
    let socket = outside.join("engine.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')",
        socket.display()
    );
    let run = |masked: Vec<&Path>| {
        let policy = json!({
            "work_dir": work, "writable": [work], "read_only": [], "state_dir": null,
            "masked": masked, "network": false, "parent": 0
        });
        Command::new(BIN)
            .args([
                "__sandbox",
                &policy.to_string(),
                "--",
                "python3",
                "-c",
                &connect,
            ])
            .current_dir(&work)
            .output()
            .unwrap()
    };
    let masked = run(vec![socket.as_path()]);
    assert!(
        !masked.status.success(),
        "reached a masked socket: {masked:?}"
    );
    let masked_dir = run(vec![outside.as_path()]);
    assert!(
        !masked_dir.status.success(),
        "reached a socket in a masked dir: {masked_dir:?}"
    );
    match listener.accept() {
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a sandboxed command connected to the masked socket: {other:?}"),
    }
    let control = run(vec![]);
    assert!(
        control.status.success(),
        "unmasked, the socket works: {control:?}"
    );
}

#[test]
fn a_setup_failure_is_reported_not_run() {
    let dir = scratch("setup-failure");
    let policy = json!({
        "work_dir": dir.join("work"), "writable": [], "read_only": ["/proc/no/such"],
        "state_dir": null, "network": false, "parent": 1
    });
    let output = Command::new(BIN)
        .args(["__sandbox", &policy.to_string(), "--", "touch", "ran"])
        .current_dir(dir.join("work"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(125));
    assert!(text(&output.stderr)
        .starts_with("fuseraft sandbox: fuseraft, which started this command, is gone"));
    assert!(!dir.join("work/ran").exists());
}

#[test]
fn an_allowed_build_works_normally_offline() {
    let dir = scratch("cargo");
    let build = "cargo init -q --name sandboxed --vcs none . && cargo build -q --offline && ./target/debug/sandboxed";
    let version = "cargo --version | grep -c cargo";
    write_run(
        &dir,
        "    Permissions: { network_api: block, git_write: block }",
        "",
        &[(build, Some(110.0)), (version, None)],
    );
    let results = run_ok(&dir);
    let (ok, output) = &results[build];
    assert!(ok, "{output}");
    assert!(output.contains("Hello, world!"), "{output}");
    assert!(results[version].0, "{}", results[version].1);
}
