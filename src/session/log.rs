//! Writing a session: [`SessionLog`], the append-only log with its authenticated state
//! records and the atomic `<id>.json` snapshot (see the module doc of [`super`]). A
//! checkpoint is serialized on the caller's thread and written by the log's own writer
//! thread ([`super::log_file`]): a checkpoint that is not redoable is waited for, so it is in
//! the kernel before the next turn starts; a redoable one (a replayed turn without effects)
//! is not, so its MAC, its write, the syncs and the snapshots overlap the next turns.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use fuseraft_vm::driver::Checkpoint;
use fuseraft_vm::history::Message;
use serde_json::Value as Json;

use super::key::Key;
use super::log_file::LogFile;
use super::{path, Chain, SessionFields};

/// The most checkpoints on their way to the writer thread.
const QUEUE: usize = 256;

/// The session log of a running session, open for the whole run (see the module doc).
/// Nothing touches the disk before the first checkpoint.
pub struct SessionLog {
    work_dir: PathBuf,
    id: String,
    /// The log's file and its writer's state, shared with the writer thread.
    desk: Arc<Mutex<Desk>>,
    /// The writer thread, when one could be started (else the caller's thread writes).
    thread: Option<WriterThread>,
    /// Jobs sent to the thread and not done yet: with none, a job the caller waits for is
    /// done on the caller's thread (no hand-over to wait for).
    queued: Arc<AtomicUsize>,
    /// Set when a write failed (by the thread for a checkpoint nobody waited for).
    failed_behind: Arc<AtomicBool>,
    /// A checkpoint could not be serialized, or a write failed: later ones are ignored.
    failed: bool,
    /// [`SessionLog::finish_soon`] asked the thread to finish; its reply is still to come.
    finishing: bool,
}

struct WriterThread {
    jobs: Option<SyncSender<Job>>,
    replies: Receiver<Reply>,
    handle: Option<JoinHandle<()>>,
}

/// Whether the caller's thread may write now.
enum Idle<'a> {
    /// Nothing is on its way to the writer thread (or there is none): the desk, locked.
    Here(MutexGuard<'a, Desk>),
    /// Jobs sent to the writer thread are still to be done; they come first.
    Busy,
    /// The writer thread died holding the desk.
    Stopped,
}

/// What the writer is asked to do.
enum Job {
    Record {
        messages: Vec<Message>,
        state: Vec<u8>,
        redoable: bool,
    },
    /// Write what is held and ignore later checkpoints (the caller met an error).
    Stop,
    Cancel(Json),
    Finish,
    Resumable,
}

/// The answer to a job the caller waits for.
enum Reply {
    Done(std::io::Result<()>),
    Resumable(bool),
}

/// The writer's side: the file, and the first error of a checkpoint nobody waited for,
/// handed to the next caller who waits.
struct Desk {
    file: LogFile,
    error: Option<std::io::Error>,
}

impl Desk {
    /// Does `job`; returns the reply when the caller waits for one.
    fn perform(&mut self, job: Job) -> Option<Reply> {
        let done = |desk: &mut Desk, result: std::io::Result<()>| {
            Some(Reply::Done(match desk.error.take() {
                Some(error) => Err(error),
                None => result,
            }))
        };
        match job {
            Job::Record {
                messages,
                state,
                redoable,
            } => self.record(&messages, &state, redoable),
            Job::Stop => {
                self.file.stop();
                done(self, Ok(()))
            }
            Job::Cancel(updated_at) => {
                let result = self.file.cancel(updated_at);
                done(self, result)
            }
            Job::Finish => {
                let result = self.file.finish();
                done(self, result)
            }
            Job::Resumable => Some(Reply::Resumable(self.file.resumable())),
        }
    }

    /// Appends a checkpoint; returns the reply when the caller waits for one (it is not
    /// redoable), else keeps its error for the next caller who waits.
    fn record(&mut self, messages: &[Message], state: &[u8], redoable: bool) -> Option<Reply> {
        let result = self.file.append(messages, state, redoable);
        if redoable {
            self.note(result);
            return None;
        }
        Some(Reply::Done(match self.error.take() {
            Some(error) => Err(error),
            None => result,
        }))
    }

    /// Keeps the first error of a checkpoint nobody waits for.
    fn note(&mut self, result: std::io::Result<()>) {
        if let Err(error) = result {
            self.error.get_or_insert(error);
        }
    }

