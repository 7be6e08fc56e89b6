//! A run under attack from outside and from its own model: SIGTERM and SIGHUP in the middle
//! of a tool call cancel it like Ctrl-C (checkpoint kept, the tool's process gone, resumable),
//! and escape sequences in a reply, in tool output and in a command to approve never reach
//! the terminal raw.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A one-agent, one-turn workflow with the shell; `extra` goes under `Orchestration:`.
fn config(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("config.yaml");
    std::fs::write(
        &path,
        format!("Orchestration:\n  Name: Hostile\n{extra}  Agents:\n    - Name: Worker\n      Instructions: Work.\n      Plugins: [Shell]\n  Selection: {{ Type: sequential }}\n  Termination: {{ Type: maxiterations, MaxIterations: 1 }}\n"),
    )
    .unwrap();
    path
}

/// A replay whose one reply runs `command` and says `text`.
fn replay(dir: &Path, command: &str, text: &str) -> PathBuf {
    let path = dir.join("replay.json");
    let script = serde_json::json!({ "replies": { "Worker": [{
        "tool_calls": [{ "name": "shell_run", "args": { "command": command } }],
        "text": text,
    }]}});
    std::fs::write(&path, script.to_string()).unwrap();
    path
}

fn exec(config: &Path, replay: &Path, work: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command
        .args(["exec", config.to_str().unwrap(), "--task", "t", "--json"])
        .args(["--replay", replay.to_str().unwrap()])
        .args(["--work-dir", work.to_str().unwrap()])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Whether process `pid` is gone (or a zombie waiting for its reaper).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// The host pid of the process whose argv[0] is `name`, waiting for it to appear.
fn find_process(name: &str) -> u32 {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let found = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .find_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                let argv0 = cmdline.split(|byte| *byte == 0).next()?;
                (argv0 == name.as_bytes()).then_some(pid)
            });
        if let Some(pid) = found {
            return pid;
        }
        assert!(Instant::now() < until, "no process named `{name}` appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_for_file(path: &Path) -> String {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text;
            }
        }
        assert!(Instant::now() < until, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal_mid_tool_call(signal: &str) {
    let dir = scratch(signal);
    let config = config(&dir, "");
    // The first time, the command marks its start and becomes `sleep 30` under a name of
    // its own; on resume it finds the mark and ends at once. The command runs in the OS
    // sandbox's PID namespace, where `$$` is not the host's pid: the sleeper is found by
    // its name in the host's `/proc`.
    let name = format!("fuseraft-sleeper-{}-{signal}", std::process::id());
    let replay = replay(
        &dir,
        &format!("if [ -e started ]; then echo again; else echo up > started; exec -a {name} sleep 30; fi"),
        "done",
    );
    let work = dir.join("work");
    let child = exec(&config, &replay, &work, &[]).spawn().unwrap();
    wait_for_file(&work.join("started"));
    let sleeper = find_process(&name);
    assert!(!gone(sleeper), "the tool is running");
    let sent = Instant::now();
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim()).unwrap();
    assert_eq!(summary["outcome"], "cancelled");
    assert!(
        stderr.contains(&format!("cancelled (SIG{signal})")),
        "{stderr}"
    );
    assert!(stderr.contains("--resume"), "{stderr}");
    let until = Instant::now() + Duration::from_secs(5);
    while !gone(sleeper) {
        assert!(
            Instant::now() < until,
            "the tool's `sleep` outlived the run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The session resumes and finishes.
    let session = summary["session_id"].as_str().unwrap().to_string();
    let resumed = exec(&config, &replay, &work, &["--resume", &session])
        .output()
        .unwrap();
    let resumed_err = String::from_utf8_lossy(&resumed.stderr).to_string();
    assert_eq!(resumed.status.code(), Some(0), "{resumed_err}");
    let summary: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&resumed.stdout).trim()).unwrap();
    assert_eq!(summary["session_id"], session.as_str());
    assert_eq!(summary["succeeded"], true, "{summary}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sigterm_mid_tool_call_cancels_kills_the_tool_and_resumes() {
    signal_mid_tool_call("TERM");
}

#[test]
fn sighup_mid_tool_call_cancels_kills_the_tool_and_resumes() {
    signal_mid_tool_call("HUP");
}

/// Raw bytes that must never reach a terminal from a model or a tool.
fn assert_no_raw_controls(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for (at, c) in text.char_indices() {
        assert!(
            !(c.is_control() && c != '\n' && c != '\t'),
            "{what} holds {c:?} at byte {at}: {text}"
        );
    }
}

const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m";

#[test]
fn escapes_from_a_reply_and_a_tool_never_reach_the_terminal() {
    let dir = scratch("escapes");
    let config = config(&dir, "");
    let replay = replay(
        &dir,
        r"printf '\033]0;pwned\007\033[2J\302\233'",
        &format!("Here it is: {HOSTILE} done"),
    );
    for extra in [&[][..], &["--approve", "all"][..]] {
        let work = dir.join("work");
        let output = exec(&config, &replay, &work, extra).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        assert_eq!(output.status.code(), Some(0), "{stdout}");
        assert_no_raw_controls("stdout", &output.stdout);
        assert_no_raw_controls("stderr", &output.stderr);
    }
    // Without --json the reply is on stdout, escaped visibly.
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["exec", config.to_str().unwrap(), "--task", "t"])
        .args(["--replay", replay.to_str().unwrap()])
        .args(["--work-dir", dir.join("work").to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_no_raw_controls("stdout", &output.stdout);
    assert_no_raw_controls("stderr", &output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(r"Here it is: \x1b]0;pwned\x07\x1b[2J\u{9b}31m done"),
        "{stdout}"
    );
    // The session keeps the reply as written; `sessions list` and `show` print it escaped.
    let listed = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "sessions",
            "list",
            "--work-dir",
            dir.join("work").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_no_raw_controls("sessions list", &listed.stdout);
    let id = String::from_utf8_lossy(&listed.stdout)
        .split_whitespace()
        .next()
        .expect("a session is listed")
        .to_string();
    let shown = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "sessions",
            "show",
            &id,
            "--work-dir",
            dir.join("work").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        shown.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    assert_no_raw_controls("sessions show", &shown.stdout);
    let state: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("valid JSON");
    assert!(
        state.to_string().contains('\u{9b}'),
        "the reply is kept as written: {state}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_approval_shows_the_whole_command_escaped_and_says_tool_call() {
    let dir = scratch("approval");
    let config = config(
        &dir,
        "  Security:\n    Permissions:\n      command_execution: require-approval\n",
    );
    // `\r` would put the cursor back and let the rest overwrite `echo hello` on screen.
    let command = format!("rm -rf ./precious {HOSTILE}\r echo hello");
    let replay = replay(&dir, &command, "asked");
    let work = dir.join("work");
    std::fs::create_dir_all(work.join("precious")).unwrap();
    let output: Output = exec(&config, &replay, &work, &[]).output().unwrap();
    assert_no_raw_controls("stdout", &output.stdout);
    assert_no_raw_controls("stderr", &output.stderr);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("approve this tool call by agent `Worker`?"),
        "{stderr}"
    );
    assert!(
        stderr.contains(r"│ run `rm -rf ./precious \x1b]0;pwned\x07\x1b[2J\u{9b}31m\r echo hello`"),
        "{stderr}"
    );
    assert!(!stderr.contains("approve route"), "{stderr}");
    assert!(work.join("precious").exists(), "refused, so not run");
    let _ = std::fs::remove_dir_all(dir);
}

/// A pseudo-terminal: the master (kept open, never written) and a handle on its slave side.
fn terminal() -> (rustix::fd::OwnedFd, std::fs::File) {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("a pty");
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(name.to_str().unwrap())
        .unwrap();
    (master, slave)
}

#[test]
fn sigterm_during_an_approval_prompt_cancels_and_the_session_resumes() {
    signal_at_prompt("TERM", false);
}

#[test]
fn a_terminal_hanging_up_at_a_prompt_cancels_rather_than_refuses() {
    // The terminal goes away (its reads end) and SIGHUP follows: cancelled, not refused.
    signal_at_prompt("HUP", true);
}

fn signal_at_prompt(signal: &str, hang_up: bool) {
    use std::io::Read;
    let dir = scratch(&format!("prompt-{signal}"));
    let config = config(
        &dir,
        "  Security:\n    Permissions:\n      command_execution: require-approval\n",
    );
    let replay = replay(&dir, "echo approved > ran.txt", "done");
    let work = dir.join("work");
    // Standard input is a terminal that never answers; stderr shows the prompt.
    let (master, slave) = terminal();
    let mut master = Some(master);
    let mut child = exec(&config, &replay, &work, &[])
        .stdin(Stdio::from(slave))
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let until = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&seen.lock().unwrap()).contains("approve tool call? [y/N]") {
        assert!(
            Instant::now() < until,
            "no prompt: {}",
            String::from_utf8_lossy(&seen.lock().unwrap())
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Still waiting for an answer after a while.
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "the prompt waits");
    if hang_up {
        master.take();
        std::thread::sleep(Duration::from_millis(30));
    }
    let sent = Instant::now();
    let signal_number = match signal {
        "HUP" => rustix::process::Signal::HUP,
        _ => rustix::process::Signal::TERM,
    };
    rustix::process::kill_process(rustix::process::Pid::from_child(&child), signal_number).unwrap();
    // Bounded: a prompt deaf to signals would otherwise hang the test.
    while child.try_wait().unwrap().is_none() {
        if sent.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("SIGTERM did not end a run waiting at an approval prompt");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let status = output.status;
    reader.join().unwrap();
    let shown = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
    let summary: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim()).unwrap();
    assert_eq!(summary["outcome"], "cancelled");
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(&format!(
            "cancelled (SIG{signal}) during an approval · resume with:"
        )),
        "{shown}"
    );
    assert!(!work.join("ran.txt").exists(), "neither approved nor run");
    let session = summary["session_id"].as_str().unwrap().to_string();
    // Nobody answered the prompt: the audit chain holds, and records no operator answer.
    let audit = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "audit",
            "show",
            &session,
            "--work-dir",
            work.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let records = String::from_utf8_lossy(&audit.stdout);
    assert_eq!(audit.status.code(), Some(0), "{records}");
    assert!(!records.contains("operator_answered"), "{records}");
    // The session resumes; this time the command is approved.
    assert!(shown.contains(&format!("--resume {session}")), "{shown}");
    let resumed = exec(
        &config,
        &replay,
        &work,
        &["--resume", &session, "--approve", "all"],
    )
    .output()
    .unwrap();
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(work.join("ran.txt").exists());
    let _ = std::fs::remove_dir_all(dir);
}
