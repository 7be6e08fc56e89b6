//! `fuseraft test`: the bundled scenarios pass, and the command behaves as documented on
//! scenarios built in temporary directories (a changed route, a missing snapshot, JUnit
//! output, coverage, errors that name the file).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fuseraft(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the fuseraft binary runs")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// A fresh directory for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("fuseraft-scenarios-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.0.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const KEYWORD_CONFIG: &str = "fixtures/run/keyword/config.yaml";

/// A scenario on the copied keyword config where the reviewer sends the work back once.
const REVISED: &str = r#"config: config.yaml
task: Add a --verbose flag.
replies:
  Planner:
    - text: "Plan.\nHANDOFF TO DEVELOPER"
  Developer:
    - text: "Added the flag.\nHANDOFF TO REVIEWER"
      times: 2
  Reviewer:
    - text: "No test.\nREVISION REQUIRED"
    - text: "APPROVED"
"#;

/// A scenario on the same config that never takes the revision route.
const APPROVED: &str = r#"config: config.yaml
task: Add a --verbose flag.
replies:
  Planner:
    - text: "Plan.\nHANDOFF TO DEVELOPER"
  Developer:
    - text: "Added the flag.\nHANDOFF TO REVIEWER"
  Reviewer:
    - text: "APPROVED"
"#;

fn keyword_project(name: &str) -> Scratch {
    let scratch = Scratch::new(name);
    let config = std::fs::read_to_string(root().join(KEYWORD_CONFIG)).unwrap();
    scratch.write("config.yaml", &config);
    scratch.write("revised.scenario.yaml", REVISED);
    scratch.write("approved.scenario.yaml", APPROVED);
    scratch
}

#[test]
fn bundled_scenarios_pass() {
    let output = fuseraft(&["test", "fixtures/scenarios"], &root());
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(stdout(&output).contains("test result: ok."));
}

#[test]
fn a_changed_route_fails_the_scenario_that_takes_it_with_a_diff_naming_the_step() {
    let project = keyword_project("changed-route");
    let dir = &project.0;
    let accepted = fuseraft(&["test", "--accept", "."], dir);
    assert_eq!(accepted.status.code(), Some(0), "{}", stdout(&accepted));

    // Reroute REVISION REQUIRED from the Developer to the Planner.
    let config = std::fs::read_to_string(dir.join("config.yaml")).unwrap();
    let changed = config.replace(
        "{ Keyword: REVISION REQUIRED, Agent: Developer,",
        "{ Keyword: REVISION REQUIRED, Agent: Planner,",
    );
    assert_ne!(
        config, changed,
        "the fixture config has the route to change"
    );
    project.write("config.yaml", &changed);

    let output = fuseraft(&["test", "."], dir);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{out}");
    assert!(out.contains("ok       approved.scenario.yaml"), "{out}");
    assert!(out.contains("CHANGED  revised.scenario.yaml"), "{out}");
    assert!(out.contains("--- revised.scenario.snap\n+++ revised.scenario.snap.new\n"));
    let removed: Vec<&str> = out.lines().filter(|l| l.starts_with('-')).collect();
    let added: Vec<&str> = out.lines().filter(|l| l.starts_with('+')).collect();
    assert!(
        removed.iter().any(|l| l
            .contains("  2 Reviewer     @Reviewer         signal REVISION REQUIRED → Developer")),
        "{out}"
    );
    assert!(
        added
            .iter()
            .any(|l| l
                .contains("  2 Reviewer     @Reviewer         signal REVISION REQUIRED → Planner")),
        "{out}"
    );
    // The steps before the change are context, not changes.
    assert!(out.contains(
        "\n   0 Planner      @Planner          signal HANDOFF TO DEVELOPER → Developer\n"
    ));
    assert!(dir.join("revised.scenario.snap.new").exists());
    assert!(!dir.join("approved.scenario.snap.new").exists());
}

