//! Tests of the tools on real files in temporary directories: each tool's results, every
//! sandbox escape, credential denials, the shell's limits and the change-log records.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};

use super::*;
use crate::changes::ChangeLog;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A unique temporary directory, removed on drop (the FileSystem tests use it too).
pub(super) struct Temp(pub(super) PathBuf);

impl Temp {
    pub(super) fn new(name: &str) -> Temp {
        let dir = std::env::temp_dir().join(format!(
            "fuseraft-tools-{name}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Temp(std::fs::canonicalize(&dir).unwrap())
    }

    pub(super) fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    pub(super) fn write(&self, rel: &str, content: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub(super) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Every path under the directory with its content (directories as `name/`).
    pub(super) fn snapshot(&self) -> Vec<(String, String)> {
        fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
            let mut entries: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .collect();
            entries.sort();
            for path in entries {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                let meta = std::fs::symlink_metadata(&path).unwrap();
                if meta.is_dir() {
                    out.push((format!("{rel}/"), String::new()));
                    walk(&path, root, out);
                } else {
                    out.push((rel, std::fs::read_to_string(&path).unwrap_or_default()));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.0, &self.0, &mut out);
        out
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A sandbox and a directory outside it.
struct Setup {
    sandbox: Temp,
    outside: Temp,
    ctx: ToolContext,
}

fn setup(name: &str) -> Setup {
    let sandbox = Temp::new(name);
    let outside = Temp::new(&format!("{name}-outside"));
    let ctx = ToolContext::new(&sandbox.0, "s1", "Developer", 3).unwrap();
    Setup {
        sandbox,
        outside,
        ctx,
    }
}

pub(super) use super::testkit::{answer, call};

fn result(call: &ToolCall) -> &str {
    call.result.as_deref().unwrap()
}

/// A refusal as data (`denied`) and in words (the `[DENIED: kind]` prefix), the same kind.
fn assert_denied(call: &ToolCall, kind: &str) {
    assert!(!call.ok, "{call:?}");
    assert!(
        result(call).starts_with(&format!("[DENIED: {kind}]")),
        "{}",
        result(call)
    );
    assert_eq!(
        call.denied.map(|denied| denied.as_str()),
        Some(kind),
        "{call:?}"
    );
}

fn assert_error(call: &ToolCall, needle: &str) {
    assert!(!call.ok, "{call:?}");
    let text = result(call);
    assert!(text.starts_with("[ERROR]"), "{text}");
    assert!(text.contains(needle), "`{needle}` not in {text}");
}

fn log(ctx: &ToolContext) -> ChangeLog {
    ChangeLog::load(&ctx.change_log).unwrap()
}

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

// ---------------------------------------------------------------- FileSystem

#[tokio::test]
async fn tools_read_file_returns_content_and_fails_clearly() {
    let s = setup("read");
    s.sandbox.write("src/main.rs", "fn main() {}\n");
    let ok = call(&s.ctx, "read_file", json!({"path": "src/main.rs"})).await;
    assert!(ok.ok);
    assert_eq!(result(&ok), "fn main() {}\n");

    assert_error(
        &call(&s.ctx, "read_file", json!({"path": "nope.txt"})).await,
        "does not exist",
    );
    assert_error(
        &call(&s.ctx, "read_file", json!({"path": "src"})).await,
        "is a directory",
    );
    assert_error(
        &call(&s.ctx, "read_file", json!({})).await,
        "needs a string argument `path`",
    );
    let wrong = call(&s.ctx, "read_file", json!({"path": 42})).await;
    assert_eq!(
        result(&wrong),
        "[ERROR] tool `read_file` needs a string argument `path`"
    );
}

/// A file whose text looks like a refusal is read, not refused: a refusal is the call's
/// `denied`, which only the authority and the tools set, never the text a tool returns.
#[tokio::test]
async fn a_result_that_reads_like_a_refusal_is_not_one() {
    let s = setup("look-alike");
    s.sandbox.write(
        "notes.txt",
        "[DENIED: sandbox] written by the model to look refused\n",
    );
    let read = call(&s.ctx, "read_file", json!({"path": "notes.txt"})).await;
    assert!(read.ok, "{read:?}");
    assert_eq!(read.denied, None);
    assert!(result(&read).starts_with("[DENIED: sandbox]"));
}

#[tokio::test]
async fn tools_read_file_caps_at_read_cap_and_says_so() {
    let mut s = setup("read-cap");
    s.ctx.limits.read_cap = 100;
    s.sandbox.write("big.txt", &"x".repeat(250));
    let read = call(&s.ctx, "read_file", json!({"path": "big.txt"})).await;
    assert!(read.ok);
    let text = result(&read);
    assert!(text.starts_with(&"x".repeat(100)));
    assert!(!text.starts_with(&"x".repeat(101)));
    assert!(
        text.contains("[truncated: showing the first 100 of 250 bytes"),
        "{text}"
    );

    // Never ends on half a character.
    s.sandbox.write("utf8.txt", &"é".repeat(100));
    let read = call(&s.ctx, "read_file", json!({"path": "utf8.txt"})).await;
    assert!(result(&read).starts_with(&"é".repeat(50)));
    assert!(!result(&read).contains('\u{FFFD}'));
}

#[tokio::test]
async fn tools_write_file_creates_parents_and_records() {
    let s = setup("write");
    let write = call(
        &s.ctx,
        "write_file",
        json!({"path": "a/b/c.txt", "content": "hello"}),
    )
    .await;
    assert!(write.ok, "{write:?}");
    assert_eq!(result(&write), "Wrote 5 bytes to a/b/c.txt");
    assert_eq!(s.sandbox.read("a/b/c.txt"), "hello");

    // Overwrite, through the plugin-prefixed name; the same file is listed once.
    let again = call(
        &s.ctx,
        "FileSystem-write_file",
        json!({"path": "./a/b/c.txt", "content": "bye"}),
    )
    .await;
    assert!(again.ok);
    assert_eq!(s.sandbox.read("a/b/c.txt"), "bye");

    let log = log(&s.ctx);
    assert_eq!(log.active_session_id, "s1");
    assert_eq!(log.entries.len(), 1);
    let entry = &log.entries[0];
    assert_eq!(
        (
            entry.agent.as_str(),
            entry.turn_index,
            entry.session_id.as_str()
        ),
        ("Developer", 3, "s1")
    );
    assert_eq!(entry.files_written, vec!["a/b/c.txt"]);
    assert!(
        entry.timestamp.ends_with('Z') && entry.timestamp.len() == 20,
        "{}",
        entry.timestamp
    );

    assert_error(
        &call(&s.ctx, "write_file", json!({"path": "x.txt"})).await,
        "needs a string argument `content`",
    );
    assert_error(
        &call(&s.ctx, "write_file", json!({"path": "a", "content": ""})).await,
        "is a directory",
    );
    assert_error(
        &call(&s.ctx, "write_file", json!({"path": "", "content": ""})).await,
        "empty",
    );
}

#[cfg(unix)]
#[tokio::test]
async fn tools_write_file_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let s = setup("write-mode");
    s.sandbox.write("run.sh", "echo 1");
    std::fs::set_permissions(
        s.sandbox.path("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert!(
        call(
            &s.ctx,
            "write_file",
            json!({"path": "run.sh", "content": "echo 2"})
        )
        .await
        .ok
    );
    let mode = std::fs::metadata(s.sandbox.path("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    // No temporary files left behind.
    let names: Vec<_> = std::fs::read_dir(&s.sandbox.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}"); // run.sh and .fuseraft/
}

#[tokio::test]
async fn tools_patch_file_replaces_exactly_one_occurrence() {
    let s = setup("patch");
    s.sandbox
        .write("lib.rs", "fn a() {}\nfn b() {}\nfn b() {}\n");
    let ok = call(
        &s.ctx,
        "patch_file",
        json!({"path": "lib.rs", "old": "fn a() {}", "new": "fn a() { 1 }"}),
    )
    .await;
    assert!(ok.ok, "{ok:?}");
    assert_eq!(result(&ok), "Patched lib.rs at line 1 (1 replacement)");
    assert_eq!(
        s.sandbox.read("lib.rs"),
        "fn a() { 1 }\nfn b() {}\nfn b() {}\n"
    );
    assert_eq!(log(&s.ctx).entries[0].files_written, vec!["lib.rs"]);

    assert_error(
        &call(
            &s.ctx,
            "patch_file",
            json!({"path": "lib.rs", "old": "fn c", "new": ""}),
        )
        .await,
        "was not found",
    );
    assert_error(
        &call(
            &s.ctx,
            "patch_file",
            json!({"path": "lib.rs", "old": "fn b() {}", "new": ""}),
        )
        .await,
        "occurs 2 times",
    );
    // Overlapping occurrences are ambiguous too.
    s.sandbox.write("aaa.txt", "aaa");
    assert_error(
        &call(
            &s.ctx,
            "patch_file",
            json!({"path": "aaa.txt", "old": "aa", "new": "b"}),
        )
        .await,
        "occurs",
    );
    assert_eq!(s.sandbox.read("aaa.txt"), "aaa");
    assert_error(
        &call(
            &s.ctx,
            "patch_file",
            json!({"path": "lib.rs", "old": "", "new": "x"}),
        )
        .await,
        "`old` is empty",
    );
    assert_error(
        &call(
            &s.ctx,
            "patch_file",
            json!({"path": "missing.rs", "old": "a", "new": "b"}),
        )
        .await,
        "does not exist",
    );
    assert_error(
        &call(&s.ctx, "patch_file", json!({"path": "lib.rs", "old": "a"})).await,
        "argument `new`",
    );
}

#[tokio::test]
async fn tools_list_files_sorted_with_dir_slashes() {
    let s = setup("list");
    s.sandbox.write("b.txt", "");
    s.sandbox.write("a.txt", "");
    s.sandbox.write("src/x.rs", "");
    std::fs::create_dir_all(s.sandbox.path("empty")).unwrap();
    let root = call(&s.ctx, "list_files", json!({})).await;
    assert!(root.ok);
    assert_eq!(result(&root), "a.txt\nb.txt\nempty/\nsrc/");
    let null_args = call(&s.ctx, "list_files", Json::Null).await;
    assert_eq!(result(&null_args), "a.txt\nb.txt\nempty/\nsrc/");
    assert_eq!(
        result(&call(&s.ctx, "list_files", json!({"path": "src"})).await),
        "x.rs"
    );
    assert_eq!(
        result(&call(&s.ctx, "list_files", json!({"path": "empty"})).await),
        "(empty is empty)"
    );
    assert_error(
        &call(&s.ctx, "list_files", json!({"path": "a.txt"})).await,
        "not a directory",
    );
    assert_error(
        &call(&s.ctx, "list_files", json!({"path": "nope"})).await,
        "does not exist",
    );
    assert_error(
        &call(&s.ctx, "list_files", json!({"path": ["src"]})).await,
        "must be a string",
    );
}

#[tokio::test]
async fn tools_delete_file_removes_files_only_and_records() {
    let s = setup("delete");
    s.sandbox.write("old.txt", "x");
    std::fs::create_dir_all(s.sandbox.path("dir")).unwrap();
    let ok = call(&s.ctx, "delete_file", json!({"path": "old.txt"})).await;
    assert!(ok.ok, "{ok:?}");
    assert!(!s.sandbox.path("old.txt").exists());
    assert_eq!(log(&s.ctx).entries[0].files_deleted, vec!["old.txt"]);
    assert_error(
        &call(&s.ctx, "delete_file", json!({"path": "old.txt"})).await,
        "does not exist",
    );
    assert_error(
        &call(&s.ctx, "delete_file", json!({"path": "dir"})).await,
        "is a directory",
    );
    assert!(s.sandbox.path("dir").is_dir());
    assert_error(
        &call(&s.ctx, "delete_file", json!({"path": "."})).await,
        "cannot be deleted",
    );
}

#[cfg(unix)]
#[tokio::test]
async fn tools_delete_file_removes_a_symlink_not_its_target() {
    let s = setup("delete-link");
    s.outside.write("keep.txt", "precious");
    symlink(&s.outside.path("keep.txt"), &s.sandbox.path("link.txt"));
    let del = call(&s.ctx, "delete_file", json!({"path": "link.txt"})).await;
    assert!(del.ok, "{del:?}");
    assert!(std::fs::symlink_metadata(s.sandbox.path("link.txt")).is_err());
    assert_eq!(s.outside.read("keep.txt"), "precious");
}

// ---------------------------------------------------------------- Sandbox

#[tokio::test]
async fn tools_sandbox_denies_dotdot_escapes() {
    let s = setup("dotdot");
    s.outside.write("secret.txt", "outside");
    let outside_name = s
        .outside
        .0
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let escape = format!("../{outside_name}/secret.txt");
    assert_denied(
        &call(&s.ctx, "read_file", json!({"path": escape})).await,
        "sandbox",
    );
    let write = call(
        &s.ctx,
        "write_file",
        json!({"path": escape, "content": "pwned"}),
    )
    .await;
    assert_denied(&write, "sandbox");
    assert!(result(&write).contains("path escapes the sandbox"));
    assert_eq!(s.outside.read("secret.txt"), "outside");
    let new_file = format!("sub/../../{outside_name}/new.txt");
    assert_denied(
        &call(
            &s.ctx,
            "write_file",
            json!({"path": new_file, "content": "x"}),
        )
        .await,
        "sandbox",
    );
    assert!(!s.outside.path("new.txt").exists());
    assert_denied(
        &call(&s.ctx, "list_files", json!({"path": ".."})).await,
        "sandbox",
    );
    assert_denied(
        &call(&s.ctx, "delete_file", json!({"path": escape})).await,
        "sandbox",
    );
    assert_denied(
        &call(
            &s.ctx,
            "patch_file",
            json!({"path": escape, "old": "outside", "new": "x"}),
        )
        .await,
        "sandbox",
    );
    assert_eq!(s.outside.read("secret.txt"), "outside");
    // `..` that stays inside is fine.
    assert!(
        call(
            &s.ctx,
            "write_file",
            json!({"path": "a/../b.txt", "content": "ok"})
        )
        .await
        .ok
    );
    assert_eq!(s.sandbox.read("b.txt"), "ok");
    assert!(
        call(&s.ctx, "read_file", json!({"path": "missing/../b.txt"}))
            .await
            .ok
    );
    // Nothing denied was recorded.
    assert_eq!(log(&s.ctx).entries[0].files_written, vec!["b.txt"]);
}

#[tokio::test]
async fn tools_sandbox_denies_absolute_paths_outside() {
    let s = setup("absolute");
    s.outside.write("secret.txt", "outside");
    let abs = s.outside.path("secret.txt");
    assert_denied(
        &call(&s.ctx, "read_file", json!({"path": abs})).await,
        "sandbox",
    );
    assert_denied(
        &call(&s.ctx, "write_file", json!({"path": abs, "content": "x"})).await,
        "sandbox",
    );
    assert_denied(
        &call(&s.ctx, "read_file", json!({"path": "/etc/passwd"})).await,
        "sandbox",
    );
    assert_denied(
        &call(&s.ctx, "list_files", json!({"path": "/"})).await,
        "sandbox",
    );
    assert_eq!(s.outside.read("secret.txt"), "outside");
    // An absolute path inside the sandbox is allowed, and recorded relative.
    let inside = s.sandbox.path("in.txt");
    assert!(
        call(
            &s.ctx,
            "write_file",
            json!({"path": inside, "content": "ok"})
        )
        .await
        .ok
    );
    assert_eq!(log(&s.ctx).entries[0].files_written, vec!["in.txt"]);
}

#[cfg(unix)]
#[tokio::test]
async fn tools_sandbox_denies_symlinked_directory_outside() {
    let s = setup("symdir");
    s.outside.write("secret.txt", "outside");
    symlink(&s.outside.0, &s.sandbox.path("linkdir"));
    assert_denied(
        &call(&s.ctx, "read_file", json!({"path": "linkdir/secret.txt"})).await,
        "sandbox",
    );
    assert_denied(
        &call(&s.ctx, "list_files", json!({"path": "linkdir"})).await,
        "sandbox",
    );
    // A symlink in a parent of a file that does not exist yet.
    assert_denied(
        &call(
            &s.ctx,
            "write_file",
            json!({"path": "linkdir/new.txt", "content": "x"}),
        )
        .await,
        "sandbox",
    );
    assert_denied(
        &call(
            &s.ctx,
            "write_file",
            json!({"path": "linkdir/deeper/new.txt", "content": "x"}),
        )
        .await,
        "sandbox",
    );
    assert!(!s.outside.path("new.txt").exists());
    assert!(!s.outside.path("deeper").exists());
    // A relative symlink that climbs out.
    let outside_name = s
        .outside
        .0
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    symlink(
        Path::new(&format!("../{outside_name}")),
        &s.sandbox.path("rel"),
    );
    assert_denied(
        &call(&s.ctx, "read_file", json!({"path": "rel/secret.txt"})).await,
        "sandbox",
    );
    // `..` after a symlinked directory goes to the link target's parent, as the kernel does.
    std::fs::create_dir_all(s.outside.path("sub")).unwrap();
    symlink(&s.outside.path("sub"), &s.sandbox.path("sublink"));
    assert_denied(
        &call(
            &s.ctx,
            "read_file",
            json!({"path": "sublink/../secret.txt"}),
        )
        .await,
        "sandbox",
    );
}

#[cfg(unix)]
#[tokio::test]
async fn tools_sandbox_denies_symlinked_file_outside() {
    let s = setup("symfile");
    s.outside.write("secret.txt", "outside");
    symlink(&s.outside.path("secret.txt"), &s.sandbox.path("notes.txt"));
    assert_denied(
        &call(&s.ctx, "read_file", json!({"path": "notes.txt"})).await,
        "sandbox",
    );
    assert_denied(
        &call(
            &s.ctx,
            "write_file",
            json!({"path": "notes.txt", "content": "x"}),
        )
        .await,
        "sandbox",
    );
    assert_denied(
        &call(
            &s.ctx,
            "patch_file",
            json!({"path": "notes.txt", "old": "outside", "new": "x"}),
        )
        .await,
        "sandbox",
    );
    assert_eq!(s.outside.read("secret.txt"), "outside");
    // A dangling symlink pointing outside: writing must not create the target.
    symlink(
        &s.outside.path("created.txt"),
        &s.sandbox.path("dangling.txt"),
    );
    assert_denied(
        &call(
            &s.ctx,
            "write_file",
            json!({"path": "dangling.txt", "content": "x"}),
        )
        .await,
        "sandbox",
    );
    assert!(!s.outside.path("created.txt").exists());
    // A chain of links ending outside.
    symlink(Path::new("notes.txt"), &s.sandbox.path("chain.txt"));
    assert_denied(
        &call(&s.ctx, "read_file", json!({"path": "chain.txt"})).await,
        "sandbox",
    );
}

#[cfg(unix)]
#[tokio::test]
async fn tools_sandbox_allows_symlinks_that_stay_inside() {
    let s = setup("symin");
    s.sandbox.write("real/file.txt", "inside");
    symlink(Path::new("real"), &s.sandbox.path("alias"));
    symlink(Path::new("real/file.txt"), &s.sandbox.path("f.txt"));
    assert_eq!(
        result(&call(&s.ctx, "read_file", json!({"path": "alias/file.txt"})).await),
        "inside"
    );
    let write = call(
        &s.ctx,
        "write_file",
        json!({"path": "f.txt", "content": "new"}),
    )
    .await;
    assert!(write.ok, "{write:?}");
    // The link's target was replaced and the link kept; the record names the real file.
    assert_eq!(s.sandbox.read("real/file.txt"), "new");
    assert!(std::fs::symlink_metadata(s.sandbox.path("f.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(log(&s.ctx).entries[0].files_written, vec!["real/file.txt"]);
}

#[cfg(unix)]
#[tokio::test]
async fn tools_sandbox_symlink_loop_is_an_error() {
    let s = setup("loop");
    symlink(Path::new("b"), &s.sandbox.path("a"));
    symlink(Path::new("a"), &s.sandbox.path("b"));
    assert_error(
        &call(&s.ctx, "read_file", json!({"path": "a"})).await,
        "too many levels of symbolic links",
    );
    assert_error(
        &call(&s.ctx, "write_file", json!({"path": "a/x", "content": ""})).await,
        "symbolic links",
    );
}

#[cfg(unix)]
#[tokio::test]
async fn tools_sandbox_hard_link_write_leaves_outside_file_alone() {
    let s = setup("hardlink");
    s.outside.write("target.txt", "original");
    if std::fs::hard_link(s.outside.path("target.txt"), s.sandbox.path("hl.txt")).is_err() {
        return; // Different file systems: no hard link possible, nothing to test.
    }
    let write = call(
        &s.ctx,
        "write_file",
        json!({"path": "hl.txt", "content": "changed"}),
    )
    .await;
    assert!(write.ok, "{write:?}");
    assert_eq!(s.sandbox.read("hl.txt"), "changed");
    assert_eq!(s.outside.read("target.txt"), "original");

    std::fs::remove_file(s.sandbox.path("hl.txt")).unwrap();
    std::fs::hard_link(s.outside.path("target.txt"), s.sandbox.path("hl.txt")).unwrap();
    let patch = call(
        &s.ctx,
        "patch_file",
        json!({"path": "hl.txt", "old": "original", "new": "patched"}),
    )
    .await;
    assert!(patch.ok, "{patch:?}");
    assert_eq!(s.sandbox.read("hl.txt"), "patched");
    assert_eq!(s.outside.read("target.txt"), "original");
}

#[tokio::test]
async fn tools_sandbox_denies_credential_files() {
    let s = setup("creds");
    for (rel, content) in [
        (".env", "TOKEN=1"),
        (".env.local", "TOKEN=2"),
        ("config/server.pem", "pem"),
        ("tls/site.KEY", "key"),
        (".ssh/config", "Host x"),
        ("home/.ssh/known_hosts", "x"),
        ("id_rsa", "k"),
        ("id_ed25519.pub", "k"),
        (".aws/credentials", "k"),
        (".netrc", "k"),
        (".npmrc", "k"),
        (".pypirc", "k"),
        (".git-credentials", "k"),
        (".config/gcloud/application_default_credentials.json", "k"),
        (".azure/accessTokens.json", "k"),
        (".kube/config", "k"),
        (".ENV", "k"),
    ] {
        s.sandbox.write(rel, content);
        assert_denied(
            &call(&s.ctx, "read_file", json!({"path": rel})).await,
            "credentials",
        );
        assert_denied(
            &call(&s.ctx, "write_file", json!({"path": rel, "content": "x"})).await,
            "credentials",
        );
        assert_denied(
            &call(
                &s.ctx,
                "patch_file",
                json!({"path": rel, "old": "k", "new": "x"}),
            )
            .await,
            "credentials",
        );
        assert_denied(
            &call(&s.ctx, "delete_file", json!({"path": rel})).await,
            "credentials",
        );
        assert_eq!(s.sandbox.read(rel), content, "{rel} was changed");
    }
    assert_denied(
        &call(&s.ctx, "list_files", json!({"path": ".ssh"})).await,
        "credentials",
    );
    // A new credential file cannot be created either.
    assert_denied(
        &call(
            &s.ctx,
            "write_file",
            json!({"path": "new/.env", "content": "x"}),
        )
        .await,
        "credentials",
    );
    assert!(!s.sandbox.path("new/.env").exists());
    // Through a symlink with an innocent name.
    #[cfg(unix)]
    {
        symlink(Path::new(".env"), &s.sandbox.path("notes.txt"));
        assert_denied(
            &call(&s.ctx, "read_file", json!({"path": "notes.txt"})).await,
            "credentials",
        );
    }
    // Templates and look-alikes are ordinary files.
    s.sandbox.write(".env.example", "TOKEN=");
    assert!(
        call(&s.ctx, "read_file", json!({"path": ".env.example"}))
            .await
            .ok
    );
    s.sandbox.write("monkey.txt", "k");
    assert!(
        call(&s.ctx, "read_file", json!({"path": "monkey.txt"}))
            .await
            .ok
    );
    assert!(
        call(
            &s.ctx,
            "write_file",
            json!({"path": "docs/keys.md", "content": "k"})
        )
        .await
        .ok
    );
}

#[test]
fn tools_credential_patterns() {
    for yes in [
        ".env",
        "a/.env.production",
        "x.pem",
        "a/b.key",
        "id_rsa",
        "id_ecdsa",
        ".ssh",
        ".ssh/id",
        "a\\.ssh\\x",
        ".aws/credentials",
        ".docker/config.json",
        ".gnupg/pubring.kbx",
        "_netrc",
    ] {
        assert!(is_credential_path(yes), "{yes}");
    }
    for no in [
        "",
        ".",
        "env",
        ".envrc.md",
        ".env.example",
        ".env.sample",
        ".env.template",
        "key.txt",
        "keys/a.rs",
        ".aws/config",
        "kube/config",
        "pem.rs",
        "src/ssh.rs",
    ] {
        assert!(!is_credential_path(no), "{no}");
    }
}

#[tokio::test]
async fn tools_change_log_cannot_be_forged() {
    let s = setup("forge");
    assert!(
        call(
            &s.ctx,
            "write_file",
            json!({"path": "a.txt", "content": "x"})
        )
        .await
        .ok
    );
    let forged = json!({"path": ".fuseraft/state/changes.json", "content": "{}"});
    let denied = call(&s.ctx, "write_file", forged).await;
    assert_denied(&denied, "sandbox");
    assert!(result(&denied).contains("change log"));
    assert_denied(
        &call(
            &s.ctx,
            "delete_file",
            json!({"path": ".fuseraft/state/changes.json"}),
        )
        .await,
        "sandbox",
    );
    assert_eq!(log(&s.ctx).entries[0].files_written, vec!["a.txt"]);
    // A change log moved out of `.fuseraft/` (`ChangeTracking.Path`) keeps all three of its
    // files out of the tools' reach: the snapshot, the append log and the lock.
    let mut moved = s.ctx.clone();
    moved.change_log = moved.work_dir.join("audit/changes.json");
    for path in [
        "audit/changes.json",
        "audit/changes.jsonl",
        "audit/changes.lock",
        "AUDIT/../audit/CHANGES.JSONL",
    ] {
        let denied = call(&moved, "write_file", json!({"path": path, "content": "{}"})).await;
        assert_denied(&denied, "sandbox");
        assert!(result(&denied).contains("change log"), "{path}");
    }
    // Reading it is fine.
    assert!(
        call(
            &s.ctx,
            "read_file",
            json!({"path": ".fuseraft/state/changes.json"})
        )
        .await
        .ok
    );
}

// ---------------------------------------------------------------- Shell

#[tokio::test]
async fn tools_shell_run_output_and_exit_codes() {
    let s = setup("shell");
    s.sandbox.write("hello.txt", "hi");
    let ok = call(
        &s.ctx,
        "shell_run",
        json!({"command": "cat hello.txt; echo; echo err >&2; pwd"}),
    )
    .await;
    assert!(ok.ok, "{ok:?}");
    assert_eq!(result(&ok), format!("hi\nerr\n{}\n", s.sandbox.0.display()));

    let empty = call(&s.ctx, "Shell-shell_run", json!({"command": "true"})).await;
    assert!(empty.ok);
    assert_eq!(result(&empty), "");

    let fail = call(
        &s.ctx,
        "shell_run",
        json!({"command": "echo before; exit 3"}),
    )
    .await;
    assert!(!fail.ok);
    assert_eq!(result(&fail), "[EXIT 3]\nbefore\n");

    let syntax = call(&s.ctx, "shell_run", json!({"command": "if then"})).await;
    assert!(
        result(&syntax).starts_with("[EXIT 2]\n"),
        "{}",
        result(&syntax)
    );
    assert!(
        result(&syntax).contains("syntax error"),
        "{}",
        result(&syntax)
    );

    let killed = call(&s.ctx, "shell_run", json!({"command": "kill -9 $$"})).await;
    assert_eq!(result(&killed), "[EXIT 137]");

    assert_error(
        &call(&s.ctx, "shell_run", json!({})).await,
        "needs a string argument `command`",
    );
    assert_error(
        &call(&s.ctx, "shell_run", json!({"command": "  "})).await,
        "non-empty",
    );
    assert_error(
        &call(
            &s.ctx,
            "shell_run",
            json!({"command": "true", "timeout_seconds": -1}),
        )
        .await,
        "positive number",
    );
    assert_error(
        &call(
            &s.ctx,
            "shell_run",
            json!({"command": "true", "timeout_seconds": {"a": 1}}),
        )
        .await,
        "positive number",
    );
    // A here-document on the first line still works after the `exec 2>&1; ` prefix.
    let heredoc = "cat <<EOF > doc.txt\nline one\nEOF\ncat doc.txt";
    assert_eq!(
        result(&call(&s.ctx, "shell_run", json!({"command": heredoc})).await),
        "line one\n"
    );
    // Standard input is closed: a command reading it does not wait.
    let stdin = call(
        &s.ctx,
        "shell_run",
        json!({"command": "cat; echo done", "timeout_seconds": "5"}),
    )
    .await;
    assert_eq!(result(&stdin), "done\n");
}

/// Whether a process is still running (zombies count as gone: nobody may reap them here).
fn alive(pid: &str) -> bool {
    let probe = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("kill -0 {pid} 2>/dev/null"))
        .status()
        .unwrap();
    if !probe.success() {
        return false;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .trim_start()
        .chars()
        .next();
    state != Some('Z')
}

fn wait_gone(pid: &str) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[cfg(unix)]
#[tokio::test]
async fn tools_shell_timeout_kills_the_whole_process_group() {
    let s = setup("timeout");
    let start = Instant::now();
    let run = call(
        &s.ctx,
        "shell_run",
        json!({"command": "echo started; sleep 100 & echo $! > child.pid; sleep 100", "timeout_seconds": 1}),
    )
    .await;
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert!(!run.ok);
    assert_eq!(result(&run), "[TIMEOUT] after 1s\nstarted\n");
    let pid = s.sandbox.read("child.pid").trim().to_string();
    assert!(!pid.is_empty());
    assert!(wait_gone(&pid), "forked child {pid} survived the timeout");

    let log = log(&s.ctx);
    let command = &log.entries[0].commands_run[0];
    assert!(!command.succeeded);
    assert!(command.output.starts_with("[TIMEOUT]"));
}

#[cfg(unix)]
#[tokio::test]
async fn tools_shell_background_jobs_do_not_outlive_the_call() {
    let s = setup("background");
    let start = Instant::now();
    // The background job holds the output pipe open: the call must still return at once.
    let run = call(
        &s.ctx,
        "shell_run",
        json!({"command": "sleep 100 & echo $! > bg.pid; echo ok"}),
    )
    .await;
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert!(run.ok, "{run:?}");
    assert_eq!(result(&run), "ok\n");
    let pid = s.sandbox.read("bg.pid").trim().to_string();
    assert!(wait_gone(&pid), "background job {pid} survived");
}

#[tokio::test]
async fn tools_shell_timeout_is_capped_by_the_limit() {
    let mut s = setup("limit");
    s.ctx.limits.shell_timeout = Duration::from_millis(500);
    let start = Instant::now();
    let run = call(
        &s.ctx,
        "shell_run",
        json!({"command": "sleep 30", "timeout_seconds": 600}),
    )
    .await;
    assert!(start.elapsed() < Duration::from_secs(4));
    assert_eq!(result(&run), "[TIMEOUT] after 0.5s");
}

#[tokio::test]
async fn tools_shell_output_is_capped() {
    let mut s = setup("cap");
    s.ctx.limits.output_cap = 1000;
    let run = call(
        &s.ctx,
        "shell_run",
        json!({"command": "printf 'START'; head -c 200000 /dev/zero | tr '\\0' a; printf 'END'; exit 1"}),
    )
    .await;
    let text = result(&run);
    assert!(text.starts_with("[EXIT 1]\nSTART"), "{}", &text[..40]);
    assert!(text.ends_with("aaaEND"), "{}", &text[text.len() - 40..]);
    assert!(
        text.contains("[output truncated: 199008 bytes omitted]"),
        "{text}"
    );
    assert!(text.len() < 1100, "{}", text.len());
    // The change log keeps at most ~2 KB.
    let log = log(&s.ctx);
    assert!(log.entries[0].commands_run[0].output.len() < 2200);
}

#[tokio::test]
async fn tools_shell_records_every_command() {
    let s = setup("shell-log");
    assert!(
        call(&s.ctx, "shell_run", json!({"command": "echo one"}))
            .await
            .ok
    );
    assert!(
        !call(&s.ctx, "shell_run", json!({"command": "false"}))
            .await
            .ok
    );
    let long = call(
        &s.ctx,
        "shell_run",
        json!({"command": "head -c 10000 /dev/zero | tr '\\0' b"}),
    )
    .await;
    assert!(long.ok);
    assert_eq!(result(&long).len(), 10000);
    let log = log(&s.ctx);
    let commands = &log.entries[0].commands_run;
    assert_eq!(commands.len(), 3);
    assert_eq!(
        (
            commands[0].command.as_str(),
            commands[0].succeeded,
            commands[0].output.as_str()
        ),
        ("echo one", true, "one\n")
    );
    assert_eq!(
        (
            commands[1].command.as_str(),
            commands[1].succeeded,
            commands[1].output.as_str()
        ),
        ("false", false, "[EXIT 1]")
    );
    assert!(commands[2].output.contains("[output truncated:"));
    assert!(log.entries[0].git_commits.is_empty());
}

#[tokio::test]
async fn tools_shell_spawn_failure_is_an_error() {
    let s = setup("spawn");
    let mut ctx = s.ctx.clone();
    ctx.work_dir = s.sandbox.path("does-not-exist");
    ctx.confinement =
        std::sync::Arc::new(crate::sandbox::Confinement::new(&ctx.work_dir, &[], &[]));
    let run = call(&ctx, "shell_run", json!({"command": "true"})).await;
    assert_error(&run, "could not start");
    let read = call(&ctx, "read_file", json!({"path": "x"})).await;
    assert_error(&read, "not accessible");
}

#[tokio::test]
async fn tools_shell_is_refused_without_an_os_sandbox_under_refuse() {
    let s = setup("refuse");
    let mut ctx = s.ctx.clone();
    ctx.sandbox.launcher = None;
    ctx.sandbox.on_unavailable = crate::sandbox::OnUnavailable::Refuse;
    let run = call(&ctx, "shell_run", json!({"command": "touch ran"})).await;
    assert_error(&run, "OS sandbox is unavailable");
    assert!(!s.sandbox.path("ran").exists(), "the command did not run");
}

#[tokio::test]
async fn tools_shell_environment_is_allow_listed() {
    let s = setup("env-allow-list");
    let run = call(&s.ctx, "shell_run", json!({"command": "env"})).await;
    assert!(run.ok, "{}", result(&run));
    let names: Vec<&str> = result(&run)
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .collect();
    for name in &names {
        assert!(
            crate::sandbox::env::ALLOWED.contains(name)
                || name.starts_with("LC_")
                || *name == "GIT_TERMINAL_PROMPT"
                // Set by bash itself.
                || ["PWD", "SHLVL", "_", "OLDPWD"].contains(name),
            "`{name}` is not on the allow-list"
        );
    }
    assert!(names.contains(&"GIT_TERMINAL_PROMPT"));
}

#[tokio::test]
async fn tools_shell_records_git_commits() {
    let s = setup("git");
    let has_git = std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_git {
        return;
    }
    let init = "git init -q . && git config user.email t@example.com && git config user.name T && git config commit.gpgsign false";
    assert!(call(&s.ctx, "shell_run", json!({"command": init})).await.ok);
    assert!(
        call(
            &s.ctx,
            "write_file",
            json!({"path": "a.txt", "content": "1"})
        )
        .await
        .ok
    );
    let commit = call(
        &s.ctx,
        "shell_run",
        json!({"command": "git add -A && git commit -q -m 'first change'"}),
    )
    .await;
    assert!(commit.ok, "{commit:?}");
    // Nothing to commit: fails, not recorded.
    assert!(
        !call(
            &s.ctx,
            "shell_run",
            json!({"command": "git commit -q -m again"})
        )
        .await
        .ok
    );
    // Not a commit-creating command: not recorded.
    assert!(
        call(
            &s.ctx,
            "shell_run",
            json!({"command": "git log --grep commit"})
        )
        .await
        .ok
    );
    let log = log(&s.ctx);
    let commits = &log.entries[0].git_commits;
    assert_eq!(commits.len(), 1, "{commits:?}");
    assert!(commits[0].ends_with(" first change"), "{}", commits[0]);
    assert_eq!(commits[0].split(' ').next().unwrap().len(), 40);
    assert_eq!(log.entries[0].commands_run.len(), 4);
}

#[test]
fn tools_git_command_classification() {
    for yes in [
        "git commit -m x",
        "cd a && git commit -am x",
        "git -C sub commit",
        "git -c a=b merge main",
        "(git pull)",
    ] {
        assert!(creates_commit(yes), "{yes}");
    }
    // (`echo git commit` matches too; the HEAD comparison keeps it out of gitCommits.)
    for no in [
        "git log --grep commit",
        "git status",
        "legit commit",
        "git commitx",
        "git show commit",
    ] {
        assert!(!creates_commit(no), "{no}");
    }
    for yes in [
        "git push origin main",
        "git reset --hard",
        "git add .",
        "ls; git tag v1",
        "git --no-pager branch -D x",
    ] {
        assert!(is_git_write(yes), "{yes}");
    }
    for no in ["git status", "git log", "git diff", "git show HEAD", "gitk"] {
        assert!(!is_git_write(no), "{no}");
    }
}

#[test]
fn tools_secret_environment_names() {
    for yes in [
        "OPENAI_API_KEY",
        "anthropic_api_key",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY",
        "GH_AUTH_TOKEN",
        "API_KEY",
    ] {
        assert!(is_secret_env(yes), "{yes}");
    }
    for no in [
        "PATH",
        "HOME",
        "CARGO_HOME",
        "KEYBOARD",
        "API_KEY_FILE_PATH",
    ] {
        assert!(!is_secret_env(no), "{no}");
    }
}

// ---------------------------------------------------------------- Changes, arguments, schemas

#[tokio::test]
async fn tools_changes_read_latest() {
    let s = setup("changes");
    let none = call(&s.ctx, "changes_read_latest", json!({})).await;
    assert!(none.ok);
    assert_eq!(result(&none), "No changes recorded for session `s1` yet.");
    assert!(
        call(
            &s.ctx,
            "write_file",
            json!({"path": "a.txt", "content": "1"})
        )
        .await
        .ok
    );
    let mut later = s.ctx.clone();
    later.turn = 7;
    later.agent = "Tester".to_string();
    assert!(
        call(&later, "shell_run", json!({"command": "echo t"}))
            .await
            .ok
    );
    let latest = call(&s.ctx, "Changes-changes_read_latest", Json::Null).await;
    assert!(latest.ok);
    let entry: Json = serde_json::from_str(result(&latest)).unwrap();
    assert_eq!(entry["agent"], "Tester");
    assert_eq!(entry["turnIndex"], 7);
    assert_eq!(entry["commandsRun"][0]["command"], "echo t");
    // Another session's entries are not this session's latest.
    let mut other = s.ctx.clone();
    other.session_id = "s2".to_string();
    assert!(
        result(&call(&other, "changes_read_latest", json!({})).await).starts_with("No changes")
    );
}

#[tokio::test]
async fn tools_changes_read_lists_the_sessions_entries_in_turn_order() {
    let s = setup("changes-all");
    let none = call(&s.ctx, "changes_read", json!({})).await;
    assert_eq!(
        (result(&none), none.ok),
        ("No changes recorded for session `s1` yet.", true)
    );
    let mut later = s.ctx.clone();
    later.turn = 7;
    later.agent = "Tester".to_string();
    assert!(
        call(&later, "shell_run", json!({"command": "echo t"}))
            .await
            .ok
    );
    assert!(
        call(
            &s.ctx,
            "write_file",
            json!({"path": "a.txt", "content": "1"})
        )
        .await
        .ok
    );
    let mut other = s.ctx.clone();
    other.session_id = "s2".to_string();
    assert!(
        call(
            &other,
            "write_file",
            json!({"path": "b.txt", "content": "2"})
        )
        .await
        .ok
    );
    let all = call(&s.ctx, "Changes-changes_read", Json::Null).await;
    assert!(all.ok);
    let entries: Json = serde_json::from_str(result(&all)).unwrap();
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 2, "only this session's entries: {entries:?}");
    assert_eq!(entries[0]["agent"], "Developer");
    assert_eq!(entries[0]["filesWritten"][0], "a.txt");
    assert_eq!(entries[1]["turnIndex"], 7);
    // The output is capped like any tool's.
    let mut capped = s.ctx.clone();
    capped.limits.output_cap = 64;
    let text = result(&call(&capped, "changes_read", json!({})).await).to_string();
    assert!(text.contains("[output truncated"), "{text}");
}

#[tokio::test]
async fn tools_notes_tools_are_not_run_outside_a_session() {
    let s = setup("notes-outside");
    assert_error(
        &call(
            &s.ctx,
            "scratchpad_write",
            json!({"key": "k", "value": "v"}),
        )
        .await,
        "the machine answers",
    );
}

#[tokio::test]
async fn tools_malformed_change_log_is_a_warning_not_a_failure() {
    let s = setup("bad-log");
    std::fs::create_dir_all(s.ctx.change_log.parent().unwrap()).unwrap();
    std::fs::write(&s.ctx.change_log, "{not json").unwrap();
    let write = call(
        &s.ctx,
        "write_file",
        json!({"path": "a.txt", "content": "1"}),
    )
    .await;
    assert!(write.ok);
    assert!(
        result(&write).contains("[warning: not recorded in the change log"),
        "{}",
        result(&write)
    );
    assert_eq!(s.sandbox.read("a.txt"), "1");
    assert_error(
        &call(&s.ctx, "changes_read_latest", json!({})).await,
        "not valid",
    );
}

#[tokio::test]
async fn tools_no_change_log_when_tracking_is_off() {
    let mut s = setup("no-log");
    s.ctx.change_log = PathBuf::new();
    assert!(
        call(
            &s.ctx,
            "write_file",
            json!({"path": "a.txt", "content": "1"})
        )
        .await
        .ok
    );
    assert!(!s.sandbox.path(".fuseraft").exists());
    assert_eq!(
        result(&call(&s.ctx, "changes_read_latest", json!({})).await),
        "Change tracking is off for this run."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tools_concurrent_calls_lose_no_records() {
    let s = setup("concurrent");
    let mut calls = Vec::new();
    for idx in 0..20 {
        let ctx = s.ctx.clone();
        calls.push(tokio::spawn(async move {
            call(
                &ctx,
                "write_file",
                json!({"path": format!("f{idx}.txt"), "content": "x"}),
            )
            .await
            .ok
        }));
    }
    for handle in calls {
        assert!(handle.await.unwrap());
    }
    assert_eq!(log(&s.ctx).entries[0].files_written.len(), 20);
}

#[tokio::test]
async fn tools_arguments_are_checked_never_panicking() {
    let s = setup("args");
    // Arguments sent as a JSON string are accepted.
    let stringy = call(
        &s.ctx,
        "write_file",
        Json::String(r#"{"path": "s.txt", "content": "ok"}"#.into()),
    )
    .await;
    assert!(stringy.ok, "{stringy:?}");
    assert_error(
        &call(&s.ctx, "write_file", Json::String("not json".into())).await,
        "JSON object",
    );
    assert_error(
        &call(&s.ctx, "read_file", json!([1, 2])).await,
        "JSON object",
    );
    assert_denied(&call(&s.ctx, "unheard_of", json!({})).await, "unknown tool");
    // Every tool, every odd argument: always a result.
    let odd = [
        Json::Null,
        json!(1),
        json!("x"),
        json!([]),
        json!({}),
        json!({"path": null}),
        json!({"path": true, "content": 1, "old": [], "new": {}, "command": 5}),
        json!({"path": "\u{0}", "content": "x", "old": "a", "new": "b"}),
        json!({"path": "", "content": "", "old": "", "new": ""}),
        json!({"path": "/", "content": "x"}),
        json!({"command": "true", "timeout_seconds": "abc"}),
        json!({"command": "true", "timeout_seconds": 1e308}),
        json!({"route_keyword": 3, "key": null}),
    ];
    for name in Tool::ALL.iter().map(|tool| tool.name()) {
        for args in &odd {
            let done = call(&s.ctx, name, args.clone()).await;
            assert!(done.result.is_some(), "{name} {args}");
        }
    }
    assert_error(
        &call(&s.ctx, "read_file", json!({"path": "a\u{0}b"})).await,
        "NUL",
    );
    assert!(!s.sandbox.path("x").exists());
}

#[tokio::test]
async fn tools_internal_tools_answer_their_argument() {
    let s = setup("internal");
    let handoff = call(
        &s.ctx,
        "Handoff-handoff",
        json!({"route_keyword": "HANDOFF TO TESTER"}),
    )
    .await;
    assert_eq!((result(&handoff), handoff.ok), ("HANDOFF TO TESTER", true));
    let finish = call(&s.ctx, "finish", json!({"key": "done", "value": "42"})).await;
    assert_eq!(result(&finish), "42");
    assert_error(
        &call(&s.ctx, "finish", json!({"key": "done"})).await,
        "`value`",
    );
    assert!(is_internal("handoff") && is_internal("Handoff-handoff") && is_internal("FINISH"));
    assert!(
        !is_internal("write_file")
            && !is_internal("shell_run")
            && !is_internal("changes_read_latest")
    );
}

#[test]
fn tools_schemas_per_plugin() {
    let names = |plugins: &[&str]| -> Vec<String> {
        schemas(&plugins.iter().map(|p| p.to_string()).collect::<Vec<_>>())
            .into_iter()
            .map(|schema| schema.name)
            .collect()
    };
    assert_eq!(
        names(&["FileSystem"]),
        [
            "read_file",
            "write_file",
            "patch_file",
            "list_files",
            "delete_file",
            "grep_file",
            "get_file_info",
            "get_file_summary",
            "list_directory",
            "create_directory",
            "copy_file",
            "move_file",
            "delete_directory",
            "set_permissions",
            "stat_file",
            "path_exists",
            "save_file_summary"
        ]
    );
    assert_eq!(
        names(&["Shell", "shell", "Changes"]),
        [
            "shell_run",
            "shell_run_script",
            "shell_run_background",
            "shell_get_job_status",
            "shell_get_job_output",
            "shell_kill_job",
            "shell_get_env",
            "shell_which",
            "shell_set_env",
            "shell_get_working_directory",
            "changes_read_latest",
            "changes_read"
        ]
    );
    assert_eq!(names(&["Handoff", "Finish"]), ["handoff", "finish"]);
    assert_eq!(names(&["git"]).len(), 16);
    assert!(names(&["Git"]).iter().all(|name| name.starts_with("git_")));
    assert!(names(&["NoSuchPlugin", ""]).is_empty());
    assert_eq!(
        names(&["search"]),
        [
            "search_files",
            "search_content",
            "search_symbol",
            "search_callers"
        ]
    );
    assert_eq!(
        names(&["SessionContext", "Chatroom"]),
        [
            "session_context_read",
            "session_context_write",
            "chatroom_send",
            "chatroom_read"
        ]
    );
    assert_eq!(names(&["scratchpad"]).len(), 5);
    assert_eq!(names(&["Json"]).len(), 8);
    assert_eq!(
        names(&["probe"]),
        [
            "probe_code",
            "probe_assert_output",
            "probe_compare_outputs",
            "probe_run_hypothesis"
        ]
    );
    let every: Vec<String> = fuseraft_compiler::ir::Plugin::ALL
        .iter()
        .map(|plugin| plugin.to_string())
        .collect();
    for schema in schemas(&every) {
        assert_eq!(schema.parameters["type"], "object", "{}", schema.name);
        assert!(!schema.description.is_empty());
        for required in schema.parameters["required"].as_array().unwrap() {
            assert!(schema.parameters["properties"]
                .get(required.as_str().unwrap())
                .is_some());
        }
    }
}

#[test]
fn tools_context_defaults() {
    let temp = Temp::new("ctx");
    let ctx = ToolContext::new(&temp.path("."), "s", "A", 0).unwrap();
    assert_eq!(ctx.work_dir, temp.0);
    assert_eq!(ctx.change_log, temp.0.join(".fuseraft/state/changes.json"));
    assert_eq!(ctx.limits.read_cap, 20_000);
    assert_eq!(ctx.limits.output_cap, 65_536);
    assert_eq!(ctx.limits.shell_timeout, Duration::from_secs(120));
    assert!(ToolContext::new(&temp.path("missing"), "s", "A", 0).is_err());
}
