//! The Git plugin: upstream's tools over the real `git` binary. Reads: `git_status`,
//! `git_diff`, `git_log`, `git_show`, `git_branch_list`, `git_stash_list`. Writes (the
//! `git_write` policy category): `git_add`, `git_commit`, `git_checkout`,
//! `git_create_branch`, `git_init`, `git_stash`, `git_stash_pop`, `git_reset`, and, when
//! `network_api` allows them too, `git_push` and `git_pull`.
//!
//! Security decisions (the hardening of every invocation is in `hardened.rs`):
//! - The Git plugin is the sanctioned writer of `.git` (the file tools refuse it, and
//!   `shell_run` sees it read-only unless the policy grants git writes). It runs git
//!   inside the OS sandbox like any command: `.git` read-only for the read tools, writable
//!   for this one call for the write tools, the network only for push and pull; writes
//!   stay inside the work dir and the temp dirs.
//! - Arguments become argv, never shell text. A ref, branch, remote or mode that starts
//!   with `-` is refused (it would be read as an option); paths come after `--`; a commit
//!   or stash message is passed as `--message=…`.
//! - `repo_path` (and `git_init`'s `directory`) resolves race-free under the sandbox root
//!   (`crate::confine`) and may not be inside `.git` or fuseraft's state.
//! - `git_add` never stages fuseraft's own `.fuseraft/` (as upstream).
//! - `git_show` of `REV:path` for a credential file (`.env`, keys) is refused, as
//!   `read_file` refuses it.
//! - Output is capped (`Limits::output_cap`, and `max_lines` for diffs), the call has the
//!   shell's time limit, and every write is recorded in the change log (`commandsRun`;
//!   a new `HEAD` after a commit or pull in `gitCommits`).

mod arguments;
mod hardened;
mod probe;
mod schemas;

#[cfg(all(test, unix))]
mod tests;

#[cfg(all(test, unix))]
mod hostile_tests;

use crate::history::DenialKind;
use std::path::PathBuf;

use super::process::Ended;
use super::record::{cap_text, record_into, LOG_OUTPUT_CAP};
use super::{Args, Outcome, Tool, ToolContext};
use arguments::{blob_path, count, flag, lines, paths, revision};
use hardened::Access;

pub(crate) use schemas::schema_of;

use crate::sandbox::Grant;

/// Runs one Git tool.
pub(crate) async fn run(tool: Tool, args: &Args, ctx: &ToolContext) -> Outcome {
    match plan(tool, args, ctx) {
        Ok(plan) => execute(tool, plan, ctx).await,
        Err(outcome) => outcome,
    }
}

/// Given to every command that takes it: no submodule is looked into, whatever the
/// repository's `submodule.<name>.ignore` says (`probe.rs` overrides that for the others).
const NO_SUBMODULES: &str = "--ignore-submodules=all";

/// What one call will run.
struct Plan {
    dir: PathBuf,
    access: Access,
    args: Vec<String>,
    /// Keep at most this many lines of output (0: all).
    max_lines: usize,
}

