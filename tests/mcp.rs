//! MCP servers end to end: `fuseraft exec --replay` against real servers (the npm
//! filesystem and everything servers, the Python server of `tests/mcp/`), over stdio and
//! streamable HTTP. The replay holds the model's tool calls; the results come from the
//! servers. Each case is a directory of `fixtures/mcp/` (config and replay).
//!
//! The servers are installed by `.ci/mcp-deps.sh` into a cache directory
//! (`FUSERAFT_MCP_DEPS`, else `${XDG_CACHE_HOME:-$HOME/.cache}/fuseraft-ci/mcp`); without
//! them these tests fail, saying so.
#![cfg(feature = "mcp-tests")]

pub(crate) mod harness;

use std::process::Command;
use std::time::{Duration, Instant};

use harness::{assert_no_server_left, case, case_with, deps, model_server, repo, text};
use serde_json::{json, Value as Json};

#[test]
fn tools_of_three_stdio_servers_are_listed_and_called() {
    let case = case("stdio-servers", None);
    std::fs::write(case.work.join("notes.txt"), "written by the test\n").unwrap();
    let output = case.exec(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let calls = case.mcp_calls();
    insta::assert_snapshot!(
        "stdio_calls",
        format!(
            "{}\n\n{}",
            serde_json::to_string_pretty(&calls).unwrap(),
            case.mcp_events()
        )
    );
    // The model's key never reached a server; the configured variable did.
    let dumped = calls.to_string();
    assert!(dumped.contains("OPENAI_API_KEY is unset"), "{dumped}");
    assert!(dumped.contains("CRASHY_GREETING is set"), "{dumped}");
    assert!(!dumped.contains("sk-test-mcp"), "{dumped}");
    // The filesystem server wrote in the work dir, its allowed directory.
    assert_eq!(
        std::fs::read_to_string(case.work.join("from-mcp.txt")).unwrap(),
        "written by the server"
    );
    assert_no_server_left(&case);
}

#[test]
fn the_policy_denies_mcp_calls_by_category_and_by_the_operator() {
    // `approval-required` asks; `--approve none` refuses.
    let case = case("policy-denial", None);
    let output = case.exec(&["--approve", "none"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let events = case.mcp_events();
    assert!(
        events.contains("[DENIED: permission] call `crashy-add` (tool `add` of MCP server `crashy`) with {\\\"a\\\":40,\\\"b\\\":2} was refused by the operator"),
        "{events}"
    );
    assert_eq!(case.mcp_calls(), json!([]), "nothing reached the server");

    // `mcp: block` refuses without asking.
    let blocked = std::fs::read_to_string(&case.config)
        .unwrap()
        .replace("command_execution: allow", "mcp: block");
    std::fs::write(&case.config, blocked).unwrap();
    let output = case.exec(&["--approve", "all"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let events = case.mcp_events();
    assert!(
        events.contains("is blocked by the permission policy (mcp)"),
        "{events}"
    );
    assert_eq!(case.mcp_calls(), json!([]), "nothing reached the server");
    assert_no_server_left(&case);
}

#[test]
fn a_server_that_crashes_mid_run_gives_error_results_naming_it() {
    let case = case("crash-mid-run", None);
    let output = case.exec(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let calls = case.mcp_calls();
    let calls = calls.as_array().unwrap();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[0]["output"], "1 + 2 = 3");
    let crashed = calls[1]["output"].as_str().unwrap();
    assert!(
        crashed.starts_with("[ERROR] MCP server `crashy` stopped during `crashy-crash`"),
        "{crashed}"
    );
    assert!(
        crashed.contains("exiting on purpose"),
        "the server's stderr is shown: {crashed}"
    );
    let after = calls[2]["output"].as_str().unwrap();
    assert!(
        after.starts_with("[ERROR] MCP server `crashy` has stopped"),
        "{after}"
    );
    assert_eq!(calls[1]["succeeded"], false);
    assert_eq!(calls[2]["succeeded"], false);
    assert_no_server_left(&case);
}

#[test]
fn a_stdio_server_that_is_not_installed_stops_the_run_before_its_first_turn() {
    let case = case("not-installed", None);
    let started = Instant::now();
    let output = case.exec(&[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(
            "MCP server `ghost` failed to start: cannot start `fuseraft-no-such-mcp-server`"
        ),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(20), "no hang");
    assert!(
        !case
            .events()
            .iter()
            .any(|event| event["event_type"] == "turn_start"),
        "no turn ran"
    );
}

#[test]
fn a_streamable_http_server_is_listed_and_called() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let case = case("http-server", Some(port));
    let mut server = Command::new(deps().join("venv/bin/python"))
        .arg(repo().join("tests/mcp/crashy_server.py"))
        .args(["--http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the HTTP test server did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = case.exec(&[]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    insta::assert_snapshot!(
        "http_calls",
        format!(
            "{}\n\n{}",
            serde_json::to_string_pretty(&case.mcp_calls()).unwrap(),
            case.mcp_events()
        )
    );
}

#[test]
fn a_call_that_outlasts_its_time_limit_times_out_naming_the_server() {
    let case = case("call-timeout", None);
    let started = Instant::now();
    let output = case.exec(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(started.elapsed() < Duration::from_secs(30), "no hang");
    let calls = case.mcp_calls();
    assert_eq!(
        calls[0]["output"],
        "[TIMEOUT] MCP server `crashy` gave no result for `crashy-wait` within 10 s"
    );
    assert_eq!(calls[0]["succeeded"], false);
    assert_no_server_left(&case);
}

#[test]
fn a_server_that_never_finishes_starting_stops_the_run_and_is_killed() {
    let case = case("never-starts", None);
    let started = Instant::now();
    let output = case.exec(&[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(started.elapsed() < Duration::from_secs(20), "no hang");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("MCP server `mute` failed to start: did not finish starting within 2 s"),
        "{stderr}"
    );
    assert_no_server_left(&case);
}

#[cfg(unix)]
#[test]
fn a_run_cancelled_mid_call_leaves_no_server_behind() {
    use rustix::process::{kill_process, Pid, Signal};
    let case = case("cancelled", None);
    let mut child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("exec")
        .arg(&case.config)
        .arg("--trust-mcp")
        .args(["--task", "Wait."])
        .arg("--replay")
        .arg(&case.replay)
        .arg("--work-dir")
        .arg(&case.work)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The server is up (its working directory is the work dir), then its call starts.
    let deadline = Instant::now() + Duration::from_secs(30);
    while case.processes_left().is_empty() {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    let pid = Pid::from_raw(child.id() as i32).unwrap();
    kill_process(pid, Signal::INT).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "fuseraft did not end after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cancelled (SIGINT)"), "{stderr}");
    assert_no_server_left(&case);
}

#[test]
fn a_model_is_offered_the_servers_tools_with_their_schemas() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    let server = model_server(listener);
    let case = case_with("schemas", None, &endpoint);
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("exec")
        .arg(&case.config)
        .arg("--trust-mcp")
        .args(["--task", "Add."])
        .arg("--work-dir")
        .arg(&case.work)
        .env("NO_COLOR", "1")
        .env("FUSERAFT_TEST_KEY", "k-123456789")
        .output()
        .unwrap();
    let request = server.join().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let request: Json = serde_json::from_str(&request).unwrap();
    let tools = request["tools"].as_array().expect("tools are offered");
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "crashy-add",
            "crashy-has_env",
            "crashy-wait",
            "crashy-crash"
        ]
    );
    let add = &tools[0]["function"];
    assert_eq!(add["description"], "Add two integers.");
    assert_eq!(add["parameters"]["properties"]["a"]["type"], "integer");
    assert_eq!(add["parameters"]["properties"]["b"]["type"], "integer");
    assert_eq!(add["parameters"]["required"], json!(["a", "b"]));
    assert_no_server_left(&case);
}