#[test]
fn a_missing_snapshot_fails_until_accepted() {
    let project = keyword_project("missing");
    let dir = &project.0;
    let output = fuseraft(&["test", "approved.scenario.yaml"], dir);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{out}");
    assert!(out.contains("NEW      approved.scenario.yaml"), "{out}");
    assert!(out.contains("no snapshot yet"), "{out}");
    assert!(dir.join("approved.scenario.snap.new").exists());
    assert!(!dir.join("approved.scenario.snap").exists());

    let accepted = fuseraft(&["test", "--accept", "approved.scenario.yaml"], dir);
    assert_eq!(accepted.status.code(), Some(0), "{}", stdout(&accepted));
    assert!(stdout(&accepted).contains("WRITTEN  approved.scenario.yaml"));
    let snap = std::fs::read_to_string(dir.join("approved.scenario.snap")).unwrap();
    assert!(snap.contains("signal APPROVED → end"), "{snap}");
    assert!(snap.ends_with("── completed after 3 turns\n"), "{snap}");
    assert!(!dir.join("approved.scenario.snap.new").exists());

    let again = fuseraft(&["test", "approved.scenario.yaml"], dir);
    assert_eq!(again.status.code(), Some(0), "{}", stdout(&again));
}

/// Counts `<name` openings and checks every element closes, in order.
fn check_xml(xml: &str) -> std::collections::HashMap<String, usize> {
    let mut counts = std::collections::HashMap::new();
    let mut stack: Vec<String> = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').expect("a tag closes") + start;
        let tag = &rest[start + 1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('?') {
            continue;
        }
        assert!(!tag.contains('<'), "unescaped `<` in {tag}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
            continue;
        }
        let name = tag.split_whitespace().next().unwrap().trim_end_matches('/');
        *counts.entry(name.to_string()).or_default() += 1;
        if !tag.ends_with('/') {
            stack.push(name.to_string());
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    counts
}

#[test]
fn junit_reports_every_scenario_with_failures_and_errors() {
    let project = keyword_project("junit");
    let dir = &project.0;
    let accepted = fuseraft(&["test", "--accept", "approved.scenario.yaml"], dir);
    assert_eq!(accepted.status.code(), Some(0));
    // `revised` has no snapshot; `broken` misspells a key.
    project.write(
        "broken.scenario.yaml",
        "config: config.yaml\ntask: x\nreplys: {}\n",
    );
    let output = fuseraft(&["test", "--format", "junit", "."], dir);
    let xml = stdout(&output);
    assert_eq!(output.status.code(), Some(2), "{xml}");
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
    assert!(
        xml.contains("<testsuite name=\"scenarios\" tests=\"3\" failures=\"1\" errors=\"1\""),
        "{xml}"
    );
    let counts = check_xml(&xml);
    assert_eq!(counts["testsuites"], 1);
    assert_eq!(counts["testsuite"], 1);
    assert_eq!(counts["testcase"], 3);
    assert_eq!(counts["failure"], 1);
    assert_eq!(counts["error"], 1);
    // The trace's arrows and the diagnostic's quotes survive escaping.
    assert!(
        xml.contains("signal REVISION REQUIRED → Developer"),
        "{xml}"
    );
    assert!(xml.contains("unknown key `replys` in a scenario"), "{xml}");
}

#[test]
fn coverage_lists_the_exits_no_scenario_took() {
    let project = keyword_project("coverage");
    let dir = &project.0;
    let output = fuseraft(
        &["test", "--accept", "--coverage", "approved.scenario.yaml"],
        dir,
    );
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{out}");
    assert!(
        out.contains("config.yaml: 3 of 4 exits taken by 1 scenario"),
        "{out}"
    );
    let untaken: Vec<&str> = out.lines().filter(|l| l.contains("not taken:")).collect();
    assert_eq!(untaken.len(), 1, "{out}");
    assert!(
        untaken[0]
            .contains("Reviewer exit 0 · signal REVISION REQUIRED → Developer · config.yaml:13"),
        "{out}"
    );

    // With both scenarios every exit is taken.
    let output = fuseraft(&["test", "--accept", "--coverage", "."], dir);
    let out = stdout(&output);
    assert!(
        out.contains("config.yaml: 4 of 4 exits taken by 2 scenarios"),
        "{out}"
    );
    assert!(!out.contains("not taken:"), "{out}");
}

#[test]
fn scenario_errors_name_the_file_line_and_column() {
    let scratch = Scratch::new("errors");
    let config = std::fs::read_to_string(root().join(KEYWORD_CONFIG)).unwrap();
    scratch.write("config.yaml", &config);
    scratch.write(
        "typo.scenario.yaml",
        "config: config.yaml\ntask: x\nreplys:\n  Planner: [APPROVED]\n",
    );
    scratch.write(
        "both.scenario.yaml",
        "config: config.yaml\ntask: x\nreplay: r.yaml\nreplies: {}\n",
    );
    scratch.write(
        "nowhere.scenario.yaml",
        "config: missing.yaml\ntask: x\nreplies: {}\n",
    );
    scratch.write(
        "escape.scenario.yaml",
        "config: config.yaml\ntask: x\nreplies: {}\nwork_dir:\n  ../outside.txt: x\n",
    );
    let output = fuseraft(&["test", "."], &scratch.0);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown key `replys` in a scenario"), "{err}");
    assert!(err.contains("did you mean `replay`?"), "{err}");
    assert!(err.contains("typo.scenario.yaml:3:1"), "{err}");
    assert!(
        err.contains("either `replay` (a file) or `replies` (inline), not both"),
        "{err}"
    );
    assert!(
        err.contains("the config `missing.yaml` does not exist"),
        "{err}"
    );
    assert!(err.contains("nowhere.scenario.yaml:1:9"), "{err}");
    assert!(
        err.contains("must be a relative path inside the work dir"),
        "{err}"
    );
    let out = stdout(&output);
    assert_eq!(out.matches("ERROR    ").count(), 4, "{out}");
}

#[test]
fn usage_errors_exit_2() {
    let scratch = Scratch::new("usage");
    let output = fuseraft(&["test", "."], &scratch.0);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("no scenarios"),
        "{}",
        stderr(&output)
    );
    let output = fuseraft(&["test", "nothing-here"], &scratch.0);
    assert_eq!(output.status.code(), Some(2));
    scratch.write("notes.txt", "x");
    let output = fuseraft(&["test", "notes.txt"], &scratch.0);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("is not a scenario file"));
}

