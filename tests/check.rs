//! `fuseraft check` tests. Tests are data: a new case is a new file under `fixtures/check/`
//! named `<CODE>_fail_<name>` (must report CODE) or `<CODE>_pass_<name>` (must not), a
//! `.yaml`/`.json` config or a tama project directory. Every fixture's rendered findings are
//! snapshotted; so are the machine formats of one fixture, the whole shared corpus, the
//! documentation page (generated from the rule modules) and its examples.

use crate::common;

use common::{corpus_inputs, corpus_root, walk};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use fuseraft::disk::Disk;
use fuseraft::render::{self, Style};
use fuseraft::report::{self, Checked};
use fuseraft_compiler::check::{self, Findings};
use fuseraft_compiler::{compile, Code, Diagnostic};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn relative(path: &Path) -> PathBuf {
    path.strip_prefix(root())
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Every code a finding (or any related finding under it) carries.
fn codes(findings: &Findings) -> Vec<Code> {
    fn walk(diag: &Diagnostic, out: &mut Vec<Code>) {
        out.push(diag.code);
        for related in &diag.related {
            walk(related, out);
        }
    }
    let mut out = Vec::new();
    for diag in &findings.diagnostics {
        walk(diag, &mut out);
    }
    out
}

fn human(findings: &Findings, sources: &fuseraft_compiler::SourceMap) -> String {
    let checked = [Checked {
        input: Path::new("input.yaml"),
        findings,
        sources,
    }];
    fuseraft::commands::check::human(&checked, Style::plain())
}

/// The fixture inputs: files directly under `fixtures/check/`, and project directories.
fn fixture_inputs() -> Vec<PathBuf> {
    let dir = root().join("fixtures/check");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    inputs.retain(|path| {
        path.is_dir()
            || path
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml" || ext == "json" || ext == "fir")
    });
    inputs.sort();
    inputs
}

/// `FR302_fail_name` → (FR302, true).
fn expectation(path: &Path) -> (Code, bool) {
    let name = path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .to_string();
    let mut parts = name.splitn(3, '_');
    let code = parts.next().and_then(Code::parse);
    let kind = parts.next();
    match (code, kind) {
        (Some(code), Some("fail")) => (code, true),
        (Some(code), Some("pass")) => (code, false),
        _ => panic!("fixture `{name}` is not named `<CODE>_fail_<name>` or `<CODE>_pass_<name>`"),
    }
}

#[test]
fn check_fixtures_report_their_code_and_are_snapshotted() {
    let inputs = fixture_inputs();
    assert!(inputs.len() > 60, "fixtures/check/ looks empty");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots/check");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for path in &inputs {
            let input = relative(path);
            let (code, fails) = expectation(&input);
            let compiled = compile(&input, &Disk);
            let findings = check::check(&compiled);
            let rendered = human(&findings, &compiled.sources);
            let found = codes(&findings);
            if fails {
                assert!(
                    found.contains(&code),
                    "{} should report {}:\n{rendered}",
                    input.display(),
                    code.as_str()
                );
            } else {
                assert!(
                    !found.contains(&code),
                    "{} must not report {}:\n{rendered}",
                    input.display(),
                    code.as_str()
                );
            }
            let name = input
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            insta::assert_snapshot!(name, rendered);
        }
    });
}

/// Codes that cannot have a failing fixture, and why.
const NOT_EMITTED: &[(Code, &str)] = &[];

#[test]
fn every_code_has_a_failing_and_a_passing_fixture() {
    let mut seen: BTreeMap<Code, (bool, bool)> = BTreeMap::new();
    for path in fixture_inputs() {
        let (code, fails) = expectation(&path);
        let entry = seen.entry(code).or_default();
        if fails {
            entry.0 = true;
        } else {
            entry.1 = true;
        }
    }
    let mut missing = Vec::new();
    for code in Code::ALL {
        if NOT_EMITTED.iter().any(|(c, _)| c == code) {
            continue;
        }
        match seen.get(code) {
            Some((true, true)) => {}
            Some((fail, pass)) => {
                missing.push(format!("{}: fail {fail}, pass {pass}", code.as_str()))
            }
            None => missing.push(format!("{}: no fixture", code.as_str())),
        }
    }
    assert!(
        missing.is_empty(),
        "fixtures missing:\n{}",
        missing.join("\n")
    );
}

