//! The web view in a real browser: headless Chromium, driven through chromedriver, watches a
//! real `fuseraft exec --ui` run of `fixtures/run/ui-live-approval` (its turns slowed by a
//! `sleep` tool call), answers its approval from the page, reloads the page, and browses
//! the session afterwards with `fuseraft ui`.
//!
//! Screenshots go to a temporary directory; with `FUSERAFT_SCREENSHOTS=DIR` they are written
//! there instead (`FUSERAFT_SCREENSHOTS=docs/images` refreshes the documentation's).
#![cfg(feature = "browser-tests")]

use crate::launch;
use crate::webdriver;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value as Json};
use webdriver::Browser;

/// The browser tests share two cores with the build: one at a time.
static ONE_BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/run/ui-live-approval")
}

fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-web-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The states of the fixture's program, as the IR names them.
fn state_names() -> Vec<String> {
    let compiled =
        fuseraft_compiler::compile(&fixture().join("config.yaml"), &fuseraft::disk::Disk);
    let program = compiled.program.expect("the fixture compiles");
    program.states.iter().map(|s| s.name.clone()).collect()
}

/// Reads standard error until the line that prints the page's URL (after `marker`).
fn url_from(stderr: &mut BufReader<ChildStderr>, marker: &str) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let read = stderr.read_line(&mut line).expect("stderr");
        assert!(read > 0, "no `{marker}` line on stderr:\n{seen}");
        if let Some(at) = line.find(marker) {
            let url = line[at + marker.len()..].trim().to_string();
            assert!(url.starts_with("http://127.0.0.1:"), "not loopback: {url}");
            return url;
        }
        seen.push_str(&line);
    }
}

fn fuseraft() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
}

fn exec(work: &Path, extra: &[&str]) -> Command {
    let mut command = fuseraft();
    command
        .arg("exec")
        .arg(fixture().join("config.yaml"))
        .args(["--task", "Ship the feature.", "--replay"])
        .arg(fixture().join("replay.yaml"))
        .arg("--work-dir")
        .arg(work)
        .args(extra)
        .env("FUSERAFT_SESSION_KEY", work.with_extension("key"))
        .stdin(Stdio::null());
    command
}

/// `[[turn, agent, state], ...]` of the cards shown, in page order.
const CARDS: &str = "return [...document.querySelectorAll('#turns li.card')]\
    .map(c => [Number(c.dataset.turn), c.dataset.agent, c.dataset.state, \
    c.querySelector('.meta').textContent.replace(/ · [0-9.]+ s$/, '')])";

/// Everything the page shows of the run, for comparing before and after a reload.
const SHOWN: &str = "return {cards: [...document.querySelectorAll('#turns li.card')]\
    .map(c => c.textContent), approvals: [...document.querySelectorAll('#approvals .approval')]\
    .map(a => [a.dataset.id, a.querySelector('button.approve').disabled]), \
    visited: [...document.querySelectorAll('#graph g.node.visited')].map(n => n.dataset.state), \
    current: document.querySelector('#graph g.node.current')?.dataset.state ?? null, \
    events: document.body.dataset.events}";

