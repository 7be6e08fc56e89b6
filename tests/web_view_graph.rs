//! The graph in a real browser, 1400 px wide: the `dev-team` and `adversarial` templates'
//! graphs and a fork's, read back by `fuseraft ui`, are drawn with every exit's label
//! (gates included, `stage1.rounds < 3`) where no label covers another label or a box, no
//! edge runs behind a box, and the drawing fits its pane (no sideways scrolling).
#![cfg(feature = "browser-tests")]

use crate::launch;
use crate::webdriver;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value as Json};
use webdriver::Browser;

/// What the drawn graph gets wrong: labels overlapping labels or boxes, edge points inside
/// a box (sampled every 3 px, a box shrunk by 2 px so that an edge may touch its ends), the
/// labels shown, and whether the pane scrolls sideways.
const GEOMETRY: &str = "\
    const svg = document.getElementById('graph'); \
    const boxes = [...svg.querySelectorAll('g.node')].map(g => { \
      const r = g.querySelector('rect').getBBox(); \
      const m = g.transform.baseVal.consolidate().matrix; \
      return {name: g.dataset.state, x: r.x + m.e, y: r.y + m.f, w: r.width, h: r.height}; }); \
    const labels = [...svg.querySelectorAll('text.label')].map(t => { \
      const b = t.getBBox(); \
      return {name: t.textContent, x: b.x, y: b.y, w: b.width, h: b.height}; }); \
    const meet = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h; \
    const problems = []; \
    labels.forEach((a, i) => { \
      labels.slice(i + 1).forEach(b => { if (meet(a, b)) problems.push(`label ${a.name} covers label ${b.name}`); }); \
      boxes.forEach(b => { if (meet(a, b)) problems.push(`label ${a.name} covers box ${b.name}`); }); }); \
    for (const p of svg.querySelectorAll('path.edge')) { \
      const length = p.getTotalLength(); \
      for (const b of boxes) { \
        for (let at = 0; at <= length; at += 3) { \
          const q = p.getPointAtLength(at); \
          if (q.x > b.x + 2 && q.x < b.x + b.w - 2 && q.y > b.y + 2 && q.y < b.y + b.h - 2) { \
            problems.push(`edge ${p.dataset.from}>${p.dataset.to} runs behind ${b.name}`); break; } } } } \
    const pane = document.getElementById('graph-pane'); \
    if (pane.scrollWidth > pane.clientWidth) problems.push(`the pane scrolls sideways: ${pane.scrollWidth} > ${pane.clientWidth}`); \
    return {problems, labels: labels.map(l => l.name).sort()};";

fn run(config: &Path, replay: &Path, work: &Path, extra: &[&str]) -> String {
    let ran = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .arg("exec")
        .arg(config)
        .args(["--task", "Do it.", "--replay"])
        .arg(replay)
        .arg("--work-dir")
        .arg(work)
        .args(["--json"])
        .args(extra)
        .env("FUSERAFT_SESSION_KEY", work.with_extension("key"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let summary: Json = serde_json::from_slice(&ran.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&ran.stderr)));
    assert_eq!(summary["outcome"], "completed", "{summary}");
    summary["session_id"].as_str().unwrap().to_string()
}

/// `fuseraft init --template NAME` in a fresh directory, run to its end in `work`.
fn template(name: &str, work: &Path) -> String {
    let dir = launch::work_dir(&format!("template-{name}"));
    let made = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["init", "--template", name])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    run(
        &dir.join("fuseraft.yaml"),
        &dir.join("replay.yaml"),
        work,
        &[],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_never_overprint_and_edges_keep_clear_of_boxes() {
    let work = launch::work_dir("graph");
    let fork = launch::fixture("ui-fork");
    let sessions = [
        ("dev-team", template("dev-team", &work)),
        ("adversarial", template("adversarial", &work)),
        (
            "fork",
            run(
                &fork.join("config.yaml"),
                &fork.join("replay.yaml"),
                &work,
                &["--approve", "all"],
            ),
        ),
    ];

    let mut child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
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
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line.split(": ").nth(1).expect("the URL line").trim();
    let browser = Browser::start().await;
    browser.resize(1400, 900).await;
    browser.goto(url).await;
    browser
        .wait_for("the list", "return document.body.dataset.ready")
        .await;
    let mut seen = Vec::new();
    for (name, id) in &sessions {
        browser
            .click(&format!("#session-list li[data-id='{id}']"))
            .await;
        browser
            .wait_for(
                name,
                &format!("return document.body.dataset.shown === '{id}'"),
            )
            .await;
        let drawn = browser.run(GEOMETRY).await;
        assert_eq!(drawn["problems"], json!([]), "{name}: {drawn}");
        browser
            .save_screenshot(&format!("web-view-graph-{name}.png"))
            .await;
        seen.push((name.to_string(), drawn["labels"].clone()));
    }
    let _ = child.kill();
    let _ = child.wait();
    browser.close().await;
    assert_eq!(
        seen,
        [
            (
                "dev-team".to_string(),
                json!([
                    "APPROVED",
                    "HANDOFF TO DEVELOPER",
                    "HANDOFF TO REVIEWER",
                    "REVISION REQUIRED"
                ])
            ),
            (
                "adversarial".to_string(),
                json!([
                    "PASS",
                    "always",
                    "otherwise",
                    "otherwise · stage1.rounds < 3"
                ])
            ),
            (
                "fork".to_string(),
                json!([
                    "PLANNED",
                    "SHIP",
                    "always",
                    "always",
                    "branch",
                    "branch",
                    "merge · union"
                ])
            ),
        ]
    );
}
