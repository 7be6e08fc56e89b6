//! The Git tools against the real `git` in temporary repositories: each tool's effect,
//! option injection, confinement of `repo_path`, the policy's denials, and repositories
//! whose config, attributes and hooks try to make git run a program (a marker file must
//! never appear).

use std::path::{Path, PathBuf};
use std::process::Command;

use fuseraft_compiler::ir::{Action, Category, Permissions, Preset};
use serde_json::{json, Value as Json};

use crate::changes::ChangeLog;
use crate::history::ToolCall;
use crate::tools::tests::Temp;
use crate::tools::ToolContext;

/// Runs the real git in `dir` (for setting repositories up), failing the test on error.
pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A repository with an identity and one commit of `README`.
pub(super) fn repo(name: &str) -> (Temp, ToolContext) {
    let temp = Temp::new(name);
    git(&temp.0, &["init", "-q", "-b", "main"]);
    git(&temp.0, &["config", "user.name", "Tester"]);
    git(&temp.0, &["config", "user.email", "tester@example.com"]);
    temp.write("README", "hello\n");
    git(&temp.0, &["add", "README"]);
    git(&temp.0, &["commit", "-q", "-m", "first commit"]);
    let ctx = ToolContext::new(&temp.0, "s1", "Dev", 1).unwrap();
    (temp, ctx)
}

pub(super) use crate::tools::testkit::call;

pub(super) fn text(call: &ToolCall) -> &str {
    call.result.as_deref().unwrap_or_default()
}

#[track_caller]
pub(super) fn assert_ok(call: &ToolCall) {
    assert!(call.ok, "{} failed: {}", call.name, text(call));
}

#[track_caller]
pub(super) fn assert_refused(call: &ToolCall, needle: &str) {
    assert!(!call.ok, "{} succeeded: {}", call.name, text(call));
    assert!(
        text(call).contains(needle),
        "`{needle}` not in {}",
        text(call)
    );
}

pub(super) fn policy(overrides: &[(Category, Action)]) -> crate::sandbox::Spec {
    crate::sandbox::Spec::new(
        None,
        &Permissions {
            preset: Preset::Unrestricted,
            overrides: overrides.to_vec(),
        },
    )
}

#[tokio::test]
async fn the_read_tools_show_the_repository() {
    let (temp, ctx) = repo("git-read");
    temp.write("README", "hello\nworld\n");
    temp.write("new.txt", "new\n");

    let status = call(&ctx, "git_status", json!({})).await;
    assert_ok(&status);
    assert!(text(&status).starts_with("## main"), "{}", text(&status));
    assert!(text(&status).contains(" M README"), "{}", text(&status));
    assert!(text(&status).contains("?? new.txt"), "{}", text(&status));

    let diff = call(&ctx, "git_diff", json!({})).await;
    assert_ok(&diff);
    assert!(text(&diff).contains("+world"), "{}", text(&diff));
    let staged = call(&ctx, "git_diff", json!({"staged": true})).await;
    assert_ok(&staged);
    assert!(!text(&staged).contains("+world"), "{}", text(&staged));
    let short = call(&ctx, "git_diff", json!({"max_lines": 2})).await;
    assert!(
        text(&short).contains("more lines not shown"),
        "{}",
        text(&short)
    );

    git(&temp.0, &["commit", "-q", "-am", "second commit"]);
    let log = call(&ctx, "git_log", json!({"count": 1})).await;
    assert_ok(&log);
    assert!(text(&log).contains("second commit"), "{}", text(&log));
    assert!(!text(&log).contains("first commit"), "{}", text(&log));
    let all = call(&ctx, "Git-git_log", json!({"ref": "main"})).await;
    assert!(text(&all).contains("first commit"), "{}", text(&all));

    let show = call(&ctx, "git_show", json!({"commit_ref": "HEAD"})).await;
    assert_ok(&show);
    assert!(text(&show).contains("second commit") && text(&show).contains("+world"));
    let blob = call(&ctx, "git_show", json!({"commit_ref": "HEAD~1:README"})).await;
    assert_eq!(text(&blob), "hello\n");
    // A committed credential is not shown, as `read_file` would not show it.
    temp.write(".env", "TOKEN=secret\n");
    git(&temp.0, &["add", ".env"]);
    git(&temp.0, &["commit", "-q", "-m", "oops"]);
    for rev in ["HEAD:.env", ":.env", ":0:.env", "main:./.env"] {
        let secret = call(&ctx, "git_show", json!({"commit_ref": rev})).await;
        assert!(
            text(&secret).starts_with("[DENIED: credentials]"),
            "{rev}: {}",
            text(&secret)
        );
    }
    git(&temp.0, &["reset", "-q", "--hard", "HEAD~1"]);

    git(&temp.0, &["branch", "feature"]);
    let branches = call(&ctx, "git_branch_list", json!({})).await;
    assert_ok(&branches);
    assert!(text(&branches).contains("* main") && text(&branches).contains("feature"));

    let stashes = call(&ctx, "git_stash_list", json!({})).await;
    assert_ok(&stashes);
    assert!(text(&stashes).contains("no output"), "{}", text(&stashes));
}

