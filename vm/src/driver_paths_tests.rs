//! The driver's paths: a missing `Security.FileSystemSandboxPath` is an error, and `file:`
//! context sources resolve under the sandbox root like the tools (no symlink out, no
//! credential file, no FIFO or device that could block the run).

use std::path::{Path, PathBuf};
use std::time::Duration;

use fuseraft_compiler::MemoryFiles;

use super::context::read_context_file;
use super::sandbox_root;

/// A unique temporary directory, removed on drop.
struct Temp(PathBuf);

impl Temp {
    fn new(name: &str) -> Temp {
        let dir =
            std::env::temp_dir().join(format!("fuseraft-driver-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Temp(std::fs::canonicalize(&dir).unwrap())
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn program(security: &str) -> fuseraft_compiler::ir::Program {
    let config = format!(
        "Orchestration:\n  Name: P\n{security}  Agents:\n    - {{ Name: A, Instructions: x }}\n  Selection: {{ Type: sequential }}\n  Termination: {{ Type: maxiterations, MaxIterations: 1 }}\n"
    );
    let files = MemoryFiles::new().with("c.yaml", config);
    let compiled = fuseraft_compiler::compile(Path::new("c.yaml"), &files);
    compiled
        .program
        .unwrap_or_else(|| panic!("{:?}", compiled.diagnostics))
}

/// Reads a `file:` source on another thread: a blocking open fails the test after 10 s.
fn read_within(root: &Path, argument: &str) -> Result<String, String> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let (root, argument) = (root.to_path_buf(), argument.to_string());
    std::thread::spawn(move || {
        let _ = sender.send(read_context_file(&root, &argument));
    });
    receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("the context source was read within 10 s")
}

#[test]
fn a_missing_sandbox_path_is_an_error_not_the_work_dir() {
    let work = Temp::new("sandbox");
    std::fs::create_dir_all(work.path("box")).unwrap();
    std::fs::write(work.path("file.txt"), "x").unwrap();
    let unset = program("");
    assert_eq!(sandbox_root(&unset, &work.0).unwrap(), work.0);
    let set = program("  Security: { FileSystemSandboxPath: box }\n");
    assert_eq!(sandbox_root(&set, &work.0).unwrap(), work.path("box"));
    let missing = program("  Security: { FileSystemSandboxPath: no-such-dir }\n");
    let error = sandbox_root(&missing, &work.0).unwrap_err();
    assert!(error.contains("does not exist"), "{error}");
    assert!(
        error.contains("Security.FileSystemSandboxPath: no-such-dir"),
        "{error}"
    );
    assert!(
        error.contains(&work.path("no-such-dir").display().to_string()),
        "{error}"
    );
    let file = program("  Security: { FileSystemSandboxPath: file.txt }\n");
    let error = sandbox_root(&file, &work.0).unwrap_err();
    assert!(error.contains("is not a directory"), "{error}");
    // A sandbox inside git's or fuseraft's state would hand the tools what they may not
    // change (`.git/hooks`, the session store).
    for state in [
        ".git/hooks",
        ".GIT",
        ".fuseraft/sessions",
        ".fuseraft/state/x",
    ] {
        std::fs::create_dir_all(work.path(state)).unwrap();
        let inside = program(&format!(
            "  Security: {{ FileSystemSandboxPath: \"{state}\" }}\n"
        ));
        let error = sandbox_root(&inside, &work.0).unwrap_err();
        assert!(error.contains("fuseraft's own state"), "{state}: {error}");
    }
    std::fs::create_dir_all(work.path(".fuseraft/artifacts")).unwrap();
    let artifacts = program("  Security: { FileSystemSandboxPath: .fuseraft/artifacts }\n");
    assert!(sandbox_root(&artifacts, &work.0).is_ok());
}

#[test]
fn file_context_sources_are_confined_and_never_block() {
    let root = Temp::new("context");
    let outside = Temp::new("context-outside");
    std::fs::write(outside.path("secret.txt"), "OUTSIDE").unwrap();
    std::fs::write(root.path("notes.md"), "inside").unwrap();
    std::fs::write(root.path(".env"), "KEY=sk-secret").unwrap();
    std::fs::create_dir_all(root.path("docs")).unwrap();
    std::os::unix::fs::symlink("notes.md", root.path("alias.md")).unwrap();
    std::os::unix::fs::symlink(outside.path("secret.txt"), root.path("out.md")).unwrap();
    std::os::unix::fs::symlink(&outside.0, root.path("outdir")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.path("zero")).unwrap();
    std::os::unix::fs::symlink(".env", root.path("env.md")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.path("ctx.fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    assert_eq!(read_within(&root.0, "notes.md").unwrap(), "inside");
    assert_eq!(read_within(&root.0, "alias.md").unwrap(), "inside");
    assert_eq!(read_within(&root.0, "docs/../notes.md").unwrap(), "inside");
    for (argument, needle) in [
        ("out.md", "[DENIED: sandbox]"),
        ("outdir/secret.txt", "[DENIED: sandbox]"),
        ("../context-outside/secret.txt", "[DENIED: sandbox]"),
        ("/etc/passwd", "[DENIED: sandbox]"),
        ("zero", "[DENIED: sandbox]"),
        (".env", "[DENIED: credentials]"),
        ("env.md", "[DENIED: credentials]"),
        ("docs/../.env", "[DENIED: credentials]"),
        ("ctx.fifo", "it is a FIFO (named pipe), not a regular file"),
        ("docs", "it is a directory, not a regular file"),
        ("missing.md", "it does not exist"),
    ] {
        let error = read_within(&root.0, argument).unwrap_err();
        assert!(
            error.contains(needle),
            "{argument}: `{needle}` not in {error}"
        );
        assert!(!error.contains("OUTSIDE") && !error.contains("sk-secret"));
    }
}

/// The blocks of a handoff whose sources are a FIFO brief and a FIFO `file:`: both refused
/// at once, in their blocks, without blocking the run.
#[test]
fn context_blocks_with_fifo_sources_come_back_at_once() {
    let work = Temp::new("context-blocks");
    std::fs::create_dir_all(work.path(".fuseraft/artifacts")).unwrap();
    for fifo in [".fuseraft/artifacts/brief.json", "notes.fifo"] {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            work.path(fifo),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
    }
    let program = program("");
    let sources: Vec<fuseraft_compiler::ir::ContextSource> =
        ["brief_field:goal", "file:notes.fifo"]
            .iter()
            .map(|source| fuseraft_compiler::ir::ContextSource {
                source: source.to_string(),
                max_chars: 0,
                label: None,
            })
            .collect();
    let (sender, receiver) = std::sync::mpsc::channel();
    let dir = work.0.clone();
    std::thread::spawn(move || {
        let blocks =
            super::context::read_context(&program, &dir, &dir, Path::new(""), &sources, "s1");
        let _ = sender.send(blocks);
    });
    let blocks = receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("the context was read within 10 s");
    assert!(
        blocks[0].contains("could not read the brief: it is a FIFO"),
        "{blocks:?}"
    );
    assert!(
        blocks[1].contains("it is a FIFO (named pipe), not a regular file"),
        "{blocks:?}"
    );
}

/// The driver reads a source as the compiler reads it (`SourceKind`): names in any case,
/// `{session_id}` in the argument, and a name fuseraft does not read says so in its block.
#[test]
fn context_sources_are_read_as_the_compiler_reads_them() {
    let work = Temp::new("context-kinds");
    std::fs::create_dir_all(work.path(".fuseraft/artifacts")).unwrap();
    std::fs::write(
        work.path(".fuseraft/artifacts/brief.json"),
        r#"{"goal":"ship it"}"#,
    )
    .unwrap();
    std::fs::write(work.path("notes-s1.md"), "the notes of s1").unwrap();
    let program = program("");
    let sources: Vec<fuseraft_compiler::ir::ContextSource> = [
        "File: notes-{session_id}.md",
        "BRIEF_FIELD:goal",
        "execution_state",
    ]
    .iter()
    .map(|source| fuseraft_compiler::ir::ContextSource {
        source: source.to_string(),
        max_chars: 0,
        label: None,
    })
    .collect();
    let dir = work.0.clone();
    let blocks = super::context::read_context(&program, &dir, &dir, Path::new(""), &sources, "s1");
    assert!(blocks[0].ends_with("\nthe notes of s1"), "{blocks:?}");
    assert!(blocks[1].ends_with("\nship it"), "{blocks:?}");
    assert!(
        blocks[2].contains("context source `execution_state` is not available"),
        "{blocks:?}"
    );
}

/// Answers nothing, counting the calls.
struct CountingModels(std::sync::atomic::AtomicUsize);

impl super::Models for CountingModels {
    async fn call(
        &self,
        _: &crate::effect::ModelCall,
    ) -> Result<crate::effect::ModelReply, String> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Err("no model here".to_string())
    }
}

/// Through the driver (as `fuseraft test` and the library run it): a missing sandbox ends
/// the run with an error naming it before any model call or tool.
#[test]
fn a_missing_sandbox_path_ends_the_run_before_any_model_call() {
    let work = Temp::new("sandbox-run");
    let program = program("  Security: { FileSystemSandboxPath: gone }\n");
    let models = CountingModels(Default::default());
    let env = super::Env {
        pause: None,
        work_dir: work.0.clone(),
        deny_read: Vec::new(),
        approvals: super::Approvals::All,
    };
    let options = crate::machine::Options {
        session_id: "s1".to_string(),
        task: "t".to_string(),
        max_turns: None,
        skip_prompts: false,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let summary = runtime.block_on(super::run(&program, options, &models, &env, &mut |_, _| {}));
    assert_eq!(summary.outcome, crate::event::Outcome::Error);
    assert_eq!(summary.turns, 0);
    let reason = summary.reason.unwrap_or_default();
    assert!(
        reason.contains("Security.FileSystemSandboxPath: gone"),
        "{reason}"
    );
    assert!(reason.contains("does not exist"), "{reason}");
    assert_eq!(models.0.load(std::sync::atomic::Ordering::Relaxed), 0);
}
