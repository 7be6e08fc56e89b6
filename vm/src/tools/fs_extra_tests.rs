//! `grep_file`, `get_file_info`, `get_file_summary`, `list_directory` and
//! `create_directory` on real files: what each returns, and the places `create_directory`
//! must refuse (`.git/`, fuseraft's state, a symlink out of the root).

use serde_json::json;

use super::super::tests::Temp;
use super::super::ToolContext;
use crate::changes::ChangeLog;
use crate::tools::testkit::{call, failed, ok};

fn setup(name: &str) -> (Temp, Temp, ToolContext) {
    let root = Temp::new(name);
    let outside = Temp::new(&format!("{name}-outside"));
    let ctx = ToolContext::new(&root.0, "s1", "Developer", 4).unwrap();
    (root, outside, ctx)
}

fn recorded(ctx: &ToolContext) -> (Vec<String>, Vec<String>) {
    let log = ChangeLog::load(&ctx.change_log).unwrap();
    let mut written = Vec::new();
    let mut deleted = Vec::new();
    for entry in log.entries {
        written.extend(entry.files_written);
        deleted.extend(entry.files_deleted);
    }
    written.sort();
    deleted.sort();
    (written, deleted)
}

#[tokio::test]
async fn grep_file_summary_and_info_read_one_file() {
    let (root, _outside, ctx) = setup("inspect");
    let lines: Vec<String> = (1..=40).map(|n| format!("line {n}")).collect();
    let content = lines.join("\n") + "\nTODO: the end\n";
    root.write("src/long.txt", &content);
    let grep = call(
        &ctx,
        "grep_file",
        json!({"path": "src/long.txt", "pattern": "todo|line 1[01]$", "contextLines": 1}),
    )
    .await;
    insta::assert_snapshot!("grep_file_context", ok(&grep));
    let none = call(
        &ctx,
        "grep_file",
        json!({"path": "src/long.txt", "pattern": "absent"}),
    )
    .await;
    assert_eq!(ok(&none), "No matches for `absent` in src/long.txt");
    let bad = call(
        &ctx,
        "grep_file",
        json!({"path": "src/long.txt", "pattern": "(\\w{100}){100}"}),
    )
    .await;
    failed(&bad, "[ERROR] grep_file: invalid regex");

    let summary = call(&ctx, "get_file_summary", json!({"path": "src/long.txt"})).await;
    let summary = ok(&summary);
    assert!(summary.starts_with("line 1\nline 2\n"), "{summary}");
    assert!(
        summary.contains("line 30\n\n[preview of src/long.txt: the first 30 of 41 lines"),
        "{summary}"
    );
    std::fs::write(root.path("blob"), b"\0\x01").unwrap();
    failed(
        &call(&ctx, "get_file_summary", json!({"path": "blob"})).await,
        "[ERROR] get_file_summary: `blob` looks binary",
    );

    std::fs::set_permissions(
        root.path("src/long.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o640),
    )
    .unwrap();
    let info = call(
        &ctx,
        "get_file_info",
        json!({"path": "src/../src/long.txt"}),
    )
    .await;
    let info = ok(&info);
    let head = format!(
        "Path: src/long.txt\nType: file\nSize: {} bytes\nModified: 20",
        content.len()
    );
    assert!(info.starts_with(&head), "{info}");
    assert!(info.ends_with("Permissions: rw-r----- (640)"), "{info}");
    let dir = call(&ctx, "get_file_info", json!({"path": "src"})).await;
    assert!(
        ok(&dir).starts_with("Path: src\nType: directory\nModified: "),
        "{dir:?}"
    );
    failed(
        &call(&ctx, "get_file_info", json!({"path": "nope"})).await,
        "[ERROR] get_file_info: `nope` does not exist",
    );
}

#[tokio::test]
async fn list_directory_and_create_directory() {
    let (root, outside, ctx) = setup("dirs");
    root.write("b.rs", "");
    root.write("a.md", "");
    root.write("zeta/x", "");
    root.write("alpha/y", "");
    let all = call(&ctx, "list_directory", json!({})).await;
    assert_eq!(ok(&all), "alpha/\nzeta/\na.md\nb.rs");
    let rust = call(
        &ctx,
        "list_directory",
        json!({"directory": ".", "pattern": "*.rs"}),
    )
    .await;
    assert_eq!(ok(&rust), "b.rs");
    failed(
        &call(&ctx, "list_directory", json!({"directory": "b.rs"})).await,
        "[ERROR] list_directory: `b.rs` is a file",
    );

    let made = call(
        &ctx,
        "create_directory",
        json!({"path": "new/deeper/deepest"}),
    )
    .await;
    assert_eq!(ok(&made), "Created directory new/deeper/deepest");
    assert!(root.path("new/deeper/deepest").is_dir());
    let again = call(
        &ctx,
        "create_directory",
        json!({"path": "new/deeper/deepest"}),
    )
    .await;
    assert_eq!(ok(&again), "Directory new/deeper/deepest already exists");
    failed(
        &call(&ctx, "create_directory", json!({"path": "b.rs"})).await,
        "[ERROR] create_directory: `b.rs` exists and is a regular file",
    );
    failed(
        &call(&ctx, "create_directory", json!({"path": ".git/hooks"})).await,
        "[DENIED: sandbox]",
    );
    failed(
        &call(
            &ctx,
            "create_directory",
            json!({"path": ".fuseraft/sessions/x"}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    std::os::unix::fs::symlink(&outside.0, root.path("out")).unwrap();
    failed(
        &call(&ctx, "create_directory", json!({"path": "out/planted"})).await,
        "[DENIED: sandbox] path escapes",
    );
    assert!(!outside.path("planted").exists());
    // Reads and directories change no file: nothing is recorded.
    assert_eq!(recorded(&ctx), (Vec::new(), Vec::new()));
}

#[tokio::test]
async fn set_permissions_refuses_a_file_hard_linked_from_outside() {
    use std::os::unix::fs::PermissionsExt;
    let (root, outside, ctx) = setup("chmod-hardlink");
    outside.write("store/pkg.txt", "shared\n");
    let store = outside.path("store/pkg.txt");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::hard_link(&store, root.path("store-link.txt")).unwrap();
    let refused = call(
        &ctx,
        "set_permissions",
        json!({"path": "store-link.txt", "mode": "777"}),
    )
    .await;
    failed(
        &refused,
        "[DENIED: sandbox] `store-link.txt` has 2 hard links",
    );
    let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the outside file's mode changed");
}

#[tokio::test]
async fn set_permissions_changes_mode_bits_only_on_files_and_directories_inside() {
    use std::os::unix::fs::PermissionsExt;
    let (root, outside, ctx) = setup("chmod");
    root.write("run.sh", "echo hi\n");
    root.write(".git/config", "[core]\n");
    outside.write("victim.sh", "echo outside\n");
    std::os::unix::fs::symlink(outside.path("victim.sh"), root.path("victim-link")).unwrap();
    let mode = |rel: &str| {
        std::fs::metadata(root.path(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };

    let made = call(
        &ctx,
        "set_permissions",
        json!({"path": "run.sh", "mode": "755"}),
    )
    .await;
    assert_eq!(ok(&made), "Permissions of run.sh set to rwxr-xr-x (755)");
    assert_eq!(mode("run.sh"), 0o755);
    ok(&call(
        &ctx,
        "FileSystem-set_permissions",
        json!({"path": "run.sh", "mode": 640}),
    )
    .await);
    assert_eq!(mode("run.sh"), 0o640);
    // `.git/..` is the work directory itself.
    failed(
        &call(
            &ctx,
            "set_permissions",
            json!({"path": ".git/..", "mode": "0750"}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    root.write("bin/tool", "");
    ok(&call(
        &ctx,
        "set_permissions",
        json!({"path": "bin", "mode": "0750"}),
    )
    .await);
    assert_eq!(mode("bin"), 0o750);
    for bad in [
        json!("4755"),
        json!("2755"),
        json!("75"),
        json!("abc"),
        json!("0o755"),
        json!(true),
    ] {
        let refused = call(
            &ctx,
            "set_permissions",
            json!({"path": "run.sh", "mode": bad}),
        )
        .await;
        failed(&refused, "[ERROR] set_permissions:");
    }
    assert_eq!(mode("run.sh"), 0o640);
    failed(
        &call(
            &ctx,
            "set_permissions",
            json!({"path": ".git/config", "mode": "777"}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    failed(
        &call(
            &ctx,
            "set_permissions",
            json!({"path": "victim-link", "mode": "777"}),
        )
        .await,
        "[DENIED: sandbox] path escapes",
    );
    let before = std::fs::metadata(outside.path("victim.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(before & 0o777, 0o777);
    failed(
        &call(&ctx, "set_permissions", json!({"path": ".", "mode": "700"})).await,
        "[DENIED: sandbox]",
    );
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.path("pipe"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    failed(
        &call(
            &ctx,
            "set_permissions",
            json!({"path": "pipe", "mode": "644"}),
        )
        .await,
        "[ERROR] set_permissions: `pipe` is a FIFO",
    );
    failed(
        &call(
            &ctx,
            "set_permissions",
            json!({"path": "nope", "mode": "644"}),
        )
        .await,
        "[ERROR] set_permissions: `nope` does not exist",
    );
}