#[tokio::test]
async fn add_and_commit_write_the_repository_and_the_change_log() {
    let (temp, ctx) = repo("git-commit");
    temp.write("src/lib.rs", "pub fn f() {}\n");
    temp.write(".fuseraft/artifacts/notes.md", "internal\n");

    let add = call(&ctx, "git_add", json!({"paths": "."})).await;
    assert_ok(&add);
    let staged = git(&temp.0, &["diff", "--cached", "--name-only"]);
    assert_eq!(
        staged.trim(),
        "src/lib.rs",
        "fuseraft's own files are never staged"
    );

    let commit = call(&ctx, "git_commit", json!({"message": "--amend: add f"})).await;
    assert_ok(&commit);
    let subject = git(&temp.0, &["log", "-1", "--format=%s"]);
    assert_eq!(
        subject.trim(),
        "--amend: add f",
        "a message is never an option"
    );
    assert_eq!(git(&temp.0, &["rev-list", "--count", "HEAD"]).trim(), "2");

    let log = ChangeLog::load(&ctx.change_log).unwrap();
    let entry = &log.entries[0];
    let commands: Vec<&str> = entry
        .commands_run
        .iter()
        .map(|c| c.command.as_str())
        .collect();
    assert_eq!(commands[0], "git add -- . :(exclude,top).fuseraft");
    assert_eq!(commands[1], "git commit --message=--amend: add f");
    assert!(entry.commands_run.iter().all(|c| c.succeeded));
    let head = git(&temp.0, &["rev-parse", "HEAD"]);
    assert_eq!(entry.git_commits.len(), 1);
    assert!(entry.git_commits[0].starts_with(head.trim()));
    assert!(entry.git_commits[0].ends_with("--amend: add f"));

    // Nothing staged: the commit fails with git's reason, and is recorded as failed.
    let empty = call(&ctx, "git_commit", json!({"message": "nothing"})).await;
    assert_refused(&empty, "[EXIT 1]");
    assert!(
        text(&empty).contains("nothing added to commit"),
        "{}",
        text(&empty)
    );

    temp.write("README", "changed\n");
    let all = call(
        &ctx,
        "git_commit",
        json!({"message": "all", "stage_all": true}),
    )
    .await;
    assert_ok(&all);
    assert_eq!(
        git(&temp.0, &["status", "--porcelain"]).trim(),
        "?? .fuseraft/"
    );
}

