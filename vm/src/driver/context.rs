//! The context sources read on disk, for a handoff (`HandoffContext`) or an agent's own
//! `Context`: `file:` sources and the brief read race-free and regular-only under their root
//! ([`crate::confine`]), `changes_recent:N` from the session's change-log entries,
//! `brief_field:F` from the brief. The machine answers `session_context` and `own_history`.

use crate::history::{Denial, DenialKind};
use std::path::{Component, Path, PathBuf};

use fuseraft_compiler::ir::{ContextSource, Program, SourceKind};

use crate::changes::ChangeLog;
use crate::journal::{Recalled, Repeat};

use super::Models;

/// The context `read` reads; in a served run, the one an earlier attempt of the turn read
/// (the model call it fed may be kept too). A read: asked again if it was under way.
pub(super) async fn kept_context<M: Models>(
    models: &M,
    read: impl FnOnce() -> Vec<String>,
) -> Vec<String> {
    let Some(journal) = models.journal() else {
        return read();
    };
    match journal.recall("context read", Repeat::Safe).await {
        Recalled::Kept(text) => serde_json::from_str(&text).unwrap_or_else(|_| read()),
        Recalled::Interrupted => read(),
        Recalled::Make(keep) => {
            let texts = read();
            keep(serde_json::to_string(&texts).unwrap_or_default());
            texts
        }
    }
}

/// A relative path that stays inside the work dir.
fn confined(work_dir: &Path, path: &str) -> Result<PathBuf, String> {
    let relative = Path::new(path);
    if relative.is_absolute()
        || relative
            .components()
            .any(|part| matches!(part, Component::ParentDir))
    {
        return Err(Denial::new(
            DenialKind::Sandbox,
            format_args!("`{path}` is outside the work dir"),
        )
        .text);
    }
    Ok(work_dir.join(relative))
}

/// The most of a `file:` context source read (its text is capped to `MaxChars` after).
const CONTEXT_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A `file:` context source: a regular file under the sandbox root, resolved race-free (a
/// symlink leaving the root, a credential file, a FIFO or a device is refused, never
/// blocking the run).
pub(super) fn read_context_file(sandbox: &Path, argument: &str) -> Result<String, String> {
    use crate::confine::Error;
    let refused = |why: String| format!("(could not read `{argument}`: {why})");
    let (text, rel) = match crate::confine::read_text_under(
        sandbox,
        Path::new(argument.trim()),
        CONTEXT_FILE_BYTES,
    ) {
        Ok(read) => read,
        Err(Error::Escapes(place)) => {
            return Err(Denial::new(
                DenialKind::Sandbox,
                format_args!("`{argument}` resolves to `{place}`, outside the sandbox"),
            )
            .text)
        }
        Err(Error::TooLarge(size)) => {
            return Err(refused(format!(
                "it is {size} bytes, more than the {CONTEXT_FILE_BYTES} bytes read"
            )))
        }
        Err(error) => return Err(refused(error.to_string())),
    };
    if crate::tools::is_credential_path(&rel) {
        return Err(Denial::new(
            DenialKind::Credentials,
            format_args!("`{argument}` is a credential file (Security.DenyCredentialFiles)"),
        )
        .text);
    }
    Ok(text)
}

/// `changes_recent:N`: the newest `count` change-log entries of the session, oldest first,
/// one line each (``Developer (turn 3): wrote a.rs; deleted c.rs; ran `cargo test` (ok)``).
fn recent_changes(change_log: &Path, session_id: &str, count: usize) -> Result<String, String> {
    let log = ChangeLog::load(change_log)?;
    let mut entries: Vec<_> = log
        .entries
        .iter()
        .filter(|entry| entry.session_id == session_id)
        .collect();
    if entries.is_empty() {
        return Ok("(no changes recorded in this session yet)".to_string());
    }
    entries.sort_by_key(|entry| entry.turn_index);
    let recent = &entries[entries.len().saturating_sub(count.max(1))..];
    let lines: Vec<String> = recent
        .iter()
        .map(|entry| {
            let mut parts = Vec::new();
            if !entry.files_written.is_empty() {
                parts.push(format!("wrote {}", entry.files_written.join(", ")));
            }
            if !entry.files_deleted.is_empty() {
                parts.push(format!("deleted {}", entry.files_deleted.join(", ")));
            }
            if !entry.commands_run.is_empty() {
                let commands: Vec<String> = entry
                    .commands_run
                    .iter()
                    .map(|command| {
                        let status = if command.succeeded { "ok" } else { "failed" };
                        format!("`{}` ({status})", command.command)
                    })
                    .collect();
                parts.push(format!("ran {}", commands.join(", ")));
            }
            if !entry.git_commits.is_empty() {
                parts.push(format!("committed {}", entry.git_commits.join(", ")));
            }
            if parts.is_empty() {
                parts.push("no changes".to_string());
            }
            format!(
                "{} (turn {}): {}",
                entry.agent,
                entry.turn_index,
                parts.join("; ")
            )
        })
        .collect();
    Ok(lines.join("\n"))
}

/// The text blocks of `HandoffContext` sources, read from the work dir.
pub(super) fn read_context(
    program: &Program,
    work_dir: &Path,
    sandbox: &Path,
    change_log: &Path,
    sources: &[ContextSource],
    session_id: &str,
) -> Vec<String> {
    sources
        .iter()
        .map(|source| {
            // The compiler's one reading of the source's text (`SourceKind`): the driver
            // parses no name of its own, so a source `check` accepts is one read here.
            let with_session = |argument: &str| argument.replace("{session_id}", session_id);
            let body = match source.kind() {
                SourceKind::File(path) => read_context_file(sandbox, &with_session(path)),
                SourceKind::ChangesRecent(count) => {
                    recent_changes(change_log, session_id, count.unwrap_or(3))
                }
                SourceKind::BriefField(field) => {
                    let argument = with_session(field);
                    let brief = program
                        .validation
                        .brief_path
                        .as_ref()
                        .map_or(".fuseraft/artifacts/brief.json".to_string(), |value| {
                            value.replace("{session_id}", session_id)
                        });
                    confined(work_dir, &brief)
                        .and_then(|_| {
                            // Race-free and regular files only, like `file:` sources.
                            crate::confine::read_text_under(
                                work_dir,
                                Path::new(&brief),
                                CONTEXT_FILE_BYTES,
                            )
                            .map(|(text, _)| text)
                            .map_err(|error| format!("(could not read the brief: {error})"))
                        })
                        .and_then(|text| {
                            serde_json::from_str::<serde_json::Value>(&text)
                                .map_err(|error| format!("(the brief is not JSON: {error})"))
                        })
                        .map(|json| match json.get(argument.as_str()) {
                            Some(serde_json::Value::String(text)) => text.clone(),
                            Some(other) => other.to_string(),
                            None => format!("(the brief has no `{argument}`)"),
                        })
                }
                SourceKind::SessionContext | SourceKind::OwnHistory(_) => Err(format!(
                    "(context source `{}` is answered by the machine, not read on disk)",
                    source.source
                )),
                SourceKind::Other(other) => {
                    Err(format!("(context source `{other}` is not available)"))
                }
            };
            let body = body.unwrap_or_else(|error| error);
            crate::context_block::render(source, &body)
        })
        .collect()
}
