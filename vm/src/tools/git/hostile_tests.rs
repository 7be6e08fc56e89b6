//! Hostile repositories that try to make git run a program through what the Git tools do
//! not list by name: a transport allowed by the repository's own `protocol.<name>.allow`,
//! a submodule with its own config, and a repository created under `git_write: block`. A
//! marker file outside the work dir must never appear.

use std::path::Path;

use fuseraft_compiler::ir::{Action, Category, Permissions, Preset};
use serde_json::json;

use super::tests::{assert_ok, assert_refused, call, git, policy, repo, text};
use crate::tools::tests::Temp;
use crate::tools::ToolContext;

/// The `locked-down` preset's policy; commands run without the OS sandbox when it cannot
/// start (a unit test has no launcher), so what git itself does is what is tested.
fn locked_down() -> crate::sandbox::Spec {
    let mut spec = crate::sandbox::Spec::new(
        None,
        &Permissions {
            preset: Preset::LockedDown,
            overrides: Vec::new(),
        },
    );
    spec.on_unavailable = crate::sandbox::OnUnavailable::Warn;
    spec
}

#[tokio::test]
async fn a_repository_allowing_a_transport_by_name_still_reaches_no_command() {
    let (temp, ctx) = repo("git-protocol");
    let outside = Temp::new("git-protocol-marker");
    let marker = outside.path("ran");
    let run = format!("touch {}", marker.display());
    // More specific than the command line's `protocol.allow=never`, so it used to win.
    for name in ["ext", "file", "git", "fd", "evil"] {
        git(
            &temp.0,
            &["config", &format!("protocol.{name}.allow"), "always"],
        );
    }
    git(
        &temp.0,
        &[
            "config",
            "remote.ext.url",
            &format!("ext::sh -c {}", run.replace(' ', "% ")),
        ],
    );
    // A local remote whose upload side is a command of the repository's choosing.
    let other = Temp::new("git-protocol-other");
    git(&other.0, &["init", "-q", "--bare"]);
    git(
        &temp.0,
        &["config", "remote.local.url", other.0.to_str().unwrap()],
    );
    git(&temp.0, &["config", "remote.local.uploadpack", &run]);
    git(&temp.0, &["config", "remote.local.receivepack", &run]);
    git(&temp.0, &["config", "remote.helper.url", "evil::whatever"]);
    let ctx = ToolContext {
        sandbox: policy(&[]),
        ..ctx
    };
    for (tool, remote) in [
        ("git_pull", "ext"),
        ("git_push", "ext"),
        ("git_pull", "local"),
        ("git_push", "local"),
        ("git_pull", "helper"),
    ] {
        let done = call(&ctx, tool, json!({"remote": remote, "branch": "main"})).await;
        assert!(
            !marker.exists(),
            "{tool} {remote} ran a command: {}",
            text(&done)
        );
        assert_refused(&done, "not allowed");
    }
}

/// A repository with a populated submodule `sub` whose own config runs a clean filter and
/// an fsmonitor that create `marker`, and whose `.gitmodules` asks to look into it.
fn with_hostile_submodule(name: &str, marker: &Path) -> (Temp, ToolContext, Temp) {
    let upstream = Temp::new(&format!("{name}-upstream"));
    git(&upstream.0, &["init", "-q", "-b", "main"]);
    upstream.write("f.txt", "x\n");
    upstream.write(".gitattributes", "* filter=evil\n");
    git(&upstream.0, &["add", "."]);
    git(
        &upstream.0,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "s",
        ],
    );
    let (temp, ctx) = repo(name);
    let source = upstream.0.to_str().unwrap();
    git(
        &temp.0,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            source,
            "sub",
        ],
    );
    git(
        &temp.0,
        &[
            "config",
            "-f",
            ".gitmodules",
            "submodule.sub.ignore",
            "none",
        ],
    );
    git(&temp.0, &["commit", "-qam", "add sub"]);
    let run = format!("touch {}", marker.display());
    let sub = temp.path("sub");
    git(
        &sub,
        &["config", "filter.evil.clean", &format!("{run}; cat")],
    );
    git(
        &sub,
        &["config", "filter.evil.smudge", &format!("{run}; cat")],
    );
    git(&sub, &["config", "core.fsmonitor", &format!("{run}; echo")]);
    git(&sub, &["config", "core.pager", &format!("{run}; cat")]);
    (temp, ctx, upstream)
}

#[tokio::test]
async fn a_submodule_with_its_own_config_is_never_looked_into() {
    let outside = Temp::new("git-submodule-marker");
    let marker = outside.path("ran");
    let (temp, ctx, _upstream) = with_hostile_submodule("git-submodule", &marker);
    // The submodule's file changed: looking into it would run its clean filter.
    let dirty = |text: &str, readme: bool| {
        temp.write("sub/f.txt", text);
        if readme {
            temp.write("README", text);
        }
    };
    let read_only = ToolContext {
        sandbox: locked_down(),
        ..ctx.clone()
    };
    dirty("changed\n", true);
    for (tool, args) in [
        ("git_status", json!({})),
        ("git_diff", json!({})),
        ("git_diff", json!({"staged": true})),
        ("git_show", json!({"commit_ref": "HEAD"})),
        ("git_log", json!({"count": 2})),
        ("git_branch_list", json!({})),
        ("git_stash_list", json!({})),
    ] {
        let done = call(&read_only, tool, args.clone()).await;
        assert!(
            !marker.exists(),
            "{tool} {args} ran the submodule's program: {}",
            text(&done)
        );
        assert_ok(&done);
    }
    let writer = ToolContext {
        sandbox: policy(&[]),
        ..ctx
    };
    for (tool, args) in [
        ("git_stash", json!({"message": "wip"})),
        ("git_stash_pop", json!({})),
        ("git_add", json!({"paths": "."})),
        ("git_commit", json!({"message": "all", "stage_all": true})),
        ("git_create_branch", json!({"branch_name": "other"})),
        ("git_checkout", json!({"target": "main"})),
        ("git_reset", json!({"mode": "mixed", "ref": "HEAD~1"})),
    ] {
        // A popped stash needs the file it changes untouched.
        dirty(&format!("{tool}\n"), tool != "git_stash_pop");
        let done = call(&writer, tool, args.clone()).await;
        assert!(
            !marker.exists(),
            "{tool} {args} ran the submodule's program: {}",
            text(&done)
        );
        assert_ok(&done);
    }
}

#[tokio::test]
async fn no_repository_is_created_under_git_write_block() {
    let temp = Temp::new("git-init-block");
    temp.write("file.txt", "x\n");
    let base = ToolContext::new(&temp.0, "s1", "Dev", 1).unwrap();
    for sandbox in [
        policy(&[(Category::GitWrite, Action::Block)]),
        locked_down(),
    ] {
        let ctx = ToolContext {
            sandbox,
            ..base.clone()
        };
        for args in [json!({}), json!({"directory": "nested"})] {
            let init = call(&ctx, "git_init", args.clone()).await;
            assert_refused(&init, "[DENIED: permission]");
            assert!(text(&init).contains("git_write"), "{args}: {}", text(&init));
        }
    }
    assert!(!temp.path(".git").exists(), "a repository was created");
    assert!(!temp.path("nested").exists(), "a repository was created");
}
