//! The web view's approvals, `--hitl` pauses and event stream over plain HTTP (no browser):
//! the page and the terminal both answer an approval or a pause and the first answer wins,
//! the other is told; a run waiting for the page still ends on SIGTERM; the answering
//! endpoints refuse what is not the page's; a reconnecting page continues after the last
//! event it saw; a magentic manager's plan is reviewed in the page; a tama `human` step
//! takes its line from the page.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value as Json;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/run/ui-live-approval")
}

fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-webapi-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `exec --ui` of the fixture with `stdin`; stderr is collected in the background.
struct Run {
    child: Child,
    stderr: Arc<Mutex<String>>,
    url: String,
    work: PathBuf,
}

impl Run {
    fn start(name: &str, stdin: Stdio, extra: &[&str]) -> Run {
        let fixture = fixture();
        Run::of(
            &fixture.join("config.yaml"),
            &fixture.join("replay.yaml"),
            name,
            stdin,
            extra,
        )
    }

    fn of(config: &Path, replay: &Path, name: &str, stdin: Stdio, extra: &[&str]) -> Run {
        let work = work_dir(name);
        let mut child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
            .arg("exec")
            .arg(config)
            .args(["--task", "Ship the feature.", "--replay"])
            .arg(replay)
            .arg("--work-dir")
            .arg(&work)
            .args(["--ui"])
            .args(extra)
            .env("FUSERAFT_SESSION_KEY", work.with_extension("key"))
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut reader = BufReader::new(child.stderr.take().unwrap());
        // `check`'s findings for the config may come first; the URL line follows them.
        let mut before = String::new();
        let url = loop {
            let mut line = String::new();
            let read = reader.read_line(&mut line).unwrap();
            assert!(read > 0, "no URL line; stderr: {before}");
            if let Some(url) = line.strip_prefix("web view: ") {
                break url.trim().to_string();
            }
            before.push_str(&line);
        };
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Run {
            child,
            stderr,
            url,
            work,
        }
    }

    fn base(&self) -> &str {
        self.url.split("/?").next().unwrap()
    }

    fn token(&self) -> &str {
        self.url.split("token=").nth(1).unwrap()
    }

    fn wait_stderr(&self, text: &str) {
        let until = Instant::now() + Duration::from_secs(30);
        while !self.stderr.lock().unwrap().contains(text) {
            assert!(
                Instant::now() < until,
                "no `{text}` in:\n{}",
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait(mut self) -> (std::process::ExitStatus, String, String) {
        let until = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < until, "the run did not end");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        let _ = self
            .child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout);
        std::thread::sleep(Duration::from_millis(50));
        let stderr = self.stderr.lock().unwrap().clone();
        (status, stdout, stderr)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads the event stream until a message satisfies `done`; returns `(id, message)`s.
async fn read_events(
    run: &Run,
    last_event_id: Option<usize>,
    done: impl Fn(&Json) -> bool,
) -> Vec<(usize, Json)> {
    let mut request =
        reqwest::Client::new().get(format!("{}/events?token={}", run.base(), run.token()));
    if let Some(last) = last_event_id {
        request = request.header("Last-Event-ID", last.to_string());
    }
    let mut response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut text = String::new();
    let mut messages = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let chunk = tokio::time::timeout_at(deadline.into(), response.chunk())
            .await
            .expect("the event stream went quiet")
            .unwrap()
            .expect("the stream ended first");
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let mut id = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("id:") {
                    id = value.trim().parse::<usize>().ok();
                } else if let Some(value) = line.strip_prefix("data:") {
                    data = Some(serde_json::from_str::<Json>(value.trim()).unwrap());
                }
            }
            if let (Some(id), Some(data)) = (id, data) {
                let finished = done(&data);
                messages.push((id, data));
                if finished {
                    return messages;
                }
            }
        }
    }
}

fn is(kind: &'static str) -> impl Fn(&Json) -> bool {
    move |message| message["event_type"] == kind
}

