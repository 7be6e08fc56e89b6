//! The session, a Restate virtual object keyed by the session id: it runs one turn per
//! invocation and stores its checkpoint, events and questions as the object's state (its
//! questions are `question.rs`'s objects).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fuseraft_vm::journal::Repeat;
use restate_sdk::prelude::*;

use super::blobs::Blobs;
use super::job::{keys, Exported, Job, Status, Waiting, Watch};
use super::names;
use super::question::{approval, wait_for_answer};
use super::turn::{self, Continue, Step, INTERRUPTED_MARK};

/// A session's object. `work_root` is the directory submitted work dirs must lie in.
pub struct FuseraftSession {
    pub work_root: PathBuf,
    /// Entries and values longer than this are kept by reference (`blobs`).
    pub inline_limit: usize,
    /// `--trust-mcp`: a submitted workflow's MCP servers may start.
    pub trust_mcp: bool,
}

pub(super) fn refused(message: impl Into<String>) -> HandlerError {
    TerminalError::new(message.into()).into()
}

#[restate_sdk::object]
impl FuseraftSession {
    /// Takes a submitted run and starts it; a second submission of the same session (a
    /// client's retry) changes nothing.
    #[handler]
    async fn start(&self, ctx: ObjectContext<'_>, job: Json<Job>) -> Result<(), HandlerError> {
        if ctx.get::<Json<Job>>(keys::JOB).await?.is_some() {
            return Ok(());
        }
        let job = job.into_inner();
        if !crate::session::valid_id(ctx.key()) {
            return Err(refused(crate::session::invalid_id(ctx.key())));
        }
        inside(&self.work_root, Path::new(&job.work_dir)).map_err(refused)?;
        let program = fuseraft_compiler::ir::parse(&job.ir)
            .map_err(|error| refused(format!("the submitted IR does not parse: {error}")))?;
        crate::mcp_trust::unattended(&program, self.trust_mcp, "fuseraft serve")
            .map_err(refused)?;
        ctx.set(keys::JOB, Json(job));
        ctx.set(keys::STATUS, Json(Status::default()));
        names::of(&ctx, names::SESSIONS)
            .enlist(ctx.key().to_string())
            .send();
        ctx.object_client::<FuseraftSessionClient>(ctx.key())
            .advance()
            .send();
        Ok(())
    }

    /// Runs the session's next turn, stores what it left, and sends itself the next one.
    #[handler]
    async fn advance(&self, ctx: ObjectContext<'_>) -> Result<(), HandlerError> {
        let Some(Json(job)) = ctx.get::<Json<Job>>(keys::JOB).await? else {
            return Err(refused(format!("no session `{}` was submitted", ctx.key())));
        };
        let mut status = ctx
            .get::<Json<Status>>(keys::STATUS)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        if status.outcome.is_some() {
            return Ok(());
        }
        let blobs = Blobs::new(Path::new(&job.work_dir), ctx.key(), self.inline_limit);
        let saved = saved(&ctx, &status, &blobs).await?;
        let steps = turn::start(Continue {
            session: ctx.key().to_string(),
            job,
            saved,
        });
        let left = follow(&ctx, &blobs, &mut status, steps).await?;
        // What the turn left is stored as journaled: a retried invocation that got this far
        // stores the same (the events' times, the checkpoint), whatever it computed again.
        let Left {
            events,
            checkpoint,
            messages,
            outcome,
            reason,
            turns,
        } = journaled(&ctx, &blobs, "what the turn left", left).await?;
        store_events(&ctx, &blobs, &mut status, events)?;
        if let Some(state) = checkpoint {
            ctx.set(keys::CHECKPOINT, Json(state));
            if !messages.is_empty() {
                let chunk = blobs.keep(to_text(&messages)?).map_err(refused)?;
                ctx.set(&keys::messages(status.message_chunks), chunk);
                status.message_chunks += 1;
            }
        }
        status.turn = turns;
        status.outcome = outcome;
        status.reason = reason;
        let going_on = status.outcome.is_none();
        if !going_on {
            names::of(&ctx, names::SESSIONS)
                .delist(ctx.key().to_string())
                .send();
        }
        match &status.outcome {
            Some(outcome) => eprintln!("session {}: {outcome} after {turns} turns", ctx.key()),
            None => eprintln!("session {}: turn {turns} stored", ctx.key()),
        }
        ctx.set(keys::STATUS, Json(status));
        if going_on {
            ctx.object_client::<FuseraftSessionClient>(ctx.key())
                .advance()
                .send();
        }
        Ok(())
    }

    /// The status and the event lines after the first `after`.
    #[handler]
    async fn watch(
        &self,
        ctx: SharedObjectContext<'_>,
        after: u32,
    ) -> Result<Json<Watch>, HandlerError> {
        let (status, _, blobs) = submitted(&ctx, self.inline_limit).await?;
        let mut events = Vec::new();
        for (chunk, &start) in status.chunk_starts.iter().enumerate() {
            let end = status
                .chunk_starts
                .get(chunk + 1)
                .copied()
                .unwrap_or(status.events);
            if end <= after {
                continue;
            }
            let Some(kept) = ctx.get::<String>(&keys::events(chunk)).await? else {
                continue;
            };
            let lines: Vec<String> = from_text(&blobs.resolve(kept).map_err(refused)?)?;
            let skip = after.saturating_sub(start) as usize;
            events.extend(lines.into_iter().skip(skip));
        }
        Ok(Json(Watch { status, events }))
    }

