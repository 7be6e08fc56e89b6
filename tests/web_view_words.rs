//! What the page says in a real browser: every event of runs that start phases, pass
//! adversarial stages, fail a model call or end by a termination strategy is a note in
//! words (never its raw name and JSON); and the minimal template's `--ui --hitl` run, over
//! before its page is opened, names the `fuseraft ui` command, which shows the run; and a
//! finished run tabulates each agent's totals; a turn card fills as the model streams.
#![cfg(feature = "browser-tests")]

use crate::launch;
use crate::webdriver;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value as Json};
use webdriver::Browser;

/// The browser tests share two cores with the build: one at a time.
static ONE_BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Every note of the turns, except the answered pauses.
const NOTES: &str = "return [...document.querySelectorAll('#run .note:not(.settled)')]\
    .map(n => n.textContent)";

/// Runs `fixture` with `--ui --hitl` and no terminal, continuing every pause from the page,
/// and returns the notes the page shows once the run has ended (its screenshot shows the
/// first note that starts with `words`).
async fn notes_of(browser: &Browser, fixture: &str, words: &str) -> Vec<String> {
    let work = launch::work_dir(fixture);
    let run = launch::Live::start(launch::exec(
        &launch::fixture(fixture),
        "Do it.",
        &work,
        &["--ui", "--hitl"],
    ));
    browser.goto(&run.url).await;
    loop {
        let now = browser
            .run(
                "return document.body.dataset.ended ? 'ended' : \
                 document.querySelector('#approvals .pause button.continue:not(:disabled)') ? 'paused' : 'running'",
            )
            .await;
        match now.as_str() {
            Some("ended") => break,
            Some("paused") => {
                browser
                    .click("#approvals .pause button.continue:not(:disabled)")
                    .await
            }
            _ => tokio::time::sleep(Duration::from_millis(30)).await,
        }
    }
    browser
        .run(&format!(
            "const n = [...document.querySelectorAll('#run .note')]\
               .find(n => n.textContent.startsWith({})); \
             n?.scrollIntoView({{block: 'center'}}); return true",
            json!(words)
        ))
        .await;
    browser
        .save_screenshot(&format!("web-view-words-{fixture}.png"))
        .await;
    let notes = browser.run(NOTES).await;
    drop(run);
    serde_json::from_value(notes).unwrap()
}

