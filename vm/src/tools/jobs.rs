//! Background jobs of the Shell plugin: `shell_run_background {command}` starts one and
//! returns its id; `shell_get_job_status`, `shell_get_job_output` and `shell_kill_job
//! {job_id}` ask about it and end it.
//!
//! Security and robustness decisions:
//! - A job runs exactly as a `shell_run` command would: `bash -c` under the OS sandbox with
//!   the same policy (`Spec::for_tool_command`), the allow-listed environment, standard
//!   input closed, its own process group (and PID namespace, in the sandbox).
//! - The table belongs to the run (the driver makes one [`Jobs`] and hands it to every
//!   tool call): when the run ends, is cancelled or is dropped, the last handle goes and
//!   every job still running is killed with its whole group. Jobs have no time limit of
//!   their own (they are for servers and watchers); the run is theirs.
//! - At most [`MAX_RUNNING`] jobs run at once (another start is refused, saying which
//!   run); the table keeps at most [`MAX_KEPT`] jobs, forgetting the oldest finished ones.
//! - Each job's output is kept in bounded memory (`Limits::output_cap`: the first and last
//!   halves), read as it arrives.
//! - Starting a job is recorded in the change log (`commandsRun`, output `started as
//!   background job N`): the command's end is not known when the entry is written.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::process::Command;

use super::process::{self, kill_group, Capture, Shared};
use super::record::record_into;
use super::shell::is_git_write;
use super::{Args, Outcome, ToolContext};

/// The most jobs running at once in one run.
pub(super) const MAX_RUNNING: usize = 8;
/// The most jobs one run remembers.
pub(super) const MAX_KEPT: usize = 32;
/// How much of the output `shell_get_job_status` shows, in bytes.
const STATUS_TAIL: usize = 1000;

/// The background jobs of one run; clones share the table. Dropping the last clone kills
/// every job still running.
#[derive(Clone, Default)]
pub struct Jobs(Arc<Mutex<Table>>);

impl fmt::Debug for Jobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        write!(f, "Jobs({} kept)", table.jobs.len())
    }
}

impl Jobs {
    /// Kills every job still running (the run is over: nothing it started outlives it).
    pub fn end_all(&self) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .end_all();
    }
}