struct Run {
    child: Child,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_run_is_watched_and_approved_in_the_browser() {
    let _one = ONE_BROWSER.lock().await;
    // The browser is up before the run starts, so the page sees its first turn.
    let browser = Browser::start().await;
    let work = work_dir("live");
    let mut child = exec(&work, &["--ui"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let run = Run { child };
    let url = url_from(&mut stderr, "web view: ");
    // The rest of stderr is drained, so the run never blocks on a full pipe.
    let drained = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
        rest
    });

    // Without the token, or with another, every route is refused.
    let http = reqwest::Client::new();
    let base = url.split("/?").next().unwrap().to_string();
    for path in [
        "/",
        "/events",
        "/graph",
        "/app.js",
        "/graph.js",
        "/?token=0000",
    ] {
        let status = http
            .get(format!("{base}{path}"))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 403, "{path}");
    }
    let refused = http
        .post(format!("{base}/approve?id=1&approved=true"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let page = http.get(&url).send().await.unwrap();
    let policy = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(policy.starts_with("default-src 'none'"), "{policy}");

    browser.goto(&url).await;
    browser
        .wait_for("the page", "return document.body.dataset.ready")
        .await;

    // The graph has one node per state of the IR (and `end` when an exit leads there).
    let nodes = browser
        .run("return [...document.querySelectorAll('#graph g.node')].map(n => n.dataset.state)")
        .await;
    let mut expected = state_names();
    for name in &expected {
        assert!(
            nodes.as_array().unwrap().contains(&json!(name)),
            "{name} not drawn: {nodes}"
        );
    }
    expected.retain(|name| name != "end");
    assert!(nodes.as_array().unwrap().len() >= expected.len());

    // The highlighted state follows the run until the approval is asked.
    let mut followed: Vec<String> = Vec::new();
    loop {
        let now = browser
            .run(
                "return [document.querySelector('#graph g.node.current')?.dataset.state ?? null, \
                  !!document.querySelector('.approval button.approve:not(:disabled)')]",
            )
            .await;
        if let Some(state) = now[0].as_str() {
            if followed.last().map(String::as_str) != Some(state) {
                followed.push(state.to_string());
            }
        }
        if now[1] == json!(true) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    assert_eq!(
        followed,
        ["Developer", "Reviewer"],
        "highlight followed {followed:?}"
    );
    let cards = browser.run(CARDS).await;
    assert_eq!(
        cards,
        json!([
            [
                0,
                "Developer",
                "Developer",
                "tokens in 0 / out 0 · 1 tool call(s)"
            ],
            [
                1,
                "Reviewer",
                "Reviewer",
                "tokens in 0 / out 0 · 1 tool call(s)"
            ],
        ])
    );
    // Model text is shown as text: the reply's `<b>` is not an element.
    let reply = browser
        .run(
            "const r = document.querySelector('#turns li.card .reply'); \
              return [r.textContent, r.querySelector('b') === null]",
        )
        .await;
    assert_eq!(reply, json!(["Built. <b>not bold</b>\nREVIEW", true]));
    let tool = browser
        .run("return document.querySelector('#turns li.card .tool').textContent")
        .await;
    let tool = tool.as_str().unwrap();
    assert!(
        tool.contains("shell_run") && tool.contains("sleep 3 && echo built"),
        "{tool}"
    );
    browser.save_screenshot("web-view-live.png").await;

    // A reload replays the same history, the pending approval included.
    let before = browser.run(SHOWN).await;
    browser.refresh().await;
    browser
        .wait_for(
            "the replay",
            &format!(
                "return document.body.dataset.ready && document.body.dataset.events === {}",
                before["events"]
            ),
        )
        .await;
    assert_eq!(browser.run(SHOWN).await, before);

    // Approving in the page routes the run to the Deployer, which ends it.
    browser.click(".approval button.approve").await;
    browser
        .wait_for("the end of the run", "return document.body.dataset.ended")
        .await;
    let outcome = browser
        .run("return document.getElementById('outcome').textContent")
        .await;
    assert!(
        outcome
            .as_str()
            .unwrap()
            .starts_with("completed after 3 turn(s)"),
        "{outcome}"
    );
    let cards = browser.run(CARDS).await;
    let agents: Vec<&str> = cards
        .as_array()
        .unwrap()
        .iter()
        .map(|card| card[1].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["Developer", "Reviewer", "Deployer"]);
    let answered = browser
        .run("return document.querySelector('.approval .answer').textContent")
        .await;
    assert_eq!(answered, json!("approved (page)"));
    let taken = browser
        .run(
            "return [...document.querySelectorAll('#graph path.edge.taken')]\
              .map(p => p.dataset.from + '>' + p.dataset.to)",
        )
        .await;
    assert_eq!(taken, json!(["Developer>Reviewer", "Reviewer>Deployer"]));
    browser.close().await;

    let mut run = run;
    let status = run.child.wait().unwrap();
    let stderr = drained.join().unwrap();
    assert!(status.success(), "exit {status}:\n{stderr}");
    assert!(stderr.contains("── completed after 3 turn(s)"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_sessions_are_browsed_in_the_browser() {
    let _one = ONE_BROWSER.lock().await;
    let work = work_dir("sessions");
    let ran = exec(&work, &["--approve", "all"]).output().unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );

    let mut child = fuseraft()
        .arg("ui")
        .arg("--work-dir")
        .arg(&work)
        .env("FUSERAFT_SESSION_KEY", work.with_extension("key"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let _server = Run { child };
    let url = url_from(&mut stderr, ": ");
    let browser = Browser::start().await;
    browser.goto(&url).await;
    browser
        .wait_for("the list", "return document.body.dataset.ready")
        .await;
    let listed = browser
        .run("return [...document.querySelectorAll('#session-list li')].map(li => li.dataset.id)")
        .await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    browser.click("#session-list li").await;
    browser
        .wait_for("the session", "return document.body.dataset.shown")
        .await;
    let cards = browser
        .run("return [...document.querySelectorAll('#turns li.card')].map(c => c.dataset.agent)")
        .await;
    assert_eq!(cards, json!(["Developer", "Reviewer", "Deployer"]));
    let nodes: Json = browser
        .run("return document.querySelectorAll('#graph g.node').length")
        .await;
    assert!(
        nodes.as_u64().unwrap() >= state_names().len() as u64,
        "{nodes}"
    );
    let shown = browser
        .run(
            "return [document.getElementById('outcome').textContent, \
              document.querySelector('#graph g.node.current')?.dataset.state]",
        )
        .await;
    assert_eq!(shown, json!(["completed after 3 turn(s)", "Deployer"]));
    let visited = browser
        .run("return [...document.querySelectorAll('#graph g.node.visited')].map(n => n.dataset.state)")
        .await;
    assert_eq!(visited, json!(["Developer", "Reviewer", "Deployer"]));
    browser.save_screenshot("web-view-sessions.png").await;
    browser.close().await;
}

/// `fuseraft ui` shows a session as the live view showed its run: routes as routes (not the
/// orchestrator's internal markers), a run that left through `end` at `end`, a cancelled
/// run in amber rather than green, and it opens on the newest session, never on a blank box;
/// a turn's "re-run from here" makes a new session that shares the turns up to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_browser_shows_routes_the_end_and_a_cancel_as_they_were() {
    let _one = ONE_BROWSER.lock().await;
    let work = work_dir("ended");
    // A run that completes through a back edge's new phase and then an exit to `end`.
    let done = launch::exec(
        &launch::fixture("graph-phase-restart"),
        "Build a widget.",
        &work,
        &["--json"],
    )
    .output()
    .unwrap();
    let done: Json = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(done["outcome"], "completed");
    // Then, newest, one quit at its first `--hitl` pause (no terminal, no page: it stops).
    std::thread::sleep(Duration::from_millis(20));
    let quit = launch::exec(
        &launch::fixture("sequential"),
        "Move the records.",
        &work,
        &["--hitl", "--json"],
    )
    .output()
    .unwrap();
    let quit: Json = serde_json::from_slice(&quit.stdout).unwrap();
    assert_eq!(quit["outcome"], "cancelled");

    let mut child = fuseraft()
        .arg("ui")
        .arg("--work-dir")
        .arg(&work)
        .env("FUSERAFT_SESSION_KEY", work.with_extension("key"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let _server = Run { child };
    let url = url_from(&mut stderr, ": ");
    let browser = Browser::start().await;
    browser.goto(&url).await;

    // Opened on the newest session, unasked: its graph drawn, its end in amber.
    let cancelled = quit["session_id"].as_str().unwrap();
    browser
        .wait_for(
            "the newest session",
            &format!("return document.body.dataset.shown === '{cancelled}'"),
        )
        .await;
    let shown = browser
        .run(
            "return [document.getElementById('graph-pane').hidden, \
               document.querySelectorAll('#graph g.node').length, \
               document.getElementById('status').textContent, \
               document.getElementById('status').className, \
               document.getElementById('outcome').className, \
               document.getElementById('outcome').textContent]",
        )
        .await;
    assert_eq!(
        shown,
        json!([
            false,
            2,
            "cancelled",
            "cancelled",
            "cancelled",
            format!("cancelled after 1 turn(s) · resumable with --resume {cancelled}")
        ])
    );
    browser
        .save_screenshot("web-view-sessions-cancelled.png")
        .await;

    let completed = done["session_id"].as_str().unwrap();
    browser
        .click(&format!("#session-list li[data-id='{completed}']"))
        .await;
    browser
        .wait_for(
            "the completed session",
            &format!("return document.body.dataset.shown === '{completed}'"),
        )
        .await;
    let shown = browser
        .run(
            "return {current: document.querySelector('#graph g.node.current')?.dataset.state, \
               status: document.getElementById('status').className, \
               taken: [...document.querySelectorAll('#graph path.edge.taken')]\
                 .map(p => p.dataset.from + '>' + p.dataset.to), \
               routes: [...document.querySelectorAll('#turns .note.route, #turns .note.warn')]\
                 .map(n => n.textContent), \
               markers: [...document.querySelectorAll('#run .note')]\
                 .filter(n => n.textContent.includes('[fuseraft')).length}",
        )
        .await;
    assert_eq!(
        shown,
        json!({
            "current": "end",
            "status": "completed",
            "taken": ["Design>Build", "Build>Review", "Review>Design", "Review>Ship", "Ship>end"],
            "routes": [
                "→ Architect to Builder",
                "→ Builder to Reviewer",
                "phase 2 begins: REDESIGN → Design",
                "→ Reviewer to Architect",
                "→ Architect to Builder",
                "→ Builder to Reviewer",
            ],
            "markers": 0,
        })
    );
    browser.save_screenshot("web-view-sessions-ended.png").await;

    // "Re-run from here" on the second turn: a new session that shares its first two turns,
    // listed, with the command that runs it on; nothing is run.
    browser
        .click("#turns li.card[data-turn='1'] button.rewind")
        .await;
    let said = browser
        .wait_for(
            "the new session",
            "const n = document.querySelector('#run-notes .note.rewound'); \
             return n && [n.dataset.session, n.textContent]",
        )
        .await;
    let fork = said[0].as_str().unwrap().to_string();
    let text = said[1].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "new session {fork} shares turns 1–2 of {completed}; run it on with: fuseraft exec "
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("--resume {fork} --work-dir ")),
        "{text}"
    );
    browser
        .save_screenshot("web-view-sessions-rewound.png")
        .await;
    browser.close().await;
    let listed = fuseraft()
        .args(["sessions", "list", "--all", "--work-dir"])
        .arg(&work)
        .env("FUSERAFT_SESSION_KEY", work.with_extension("key"))
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    let line = listed
        .lines()
        .find(|line| line.starts_with(&fork))
        .unwrap_or("");
    assert!(
        line.contains("resumable") && line.ends_with(&format!("(from {completed} after turn 2)")),
        "{listed}"
    );
}