#[tokio::test]
async fn branches_checkout_stash_reset_and_init() {
    let (temp, ctx) = repo("git-branches");
    let create = call(&ctx, "git_create_branch", json!({"branch_name": "feature"})).await;
    assert_ok(&create);
    assert_eq!(
        git(&temp.0, &["branch", "--show-current"]).trim(),
        "feature"
    );
    assert_ok(&call(&ctx, "git_checkout", json!({"target": "main"})).await);
    assert_eq!(git(&temp.0, &["branch", "--show-current"]).trim(), "main");
    let new = call(
        &ctx,
        "git_checkout",
        json!({"target": "topic", "create_branch": true}),
    )
    .await;
    assert_ok(&new);
    assert_eq!(git(&temp.0, &["branch", "--show-current"]).trim(), "topic");

    // A file restored from the index.
    temp.write("README", "scribbled\n");
    assert_ok(&call(&ctx, "git_checkout", json!({"target": "README"})).await);
    assert_eq!(temp.read("README"), "hello\n");

    temp.write("README", "work in progress\n");
    assert_ok(&call(&ctx, "git_stash", json!({"message": "wip readme"})).await);
    assert_eq!(temp.read("README"), "hello\n");
    let list = call(&ctx, "git_stash_list", json!({})).await;
    assert!(text(&list).contains("wip readme"), "{}", text(&list));
    assert_ok(&call(&ctx, "git_stash_pop", json!({})).await);
    assert_eq!(temp.read("README"), "work in progress\n");

    git(&temp.0, &["commit", "-q", "-am", "second"]);
    assert_ok(&call(&ctx, "git_reset", json!({"mode": "soft", "ref": "HEAD~1"})).await);
    assert_eq!(git(&temp.0, &["rev-list", "--count", "HEAD"]).trim(), "1");
    assert_eq!(
        git(&temp.0, &["diff", "--cached", "--name-only"]).trim(),
        "README"
    );
    assert_ok(&call(&ctx, "git_reset", json!({"mode": "HARD"})).await);
    assert_eq!(temp.read("README"), "hello\n");
    assert_refused(
        &call(&ctx, "git_reset", json!({"mode": "keep"})).await,
        "must be `soft`, `mixed` or `hard`",
    );

    let init = call(&ctx, "git_init", json!({"directory": "sub/project"})).await;
    assert_ok(&init);
    assert!(temp.path("sub/project/.git/HEAD").is_file());
    let nested = call(&ctx, "git_status", json!({"repo_path": "sub/project"})).await;
    assert_ok(&nested);
    assert!(
        text(&nested).contains("No commits yet"),
        "{}",
        text(&nested)
    );
}

#[tokio::test]
async fn options_are_never_smuggled_in_through_arguments() {
    let (temp, ctx) = repo("git-options");
    let outside = Temp::new("git-options-outside");
    let target = outside.path("leak.txt");
    let output = format!("--output={}", target.display());
    for (tool, args) in [
        ("git_log", json!({"ref": output})),
        ("git_show", json!({"commit_ref": output})),
        ("git_checkout", json!({"target": "--orphan=evil"})),
        ("git_create_branch", json!({"branch_name": "-D"})),
        ("git_reset", json!({"ref": "--hard"})),
        ("git_push", json!({"remote": "--exec=touch pwned"})),
        ("git_log", json!({"ref": "  --all"})),
    ] {
        let refused = call(&ctx, tool, args).await;
        assert_refused(&refused, "[DENIED: git]");
        assert!(text(&refused).contains("would be read as an option"));
    }
    assert!(!target.exists(), "`--output` wrote outside the work dir");
    // Paths go after `--`: an option-looking path is a path that does not exist.
    let add = call(&ctx, "git_add", json!({"paths": ["--chmod=+x", "README"]})).await;
    assert_refused(&add, "did not match any files");
    assert_eq!(git(&temp.0, &["branch", "--list"]).trim(), "* main");
    // Bad argument types are results, not panics.
    for (tool, args) in [
        ("git_add", json!({"paths": 5})),
        ("git_add", json!({"paths": []})),
        ("git_commit", json!({"message": "  "})),
        ("git_log", json!({"count": -3})),
        ("git_diff", json!({"staged": "maybe"})),
        ("git_show", json!({})),
        ("git_status", json!({"repo_path": 7})),
        ("git_pull", json!({"branch": "main"})),
    ] {
        let bad = call(&ctx, tool, args).await;
        assert!(text(&bad).starts_with("[ERROR]"), "{tool}: {}", text(&bad));
    }
}

