//! Running the real `git` for the Git tools so that nothing in the repository (its
//! `.git/config`, an included config file, `.gitattributes`, hooks) can make git run a
//! program, and nothing in fuseraft's environment reaches it.
//!
//! Every invocation is `git --no-pager -c … <subcommand> …` with argv (never a shell), in
//! the OS sandbox (`crate::sandbox`), with:
//! - the environment cleared to the allow-list (no `GIT_*` of fuseraft's, no keys), plus
//!   `GIT_CONFIG_NOSYSTEM=1`, `GIT_TERMINAL_PROMPT=0`, `GIT_PAGER=cat`, `GIT_EDITOR=true`,
//!   `GIT_SEQUENCE_EDITOR=true`, `GIT_MERGE_AUTOEDIT=no` and `GIT_CEILING_DIRECTORIES` set
//!   to the sandbox root's parent (git never finds a repository above the root);
//! - the [`FIXED`] overrides (command-line `-c` wins over every config file): no hooks,
//!   no fsmonitor, no pager, no external diff, no credential helper, askpass or git proxy,
//!   plain `ssh`, no signing, no auto-gc, no submodule looked into or recursed into;
//! - the overrides of `probe.rs`, read from the configuration before each call: every
//!   transport's `protocol.<name>.allow` (only `https`, `http` and `ssh`), every driver's
//!   program emptied, every submodule ignored; a config that sets `core.worktree`, or that
//!   is too large or too slow to read whole, is refused.

use std::path::Path;
use std::time::Duration;

use tokio::process::Command;

use crate::tools::process::{self, Ended};
use crate::tools::{Outcome, ToolContext};

/// Overrides given to every git invocation.
pub(super) const FIXED: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.editor=true",
    "core.sshCommand=ssh",
    "core.askPass=",
    "core.alternateRefsCommand=",
    "core.quotePath=false",
    "credential.helper=",
    "diff.external=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "push.gpgSign=false",
    "log.showSignature=false",
    "merge.verifySignatures=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "core.gitProxy=",
    "color.ui=false",
    // No submodule is looked into or recursed into (`probe.rs` adds each submodule's own
    // `submodule.<name>.ignore=all`, which would otherwise win over `diff.ignoreSubmodules`).
    "submodule.recurse=false",
    "diff.ignoreSubmodules=all",
    "diff.submodule=short",
    "status.submoduleSummary=false",
    "fetch.recurseSubmodules=false",
    "push.recurseSubmodules=no",
];

/// What one git invocation may do.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Access {
    /// `.git` read-only; no optional locks taken.
    Read,
    /// `.git` writable for this call only.
    Write,
    /// `.git` writable and the network reachable (push, pull).
    WriteNetwork,
}

/// The result of a finished git command.
pub(super) struct Finished {
    pub ended: Ended,
    pub output: String,
}

/// Runs `git args…` in `dir` (an absolute directory inside the sandbox root).
pub(super) async fn git(
    ctx: &ToolContext,
    dir: &Path,
    access: Access,
    args: &[String],
    timeout: Duration,
) -> Result<Finished, Outcome> {
    let overrides = super::probe::overrides(ctx, dir).await?;
    let mut argv: Vec<String> = vec!["--no-pager".to_string()];
    let fixed = FIXED.iter().map(|item| item.to_string());
    for item in fixed
        .chain(super::probe::transport_overrides())
        .chain(overrides)
    {
        argv.push("-c".to_string());
        argv.push(item);
    }
    argv.extend(args.iter().cloned());
    let cap = ctx.limits.output_cap;
    let (ended, output) = spawn(ctx, dir, access, &argv, timeout, cap, true).await?;
    Ok(Finished { ended, output })
}

/// Starts `git argv…` in the sandbox with the hardened environment and waits for it.
pub(super) async fn spawn(
    ctx: &ToolContext,
    dir: &Path,
    access: Access,
    argv: &[String],
    timeout: Duration,
    cap: usize,
    merge_stderr: bool,
) -> Result<(Ended, String), Outcome> {
    if argv.iter().any(|arg| arg.contains('\0')) {
        return Err(Outcome::error(
            "the Git tools' arguments may not contain a NUL character",
        ));
    }
    // The read tools write nothing, not even the work tree.
    let (writable, network) = match access {
        Access::Read => (false, false),
        Access::Write => (true, false),
        Access::WriteNetwork => (true, true),
    };
    let mut policy = ctx.confinement.policy(crate::sandbox::Access {
        write: writable,
        git_write: writable,
        network,
    });
    policy.work_dir = dir.to_path_buf();
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let mut env: Vec<(String, String)> = [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_EDITOR", "true"),
        ("GIT_SEQUENCE_EDITOR", "true"),
        ("GIT_MERGE_AUTOEDIT", "no"),
    ]
    .iter()
    .map(|(name, value)| (name.to_string(), value.to_string()))
    .collect();
    if let Some(parent) = ctx.work_dir.parent() {
        env.push((
            "GIT_CEILING_DIRECTORIES".to_string(),
            parent.to_string_lossy().into_owned(),
        ));
    }
    if access == Access::Read {
        env.push(("GIT_OPTIONAL_LOCKS".to_string(), "0".to_string()));
    }
    let cmd = crate::sandbox::command_with_env(&ctx.sandbox, &policy, "git", &args, &env)
        .map_err(Outcome::error)?;
    let mut cmd = Command::from(cmd);
    cmd.current_dir(dir);
    process::run(cmd, timeout, cap, merge_stderr)
        .await
        .map_err(|error| {
            Outcome::error(format!(
                "could not start `git` in `{}`: {error} (is git installed?)",
                dir.display()
            ))
        })
}