/// A pseudo-terminal: the master, and its slave side for the child's standard input.
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

const PROMPT: &str = "approve route `Reviewer` → `Deployer` on `DEPLOY`? [y/N]";

#[tokio::test]
async fn the_page_answers_while_the_terminal_asks() {
    let (_master, slave) = terminal();
    let run = Run::start("page-first", Stdio::from(slave), &[]);
    let asked = read_events(&run, None, is("ui_approval")).await;
    let (_, question) = asked.last().unwrap();
    assert_eq!(question["payload"]["kind"], "route");
    run.wait_stderr(PROMPT);
    let id = question["payload"]["id"].as_u64().unwrap();
    let http = reqwest::Client::new();
    let approve = |id: u64| {
        http.post(format!(
            "{}/approve?token={}&id={id}&approved=true",
            run.base(),
            run.token()
        ))
        .send()
    };
    assert_eq!(
        approve(id + 1).await.unwrap().status(),
        409,
        "not the question asked"
    );
    assert_eq!(approve(id).await.unwrap().status(), 200);
    let (status, _, stderr) = run.wait();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("y (answered in the web view)"), "{stderr}");
    assert!(stderr.contains("── completed after 3 turn(s)"), "{stderr}");
}

#[tokio::test]
async fn the_terminal_answers_first_and_the_page_is_told() {
    let (mut master, slave) = terminal();
    let run = Run::start("terminal-first", Stdio::from(slave), &[]);
    let asked = read_events(&run, None, is("ui_approval")).await;
    let (last, _) = *asked.last().unwrap();
    run.wait_stderr(PROMPT);
    master.write_all(b"y\n").unwrap();
    // A page reconnecting after the question continues with what followed it.
    let rest = read_events(&run, Some(last), is("session_end")).await;
    assert_eq!(rest[0].0, last + 1, "continues after the last event seen");
    let answered = rest
        .iter()
        .find(|(_, message)| message["event_type"] == "ui_approval_answered")
        .expect("the answer is published");
    assert_eq!(answered.1["payload"]["by"], "terminal");
    assert_eq!(answered.1["payload"]["approved"], true);
    assert_eq!(rest.last().unwrap().1["payload"]["outcome"], "completed");
    let (status, _, stderr) = run.wait();
    assert!(status.success(), "{stderr}");
}