#[tokio::test]
async fn repo_path_stays_in_the_work_tree() {
    let (temp, ctx) = repo("git-repo-path");
    let outside = Temp::new("git-repo-path-outside");
    git(&outside.0, &["init", "-q"]);
    std::os::unix::fs::symlink(&outside.0, temp.path("out")).unwrap();
    let escape = call(&ctx, "git_status", json!({"repo_path": "../"})).await;
    assert_refused(&escape, "[DENIED: sandbox]");
    let link = call(&ctx, "git_status", json!({"repo_path": "out"})).await;
    assert_refused(&link, "[DENIED: sandbox]");
    let absolute = call(&ctx, "git_init", json!({"directory": outside.0.join("x")})).await;
    assert_refused(&absolute, "[DENIED: sandbox]");
    assert!(!outside.path("x").exists());
    for inside_git in [".git", ".git/hooks", ".GIT"] {
        let denied = call(&ctx, "git_init", json!({"directory": inside_git})).await;
        assert_refused(&denied, "the git repository's own state");
    }
    let state = call(
        &ctx,
        "git_status",
        json!({"repo_path": ".fuseraft/sessions"}),
    )
    .await;
    assert!(!state.ok, "{}", text(&state));
}

#[tokio::test]
async fn git_never_finds_a_repository_above_the_work_dir() {
    // The work dir is a plain directory inside someone's repository (a dotfiles home).
    let (home, _) = repo("git-ceiling");
    home.write("project/file.txt", "x\n");
    let ctx = ToolContext::new(&home.path("project"), "s1", "Dev", 1).unwrap();
    let status = call(&ctx, "git_status", json!({})).await;
    assert_refused(&status, "not a git repository");
    let add = call(&ctx, "git_add", json!({"paths": "file.txt"})).await;
    assert_refused(&add, "not a git repository");
    assert_eq!(
        git(&home.0, &["diff", "--cached", "--name-only"]).trim(),
        ""
    );
}

