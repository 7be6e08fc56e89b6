//! `stat_file`, `write_file`'s `baseVersion`, `path_exists` and `save_file_summary` on real
//! files: the version counts the run's writes by fuseraft's file tools, a stale
//! `baseVersion` leaves the file untouched, and every path is confined (credentials and
//! symlinks out of the root are refused).

use serde_json::json;

use super::super::tests::Temp;
use super::super::ToolContext;
use crate::history::{DenialKind, ToolCall};
use crate::tools::testkit::{call, ok};

fn failed(call: &ToolCall) -> &str {
    assert!(!call.ok, "{call:?}");
    call.result.as_deref().unwrap_or("")
}

fn setup(name: &str) -> (Temp, ToolContext) {
    let root = Temp::new(name);
    let ctx = ToolContext::new(&root.0, "s1", "Developer", 1).unwrap();
    (root, ctx)
}

async fn version(ctx: &ToolContext, path: &str) -> String {
    let stat = call(ctx, "stat_file", json!({"path": path})).await;
    let text = ok(&stat).to_string();
    text.rsplit("version=").next().unwrap_or("").to_string()
}

#[tokio::test]
async fn stat_file_counts_every_write_of_the_file_tools() {
    let (root, ctx) = setup("stat-count");
    std::fs::write(root.0.join("a.txt"), "hello").unwrap();
    let stat = call(&ctx, "stat_file", json!({"path": "a.txt"})).await;
    let text = ok(&stat);
    assert!(
        text.starts_with("path=a.txt kind=file size=5 modified="),
        "{text}"
    );
    assert!(
        text.ends_with("version=0"),
        "never written by a tool: {text}"
    );

    ok(&call(
        &ctx,
        "write_file",
        json!({"path": "a.txt", "content": "one"}),
    )
    .await);
    assert_eq!(version(&ctx, "a.txt").await, "1");
    let patch = json!({"path": "a.txt", "old": "one", "new": "two"});
    ok(&call(&ctx, "patch_file", patch).await);
    assert_eq!(version(&ctx, "a.txt").await, "2");
    let copy = json!({"source": "a.txt", "destination": "b.txt"});
    ok(&call(&ctx, "copy_file", copy).await);
    assert_eq!(version(&ctx, "b.txt").await, "1");
    // A command's edit is not a write of the file tools.
    std::fs::write(root.0.join("a.txt"), "by hand").unwrap();
    assert_eq!(version(&ctx, "a.txt").await, "2");

    let dir = call(&ctx, "stat_file", json!({"path": "."})).await;
    assert!(ok(&dir).contains("kind=directory"), "{dir:?}");
    let missing = call(&ctx, "stat_file", json!({"path": "nope.txt"})).await;
    assert!(failed(&missing).contains("does not exist"), "{missing:?}");
}