#[test]
fn coverage_tells_apart_two_structured_routes_to_the_same_agent() {
    let scratch = Scratch::new("structured-coverage");
    let config = std::fs::read_to_string(root().join("fixtures/run/structured/config.yaml"))
        .unwrap()
        .replace(
            "      - { Agent: Writer, Condition: { Field: verdict, Is: revise }",
            "      - { Agent: Writer, Condition: \"verdict == 'rewrite'\", SourceAgents: [Editor] }\n      - { Agent: Writer, Condition: { Field: verdict, Is: revise }",
        );
    assert!(config.contains("'rewrite'"));
    scratch.write("config.yaml", &config);
    scratch.write(
        "revise.scenario.yaml",
        "config: config.yaml\ntask: Write.\nreplay: replay.yaml\n",
    );
    let replay =
        std::fs::read_to_string(root().join("fixtures/run/structured/replay.yaml")).unwrap();
    scratch.write("replay.yaml", &replay);
    let output = fuseraft(&["test", "--accept", "--coverage", "."], &scratch.0);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{out}");
    let untaken: Vec<&str> = out.lines().filter(|l| l.contains("not taken:")).collect();
    assert_eq!(untaken.len(), 1, "{out}");
    assert!(
        untaken[0].contains("Editor exit 1 · when verdict == 'rewrite' → Writer"),
        "{out}"
    );
    let snap = std::fs::read_to_string(scratch.0.join("revise.scenario.snap")).unwrap();
    assert!(snap.contains("when verdict == 'revise' → Writer"), "{snap}");
}

/// What a secret file outside the project holds: it must never be shown.
const SECRET: &str = "aws_secret_access_key = SECRET-LINE-1234\n";

