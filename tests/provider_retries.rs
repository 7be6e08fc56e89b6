//! `fuseraft exec` against loopback servers that fail: a stream broken off mid-reply is
//! retried with a one-line notice and its streamed text marked as discarded; a retried failure
//! is named once, and an error that ends the run is said once, in the footer; and a stream's
//! text reaches the events file as it comes with `--events-text`.

use crate::common;
use std::io::Write;
use std::net::TcpListener;
use std::process::Command;

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
        common::read_request(&first);
        let _ = write!(first, "{head}{}", chunk(&text("Half an ans")));
        let _ = write!(first, "0\r\n\r\n");
        drop(first);
        // Then the whole reply.
        let (mut second, _) = listener.accept().unwrap();
        common::read_request(&second);
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
            "--events",
            dir.join("events.jsonl").to_str().unwrap(),
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
    // The events file has the retry too, typed, before the turn it belongs to ends.
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let types: Vec<serde_json::Value> = events
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let at = |name: &str| types.iter().position(|event| event["event_type"] == name);
    let retry = at("model_retry").unwrap_or_else(|| panic!("a model_retry event:\n{events}"));
    assert!(retry < at("turn_end").unwrap(), "{events}");
    let event = &types[retry];
    assert_eq!(event["agent"], "Worker");
    assert_eq!(event["payload"]["resend"], "again");
    assert_eq!(event["payload"]["attempt"], 1);
    assert_eq!(event["payload"]["max_retries"], 4);
    assert!(
        event["payload"]["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains(&endpoint)),
        "{event}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `exec` of a one-agent config at `endpoint` in a fresh work dir: (exit code, stdout and
/// stderr together).
fn exec_against(endpoint: &str, name: &str) -> (Option<i32>, String) {
    let dir = std::env::temp_dir().join(format!("fuseraft-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        "Orchestration:\n  Name: Live\n  Agents:\n    - Name: Worker\n      Instructions: Work.\n      Model: { Provider: openai, ModelId: local-model }\n  Selection:\n    Type: keyword\n    Routes:\n      - { Keyword: FINISHED, Agent: Worker, SourceAgents: [Worker] }\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "exec",
            config.to_str().unwrap(),
            "--task",
            "t",
            "--ephemeral",
        ])
        .args(["--work-dir", dir.join("work").to_str().unwrap()])
        .args(["--endpoint", endpoint])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(dir);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), all)
}

#[test]
fn an_error_that_ends_the_run_is_said_once_in_its_footer() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/v1", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        common::read_request(&stream);
        let body =
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#;
        let _ = write!(
            stream,
            "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    let (code, all) = exec_against(&endpoint, "unauthorized");
    server.join().unwrap();
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(
        all.matches("Incorrect API key provided").count(),
        1,
        "{all}"
    );
    assert!(!all.contains("! model error"), "{all}");
    assert!(all.contains("── error after 0 turn(s)"), "{all}");
}

#[test]
fn a_retried_failure_is_named_once_and_each_retry_after_says_it_failed_the_same_way() {
    // A port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, all) = exec_against(&format!("http://127.0.0.1:{port}/v1"), "refused");
    assert_eq!(code, Some(1), "{all}");
    let retries: Vec<&str> = all.lines().filter(|line| line.contains('↻')).collect();
    assert_eq!(retries.len(), 4, "{all}");
    assert!(
        retries[0].contains("connection refused") && retries[0].contains("retry 1 of 4"),
        "{all}"
    );
    for (n, retry) in retries.iter().enumerate().skip(1) {
        assert!(
            retry.contains(&format!("failed the same way; retry {} of 4", n + 1)),
            "{all}"
        );
    }
    // The live notice and the ending: never the model-error line as well.
    assert!(!all.contains("! model error"), "{all}");
    let footer = all.find("── error after").expect("a footer");
    assert!(all[footer..].contains("connection refused"), "{all}");
    assert!(all[footer..].contains("gave up after 5 attempts"), "{all}");
}

/// `--events-text`: what the model streams reaches the events file as it comes, in
/// `model_text` lines (gathered for 50 ms at most) before the turn's end; without the flag,
/// none.
#[test]
fn streamed_text_reaches_the_events_file_when_asked() {
    for asked in [true, false] {
        let dir =
            std::env::temp_dir().join(format!("fuseraft-text-{}-{asked}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}/v1", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            common::read_request(&stream);
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            let _ = write!(stream, "{head}");
            for part in ["One, ", "two, ", "three.\nFINISHED"] {
                let _ = write!(stream, "{}", chunk(&text(part)));
                let _ = stream.flush();
                std::thread::sleep(std::time::Duration::from_millis(150));
            }
            let done = "data: [DONE]\n\n";
            let _ = write!(stream, "{:x}\r\n{done}\r\n0\r\n\r\n", done.len());
        });
        let config = dir.join("config.yaml");
        std::fs::write(
            &config,
            "Orchestration:\n  Name: Live\n  Agents:\n    - Name: Worker\n      Instructions: Work.\n      Model: { Provider: openai, ModelId: local-model }\n  Selection:\n    Type: keyword\n    Routes:\n      - { Keyword: FINISHED, Agent: Worker, SourceAgents: [Worker] }\n",
        )
        .unwrap();
        let events = dir.join("events.jsonl");
        let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
            .args([
                "exec",
                config.to_str().unwrap(),
                "--task",
                "t",
                "--ephemeral",
            ])
            .args(["--work-dir", dir.join("work").to_str().unwrap()])
            .args([
                "--endpoint",
                &endpoint,
                "--events",
                events.to_str().unwrap(),
            ])
            .args(if asked {
                &["--events-text"][..]
            } else {
                &[][..]
            })
            .output()
            .unwrap();
        server.join().unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&events)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let kind = |line: &serde_json::Value| line["event_type"].as_str().unwrap_or("").to_string();
        let texts: Vec<&serde_json::Value> =
            lines.iter().filter(|l| kind(l) == "model_text").collect();
        if !asked {
            assert!(texts.is_empty(), "{lines:?}");
            continue;
        }
        assert!(texts.len() >= 2, "batched, not all at once: {lines:?}");
        let whole: String = texts
            .iter()
            .filter_map(|l| l["payload"]["text"].as_str())
            .collect();
        assert_eq!(whole, "One, two, three.\nFINISHED");
        assert!(texts
            .iter()
            .all(|l| l["agent"] == "Worker" && l["turn"] == 0));
        let last_text = lines.iter().rposition(|l| kind(l) == "model_text").unwrap();
        let turn_end = lines.iter().position(|l| kind(l) == "turn_end").unwrap();
        assert!(last_text < turn_end, "{lines:?}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