    /// The model text streaming in the session's newest turn, from where `from` stopped: a
    /// side channel the journal does not keep (`stream`).
    #[handler]
    async fn text(
        &self,
        ctx: SharedObjectContext<'_>,
        from: Json<super::stream::Cursor>,
    ) -> Result<Json<Option<super::stream::Streamed>>, HandlerError> {
        let (_, job, _) = submitted(&ctx, self.inline_limit).await?;
        let streamed = super::stream::read(Path::new(&job.work_dir), ctx.key(), &from.into_inner());
        Ok(Json(streamed))
    }

    /// The job, the status, the checkpoint and the whole history: what `sessions export`
    /// writes as a local session.
    #[handler]
    async fn export(&self, ctx: SharedObjectContext<'_>) -> Result<Json<Exported>, HandlerError> {
        let (status, job, blobs) = submitted(&ctx, self.inline_limit).await?;
        let checkpoint = ctx.get::<Json<serde_json::Value>>(keys::CHECKPOINT).await?;
        let mut chunks = Vec::new();
        for n in 0..status.message_chunks {
            chunks.extend(ctx.get::<String>(&keys::messages(n)).await?);
        }
        let kept = kept(checkpoint.map(Json::into_inner), chunks, &blobs)?;
        let (checkpoint, messages) = match kept {
            Some((state, messages)) => (Some(state), messages),
            None => (None, Vec::new()),
        };
        Ok(Json(Exported {
            job,
            status,
            checkpoint,
            messages,
        }))
    }
}

/// Does what the run's steps ask until its turn ends: journals its effects, puts its
/// questions, gathers its events and checkpoint; what the turn left, not yet stored.
async fn follow(
    ctx: &ObjectContext<'_>,
    blobs: &Blobs,
    status: &mut Status,
    mut steps: tokio::sync::mpsc::UnboundedReceiver<Result<Step, String>>,
) -> Result<Left, HandlerError> {
    let mut events = Vec::new();
    let mut checkpoint = None;
    let mut messages = Vec::new();
    let mut ended = None;
    while let Some(step) = steps.recv().await {
        match step.map_err(refused)? {
            Step::Effect {
                name,
                repeat,
                go,
                made,
                journaled,
            } => {
                let entry = journal_effect(ctx, blobs, name, repeat, go, made).await?;
                let _ = journaled.send(blobs.resolve(entry).map_err(refused)?);
            }
            Step::Ask {
                question,
                from,
                to,
                answer,
            } => {
                let waiting = Waiting {
                    id: format!("{}.{}", ctx.key(), status.asked + 1),
                    question: question.signal(),
                    from,
                    to,
                    takes_text: question.takes_text(),
                    kind: question.kind().to_string(),
                };
                // What led to the question is shown while it waits.
                let before = std::mem::take(&mut events);
                let before = journaled(ctx, blobs, "events before a question", before).await?;
                store_events(ctx, blobs, status, before)?;
                let given = wait_for_answer(ctx, status, waiting).await?;
                let _ = answer.send(approval(&given));
            }
            Step::Event(line) => events.push(line),
            Step::Checkpoint {
                state,
                messages: new,
            } => {
                checkpoint = Some(state);
                messages.extend(new);
            }
            Step::End {
                outcome,
                reason,
                turns,
            } => ended = Some((outcome, reason, turns)),
        }
    }
    let Some((outcome, reason, turns)) = ended else {
        return Err(HandlerError::from(
            "the run's thread stopped before the turn ended",
        ));
    };
    Ok(Left {
        events,
        checkpoint,
        messages,
        outcome: outcome.map(|outcome| outcome.as_str().to_string()),
        reason,
        turns,
    })
}

/// Journals one effect the run makes, and returns its entry. An effect made at most once
/// ([`Repeat::Once`]) is marked as started first: a retry that finds the mark and no result
/// knows an earlier attempt died with it under way, and keeps [`INTERRUPTED_MARK`] for it
/// instead of making it again.
async fn journal_effect(
    ctx: &ObjectContext<'_>,
    blobs: &Blobs,
    name: &'static str,
    repeat: Repeat,
    go: tokio::sync::oneshot::Sender<()>,
    made: tokio::sync::oneshot::Receiver<String>,
) -> Result<String, HandlerError> {
    // Whether this attempt is the first to start the effect.
    let first = Arc::new(AtomicBool::new(repeat == Repeat::Safe));
    if repeat == Repeat::Once {
        let starting = Arc::clone(&first);
        ctx.run(|| async move {
            starting.store(true, Ordering::SeqCst);
            Ok(())
        })
        .name("started")
        .await?;
    }
    let entry = ctx
        .run(|| async move {
            if !first.load(Ordering::SeqCst) {
                return Ok(INTERRUPTED_MARK.to_string());
            }
            let _ = go.send(());
            let made = made
                .await
                .map_err(|_| HandlerError::from("the effect was not made"))?;
            blobs.keep(made).map_err(HandlerError::from)
        })
        .name(name)
        .await?;
    Ok(entry)
}