fn plan(tool: Tool, args: &Args, ctx: &ToolContext) -> Result<Plan, Outcome> {
    let name = tool.name();
    let path_key = if tool == Tool::GitInit {
        "directory"
    } else {
        "repo_path"
    };
    let (mut dir, rel) = directory(name, args.opt_string(path_key)?, ctx, tool == Tool::GitInit)?;
    let access = if tool.needs_network() {
        Access::WriteNetwork
    } else if tool.category().is_some() {
        Access::Write
    } else {
        Access::Read
    };
    let strings = |items: &[&str]| {
        items
            .iter()
            .map(|item| item.to_string())
            .collect::<Vec<_>>()
    };
    let mut max_lines = 0;
    let args: Vec<String> = match tool {
        Tool::GitStatus => strings(&["status", "--short", "--branch", NO_SUBMODULES]),
        Tool::GitDiff => {
            max_lines = lines(args, 200)?;
            let mut list = strings(&["diff", "--no-ext-diff", "--no-textconv", NO_SUBMODULES]);
            if flag(args, "staged")? {
                list.push("--cached".into());
            }
            list
        }
        Tool::GitLog => {
            let count = count(args)?;
            let mut list = strings(&["log", "--oneline", "--decorate", "--no-color"]);
            list.push(format!("--max-count={count}"));
            if let Some(rev) = revision(name, "ref", args.opt_string("ref")?)? {
                list.push(rev);
            }
            list.push("--".into());
            list
        }
        Tool::GitShow => {
            max_lines = lines(args, 300)?;
            let rev = revision(name, "commit_ref", Some(args.string("commit_ref")?))?
                .ok_or_else(|| Outcome::error("tool `git_show` needs a non-empty `commit_ref`"))?;
            if let Some(path) = blob_path(&rev).filter(|path| super::is_credential_path(path)) {
                return Err(super::sandbox::credential_denial(path));
            }
            let mut list = strings(&[
                "show",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                NO_SUBMODULES,
            ]);
            list.push(rev);
            list.push("--".into());
            list
        }
        Tool::GitBranchList => {
            let mut list = strings(&["branch", "--no-color"]);
            if flag(args, "include_remotes")? {
                list.push("--all".into());
            }
            list
        }
        Tool::GitStashList => strings(&["stash", "list"]),
        Tool::GitAdd => {
            let paths = paths(args)?;
            let mut list = strings(&["add", "--"]);
            list.extend(paths);
            list.push(":(exclude,top).fuseraft".into());
            list
        }
        Tool::GitCommit => {
            let message = args.string("message")?;
            if message.trim().is_empty() {
                return Err(Outcome::error(
                    "tool `git_commit` needs a non-empty `message`",
                ));
            }
            let mut list = strings(&["commit"]);
            if flag(args, "stage_all")? {
                list.push("--all".into());
            }
            list.push(format!("--message={message}"));
            list
        }
        Tool::GitCheckout => {
            let target = revision(name, "target", Some(args.string("target")?))?
                .ok_or_else(|| Outcome::error("tool `git_checkout` needs a non-empty `target`"))?;
            if flag(args, "create_branch")? {
                strings(&["checkout", "-b", &target])
            } else {
                strings(&["checkout", &target])
            }
        }
        Tool::GitCreateBranch => {
            let branch = revision(name, "branch_name", Some(args.string("branch_name")?))?
                .ok_or_else(|| {
                    Outcome::error("tool `git_create_branch` needs a non-empty `branch_name`")
                })?;
            strings(&["checkout", "-b", &branch])
        }
        Tool::GitInit => {
            // The directory may not exist yet: git creates it, from the root.
            dir = ctx.work_dir.clone();
            let mut list = strings(&["init"]);
            if !rel.is_empty() {
                list.push(format!("./{rel}"));
            }
            list
        }
        Tool::GitStash => {
            let mut list = strings(&["stash", "push"]);
            if let Some(message) = args.opt_string("message")?.filter(|m| !m.trim().is_empty()) {
                list.push(format!("--message={message}"));
            }
            list
        }
        Tool::GitStashPop => strings(&["stash", "pop"]),
        Tool::GitReset => {
            let mode = args
                .opt_string("mode")?
                .unwrap_or("mixed")
                .trim()
                .to_ascii_lowercase();
            if !matches!(mode.as_str(), "soft" | "mixed" | "hard") {
                return Err(Outcome::error(format!(
                    "tool `git_reset`: `mode` must be `soft`, `mixed` or `hard`, not `{mode}`"
                )));
            }
            let rev = revision(name, "ref", args.opt_string("ref")?)?.unwrap_or("HEAD".into());
            vec!["reset".into(), format!("--{mode}"), rev, "--".into()]
        }
        Tool::GitPush | Tool::GitPull => {
            if ctx.sandbox.network == Grant::Block {
                return Err(Outcome::denied(
                    DenialKind::Permission,
                    format!(
                    "`{name}` needs the network, which the permission policy blocks (network_api)"
                ),
                ));
            }
            let mut list = vec![if tool == Tool::GitPush {
                "push"
            } else {
                "pull"
            }
            .to_string()];
            if tool == Tool::GitPush && flag(args, "set_upstream")? {
                list.push("--set-upstream".into());
            }
            let remote = revision(name, "remote", args.opt_string("remote")?)?;
            let branch = revision(name, "branch", args.opt_string("branch")?)?;
            match (remote, branch) {
                (Some(remote), branch) => {
                    list.push(remote);
                    list.extend(branch);
                }
                (None, Some(_)) => {
                    return Err(Outcome::error(format!(
                        "tool `{name}`: a `branch` needs its `remote`"
                    )))
                }
                (None, None) => {}
            }
            list
        }
        _ => return Err(Outcome::error(format!("`{name}` is not a Git tool"))),
    };
    if access != Access::Read && ctx.sandbox.git_write == Grant::Block {
        return Err(Outcome::denied(
            DenialKind::Permission,
            format!(
                "`{name}` writes to the repository, which the permission policy blocks (git_write)"
            ),
        ));
    }
    Ok(Plan {
        dir,
        access,
        args,
        max_lines,
    })
}

