//! The durable-sessions tier: sessions submitted with `exec --on` to a real Restate server
//! (`.ci/restate-deps.sh` installs it; without it every test here fails, naming the script)
//! and run by real `fuseraft serve` workers. A served session leaves the events a local run
//! leaves; a question waits through worker and server kills and takes one answer; a worker
//! killed during a model call makes only that call again (the calls and commands before it
//! are kept by the server's journal).
#![cfg(feature = "restate-tests")]

#[allow(dead_code)]
mod cluster;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cluster::{free_port, Fleet, Restate, Worker};
use serde_json::Value as Json;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(path)
}

fn fuseraft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .output()
        .expect("fuseraft runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// An events file without what differs between any two runs (the time, the session id,
/// the work dir, which a message may name).
fn trace(path: &Path) -> Vec<Json> {
    let work = path.parent().expect("an events file's dir");
    std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        .replace(&work.display().to_string(), "WORK")
        .lines()
        .map(|line| {
            let mut event: Json = serde_json::from_str(line).expect("an events line is JSON");
            let object = event.as_object_mut().expect("an event is an object");
            object.remove("ts");
            object.remove("session");
            event
        })
        .collect()
}

/// `exec` of the fixture `case` with `task` in `work`, its events in `work/events.jsonl`,
/// then `extra`.
fn fixture_run(work: &Path, case: &str, task: &str, extra: &[&str]) -> Output {
    std::fs::create_dir_all(work).unwrap();
    let config = fixture(&format!("{case}/config.yaml"));
    let replay = fixture(&format!("{case}/replay.yaml"));
    let events = work.join("events.jsonl");
    let mut args = vec![
        "exec",
        config.to_str().unwrap(),
        "--task",
        task,
        "--replay",
        replay.to_str().unwrap(),
        "--work-dir",
        work.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    fuseraft(&args)
}

/// The trace of the fixture `case` run locally with `extra` flags.
fn local_trace(root: &Path, case: &str, task: &str, extra: &[&str]) -> Vec<Json> {
    let work = root.join(format!("local-{}", case.replace('/', "-")));
    let output = fixture_run(&work, case, task, extra);
    assert!(output.status.code().is_some(), "{}", text(&output.stderr));
    trace(&work.join("events.jsonl"))
}

/// `exec --on`: the fixture `case` run on the server, in work dir `work`.
fn exec_on(on: &str, work: &Path, case: &str, task: &str, extra: &[&str]) -> Output {
    fixture_run(work, case, task, &[&["--on", on], extra].concat())
}

/// The statuses of the session's invocations not completed yet, from the server's admin
/// query API (`running`, `suspended`, `backing-off`, ...).
fn open_invocations(restate: &Restate, session: &str) -> Vec<String> {
    let rows = restate.query(&format!(
        "SELECT status FROM sys_invocation WHERE target_service_name = 'FuseraftSession' \
         AND target_service_key = '{session}' AND status != 'completed'"
    ));
    rows.iter()
        .map(|row| row["status"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The session's status, as `watch` reports it.
fn status(restate: &Restate, session: &str) -> Json {
    restate.call(&format!("FuseraftSession/{session}/watch"), "0")["status"].clone()
}

fn wait_for(what: &str, within: Duration, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while started.elapsed() < within {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what} did not happen within {within:?}");
}

#[test]
fn served_sessions_leave_the_events_local_runs_leave() {
    let root = tempfile::tempdir().unwrap();
    let restate = Restate::start();
    let worker = Worker::start(&restate, root.path(), &[]);
    // A keyword team, a route approved at submission, and a fork whose branches call tools.
    let cases: [(&str, &str, &[&str]); 3] = [
        ("run/keyword", "Add a --verbose flag.", &[]),
        ("serve/approval", "Release it.", &["--approve", "all"]),
        ("run/fork-tools", "Build the todo app.", &[]),
    ];
    let expected: Vec<Vec<Json>> = cases
        .iter()
        .map(|(case, task, flags)| local_trace(root.path(), case, task, flags))
        .collect();
    // Nine sessions at once, each in a work dir of its own.
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..9)
            .map(|n| {
                let work = root.path().join(format!("served-{n}"));
                let (case, task, flags) = cases[n % cases.len()];
                let on = &restate.ingress;
                scope.spawn(move || (n, exec_on(on, &work, case, task, flags), work))
            })
            .collect();
        for run in runs {
            let (n, output, work) = run.join().unwrap();
            assert_eq!(
                output.status.code(),
                Some(0),
                "session {n}: {}\nworker: {}",
                text(&output.stderr),
                worker.log()
            );
            let kept = trace(&work.join("events.jsonl"));
            assert_eq!(kept, expected[n % cases.len()], "session {n}");
        }
    });
}

/// The session's event lines as the server keeps them, in a file.
fn kept_events(restate: &Restate, session: &str, path: &Path) -> Vec<Json> {
    let lines = restate.call(&format!("FuseraftSession/{session}/watch"), "0")["events"]
        .as_array()
        .expect("a session's events")
        .iter()
        .map(|line| line.as_str().unwrap().to_string())
        .collect::<Vec<_>>();
    std::fs::write(path, lines.join("\n")).unwrap();
    trace(path)
}

/// Sessions whose status says turn `turn` is done and no later one.
fn sessions_at_turn(restate: &Restate, sessions: &[String], turn: u64) -> Vec<String> {
    sessions
        .iter()
        .filter(|session| status(restate, session)["turn"].as_u64() == Some(turn))
        .cloned()
        .collect()
}

/// The sessions whose turn under way the server is trying again.
fn retried_sessions(restate: &Restate) -> Vec<String> {
    let rows = restate.query(
        "SELECT target_service_key FROM sys_invocation WHERE target_service_name = 'FuseraftSession' \
         AND target_handler_name = 'advance' AND retry_count > 0",
    );
    rows.iter()
        .filter_map(|row| row["target_service_key"].as_str())
        .map(str::to_string)
        .collect()
}

#[test]
fn two_workers_behind_a_balancer_carry_fifty_sessions_through_kills() {
    let root = tempfile::tempdir().unwrap();
    let mut restate = Restate::start();
    // The server calls the balancer; the second worker behind it registers nothing.
    let mut fleet = Fleet::start(&restate, root.path(), &[], &[]);
    // The Developer's first turn waits two seconds for its replayed reply.
    let (case, task) = ("serve/slow", "Add a --verbose flag.");
    let expected = local_trace(root.path(), case, task, &[]);
    let on = restate.ingress.clone();
    let submit = |n: usize| {
        let work = root.path().join(format!("served-{n}"));
        let output = exec_on(&on, &work, case, task, &["--detach"]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        text(&output.stdout).trim().to_string()
    };
    // A worker killed while sessions are in their slow model call (their first turn is
    // stored, the second is under way), then again between runs of turns; the server
    // killed once.
    let mut sessions: Vec<String> = (0..25).map(submit).collect();
    let mut in_slow_call = Vec::new();
    wait_for(
        "sessions in their slow call",
        Duration::from_secs(60),
        || {
            in_slow_call = sessions_at_turn(&restate, &sessions, 1);
            in_slow_call.len() >= 4
        },
    );
    std::thread::sleep(Duration::from_millis(300));
    fleet.workers[1].kill();
    // Some were on the killed worker: the server runs their turn again, from its journal.
    wait_for(
        "a slow call's turn run again",
        Duration::from_secs(20),
        || {
            retried_sessions(&restate)
                .iter()
                .any(|session| in_slow_call.contains(session))
        },
    );
    sessions.extend((25..35).map(submit));
    fleet.workers[1].restart();
    sessions.extend((35..40).map(submit));
    fleet.workers[1].kill();
    fleet.workers[1].restart();
    restate.kill_and_restart();
    sessions.extend((40..50).map(submit));
    let started = Instant::now();
    for session in &sessions {
        while status(&restate, session)["outcome"].is_null() {
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "session {session} did not end: {}\nworkers: {}",
                status(&restate, session),
                fleet.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let status = status(&restate, session);
        assert_eq!(status["outcome"], "completed", "{status}");
        let kept = kept_events(
            &restate,
            session,
            &root.path().join(format!("{session}.jsonl")),
        );
        assert_eq!(kept, expected, "session {session}");
    }
}

/// The approval fixture's local trace, and the same run submitted detached to `restate`:
/// its work dir and session.
fn detached_approval(root: &Path, restate: &Restate) -> (Vec<Json>, PathBuf, String) {
    let expected = local_trace(root, "serve/approval", "Release it.", &["--approve", "all"]);
    let work = root.join("served");
    let output = exec_on(
        &restate.ingress,
        &work,
        "serve/approval",
        "Release it.",
        &["--detach"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let session = text(&output.stdout).trim().to_string();
    (expected, work, session)
}

#[test]
fn a_question_waits_through_restarts_and_takes_one_answer() {
    let root = tempfile::tempdir().unwrap();
    let mut restate = Restate::start();
    // Two workers behind the balancer, each asking a waiting run to suspend after a second.
    let suspend = ["--suspend-after".to_string(), "1".to_string()];
    let mut fleet = Fleet::start(&restate, root.path(), &[], &suspend);
    let (expected, _, session) = detached_approval(root.path(), &restate);
    wait_for("the question", Duration::from_secs(30), || {
        !status(&restate, &session)["waiting"].is_null()
    });
    // Waiting, the run holds no worker: its invocation is suspended.
    wait_for("the suspension", Duration::from_secs(30), || {
        open_invocations(&restate, &session) == ["suspended"]
    });
    // Every process that knew of the run goes: both workers and the server. The question
    // stays listed.
    fleet.kill();
    restate.kill_and_restart();
    fleet.restart_with(&suspend);
    let waiting = status(&restate, &session)["waiting"].clone();
    assert_eq!(waiting["id"], format!("{session}.1"), "{waiting}");
    assert_eq!(waiting["question"], "DEPLOY");
    let on = restate.ingress.clone();
    // The server lists it with its question.
    let listed = fuseraft(&["sessions", "list", "--on", &on]);
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    assert!(
        text(&listed.stdout).contains(&format!(
            "{session}     0 turns  waits on {session}.1 (Developer → Deployer: DEPLOY)"
        )),
        "{}",
        text(&listed.stdout)
    );
    // `sessions show --on` prints it as a local session's state, with the server's status.
    let shown = fuseraft(&["sessions", "show", &session, "--on", &on]);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let shown: Json = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["Task"], "Release it.");
    assert_eq!(shown["Served"]["waiting"]["id"], format!("{session}.1"));
    let answered = fuseraft(&["approve", &session, "--on", &on, "--by", "alice"]);
    assert_eq!(
        answered.status.code(),
        Some(0),
        "{}",
        text(&answered.stderr)
    );
    let ended = Instant::now();
    while status(&restate, &session)["outcome"].is_null() {
        assert!(
            ended.elapsed() < Duration::from_secs(60),
            "the run did not end after its answer: {}\nworkers: {}",
            status(&restate, &session),
            fleet.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = status(&restate, &session);
    assert_eq!(status["outcome"], "completed", "{status}\n{}", fleet.log());
    assert_eq!(status["answers"][0]["by"], "alice");
    assert_eq!(status["answers"][0]["decision"], "yes");
    // The events the server kept are a local run's.
    assert_eq!(
        kept_events(&restate, &session, &root.path().join("kept.jsonl")),
        expected
    );
    // An ended session leaves the server's list.
    wait_for(
        "the list to drop the ended session",
        Duration::from_secs(10),
        || !text(&fuseraft(&["sessions", "list", "--on", &on]).stdout).contains(&session),
    );
    // The same question again: refused, naming the first answer.
    let again = fuseraft(&["approve", &format!("{session}.1"), "--no", "--on", &on]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already answered `yes` by alice"),
        "{}",
        text(&again.stderr)
    );
    let none = fuseraft(&["approve", &session, "--on", &on]);
    assert_eq!(none.status.code(), Some(1));
    assert!(
        text(&none.stderr).contains("waits on no question"),
        "{}",
        text(&none.stderr)
    );
}

#[test]
fn a_run_suspended_on_its_question_goes_on_when_answered() {
    let root = tempfile::tempdir().unwrap();
    let restate = Restate::start();
    let suspend = ["--suspend-after".to_string(), "1".to_string()];
    let worker = Worker::on_port(free_port(), &restate, root.path(), &[], &suspend);
    let (expected, work, session) = detached_approval(root.path(), &restate);
    wait_for("the suspension", Duration::from_secs(30), || {
        open_invocations(&restate, &session) == ["suspended"]
    });
    let answered = fuseraft(&["approve", &session, "--on", &restate.ingress]);
    assert_eq!(
        answered.status.code(),
        Some(0),
        "{}",
        text(&answered.stderr)
    );
    // The same worker runs the turn again from its journal, up to the answer, and on.
    wait_for("the run's end", Duration::from_secs(30), || {
        !status(&restate, &session)["outcome"].is_null()
    });
    assert_eq!(
        status(&restate, &session)["outcome"],
        "completed",
        "{}",
        worker.log()
    );
    let kept = kept_events(&restate, &session, &work.join("kept.jsonl"));
    assert_eq!(kept, expected);
}

#[test]
fn a_submission_the_worker_must_not_run_is_refused_naming_why() {
    let root = tempfile::tempdir().unwrap();
    let restate = Restate::start();
    let worker_root = root.path().join("root");
    std::fs::create_dir_all(&worker_root).unwrap();
    let _worker = Worker::start(&restate, &worker_root, &[]);
    // A work dir outside the worker's `--work-root`.
    let outside = exec_on(
        &restate.ingress,
        &root.path().join("elsewhere"),
        "run/keyword",
        "t",
        &[],
    );
    assert_eq!(outside.status.code(), Some(2));
    assert!(
        text(&outside.stderr).contains("not a directory inside this worker's work root"),
        "{}",
        text(&outside.stderr)
    );
    // A program that would start an MCP server on the worker.
    let mcp = exec_on(
        &restate.ingress,
        &worker_root.join("mcp"),
        "mcp/never-starts",
        "t",
        &[],
    );
    assert_eq!(mcp.status.code(), Some(2));
    assert!(
        text(&mcp.stderr).contains("`fuseraft serve` starts MCP servers only with `--trust-mcp`"),
        "{}",
        text(&mcp.stderr)
    );
    // Flags that need the client's own process.
    let on = restate.ingress.clone();
    let config = fixture("run/keyword/config.yaml");
    let resumed = fuseraft(&[
        "exec",
        config.to_str().unwrap(),
        "--task",
        "t",
        "--hitl",
        "--on",
        &on,
    ]);
    assert_eq!(resumed.status.code(), Some(2));
    assert!(
        text(&resumed.stderr).contains("`--hitl` is not available with `--on`"),
        "{}",
        text(&resumed.stderr)
    );
    // Nothing was kept.
    let statuses =
        restate.query("SELECT count(*) AS n FROM state WHERE service_name = 'FuseraftSession'");
    assert_eq!(statuses[0]["n"], 0, "no refused session keeps state");
}

#[test]
fn a_served_session_exported_is_shown_and_resumed_locally() {
    let root = tempfile::tempdir().unwrap();
    let restate = Restate::start();
    let _worker = Worker::start(&restate, root.path(), &[]);
    let work = root.path().join("served");
    let on = restate.ingress.clone();
    // Two of the five turns on the server.
    let output = exec_on(
        &on,
        &work,
        "run/keyword",
        "Add a --verbose flag.",
        &["--max-turns", "2", "--json"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let summary: Json = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    assert_eq!(summary["outcome"], "max_turns", "{summary}");
    let session = summary["session_id"].as_str().unwrap().to_string();
    let work_dir = work.to_str().unwrap();
    let exported = fuseraft(&[
        "sessions",
        "export",
        &session,
        "--on",
        &on,
        "--work-dir",
        work_dir,
    ]);
    assert_eq!(
        exported.status.code(),
        Some(0),
        "{}",
        text(&exported.stderr)
    );
    let shown = fuseraft(&["sessions", "show", &session, "--work-dir", work_dir]);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    assert!(
        text(&shown.stdout).contains("Add a --verbose flag."),
        "{}",
        text(&shown.stdout)
    );
    // The rest of the run, locally, from where the server left it.
    let config = fixture("run/keyword/config.yaml");
    let replay = fixture("run/keyword/replay.yaml");
    let events = work.join("resumed.jsonl");
    let resumed = fuseraft(&[
        "exec",
        config.to_str().unwrap(),
        "--resume",
        &session,
        "--replay",
        replay.to_str().unwrap(),
        "--work-dir",
        work_dir,
        "--events",
        events.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    let summary: Json = serde_json::from_str(text(&resumed.stdout).trim()).unwrap();
    assert_eq!(summary["outcome"], "completed", "{summary}");
    let end = trace(&events).pop().unwrap();
    assert_eq!(end["payload"]["turns"], 5, "{end}");
    // A local session of that id is never overwritten.
    let again = fuseraft(&[
        "sessions",
        "export",
        &session,
        "--on",
        &on,
        "--work-dir",
        work_dir,
    ]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again.stderr).contains("it is kept"),
        "{}",
        text(&again.stderr)
    );
}

/// The sessions the server was asked to start.
fn started_sessions(restate: &Restate) -> Vec<String> {
    let rows = restate.query(
        "SELECT DISTINCT target_service_key AS k FROM sys_invocation \
         WHERE target_service_name = 'FuseraftSession' AND target_handler_name = 'start'",
    );
    rows.iter()
        .map(|row| row["k"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_schedule_fires_once_per_tick_with_two_workers_through_a_restart() {
    let root = tempfile::tempdir().unwrap();
    let mut restate = Restate::start();
    let _fleet = Fleet::start(&restate, root.path(), &[], &[]);
    let work = root.path().join("scheduled");
    std::fs::create_dir_all(&work).unwrap();
    let config = fixture("run/keyword/config.yaml");
    let replay = fixture("run/keyword/replay.yaml");
    let on = restate.ingress.clone();
    let added = fuseraft(&[
        "schedule",
        "add",
        "every-2s",
        "--cron",
        "*/2 * * * * *",
        "--on",
        &on,
        "--",
        config.to_str().unwrap(),
        "--task",
        "Add a --verbose flag.",
        "--replay",
        replay.to_str().unwrap(),
        "--work-dir",
        work.to_str().unwrap(),
    ]);
    assert_eq!(added.status.code(), Some(0), "{}", text(&added.stderr));
    let again = fuseraft(&[
        "schedule",
        "add",
        "every-2s",
        "--cron",
        "* * * * *",
        "--on",
        &on,
        "--",
        config.to_str().unwrap(),
        "--task",
        "t",
        "--work-dir",
        work.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(1), "a name in use is refused");
    std::thread::sleep(Duration::from_millis(3500));
    restate.kill_and_restart();
    std::thread::sleep(Duration::from_millis(4500));
    let listed = fuseraft(&["schedule", "list", "--on", &on, "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    let removed = fuseraft(&["schedule", "remove", "every-2s", "--on", &on]);
    assert_eq!(removed.status.code(), Some(0), "{}", text(&removed.stderr));
    let listed: Json = serde_json::from_str(text(&listed.stdout).trim()).unwrap();
    let fired = listed["fired"].as_array().unwrap();
    let ticks: Vec<i64> = fired.iter().map(|f| f["tick"].as_i64().unwrap()).collect();
    assert!(ticks.len() >= 3, "it fired through the restart: {listed}");
    // Every tick once, none skipped, none twice.
    for pair in ticks.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            2000,
            "ticks two seconds apart: {ticks:?}"
        );
    }
    // The server started exactly the fired sessions (and at most one more, ticked between
    // the listing and the removal), and each ran to its end.
    std::thread::sleep(Duration::from_millis(2500));
    let fired: Vec<String> = fired
        .iter()
        .map(|f| f["session"].as_str().unwrap().to_string())
        .collect();
    let started = started_sessions(&restate);
    for session in &fired {
        assert!(started.contains(session), "{session} started: {started:?}");
        wait_for("a scheduled run's end", Duration::from_secs(30), || {
            status(&restate, session)["outcome"] == "completed"
        });
    }
    assert!(
        started.len() <= fired.len() + 1,
        "{started:?} against {fired:?}"
    );
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        started_sessions(&restate).len(),
        started.len(),
        "a removed schedule fires no more"
    );
}

/// `exec --on` of the tool-loop fixture with `task`, attached, against the live model at
/// `endpoint` (its key in `FUSERAFT_TEST_KEY`, which the worker has), in work dir `work`.
fn live_client(on: &str, work: &Path, endpoint: &str, task: &str) -> std::process::Child {
    let config = fixture("serve/tool-loop/config.yaml");
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["exec", config.to_str().unwrap(), "--task", task])
        .args(["--model", "openai:local-model", "--endpoint", endpoint])
        .args(["--api-key-env", "FUSERAFT_TEST_KEY", "--work-dir"])
        .arg(work)
        .args(["--on", on])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// A loopback OpenAI-compatible server: answers each request with the next reply, except
/// that it tells the test when request `hold` arrives and answers it only once released.
/// Returns every request body it saw, in order.
fn model_server(
    listener: TcpListener,
    replies: Vec<Json>,
    hold: usize,
    held: mpsc::Sender<()>,
    release: mpsc::Receiver<()>,
) -> std::thread::JoinHandle<Vec<Json>> {
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let replies = replies.into_iter();
        for reply in replies {
            let Ok((stream, _)) = listener.accept() else {
                break;
            };
            let (_, body) = crate::common::read_request(&stream);
            seen.push(serde_json::from_slice(&body).unwrap_or(Json::Null));
            if seen.len() == hold {
                let _ = held.send(());
                let _ = release.recv();
                // The worker that asked is gone; the call is asked again and answered then.
                continue;
            }
            crate::common::answer_json(stream, "200", &reply.to_string());
        }
        seen
    })
}

#[test]
fn a_worker_killed_during_a_model_call_makes_only_that_call_again_and_no_command_twice_even_by_reference(
) {
    let root = tempfile::tempdir().unwrap();
    // Two workers behind the balancer that keep entries over 4 KiB by reference, and a read
    // of about 20 KB (what `read_file` returns of long notes): the read's result and the
    // turn's messages are kept in files, and the retry after the kill reads them back.
    let restate = Restate::start();
    let key = ("FUSERAFT_TEST_KEY", "k-123456789");
    let limit = ["--inline-limit".to_string(), "4096".to_string()];
    let mut fleet = Fleet::start(&restate, root.path(), &[key], &limit);
    let work = root.path().join("served");
    std::fs::create_dir_all(&work).unwrap();
    let notes = format!(
        "Ship on Friday.\n{}",
        "Padding line of the release notes.\n".repeat(16_000)
    );
    std::fs::write(work.join("notes.txt"), &notes).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    let read_notes = serde_json::json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\": \"notes.txt\"}"}},
            {"id": "call_2", "type": "function",
             "function": {"name": "shell_run", "arguments": "{\"command\": \"echo ran >> ran.txt\"}"}}]}}]});
    let done = serde_json::json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "The notes say Friday.\nFINISHED"}}]});
    let (held_tx, held) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    // The second request (the turn's second call) is held while its worker is killed.
    let server = model_server(
        listener,
        vec![read_notes, Json::Null, done],
        2,
        held_tx,
        release_rx,
    );
    let client = live_client(&restate.ingress, &work, &endpoint, "What do the notes say?");
    held.recv_timeout(Duration::from_secs(60))
        .expect("the second call arrives");
    // Whichever worker holds the call, it dies (both do), and both come back.
    fleet.kill();
    fleet.restart_with(&limit);
    release.send(()).unwrap();
    let output = client.wait_with_output().unwrap();
    let requests = server.join().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\nworkers: {}",
        text(&output.stderr),
        fleet.log()
    );
    assert_eq!(requests.len(), 3, "three requests: {requests:#?}");
    // The first call finished before the kill: it came from the journal, not the model.
    assert_ne!(requests[0], requests[1]);
    assert_ne!(requests[0], requests[2]);
    // The call in flight at the kill was asked again, the same call.
    assert_eq!(requests[1], requests[2]);
    // The tool calls finished before the kill: kept, not run again.
    let ran = std::fs::read_to_string(work.join("ran.txt")).unwrap();
    assert_eq!(ran, "ran\n", "the command ran once");
    // The change log says so too: the command recorded once, by the turn that made it.
    let log = fuseraft_vm::changes::ChangeLog::load(&work.join(fuseraft_vm::changes::DEFAULT_PATH))
        .unwrap();
    let commands: Vec<&str> = log
        .entries
        .iter()
        .flat_map(|entry| &entry.commands_run)
        .map(|command| command.command.as_str())
        .collect();
    assert_eq!(commands, ["echo ran >> ran.txt"], "{commands:?}");
    let answer = requests[2]["messages"].to_string();
    assert!(
        answer.contains("Ship on Friday."),
        "the kept read reached the model"
    );
    assert!(
        answer.len() > 16 * 1024,
        "the read, read back by reference: {}",
        answer.len()
    );
    let kept = std::fs::read_dir(work.join(".fuseraft/journal"))
        .expect("entries kept by reference")
        .flatten()
        .flat_map(|session| std::fs::read_dir(session.path()).unwrap().flatten())
        .count();
    assert!(
        kept >= 2,
        "the read and the turn's messages at least: {kept}"
    );
}

