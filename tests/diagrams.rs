//! `compile --emit dot|mermaid` as people see them: every bundled config (compile, run and
//! diagram fixtures) and every upstream corpus config is rendered by Graphviz and by
//! mermaid-cli in headless Chromium (`.ci/diagram-deps.sh` installs both), and labels full
//! of each format's syntax come out as the text they are.
#![cfg(feature = "tool-tests")]

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use fuseraft::disk::Disk;
use fuseraft_compiler::{compile, ir};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// mermaid-cli as `.ci/diagram-deps.sh` installs it.
fn mmdc() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    let path = cache.join("fuseraft-ci/mermaid/node_modules/.bin/mmdc");
    assert!(
        path.exists(),
        "mermaid-cli is not installed at `{}`: run `bash .ci/diagram-deps.sh`",
        path.display()
    );
    path
}

/// Every bundled config and corpus config that compiles, by name.
fn programs() -> Vec<(String, ir::Program)> {
    let mut inputs: Vec<PathBuf> = Vec::new();
    for dir in ["fixtures/compile/ok", "fixtures/diagram"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let config = path
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "json");
            if config || path.join("tama.toml").exists() {
                inputs.push(path);
            }
        }
    }
    for entry in std::fs::read_dir(root().join("fixtures/run")).unwrap() {
        let config = entry.unwrap().path().join("config.yaml");
        if config.exists() {
            inputs.push(config);
        }
    }
    if let Some(corpus) = common::corpus_root() {
        inputs.extend(common::corpus_inputs(&corpus));
    }
    inputs.sort();
    let mut out = Vec::new();
    for input in inputs {
        let compiled = compile(&input, &Disk);
        if let Some(program) = compiled.program {
            let name = input
                .strip_prefix(root())
                .unwrap_or(&input)
                .display()
                .to_string();
            out.push((name, program));
        }
    }
    assert!(out.len() > 40, "{} programs", out.len());
    out
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fuseraft-diagrams-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Graphviz's SVG of `dot`, failing on any complaint.
fn graphviz(name: &str, dot: &str) -> String {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("Graphviz's `dot` is not installed: run `bash .ci/diagram-deps.sh`");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(dot.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stderr.trim().is_empty(),
        "{name}: Graphviz rejects the DOT view: {stderr}\n{dot}"
    );
    String::from_utf8(output.stdout).unwrap()
}

/// mermaid-cli's SVGs of every diagram (one Chromium for all), in order.
fn mermaid(diagrams: &[(String, String)]) -> Vec<String> {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = scratch(&format!("mermaid-{call}"));
    let config = dir.join("puppeteer.json");
    std::fs::write(
        &config,
        serde_json::json!({
            "executablePath": "/usr/bin/chromium",
            "args": ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        })
        .to_string(),
    )
    .unwrap();
    let mut markdown = String::new();
    for (name, diagram) in diagrams {
        markdown.push_str(&format!("{name}\n\n```mermaid\n{diagram}```\n\n"));
    }
    let input = dir.join("all.md");
    std::fs::write(&input, markdown).unwrap();
    let output = Command::new(mmdc())
        .arg("-p")
        .arg(&config)
        .arg("-i")
        .arg(&input)
        .arg("-o")
        .arg(dir.join("out.md"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "mermaid-cli rejects a view: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let svgs: Vec<String> = (1..=diagrams.len())
        .map(|n| {
            std::fs::read_to_string(dir.join(format!("out-{n}.svg")))
                .unwrap_or_else(|_| panic!("{}: no SVG drawn", diagrams[n - 1].0))
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    svgs
}

#[test]
fn every_config_renders_in_graphviz_and_mermaid() {
    let programs = programs();
    for (name, program) in &programs {
        let svg = graphviz(name, &ir::to_dot(program));
        for state in &program.states {
            // Graphviz writes these characters as entities in SVG text.
            let shown = state
                .name
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
                .replace('-', "&#45;");
            assert!(
                svg.contains(&shown),
                "{name}: `{}` is not drawn",
                state.name
            );
        }
    }
    let diagrams: Vec<(String, String)> = programs
        .iter()
        .map(|(name, program)| (name.clone(), ir::to_mermaid(program)))
        .collect();
    let svgs = mermaid(&diagrams);
    for ((name, diagram), svg) in diagrams.iter().zip(&svgs) {
        assert!(
            !svg.contains("Syntax error"),
            "{name}: mermaid drew an error\n{diagram}"
        );
    }
}

#[test]
fn labels_with_each_formats_syntax_are_drawn_as_text() {
    let compiled = compile(&root().join("fixtures/diagram/hostile-labels.yaml"), &Disk);
    let program = compiled.program.expect("the fixture compiles");
    let dot = graphviz("hostile-labels", &ir::to_dot(&program));
    for text in [
        "Draft | &quot;one&quot;",
        "agent: Writer &quot;W&quot; #1",
        "agent: Reviewer &lt;b&gt;R&lt;/b&gt;",
        "READY &#45;&#45;&gt; `REVIEW` #now",
        "REDO &quot;it&quot; \\ again",
        "OK|DONE",
    ] {
        assert!(dot.contains(text), "Graphviz: `{text}` missing:\n{dot}");
    }
    let svg = &mermaid(&[("hostile".into(), ir::to_mermaid(&program))])[0];
    for text in [
        "Draft | \"one\"<br />agent: Writer \"W\" #1",
        "agent: Reviewer &lt;b&gt;R&lt;/b&gt;",
        "READY --&gt; `REVIEW` #now",
        "REDO \"it\" \\ again",
        "OK|DONE",
    ] {
        assert!(svg.contains(text), "Mermaid: `{text}` missing");
    }
    // Nothing reaches `end`: no orphan end node is drawn.
    assert!(!ir::to_dot(&program).contains("__end"));
    assert!(!ir::to_mermaid(&program).contains("stop"));
}

#[test]
fn gates_fallbacks_and_back_edges_are_drawn_distinctly() {
    let compiled = compile(&root().join("fixtures/compile/ok/statemachine.yaml"), &Disk);
    let program = compiled.program.expect("compiles");
    let mermaid = ir::to_mermaid(&program);
    assert!(
        mermaid.contains("-->|\"HANDOFF TO DEVELOPER<br>contract BriefExists\"|"),
        "{mermaid}"
    );
    assert!(mermaid.contains("-.->|\"REPLAN REQUIRED\"|"), "{mermaid}");
    assert!(mermaid.contains("==>|\"join (consensus)\"|"), "{mermaid}");
    let approval = compile(
        &root().join("fixtures/run/ui-live-approval/config.yaml"),
        &Disk,
    )
    .program
    .expect("compiles");
    let dot = ir::to_dot(&approval);
    assert!(dot.contains("human approval"), "{dot}");
}
