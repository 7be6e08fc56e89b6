//! The OS sandbox attacked through the real binary: `shell_run` and validator commands
//! that try to write git metadata, reach the network, outlive their run, read the API
//! keys or write outside the work dir, each spelled several ways, and must all fail; and
//! the same commands, where the policy allows them, that must work.
//!
//! Landlock and unprivileged user namespaces are required: a machine without them fails
//! these tests (it does not skip them).

mod files;
mod git_plugin;
mod keys;
mod launcher;
mod mcp;
mod network;
mod tree;
mod view;

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

/// A directory outside the work dir and outside `/tmp` (which every command sees a private
/// copy of), owned by the user running the tests.
fn outside(name: &str) -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("view-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The output of `command`, which must have run and failed.
fn failed(results: &BTreeMap<String, (bool, String)>, command: &str) -> String {
    let (succeeded, output) = results
        .get(command)
        .unwrap_or_else(|| panic!("`{command}` did not run: {results:?}"));
    assert!(!succeeded, "`{command}` got through: {output}");
    output.clone()
}

/// The output of `command`, which must have run and succeeded.
fn succeeded(results: &BTreeMap<String, (bool, String)>, command: &str) -> String {
    let (ok, output) = results
        .get(command)
        .unwrap_or_else(|| panic!("`{command}` did not run: {results:?}"));
    assert!(ok, "`{command}` failed: {output}");
    output.clone()
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
    let calls: Vec<Value> = commands
        .iter()
        .map(|(command, timeout)| match timeout {
            Some(seconds) => json!({"name": "shell_run", "args": {"command": command, "timeout_seconds": seconds}}),
            None => json!({"name": "shell_run", "args": {"command": command}}),
        })
        .collect();
    write_calls(dir, security, extra_model, calls);
}

/// [`write_run`] with any tool calls of the Shell plugin (`{"name", "args"}`), in order.
fn write_calls(dir: &Path, security: &str, extra_model: &str, calls: Vec<Value>) {
    let config = format!(
        "Orchestration:\n  Name: Sandbox\n  Security:\n{security}\n  Agents:\n    - Name: Dev\n      Instructions: Work.\n      Plugins: [Shell]\n{extra_model}  Selection: {{ Type: sequential }}\n  Termination: {{ Type: maxiterations, MaxIterations: 1 }}\n"
    );
    std::fs::write(dir.join("config.yaml"), config).unwrap();
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
