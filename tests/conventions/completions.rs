//! `fuseraft completions SHELL` for every shell clap_complete knows, examples in every
//! command's `--help`, and the spellings of upstream's VS Code extension: `run`,
//! `validate [--diagram]`, `-v`/`--version`.

use std::process::Command;

use super::{run, stderr, stdout};

#[test]
fn every_shell_gets_a_script() {
    for (shell, needle) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef fuseraft"),
        ("fish", "complete -c fuseraft"),
        ("elvish", "edit:completion:arg-completer[fuseraft]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let output = run(&["completions", shell]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{shell}: {}",
            stderr(&output)
        );
        let script = stdout(&output);
        assert!(script.contains(needle), "{shell}: {script}");
        for command in ["exec", "check", "init", "completions"] {
            assert!(script.contains(command), "{shell} completes `{command}`");
        }
    }
    let unknown = run(&["completions", "tcsh"]);
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn the_bash_script_parses_and_completes() {
    let script = stdout(&run(&["completions", "bash"]));
    let path = super::scratch("completions").join("fuseraft.bash");
    std::fs::write(&path, &script).unwrap();
    let syntax = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(syntax.status.success(), "{}", stderr(&syntax));
    // Source it and ask for the completions of `fuseraft ch` and `fuseraft init --template `.
    // Bash calls the function with the command, the word being completed and the one
    // before it.
    let complete = |words: &str, current: usize, cur: &str, prev: &str| {
        let probe = format!(
            "source {path}; COMP_WORDS=({words}); COMP_CWORD={current}; COMP_LINE=\"{words}\"; \
             COMP_POINT=${{#COMP_LINE}}; _fuseraft fuseraft '{cur}' '{prev}'; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path = path.display()
        );
        let output = Command::new("bash").arg("-c").arg(probe).output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
    };
    let commands = complete("fuseraft ch", 1, "ch", "fuseraft");
    assert!(commands.lines().any(|w| w == "check"), "{commands}");
    let templates = complete("fuseraft init --template ''", 3, "", "--template");
    for name in ["dev-team", "tama-fsm", "statemachine"] {
        assert!(templates.lines().any(|w| w == name), "{templates}");
    }
}

#[test]
fn every_help_shows_examples() {
    for command in [
        "compile",
        "check",
        "exec",
        "test",
        "eval",
        "sessions",
        "init",
        "completions",
        "man",
    ] {
        let output = run(&[command, "--help"]);
        assert_eq!(output.status.code(), Some(0), "{command}");
        let help = stdout(&output);
        assert!(
            help.contains("Examples:\n  fuseraft "),
            "`{command} --help` shows examples: {help}"
        );
    }
    insta::assert_snapshot!("help_check", stdout(&run(&["check", "--help"])));
}

#[test]
fn upstream_spellings_are_accepted() {
    for flag in ["-v", "-V", "--version"] {
        let output = run(&[flag]);
        assert_eq!(output.status.code(), Some(0), "{flag}");
        assert_eq!(
            stdout(&output),
            format!("fuseraft {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
    let sub = run(&["exec", "-v"]);
    assert_eq!(sub.status.code(), Some(0), "{}", stderr(&sub));
    assert!(stdout(&sub).ends_with(concat!(" ", env!("CARGO_PKG_VERSION"), "\n")));
    // `run` is `exec`.
    let ran = run(&[
        "run",
        "--json",
        "no/such.yaml",
        "--task",
        "t",
        "--ephemeral",
    ]);
    assert_eq!(ran.status.code(), Some(2));
    assert!(
        stdout(&ran).contains("\"succeeded\":false"),
        "{}",
        stdout(&ran)
    );
    // `validate` is `check`, and `--diagram` prints the Mermaid view of each valid input.
    let validated = run(&["validate", "fixtures/cli/tree/team.yaml"]);
    assert_eq!(validated.status.code(), Some(0));
    assert_eq!(stdout(&validated), "no problems found in 1 file\n");
    let diagram = run(&["validate", "--diagram", "fixtures/cli/tree/team.yaml"]);
    assert_eq!(diagram.status.code(), Some(0), "{}", stderr(&diagram));
    let mermaid = stdout(&run(&[
        "compile",
        "fixtures/cli/tree/team.yaml",
        "--emit",
        "mermaid",
    ]));
    assert_eq!(stdout(&diagram), mermaid);
    let several = run(&["validate", "--diagram", "fixtures/cli/tree"]);
    assert_eq!(
        several.status.code(),
        Some(1),
        "the broken config still fails"
    );
    insta::assert_snapshot!("validate_diagram_directory", stdout(&several));
}

#[test]
fn bash_completes_the_session_ids_of_the_work_dir() {
    let work = super::scratch("completions-sessions");
    let mut ids = Vec::new();
    for _ in 0..2 {
        let output = run(&[
            "exec",
            "fixtures/run/keyword/config.yaml",
            "--task",
            "t",
            "--replay",
            "fixtures/run/keyword/replay.yaml",
            "--max-turns",
            "1",
            "--json",
            "--work-dir",
            work.to_str().unwrap(),
        ]);
        let summary: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
        ids.push(summary["session_id"].as_str().unwrap().to_string());
    }
    let path = work.join("fuseraft.bash");
    std::fs::write(&path, stdout(&run(&["completions", "bash"]))).unwrap();
    // The script calls `fuseraft` from PATH: this build's.
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_fuseraft"))
        .parent()
        .unwrap()
        .display()
        .to_string();
    let complete = |words: &str, current: usize, prev: &str| {
        let probe = format!(
            "source {path}; COMP_WORDS=({words}); COMP_CWORD={current}; COMP_LINE=\"{words}\"; \
             COMP_POINT=${{#COMP_LINE}}; _fuseraft_sessions fuseraft '' '{prev}'; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path = path.display()
        );
        let output = Command::new("bash")
            .arg("-c")
            .arg(probe)
            .env("PATH", format!("{bin}:/usr/bin:/bin"))
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
    };
    let dir = work.display();
    for (words, current, prev) in [
        (
            format!("fuseraft exec c.yaml --work-dir {dir} --resume ''"),
            6,
            "--resume",
        ),
        ("fuseraft sessions show ''".to_string(), 3, "show"),
    ] {
        let offered = complete(&words, current, prev);
        if prev == "show" {
            // No `--work-dir` on the line: the current directory's sessions, none here.
            assert!(!ids.iter().any(|id| offered.contains(id)), "{offered}");
            continue;
        }
        for id in &ids {
            assert!(offered.lines().any(|line| line == id), "{words}: {offered}");
        }
    }
    let _ = std::fs::remove_dir_all(work);
}