#[tokio::test]
async fn a_run_waiting_for_the_page_still_ends_on_sigterm() {
    let run = Run::start("sigterm", Stdio::null(), &["--json"]);
    read_events(&run, None, is("ui_approval")).await;
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&run.child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let (status, stdout, stderr) = run.wait();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let summary: Json = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["outcome"], "cancelled");
    assert!(
        stderr.contains("cancelled (SIGTERM) during an approval"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_tool_call_refused_in_the_page_is_not_run() {
    let dir = work_dir("tool");
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        "Orchestration:\n  Name: Tool\n  Security:\n    Permissions:\n      \
         command_execution: require-approval\n  Agents:\n    - { Name: Dev, Instructions: Go., \
         Plugins: [Shell] }\n  Selection: { Type: sequential }\n  \
         Termination: { Type: maxiterations, MaxIterations: 1 }\n",
    )
    .unwrap();
    let replay = dir.join("replay.yaml");
    std::fs::write(
        &replay,
        "replies:\n  Dev:\n    - tool_calls:\n        - { name: shell_run, args: { command: \
         \"echo ran > ran.txt\" } }\n      text: done\n",
    )
    .unwrap();
    let run = Run::of(&config, &replay, "tool-run", Stdio::null(), &[]);
    let asked = read_events(&run, None, is("ui_approval")).await;
    let payload = &asked.last().unwrap().1["payload"];
    assert_eq!(payload["kind"], "tool");
    assert_eq!(payload["from"], "Dev");
    assert!(
        payload["to"]
            .as_str()
            .unwrap()
            .contains("echo ran > ran.txt"),
        "{payload}"
    );
    let id = payload["id"].as_u64().unwrap();
    let refused = reqwest::Client::new()
        .post(format!(
            "{}/approve?token={}&id={id}&approved=false",
            run.base(),
            run.token()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 200);
    let rest = read_events(&run, Some(asked.last().unwrap().0), is("turn_end")).await;
    let call = &rest.last().unwrap().1["reply"]["tool_calls"][0];
    assert_eq!(call["ok"], false, "{call}");
    assert!(
        call["result"]
            .as_str()
            .unwrap()
            .contains("refused by the operator"),
        "{call}"
    );
    let ran = run.work.join("ran.txt");
    let (status, _, stderr) = run.wait();
    assert!(status.success(), "{stderr}");
    assert!(!ran.exists(), "refused, so not run");
}

fn sequential() -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/run/sequential");
    (dir.join("config.yaml"), dir.join("replay.yaml"))
}

const PAUSED: &str = "── paused after turn";

#[tokio::test]
async fn a_pause_is_answered_by_the_page_or_the_terminal_whichever_first() {
    let (mut master, slave) = terminal();
    let (config, replay) = sequential();
    let run = Run::of(
        &config,
        &replay,
        "pause-race",
        Stdio::from(slave),
        &["--hitl", "--json"],
    );
    let asked = read_events(&run, None, is("ui_pause")).await;
    let (last, question) = asked.last().unwrap();
    assert_eq!(question["payload"]["turn"], 1);
    assert_eq!(question["payload"]["agent"], "Extractor");
    run.wait_stderr(PAUSED);
    let id = question["payload"]["id"].as_u64().unwrap();
    let http = reqwest::Client::new();
    let pause = |id: u64, action: &str| {
        http.post(format!(
            "{}/pause?token={}&id={id}&action={action}",
            run.base(),
            run.token()
        ))
    };
    // The page answers first: the terminal is told, and a second answer is refused.
    assert_eq!(pause(id, "continue").send().await.unwrap().status(), 200);
    assert_eq!(pause(id, "quit").send().await.unwrap().status(), 409);
    run.wait_stderr("(answered in the web view: continue)");
    // The terminal answers the next pause first: the page is told.
    let next = read_events(&run, Some(*last), is("ui_pause")).await;
    let (last, second) = next.last().unwrap();
    assert_eq!(second["payload"]["turn"], 2);
    let second_id = second["payload"]["id"].as_u64().unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while run.stderr.lock().unwrap().matches(PAUSED).count() < 2 {
        assert!(Instant::now() < until, "no second prompt");
        std::thread::sleep(Duration::from_millis(20));
    }
    master.write_all(b"q\n").unwrap();
    let told = read_events(&run, Some(*last), is("ui_pause_answered")).await;
    let answer = &told.last().unwrap().1["payload"];
    assert_eq!(answer["id"], second_id);
    assert_eq!(answer["action"], "quit");
    assert_eq!(answer["by"], "terminal");
    assert_eq!(
        pause(second_id, "continue").send().await.unwrap().status(),
        409
    );
    let (status, stdout, stderr) = run.wait();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let summary: Json = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["outcome"], "cancelled");
    assert_eq!(summary["turns"], 2);
}

