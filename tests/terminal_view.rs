//! What a live run looks like on a terminal (a pseudo-terminal here): while the model has
//! not answered, a spinner line says whom it waits for and for how long, redrawn as time
//! passes; turn headers and routes are coloured unless `NO_COLOR` says otherwise.

#![cfg(unix)]

use crate::common;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

/// An OpenAI-compatible server on loopback that answers every request after `delay`.
fn slow_server(delay: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            std::thread::spawn(move || {
                common::read_request(&stream);
                std::thread::sleep(delay);
                let reply = serde_json::json!({"choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Done."}}]})
                .to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            });
        }
    });
    endpoint
}

/// Runs a one-turn workflow against `endpoint` with standard output on a pseudo-terminal;
/// returns everything the terminal received.
fn run_on_terminal(endpoint: &str, env: &[(&str, &str)]) -> String {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let dir = std::env::temp_dir().join(format!(
        "fuseraft-terminal-{}-{}",
        std::process::id(),
        env.len()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!("Orchestration:\n  Name: Slow\n  Agents:\n    - {{ Name: Worker, Instructions: Work., Model: {{ Provider: openai, ModelId: m, Endpoint: \"{endpoint}\", ApiKeyEnvVar: FUSERAFT_TEST_KEY }} }}\n  Selection: {{ Type: sequential }}\n  Termination: {{ Type: maxiterations, MaxIterations: 1 }}\n"),
    )
    .unwrap();
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(ptsname(&master, Vec::new()).unwrap().to_str().unwrap())
        .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command
        .args([
            "exec",
            config.to_str().unwrap(),
            "--task",
            "t",
            "--ephemeral",
        ])
        .args(["--work-dir", dir.to_str().unwrap()])
        .env("FUSERAFT_TEST_KEY", "test")
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .stdin(Stdio::null())
        .stdout(Stdio::from(slave))
        .stderr(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    drop(command);
    let mut master = std::fs::File::from(master);
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // The read ends with EIO once the child (the last holder of the slave) is gone.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        seen
    });
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let seen = reader.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn the_waiting_line_spins_and_counts_the_time_then_clears() {
    let endpoint = slow_server(Duration::from_millis(1500));
    let shown = run_on_terminal(&endpoint, &[]);
    assert!(shown.contains("waiting for Worker · 0.0s"), "{shown:?}");
    assert!(
        shown.contains("waiting for Worker · 1."),
        "the time counts: {shown:?}"
    );
    let frames = ['⠋', '⠙', '⠹', '⠸']
        .iter()
        .filter(|frame| shown.contains(&format!("{frame} waiting for Worker")))
        .count();
    assert!(frames >= 3, "the spinner turns: {shown:?}");
    // The line is cleared before the reply, which follows on a clean line.
    assert!(shown.contains("\r\x1b[2KDone."), "{shown:?}");
    // A coloured header on a terminal.
    assert!(
        shown.contains("\x1b[1;36m── turn 1 · Worker · Worker ──\x1b[0m"),
        "{shown:?}"
    );
}

#[test]
fn no_color_keeps_the_terminal_plain() {
    let endpoint = slow_server(Duration::from_millis(300));
    let shown = run_on_terminal(&endpoint, &[("NO_COLOR", "1")]);
    assert!(
        shown.contains("── turn 1 · Worker · Worker ──"),
        "{shown:?}"
    );
    assert!(
        !shown.contains("\x1b[1;36m") && !shown.contains("\x1b[2m"),
        "{shown:?}"
    );
    assert!(shown.contains("waiting for Worker"), "{shown:?}");
}
