//! A fork in a real browser: headless Chromium watches a real `fuseraft exec --ui` run of
//! `fixtures/run/ui-fork` (a plan, two branches with their tool loops, a union merge, a
//! review) and shows the fork as one column per branch, each holding its branch's card,
//! then the merge; a reload draws the same. The run's shell calls need approval, which
//! holds it while the page is looked at.
#![cfg(feature = "browser-tests")]

use crate::launch;
use crate::webdriver;

use serde_json::{json, Value as Json};
use webdriver::Browser;

/// The fork as the page draws it: the turn list's blocks in order, and for the fork its
/// columns (state, agent, class, cards with their tool calls and reply) and the merge.
const LAYOUT: &str = "const blocks = [...document.getElementById('turns').children]; \
    return {order: blocks.map(b => b.classList.contains('fork') \
      ? 'fork ' + b.dataset.state : 'card ' + b.dataset.agent), \
    columns: [...document.querySelectorAll('#turns li.fork .branch')].map(col => ({ \
      state: col.dataset.state, agent: col.dataset.agent, done: col.classList.contains('done'), \
      cards: [...col.querySelectorAll('li.branch-card')].map(c => ({ \
        agent: c.dataset.agent, \
        meta: c.querySelector('.meta').textContent.replace(/ · [0-9.]+ s$/, ''), \
        tools: [...c.querySelectorAll('.tool')].map(t => t.querySelector('.name').textContent), \
        notes: [...c.querySelectorAll('.note')].map(n => n.textContent.split(':')[0]), \
        reply: c.querySelector('.reply').textContent}))})), \
    merge: (() => { const f = document.querySelector('#turns li.fork'); \
      const m = f && f.querySelector('.merge'); \
      return m && {shown: !m.hidden, \
        after: !!(f.querySelector('.columns').compareDocumentPosition(m) & Node.DOCUMENT_POSITION_FOLLOWING), \
        head: m.querySelector('h4').textContent, text: m.querySelector('.merged').textContent}; })(), \
    events: document.body.dataset.events}";

const APPROVAL_OPEN: &str =
    "return document.querySelectorAll('.approval button.approve:not(:disabled)').length";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_shows_its_branches_side_by_side_then_the_merge() {
    let browser = Browser::start().await;
    let work = launch::work_dir("fork");
    let fixture = launch::fixture("ui-fork");
    let run = launch::Live::start(launch::exec(
        &fixture,
        "Build the todo app.",
        &work,
        &["--ui"],
    ));
    browser.goto(&run.url).await;
    browser
        .wait_for("the page", "return document.body.dataset.ready")
        .await;
    // The Architect's shell call waits for the page: no fork yet.
    browser.wait_for("the first approval", APPROVAL_OPEN).await;
    let forks = browser
        .run("return document.querySelectorAll('#turns li.fork').length")
        .await;
    assert_eq!(forks, json!(0));
    browser.click(".approval button.approve").await;

    // The branches run and merge; the Reviewer's shell call then waits for the page.
    browser
        .wait_for(
            "the second approval",
            "return document.querySelectorAll('.approval').length === 2 && \
             !!document.querySelector('#approvals .approval button.approve:not(:disabled)')",
        )
        .await;
    let shown = browser.run(LAYOUT).await;
    assert_eq!(
        shown["order"],
        json!(["card Architect", "fork Plan/parallel1", "card Reviewer"]),
        "{shown}"
    );
    assert_eq!(
        shown["columns"],
        json!([
            {
                "state": "Backend", "agent": "BackendDev", "done": true,
                "cards": [{
                    "agent": "BackendDev",
                    "meta": "tokens in 0 / out 0 · 2 tool call(s)",
                    "tools": ["write_file", "read_file"],
                    "notes": [],
                    "reply": "Backend: api/server.py serves the todos.",
                }],
            },
            {
                "state": "Frontend", "agent": "FrontendDev", "done": true,
                "cards": [{
                    "agent": "FrontendDev",
                    "meta": "tokens in 0 / out 0 · 2 tool call(s)",
                    "tools": ["write_file", "write_file (failed)"],
                    "notes": ["⊘ write_file refused"],
                    "reply": "Frontend: <img src=x onerror=\"document.body.dataset.owned=1\"> lists the todos.",
                }],
            },
        ]),
        "{shown}"
    );
    let merge = &shown["merge"];
    assert_eq!(merge["shown"], true, "{merge}");
    assert_eq!(merge["after"], true, "the merge follows the columns");
    assert_eq!(merge["head"], "merge · union · 2 branch(es)");
    let merged = merge["text"].as_str().unwrap();
    let backend = merged
        .find("--- BackendDev ---")
        .expect("BackendDev merged");
    let frontend = merged
        .find("--- FrontendDev ---")
        .expect("FrontendDev merged");
    assert!(backend < frontend, "{merged}");
    // The arguments and results of a branch's tool calls are shown.
    let call = browser
        .run(
            "const t = document.querySelector('.branch[data-state=\"Backend\"] .tool'); \
             return [t.querySelector('.args').textContent, t.querySelector('.result') !== null]",
        )
        .await;
    assert!(
        call[0].as_str().unwrap().contains("api/server.py"),
        "{call}"
    );
    assert_eq!(call[1], true, "{call}");
    // Model text is text: the reply's markup made no element and ran nothing.
    let markup = browser
        .run(
            "return [document.querySelectorAll('#turns img').length, \
             document.body.dataset.owned ?? null]",
        )
        .await;
    assert_eq!(markup, json!([0, null]));
    // The branch states were visited; the highlight is on the state now running.
    let graph = browser
        .run(
            "return [[...document.querySelectorAll('#graph g.node.visited')].map(n => n.dataset.state), \
             document.querySelector('#graph g.node.current')?.dataset.state ?? null]",
        )
        .await;
    for state in ["Plan", "Backend", "Frontend", "Review"] {
        assert!(
            graph[0].as_array().unwrap().contains(&json!(state)),
            "{graph}"
        );
    }
    assert_eq!(graph[1], "Review", "{graph}");
    let fork_edges = browser
        .run(
            "return [...document.querySelectorAll('#graph path.edge.fork')]\
              .map(p => p.dataset.from + '>' + p.dataset.to)",
        )
        .await;
    assert_eq!(
        fork_edges,
        json!([
            "Plan/parallel1>Backend",
            "Plan/parallel1>Frontend",
            "Plan/parallel1>Review"
        ])
    );
    browser
        .run("document.querySelector('#turns li.fork').scrollIntoView(); return true")
        .await;
    browser.save_screenshot("web-view-fork.png").await;

    // A reload replays the same layout from the history.
    browser.refresh().await;
    browser
        .wait_for(
            "the replay",
            &format!(
                "return document.body.dataset.ready && document.body.dataset.events === {}",
                shown["events"]
            ),
        )
        .await;
    assert_eq!(browser.run(LAYOUT).await, shown);

    browser
        .click("#approvals .approval:last-child button.approve")
        .await;
    browser
        .wait_for("the end of the run", "return document.body.dataset.ended")
        .await;
    let outcome: Json = browser
        .run("return document.getElementById('outcome').textContent")
        .await;
    assert!(
        outcome
            .as_str()
            .unwrap()
            .starts_with("completed after 3 turn(s)"),
        "{outcome}"
    );
    browser.close().await;
    let (status, _, stderr) = run.wait();
    assert!(status.success(), "exit {status}:\n{stderr}");
    assert!(work.join("api/server.py").is_file());
    assert!(work.join("web/index.html").is_file());
}
