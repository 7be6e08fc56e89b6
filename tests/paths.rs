//! Paths are checked where they land, end to end through the binary: an `AgentFile` or a
//! tama agent that reaches outside the project through a symlink is refused at the key that
//! names it, a FIFO include is refused at once (no wait for a writer), a symlink that stays
//! inside the project keeps working, and a `Security.FileSystemSandboxPath` that does not
//! exist stops `exec` before the first turn. Configured paths (the sandbox, the change log)
//! symlinked out of the project are `FR004` at their key for `check`, `compile` and `exec`.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A unique scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("fuseraft-paths-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(std::fs::canonicalize(&dir).unwrap())
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the binary, failing the test if it takes more than 30 s.
fn run(args: &[&std::ffi::OsStr]) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fuseraft"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("fuseraft {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), started.elapsed())
}

/// Stderr and stdout with the wrapping of rendered diagnostics undone.
fn flat(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr) + String::from_utf8_lossy(&output.stdout);
    text.replace(['│', '·'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn compile(config: &Path) -> (Output, Duration) {
    run(&["compile".as_ref(), config.as_os_str()])
}

const AGENT: &str = "Name: Dev\nInstructions: Build it.\n";

fn config(agent_file: &str) -> String {
    format!(
        "Orchestration:\n  Name: P\n  Agents:\n    - AgentFile: {agent_file}\n  Selection: {{ Type: sequential }}\n  Termination: {{ Type: maxiterations, MaxIterations: 1 }}\n"
    )
}

#[test]
fn a_symlinked_agent_file_leaving_the_project_is_refused_at_its_key() {
    let outside = Scratch::new("agentfile-outside");
    outside.write("dev.yaml", AGENT);
    let project = Scratch::new("agentfile-project");
    project.write("config.yaml", &config("agents/dev.yaml"));
    std::fs::create_dir_all(project.path("agents")).unwrap();
    std::os::unix::fs::symlink(outside.path("dev.yaml"), project.path("agents/dev.yaml")).unwrap();
    let (output, _) = compile(&project.path("config.yaml"));
    let text = flat(&output);
    assert_ne!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("outside the project directory"), "{text}");
    let unwrapped: String = text.split_whitespace().collect();
    assert!(
        unwrapped.contains(&outside.path("dev.yaml").display().to_string()),
        "{text}"
    );
    assert!(text.contains("FR004"), "{text}");
    assert!(
        text.contains("config.yaml:4:"),
        "not located at the AgentFile key: {text}"
    );

    // A symlinked directory out of the project, too.
    std::fs::remove_file(project.path("agents/dev.yaml")).unwrap();
    std::fs::remove_dir(project.path("agents")).unwrap();
    std::os::unix::fs::symlink(&outside.0, project.path("agents")).unwrap();
    let (output, _) = compile(&project.path("config.yaml"));
    let text = flat(&output);
    assert_ne!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("outside the project directory"), "{text}");

    // A symlink that stays inside the project keeps working.
    std::fs::remove_file(project.path("agents")).unwrap();
    project.write("shared/dev.yaml", AGENT);
    std::fs::create_dir_all(project.path("agents")).unwrap();
    std::os::unix::fs::symlink("../shared/dev.yaml", project.path("agents/dev.yaml")).unwrap();
    let (output, _) = compile(&project.path("config.yaml"));
    assert_eq!(output.status.code(), Some(0), "{}", flat(&output));
}

#[test]
fn a_lexical_escape_is_refused_before_anything_is_read() {
    let project = Scratch::new("agentfile-dotdot");
    project.write(
        "team/config.yaml",
        &config("../../../../../../../../etc/passwd"),
    );
    let (output, _) = compile(&project.path("team/config.yaml"));
    let text = flat(&output);
    assert_ne!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("FR004"), "{text}");
    assert!(text.contains("outside the project directory"), "{text}");
    assert!(!text.contains("root:"), "/etc/passwd was read: {text}");
}

#[test]
fn a_fifo_agent_file_is_refused_at_once() {
    let project = Scratch::new("agentfile-fifo");
    project.write("config.yaml", &config("agents/dev.yaml"));
    std::fs::create_dir_all(project.path("agents")).unwrap();
    let made = Command::new("mkfifo")
        .arg(project.path("agents/dev.yaml"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo failed");
    let (output, elapsed) = compile(&project.path("config.yaml"));
    let text = flat(&output);
    assert_ne!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("FIFO"), "{text}");
    assert!(
        elapsed < Duration::from_secs(5),
        "waited {elapsed:?} on the FIFO"
    );
}

#[test]
fn a_tama_agent_symlinked_out_of_the_project_is_refused() {
    let outside = Scratch::new("tama-outside");
    outside.write(
        "AGENT.md",
        "---\nname: helper\ndescription: Helps.\n---\nHelp.\n",
    );
    let project = Scratch::new("tama-project");
    project.write("tama.toml", "[project]\nentrypoint = \"lead\"\n");
    project.write(
        "agents/lead/AGENT.md",
        "---\nname: lead\ndescription: Leads.\n---\nLead.\n",
    );
    std::os::unix::fs::symlink(&outside.0, project.path("agents/helper")).unwrap();
    // The entry agent is a symlink out of the project.
    std::fs::rename(project.path("agents/lead"), project.path("lead-real")).unwrap();
    std::os::unix::fs::symlink(&outside.0, project.path("agents/lead")).unwrap();
    let (output, _) = compile(&project.0);
    let text = flat(&output);
    assert_ne!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("outside the project directory"), "{text}");
}