/// The last failure the server had of the session's invocation under way, if any.
fn last_failure(restate: &Restate, session: &str) -> Option<String> {
    let rows = restate.query(&format!(
        "SELECT last_failure FROM sys_invocation WHERE target_service_name = 'FuseraftSession' \
         AND target_service_key = '{session}' AND status != 'completed'"
    ));
    rows.iter()
        .find_map(|row| row["last_failure"].as_str().map(str::to_string))
}

#[test]
fn an_entry_over_the_servers_limit_is_kept_by_reference_or_never_goes_on() {
    let root = tempfile::tempdir().unwrap();
    // The server's own limit (32 MiB a message, `worker.invoker.message-size-limit`), and a
    // read of about 34 MB.
    let restate = Restate::start();
    let inline = ["--inline-limit".to_string(), "64000000".to_string()];
    let mut fleet = Fleet::start(&restate, root.path(), &[], &inline);
    let big = format!("Ship on Friday.\n{}", "x".repeat(34_000_000));
    let (case, task) = ("serve/big-read", "What does big.txt say?");
    let local = root.path().join("local-serve-big-read");
    std::fs::create_dir_all(&local).unwrap();
    std::fs::write(local.join("big.txt"), &big).unwrap();
    let expected = local_trace(root.path(), case, task, &[]);
    let work = root.path().join("served");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("big.txt"), &big).unwrap();
    drop(big);
    let output = exec_on(&restate.ingress, &work, case, task, &["--detach"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let session = text(&output.stdout).trim().to_string();
    // Workers told to send entries up to 64 MB inline: the server refuses the read's, and
    // the turn never ends.
    let mut failure = None;
    wait_for(
        "the server to refuse the entry",
        Duration::from_secs(90),
        || {
            failure = last_failure(&restate, &session);
            failure.is_some()
        },
    );
    let failure = failure.unwrap_or_default();
    assert!(failure.contains("message size limit"), "{failure}");
    assert_eq!(status(&restate, &session)["turn"], 0, "no turn was stored");
    // Workers with the default limit (8 MiB) keep it by reference: the same turn goes on,
    // and the run ends as a local one does.
    fleet.restart_with(&[]);
    wait_for("the run to end", Duration::from_secs(90), || {
        !status(&restate, &session)["outcome"].is_null()
    });
    let status = status(&restate, &session);
    assert_eq!(status["outcome"], "completed", "{status}\n{}", fleet.log());
    assert_eq!(
        kept_events(&restate, &session, &root.path().join("kept.jsonl")),
        expected
    );
    assert!(work.join(".fuseraft/journal").join(&session).is_dir());
}

#[test]
fn a_command_under_way_when_its_worker_dies_is_not_run_again_and_the_model_is_told() {
    let root = tempfile::tempdir().unwrap();
    let restate = Restate::start();
    let key = ("FUSERAFT_TEST_KEY", "k-123456789");
    let mut worker = Worker::on_port(free_port(), &restate, root.path(), &[key], &[]);
    let work = root.path().join("served");
    std::fs::create_dir_all(&work).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!(
        "http://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    let slow = serde_json::json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "shell_run",
             "arguments": "{\"command\": \"echo start >> ran.txt; sleep 4; echo end >> ran.txt\"}"}}]}}]});
    let done = serde_json::json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "Checked it.\nFINISHED"}}]});
    let (held_tx, _held) = mpsc::channel();
    let (_release, release_rx) = mpsc::channel();
    let server = model_server(listener, vec![slow, done], usize::MAX, held_tx, release_rx);
    let client = live_client(&restate.ingress, &work, &endpoint, "Run it.");
    let ran = work.join("ran.txt");
    wait_for("the command to start", Duration::from_secs(60), || {
        ran.exists()
    });
    worker.kill();
    worker.restart();
    let output = client.wait_with_output().unwrap();
    let requests = server.join().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\nworker: {}",
        text(&output.stderr),
        worker.log()
    );
    // The model was told; the command started once (and finished at most once).
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let told = requests[1]["messages"].to_string();
    assert!(told.contains("[NOT RUN AGAIN]"), "{told}");
    std::thread::sleep(Duration::from_secs(5));
    let lines = std::fs::read_to_string(&ran).unwrap();
    assert_eq!(lines.matches("start").count(), 1, "{lines}");
    assert!(lines.matches("end").count() <= 1, "{lines}");
}

