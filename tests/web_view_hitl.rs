//! `exec --ui --hitl` in a real browser: with no terminal the page is the only answerer of
//! the pauses and the run waits for it; Continue goes on, a message typed in the page
//! reaches the team between the right turns (shown as text, never markup), Quit stops the
//! run `cancelled` and resumable. Hostile names and replies stay text. Without `--hitl`, the
//! page's Redirect answers an escalated failure with the operator's direction.
#![cfg(feature = "browser-tests")]

use crate::launch;
use crate::webdriver;

use std::time::Duration;

use serde_json::{json, Value as Json};
use webdriver::Browser;

/// The browser tests share two cores with the build: one at a time.
static ONE_BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const HOSTILE: &str = "Keep the <b>record ids</b> unchanged. \
    <img src=x onerror=\"document.body.dataset.owned=1\">";

/// Waits for pause `count`: the one open question above the turns, the answered ones moved
/// under the cards of the turns they followed (so they never push the open one down).
async fn wait_for_pause(browser: &Browser, count: usize) {
    browser
        .wait_for(
            &format!("pause {count}"),
            &format!(
                "const open = document.querySelectorAll('#approvals .pause .controls').length; \
                 return open === 1 && document.querySelectorAll('#approvals > *').length === 1 \
                   && document.querySelectorAll('#turns li.card .pause.answered').length === {count} - 1"
            ),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_continues_sends_a_message_and_quits() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start().await;
    let work = launch::work_dir("hitl");
    let fixture = launch::fixture("sequential");
    let mut run = launch::Live::start(launch::exec(
        &fixture,
        "Move the records.",
        &work,
        &["--ui", "--hitl", "--json"],
    ));
    browser.goto(&run.url).await;
    browser
        .wait_for("the page", "return document.body.dataset.ready")
        .await;

    // No terminal: the run waits for the page at the first pause, it does not stop.
    wait_for_pause(&browser, 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(run.running(), "the run waits for the page");
    let asked = browser
        .run("return document.querySelector('#approvals .pause p').textContent")
        .await;
    assert_eq!(
        asked,
        json!("Paused after turn 1 by Extractor · now in Loader")
    );
    browser.click("#approvals .pause button.continue").await;

    wait_for_pause(&browser, 2).await;
    let first = browser
        .run(
            "const a = document.querySelector('#turns .pause.answered'); \
             return [a.querySelector('.answer').textContent, a.closest('li.card').dataset.turn]",
        )
        .await;
    assert_eq!(
        first,
        json!(["continued (page)", "0"]),
        "the controls go once answered, under the card of the turn the pause followed"
    );
    browser
        .type_into("#approvals .pause textarea", HOSTILE)
        .await;
    browser.click("#approvals .pause button.send").await;

    wait_for_pause(&browser, 3).await;
    let sent = browser
        .run(
            "const notes = [...document.querySelectorAll('.note.operator')]; \
             return [document.querySelectorAll('#turns .pause.answered')[1].querySelector('.answer').textContent, \
               notes.map(n => n.textContent), \
               notes.map(n => n.closest('li.card')?.dataset.turn ?? null), \
               document.querySelectorAll('#turns b, #turns img, #approvals b, #approvals img').length, \
               document.body.dataset.owned ?? null]",
        )
        .await;
    // Shown under turn 2's card (index 1), as the text typed.
    assert_eq!(
        sent,
        json!([
            "message sent (page)",
            [format!("operator: {HOSTILE}")],
            ["1"],
            0,
            null
        ])
    );
    browser.save_screenshot("web-view-hitl.png").await;
    browser.click("#approvals .pause button.quit").await;
    // Quitting ends the run on the page too: an end card, the status no longer `running`.
    browser
        .wait_for("the end card", "return document.body.dataset.ended")
        .await;
    let ended = browser
        .run(
            "return [document.getElementById('outcome').textContent, \
               document.getElementById('status').textContent, \
               document.getElementById('status').className, \
               document.querySelectorAll('#approvals > *').length]",
        )
        .await;
    assert!(
        ended[0]
            .as_str()
            .unwrap()
            .starts_with("cancelled after 3 turn(s)"),
        "{ended}"
    );
    assert_eq!(
        ended.as_array().unwrap()[1..],
        [json!("cancelled"), json!("cancelled"), json!(0)]
    );
    browser.save_screenshot("web-view-hitl-quit.png").await;
    let (status, stdout, stderr) = run.wait();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let summary: Json = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["outcome"], "cancelled", "{stderr}");
    assert_eq!(summary["turns"], 3);
    assert!(
        stderr.contains("paused by the operator after turn 3"),
        "{stderr}"
    );
    let session = summary["session_id"].as_str().unwrap().to_string();
    assert!(stderr.contains(&format!("--resume {session}")), "{stderr}");
    browser.close().await;

    // Resumable: the last turn runs, and the message is in the conversation after turn 2
    // and before turn 3.
    let resumed = launch::exec(
        &fixture,
        "Move the records.",
        &work,
        &["--resume", &session, "--json"],
    )
    .output()
    .unwrap();
    let done: Json = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(
        done["outcome"],
        "completed",
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let transcript = std::fs::read_to_string(
        work.join(".fuseraft/sessions")
            .join(format!("{session}.transcript.md")),
    )
    .unwrap();
    let message = transcript
        .find("Keep the <b>record ids</b> unchanged.")
        .expect("the operator's message is in the transcript");
    let second = transcript.find("Loaded 1 of 3.").unwrap();
    let third = transcript.rfind("Extracted 3 records.").unwrap();
    assert!(second < message && message < third, "{transcript}");
}

/// Markup in every label the page shows (the program's name, the task, an agent's name in
/// the pause, card and graph, a reply) is text: no element is made, no handler runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_labels_stay_text() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start().await;
    let work = launch::work_dir("hostile");
    let fixture = work.join("fixture");
    std::fs::create_dir_all(&fixture).unwrap();
    let agent = "<img src=x onerror=\"document.body.dataset.owned=1\">";
    std::fs::write(
        fixture.join("config.yaml"),
        format!(
            "Orchestration:\n  Name: \"<b>Team</b>\"\n  Agents:\n    - Name: '{agent}'\n      \
             Instructions: Go.\n  Selection: {{ Type: sequential }}\n  \
             Termination: {{ Type: maxiterations, MaxIterations: 2 }}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        fixture.join("replay.yaml"),
        format!(
            "replies:\n  '{agent}':\n    - text: \"<script>document.body.dataset.owned=2</script>\"\n      \
             times: 2\n"
        ),
    )
    .unwrap();
    let run = launch::Live::start(launch::exec(
        &fixture,
        "<i>task</i>",
        &work.join("run"),
        &["--ui", "--hitl", "--json"],
    ));
    browser.goto(&run.url).await;
    wait_for_pause(&browser, 1).await;
    let shown = browser
        .run(
            "return [document.getElementById('title').textContent, \
             document.querySelector('#approvals .pause p').textContent, \
             document.querySelector('#turns li.card h3').textContent, \
             document.querySelector('#turns li.card .reply').textContent, \
             document.querySelectorAll('main img, main b, main i, main script').length, \
             document.body.dataset.owned ?? null]",
        )
        .await;
    assert_eq!(
        shown,
        json!([
            "<b>Team</b> · <i>task</i>",
            format!("Paused after turn 1 by {agent} · now in {agent}"),
            format!("Turn 1 · {agent}"),
            "<script>document.body.dataset.owned=2</script>",
            0,
            null
        ])
    );
    browser.click("#approvals .pause button.quit").await;
    let (status, _, stderr) = run.wait();
    assert_eq!(status.code(), Some(1), "{stderr}");
    browser.close().await;
}

/// Without `--hitl`, an escalated failure is the page's approval question, and its Redirect
/// sends the operator's direction to the stuck agent, which tries again with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_redirects_an_escalation() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start().await;
    let work = launch::work_dir("escalation");
    let fixture = launch::fixture("escalate-to-human-redirect");
    let run = launch::Live::start(launch::exec(
        &fixture,
        "Write main.rs.",
        &work,
        &["--ui", "--json"],
    ));
    browser.goto(&run.url).await;
    browser
        .wait_for(
            "the escalation",
            "return document.querySelector('#approvals .approval[data-kind=escalation] button.redirect') !== null",
        )
        .await;
    let direction = "Use write_file for src/main.rs, then <b>hand off</b> again.";
    browser
        .type_into("#approvals .approval textarea", direction)
        .await;
    browser.click("#approvals .approval button.redirect").await;
    let answer = browser
        .wait_for(
            "the answer",
            "const a = document.querySelector('.approval .answer').textContent; \
             return a.startsWith('redirected') ? [a, document.querySelectorAll('#run b').length] : null",
        )
        .await;
    assert_eq!(
        answer,
        json!([format!("redirected (page): {direction}"), 0])
    );
    let (status, stdout, stderr) = run.wait();
    assert!(status.success(), "{stderr}");
    let summary: Json = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["outcome"], "completed", "{stderr}");
    let transcript = std::fs::read_to_string(summary["transcript_path"].as_str().unwrap()).unwrap();
    assert!(transcript.contains(direction), "{transcript}");
    browser.close().await;
}