    /// The writer thread: jobs in order; held checkpoints written when their time is up;
    /// on the caller's end (the channel closed), what is held is written as the file drops.
    fn run(desk: Arc<Mutex<Desk>>, jobs: Receiver<Job>, replies: Sender<Reply>, shared: Shared) {
        loop {
            let due = match desk.lock() {
                Ok(desk) => desk.file.due(),
                Err(_) => break,
            };
            let job = match due {
                Some(due) => {
                    match jobs.recv_timeout(due.saturating_duration_since(Instant::now())) {
                        Ok(job) => Some(job),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                None => match jobs.recv() {
                    Ok(job) => Some(job),
                    Err(_) => break,
                },
            };
            let Ok(mut desk) = desk.lock() else {
                break;
            };
            let reply = match job {
                Some(job) => {
                    let reply = desk.perform(job);
                    shared.queued.fetch_sub(1, Ordering::AcqRel);
                    reply
                }
                None => {
                    let result = desk.file.write_due();
                    desk.note(result);
                    None
                }
            };
            shared
                .failed_behind
                .store(desk.file.failed(), Ordering::Release);
            drop(desk);
            if let Some(reply) = reply {
                if replies.send(reply).is_err() {
                    break;
                }
            }
        }
    }
}

/// What the caller and the writer thread both see.
struct Shared {
    queued: Arc<AtomicUsize>,
    failed_behind: Arc<AtomicBool>,
}

impl SessionLog {
    /// A log for session `id`, continuing after `chain` (the MAC of the last record of the
    /// log already on disk: [`super::Loaded::chain`]; zeros for a new session).
    pub fn new(work_dir: &Path, id: &str, key: Option<Arc<Key>>, chain: Chain) -> SessionLog {
        let desk = Arc::new(Mutex::new(Desk {
            file: LogFile::new(work_dir, id, key, chain),
            error: None,
        }));
        let queued = Arc::new(AtomicUsize::new(0));
        let failed_behind = Arc::new(AtomicBool::new(false));
        // Bounded: a writer slower than the turns (a slow disk) holds the run back rather
        // than letting checkpoints pile up in memory.
        let (jobs, inbox) = mpsc::sync_channel(QUEUE);
        let (outbox, replies) = mpsc::channel();
        let shared = Shared {
            queued: Arc::clone(&queued),
            failed_behind: Arc::clone(&failed_behind),
        };
        let handed = Arc::clone(&desk);
        let thread = std::thread::Builder::new()
            .name("session-log".to_string())
            .spawn(move || Desk::run(handed, inbox, outbox, shared))
            .ok()
            .map(|handle| WriterThread {
                jobs: Some(jobs),
                replies,
                handle: Some(handle),
            });
        SessionLog {
            work_dir: work_dir.to_path_buf(),
            id: id.to_string(),
            desk,
            thread,
            queued,
            failed_behind,
            failed: false,
            finishing: false,
        }
    }

    /// Has a job the caller waits for done: on this thread when nothing is on its way to the
    /// writer thread, else by the thread after those.
    fn submit(&self, job: Job) -> Option<Reply> {
        self.dispatch(job, Desk::perform, |job| job)
    }

    /// Has `work` done by `here` on this thread when nothing is on its way to the writer
    /// thread, else sent to the thread after those as the job `queued` makes of it.
    fn dispatch<W>(
        &self,
        work: W,
        here: impl FnOnce(&mut Desk, W) -> Option<Reply>,
        queued: impl FnOnce(W) -> Job,
    ) -> Option<Reply> {
        match self.idle() {
            Idle::Here(mut desk) => {
                let reply = here(&mut desk, work);
                self.failed_behind
                    .store(desk.file.failed(), Ordering::Release);
                reply
            }
            Idle::Busy => self.send(queued(work)),
            Idle::Stopped => Some(Reply::Done(Err(stopped()))),
        }
    }

    /// The desk, locked, when this thread may write: no thread, or nothing on its way to it.
    fn idle(&self) -> Idle<'_> {
        let Ok(desk) = self.desk.lock() else {
            return Idle::Stopped;
        };
        if self.queued.load(Ordering::Acquire) > 0 {
            return Idle::Busy;
        }
        Idle::Here(desk)
    }

    /// Sends `job` to the writer thread; waits for its reply unless it is a redoable
    /// checkpoint.
    fn send(&self, job: Job) -> Option<Reply> {
        let waits = !matches!(job, Job::Record { redoable: true, .. });
        let Some(thread) = self.thread.as_ref() else {
            return Some(Reply::Done(Err(stopped())));
        };
        self.queued.fetch_add(1, Ordering::AcqRel);
        let sent = thread
            .jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok());
        if !sent {
            return Some(Reply::Done(Err(stopped())));
        }
        if !waits {
            return None;
        }
        Some(thread.replies.recv().unwrap_or(Reply::Done(Err(stopped()))))
    }