#[test]
#[cfg(unix)]
fn scenario_paths_leaving_the_project_are_refused_without_quoting_the_file() {
    let scratch = Scratch::new("outside");
    scratch.write("secret/credentials", SECRET);
    scratch.write("secret/config.yaml", SECRET);
    scratch.write("secret/replay.yaml", SECRET);
    let keyword = std::fs::read_to_string(root().join(KEYWORD_CONFIG)).unwrap();
    scratch.write("project/config.yaml", &keyword);
    let secret_config = scratch.0.join("secret/config.yaml");
    scratch.write(
        "project/absolute.scenario.yaml",
        &format!(
            "config: {}\ntask: x\nreplies: {{}}\n",
            secret_config.display()
        ),
    );
    scratch.write(
        "project/dotdot.scenario.yaml",
        "config: config.yaml\ntask: x\nreplay: ../secret/replay.yaml\n",
    );
    scratch.write("project/snap.scenario.yaml", APPROVED);
    std::os::unix::fs::symlink(
        scratch.0.join("secret/credentials"),
        scratch.0.join("project/snap.scenario.snap"),
    )
    .unwrap();
    let output = fuseraft(&["test", "."], &scratch.0.join("project"));
    let (out, err) = (stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(2), "{out}\n{err}");
    assert!(
        !out.contains("SECRET") && !err.contains("SECRET"),
        "{out}\n{err}"
    );
    // The report wraps long paths onto `│` lines: read it with the wrapping undone.
    let flat: Vec<&str> = err.split_whitespace().filter(|word| *word != "│").collect();
    assert_eq!(
        flat.join(" ")
            .matches("leaves the scenario's project")
            .count(),
        3,
        "{err}"
    );
    assert!(err.contains("absolute.scenario.yaml:1:9"), "{err}");
    assert!(err.contains("dotdot.scenario.yaml:3:9"), "{err}");
    assert!(err.contains("the snapshot `snap.scenario.snap`"), "{err}");
    assert_eq!(
        SECRET,
        std::fs::read_to_string(scratch.0.join("secret/credentials")).unwrap()
    );

    // In a repository, a scenario may name files anywhere in it (`..` included).
    std::fs::create_dir_all(scratch.0.join(".git")).unwrap();
    scratch.write(
        "project/tests/up.scenario.yaml",
        &APPROVED.replace("config.yaml", "../config.yaml"),
    );
    let output = fuseraft(&["test", "tests", "--accept"], &scratch.0.join("project"));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// A repository under test is untrusted (issue 27): a snapshot linked to a secret outside the
/// project (or to `/proc/self/environ`) is refused and nothing of it printed; a `.snap.new`
/// linked to a dotfile is replaced, never written through, with or without `--accept`.
#[cfg(unix)]
#[test]
fn snapshot_links_out_of_the_project_are_never_read_or_written_through() {
    use std::os::unix::fs::symlink;
    let project = keyword_project("snapshot-links");
    let outside = Scratch::new("snapshot-links-outside");
    let secret = outside.write("secret.txt", "OPENAI_API_KEY=sk-file-secret\n");
    let dotfile = outside.write(".bashrc", "kept\n");
    let dir = &project.0;
    symlink(&secret, dir.join("approved.scenario.snap")).unwrap();
    symlink("/proc/self/environ", dir.join("revised.scenario.snap")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(["test", "."])
        .current_dir(dir)
        .env("OPENAI_API_KEY", "sk-environ-secret")
        .output()
        .unwrap();
    let shown = format!("{}{}", stdout(&output), stderr(&output));
    assert!(!output.status.success(), "{shown}");
    assert!(!shown.contains("sk-"), "{shown}");
    assert!(shown.contains("leaves the scenario's project"), "{shown}");

    for accept in [false, true] {
        let _ = std::fs::remove_file(dir.join("approved.scenario.snap"));
        let _ = std::fs::remove_file(dir.join("approved.scenario.snap.new"));
        symlink(&dotfile, dir.join("approved.scenario.snap.new")).unwrap();
        let mut args = vec!["test", "approved.scenario.yaml"];
        if accept {
            args.insert(1, "--accept");
        }
        let output = fuseraft(&args, dir);
        assert_eq!(std::fs::read_to_string(&dotfile).unwrap(), "kept\n");
        let written = match accept {
            true => "approved.scenario.snap",
            false => "approved.scenario.snap.new",
        };
        let snap = std::fs::read_to_string(dir.join(written)).unwrap();
        assert!(
            snap.contains("signal APPROVED → end"),
            "{}",
            stdout(&output)
        );
        assert!(!dir.join(written).symlink_metadata().unwrap().is_symlink());
    }
}
