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
//!   no fsmonitor, no pager, no external diff, no credential helper or askpass, plain
//!   `ssh`, no signing, no auto-gc, no submodule recursion, and only the `https`, `http`
//!   and `ssh` transports (`file`, local paths and `ext::` are refused, so a push cannot run
//!   a local repository's hooks or a command);
//! - for every driver the repository's config names (read first with `git config --list
//!   --name-only`, includes followed), its program emptied: `filter.*.clean`, `.smudge`,
//!   `.process` (and `.required` false), `diff.*.textconv`, `diff.*.command`,
//!   `merge.*.driver`. An emptied filter is skipped; an emptied diff or merge driver fails
//!   the command instead of running anything. Diffs are shown with `--no-ext-diff
//!   --no-textconv`, so they still work;
//! - a repository whose config sets `core.worktree` is refused (git would act on another
//!   directory), and so is one whose config listing is too large to read whole
//!   ([`PROBE_CAP`]) or too slow to read: no driver may hide in what was not read.

use crate::history::DenialKind;
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
    "submodule.recurse=false",
    "color.ui=false",
    "protocol.allow=never",
    "protocol.https.allow=always",
    "protocol.http.allow=always",
    "protocol.ssh.allow=always",
];

/// How long the configuration probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most config names the probe reads, in bytes: a config padded past it is refused, so
/// no driver can hide in output that was cut.
const PROBE_CAP: usize = 4 * 1024 * 1024;

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
    let overrides = driver_overrides(ctx, dir).await?;
    let mut argv: Vec<String> = vec!["--no-pager".to_string()];
    for item in FIXED.iter().map(|item| item.to_string()).chain(overrides) {
        argv.push("-c".to_string());
        argv.push(item);
    }
    argv.extend(args.iter().cloned());
    let cap = ctx.limits.output_cap;
    let (ended, output) = spawn(ctx, dir, access, &argv, timeout, cap, true).await?;
    Ok(Finished { ended, output })
}

/// The `-c` items that empty the programs of the drivers the config names; an error for a
/// config git must not run with.
async fn driver_overrides(ctx: &ToolContext, dir: &Path) -> Result<Vec<String>, Outcome> {
    let argv: Vec<String> = ["--no-pager", "config", "--list", "--name-only", "-z"]
        .iter()
        .map(|arg| arg.to_string())
        .collect();
    let (ended, output) = spawn(
        ctx,
        dir,
        Access::Read,
        &argv,
        PROBE_TIMEOUT,
        PROBE_CAP,
        false,
    )
    .await?;
    // Outside a repository `git config --list` still lists the user's own config (exit 0).
    match ended {
        Ended::Exited(0) => {}
        Ended::TimedOut => {
            return Err(Outcome::denied(DenialKind::Git,format!(
                "reading the repository's config took over {}s; the Git tools refuse to run with a config they could not check",
                PROBE_TIMEOUT.as_secs()
            )))
        }
        // A config git cannot read stops every git command the same way.
        _ => return Ok(Vec::new()),
    }
    // Names never hold a newline, so this is the capture's own cut.
    if output.contains("\n[output truncated: ") {
        return Err(Outcome::denied(DenialKind::Git,format!(
            "the repository's config names over {} MiB of settings; the Git tools refuse to run with a config they could not check",
            PROBE_CAP / (1024 * 1024)
        )));
    }
    let mut overrides = Vec::new();
    for name in output
        .split('\0')
        .map(str::trim)
        .filter(|name| !name.is_empty())
    {
        let lower = name.to_ascii_lowercase();
        if lower == "core.worktree" {
            return Err(Outcome::denied(
                DenialKind::Git,
                "the repository's config sets `core.worktree`, which points git at another directory; the Git tools refuse to run there",
            ));
        }
        let Some((section, rest)) = lower.split_once('.') else {
            continue;
        };
        let Some((_, key)) = rest.rsplit_once('.') else {
            continue;
        };
        // The subsection keeps its case: take it from the name as git printed it.
        let prefix = &name[..name.len() - key.len()];
        let value = match (section, key) {
            ("filter", "clean" | "smudge" | "process") => "",
            ("filter", "required") => "false",
            ("diff", "textconv" | "command") => "",
            ("merge", "driver") => "",
            _ => continue,
        };
        let item = format!("{prefix}{key}={value}");
        if !overrides.contains(&item) {
            overrides.push(item);
        }
    }
    Ok(overrides)
}

/// Starts `git argv…` in the sandbox with the hardened environment and waits for it.
async fn spawn(
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
    let cmd =
        crate::sandbox::command(&ctx.sandbox, &policy, "git", &args).map_err(Outcome::error)?;
    let mut cmd = Command::from(cmd);
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env("GIT_EDITOR", "true")
        .env("GIT_SEQUENCE_EDITOR", "true")
        .env("GIT_MERGE_AUTOEDIT", "no")
        .current_dir(dir);
    if let Some(parent) = ctx.work_dir.parent() {
        cmd.env("GIT_CEILING_DIRECTORIES", parent);
    }
    if access == Access::Read {
        cmd.env("GIT_OPTIONAL_LOCKS", "0");
    }
    process::run(cmd, timeout, cap, merge_stderr)
        .await
        .map_err(|error| {
            Outcome::error(format!(
                "could not start `git` in `{}`: {error} (is git installed?)",
                dir.display()
            ))
        })
}