/// POSTs `body` to `path` of the front at `base` with `headers`; the status code.
fn front_status(base: &str, path: &str, headers: &[(&str, &str)]) -> u16 {
    let host = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).expect("the front answers");
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        stream,
        "POST /{path} HTTP/1.0\r\nhost: {host}\r\n{extra}content-length: 0\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_front_with_a_token_is_the_clients_only_door() {
    let root = tempfile::tempdir().unwrap();
    let restate = Restate::start();
    let port = free_port();
    let token = "front-token-0123456789abcdef";
    let front = format!("http://127.0.0.1:{port}");
    let flags = [
        "--front".to_string(),
        format!("127.0.0.1:{port}"),
        "--ingress".to_string(),
        restate.ingress.clone(),
    ];
    let _worker = Worker::on_port(
        free_port(),
        &restate,
        root.path(),
        &[("FUSERAFT_SERVE_TOKEN", token)],
        &flags,
    );
    let config = fixture("run/keyword/config.yaml");
    let replay = fixture("run/keyword/replay.yaml");
    let work = root.path().join("served");
    std::fs::create_dir_all(&work).unwrap();
    let run = |token: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
        command
            .args([
                "exec",
                config.to_str().unwrap(),
                "--task",
                "Add a --verbose flag.",
            ])
            .args(["--replay", replay.to_str().unwrap(), "--work-dir"])
            .arg(&work)
            .args(["--on", &front])
            .env_remove("FUSERAFT_SERVE_TOKEN");
        if let Some(token) = token {
            command.env("FUSERAFT_SERVE_TOKEN", token);
        }
        command.output().unwrap()
    };
    let with = run(Some(token));
    assert_eq!(with.status.code(), Some(0), "{}", text(&with.stderr));
    let without = run(None);
    assert_eq!(without.status.code(), Some(2));
    assert!(
        text(&without.stderr).contains("a token is required"),
        "{}",
        text(&without.stderr)
    );
    let wrong = run(Some("front-token-0123456789abcdeX"));
    assert_eq!(wrong.status.code(), Some(2));
    let bearer = format!("Bearer {token}");
    let auth = ("authorization", bearer.as_str());
    // The ingress's own endpoints are not behind the front.
    assert_eq!(
        front_status(&front, "restate/awakeables/x/resolve", &[auth]),
        404
    );
    // A browser's write from another origin, even with the token.
    let evil = ("origin", "http://evil.example");
    assert_eq!(
        front_status(&front, "FuseraftNames/sessions/names", &[auth, evil]),
        403
    );
    assert_eq!(
        front_status(&front, "FuseraftNames/sessions/names", &[auth]),
        200
    );
}

