//! `fuseraft exec` against a loopback server whose first stream breaks off mid-reply: the
//! retry is announced on one line, the text the failed attempt streamed is marked as
//! discarded, and the reply is the retry's alone.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;

/// Reads one HTTP request (head and body) from `stream`.
fn read_request(stream: &std::net::TcpStream) {
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
}

fn chunk(event: &serde_json::Value) -> String {
    let data = format!("data: {event}\n\n");
    format!("{:x}\r\n{data}\r\n", data.len())
}

fn text(text: &str) -> serde_json::Value {
    serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
}

#[test]
fn a_stream_broken_mid_reply_is_retried_with_a_notice_and_its_text_discarded() {
    let dir = std::env::temp_dir().join(format!("fuseraft-retry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/v1", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
        // First: half a reply, then the connection closes without `[DONE]`.
        let (mut first, _) = listener.accept().unwrap();
        read_request(&first);
        let _ = write!(first, "{head}{}", chunk(&text("Half an ans")));
        let _ = write!(first, "0\r\n\r\n");
        drop(first);
        // Then the whole reply.
        let (mut second, _) = listener.accept().unwrap();
        read_request(&second);
        let done = "data: [DONE]\n\n";
        let _ = write!(
            second,
            "{head}{}{}{:x}\r\n{done}\r\n0\r\n\r\n",
            chunk(&text("Whole answer.\nFINISHED")),
            chunk(
                &serde_json::json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}})
            ),
            done.len()
        );
    });
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        "Orchestration:\n  Name: Live\n  Agents:\n    - Name: Worker\n      Instructions: Work, then write FINISHED on its own line.\n      Model: { Provider: openai, ModelId: local-model }\n  Selection:\n    Type: keyword\n    Routes:\n      - { Keyword: FINISHED, Agent: Worker, SourceAgents: [Worker] }\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            config.to_str().unwrap(),
            "--task",
            "t",
            "--ephemeral",
            "--max-turns",
            "1",
            "--work-dir",
            dir.join("work").to_str().unwrap(),
            "--endpoint",
            &endpoint,
        ])
        .output()
        .unwrap();
    server.join().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let half = stdout
        .find("Half an ans")
        .expect("the first attempt streamed");
    let notice = stdout[half..]
        .lines()
        .find(|line| line.contains('↻'))
        .unwrap_or_else(|| panic!("a retry notice:\n{stdout}"));
    assert!(
        notice.contains("Worker")
            && notice.contains("retry 1 of 4")
            && notice.contains("the partial reply above is discarded"),
        "{notice}"
    );
    let retried = stdout.find(notice).unwrap() + notice.len();
    assert!(
        stdout[retried..].contains("Whole answer.\nFINISHED"),
        "the retry's reply follows the notice:\n{stdout}"
    );
    assert!(
        stdout[retried..].contains("tokens in 7 / out 3"),
        "the turn's usage:\n{stdout}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
