//! The Shell tool: `shell_run {command, timeout_seconds?}`.
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
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use regex::Regex;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::record::{cap_text, record_into, LOG_OUTPUT_CAP};
use super::{Args, Outcome, ToolContext};

/// How long output is still read after the command ended and its group was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

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

/// Output collected from the command, bounded in memory.
struct Capture {
    cap: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
    total: u64,
}

impl Capture {
    fn new(cap: usize) -> Capture {
        Capture {
            cap,
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let head_cap = self.cap / 2;
        if self.head.len() < head_cap {
            let take = (head_cap - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        let tail_cap = self.cap - head_cap;
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * tail_cap.max(4096) {
            let excess = self.tail.len() - tail_cap;
            self.tail.drain(..excess);
        }
    }

    fn text(&self) -> String {
        let tail_cap = self.cap - self.cap / 2;
        let tail = &self.tail[self.tail.len().saturating_sub(tail_cap)..];
        let kept = (self.head.len() + tail.len()) as u64;
        if kept >= self.total {
            let mut all = self.head.clone();
            all.extend_from_slice(tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        format!(
            "{}\n[output truncated: {} bytes omitted]\n{}",
            String::from_utf8_lossy(&self.head),
            self.total - kept,
            String::from_utf8_lossy(tail)
        )
    }
}

async fn pump(mut source: impl AsyncRead + Unpin, capture: Arc<Mutex<Capture>>) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = source.read(&mut buf).await {
        if n == 0 {
            break;
        }
        capture
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(&buf[..n]);
    }
}

/// Kills a process group; errors (the group is already gone) are ignored.
fn kill_group(pgid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pgid
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    #[cfg(not(unix))]
    let _ = pgid;
}

/// Kills the group when dropped, so a cancelled call leaves nothing running.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

fn format_secs(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{secs:.1}s")
    }
}

pub(crate) async fn run(args: &Args, ctx: &ToolContext) -> Outcome {
    let command = match args.string("command") {
        Ok(command) => command,
        Err(outcome) => return outcome,
    };
    let limit = ctx.limits.shell_timeout;
    let timeout = match args.opt_seconds("timeout_seconds") {
        Ok(Some(seconds)) => {
            Duration::try_from_secs_f64(seconds).map_or(limit, |asked| asked.min(limit))
        }
        Ok(None) => limit,
        Err(outcome) => return outcome,
    };
    if command.trim().is_empty() {
        return Outcome::error("tool `shell_run` needs a non-empty `command`");
    }
    let commits = creates_commit(command);
    let head_before = if commits { git_head(ctx).await } else { None };

    let mut outcome = execute(command, timeout, ctx).await;

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

/// Runs the command and renders its result with the validators' prefixes.
async fn execute(command: &str, timeout: Duration, ctx: &ToolContext) -> Outcome {
    let protect: Vec<std::path::PathBuf> = (!ctx.change_log.as_os_str().is_empty())
        .then(|| ctx.change_log.clone())
        .into_iter()
        .collect();
    let policy = ctx
        .sandbox
        .for_tool_command(&ctx.work_dir, &protect, is_git_write(command));
    let script = format!("exec 2>&1; {command}");
    let mut cmd = match crate::sandbox::command(&ctx.sandbox, &policy, "bash", &["-c", &script]) {
        Ok(cmd) => Command::from(cmd),
        Err(refused) => return Outcome::error(refused),
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(error) => {
            return Outcome::error(format!(
                "could not start `bash` in `{}`: {error}",
                ctx.work_dir.display()
            ))
        }
    };
    let guard = GroupGuard(child.id());
    let capture = Arc::new(Mutex::new(Capture::new(ctx.limits.output_cap)));
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(tokio::spawn(pump(stdout, capture.clone())));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(tokio::spawn(pump(stderr, capture.clone())));
    }

    let status = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => {
            kill_group(guard.0);
            Some(status)
        }
        Err(_) => {
            // Kill the group while its leader is unreaped, so the group id cannot be reused.
            kill_group(guard.0);
            let _ = child.kill().await;
            None
        }
    };
    for reader in &mut readers {
        if tokio::time::timeout(DRAIN_GRACE, &mut *reader)
            .await
            .is_err()
        {
            reader.abort();
        }
    }
    drop(guard);
    let output = capture
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .text();
    match status {
        None => Outcome::fail(join_prefixed(
            &format!("[TIMEOUT] after {}", format_secs(timeout)),
            &output,
        )),
        Some(Err(error)) => Outcome::error(format!("waiting for the command failed: {error}")),
        Some(Ok(status)) => match exit_code(&status) {
            0 => Outcome::ok(output),
            code => match crate::sandbox::setup_failure(Some(code), &output) {
                Some(reason) => Outcome::error(format!(
                    "the OS sandbox could not start the command: {reason}"
                )),
                None => Outcome::fail(join_prefixed(&format!("[EXIT {code}]"), &output)),
            },
        },
    }
}

fn join_prefixed(prefix: &str, output: &str) -> String {
    if output.is_empty() {
        prefix.to_string()
    } else {
        format!("{prefix}\n{output}")
    }
}

/// The exit code, or 128 + the signal for a command killed by one (as shells report it).
fn exit_code(status: &std::process::ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    -1
}

/// `HEAD` of the work dir as `<sha> <subject>`, or `None` outside a git repository.
async fn git_head(ctx: &ToolContext) -> Option<String> {
    // In the sandbox too (read-only `.git`, no network): the repository's config is the
    // command's to write when git writes are allowed.
    let policy = crate::sandbox::Policy::new(&ctx.work_dir, &[], false, false);
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