    fn done(&mut self, job: Job) -> std::io::Result<()> {
        match self.submit(job) {
            Some(Reply::Done(result)) => result,
            _ => Ok(()),
        }
    }

    /// Whether `<id>.json` exists (written by this run or the one it resumes), so that
    /// `--resume` can continue the session.
    pub fn resumable(&mut self) -> bool {
        match self.submit(Job::Resumable) {
            Some(Reply::Resumable(resumable)) => resumable,
            _ => path(&self.work_dir, &self.id).exists(),
        }
    }

    /// Appends a checkpoint: its new messages and its state with the CLI's `fields` after
    /// the state's own. Returns the first error only: after it the log ends with its last
    /// whole checkpoint and later checkpoints are ignored. A redoable checkpoint's error
    /// comes with the next checkpoint (or the end).
    pub fn append(
        &mut self,
        checkpoint: &Checkpoint<'_>,
        fields: &SessionFields<'_>,
    ) -> std::io::Result<()> {
        if self.failed {
            return Ok(());
        }
        let mut state = Vec::with_capacity(1024);
        if let Err(error) = checkpoint.write_state(fields, &mut state) {
            self.failed = true;
            let _ = self.done(Job::Stop);
            return Err(error.into());
        }
        // After a failed write nobody waited for, the next checkpoint waits for its error.
        let redoable = checkpoint.redoable && !self.failed_behind.load(Ordering::Acquire);
        let messages = checkpoint.new_messages;
        let record = |state| Job::Record {
            messages: messages.to_vec(),
            state,
            redoable,
        };
        let reply = if redoable && self.thread.is_some() {
            self.send(record(state))
        } else {
            // Written here from the run's own messages: no copy, no hand-over.
            let here = |desk: &mut Desk, state: Vec<u8>| desk.record(messages, &state, redoable);
            self.dispatch(state, here, record)
        };
        let result = match reply {
            Some(Reply::Done(result)) => result,
            _ => Ok(()),
        };
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    /// Ends the session: the log is synced and `<id>.json` written. After a failed write, the
    /// snapshot of the last whole checkpoint is still tried (quietly), so that `fuseraft
    /// sessions list` shows where `--resume` would continue.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if !std::mem::take(&mut self.finishing) {
            return self.done(Job::Finish);
        }
        match self.thread.as_ref().map(|thread| thread.replies.recv()) {
            Some(Ok(Reply::Done(result))) => result,
            Some(Ok(Reply::Resumable(_))) => Ok(()),
            Some(Err(_)) | None => Err(stopped()),
        }
    }

    /// Starts [`SessionLog::finish`] on the writer thread and returns at once, so the caller
    /// can do other work (the transcript) while the log is synced; `finish` then waits for it.
    pub fn finish_soon(&mut self) {
        if let Some(jobs) = self.thread.as_ref().and_then(|thread| thread.jobs.as_ref()) {
            self.queued.fetch_add(1, Ordering::AcqRel);
            self.finishing = jobs.send(Job::Finish).is_ok();
        }
    }

    /// Ends a cancelled session: its last state, marked `Cancelled` at `updated_at`, is
    /// appended and the session finished.
    pub fn cancel(&mut self, updated_at: Json) -> std::io::Result<()> {
        self.done(Job::Cancel(updated_at))
    }
}

/// The writer thread ends (writing what it holds) before the log is gone.
impl Drop for SessionLog {
    fn drop(&mut self) {
        if let Some(thread) = &mut self.thread {
            thread.jobs.take();
            if let Some(handle) = thread.handle.take() {
                let _ = handle.join();
            }
        }
    }
}

fn stopped() -> std::io::Error {
    std::io::Error::other("the session log's writer thread stopped")
}