/// Whether a note is an event's raw name (`phase_start …`) or JSON.
fn raw(note: &str) -> bool {
    let first = note.split_whitespace().next().unwrap_or_default();
    let name = first.contains('_') && first.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    name || note.contains("{\"")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_is_a_note_in_words() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start().await;
    let wanted = [
        ("graph-phase-restart", "phase 2 begins: Review → Design"),
        ("adversarial", "the critic passed `"),
        ("replay-exhausted", "the model failed: "),
        ("sequential", "a termination strategy ended the run"),
    ];
    for (fixture, words) in wanted {
        let notes = notes_of(&browser, fixture, words).await;
        let unread: Vec<&String> = notes.iter().filter(|note| raw(note)).collect();
        assert!(unread.is_empty(), "{fixture}: raw events {unread:?}");
        assert!(
            notes.iter().any(|note| note.starts_with(words)),
            "{fixture}: no `{words}` in {notes:?}"
        );
    }
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_over_before_its_page_opens_names_fuseraft_ui_which_shows_it() {
    let _one = ONE_BROWSER.lock().await;
    let project = launch::work_dir("minimal");
    let made = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["init", "--template", "minimal"])
        .arg(&project)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let work = project.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let ran = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("exec")
        .arg(project.join("fuseraft.yaml"))
        .args(["--task", "Say hello.", "--replay"])
        .arg(project.join("replay.yaml"))
        .arg("--work-dir")
        .arg(&work)
        .args(["--ui", "--hitl", "--json"])
        .env("FUSERAFT_SESSION_KEY", work.with_extension("key"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    let summary: Json = serde_json::from_slice(&ran.stdout).unwrap();
    assert_eq!(summary["outcome"], "completed", "{stderr}");
    // The one turn ends the run: no pause, and the page went with the process.
    let hint = "browse its session with: fuseraft ui --work-dir ";
    let line = stderr
        .lines()
        .find_map(|line| line.split_once(hint).map(|(_, dir)| dir.to_string()))
        .unwrap_or_else(|| panic!("no `fuseraft ui` hint:\n{stderr}"));
    assert_eq!(Some(line.trim()), work.to_str());

    // The command it names shows the finished run.
    let mut child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["ui", "--work-dir", line.trim()])
        .env("FUSERAFT_SESSION_KEY", work.with_extension("key"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kept open while the server runs: it may still write to it.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let url = first
        .split(": ")
        .nth(1)
        .expect("the URL line")
        .trim()
        .to_string();
    let browser = Browser::start().await;
    browser.goto(&url).await;
    let id = summary["session_id"].as_str().unwrap();
    browser
        .wait_for(
            "the run",
            &format!("return document.body.dataset.shown === '{id}'"),
        )
        .await;
    let shown = browser
        .run(
            "return [document.getElementById('outcome').textContent, \
               document.querySelectorAll('#turns li.card').length]",
        )
        .await;
    assert_eq!(shown, json!(["completed after 1 turn(s)", 1]));
    browser.save_screenshot("web-view-minimal-after.png").await;
    let _ = child.kill();
    let _ = child.wait();
    browser.close().await;
}

/// At the end of a run the page tabulates each agent's turns, tokens, cost, tool calls and
/// time (`sequential`: the Extractor and the Loader, two turns each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_a_run_shows_each_agents_totals() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start().await;
    notes_of(
        &browser,
        "sequential",
        "a termination strategy ended the run",
    )
    .await;
    let rows = browser
        .run(
            "return [...document.querySelectorAll('#agents tr[data-agent]')]\
               .map(r => [...r.children].map(c => c.textContent))",
        )
        .await;
    browser
        .run("document.querySelector('#agents').scrollIntoView({block: 'center'}); return true")
        .await;
    browser.save_screenshot("web-view-agents.png").await;
    browser.close().await;
    let rows: Vec<Vec<String>> = serde_json::from_value(rows).unwrap();
    let turns: Vec<(&str, &str)> = rows
        .iter()
        .map(|row| (row[0].as_str(), row[1].as_str()))
        .collect();
    assert_eq!(turns, [("Extractor", "2"), ("Loader", "2")], "{rows:?}");
    assert!(
        rows.iter()
            .all(|row| row.len() == 7 && row[6].ends_with(" s")),
        "{rows:?}"
    );
}

/// One SSE chunk of a streamed OpenAI reply carrying `text`.
fn chunk(text: &str) -> String {
    let event =
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let data = format!("data: {event}\n\n");
    format!("{:x}\r\n{data}\r\n", data.len())
}

/// A turn card fills as the model writes: against a loopback server that streams the first
/// sentence and then waits, the page shows that sentence before the turn ends, again after a
/// reload mid-turn, and the whole reply once the server goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_card_fills_as_the_model_writes() {
    use std::io::{Read, Write};
    let _one = ONE_BROWSER.lock().await;
    let work = launch::work_dir("streaming");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/v1", listener.local_addr().unwrap());
    let (go_on, wait) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut request = [0u8; 65536];
        let _ = stream.read(&mut request);
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
        let _ = write!(stream, "{head}{}", chunk("The first part."));
        let _ = stream.flush();
        let _ = wait.recv_timeout(Duration::from_secs(60));
        let done = "data: [DONE]\n\n";
        let _ = write!(
            stream,
            "{}{:x}\r\n{done}\r\n0\r\n\r\n",
            chunk(" The second part.\nFINISHED"),
            done.len()
        );
    });
    let config = work.join("config.yaml");
    std::fs::write(
        &config,
        "Orchestration:\n  Name: Streaming\n  Agents:\n    - Name: Writer\n      Instructions: Write, then say FINISHED.\n      Model: { Provider: openai, ModelId: local-model }\n  Selection:\n    Type: keyword\n    Routes:\n      - { Keyword: FINISHED, Agent: Writer, SourceAgents: [Writer] }\n",
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuseraft"));
    command
        .arg("exec")
        .arg(&config)
        .args(["--task", "Write it.", "--ui", "--endpoint", &endpoint])
        .arg("--work-dir")
        .arg(work.join("run"))
        .env("FUSERAFT_SESSION_KEY", work.with_extension("key"))
        .stdin(Stdio::null());
    let run = launch::Live::start(command);
    let browser = Browser::start().await;
    browser.goto(&run.url).await;
    let reply = "return document.querySelector('#turns .card.streaming .reply')?.textContent";
    let shown = browser.wait_for("the first part, streaming", reply).await;
    assert_eq!(shown, json!("The first part."));
    assert_eq!(
        browser
            .run("return document.body.dataset.ended || null")
            .await,
        Json::Null
    );
    browser.save_screenshot("web-view-streaming.png").await;
    // A reload mid-turn shows the text so far.
    browser.refresh().await;
    let shown = browser
        .wait_for("the first part after a reload", reply)
        .await;
    assert_eq!(shown, json!("The first part."));
    go_on.send(()).unwrap();
    browser
        .wait_for("the end", "return document.body.dataset.ended || null")
        .await;
    let whole = browser
        .run("return document.querySelector('#turns .card .reply').textContent")
        .await;
    assert_eq!(whole, json!("The first part. The second part.\nFINISHED"));
    assert_eq!(
        browser
            .run("return document.querySelectorAll('#turns .card.streaming').length")
            .await,
        json!(0)
    );
    browser.close().await;
    server.join().unwrap();
    drop(run);
}