#[tokio::test]
async fn the_pause_endpoint_takes_only_the_pages_answers() {
    let (config, replay) = sequential();
    let run = Run::of(
        &config,
        &replay,
        "pause-guard",
        Stdio::null(),
        &["--hitl", "--json"],
    );
    let asked = read_events(&run, None, is("ui_pause")).await;
    let id = asked.last().unwrap().1["payload"]["id"].as_u64().unwrap();
    let http = reqwest::Client::new();
    let url = |query: &str| format!("{}/pause?{query}", run.base());
    let token = run.token();
    let status = |response: reqwest::Response| response.status().as_u16();
    // No token, or another.
    let refused = http
        .post(url(&format!("id={id}&action=quit")))
        .send()
        .await
        .unwrap();
    assert_eq!(status(refused), 403);
    let refused = http
        .post(url(&format!("token=00{token}&id={id}&action=quit")))
        .send()
        .await
        .unwrap();
    assert_eq!(status(refused), 403);
    // A page of another origin that knows the token.
    let foreign = http
        .post(url(&format!("token={token}&id={id}&action=quit")))
        .header("Origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(status(foreign), 403);
    let cross = http
        .post(url(&format!("token={token}&id={id}&action=quit")))
        .header("Sec-Fetch-Site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(status(cross), 403);
    // Malformed answers.
    for (query, body) in [
        (format!("token={token}&id={id}&action=message"), "   "),
        (format!("token={token}&id={id}&action=jump"), ""),
        (format!("token={token}&action=quit"), ""),
    ] {
        let bad = http.post(url(&query)).body(body).send().await.unwrap();
        assert_eq!(status(bad), 400, "{query}");
    }
    let long = http
        .post(url(&format!("token={token}&id={id}&action=message")))
        .body("x".repeat(16 * 1024 + 1))
        .send()
        .await
        .unwrap();
    assert_eq!(status(long), 413);
    // An approval's answer to a pause.
    let approve = http
        .post(format!(
            "{}/approve?token={token}&id={id}&approved=true",
            run.base()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(status(approve), 409);
    // The page's own answer (same origin) is taken: a message, then the run goes on.
    let host = run.base().trim_start_matches("http://").to_string();
    let sent = http
        .post(url(&format!("token={token}&id={id}&action=message")))
        .header("Origin", format!("http://{host}"))
        .header("Sec-Fetch-Site", "same-origin")
        .body("  Load them in order.  ")
        .send()
        .await
        .unwrap();
    assert_eq!(status(sent), 200);
    let rest = read_events(&run, Some(asked.last().unwrap().0), is("ui_pause")).await;
    let answered = rest
        .iter()
        .find(|(_, message)| message["event_type"] == "ui_pause_answered")
        .expect("the answer is published");
    assert_eq!(answered.1["payload"]["action"], "message");
    assert_eq!(answered.1["payload"]["message"], "Load them in order.");
    assert_eq!(answered.1["payload"]["by"], "page");
    assert!(
        rest.iter()
            .any(|(_, message)| message["event_type"] == "operator_message"),
        "the message joined the conversation"
    );
    // SIGTERM while the run waits for the page at the next pause: cancelled, resumable.
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&run.child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let (status, stdout, stderr) = run.wait();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let summary: Json = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["outcome"], "cancelled");
    assert!(
        stderr.contains("cancelled (SIGTERM) during a pause"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_magentic_plan_is_reviewed_in_the_page() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/run/magentic-plan-review-approved");
    // No terminal: the review waits for the page.
    let run = Run::of(
        &fixture.join("config.yaml"),
        &fixture.join("replay.yaml"),
        "magentic-plan",
        Stdio::null(),
        &["--json"],
    );
    let asked = read_events(&run, None, is("ui_approval")).await;
    assert!(
        asked.iter().any(
            |(_, message)| message["event_type"] == "magentic_orientation"
                && message["payload"]["plan"] == "1. Developer adds paging."
        ),
        "the plan reaches the page before the question: {asked:?}"
    );
    let (_, question) = asked.last().unwrap();
    assert_eq!(question["payload"]["kind"], "plan");
    let id = question["payload"]["id"].as_u64().unwrap();
    let approved = reqwest::Client::new()
        .post(format!(
            "{}/approve?token={}&id={id}&approved=true",
            run.base(),
            run.token()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(approved.status(), 200);
    let (status, stdout, stderr) = run.wait();
    assert!(status.success(), "{stderr}");
    let summary: Json = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["outcome"], "completed", "{stderr}");
    assert_eq!(summary["output"], "Paging added.");
}

#[tokio::test]
async fn an_escalation_is_redirected_from_the_page() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/run/escalate-to-human-redirect");
    // No terminal and no `--hitl`: the escalation is the page's question.
    let run = Run::of(
        &fixture.join("config.yaml"),
        &fixture.join("replay.yaml"),
        "escalation-redirect",
        Stdio::null(),
        &["--json"],
    );
    let asked = read_events(&run, None, is("ui_approval")).await;
    let (_, question) = asked.last().unwrap();
    assert_eq!(question["payload"]["kind"], "escalation", "{question}");
    assert_eq!(question["payload"]["redirectable"], true);
    let id = question["payload"]["id"].as_u64().unwrap();
    let client = reqwest::Client::new();
    let answer = |query: String, body: &'static str| {
        client
            .post(format!(
                "{}/approve?token={}&id={id}&{query}",
                run.base(),
                run.token()
            ))
            .body(body)
            .send()
    };
    // An empty direction is refused, and the question still waits.
    assert_eq!(
        answer("answer=redirect".into(), "  ")
            .await
            .unwrap()
            .status(),
        400
    );
    let direction = "Use write_file for src/main.rs, then hand off again.";
    assert_eq!(
        answer("answer=redirect".into(), direction)
            .await
            .unwrap()
            .status(),
        200
    );
    let (status, stdout, stderr) = run.wait();
    assert!(status.success(), "{stderr}");
    let summary: Json = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["outcome"], "completed", "{stderr}");
    // The direction reached the agent: it is in the run's transcript, after the correction.
    let transcript = std::fs::read_to_string(summary["transcript_path"].as_str().unwrap()).unwrap();
    assert!(transcript.contains(direction), "{transcript}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_reaches_the_page_in_words_and_the_end_points_to_fuseraft_ui() {
    // Approved without the page, so the run goes through; its first turn sleeps, so the
    // stream is read from the start.
    let run = Run::start("cards", Stdio::null(), &["--approve", "all"]);
    let events = read_events(&run, None, is("session_end")).await;
    for (_, event) in &events {
        let kind = event["event_type"].as_str().unwrap_or_default();
        if kind.starts_with("ui_") {
            continue; // the page's own controls
        }
        let text = event["text"].as_str().unwrap_or_default();
        assert!(!text.is_empty(), "{kind} has no words: {event}");
        assert!(
            !text.contains('{') && !text.contains(kind),
            "{kind}: {text}"
        );
    }
    let words: Vec<&str> = events
        .iter()
        .filter_map(|(_, event)| event["text"].as_str())
        .collect();
    assert!(
        words
            .iter()
            .any(|text| text.starts_with("Developer → Reviewer on `REVIEW`")),
        "{words:?}"
    );
    assert!(
        words
            .iter()
            .any(|text| text.starts_with("completed after 3 turn(s)")),
        "{words:?}"
    );
    // The page ends with the process; the terminal says where to see the run again.
    let (status, _, stderr) = run.wait();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "web view closed with the run; browse its session with: fuseraft ui --work-dir "
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_tama_human_step_is_answered_from_the_page() {
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hitl/tama-human");
    // No terminal: the human step's question is the page's, with a box for the answer.
    let run = Run::of(
        &project,
        &project.join("replay.yaml"),
        "tama-human",
        Stdio::null(),
        &["--json"],
    );
    let asked = read_events(&run, None, is("ui_approval")).await;
    let (_, question) = asked.last().unwrap();
    assert_eq!(question["payload"]["kind"], "human", "{question}");
    assert_eq!(question["payload"]["redirectable"], true);
    assert!(
        question["payload"]["signal"]
            .as_str()
            .is_some_and(|signal| signal.ends_with("Publish the post?")),
        "{question}"
    );
    let id = question["payload"]["id"].as_u64().unwrap();
    let answered = reqwest::Client::new()
        .post(format!(
            "{}/approve?token={}&id={id}&answer=redirect",
            run.base(),
            run.token()
        ))
        .body("yes, ship it")
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let (status, stdout, stderr) = run.wait();
    assert!(status.success(), "{stderr}");
    let summary: Json = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["outcome"], "completed", "{stderr}");
    assert_eq!(summary["output"], "acted", "{summary}");
}