impl PartialEq for Jobs {
    fn eq(&self, other: &Jobs) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

#[derive(Default)]
struct Table {
    next: u32,
    jobs: Vec<Job>,
}

impl Table {
    fn end_all(&self) {
        for job in &self.jobs {
            if job.state() == State::Running {
                kill_group(job.pgid);
            }
        }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        self.end_all();
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Running,
    Exited(i32),
    Killed,
}

struct Job {
    id: String,
    command: String,
    pgid: Option<u32>,
    output: Shared,
    state: Arc<Mutex<State>>,
}

impl Job {
    fn state(&self) -> State {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Jobs {
    /// The ids of the jobs kept, oldest first.
    fn ids(&self, table: &Table) -> String {
        if table.jobs.is_empty() {
            return "none has been started".to_string();
        }
        let ids: Vec<String> = table
            .jobs
            .iter()
            .map(|job| format!("`{}`", job.id))
            .collect();
        format!("the jobs are {}", ids.join(", "))
    }
}

/// `shell_run_background {command}`.
pub(crate) async fn start(args: &Args, ctx: &ToolContext) -> Outcome {
    let command = match args.string("command") {
        Ok(command) => command,
        Err(outcome) => return outcome,
    };
    if command.trim().is_empty() {
        return Outcome::error("tool `shell_run_background` needs a non-empty `command`");
    }
    let mut table = ctx.jobs.0.lock().unwrap_or_else(PoisonError::into_inner);
    let running: Vec<&Job> = table
        .jobs
        .iter()
        .filter(|job| job.state() == State::Running)
        .collect();
    if running.len() >= MAX_RUNNING {
        let ids: Vec<String> = running.iter().map(|job| format!("`{}`", job.id)).collect();
        return Outcome::error(format!(
            "{MAX_RUNNING} background jobs are already running ({}); kill one with `shell_kill_job` first",
            ids.join(", ")
        ));
    }
    let policy = ctx
        .sandbox
        .for_tool_command(&ctx.confinement, is_git_write(command));
    let script = format!("exec 2>&1; {command}");
    let mut cmd = match super::shell_env::agent_command(ctx, &policy, &["-c", &script]) {
        Ok(cmd) => Command::from(cmd),
        Err(refused) => return Outcome::error(refused),
    };
    process::prepare(&mut cmd, true);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(error) => {
            return Outcome::error(format!(
                "could not start `bash` in `{}`: {error}",
                ctx.work_dir.display()
            ))
        }
    };
    table.next += 1;
    let id = table.next.to_string();
    let output: Shared = Arc::new(Mutex::new(Capture::new(ctx.limits.output_cap)));
    let readers = process::pump_outputs(&mut child, &output);
    let state = Arc::new(Mutex::new(State::Running));
    let pgid = child.id();
    {
        let state = state.clone();
        tokio::spawn(async move {
            let code = match child.wait().await {
                Ok(status) => process::exit_code(&status),
                Err(_) => -1,
            };
            // Whatever the command left in its group goes with it, as for `shell_run`.
            kill_group(pgid);
            for reader in readers {
                let _ = tokio::time::timeout(process::DRAIN_GRACE, reader).await;
            }
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            if *state == State::Running {
                *state = State::Exited(code);
            }
        });
    }
    table.jobs.push(Job {
        id: id.clone(),
        command: command.to_string(),
        pgid,
        output,
        state,
    });
    forget_old(&mut table);
    drop(table);
    let mut outcome = Outcome::ok(format!(
        "started background job `{id}`: `{command}`\nask with `shell_get_job_status` or `shell_get_job_output` (job_id `{id}`), end it with `shell_kill_job`"
    ));
    record_into(&mut outcome, ctx, |entry| {
        entry.commands_run.push(crate::changes::Command {
            command: command.to_string(),
            succeeded: true,
            output: format!("started as background job {id}"),
        });
    });
    outcome
}

/// Keeps at most [`MAX_KEPT`] jobs, forgetting the oldest finished ones.
fn forget_old(table: &mut Table) {
    while table.jobs.len() > MAX_KEPT {
        match table
            .jobs
            .iter()
            .position(|job| job.state() != State::Running)
        {
            Some(index) => {
                table.jobs.remove(index);
            }
            None => break,
        }
    }
}

/// Runs `answer` on the job the call names, or says which jobs there are.
fn with_job(args: &Args, ctx: &ToolContext, answer: impl FnOnce(&Job) -> Outcome) -> Outcome {
    let id = match args.string("job_id") {
        Ok(id) => id.trim(),
        Err(outcome) => return outcome,
    };
    let table = ctx.jobs.0.lock().unwrap_or_else(PoisonError::into_inner);
    match table.jobs.iter().find(|job| job.id == id) {
        Some(job) => answer(job),
        None => Outcome::error(format!(
            "there is no background job `{id}` in this run; {}",
            ctx.jobs.ids(&table)
        )),
    }
}

/// `shell_get_job_status {job_id}`.
pub(crate) fn status(args: &Args, ctx: &ToolContext) -> Outcome {
    with_job(args, ctx, |job| {
        let output = process::text_of(&job.output);
        let tail = tail(&output, STATUS_TAIL);
        let head = match job.state() {
            State::Running => format!("[RUNNING] job `{}`: `{}`", job.id, job.command),
            State::Exited(0) => format!("[DONE] job `{}` exited 0: `{}`", job.id, job.command),
            State::Exited(code) => {
                format!("[EXIT {code}] job `{}` failed: `{}`", job.id, job.command)
            }
            State::Killed => format!("[KILLED] job `{}`: `{}`", job.id, job.command),
        };
        let body = if output.is_empty() {
            "(no output yet)".to_string()
        } else {
            format!("last output:\n{tail}")
        };
        Outcome::ok(format!("{head}\n{body}"))
    })
}

/// `shell_get_job_output {job_id}`.
pub(crate) fn output(args: &Args, ctx: &ToolContext) -> Outcome {
    with_job(args, ctx, |job| {
        let output = process::text_of(&job.output);
        if output.is_empty() {
            Outcome::ok(format!("job `{}` has written no output yet", job.id))
        } else {
            Outcome::ok(output)
        }
    })
}

/// `shell_kill_job {job_id}`.
pub(crate) fn kill(args: &Args, ctx: &ToolContext) -> Outcome {
    with_job(args, ctx, |job| {
        let mut state = job.state.lock().unwrap_or_else(PoisonError::into_inner);
        match *state {
            State::Running => {
                kill_group(job.pgid);
                *state = State::Killed;
                Outcome::ok(format!("killed job `{}`", job.id))
            }
            State::Exited(code) => Outcome::ok(format!(
                "job `{}` is not running (it exited {code})",
                job.id
            )),
            State::Killed => Outcome::ok(format!("job `{}` was already killed", job.id)),
        }
    })
}

/// The last `max` bytes of `text` (on a char boundary), marked when cut.
fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("[… {start} earlier bytes]\n{}", &text[start..])
}