#[tokio::test]
async fn a_stale_base_version_refuses_the_write_and_leaves_the_file() {
    let (root, ctx) = setup("stat-conflict");
    ok(&call(&ctx, "write_file", json!({"path": "f.rs", "content": "v1"})).await);
    let seen = version(&ctx, "f.rs").await;
    assert_eq!(seen, "1");
    // Someone else (another agent, a fork branch) writes the file in between.
    ok(&call(&ctx, "write_file", json!({"path": "f.rs", "content": "v2"})).await);
    let stale = json!({"path": "f.rs", "content": "mine", "baseVersion": 1});
    let refused = call(&ctx, "write_file", stale).await;
    let text = failed(&refused);
    assert!(text.contains("VERSION_MISMATCH"), "{text}");
    assert!(
        text.contains("version 2") && text.contains("baseVersion=1"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(root.0.join("f.rs")).unwrap(), "v2");

    // The current version, or 0 (no check), writes; snake_case is accepted too.
    let current = json!({"path": "f.rs", "content": "v3", "base_version": 2});
    ok(&call(&ctx, "write_file", current).await);
    let unchecked = json!({"path": "f.rs", "content": "v4", "baseVersion": 0});
    ok(&call(&ctx, "write_file", unchecked).await);
    assert_eq!(std::fs::read_to_string(root.0.join("f.rs")).unwrap(), "v4");
    let bad = json!({"path": "f.rs", "content": "x", "baseVersion": "latest"});
    assert!(failed(&call(&ctx, "write_file", bad).await).contains("baseVersion"));

    // A deleted file's version went up too: a write based on before the delete is refused.
    ok(&call(&ctx, "delete_file", json!({"path": "f.rs"})).await);
    let after_delete = json!({"path": "f.rs", "content": "x", "baseVersion": 4});
    assert!(failed(&call(&ctx, "write_file", after_delete).await).contains("VERSION_MISMATCH"));
    assert!(!root.0.join("f.rs").exists());
}

#[tokio::test]
async fn path_exists_answers_inside_the_root_and_refuses_the_rest() {
    let (root, ctx) = setup("exists");
    let outside = Temp::new("exists-outside");
    std::fs::create_dir_all(root.0.join("src")).unwrap();
    std::fs::write(root.0.join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::write(root.0.join(".env"), "KEY=1").unwrap();
    std::fs::write(outside.0.join("secret.txt"), "x").unwrap();
    std::os::unix::fs::symlink(&outside.0, root.0.join("out")).unwrap();

    let file = call(&ctx, "path_exists", json!({"path": "src/main.rs"})).await;
    assert_eq!(ok(&file), "Exists: src/main.rs (file)");
    let dir = call(&ctx, "path_exists", json!({"path": "src"})).await;
    assert_eq!(ok(&dir), "Exists: src (directory)");
    let missing = call(&ctx, "path_exists", json!({"path": "no/such/file"})).await;
    assert_eq!(ok(&missing), "Does not exist: no/such/file");

    let key = call(&ctx, "path_exists", json!({"path": ".env"})).await;
    assert_eq!(key.denied, Some(DenialKind::Credentials), "{key:?}");
    let name = outside
        .0
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let up = format!("../{name}/secret.txt");
    for escape in [up.as_str(), "out/secret.txt", "/etc/passwd"] {
        let refused = call(&ctx, "path_exists", json!({"path": escape})).await;
        assert_eq!(
            refused.denied,
            Some(DenialKind::Sandbox),
            "{escape}: {refused:?}"
        );
    }
}

#[tokio::test]
async fn a_saved_summary_is_returned_until_the_file_changes() {
    let (root, ctx) = setup("summary");
    std::fs::write(root.0.join("big.rs"), "fn a() {}\nfn b() {}\n").unwrap();
    let save = json!({"path": "big.rs", "summary": "  Two functions, a and b.  "});
    ok(&call(&ctx, "save_file_summary", save).await);
    let got = call(&ctx, "get_file_summary", json!({"path": "big.rs"})).await;
    assert_eq!(
        ok(&got),
        "[saved summary of big.rs]\nTwo functions, a and b."
    );

    // A write through the tools, or an edit by a command, makes it stale: a preview again.
    std::fs::write(root.0.join("big.rs"), "fn c() {}\n").unwrap();
    let got = call(&ctx, "get_file_summary", json!({"path": "big.rs"})).await;
    assert!(ok(&got).starts_with("fn c() {}"), "{got:?}");
    let save = json!({"path": "big.rs", "summary": "One function."});
    ok(&call(&ctx, "save_file_summary", save).await);
    ok(&call(
        &ctx,
        "write_file",
        json!({"path": "big.rs", "content": "fn d() {}\n"}),
    )
    .await);
    let got = call(&ctx, "get_file_summary", json!({"path": "big.rs"})).await;
    assert!(ok(&got).starts_with("fn d() {}"), "{got:?}");

    // Refused: no summary, a missing file, a directory, a credential file, outside the root.
    std::fs::write(root.0.join("id_rsa"), "key").unwrap();
    for (args, says) in [
        (
            json!({"path": "big.rs", "summary": "  "}),
            "the summary is empty",
        ),
        (json!({"path": "gone.rs", "summary": "x"}), "does not exist"),
        (json!({"path": ".", "summary": "x"}), "not a regular file"),
        (
            json!({"path": "big.rs", "summary": "x".repeat(20_000)}),
            "shorten it",
        ),
    ] {
        let refused = call(&ctx, "save_file_summary", args).await;
        assert!(failed(&refused).contains(says), "{says}: {refused:?}");
    }
    let key = call(
        &ctx,
        "save_file_summary",
        json!({"path": "id_rsa", "summary": "x"}),
    )
    .await;
    assert_eq!(key.denied, Some(DenialKind::Credentials), "{key:?}");
    let out = call(
        &ctx,
        "save_file_summary",
        json!({"path": "../x", "summary": "x"}),
    )
    .await;
    assert_eq!(out.denied, Some(DenialKind::Sandbox), "{out:?}");
}
