//! `exec --hitl` on a real terminal (a pseudo-terminal) and without one: the pause after
//! every turn goes on with Enter, sends a typed line to the team, stops resumable with `q`,
//! and never waits for an answer that cannot come; a shell command is asked before it runs,
//! a run about to end stuck asks the operator instead, and a tama `human` step reads its
//! line from the terminal.

#![cfg(unix)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-hitl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/run/sequential")
        .join(name)
}

/// The bundled sequential run (Extractor, Loader, Extractor, Loader: four turns).
fn exec(work: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command
        .args(["exec", fixture("config.yaml").to_str().unwrap()])
        .args(["--task", "Move the records.", "--json"])
        .args(["--replay", fixture("replay.yaml").to_str().unwrap()])
        .args(["--work-dir", work.to_str().unwrap()])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// A pseudo-terminal: the master (written to answer) and a handle on its slave side.
fn terminal() -> (std::fs::File, std::fs::File) {
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
    (std::fs::File::from(master), slave)
}

/// Waits until the child's stderr (collected in `seen`) holds `count` pause prompts.
fn wait_for_prompts(seen: &std::sync::Mutex<Vec<u8>>, count: usize) {
    wait_for(seen, "── paused after turn", count);
}

/// Waits until the child's stderr (collected in `seen`) holds `text` `count` times.
fn wait_for(seen: &std::sync::Mutex<Vec<u8>>, text: &str, count: usize) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let shown = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
        if shown.matches(text).count() >= count {
            return;
        }
        assert!(Instant::now() < until, "no `{text}` {count}: {shown}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Collects `child`'s stderr into the returned buffer as it comes, on a thread.
fn collect_stderr(
    child: &mut std::process::Child,
) -> (
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    std::thread::JoinHandle<()>,
) {
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
    (seen, reader)
}

fn summary(stdout: &[u8]) -> serde_json::Value {
    serde_json::from_str(String::from_utf8_lossy(stdout).trim()).unwrap()
}

#[test]
fn enter_goes_on_a_line_is_sent_to_the_team_and_q_stops_resumable() {
    let dir = scratch("terminal");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let (mut master, slave) = terminal();
    let events = dir.join("events.jsonl");
    let mut child = exec(&work, &["--hitl", "--events", events.to_str().unwrap()])
        .stdin(Stdio::from(slave))
        .spawn()
        .unwrap();
    let (seen, reader) = collect_stderr(&mut child);
    wait_for_prompts(&seen, 1);
    // The run waits at the pause.
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().unwrap().is_none(), "the pause waits");
    master.write_all(b"\n").unwrap();
    wait_for_prompts(&seen, 2);
    master
        .write_all(b"Keep the record ids unchanged.\n")
        .unwrap();
    wait_for_prompts(&seen, 3);
    master.write_all(b"q\n").unwrap();
    let output = child.wait_with_output().unwrap();
    reader.join().unwrap();
    let shown = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
    assert_eq!(output.status.code(), Some(1), "{shown}");
    let stopped = summary(&output.stdout);
    assert_eq!(stopped["outcome"], "cancelled", "{shown}");
    assert_eq!(stopped["turns"], 3, "{shown}");
    assert!(
        shown.contains("── paused after turn 1 by `Extractor`, now in"),
        "{shown}"
    );
    assert!(
        shown.contains("paused by the operator after turn 3"),
        "{shown}"
    );
    // The events file (and the web view, which reads the same events) gets the run's end.
    let last: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&events)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last["event_type"], "session_end", "{last}");
    assert_eq!(last["payload"]["outcome"], "cancelled", "{last}");
    let session = stopped["session_id"].as_str().unwrap().to_string();
    assert!(shown.contains("resume with: fuseraft exec"), "{shown}");
    assert!(shown.contains(&format!("--resume {session}")), "{shown}");

    // Resumed without --hitl: the fourth turn runs and the run completes, and the operator's
    // message is in the conversation, after turn 2 and before turn 3.
    let resumed = exec(&work, &["--resume", &session])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let done = summary(&resumed.stdout);
    assert_eq!(
        done["outcome"],
        "completed",
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_eq!(done["turns"], 4);
    let transcript = std::fs::read_to_string(
        work.join(".fuseraft/sessions")
            .join(format!("{session}.transcript.md")),
    )
    .unwrap();
    let message = transcript
        .find("Keep the record ids unchanged.")
        .expect("the operator's message is in the transcript");
    let second = transcript.find("Loaded 1 of 3.").unwrap();
    let last = transcript.find("LOADED").unwrap();
    assert!(second < message && message < last, "{transcript}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn without_a_terminal_the_first_pause_stops_resumable_and_never_waits() {
    let dir = scratch("no-terminal");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let started = Instant::now();
    let output = exec(&work, &["--hitl"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let stopped = summary(&output.stdout);
    assert_eq!(stopped["outcome"], "cancelled");
    assert_eq!(stopped["turns"], 1);
    assert!(
        stderr.contains("paused after turn 1: standard input is not a terminal"),
        "{stderr}"
    );
    let session = stopped["session_id"].as_str().unwrap().to_string();
    let resumed = exec(&work, &["--resume", &session])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(summary(&resumed.stdout)["outcome"], "completed");
    assert_eq!(summary(&resumed.stdout)["turns"], 4);

    // With --approve, an unattended --hitl run does not pause at all.
    let unattended = exec(&work, &["--hitl", "--approve", "all"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(summary(&unattended.stdout)["outcome"], "completed");
    assert_eq!(summary(&unattended.stdout)["turns"], 4);
    let _ = std::fs::remove_dir_all(dir);
}

/// `--hitl` is a safety net: the config allows commands only by its preset, so the shell
/// command is put to the operator first (refused here: nothing ran), and the run, about to
/// end stuck, asks the operator, whose words let it finish; that turn is not asked twice.
#[test]
fn a_shell_command_is_asked_first_and_a_stuck_run_asks_the_operator() {
    let dir = scratch("safety-net");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hitl/safety-net");
    let (mut master, slave) = terminal();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["exec", fixtures.join("config.yaml").to_str().unwrap()])
        .args(["--task", "Build it.", "--json", "--hitl"])
        .args(["--replay", fixtures.join("replay.yaml").to_str().unwrap()])
        .args(["--work-dir", work.to_str().unwrap()])
        .stdin(Stdio::from(slave))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (seen, reader) = collect_stderr(&mut child);
    wait_for(&seen, "approve tool call? [y/N]", 1);
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().unwrap().is_none(), "the question waits");
    master.write_all(b"n\n").unwrap();
    wait_for_prompts(&seen, 1);
    master.write_all(b"\n").unwrap();
    wait_for(&seen, "Enter lets `Developer` try again", 1);
    master.write_all(b"Say FINISHED now.\n").unwrap();
    let output = child.wait_with_output().unwrap();
    reader.join().unwrap();
    let shown = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
    let done = summary(&output.stdout);
    assert_eq!(done["outcome"], "completed", "{shown}");
    assert_eq!(done["turns"], 3, "{shown}");
    assert!(shown.contains("run `echo made > made.txt`"), "{shown}");
    assert!(!work.join("made.txt").exists(), "the refused command ran");
    assert!(
        shown.contains("── stuck in state `Developer`: validator `no-keyword` failed 2 times"),
        "{shown}"
    );
    assert!(
        !shown.contains("paused after turn 2"),
        "asked twice: {shown}"
    );
    let transcript = std::fs::read_to_string(done["transcript_path"].as_str().unwrap()).unwrap();
    assert!(transcript.contains("Say FINISHED now."), "{transcript}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_tama_human_step_asks_the_terminal_for_its_line() {
    let dir = scratch("tama-human");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hitl/tama-human");
    let events = dir.join("events.jsonl");
    let (mut master, slave) = terminal();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["exec", project.to_str().unwrap()])
        .args(["--task", "Post it.", "--json"])
        .args(["--replay", project.join("replay.yaml").to_str().unwrap()])
        .args(["--work-dir", work.to_str().unwrap()])
        .args(["--events", events.to_str().unwrap()])
        .stdin(Stdio::from(slave))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (seen, reader) = collect_stderr(&mut child);
    wait_for(&seen, "asks the operator:", 1);
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().unwrap().is_none(), "the question waits");
    master.write_all(b"yes, ship it\n").unwrap();
    let output = child.wait_with_output().unwrap();
    reader.join().unwrap();
    let shown = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
    let done = summary(&output.stdout);
    assert_eq!(done["outcome"], "completed", "{shown}");
    assert!(shown.contains("│ Publish the post?"), "{shown}");
    let events = std::fs::read_to_string(&events).unwrap();
    assert!(
        events.contains(r#""chars":12"#),
        "the answer reached the run: {events}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
