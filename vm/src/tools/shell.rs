//! The Shell tools that run a command to its end: `shell_run {command, timeout_seconds?}`
//! and `shell_run_script {script, timeout_seconds?}`.
//!
//! Security and robustness decisions:
//! - The command runs as `bash -c` in the sandbox root under the OS sandbox
//!   (`crate::sandbox`): writes only beneath the work dir and the temp dirs, `.git`
//!   read-only unless the policy grants git writes, fuseraft's state read-only always, no
//!   network unless `network_api` grants it, its whole process tree in a PID namespace
//!   that ends with it. So `git_write` and `network_api` hold however the command is
//!   spelled; [`is_git_write`] (the command text) only decides whether to *ask* first, and
//!   an approved git write gets a writable `.git`.
//! - Where the OS sandbox is unavailable, `Security.Sandbox` decides: `refuse` (the command
//!   is not run) or `warn` (it runs unconfined, with the user's rights, after one warning).
//! - Standard input is closed (`/dev/null`: a command never waits on the terminal) and
//!   `GIT_TERMINAL_PROMPT=0` (git fails instead of prompting for credentials).
//! - The environment is built from an allow-list (`crate::sandbox::env`): API keys, every
//!   model's `ApiKeyEnvVar` and other credentials never reach the command.
//! - When the command ends, or its time is up, its process group is killed (`SIGKILL`),
//!   and with it the sandbox's init, which takes every process of the namespace down
//!   (daemons that left the group with `setsid` included). Output is then awaited for at
//!   most [`DRAIN_GRACE`] more and the pipe is closed.
//! - The time limit is `Limits::shell_timeout`; a model's `timeout_seconds` can only
//!   shorten it.
//! - stdout and stderr go to one pipe (`exec 2>&1`, in order), capped at
//!   `Limits::output_cap` in memory as it is read: the first and last halves are kept,
//!   with `[output truncated: N bytes omitted]` between them.
//! - Every command is recorded in the change log (`commandsRun`: command, succeeded =
//!   exit 0, output capped to 2 KB); a command that creates commits (`git commit`,
//!   `merge`, ...) and succeeds also adds the new `HEAD` (`<sha> <subject>`) to
//!   `gitCommits` (or the command itself when the work dir is not a git repository); that
//!   `git log` probe runs in the sandbox too (read-only `.git`, no network).

use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use regex::Regex;
use tokio::process::Command;

use super::process::{self, format_secs, join_prefixed, Ended};
use super::record::{cap_text, record_into, LOG_OUTPUT_CAP};
use super::{Args, Outcome, ToolContext};

/// How long the `git log` probes around a committing command may take.
const GIT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether an environment variable's name looks like a credential (commands get an
/// allow-listed environment, `crate::sandbox::env`, which withholds these too).
pub fn is_secret_env(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "_API_KEY",
        "_APIKEY",
        "_ACCESS_KEY",
        "_SECRET_ACCESS_KEY",
        "_AUTH_TOKEN",
    ]
    .iter()
    .any(|suffix| upper.ends_with(suffix))
        || upper == "API_KEY"
}

fn git_regex(subcommands: &str) -> Regex {
    // `git`, then global options (`-C dir`, `-c key=value`, `--git-dir dir`, `--flag`), then
    // the subcommand as the first word that is not an option.
    let pattern = format!(
        r"(?:^|[\s;&|(`$])git(?:\s+(?:-[Cc]|--git-dir|--work-tree|--namespace)\s+\S+|\s+-\S+)*\s+(?:{subcommands})(?:\s|$|[;&|)])"
    );
    Regex::new(&pattern).expect("the git command pattern is a valid regex")
}

/// Whether a shell command runs a git subcommand that creates commits.
pub fn creates_commit(command: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| git_regex("commit|merge|cherry-pick|revert|am|rebase|pull"))
        .is_match(command)
}

/// Whether a shell command runs a git subcommand that changes the repository, its index,
/// its refs or a remote (the permission category `git_write`).
pub fn is_git_write(command: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        git_regex(
            "add|am|apply|branch|checkout|cherry-pick|clean|clone|commit|fetch|gc|init|merge|mv|notes|pull|push|\
             rebase|reset|restore|revert|rm|stash|submodule|switch|tag|update-index|update-ref|worktree",
        )
    })
    .is_match(command)
}

/// `shell_run {command, timeout_seconds?}`.
pub(crate) async fn run(args: &Args, ctx: &ToolContext) -> Outcome {
    let command = match args.string("command") {
        Ok(command) => command,
        Err(outcome) => return outcome,
    };
    run_text(
        args,
        ctx,
        "shell_run",
        command,
        &format!("exec 2>&1; {command}"),
    )
    .await
}