/// Every finding of every fixture (its related findings too) has a place in the config, so
/// the human, GitHub and SARIF outputs all point at it: a finding without one is an
/// annotation on no line (a node's own validator was, before it took its node's span).
#[test]
fn every_finding_of_the_fixtures_has_a_location() {
    fn unplaced(diag: &Diagnostic, out: &mut Vec<String>) {
        if diag.span().is_none() {
            out.push(format!("{} {}", diag.code.as_str(), diag.message));
        }
        for related in &diag.related {
            unplaced(related, out);
        }
    }
    let mut missing = Vec::new();
    for path in fixture_inputs() {
        // A `.fir` program keeps the locations of a config that is not loaded: none to give.
        if path.extension().is_some_and(|ext| ext == "fir") {
            continue;
        }
        let input = relative(&path);
        let compiled = compile(&input, &Disk);
        let findings = check::check(&compiled);
        let mut out = Vec::new();
        for diag in &findings.diagnostics {
            unplaced(diag, &mut out);
        }
        missing.extend(out.into_iter().map(|d| format!("{}: {d}", input.display())));
    }
    assert!(
        missing.is_empty(),
        "findings without a location:\n{}",
        missing.join("\n")
    );
    // A node's own validator, in the two machine formats: at its node (line 13, column 17).
    let input = PathBuf::from("fixtures/check/FR605_fail_node_validator.yaml");
    let compiled = compile(&input, &Disk);
    let findings = check::check(&compiled);
    let checked = [Checked {
        input: &input,
        findings: &findings,
        sources: &compiled.sources,
    }];
    let github = report::github::render(&checked);
    assert!(github.contains(",line=13,col=17,"), "{github}");
    let cwd = std::env::current_dir().unwrap();
    let sarif = report::sarif::render(&checked, &report::sarif::Root::discover(&cwd));
    let value: serde_json::Value = serde_json::from_str(&sarif).expect("SARIF is JSON");
    let region = &value["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
    assert_eq!(
        (region["startLine"].as_u64(), region["startColumn"].as_u64()),
        (Some(13), Some(17)),
        "{region}"
    );
}

#[test]
fn machine_formats_of_one_fixture() {
    let input = PathBuf::from("fixtures/check/FR102_fail_doc.yaml");
    let compiled = compile(&input, &Disk);
    let findings = check::check(&compiled);
    let checked = [Checked {
        input: &input,
        findings: &findings,
        sources: &compiled.sources,
    }];
    insta::assert_snapshot!("format_json", report::json::render(&checked));
    insta::assert_snapshot!("format_github", report::github::render(&checked));
    let cwd = std::env::current_dir().unwrap();
    let sarif = report::sarif::render(&checked, &report::sarif::Root::discover(&cwd));
    let value: serde_json::Value = serde_json::from_str(&sarif).expect("SARIF is JSON");
    let rules = value["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(rules, Code::ALL.len(), "SARIF lists every rule");
    // The rule table is long and generated from the docs: snapshot only the results.
    insta::assert_snapshot!(
        "format_sarif_results",
        serde_json::to_string_pretty(&value["runs"][0]["results"]).unwrap_or_default()
    );
}

#[test]
fn github_annotations_escape_properties_and_data() {
    assert_eq!(
        report::github::data("50% done\r\nnext"),
        "50%25 done%0D%0Anext"
    );
    assert_eq!(report::github::property("a:b,c%"), "a%3Ab%2Cc%25");
}

// ---- Documentation: generated from the rule modules, examples checked.

/// docs/diagnostics.md as generated from the rule modules' headers: one section per code.
fn generated_docs() -> String {
    let mut out = String::from(include_str!("../compiler/src/check/intro.md"));
    out.push('\n');
    for (code, _) in check::all_docs() {
        out.push_str(&format!(
            "- [`{}` `{}`](#{})\n",
            code.as_str(),
            code.name(),
            anchor(code)
        ));
    }
    out.push('\n');
    for (_, text) in check::all_docs() {
        let mut in_code = false;
        for line in text.lines() {
            if line.starts_with("```") {
                in_code = !in_code;
            }
            if !in_code && line.starts_with('#') {
                out.push('#');
            }
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

fn anchor(code: Code) -> String {
    format!("{}-{}", code.as_str().to_ascii_lowercase(), code.name())
}

#[test]
fn docs_page_is_generated_from_the_rule_modules() {
    let path = root().join("docs/diagnostics.md");
    let expected = generated_docs();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &expected).expect("write docs/diagnostics.md");
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/diagnostics.md is out of date: run `UPDATE_DOCS=1 cargo test --test check docs_page`"
    );
    for code in Code::ALL {
        assert!(
            check::explain(*code).is_some(),
            "{} has no documentation section",
            code.as_str()
        );
    }
}

/// Files held in memory.
type Memory = fuseraft_compiler::MemoryFiles;

/// An example as an input: a config, or (front matter first) a tama project whose entry
/// agent is the example and whose other fsm states are oneshot agents.
fn example_input(text: &str) -> (PathBuf, Memory) {
    let mut files = BTreeMap::new();
    if text.trim_start().starts_with("---") {
        files.insert(
            PathBuf::from("ex/tama.toml"),
            "[project]\nname = \"ex\"\nentrypoint = \"main\"\n".to_string(),
        );
        files.insert(
            PathBuf::from("ex/agents/main/AGENT.md"),
            format!("{}\nRoute the work.\n", text.trim()),
        );
        for line in text.lines() {
            if let Some(state) = line.strip_prefix("  ").and_then(|l| l.strip_suffix(':')) {
                if !state.starts_with(' ') && !state.starts_with('-') {
                    files.insert(
                        PathBuf::from(format!("ex/agents/{state}/AGENT.md")),
                        format!("---\nname: {state}\npattern: oneshot\n---\nDo it.\n"),
                    );
                }
            }
        }
        (PathBuf::from("ex"), fuseraft_compiler::MemoryFiles(files))
    } else {
        files.insert(PathBuf::from("example.yaml"), text.to_string());
        (
            PathBuf::from("example.yaml"),
            fuseraft_compiler::MemoryFiles(files),
        )
    }
}

fn yaml_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line) {
            (None, "```yaml") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// Codes whose documentation has no examples, and why.
const NO_EXAMPLES: &[Code] = &[Code::RecursiveAgent];

#[test]
fn docs_examples_fail_and_pass_as_documented() {
    for (code, text) in check::all_docs() {
        let blocks = yaml_blocks(&text);
        if NO_EXAMPLES.contains(&code) {
            continue;
        }
        assert!(
            blocks.len() >= 2,
            "{} needs a failing and a fixed example",
            code.as_str()
        );
        for (idx, block) in blocks.iter().take(2).enumerate() {
            let (input, reader) = example_input(block);
            let compiled = compile(&input, &reader);
            let findings = check::check(&compiled);
            let found = codes(&findings);
            let rendered: Vec<String> = findings
                .diagnostics
                .iter()
                .map(|d| render::short(d, &compiled.sources))
                .collect();
            if idx == 0 {
                assert!(
                    found.contains(&code),
                    "the failing example of {} does not report it: {rendered:?}",
                    code.as_str()
                );
            } else {
                assert!(
                    !found.contains(&code),
                    "the fixed example of {} still reports it: {rendered:?}",
                    code.as_str()
                );
            }
        }
    }
}

// ---- Robustness: malformed input of every kind yields diagnostics, never a panic.

#[test]
fn truncated_and_mangled_inputs_never_panic() {
    let mut files = Vec::new();
    walk(&root().join("fixtures/check"), &mut files);
    walk(&root().join("fixtures/compile"), &mut files);
    walk(&root().join("../shared/corpus/fuseraft"), &mut files);
    let mut runs = 0;
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let file_name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        // A tama project: every file of it in memory, the mangled one being an AGENT.md.
        let project = if file_name == "AGENT.md" {
            path.ancestors().nth(3).map(Path::to_path_buf)
        } else {
            None
        };
        let is_input = matches!(
            path.extension().and_then(|ext| ext.to_str()),
            Some("yaml" | "json" | "fir")
        );
        if !is_input && project.is_none() {
            continue;
        }
        let mut base = BTreeMap::new();
        if let Some(project) = &project {
            let mut project_files = Vec::new();
            walk(project, &mut project_files);
            for file in project_files {
                if let (Ok(rel), Ok(body)) =
                    (file.strip_prefix(project), std::fs::read_to_string(&file))
                {
                    base.insert(PathBuf::from("p").join(rel), body);
                }
            }
        }
        let (input, key) = match &project {
            Some(project) => (
                PathBuf::from("p"),
                PathBuf::from("p").join(path.strip_prefix(project).unwrap_or(&path)),
            ),
            None => (PathBuf::from(&file_name), PathBuf::from(&file_name)),
        };
        let step = (text.len() / 16).max(1);
        let mut cut = 0;
        while cut <= text.len() {
            if text.is_char_boundary(cut) {
                for variant in [
                    text[..cut].to_string(),
                    format!("{}\n  - {{", &text[..cut]),
                    text[..cut].replace(':', ""),
                    text[..cut].replace('a', "ä").replace('(', "ü("),
                ] {
                    let mut files = base.clone();
                    files.insert(key.clone(), variant);
                    let reader = fuseraft_compiler::MemoryFiles(files);
                    let compiled = compile(&input, &reader);
                    let findings = check::check(&compiled);
                    if let Some(program) = compiled.any_program() {
                        let _ = check::paths(program);
                    }
                    let checked = [Checked {
                        input: &input,
                        findings: &findings,
                        sources: &compiled.sources,
                    }];
                    let _ = report::json::render(&checked);
                    let _ = report::github::render(&checked);
                    let _ = fuseraft::commands::check::human(&checked, Style::plain());
                    runs += 1;
                }
            }
            cut += step;
        }
    }
    assert!(runs > 1000, "only {runs} mangled inputs were checked");
}

// ---- The shared corpus (present on developer machines and in CI, not in a user's clone).

/// One line per finding (`file:line:col: severity[CODE]: message`), related findings
/// indented below their cause. Messages quote keywords and names, never instructions.
fn short_form(
    diag: &Diagnostic,
    sources: &fuseraft_compiler::SourceMap,
    depth: usize,
    out: &mut String,
) {
    out.push_str(&"  ".repeat(depth));
    out.push_str(&render::short(diag, sources));
    out.push('\n');
    for related in &diag.related {
        short_form(related, sources, depth + 1, out);
    }
}

#[test]
fn corpus_findings_are_snapshotted() {
    let Some(corpus) = corpus_root() else { return };
    let inputs = corpus_inputs(&corpus);
    assert!(
        inputs.len() >= 30,
        "expected the whole corpus, found {}",
        inputs.len()
    );
    let mut out = String::new();
    for path in &inputs {
        let shown = relative(path);
        let shown = PathBuf::from(shown.to_string_lossy().replace("/./", "/"));
        let compiled = compile(&shown, &common::VariantOverlay);
        let findings = check::check(&compiled);
        let rel = path.strip_prefix(&corpus).unwrap_or(path);
        out.push_str(&format!("## {}\n", rel.display()));
        if findings.diagnostics.is_empty() {
            out.push_str("no findings\n");
        }
        for diag in &findings.diagnostics {
            short_form(diag, &compiled.sources, 0, &mut out);
        }
        for suppressed in &findings.suppressed {
            out.push_str(&format!(
                "suppressed: {}\n",
                render::short(&suppressed.diagnostic, &compiled.sources)
            ));
        }
    }
    insta::assert_snapshot!("corpus_findings", out);
}

// ---- The command line.

fn fuseraft(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run fuseraft");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

#[test]
fn exit_codes_follow_the_findings() {
    let (code, stdout, _) = fuseraft(&[
        "check",
        "--color",
        "never",
        "fixtures/check/FR201_pass_doc.yaml",
    ]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("no problems found in 1 file"), "{stdout}");
    let (code, ..) = fuseraft(&["check", "fixtures/check/FR102_fail_doc.yaml"]);
    assert_eq!(code, 1, "errors fail the check");
    let (code, ..) = fuseraft(&["check", "fixtures/check/FR201_fail_doc.yaml"]);
    assert_eq!(code, 0, "warnings alone do not fail");
    let (code, ..) = fuseraft(&[
        "check",
        "--deny-warnings",
        "fixtures/check/FR201_fail_doc.yaml",
    ]);
    assert_eq!(code, 1, "--deny-warnings fails on warnings");
    // Upstream's spelling: `validate --strict` fails on warnings as `--deny-warnings` does,
    // and still passes a clean config.
    let (code, ..) = fuseraft(&["validate", "--strict", "fixtures/check/FR201_fail_doc.yaml"]);
    assert_eq!(code, 1, "validate --strict fails on warnings");
    let (code, ..) = fuseraft(&["validate", "--strict", "fixtures/check/FR201_pass_doc.yaml"]);
    assert_eq!(
        code, 0,
        "validate --strict passes a config without warnings"
    );
    let (code, ..) = fuseraft(&["check", "fixtures/check/does-not-exist.yaml"]);
    assert_eq!(code, 2, "an unreadable input is a usage error");
    let (code, ..) = fuseraft(&["check", "--format", "nope", "x.yaml"]);
    assert_eq!(code, 2, "a bad flag is a usage error");
    let (code, ..) = fuseraft(&[
        "check",
        "fixtures/check/FR201_pass_doc.yaml",
        "fixtures/check/FR102_fail_doc.yaml",
    ]);
    assert_eq!(code, 1, "any failing input fails the run");
}

#[test]
fn explain_prints_the_rule_documentation() {
    let (code, stdout, _) = fuseraft(&["check", "--explain", "FR302"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("# FR302 `shadowed-keyword`"), "{stdout}");
    assert!(stdout.contains("## Why is this bad?"));
    let (code, by_name, _) = fuseraft(&["check", "--explain", "shadowed-keyword"]);
    assert_eq!((code, by_name), (0, stdout));
    let (code, _, stderr) = fuseraft(&["check", "--explain", "FR3O2"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("did you mean `FR302`?"), "{stderr}");
}

#[test]
fn paths_list_every_route_to_each_end() {
    let (code, stdout, _) =
        fuseraft(&["check", "--paths", "fixtures/compile/ok/statemachine.yaml"]);
    assert_eq!(code, 0, "{stdout}");
    insta::assert_snapshot!("paths_statemachine", stdout);
    let (_, graph, _) = fuseraft(&["check", "--paths", "fixtures/compile/ok/graph.yaml"]);
    insta::assert_snapshot!("paths_graph", graph);
}

#[test]
fn github_format_writes_the_step_summary_and_says_when_annotations_overflow() {
    let summary = std::env::temp_dir().join(format!("fuseraft-summary-{}.md", std::process::id()));
    let _ = std::fs::remove_file(&summary);
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args([
            "check",
            "--format",
            "github",
            "fixtures/check/FR102_fail_doc.yaml",
        ])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .current_dir(root())
        .output()
        .expect("run fuseraft");
    assert_eq!(output.status.code(), Some(1));
    let written = std::fs::read_to_string(&summary).unwrap_or_default();
    let _ = std::fs::remove_file(&summary);
    insta::assert_snapshot!("github_step_summary", written);

    // Eleven warnings of one kind: GitHub would drop one, so a notice says how many exist.
    let mut yaml = String::from("Orchestration:\n  Agents:\n    - Name: W\n  Contracts:\n");
    for idx in 0..11 {
        yaml.push_str(&format!(
            "    - Name: C{idx}\n      Requires:\n        - {{ Type: FileExists, Path: a }}\n"
        ));
    }
    let reader =
        fuseraft_compiler::MemoryFiles(BTreeMap::from([(PathBuf::from("many.yaml"), yaml)]));
    let compiled = compile(Path::new("many.yaml"), &reader);
    let findings = check::check(&compiled);
    let checked = [Checked {
        input: Path::new("many.yaml"),
        findings: &findings,
        sources: &compiled.sources,
    }];
    let annotations = report::github::render(&checked);
    assert_eq!(
        annotations.matches("::warning ").count(),
        11,
        "{annotations}"
    );
    assert!(
        annotations.ends_with("GitHub shows at most 10 annotations of each kind per step, see the job summary or run `fuseraft check` locally\n"),
        "{annotations}"
    );
}
