//! The function schemas of the Git tools offered to models (upstream's parameters, in
//! snake case like the other tools).

use serde_json::json;

use crate::effect::ToolSchema;
use crate::tools::{schema, string_prop, Tool};

/// The schema of one Git tool.
pub(crate) fn schema_of(tool: Tool) -> ToolSchema {
    let repo = || {
        string_prop("Optional: the repository's directory, relative to the work directory (default: the work directory).")
    };
    let lines = |default: u32| json!({"type": "integer", "description": format!("Optional: show at most this many lines (default {default}).")});
    let name = tool.name();
    match tool {
        Tool::GitStatus => schema(name, "Show the working tree's status (short form, with the branch).", json!({"repo_path": repo()}), &[]),
        Tool::GitDiff => schema(
            name,
            "Show the unstaged changes of the working tree, or the staged ones.",
            json!({
                "repo_path": repo(),
                "staged": {"type": "boolean", "description": "Optional: show the staged changes instead (default false)."},
                "max_lines": lines(200),
            }),
            &[],
        ),
        Tool::GitLog => schema(
            name,
            "List recent commits, one line each, newest first.",
            json!({
                "repo_path": repo(),
                "count": {"type": "integer", "description": "Optional: how many commits (default 10)."},
                "ref": string_prop("Optional: the branch or ref to list from (default: HEAD)."),
            }),
            &[],
        ),
        Tool::GitShow => schema(
            name,
            "Show a commit (message and diff), or a file at a revision as `REV:path`.",
            json!({
                "commit_ref": string_prop("The commit hash, ref, or `REV:path`."),
                "repo_path": repo(),
                "max_lines": lines(300),
            }),
            &["commit_ref"],
        ),
        Tool::GitBranchList => schema(
            name,
            "List the branches; the current one is marked `*`.",
            json!({
                "repo_path": repo(),
                "include_remotes": {"type": "boolean", "description": "Optional: list remote-tracking branches too (default false)."},
            }),
            &[],
        ),
        Tool::GitStashList => schema(name, "List the stashed change sets.", json!({"repo_path": repo()}), &[]),
        Tool::GitAdd => schema(
            name,
            "Stage files for the next commit (never fuseraft's own `.fuseraft/`).",
            json!({
                "paths": string_prop("The paths to stage, separated by spaces, or `.` for everything."),
                "repo_path": repo(),
            }),
            &["paths"],
        ),
        Tool::GitCommit => schema(
            name,
            "Commit the staged changes.",
            json!({
                "message": string_prop("The commit message."),
                "repo_path": repo(),
                "stage_all": {"type": "boolean", "description": "Optional: stage every change to tracked files first (default false)."},
            }),
            &["message"],
        ),
        Tool::GitCheckout => schema(
            name,
            "Switch to a branch or commit, or restore a file from the index.",
            json!({
                "target": string_prop("The branch, commit or file path."),
                "repo_path": repo(),
                "create_branch": {"type": "boolean", "description": "Optional: create `target` as a new branch from HEAD (default false)."},
            }),
            &["target"],
        ),
        Tool::GitCreateBranch => schema(
            name,
            "Create a branch from HEAD and switch to it.",
            json!({"branch_name": string_prop("The new branch's name."), "repo_path": repo()}),
            &["branch_name"],
        ),
        Tool::GitInit => schema(
            name,
            "Create a git repository.",
            json!({"directory": string_prop("Optional: the directory, relative to the work directory (default: the work directory).")}),
            &[],
        ),
        Tool::GitStash => schema(
            name,
            "Stash the working tree's changes.",
            json!({"message": string_prop("Optional: a message for the stash."), "repo_path": repo()}),
            &[],
        ),
        Tool::GitStashPop => schema(name, "Apply the newest stash and drop it.", json!({"repo_path": repo()}), &[]),
        Tool::GitReset => schema(
            name,
            "Reset HEAD to a ref: `soft` moves HEAD only, `mixed` also unstages, `hard` also discards the working tree's changes.",
            json!({
                "mode": {"type": "string", "enum": ["soft", "mixed", "hard"], "description": "Optional: the mode (default `mixed`)."},
                "ref": string_prop("Optional: the target ref (default `HEAD`)."),
                "repo_path": repo(),
            }),
            &[],
        ),
        Tool::GitPush => schema(
            name,
            "Push commits to a remote (needs the network).",
            json!({
                "remote": string_prop("Optional: the remote (default: the branch's upstream)."),
                "branch": string_prop("Optional: the branch to push."),
                "set_upstream": {"type": "boolean", "description": "Optional: make it the branch's upstream (default false)."},
                "repo_path": repo(),
            }),
            &[],
        ),
        _ => schema(
            name,
            "Pull changes from a remote into the current branch (needs the network).",
            json!({
                "remote": string_prop("Optional: the remote (default: the branch's upstream)."),
                "branch": string_prop("Optional: the branch to pull."),
                "repo_path": repo(),
            }),
            &[],
        ),
    }
}
