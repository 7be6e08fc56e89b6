//! A child process of a tool (`shell_run`, the Git tools, background jobs): its own process
//! group, output captured in bounded memory as it is read, a deadline, and the whole group
//! killed when it ends, when its time is up or when the caller is dropped.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

/// How long output is still read after the command ended and its group was killed.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Output collected from a process, bounded in memory: the first and last halves of `cap`
/// are kept, with `[output truncated: N bytes omitted]` between them.
pub(crate) struct Capture {
    cap: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
    total: u64,
}

impl Capture {
    pub(super) fn new(cap: usize) -> Capture {
        Capture {
            cap,
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
        }
    }

    pub(super) fn push(&mut self, mut bytes: &[u8]) {
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

    pub(super) fn text(&self) -> String {
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

pub(crate) type Shared = Arc<Mutex<Capture>>;

/// The text of a shared capture.
pub(crate) fn text_of(capture: &Shared) -> String {
    capture
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .text()
}

/// Copies `source` into `capture` until it ends.
pub(crate) async fn pump(mut source: impl AsyncRead + Unpin, capture: Shared) {
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
pub(crate) fn kill_group(pgid: Option<u32>) {
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
pub(crate) struct GroupGuard(pub Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

/// How a process ended.
pub(crate) enum Ended {
    /// It exited (or was killed by a signal): the exit code, 128 + the signal for a signal.
    Exited(i32),
    /// Its time was up; its group was killed.
    TimedOut,
    /// Waiting for it failed.
    Failed(String),
}

/// Prepares `cmd` to run as its own process group with standard input closed and both
/// outputs piped; `merge_stderr` false sends standard error to `/dev/null`.
pub(crate) fn prepare(cmd: &mut Command, merge_stderr: bool) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(if merge_stderr {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
}

/// Starts pumping a spawned child's piped outputs into `capture`.
pub(crate) fn pump_outputs(
    child: &mut tokio::process::Child,
    capture: &Shared,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(tokio::spawn(pump(stdout, capture.clone())));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(tokio::spawn(pump(stderr, capture.clone())));
    }
    readers
}

/// Runs `cmd` (already given its program, arguments, environment and directory) to its end
/// or for at most `timeout`, keeping at most `cap` bytes of its output (standard error
/// merged in when `merge_stderr`). `Err` when it cannot be started.
pub(crate) async fn run(
    mut cmd: Command,
    timeout: Duration,
    cap: usize,
    merge_stderr: bool,
) -> Result<(Ended, String), std::io::Error> {
    prepare(&mut cmd, merge_stderr);
    let mut child = cmd.spawn()?;
    let guard = GroupGuard(child.id());
    let capture: Shared = Arc::new(Mutex::new(Capture::new(cap)));
    let mut readers = pump_outputs(&mut child, &capture);
    let ended = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) => {
            kill_group(guard.0);
            Ended::Exited(exit_code(&status))
        }
        Ok(Err(error)) => {
            kill_group(guard.0);
            Ended::Failed(error.to_string())
        }
        Err(_) => {
            // Kill the group while its leader is unreaped, so the group id cannot be reused.
            kill_group(guard.0);
            let _ = child.kill().await;
            Ended::TimedOut
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
    Ok((ended, text_of(&capture)))
}

/// The exit code, or 128 + the signal for a process killed by one (as shells report it).
pub(crate) fn exit_code(status: &ExitStatus) -> i32 {
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

/// `prefix`, then `output` on the next line when there is any.
pub(crate) fn join_prefixed(prefix: &str, output: &str) -> String {
    if output.is_empty() {
        prefix.to_string()
    } else {
        format!("{prefix}\n{output}")
    }
}

/// `12s`, or `1.5s`.
pub(crate) fn format_secs(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{secs:.1}s")
    }
}