/// Plants, in `repo`'s config, attributes and hooks, every way to make git run a program
/// that creates `marker`.
fn plant(temp: &Temp, marker: &Path) {
    let run = format!("touch {}", marker.display());
    let config: Vec<(String, String)> = [
        ("core.fsmonitor", format!("{run}; echo")),
        ("core.pager", format!("{run}; cat")),
        ("pager.log", format!("{run}; cat")),
        ("core.editor", run.clone()),
        ("core.sshCommand", run.clone()),
        ("core.askPass", run.clone()),
        ("diff.external", run.clone()),
        ("credential.helper", format!("!{run}")),
        ("filter.evil.clean", format!("{run}; cat")),
        ("filter.evil.smudge", format!("{run}; cat")),
        ("filter.Evil2.process", run.clone()),
        ("diff.evil.textconv", format!("{run}; cat")),
        ("diff.evil.command", run.clone()),
        ("merge.evil.driver", run.clone()),
        ("commit.gpgSign", "true".into()),
        ("gpg.program", run.clone()),
        ("log.showSignature", "true".into()),
        ("remote.origin.url", "../bare.git".into()),
        ("remote.origin.receivepack", run.clone()),
        ("remote.origin.uploadpack", run.clone()),
        (
            "remote.ext.url",
            format!("ext::sh -c {}", run.replace(' ', "% ")),
        ),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value))
    .collect();
    for (key, value) in &config {
        git(&temp.0, &["config", key, value]);
    }
    temp.write(
        ".gitattributes",
        "* filter=evil diff=evil merge=evil\n*.txt filter=Evil2\n",
    );
    for hook in [
        "pre-commit",
        "commit-msg",
        "prepare-commit-msg",
        "post-commit",
        "post-checkout",
        "pre-push",
        "post-merge",
        "pre-auto-gc",
        "reference-transaction",
        "post-index-change",
        "fsmonitor-watchman",
    ] {
        let path = temp.path(&format!(".git/hooks/{hook}"));
        std::fs::write(&path, format!("#!/bin/sh\n{run}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[tokio::test]
async fn a_hostile_repository_never_makes_git_run_a_program() {
    let (temp, ctx) = repo("git-hostile");
    let outside = Temp::new("git-hostile-marker");
    let marker: PathBuf = outside.path("ran");
    // A bare repository next to it, as the configured remote: a local push would run its
    // hooks (which git does not pass our overrides to).
    let bare = temp.0.parent().unwrap().join(format!(
        "{}-bare.git",
        temp.0.file_name().unwrap().to_string_lossy()
    ));
    git(
        temp.0.parent().unwrap(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    plant(&temp, &marker);
    let bare_hook = bare.join("hooks/pre-receive");
    std::fs::write(
        &bare_hook,
        format!("#!/bin/sh\ntouch {}\n", marker.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bare_hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(
        &temp.0,
        &["config", "remote.local.url", bare.to_str().unwrap()],
    );
    temp.write("notes.txt", "notes\n");
    temp.write("README", "hello\nagain\n");

    let spec = policy(&[]);
    let ctx = ToolContext {
        sandbox: spec,
        ..ctx
    };
    let steps: Vec<(&str, Json)> = vec![
        ("git_status", json!({})),
        ("git_diff", json!({})),
        (
            "git_add",
            json!({"paths": "README notes.txt .gitattributes"}),
        ),
        ("git_diff", json!({"staged": true})),
        ("git_commit", json!({"message": "planted"})),
        ("git_log", json!({"count": 3})),
        ("git_show", json!({"commit_ref": "HEAD"})),
        ("git_create_branch", json!({"branch_name": "other"})),
        ("git_checkout", json!({"target": "main"})),
        ("git_stash_list", json!({})),
        ("git_branch_list", json!({"include_remotes": true})),
        ("git_reset", json!({"mode": "mixed"})),
        ("git_push", json!({"remote": "origin", "branch": "main"})),
        ("git_push", json!({"remote": "local", "branch": "main"})),
        ("git_push", json!({"remote": "ext", "branch": "main"})),
        ("git_pull", json!({"remote": "local", "branch": "main"})),
    ];
    let mut results = Vec::new();
    for (tool, args) in steps {
        let done = call(&ctx, tool, args.clone()).await;
        assert!(
            !marker.exists(),
            "{tool} {args} ran a program from the repository: {}",
            text(&done)
        );
        results.push((tool, done));
    }
    // The reads and writes still work; the local and `ext::` remotes are refused by git.
    for (tool, done) in &results {
        match *tool {
            "git_push" | "git_pull" => {
                assert!(!done.ok, "{tool}: {}", text(done));
                assert!(text(done).contains("not allowed"), "{tool}: {}", text(done));
            }
            _ => assert!(done.ok, "{tool}: {}", text(done)),
        }
    }
    assert_eq!(
        git(&temp.0, &["log", "-1", "--format=%s", "main"]).trim(),
        "planted"
    );
    let _ = std::fs::remove_dir_all(&bare);
}

#[tokio::test]
async fn a_repository_pointing_its_work_tree_elsewhere_is_refused() {
    let (temp, ctx) = repo("git-worktree");
    let outside = Temp::new("git-worktree-outside");
    git(
        &temp.0,
        &["config", "core.worktree", outside.0.to_str().unwrap()],
    );
    let status = call(&ctx, "git_checkout", json!({"target": "README"})).await;
    assert_refused(&status, "`core.worktree`");
    assert!(!outside.path("README").exists());
}

#[tokio::test]
async fn push_and_pull_need_the_network_and_git_writes_need_git_write() {
    let (temp, ctx) = repo("git-policy");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/repo.git", listener.local_addr().unwrap());
    git(&temp.0, &["remote", "add", "origin", &url]);

    let offline = ToolContext {
        sandbox: policy(&[(Category::NetworkApi, Action::Block)]),
        ..ctx.clone()
    };
    for tool in ["git_push", "git_pull"] {
        let denied = call(&offline, tool, json!({"remote": "origin"})).await;
        assert_refused(&denied, "[DENIED: permission]");
        assert!(text(&denied).contains("network_api"), "{}", text(&denied));
    }
    let read_only = ToolContext {
        sandbox: policy(&[(Category::GitWrite, Action::Block)]),
        ..ctx.clone()
    };
    temp.write("x.txt", "x\n");
    let denied = call(&read_only, "git_add", json!({"paths": "x.txt"})).await;
    assert_refused(&denied, "(git_write)");
    assert_eq!(
        git(&temp.0, &["diff", "--cached", "--name-only"]).trim(),
        ""
    );
    assert_ok(&call(&read_only, "git_status", json!({})).await);

    // With the network, a push really goes out: the loopback server sees git's request.
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        listener.set_nonblocking(true).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                Err(error) => return format!("no connection: {error}"),
            }
        };
        stream.set_nonblocking(false).unwrap();
        let mut request = vec![0u8; 4096];
        let n = stream.read(&mut request).unwrap_or(0);
        let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        String::from_utf8_lossy(&request[..n]).into_owned()
    });
    let push = call(
        &ctx,
        "git_push",
        json!({"remote": "origin", "branch": "main"}),
    )
    .await;
    assert!(!push.ok, "{}", text(&push));
    let request = server.join().unwrap();
    assert!(
        request.starts_with("GET /repo.git/info/refs?service=git-receive-pack"),
        "{request}"
    );
    let log = ChangeLog::load(&ctx.change_log).unwrap();
    let pushed = &log.entries[0].commands_run;
    assert_eq!(pushed.last().unwrap().command, "git push origin main");
    assert!(!pushed.last().unwrap().succeeded);
}

#[tokio::test]
async fn a_driver_hidden_in_a_huge_config_is_refused_not_missed() {
    let (temp, ctx) = repo("git-huge-config");
    let outside = Temp::new("git-huge-config-marker");
    let marker = outside.path("ran");
    // Over 4 MiB of names around one clean filter, past what the probe reads.
    let mut padding = String::from("[pad]\n");
    for n in 0..300_000 {
        padding.push_str(&format!("\tkey{n:07} = x\n"));
    }
    let mut config = std::fs::read_to_string(temp.path(".git/config")).unwrap();
    config.push_str(&padding);
    config.push_str(&format!(
        "[filter \"evil\"]\n\tclean = touch {}; cat\n",
        marker.display()
    ));
    config.push_str(&padding.replace("[pad]", "[pad2]"));
    std::fs::write(temp.path(".git/config"), config).unwrap();
    temp.write(".gitattributes", "* filter=evil\n");
    temp.write("README", "changed\n");
    let add = call(&ctx, "git_add", json!({"paths": "README"})).await;
    assert_refused(&add, "could not check");
    let diff = call(&ctx, "git_diff", json!({})).await;
    assert_refused(&diff, "could not check");
    assert!(!marker.exists());
}

#[tokio::test]
async fn a_nul_in_an_argument_is_an_error_not_a_crash() {
    let (_temp, ctx) = repo("git-nul");
    let commit = call(
        &ctx,
        "git_commit",
        json!({"message": "a\u{0}b", "stage_all": true}),
    )
    .await;
    assert_eq!(
        text(&commit),
        "[ERROR] the Git tools' arguments may not contain a NUL character"
    );
}