async fn execute(tool: Tool, mut plan: Plan, ctx: &ToolContext) -> Outcome {
    let timeout = ctx.limits.shell_timeout;
    if tool == Tool::GitAdd {
        // `git add` never meets a submodule (it would look into it): each is excluded.
        let pathspec = plan.args[2..].to_vec();
        match probe::gitlinks(ctx, &plan.dir, &pathspec).await {
            Ok(links) => plan.args.extend(
                links
                    .iter()
                    .map(|path| format!(":(exclude,top,literal){path}")),
            ),
            Err(outcome) => return outcome,
        }
    }
    let head_before = match tool {
        Tool::GitCommit | Tool::GitPull => head(ctx, &plan).await,
        _ => None,
    };
    let finished = match hardened::git(ctx, &plan.dir, plan.access, &plan.args, timeout).await {
        Ok(finished) => finished,
        Err(outcome) => return outcome,
    };
    let output = truncate_lines(&finished.output, plan.max_lines);
    let mut outcome = super::shell::render(finished.ended, &output, timeout);
    if outcome.ok && outcome.text.trim().is_empty() {
        outcome.text = format!("`git {}` succeeded (no output)", plan.args[0]);
    }
    if plan.access == Access::Read {
        return outcome;
    }
    let head_after = match (tool, outcome.ok) {
        (Tool::GitCommit | Tool::GitPull, true) => head(ctx, &plan).await,
        _ => None,
    };
    let commit = head_after.filter(|after| Some(after) != head_before.as_ref());
    let command = format!("git {}", plan.args.join(" "));
    let succeeded = outcome.ok;
    let logged = cap_text(&outcome.text, LOG_OUTPUT_CAP);
    record_into(&mut outcome, ctx, |entry| {
        entry.commands_run.push(crate::changes::Command {
            command,
            succeeded,
            output: logged,
        });
        entry.git_commits.extend(commit);
    });
    outcome
}

/// `HEAD` as `<sha> <subject>`, if there is one.
async fn head(ctx: &ToolContext, plan: &Plan) -> Option<String> {
    let args: Vec<String> = ["log", "-1", "--format=%H %s", "--"]
        .iter()
        .map(|arg| arg.to_string())
        .collect();
    let finished = hardened::git(
        ctx,
        &plan.dir,
        Access::Read,
        &args,
        ctx.limits.shell_timeout,
    )
    .await
    .ok()?;
    let text = finished.output.trim();
    (matches!(finished.ended, Ended::Exited(0)) && !text.is_empty()).then(|| text.to_string())
}

/// The directory a call acts in, absolute and relative to the root: `raw` resolved under
/// the sandbox root (the root itself when absent), outside `.git` and fuseraft's state.
fn directory(
    tool: &str,
    raw: Option<&str>,
    ctx: &ToolContext,
    may_be_missing: bool,
) -> Result<(PathBuf, String), Outcome> {
    let raw = raw
        .map(str::trim)
        .filter(|raw| !raw.is_empty() && *raw != ".");
    let Some(raw) = raw else {
        return Ok((ctx.work_dir.clone(), String::new()));
    };
    let root = super::sandbox::open_root(&ctx.work_dir)?;
    let resolved = super::sandbox::resolve(tool, &root, raw, true, may_be_missing)?;
    if let Some(what) = super::sandbox::protected_state(&resolved.rel) {
        return Err(Outcome::denied(
            DenialKind::Sandbox,
            format!("`{raw}` is {what}; the Git tools act on a work tree"),
        ));
    }
    let dir = ctx.work_dir.join(&resolved.rel);
    if !may_be_missing && !dir.is_dir() {
        return Err(Outcome::error(format!(
            "{tool}: `{raw}` is not a directory"
        )));
    }
    Ok((dir, resolved.rel))
}

/// The first `max` lines of `text` and how many were cut (0: all).
fn truncate_lines(text: &str, max: usize) -> String {
    let total = text.lines().count();
    if max == 0 || total <= max {
        return text.to_string();
    }
    let kept: Vec<&str> = text.lines().take(max).collect();
    format!(
        "{}\n[{} more lines not shown]",
        kept.join("\n"),
        total - max
    )
}