/// What a turn left to store.
#[derive(serde::Serialize, serde::Deserialize)]
struct Left {
    events: Vec<String>,
    checkpoint: Option<serde_json::Value>,
    messages: Vec<serde_json::Value>,
    outcome: Option<String>,
    reason: Option<String>,
    turns: u32,
}

/// `value` as the journal has it: this attempt's on the first, the first attempt's on a retry.
async fn journaled<T>(
    ctx: &ObjectContext<'_>,
    blobs: &Blobs,
    name: &str,
    value: T,
) -> Result<T, HandlerError>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let text = to_text(&value)?;
    let kept = ctx
        .run(|| async move { blobs.keep(text).map_err(HandlerError::from) })
        .name(name)
        .await?;
    from_text(&blobs.resolve(kept).map_err(refused)?)
}

/// A submitted session's status and job, and where its entries kept by reference are.
async fn submitted(
    ctx: &SharedObjectContext<'_>,
    inline_limit: usize,
) -> Result<(Status, Job, Blobs), HandlerError> {
    let (Some(Json(status)), Some(Json(job))) = (
        ctx.get::<Json<Status>>(keys::STATUS).await?,
        ctx.get::<Json<Job>>(keys::JOB).await?,
    ) else {
        return Err(refused(format!("no session `{}` was submitted", ctx.key())));
    };
    let blobs = Blobs::new(Path::new(&job.work_dir), ctx.key(), inline_limit);
    Ok((status, job, blobs))
}

fn to_text<T: serde::Serialize>(value: &T) -> Result<String, HandlerError> {
    serde_json::to_string(value).map_err(|error| refused(format!("cannot store a value: {error}")))
}

fn from_text<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, HandlerError> {
    serde_json::from_str(text)
        .map_err(|error| refused(format!("a stored value does not read back: {error}")))
}

/// Stores `events` as the session's next chunk of event lines (the status, which counts
/// them, is stored by the caller).
fn store_events(
    ctx: &ObjectContext<'_>,
    blobs: &Blobs,
    status: &mut Status,
    events: Vec<String>,
) -> Result<(), HandlerError> {
    if events.is_empty() {
        return Ok(());
    }
    let count = events.len() as u32;
    let chunk = blobs.keep(to_text(&events)?).map_err(refused)?;
    ctx.set(&keys::events(status.chunk_starts.len()), chunk);
    status.chunk_starts.push(status.events);
    status.events += count;
    Ok(())
}

/// The run's checkpoint with its messages, as a resume reads it; `None` before the first.
async fn saved(
    ctx: &ObjectContext<'_>,
    status: &Status,
    blobs: &Blobs,
) -> Result<Option<serde_json::Value>, HandlerError> {
    let checkpoint = ctx.get::<Json<serde_json::Value>>(keys::CHECKPOINT).await?;
    let mut chunks = Vec::new();
    for n in 0..status.message_chunks {
        chunks.extend(ctx.get::<String>(&keys::messages(n)).await?);
    }
    let kept = kept(checkpoint.map(Json::into_inner), chunks, blobs)?;
    Ok(kept.map(|(mut state, messages)| {
        state["Messages"] = serde_json::Value::Array(messages);
        state
    }))
}

/// The checkpoint's `state` and its `MessageCount` messages, from the stored `chunks`.
fn kept(
    state: Option<serde_json::Value>,
    chunks: Vec<String>,
    blobs: &Blobs,
) -> Result<Option<(serde_json::Value, Vec<serde_json::Value>)>, HandlerError> {
    let Some(state) = state else {
        return Ok(None);
    };
    let mut messages = Vec::new();
    for chunk in chunks {
        let lines: Vec<serde_json::Value> = from_text(&blobs.resolve(chunk).map_err(refused)?)?;
        messages.extend(lines);
    }
    let count = state
        .get("MessageCount")
        .and_then(serde_json::Value::as_u64)
        .map_or(messages.len(), |count| count as usize);
    messages.truncate(count);
    Ok(Some((state, messages)))
}

/// Whether `work_dir` is an existing directory inside `root` (both resolved).
fn inside(root: &Path, work_dir: &Path) -> Result<(), String> {
    let resolved = std::fs::canonicalize(work_dir).map_err(|error| {
        format!(
            "the work dir `{}` cannot be used by this worker: {error}",
            work_dir.display()
        )
    })?;
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    if resolved.is_dir() && resolved.starts_with(&root) {
        Ok(())
    } else {
        Err(format!(
            "the work dir `{}` is not a directory inside this worker's work root `{}` (`fuseraft serve --work-root`)",
            work_dir.display(),
            root.display()
        ))
    }
}
