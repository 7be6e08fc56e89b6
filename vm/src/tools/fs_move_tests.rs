//! `copy_file`, `move_file` and `delete_directory` on real files: what each does and
//! records in the change log, and the attacks they must refuse (symlinks out of the root or
//! inside a tree, `.git/` and fuseraft's state, credential files carried along).

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
async fn copy_and_move_act_inside_the_sandbox_and_are_recorded() {
    let (root, outside, ctx) = setup("copy-move");
    root.write("run.sh", "echo hi\n");
    std::fs::set_permissions(
        root.path("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let copied = call(
        &ctx,
        "copy_file",
        json!({"source": "run.sh", "destination": "bin/run.sh"}),
    )
    .await;
    assert_eq!(ok(&copied), "Copied run.sh to bin/run.sh (8 bytes)");
    assert_eq!(root.read("bin/run.sh"), "echo hi\n");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(root.path("bin/run.sh"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o755);
    failed(
        &call(
            &ctx,
            "copy_file",
            json!({"source": "run.sh", "destination": "bin/run.sh"}),
        )
        .await,
        "[ERROR] copy_file: `bin/run.sh` already exists",
    );
    root.write("other.sh", "echo other\n");
    ok(&call(
        &ctx,
        "copy_file",
        json!({"source": "other.sh", "destination": "bin/run.sh", "overwrite": true}),
    )
    .await);
    assert_eq!(root.read("bin/run.sh"), "echo other\n");

    let moved = call(
        &ctx,
        "move_file",
        json!({"source": "run.sh", "destination": "scripts/start.sh"}),
    )
    .await;
    assert_eq!(ok(&moved), "Moved run.sh to scripts/start.sh");
    assert!(!root.path("run.sh").exists());
    root.write("tree/a.txt", "a");
    root.write("tree/sub/b.txt", "b");
    ok(&call(
        &ctx,
        "move_file",
        json!({"source": "tree", "destination": "moved/tree"}),
    )
    .await);
    assert_eq!(root.read("moved/tree/sub/b.txt"), "b");
    failed(
        &call(
            &ctx,
            "move_file",
            json!({"source": "moved", "destination": "moved/tree/inner"}),
        )
        .await,
        "[ERROR] move_file: cannot move `moved` into itself",
    );
    failed(
        &call(
            &ctx,
            "move_file",
            json!({"source": "other.sh", "destination": "bin/run.sh"}),
        )
        .await,
        "[ERROR] move_file: `bin/run.sh` already exists",
    );

    let (written, deleted) = recorded(&ctx);
    assert_eq!(
        written,
        [
            "bin/run.sh",
            "moved/tree/a.txt",
            "moved/tree/sub/b.txt",
            "scripts/start.sh"
        ]
    );
    assert_eq!(deleted, ["run.sh", "tree/a.txt", "tree/sub/b.txt"]);

    // Out of the sandbox, into git's state, credentials: refused, nothing changed.
    outside.write("target.txt", "outside");
    std::os::unix::fs::symlink(&outside.0, root.path("out")).unwrap();
    failed(
        &call(
            &ctx,
            "copy_file",
            json!({"source": "out/target.txt", "destination": "stolen.txt"}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    failed(
        &call(
            &ctx,
            "copy_file",
            json!({"source": "other.sh", "destination": "out/planted.sh"}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    failed(
        &call(
            &ctx,
            "move_file",
            json!({"source": "other.sh", "destination": "out/planted.sh"}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    failed(
        &call(
            &ctx,
            "move_file",
            json!({"source": "other.sh", "destination": ".git/hooks/pre-commit"}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    root.write(".env", "TOKEN=1");
    failed(
        &call(
            &ctx,
            "copy_file",
            json!({"source": ".env", "destination": "env.txt"}),
        )
        .await,
        "[DENIED: credentials]",
    );
    root.write("keys/.ssh/id_rsa", "key");
    failed(
        &call(
            &ctx,
            "move_file",
            json!({"source": "keys", "destination": "public"}),
        )
        .await,
        "[DENIED: credentials]",
    );
    // A tree whose entries would land on fuseraft's state or as credential files.
    root.write("staged/sessions/s1.json", "{\"forged\": true}");
    failed(
        &call(
            &ctx,
            "move_file",
            json!({"source": "staged", "destination": ".fuseraft"}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    root.write("creds/credentials", "[default]");
    failed(
        &call(
            &ctx,
            "move_file",
            json!({"source": "creds", "destination": ".aws"}),
        )
        .await,
        "[DENIED: credentials]",
    );
    assert!(!root.path(".fuseraft/sessions").exists() && !root.path(".aws").exists());
    assert!(!outside.path("planted.sh").exists() && !root.path("stolen.txt").exists());
    // A symlink is moved itself: the outside file stays where it is.
    ok(&call(
        &ctx,
        "move_file",
        json!({"source": "out", "destination": "renamed-link"}),
    )
    .await);
    assert_eq!(outside.read("target.txt"), "outside");
    assert!(std::fs::symlink_metadata(root.path("renamed-link"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[tokio::test]
async fn delete_directory_never_follows_a_symlink_and_never_takes_protected_state() {
    let (root, outside, ctx) = setup("delete-dir");
    outside.write("keep/precious.txt", "precious");
    root.write("empty/.keep", "");
    std::fs::remove_file(root.path("empty/.keep")).unwrap();
    root.write("full/a.txt", "a");
    root.write("full/sub/b.txt", "b");
    // A symlink inside the tree points outside: it is unlinked, its target untouched.
    std::os::unix::fs::symlink(outside.path("keep"), root.path("full/sub/escape")).unwrap();
    std::os::unix::fs::symlink(outside.path("keep"), root.path("link-to-outside")).unwrap();

    assert_eq!(
        ok(&call(&ctx, "delete_directory", json!({"path": "empty"})).await),
        "Deleted directory empty (0 file(s) removed)"
    );
    failed(
        &call(&ctx, "delete_directory", json!({"path": "full"})).await,
        "[ERROR] delete_directory: `full` is not empty (4 entries)",
    );
    let removed = call(
        &ctx,
        "delete_directory",
        json!({"path": "full", "recursive": true}),
    )
    .await;
    assert_eq!(ok(&removed), "Deleted directory full (3 file(s) removed)");
    assert!(!root.path("full").exists());
    let link = call(
        &ctx,
        "delete_directory",
        json!({"path": "link-to-outside", "recursive": true}),
    )
    .await;
    assert_eq!(
        ok(&link),
        "Removed the symlink link-to-outside (its target is untouched)"
    );
    assert_eq!(outside.read("keep/precious.txt"), "precious");
    let (_, deleted) = recorded(&ctx);
    assert_eq!(
        deleted,
        [
            "full/a.txt",
            "full/sub/b.txt",
            "full/sub/escape",
            "link-to-outside"
        ]
    );

    root.write("repo/.git/HEAD", "ref: refs/heads/main");
    root.write("repo/src.rs", "");
    failed(
        &call(
            &ctx,
            "delete_directory",
            json!({"path": "repo", "recursive": true}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    failed(
        &call(
            &ctx,
            "delete_directory",
            json!({"path": "repo/.git", "recursive": true}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    root.write(".fuseraft/sessions/s1.json", "{}");
    failed(
        &call(
            &ctx,
            "delete_directory",
            json!({"path": ".fuseraft", "recursive": true}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    failed(
        &call(
            &ctx,
            "delete_directory",
            json!({"path": ".", "recursive": true}),
        )
        .await,
        "[DENIED: sandbox] `.` is the work directory itself",
    );
    failed(
        &call(&ctx, "delete_directory", json!({"path": "repo/src.rs"})).await,
        "[ERROR] delete_directory: `repo/src.rs` is a file",
    );
    failed(
        &call(
            &ctx,
            "delete_directory",
            json!({"path": "../", "recursive": true}),
        )
        .await,
        "[DENIED: sandbox]",
    );
    assert!(
        root.path("repo/.git/HEAD").exists() && root.path(".fuseraft/sessions/s1.json").exists()
    );
}