#[test]
fn exec_refuses_a_missing_sandbox_path_before_the_first_turn() {
    let scratch = Scratch::new("sandbox-missing");
    let config = root().join("fixtures/paths/sandbox-missing/config.yaml");
    let replay = root().join("fixtures/paths/sandbox-missing/replay.yaml");
    let work = scratch.path("work");
    let (output, _) = run(&[
        "exec".as_ref(),
        config.as_os_str(),
        "--task".as_ref(),
        "Write notes.".as_ref(),
        "--replay".as_ref(),
        replay.as_os_str(),
        "--work-dir".as_ref(),
        work.as_os_str(),
    ]);
    let text = flat(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(text.contains("does not exist"), "{text}");
    assert!(
        text.contains("Security.FileSystemSandboxPath: no-such-dir"),
        "{text}"
    );
    let unwrapped: String = text.split_whitespace().collect();
    assert!(
        unwrapped.contains(&work.join("no-such-dir").display().to_string()),
        "{text}"
    );
    assert!(text.contains("sandbox-missing/config.yaml"), "{text}");
    assert!(!work.join("notes.txt").exists(), "a turn ran");
}

/// `fixtures/paths/sandbox-symlink` copied into a fresh project, its `box` a symlink to
/// `target` (relative to the project).
fn sandbox_project(name: &str, target: &Path) -> Scratch {
    let project = Scratch::new(name);
    for file in ["config.yaml", "replay.yaml"] {
        let text =
            std::fs::read_to_string(root().join("fixtures/paths/sandbox-symlink").join(file));
        project.write(file, &text.unwrap());
    }
    std::os::unix::fs::symlink(target, project.path("box")).unwrap();
    project
}

fn exec_in(project: &Scratch) -> Output {
    let config = project.path("config.yaml");
    let replay = project.path("replay.yaml");
    let (output, _) = run(&[
        "exec".as_ref(),
        config.as_os_str(),
        "--task".as_ref(),
        "Write files.".as_ref(),
        "--replay".as_ref(),
        replay.as_os_str(),
        "--work-dir".as_ref(),
        project.0.as_os_str(),
    ]);
    output
}

#[test]
fn a_sandbox_symlinked_out_of_the_project_is_refused_at_its_key() {
    let home = Scratch::new("sandbox-home");
    let project = sandbox_project("sandbox-symlink-out", &home.0);
    let config = project.path("config.yaml");
    for command in ["check", "compile"] {
        let (output, _) = run(&[command.as_ref(), config.as_os_str()]);
        let text = flat(&output);
        assert_eq!(output.status.code(), Some(1), "{command}: {text}");
        assert!(text.contains("FR004"), "{command}: {text}");
        assert!(
            text.contains("`Security.FileSystemSandboxPath: box` leaves the project directory"),
            "{command}: {text}"
        );
        assert!(
            text.contains("config.yaml:7:"),
            "{command}: not at the key: {text}"
        );
    }
    let output = exec_in(&project);
    let text = flat(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(text.contains("FR004"), "{text}");
    assert!(
        !home.path(".bashrc").exists(),
        "the tools wrote outside the project"
    );

    // With the config elsewhere (no `box` beside it), the work dir's symlink is refused
    // where the run resolves it.
    let elsewhere = Scratch::new("sandbox-config-elsewhere");
    let copied = std::fs::read_to_string(&config).unwrap();
    elsewhere.write("config.yaml", &copied);
    let moved = elsewhere.path("config.yaml");
    let replay = project.path("replay.yaml");
    let (output, _) = run(&[
        "exec".as_ref(),
        moved.as_os_str(),
        "--task".as_ref(),
        "Write files.".as_ref(),
        "--replay".as_ref(),
        replay.as_os_str(),
        "--work-dir".as_ref(),
        project.0.as_os_str(),
    ]);
    let text = flat(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(text.contains("outside the work dir"), "{text}");
    assert!(
        !home.path(".bashrc").exists(),
        "the tools wrote outside the work dir"
    );

    // A symlink that stays inside the project keeps working.
    let project = sandbox_project("sandbox-symlink-in", Path::new("real"));
    std::fs::create_dir_all(project.path("real")).unwrap();
    let output = exec_in(&project);
    assert_eq!(output.status.code(), Some(0), "{}", flat(&output));
    assert!(project.path("real/.bashrc").exists(), "{}", flat(&output));
}

#[test]
fn a_change_log_symlinked_out_of_the_project_is_refused_at_its_key() {
    let home = Scratch::new("changelog-home");
    let project = sandbox_project("changelog-symlink-out", Path::new("real"));
    std::fs::create_dir_all(project.path("real")).unwrap();
    std::os::unix::fs::symlink(&home.0, project.path("logs")).unwrap();
    let config = std::fs::read_to_string(project.path("config.yaml")).unwrap();
    let config = config.replace(
        "  Agents:",
        "  ChangeTracking: { Path: logs/.bash_aliases }\n  Agents:",
    );
    project.write("config.yaml", &config);
    let output = exec_in(&project);
    let text = flat(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(
        text.contains("`ChangeTracking.Path: logs/.bash_aliases` leaves the project directory"),
        "{text}"
    );
    assert!(
        !home.path(".bash_aliases").exists(),
        "fuseraft wrote outside the project"
    );
}