/// A resumed run's page shows the run from its start: the header, the turns before the
/// resume (as cards, with their routes) and the states they visited, then the new turns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_run_shows_its_earlier_turns() {
    let _one = ONE_BROWSER.lock().await;
    let work = launch::work_dir("resumed");
    let fixture = launch::fixture("sequential");
    // No terminal and no page: the first pause ends the run, resumable after turn 1.
    let quit = launch::exec(&fixture, "Move the records.", &work, &["--hitl", "--json"])
        .output()
        .unwrap();
    let quit: Json = serde_json::from_slice(&quit.stdout).unwrap();
    assert_eq!(quit["outcome"], "cancelled");
    let session = quit["session_id"].as_str().unwrap();

    let browser = Browser::start().await;
    let run = launch::Live::start(launch::exec(
        &fixture,
        "Move the records.",
        &work,
        &["--resume", session, "--ui", "--hitl"],
    ));
    browser.goto(&run.url).await;
    wait_for_pause(&browser, 1).await;
    let shown = browser
        .run(
            "return {title: document.getElementById('title').textContent, \
               status: document.getElementById('status').textContent, \
               cards: [...document.querySelectorAll('#turns li.card')]\
                 .map(c => [c.dataset.turn, c.dataset.agent, c.querySelector('.reply').textContent]), \
               routes: [...document.querySelectorAll('#turns .note.route')].map(n => n.textContent), \
               visited: [...document.querySelectorAll('#graph g.node.visited')].map(n => n.dataset.state), \
               taken: [...document.querySelectorAll('#graph path.edge.taken')]\
                 .map(p => p.dataset.from + '>' + p.dataset.to), \
               current: document.querySelector('#graph g.node.current')?.dataset.state}",
        )
        .await;
    assert_eq!(
        shown,
        json!({
            "title": "Sequential · Move the records.",
            "status": "running",
            "cards": [["0", "Extractor", "Extracted 3 records."], ["1", "Loader", "Loaded 1 of 3."]],
            "routes": ["→ Extractor to Loader", "→ Loader to Extractor"],
            "visited": ["Extractor", "Loader"],
            "taken": ["Extractor>Loader", "Loader>Extractor"],
            "current": "Extractor",
        })
    );
    browser.save_screenshot("web-view-resumed.png").await;
    browser.click("#approvals .pause button.quit").await;
    browser
        .wait_for("the end card", "return document.body.dataset.ended")
        .await;
    let (status, _, stderr) = run.wait();
    assert_eq!(status.code(), Some(1), "{stderr}");
    browser.close().await;
}