/// `shell_run_script {script, timeout_seconds?}`: a multi-line bash script, run as
/// `bash -c` like `shell_run` (so a `#!` line is a comment, as upstream's `bash FILE`).
pub(crate) async fn run_script(args: &Args, ctx: &ToolContext) -> Outcome {
    let script = match args.string("script") {
        Ok(script) => script,
        Err(outcome) => return outcome,
    };
    run_text(
        args,
        ctx,
        "shell_run_script",
        script,
        &format!("exec 2>&1\n{script}"),
    )
    .await
}

/// The timeout a call asks for, capped by the run's limit.
fn timeout_of(args: &Args, limit: Duration) -> Result<Duration, Outcome> {
    Ok(match args.opt_seconds("timeout_seconds")? {
        Some(seconds) => {
            Duration::try_from_secs_f64(seconds).map_or(limit, |asked| asked.min(limit))
        }
        None => limit,
    })
}

async fn run_text(
    args: &Args,
    ctx: &ToolContext,
    tool: &str,
    command: &str,
    script: &str,
) -> Outcome {
    let limit = ctx.limits.shell_timeout;
    let timeout = match timeout_of(args, limit) {
        Ok(timeout) => timeout,
        Err(outcome) => return outcome,
    };
    if command.trim().is_empty() {
        let what = if tool == "shell_run" {
            "command"
        } else {
            "script"
        };
        return Outcome::error(format!("tool `{tool}` needs a non-empty `{what}`"));
    }
    let commits = creates_commit(command);
    let head_before = if commits { git_head(ctx).await } else { None };

    let mut outcome = execute(command, script, timeout, ctx).await;

    let logged = cap_text(&outcome.text, LOG_OUTPUT_CAP);
    let head_after = if commits && outcome.ok {
        git_head(ctx).await
    } else {
        None
    };
    let commit = match (commits && outcome.ok, head_after) {
        (false, _) => None,
        (true, Some(after)) => (Some(&after) != head_before.as_ref()).then_some(after),
        (true, None) => Some(command.to_string()),
    };
    let succeeded = outcome.ok;
    record_into(&mut outcome, ctx, |entry| {
        entry.commands_run.push(crate::changes::Command {
            command: command.to_string(),
            succeeded,
            output: logged,
        });
        if let Some(commit) = commit {
            entry.git_commits.push(commit);
        }
    });
    outcome
}

/// Runs `bash -c SCRIPT` and renders its result with the validators' prefixes; `command` is
/// what the model asked for (it decides whether `.git` is writable).
async fn execute(command: &str, script: &str, timeout: Duration, ctx: &ToolContext) -> Outcome {
    let policy = ctx
        .sandbox
        .for_tool_command(&ctx.confinement, is_git_write(command));
    let cmd = match super::shell_env::agent_command(ctx, &policy, &["-c", script]) {
        Ok(cmd) => Command::from(cmd),
        Err(refused) => return Outcome::error(refused),
    };
    let (ended, output) = match process::run(cmd, timeout, ctx.limits.output_cap, true).await {
        Ok(done) => done,
        Err(error) => {
            return Outcome::error(format!(
                "could not start `bash` in `{}`: {error}",
                ctx.work_dir.display()
            ))
        }
    };
    render(ended, &output, timeout)
}

/// A finished command's result (a shell command's or git's): its output, or `[EXIT n]`/
/// `[TIMEOUT]` before it.
pub(crate) fn render(ended: Ended, output: &str, timeout: Duration) -> Outcome {
    match ended {
        Ended::TimedOut => Outcome::fail(join_prefixed(
            &format!("[TIMEOUT] after {}", format_secs(timeout)),
            output,
        )),
        Ended::Failed(error) => Outcome::error(format!("waiting for the command failed: {error}")),
        Ended::Exited(0) => Outcome::ok(output),
        Ended::Exited(code) => match crate::sandbox::setup_failure(Some(code), output) {
            Some(reason) => Outcome::error(format!(
                "the OS sandbox could not start the command: {reason}"
            )),
            None => Outcome::fail(join_prefixed(&format!("[EXIT {code}]"), output)),
        },
    }
}

/// `HEAD` of the work dir as `<sha> <subject>`, or `None` outside a git repository.
async fn git_head(ctx: &ToolContext) -> Option<String> {
    // In the sandbox too (read-only `.git`, no network): the repository's config is the
    // command's to write when git writes are allowed.
    let policy = ctx.confinement.policy(crate::sandbox::Access::default());
    let args = ["log", "-1", "--format=%H %s"];
    let mut cmd = Command::from(crate::sandbox::command(&ctx.sandbox, &policy, "git", &args).ok()?);
    cmd.stdin(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(GIT_PROBE_TIMEOUT, cmd.output())
        .await
        .ok()?
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let head = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (!head.is_empty()).then_some(head)
}
