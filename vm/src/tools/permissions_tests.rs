//! Attacks on the permission decision: near-miss tool names under `locked-down`, policies
//! compiled from real configs, and `..` and symlinks through `Security.ChangeEnvelope` globs.

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
            Decision::Block(reason) => {
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
        Decision::Block(reason) if reason.contains("command_execution")
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
            matches!(write(refused), Decision::Block(reason) if reason.starts_with("[DENIED: envelope]")),
            "{refused}: {:?}",
            write(refused)
        );
    }
    assert!(matches!(
        write("docs/../../outside.md"),
        Decision::Block(reason) if reason.starts_with("[DENIED: sandbox]")
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
    program
        .settings
        .push(("Security.ChangeEnvelope".into(), "docs/[".into()));
    assert!(matches!(
        decide(&call("write_file", json!({"path": "docs/a"})), None, &program, &root.0, &Catalog::default()),
        Decision::Block(reason) if reason.contains("invalid")
    ));
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
            Decision::Block(reason) => assert!(
                reason.starts_with("[DENIED: unknown tool]")
                    && reason.contains("`docs-search`, `docs-Fetch`"),
                "{name}: {reason}"
            ),
            decision => panic!("{name} resolved: {decision:?}"),
        }
    }
    // A built-in not offered is refused as before, naming the MCP tools it may call.
    match decide_open("write_file") {
        Decision::Block(reason) => assert!(reason.contains("`docs-search`"), "{reason}"),
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
        Decision::Block(reason) if reason.ends_with("is blocked by the permission policy (mcp)")
    ));
    // A server that did not start offers nothing.
    assert!(matches!(
        decide(&call("docs-search", json!({})), reader, &open, &root.0, &Catalog::default()),
        Decision::Block(reason) if reason.starts_with("[DENIED: unknown tool]")
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
        Decision::Block(reason) if reason.starts_with("[DENIED: unknown tool]")
    ));
    assert!(matches!(
        decide(&call("a-x", json!({})), reader, &program, &root.0, &catalog),
        Decision::Allow(ToolRef::Mcp(_))
    ));
}