#[test]
fn a_contracts_command_under_way_at_a_kill_is_not_run_again_and_the_check_fails_saying_so() {
    let root = tempfile::tempdir().unwrap();
    let restate = Restate::start();
    let mut worker = Worker::start(&restate, root.path(), &[]);
    let (case, task) = ("serve/contract-command", "Build it.");
    let expected = local_trace(root.path(), case, task, &[]);
    // Served without a kill: a local run's events; the suite ran once.
    let calm = root.path().join("calm");
    let output = exec_on(&restate.ingress, &calm, case, task, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(trace(&calm.join("events.jsonl")), expected);
    let suite_runs = |work: &Path| {
        std::fs::read_to_string(work.join("suite-ran.txt"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(suite_runs(&calm), 1);
    // Killed while the contract's suite runs: the retried turn does not run it again; the
    // check fails saying why, and the agent's next turn passes it.
    let killed = root.path().join("killed");
    let output = exec_on(&restate.ingress, &killed, case, task, &["--detach"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let session = text(&output.stdout).trim().to_string();
    wait_for("the suite to start", Duration::from_secs(60), || {
        suite_runs(&killed) == 1
    });
    std::thread::sleep(Duration::from_millis(300));
    worker.kill();
    worker.restart();
    wait_for("the run to end", Duration::from_secs(60), || {
        !status(&restate, &session)["outcome"].is_null()
    });
    let events = kept_events(&restate, &session, &root.path().join("kept.jsonl"));
    let failed: Vec<&Json> = events
        .iter()
        .filter(|event| event["event_type"] == "validation_fail")
        .collect();
    assert_eq!(failed.len(), 1, "{events:#?}");
    assert!(
        failed[0]["payload"]["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("[NOT RUN AGAIN]"),
        "{failed:#?}"
    );
    // The interrupted suite, then the one the agent's next turn asked for: never the
    // interrupted one twice.
    assert_eq!(suite_runs(&killed), 2, "{events:#?}");
}

/// One server-sent event of a streamed OpenAI-compatible reply, as a chunk of a chunked body.
fn sse_text(text: &str) -> String {
    let event = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let data = format!("data: {event}\n\n");
    format!("{:x}\r\n{data}\r\n", data.len())
}

/// The files of the streamed text side channel in `work`, of every session.
fn stream_files(work: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(work.join(".fuseraft/stream"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|session| {
            std::fs::read_dir(session.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|file| file.path())
        .collect()
}

#[test]
fn a_served_reply_streams_to_the_client_and_a_rerun_turn_says_its_text_is_discarded() {
    let root = tempfile::tempdir().unwrap();
    let restate = Restate::start();
    let key = ("FUSERAFT_TEST_KEY", "k-123456789");
    let mut worker = Worker::on_port(free_port(), &restate, root.path(), &[key], &[]);
    let work = root.path().join("served");
    std::fs::create_dir_all(&work).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/v1", listener.local_addr().unwrap());
    let (held_tx, held) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    // The first attempt streams half a reply and hangs; the second streams the whole one.
    let server = std::thread::spawn(move || {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
        let (mut first, _) = listener.accept().unwrap();
        crate::common::read_request(&first);
        let _ = write!(first, "{head}{}", sse_text("Half of a first answer"));
        let _ = first.flush();
        let _ = held_tx.send(());
        let _ = release_rx.recv();
        drop(first);
        let (mut second, _) = listener.accept().unwrap();
        crate::common::read_request(&second);
        let _ = write!(second, "{head}{}", sse_text("Whole answer, "));
        let _ = second.flush();
        std::thread::sleep(Duration::from_millis(400));
        let done = "data: [DONE]\n\n";
        let _ = write!(
            second,
            "{}{:x}\r\n{done}\r\n0\r\n\r\n",
            sse_text("streamed.\nFINISHED"),
            done.len()
        );
    });
    let client = live_client(&restate.ingress, &work, &endpoint, "Answer.");
    held.recv_timeout(Duration::from_secs(60))
        .expect("the first request arrives");
    // The half reply reached the side channel; the client shows it within its next polls.
    wait_for("the streamed half", Duration::from_secs(30), || {
        stream_files(&work).iter().any(|file| {
            std::fs::read_to_string(file)
                .unwrap_or_default()
                .contains("Half of a first answer")
        })
    });
    std::thread::sleep(Duration::from_millis(600));
    worker.kill();
    worker.restart();
    release.send(()).unwrap();
    let output = client.wait_with_output().unwrap();
    server.join().unwrap();
    let shown = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{shown}\nworker: {}",
        worker.log()
    );
    let half = shown
        .find("turn 0  Reader writes:\nHalf of a first answer")
        .unwrap_or_else(|| panic!("the half reply is shown: {shown}"));
    let discarded = shown
        .find("[the server runs this turn again: the text above is discarded]\nturn 0  Reader writes:\nWhole answer, streamed.\nFINISHED")
        .unwrap_or_else(|| panic!("the rerun says so: {shown}"));
    assert!(half < discarded, "{shown}");
    assert_eq!(
        shown.matches("Whole answer, streamed.").count(),
        1,
        "{shown}"
    );
    // The run ended: its streamed text goes soon after.
    wait_for("the streamed text to go", Duration::from_secs(30), || {
        stream_files(&work).is_empty()
    });
}

/// The served MCP case's config with its placeholders filled in, written in `root`.
#[cfg(feature = "mcp-tests")]
fn mcp_config(root: &Path) -> PathBuf {
    use crate::mcp::harness::{deps, repo};
    let config = std::fs::read_to_string(fixture("serve/mcp/config.yaml"))
        .unwrap()
        .replace("{deps}", deps().to_str().unwrap())
        .replace("{repo}", repo().to_str().unwrap());
    let path = root.join("mcp-config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

/// `exec` of the served MCP case in `work`, its events in `work/events.jsonl`, then `extra`.
#[cfg(feature = "mcp-tests")]
fn mcp_run(config: &Path, work: &Path, extra: &[&str]) -> Output {
    std::fs::create_dir_all(work).unwrap();
    let replay = fixture("serve/mcp/replay.yaml");
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("exec")
        .arg(config)
        .args(["--task", "Use the tools.", "--replay"])
        .arg(replay)
        .arg("--work-dir")
        .arg(work)
        .arg("--events")
        .arg(work.join("events.jsonl"))
        .args(extra)
        .output()
        .unwrap()
}

/// The MCP calls the change log of `work` records: `(tool, output)`.
#[cfg(feature = "mcp-tests")]
fn mcp_calls(work: &Path) -> Vec<(String, String)> {
    use fuseraft_vm::changes::{ChangeLog, DEFAULT_PATH};
    let Ok(log) = ChangeLog::load(&work.join(DEFAULT_PATH)) else {
        return Vec::new();
    };
    log.entries
        .iter()
        .flat_map(|entry| &entry.mcp_calls)
        .map(|call| (call.tool.clone(), call.output.clone()))
        .collect()
}

#[cfg(feature = "mcp-tests")]
#[test]
fn a_served_run_calls_its_mcp_servers_and_no_call_twice_through_a_kill() {
    let root = tempfile::tempdir().unwrap();
    let restate = Restate::start();
    let trust = ["--trust-mcp".to_string()];
    let mut worker = Worker::on_port(free_port(), &restate, root.path(), &[], &trust);
    let config = mcp_config(root.path());
    let local = root.path().join("local");
    let output = mcp_run(&config, &local, &["--trust-mcp"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let expected = trace(&local.join("events.jsonl"));
    // Served as a local run: the same events, the same calls in the change log.
    let calm = root.path().join("calm");
    let output = mcp_run(&config, &calm, &["--on", &restate.ingress]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\nworker: {}",
        text(&output.stderr),
        worker.log()
    );
    assert_eq!(trace(&calm.join("events.jsonl")), expected);
    assert_eq!(mcp_calls(&calm), mcp_calls(&local));
    assert_eq!(mcp_calls(&calm).len(), 2);
    // A worker killed while the slow call is under way (the addition is recorded): the
    // retried turn keeps the addition and does not make the slow call again.
    let killed = root.path().join("killed");
    let output = mcp_run(&config, &killed, &["--on", &restate.ingress, "--detach"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let session = text(&output.stdout).trim().to_string();
    wait_for("the addition", Duration::from_secs(60), || {
        !mcp_calls(&killed).is_empty()
    });
    std::thread::sleep(Duration::from_millis(500));
    worker.kill();
    worker.restart();
    wait_for("the run to end", Duration::from_secs(60), || {
        !status(&restate, &session)["outcome"].is_null()
    });
    let status = status(&restate, &session);
    // One turn, as the config's termination says.
    assert_eq!(status["outcome"], "max_turns", "{status}\n{}", worker.log());
    assert_eq!(
        mcp_calls(&killed),
        [("add".to_string(), "1 + 2 = 3".to_string())],
        "the addition once, the slow call never finished"
    );
    let events = kept_events(&restate, &session, &root.path().join("kept.jsonl"));
    let calls: Vec<(String, bool)> = events
        .iter()
        .filter(|event| event["event_type"] == "mcp_tool_call")
        .map(|event| {
            (
                event["payload"]["tool"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                event["payload"]["ok"].as_bool().unwrap_or(true),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [("add".to_string(), true), ("wait".to_string(), false)],
        "{events:#?}"
    );
}

#[cfg(feature = "browser-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_sessions_are_listed_in_the_web_view_and_a_question_answered_there() {
    use crate::webdriver::Browser;
    use std::io::BufRead;
    let root = tempfile::tempdir().unwrap();
    let restate = std::sync::Arc::new(Restate::start());
    let _worker = Worker::start(&restate, root.path(), &[]);
    let (expected, _, session) = detached_approval(root.path(), &restate);
    wait_for("the question", Duration::from_secs(30), || {
        !status(&restate, &session)["waiting"].is_null()
    });
    let mut ui = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["ui", "--on", &restate.ingress])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(ui.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line
        .rsplit_once(": ")
        .map(|(_, url)| url.trim().to_string())
        .unwrap_or_default();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    let browser = Browser::start().await;
    browser.goto(&url).await;
    browser
        .wait_for("the list", "return document.body.dataset.ready")
        .await;
    let listed = browser
        .run("return [...document.querySelectorAll('#session-list li')].map(li => [li.dataset.id, li.dataset.waiting, li.querySelector('.meta').textContent])")
        .await;
    let question = format!("{session}.1");
    assert_eq!(
        listed,
        serde_json::json!([[
            session,
            question,
            format!("waits on {question} · 0 turn(s)")
        ]]),
    );
    // The page opens on it: the question asked, answerable.
    browser
        .wait_for("the session", "return document.body.dataset.shown")
        .await;
    let asked = browser
        .run("return [...document.querySelectorAll('#approvals .approval')].map(a => [a.dataset.id, a.dataset.kind, a.querySelector('p').textContent])")
        .await;
    assert_eq!(
        asked,
        serde_json::json!([[
            question,
            "route",
            "Approve route Developer → Deployer on DEPLOY?"
        ]])
    );
    browser
        .save_screenshot("web-view-served-question.png")
        .await;
    browser.click("#approvals .approval button.approve").await;
    browser
        .wait_for(
            "the answer taken",
            "return document.querySelector('.approval.answered')?.dataset.approved",
        )
        .await;
    let said = browser
        .run("return document.querySelector('.approval.answered .answer').textContent")
        .await;
    assert!(
        said.as_str().unwrap_or_default().starts_with("approved ("),
        "{said}"
    );
    // The run goes on to its end as a local run does.
    let on = restate.ingress.clone();
    let server = std::sync::Arc::clone(&restate);
    let root_path = root.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let restate = server;
        wait_for("the run to end", Duration::from_secs(60), || {
            !status(&restate, &session)["outcome"].is_null()
        });
        let status = status(&restate, &session);
        assert_eq!(status["outcome"], "completed", "{status}");
        assert!(
            status["answers"][0]["by"]
                .as_str()
                .unwrap_or_default()
                .ends_with("web view"),
            "{status}"
        );
        assert_eq!(
            kept_events(&restate, &session, &root_path.join("kept.jsonl")),
            expected
        );
        // The same question again, from the command line: refused, naming the page's answer.
        let again = fuseraft(&["approve", &question, "--no", "--on", &on]);
        assert_eq!(again.status.code(), Some(1));
        assert!(
            text(&again.stderr).contains("already answered `yes` by"),
            "{}",
            text(&again.stderr)
        );
    })
    .await
    .unwrap();
    // The page follows the session to its end.
    browser
        .wait_for(
            "the page to show the end",
            "return document.getElementById('outcome').textContent.startsWith('completed') || null",
        )
        .await;
    let cards = browser
        .run("return [...document.querySelectorAll('#turns li.card')].map(c => c.dataset.agent)")
        .await;
    assert_eq!(cards, serde_json::json!(["Developer", "Deployer"]));
    let listed = browser
        .run("return document.querySelector('#session-list li .meta').textContent")
        .await;
    assert_eq!(listed, "completed · 2 turn(s)");
    browser.save_screenshot("web-view-served.png").await;
    browser.close().await;
    let _ = ui.kill();
    let _ = ui.wait();
}
