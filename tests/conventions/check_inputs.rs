//! `fuseraft check`'s inputs: a directory is searched for fuseraft configs and tama
//! projects (honouring .gitignore and skipping hidden entries), a glob is expanded, `-`
//! reads standard input, no input means the current directory; `--format github` is the
//! default under GitHub Actions. `--paths` lists the inputs checked (`# NAME` per input).

use std::io::Write;
use std::process::Stdio;

use super::{fuseraft, run, stderr, stdout};

/// The `# NAME` lines of `--paths`: the inputs checked, in order.
fn inputs_checked(out: &str) -> Vec<&str> {
    out.lines()
        .filter_map(|line| line.strip_prefix("# "))
        .filter(|name| !name.starts_with("no program"))
        .collect()
}

#[test]
fn a_directory_is_searched_for_configs_and_tama_projects() {
    let output = run(&["check", "--paths", "fixtures/cli/tree"]);
    assert_eq!(
        inputs_checked(&stdout(&output)),
        [
            "fixtures/cli/tree/nested/broken.yaml",
            "fixtures/cli/tree/nested/flow.json",
            "fixtures/cli/tree/project",
            "fixtures/cli/tree/team.yaml",
        ],
        "ignored/ (.gitignore), .hidden/, replay.yaml and data.json (no Orchestration root) \
         and the project's AGENT.md files are not inputs: {}",
        stderr(&output)
    );
    // The broken config decides the exit code, and its finding is located.
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("fixtures/cli/tree/nested/broken.yaml:6:11"),
        "{}",
        stderr(&output)
    );
    let report = run(&["check", "fixtures/cli/tree"]);
    insta::assert_snapshot!("check_directory", stdout(&report));
}

#[test]
fn no_input_checks_the_current_directory() {
    let output = fuseraft()
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/cli/tree"))
        .args(["check", "--paths"])
        .output()
        .unwrap();
    assert_eq!(
        inputs_checked(&stdout(&output)),
        [
            "nested/broken.yaml",
            "nested/flow.json",
            "project",
            "team.yaml"
        ]
    );
}

#[test]
fn a_directory_without_workflows_is_a_usage_error() {
    let empty = run(&["check", "fixtures/compile/ok/include"]);
    assert_eq!(empty.status.code(), Some(2));
    insta::assert_snapshot!("check_empty_directory", stderr(&empty));
}

#[test]
fn a_glob_is_expanded_by_fuseraft() {
    let yaml = run(&["check", "--paths", "fixtures/cli/tree/**/*.yaml"]);
    assert_eq!(
        inputs_checked(&stdout(&yaml)),
        [
            "fixtures/cli/tree/nested/broken.yaml",
            "fixtures/cli/tree/team.yaml"
        ],
        "{}",
        stderr(&yaml)
    );
    // `*` stays within one directory.
    let top = run(&["check", "fixtures/cli/tree/*.yaml"]);
    assert_eq!(top.status.code(), Some(0), "{}", stderr(&top));
    assert_eq!(stdout(&top), "no problems found in 1 file\n");
    let agents = run(&[
        "check",
        "--paths",
        "fixtures/cli/tree/project/agents/*/AGENT.md",
    ]);
    assert_eq!(
        inputs_checked(&stdout(&agents)),
        [
            "fixtures/cli/tree/project/agents/main/AGENT.md",
            "fixtures/cli/tree/project/agents/worker/AGENT.md"
        ],
        "{}",
        stderr(&agents)
    );
    let none = run(&["check", "fixtures/cli/tree/*.toml"]);
    assert_eq!(none.status.code(), Some(2));
    insta::assert_snapshot!("check_glob_no_match", stderr(&none));
    let bad = run(&["check", "fixtures/[cli"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("not a valid glob"),
        "{}",
        stderr(&bad)
    );
}

fn check_stdin(args: &[&str], input: &str) -> std::process::Output {
    let mut child = fuseraft()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn dash_reads_standard_input_named_by_stdin_filename() {
    let broken = std::fs::read_to_string("fixtures/cli/tree/nested/broken.yaml").unwrap();
    let named = check_stdin(
        &["check", "-", "--stdin-filename", "teams/broken.yaml"],
        &broken,
    );
    assert_eq!(named.status.code(), Some(1));
    assert!(
        stdout(&named).contains("teams/broken.yaml:6:11"),
        "{}",
        stdout(&named)
    );
    let unnamed = check_stdin(&["check", "-", "--format", "github"], &broken);
    assert_eq!(unnamed.status.code(), Some(1));
    insta::assert_snapshot!("check_stdin_github", stdout(&unnamed));
    // Includes resolve beside the name, as they would beside the file.
    let included = std::fs::read_to_string("fixtures/compile/ok/agent-file.yaml").unwrap();
    let ok = check_stdin(
        &[
            "check",
            "-",
            "--stdin-filename",
            "fixtures/compile/ok/agent-file.yaml",
        ],
        &included,
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    // The extension of the name decides how the text is read.
    let json = std::fs::read_to_string("fixtures/cli/tree/nested/flow.json").unwrap();
    let ok = check_stdin(&["check", "-", "--stdin-filename", "flow.json"], &json);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
}

#[test]
fn stdin_misuse_is_a_usage_error() {
    let twice = check_stdin(&["check", "-", "-"], "");
    assert_eq!(twice.status.code(), Some(2));
    assert!(stderr(&twice).contains("`-` (standard input) can be given once"));
    let name_only = run(&[
        "check",
        "fixtures/cli/tree/team.yaml",
        "--stdin-filename",
        "x.yaml",
    ]);
    assert_eq!(name_only.status.code(), Some(2));
    assert!(
        stderr(&name_only).contains("`--stdin-filename`"),
        "{}",
        stderr(&name_only)
    );
}

#[test]
fn github_actions_chooses_the_github_format() {
    let annotated = fuseraft()
        .args(["check", "fixtures/cli/tree/nested/broken.yaml"])
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap();
    assert_eq!(annotated.status.code(), Some(1));
    assert!(
        stdout(&annotated).starts_with("::error file=fixtures/cli/tree/nested/broken.yaml,line=6"),
        "{}",
        stdout(&annotated)
    );
    // An explicit `--format` wins, and outside GitHub Actions the report is for people.
    let human = fuseraft()
        .args([
            "check",
            "fixtures/cli/tree/nested/broken.yaml",
            "--format",
            "human",
        ])
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap();
    assert!(!stdout(&human).contains("::error"), "{}", stdout(&human));
    let plain = run(&["check", "fixtures/cli/tree/nested/broken.yaml"]);
    assert!(!stdout(&plain).contains("::error"), "{}", stdout(&plain));
    assert!(
        stdout(&plain).contains("1 error in 1 file"),
        "{}",
        stdout(&plain)
    );
}
