//! Attacks on the permission decision: near-miss tool names under `locked-down`, policies
//! compiled from real configs, and `..` and symlinks through `Security.ChangeEnvelope` globs.

use crate::history::{Denial, DenialKind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use fuseraft_compiler::ir::Program;
use fuseraft_compiler::source::MemoryFiles;
use serde_json::json;

use super::*;
use crate::tools::{execute, ToolContext};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A canonical temporary directory, removed on drop.
struct Temp(PathBuf);

impl Temp {
    fn new(name: &str) -> Temp {
        let dir = std::env::temp_dir().join(format!(
            "fuseraft-permissions-{name}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Temp(std::fs::canonicalize(&dir).unwrap())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A program compiled from a config with one agent `Reader` and this `Security:` block
/// (YAML lines indented under it) and agent fields.
fn program(agent: &str, security: &str) -> Program {
    let text = format!(
        "Orchestration:\n  Agents:\n    - Name: Reader\n      Instructions: Read.\n{agent}  Security:\n{security}"
    );
    let compiled = fuseraft_compiler::compile(
        Path::new("c.yaml"),
        &MemoryFiles::new().with("c.yaml", text),
    );
    let errors: Vec<_> = compiled.diagnostics.iter().map(|d| &d.message).collect();
    compiled
        .program
        .unwrap_or_else(|| panic!("the config compiles: {errors:?}"))
}

fn call(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: "c".into(),
        name: name.into(),
        args,
        result: None,
        ok: false,
        denied: None,
    }
}

fn decide_for(program: &Program, call: &ToolCall, root: &Path) -> Decision {
    decide(
        call,
        program.agents.first(),
        program,
        root,
        &Catalog::default(),
    )
}

#[test]
fn near_miss_names_never_write_for_a_read_only_locked_down_agent() {
    let root = Temp::new("near-miss");
    let program = program(
        "      Plugins: [FileSystem, Shell]\n      Capabilities: { FileSystem: [read] }\n",
        "    Permissions:\n      Preset: locked-down\n",
    );
    let args = json!({"path": "a.txt", "content": "pwned"});
    for name in [
        "write_file",
        "write_file_x",
        "my_write_file",
        "FileSystem-write_filex",
        "read_file_then_write_file",
        "WRITE_FILE",
        "Shell-write_file",
        "FileSystem-patch_file",
        "filesystem.delete_file",
        "Changes-read_file",
    ] {
        match decide_for(&program, &call(name, args.clone()), &root.0) {
            Decision::Block(Denial { text: reason, .. }) => {
                assert!(reason.starts_with("[DENIED: "), "{name}: {reason}");
                assert!(
                    reason.contains("`read_file`"),
                    "{name} names the offered tools: {reason}"
                );
            }
            other => panic!("{name} was not refused: {other:?}"),
        }
    }
    assert_eq!(
        decide_for(
            &program,
            &call("FileSystem-read_file", json!({"path": "a.txt"})),
            &root.0
        ),
        Decision::Allow(ToolRef::Builtin(Tool::ReadFile))
    );
    // Shell is offered, but `locked-down` blocks running it.
    assert!(matches!(
        decide_for(&program, &call("shell_run", json!({"command": "ls"})), &root.0),
        Decision::Block(Denial { text: reason, .. }) if reason.contains("command_execution")
    ));
}

#[tokio::test]
async fn an_unknown_name_runs_nothing_even_without_a_policy() {
    let root = Temp::new("unknown");
    let ctx = ToolContext::new(&root.0, "s1", "Reader", 1).unwrap();
    for name in ["my_write_file", "write_file_x", "Shell-write_file"] {
        let mut call = call(name, json!({"path": "a.txt", "content": "x"}));
        execute(&mut call, &ctx).await;
        assert!(!call.ok, "{name}");
        assert!(
            call.result
                .as_deref()
                .unwrap_or_default()
                .starts_with("[DENIED: unknown tool]"),
            "{name}: {:?}",
            call.result
        );
        assert!(!root.0.join("a.txt").exists(), "{name} wrote a file");
    }
}

#[test]
fn presets_and_overrides() {
    let root = Temp::new("presets");
    let shell = call("shell_run", json!({"command": "cargo test"}));
    let commit = call("shell_run", json!({"command": "git commit -m x"}));
    let write = call("write_file", json!({"path": "a.txt"}));
    let open = program("", "    FileSystemSandboxPath: .\n");
    assert_eq!(
        decide(&shell, None, &open, &root.0, &Catalog::default()),
        Decision::Allow(ToolRef::Builtin(Tool::ShellRun))
    );
    let mixed = program(
        "",
        "    Permissions:\n      Preset: LOCKED_DOWN\n      command_execution: allow\n      git_write: require_approval\n",
    );
    assert_eq!(
        decide(&shell, None, &mixed, &root.0, &Catalog::default()),
        Decision::Allow(ToolRef::Builtin(Tool::ShellRun))
    );
    assert!(matches!(
        decide(&commit, None, &mixed, &root.0, &Catalog::default()),
        Decision::Ask(ToolRef::Builtin(Tool::ShellRun), text) if text.contains("git commit")
    ));
    assert!(matches!(
        decide(&write, None, &mixed, &root.0, &Catalog::default()),
        Decision::Block(_)
    ));
    let ask = program("", "    Permissions:\n      Preset: approval-required\n");
    assert!(matches!(
        decide(&write, None, &ask, &root.0, &Catalog::default()),
        Decision::Ask(ToolRef::Builtin(Tool::WriteFile), _)
    ));
    let deny = program("", "    Permissions:\n      file_write_delete: deny\n");
    assert!(matches!(
        decide(&write, None, &deny, &root.0, &Catalog::default()),
        Decision::Block(_)
    ));
}

#[test]
fn the_change_envelope_bounds_writes_where_they_land() {
    let root = Temp::new("envelope");
    std::fs::create_dir_all(root.0.join("docs/sub")).unwrap();
    std::fs::write(root.0.join("Cargo.toml"), "[package]").unwrap();
    std::os::unix::fs::symlink("../Cargo.toml", root.0.join("docs/x")).unwrap();
    std::os::unix::fs::symlink("..", root.0.join("docs/up")).unwrap();
    let program = program(
        "      Plugins: [FileSystem]\n",
        "    ChangeEnvelope:\n      - docs/**\n      - \"*.md\"\n",
    );
    let write = |path: &str| {
        decide_for(
            &program,
            &call("write_file", json!({"path": path})),
            &root.0,
        )
    };
    for allowed in [
        "docs/a.md",
        "./docs/sub/b.txt",
        "README.md",
        "docs/sub/../c.md",
    ] {
        assert_eq!(
            write(allowed),
            Decision::Allow(ToolRef::Builtin(Tool::WriteFile)),
            "{allowed}"
        );
    }
    for refused in [
        "docs/../Cargo.toml",
        "docs/x",
        "docs/up/Cargo.toml",
        "docs/sub/../../Cargo.toml",
        "src/main.rs",
        "docs.md/../Cargo.toml",
        "sub/README.md",
    ] {
        assert!(
            matches!(write(refused), Decision::Block(Denial { text: reason, .. }) if reason.starts_with("[DENIED: envelope]")),
            "{refused}: {:?}",
            write(refused)
        );
    }
    assert!(matches!(
        write("docs/../../outside.md"),
        Decision::Block(Denial { text: reason, .. }) if reason.starts_with("[DENIED: sandbox]")
    ));
    // Deleting the link itself stays inside `docs/`; reading is not bounded.
    assert_eq!(
        decide_for(
            &program,
            &call("delete_file", json!({"path": "docs/x"})),
            &root.0
        ),
        Decision::Allow(ToolRef::Builtin(Tool::DeleteFile))
    );
    assert_eq!(
        decide_for(
            &program,
            &call("read_file", json!({"path": "Cargo.toml"})),
            &root.0
        ),
        Decision::Allow(ToolRef::Builtin(Tool::ReadFile))
    );
}

#[test]
fn an_invalid_envelope_glob_refuses_writes_at_run_time() {
    let root = Temp::new("bad-glob");
    let mut program = program("", "    FileSystemSandboxPath: .\n");
    program.security.change_envelope = vec!["docs/[".into()];
    assert!(matches!(
        decide(&call("write_file", json!({"path": "docs/a"})), None, &program, &root.0, &Catalog::default()),
        Decision::Block(Denial { text: reason, .. }) if reason.contains("invalid")
    ));
}

#[test]
fn git_tools_are_narrowed_by_capabilities_and_judged_by_git_write() {
    let root = Temp::new("git-policy");
    let readers = program(
        "      Plugins: [Git]\n      Capabilities: { Git: [read] }\n",
        "    Permissions:\n      Preset: unrestricted\n",
    );
    let log = call("git_log", json!({}));
    assert_eq!(
        decide_for(&readers, &log, &root.0),
        Decision::Allow(ToolRef::Builtin(Tool::GitLog))
    );
    let commit = call("Git-git_commit", json!({"message": "m"}));
    match decide_for(&readers, &commit, &root.0) {
        Decision::Block(Denial { text: reason, .. }) => assert!(
            reason.starts_with("[DENIED: permission] `Git-git_commit` is not among the tools"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }

    let blocked = program(
        "      Plugins: [Git]\n",
        "    Permissions:\n      git_write: block\n",
    );
    assert_eq!(
        decide_for(&blocked, &commit, &root.0),
        Decision::Block(Denial::new(
            DenialKind::Permission,
            "git_commit {\"message\":\"m\"} is blocked by the permission policy (git_write)"
        ))
    );
    assert_eq!(
        decide_for(&blocked, &log, &root.0),
        Decision::Allow(ToolRef::Builtin(Tool::GitLog))
    );

    let asking = program(
        "      Plugins: [Git]\n",
        "    Permissions:\n      git_write: require-approval\n",
    );
    assert_eq!(
        decide_for(&asking, &commit, &root.0),
        Decision::Ask(
            ToolRef::Builtin(Tool::GitCommit),
            "git_commit {\"message\":\"m\"}".into()
        )
    );
}

#[test]
fn push_and_pull_need_network_api_as_well_as_git_write() {
    let root = Temp::new("git-network");
    let push = call("git_push", json!({"remote": "origin"}));
    let offline = program(
        "      Plugins: [Git]\n",
        "    Permissions:\n      network_api: block\n",
    );
    match decide_for(&offline, &push, &root.0) {
        Decision::Block(Denial { text: reason, .. }) => assert!(
            reason.contains("needs the network, which the permission policy blocks (network_api)"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    let pull = call("git_pull", json!({}));
    assert!(matches!(
        decide_for(&offline, &pull, &root.0),
        Decision::Block(_)
    ));
    let ask_network = program(
        "      Plugins: [Git]\n",
        "    Permissions:\n      network_api: require-approval\n",
    );
    assert!(matches!(
        decide_for(&ask_network, &push, &root.0),
        Decision::Ask(ToolRef::Builtin(Tool::GitPush), _)
    ));
    let online = program(
        "      Plugins: [Git]\n",
        "    Permissions:\n      Preset: unrestricted\n",
    );
    assert_eq!(
        decide_for(&online, &push, &root.0),
        Decision::Allow(ToolRef::Builtin(Tool::GitPush))
    );
}

#[test]
fn shell_scripts_and_jobs_are_command_execution_and_git_write_too() {
    let root = Temp::new("shell-more");
    let program = program(
        "      Plugins: [Shell]\n",
        "    Permissions:\n      command_execution: block\n      git_write: require-approval\n",
    );
    let script = call("shell_run_script", json!({"script": "echo hi\nmake"}));
    assert!(matches!(
        decide_for(&program, &script, &root.0),
        Decision::Block(Denial { text: reason, .. }) if reason.contains("run `echo hi\nmake`") && reason.contains("(command_execution)")
    ));
    // A script that commits is a command still: `command_execution` refuses it, whatever
    // `git_write` says.
    let committing = call(
        "shell_run_script",
        json!({"script": "echo hi\ngit commit -am x"}),
    );
    assert!(matches!(
        decide_for(&program, &committing, &root.0),
        Decision::Block(Denial { text: reason, .. }) if reason.contains("(command_execution)")
    ));
    // Commands allowed, git writes asked: the commit is asked.
    let asking = self::program(
        "      Plugins: [Shell]\n",
        "    Permissions:\n      command_execution: allow\n      git_write: require-approval\n",
    );
    assert!(matches!(
        decide_for(&asking, &committing, &root.0),
        Decision::Ask(ToolRef::Builtin(Tool::ShellRunScript), _)
    ));
    let job = call("shell_run_background", json!({"command": "npm run dev"}));
    assert!(matches!(
        decide_for(&program, &job, &root.0),
        Decision::Block(_)
    ));
    for read in [
        "shell_get_job_status",
        "shell_get_env",
        "shell_which",
        "shell_kill_job",
    ] {
        let tool = Tool::resolve(read).unwrap();
        assert_eq!(
            decide_for(&program, &call(read, json!({})), &root.0),
            Decision::Allow(ToolRef::Builtin(tool))
        );
    }
}

#[test]
fn search_capability_tags_narrow_the_new_tools() {
    let root = Temp::new("search-caps");
    let program = program(
        "      Plugins: [FileSystem, Search]\n      Capabilities: { FileSystem: [read], Search: [read] }\n",
        "    FileSystemSandboxPath: .\n",
    );
    for (name, args) in [
        ("search_content", json!({"query": "x"})),
        ("Search-search_files", json!({"pattern": "*.rs"})),
        ("grep_file", json!({"path": "a", "pattern": "x"})),
        ("get_file_info", json!({"path": "a"})),
        ("list_directory", json!({})),
    ] {
        assert!(
            matches!(
                decide_for(&program, &call(name, args), &root.0),
                Decision::Allow(_)
            ),
            "{name} is a read"
        );
    }
    for (name, args) in [
        ("copy_file", json!({"source": "a", "destination": "b"})),
        ("move_file", json!({"source": "a", "destination": "b"})),
        ("create_directory", json!({"path": "d"})),
        ("delete_directory", json!({"path": "d"})),
    ] {
        match decide_for(&program, &call(name, args), &root.0) {
            Decision::Block(Denial { text: reason, .. }) => assert!(
                reason.starts_with("[DENIED: permission]") && reason.contains("`search_content`"),
                "{name}: {reason}"
            ),
            other => panic!("{name} was not refused: {other:?}"),
        }
    }
    // Without `Search` in `Plugins`, its tools are not offered at all.
    let no_search = program_without_search();
    assert!(matches!(
        decide_for(&no_search, &call("search_content", json!({"query": "x"})), &root.0),
        Decision::Block(Denial { text: reason, .. }) if reason.starts_with("[DENIED: permission]")
    ));
}

fn program_without_search() -> Program {
    program(
        "      Plugins: [FileSystem]\n",
        "    FileSystemSandboxPath: .\n",
    )
}

#[test]
fn the_policy_decides_the_new_writes_and_names_both_ends() {
    let root = Temp::new("policy-new");
    let locked = program(
        "      Plugins: [FileSystem]\n",
        "    Permissions:\n      Preset: locked-down\n",
    );
    for (name, args) in [
        ("create_directory", json!({"path": "d"})),
        ("delete_directory", json!({"path": "d", "recursive": true})),
        ("copy_file", json!({"source": "a", "destination": "b"})),
        ("move_file", json!({"source": "a", "destination": "b"})),
    ] {
        assert!(
            matches!(
                decide_for(&locked, &call(name, args), &root.0),
                Decision::Block(Denial { text: reason, .. }) if reason.contains("file_write_delete")
            ),
            "{name}"
        );
    }
    assert_eq!(
        decide_for(
            &locked,
            &call("grep_file", json!({"path": "a", "pattern": "x"})),
            &root.0
        ),
        Decision::Allow(ToolRef::Builtin(Tool::GrepFile))
    );
    let ask = program(
        "      Plugins: [FileSystem]\n",
        "    Permissions:\n      Preset: approval-required\n",
    );
    assert!(matches!(
        decide_for(&ask, &call("move_file", json!({"source": "a.txt", "destination": "b.txt"})), &root.0),
        Decision::Ask(ToolRef::Builtin(Tool::MoveFile), text) if text == "move_file `a.txt` to `b.txt`"
    ));
}

#[test]
fn the_change_envelope_bounds_both_ends_and_every_entry_of_a_tree() {
    let root = Temp::new("envelope-trees");
    for file in [
        "docs/a.md",
        "docs/keep/b.md",
        "mixed/c.md",
        "mixed/d.rs",
        "src/main.rs",
        "gen/x.txt",
        "docs/tree/c.txt",
    ] {
        let path = root.0.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }
    std::os::unix::fs::symlink("../src", root.0.join("docs/src-link")).unwrap();
    let program = program(
        "      Plugins: [FileSystem]\n",
        "    ChangeEnvelope:\n      - docs/**\n      - \"**/*.md\"\n      - \"gen*\"\n",
    );
    let decide_call =
        |name: &str, args: serde_json::Value| decide_for(&program, &call(name, args), &root.0);
    let refused = |decision: Decision| matches!(decision, Decision::Block(Denial { text: reason, .. }) if reason.starts_with("[DENIED: envelope]"));
    // Copy: only the destination is written.
    assert_eq!(
        decide_call(
            "copy_file",
            json!({"source": "src/main.rs", "destination": "docs/main.rs"})
        ),
        Decision::Allow(ToolRef::Builtin(Tool::CopyFile))
    );
    assert!(refused(decide_call(
        "copy_file",
        json!({"source": "docs/a.md", "destination": "src/a.rs"})
    )));
    // Move: the source disappears, so it must be inside too.
    assert!(refused(decide_call(
        "move_file",
        json!({"source": "src/main.rs", "destination": "docs/main.rs"})
    )));
    assert_eq!(
        decide_call(
            "move_file",
            json!({"source": "docs/a.md", "destination": "notes.md"})
        ),
        Decision::Allow(ToolRef::Builtin(Tool::MoveFile))
    );
    // A directory: every entry inside, before and after the move.
    assert_eq!(
        decide_call(
            "delete_directory",
            json!({"path": "docs/keep", "recursive": true})
        ),
        Decision::Allow(ToolRef::Builtin(Tool::DeleteDirectory))
    );
    assert!(refused(decide_call(
        "delete_directory",
        json!({"path": "mixed", "recursive": true})
    )));
    // `gen` matches `gen*`, but `gen/x.txt` inside it matches nothing.
    assert!(matches!(
        decide_call("delete_directory", json!({"path": "gen", "recursive": true})),
        Decision::Block(Denial { text: reason, .. }) if reason.contains("would change `gen/x.txt`")
    ));
    assert!(refused(decide_call(
        "move_file",
        json!({"source": "docs/keep", "destination": "keep"})
    )));
    // Where a moved tree lands counts too: `gen2` matches `gen*`, `gen2/c.txt` nothing.
    assert!(matches!(
        decide_call("move_file", json!({"source": "docs/tree", "destination": "gen2"})),
        Decision::Block(Denial { text: reason, .. }) if reason.contains("would change `gen2/c.txt`")
    ));
    // A symlink to a directory outside is removed itself: its target's entries do not count.
    assert_eq!(
        decide_call("delete_directory", json!({"path": "docs/src-link"})),
        Decision::Allow(ToolRef::Builtin(Tool::DeleteDirectory))
    );
    assert_eq!(
        decide_call("create_directory", json!({"path": "docs/new/deeper"})),
        Decision::Allow(ToolRef::Builtin(Tool::CreateDirectory))
    );
    assert!(refused(decide_call(
        "create_directory",
        json!({"path": "src/new"})
    )));
}
/// A program with MCP servers `docs` and `other`; agent `Reader` lists only `docs`.
fn mcp_program(preset: &str) -> Program {
    let text = format!(
        "Orchestration:\n  McpServers:\n    - {{ Name: docs, Command: docs-server }}\n    - {{ Name: other, Command: other-server }}\n  Agents:\n    - Name: Reader\n      Instructions: Read.\n      Plugins: [docs]\n    - Name: Writer\n      Instructions: Write.\n      Plugins: [other]\n  Security:\n    Permissions: {{ Preset: {preset} }}\n"
    );
    let compiled = fuseraft_compiler::compile(
        Path::new("c.yaml"),
        &MemoryFiles::new().with("c.yaml", text),
    );
    compiled.program.expect("the config compiles")
}

fn mcp_catalog() -> Catalog {
    let tool = |name: &str| crate::mcp::McpTool {
        name: name.into(),
        description: String::new(),
        input_schema: json!({"type": "object"}),
    };
    Catalog {
        servers: vec![
            Some(vec![tool("search"), tool("Fetch")]),
            Some(vec![tool("search")]),
        ],
    }
}

#[test]
fn mcp_tools_resolve_exactly_and_fall_in_the_mcp_category() {
    let root = Temp::new("mcp");
    let catalog = mcp_catalog();
    let docs_search = ToolRef::Mcp(McpToolRef {
        server: fuseraft_compiler::ir::McpServerId(0),
        tool: "search".into(),
    });
    let open = mcp_program("unrestricted");
    let reader = open.agents.first();
    let decide_open = |name: &str| {
        decide(
            &call(name, json!({"q": "x"})),
            reader,
            &open,
            &root.0,
            &catalog,
        )
    };
    assert_eq!(
        decide_open("docs-search"),
        Decision::Allow(docs_search.clone())
    );
    assert_eq!(
        decide_open("DOCS-search"),
        Decision::Allow(docs_search.clone())
    );
    // The tool part is exact; other separators, bare names, unlisted tools and servers the
    // agent does not list are no tools.
    for name in [
        "docs-Search",
        "docs_search",
        "docs.search",
        "search",
        "docs-nope",
        "other-search",
        "docs-fetch",
    ] {
        match decide_open(name) {
            Decision::Block(Denial { text: reason, .. }) => assert!(
                reason.starts_with("[DENIED: unknown tool]")
                    && reason.contains("`docs-search`, `docs-Fetch`"),
                "{name}: {reason}"
            ),
            decision => panic!("{name} resolved: {decision:?}"),
        }
    }
    // A built-in not offered is refused as before, naming the MCP tools it may call.
    match decide_open("write_file") {
        Decision::Block(Denial { text: reason, .. }) => {
            assert!(reason.contains("`docs-search`"), "{reason}")
        }
        decision => panic!("{decision:?}"),
    }

    let asked = mcp_program("approval-required");
    match decide(
        &call("docs-search", json!({"q": "x"})),
        asked.agents.first(),
        &asked,
        &root.0,
        &catalog,
    ) {
        Decision::Ask(tool, action) => {
            assert_eq!(tool, docs_search);
            assert_eq!(
                action,
                "call `docs-search` (tool `search` of MCP server `docs`) with {\"q\":\"x\"}"
            );
        }
        decision => panic!("{decision:?}"),
    }
    let locked = mcp_program("locked-down");
    assert!(matches!(
        decide(&call("docs-search", json!({})), locked.agents.first(), &locked, &root.0, &catalog),
        Decision::Block(Denial { text: reason, .. }) if reason.ends_with("is blocked by the permission policy (mcp)")
    ));
    // A server that did not start offers nothing.
    assert!(matches!(
        decide(&call("docs-search", json!({})), reader, &open, &root.0, &Catalog::default()),
        Decision::Block(Denial { text: reason, .. }) if reason.starts_with("[DENIED: unknown tool]")
    ));
}

#[test]
fn a_name_two_nested_servers_would_share_is_neither_offered_nor_run() {
    let root = Temp::new("mcp-nested");
    let text = "Orchestration:\n  McpServers:\n    - { Name: a, Command: a }\n    - { Name: a-b, Command: ab }\n  Agents:\n    - Name: Reader\n      Instructions: Read.\n      Plugins: [a, a-b]\n";
    let program = fuseraft_compiler::compile(
        Path::new("c.yaml"),
        &MemoryFiles::new().with("c.yaml", text.to_string()),
    )
    .program
    .expect("the config compiles");
    let tool = |name: &str| crate::mcp::McpTool {
        name: name.into(),
        description: String::new(),
        input_schema: json!({"type": "object"}),
    };
    let catalog = Catalog {
        servers: vec![Some(vec![tool("b-c"), tool("x")]), Some(vec![tool("c")])],
    };
    let servers = [
        fuseraft_compiler::ir::McpServerId(0),
        fuseraft_compiler::ir::McpServerId(1),
    ];
    assert_eq!(
        crate::mcp::offered_names(&program, &servers, &catalog),
        ["a-x"]
    );
    let reader = program.agents.first();
    assert!(matches!(
        decide(&call("a-b-c", json!({})), reader, &program, &root.0, &catalog),
        Decision::Block(Denial { text: reason, .. }) if reason.starts_with("[DENIED: unknown tool]")
    ));
    assert!(matches!(
        decide(&call("a-x", json!({})), reader, &program, &root.0, &catalog),
        Decision::Allow(ToolRef::Mcp(_))
    ));
}

#[test]
fn probes_are_command_execution_and_the_new_tools_narrow_by_their_tags() {
    let root = Temp::new("probe-perms");
    let blocked = program(
        "      Plugins: [Probe, Shell, FileSystem]\n",
        "    Permissions:\n      command_execution: block\n      git_write: require-approval\n",
    );
    let probe = call(
        "probe_code",
        json!({"language": "python", "code": "print(1)"}),
    );
    assert!(matches!(
        decide_for(&blocked, &probe, &root.0),
        Decision::Block(Denial { text: reason, .. }) if reason.contains("run `print(1)`") && reason.contains("(command_execution)")
    ));
    // Either of two commands, or the setup, that writes to git makes the probe a git write
    // as well: asked where commands are allowed, refused where they are blocked.
    let asking = program(
        "      Plugins: [Probe, Shell, FileSystem]\n",
        "    Permissions:\n      command_execution: allow\n      git_write: require-approval\n",
    );
    let compare = call(
        "probe_compare_outputs",
        json!({"commandA": "ls", "commandB": "git commit -am x"}),
    );
    assert!(matches!(
        decide_for(&asking, &compare, &root.0),
        Decision::Ask(ToolRef::Builtin(Tool::ProbeCompareOutputs), _)
    ));
    assert!(matches!(
        decide_for(&blocked, &compare, &root.0),
        Decision::Block(_)
    ));
    let setup = call(
        "probe_run_hypothesis",
        json!({"hypothesis": "h", "command": "ls", "expectedObservation": "x", "setupCommand": "git reset --hard"}),
    );
    assert!(matches!(
        decide_for(&asking, &setup, &root.0),
        Decision::Ask(ToolRef::Builtin(Tool::ProbeRunHypothesis), _)
    ));
    // Setting a variable, reading the directory and stat-ing run nothing.
    for (name, args) in [
        ("shell_set_env", json!({"name": "A", "value": "1"})),
        ("shell_get_working_directory", json!({})),
        ("stat_file", json!({"path": "a"})),
        ("path_exists", json!({"path": "a"})),
    ] {
        assert!(
            matches!(
                decide_for(&blocked, &call(name, args), &root.0),
                Decision::Allow(_)
            ),
            "{name}"
        );
    }
    // Read-only tags refuse the writers and runners, and allow the readers.
    let read_only = program(
        "      Plugins: [Probe, Shell, FileSystem]\n      Capabilities: { Probe: [run], Shell: [read], FileSystem: [read] }\n",
        "    Permissions:\n      Preset: unrestricted\n",
    );
    for name in ["shell_set_env", "save_file_summary"] {
        assert!(
            matches!(
                decide_for(&read_only, &call(name, json!({})), &root.0),
                Decision::Block(_)
            ),
            "{name}"
        );
    }
    let run_only = program(
        "      Plugins: [Shell, Probe]\n      Capabilities: { Shell: [run], Probe: [run] }\n",
        "    Permissions:\n      Preset: unrestricted\n",
    );
    let cwd = call("shell_get_working_directory", json!({}));
    assert!(matches!(
        decide_for(&run_only, &cwd, &root.0),
        Decision::Block(_)
    ));
    assert!(matches!(
        decide_for(&run_only, &probe, &root.0),
        Decision::Allow(ToolRef::Builtin(Tool::ProbeCode))
    ));
}
