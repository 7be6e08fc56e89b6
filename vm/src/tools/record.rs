//! Recording tool effects in the change log, and the `changes_read_latest` and
//! `changes_read` tools.
//!
//! Every write, patch, delete and command becomes one record of what it added to the entry
//! of `(session, agent, turn)`, appended to the change log's append log under its file lock
//! (`crate::changes::store`): bounded work per call, and no record lost to a concurrent
//! branch of a fork or to another fuseraft process in the same work dir.

use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::changes::{store, ChangeLog, Entry};

use super::{Outcome, ToolContext};

static LOCK: Mutex<()> = Mutex::new(());

/// The most command output kept per change-log record, in bytes.
pub(crate) const LOG_OUTPUT_CAP: usize = 2048;

/// Applies `change` to this turn's entry. `Err` says why the log could not be written
/// (the tool's effect stands; the caller appends a warning to its result).
///
/// Every path it records as written or deleted also counts as a write in the run's file
/// versions ([`super::RunState`]), whether or not the change log is on.
pub(crate) fn record(ctx: &ToolContext, change: impl FnOnce(&mut Entry)) -> Result<(), String> {
    let mut delta = Entry {
        agent: ctx.agent.clone(),
        turn_index: ctx.turn,
        timestamp: now_rfc3339(),
        session_id: ctx.session_id.clone(),
        ..Entry::default()
    };
    change(&mut delta);
    for path in delta.files_written.iter().chain(&delta.files_deleted) {
        ctx.run_state.wrote(path);
    }
    if ctx.change_log.as_os_str().is_empty() {
        return Ok(());
    }
    // The file lock serialises processes; this one the threads of this process, which
    // would otherwise each open and wait on the lock file.
    let _guard = LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    store::record(&ctx.change_log, &delta)
}

/// Adds a record and turns a failure into a note on the tool's result.
pub(crate) fn record_into(
    outcome: &mut Outcome,
    ctx: &ToolContext,
    change: impl FnOnce(&mut Entry),
) {
    if let Err(error) = record(ctx, change) {
        outcome.text.push_str(&format!(
            "\n[warning: not recorded in the change log: {error}]"
        ));
    }
}

/// Records a call of an MCP server's tool; a log that cannot be written adds a warning to
/// the call's result.
pub fn record_mcp_call(
    result: &mut String,
    ctx: &ToolContext,
    server: &str,
    tool: &str,
    arguments: &serde_json::Value,
    succeeded: bool,
) {
    let output = cap_text(result, LOG_OUTPUT_CAP);
    if let Err(error) = record(ctx, |entry| {
        entry.mcp_calls.push(crate::changes::McpCall {
            server: server.to_string(),
            tool: tool.to_string(),
            arguments: arguments.to_string(),
            succeeded,
            output,
        })
    }) {
        result.push_str(&format!(
            "\n[warning: not recorded in the change log: {error}]"
        ));
    }
}

pub(crate) fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|known| known == item) {
        list.push(item.to_string());
    }
}

/// `changes_read_latest`: the newest entry (highest turn) of this session, as JSON.
pub(crate) fn read_latest(ctx: &ToolContext) -> Outcome {
    if ctx.change_log.as_os_str().is_empty() {
        return Outcome::ok("Change tracking is off for this run.");
    }
    let log = {
        let _guard = LOCK.lock().unwrap_or_else(PoisonError::into_inner);
        ChangeLog::load(&ctx.change_log)
    };
    let log = match log {
        Ok(log) => log,
        Err(error) => return Outcome::error(error),
    };
    let latest = log
        .entries
        .iter()
        .filter(|entry| entry.session_id == ctx.session_id)
        .fold(None::<&Entry>, |best, entry| match best {
            Some(best) if best.turn_index > entry.turn_index => Some(best),
            _ => Some(entry),
        });
    match latest {
        None => Outcome::ok(format!(
            "No changes recorded for session `{}` yet.",
            ctx.session_id
        )),
        Some(entry) => {
            let json = entry.to_json();
            Outcome::ok(serde_json::to_string_pretty(&json).unwrap_or_default())
        }
    }
}

/// `changes_read`: every entry of this session, oldest turn first, as JSON (capped to the
/// tool output limit).
pub(crate) fn read_all(ctx: &ToolContext) -> Outcome {
    if ctx.change_log.as_os_str().is_empty() {
        return Outcome::ok("Change tracking is off for this run.");
    }
    let log = {
        let _guard = LOCK.lock().unwrap_or_else(PoisonError::into_inner);
        ChangeLog::load(&ctx.change_log)
    };
    let log = match log {
        Ok(log) => log,
        Err(error) => return Outcome::error(error),
    };
    let mut entries: Vec<&Entry> = log
        .entries
        .iter()
        .filter(|entry| entry.session_id == ctx.session_id)
        .collect();
    if entries.is_empty() {
        return Outcome::ok(format!(
            "No changes recorded for session `{}` yet.",
            ctx.session_id
        ));
    }
    entries.sort_by_key(|entry| entry.turn_index);
    let json = serde_json::Value::Array(entries.iter().map(|entry| entry.to_json()).collect());
    let text = serde_json::to_string_pretty(&json).unwrap_or_default();
    Outcome::ok(cap_text(&text, ctx.limits.output_cap))
}

/// Keeps the first and last halves of `text` within `cap` bytes (on char boundaries), with
/// a `[output truncated: N bytes omitted]` line between them.
pub(crate) fn cap_text(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut head = cap / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (cap - cap / 2);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[output truncated: {} bytes omitted]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// The current time as RFC 3339 UTC (`2026-05-01T12:00:00Z`).
pub(crate) fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    rfc3339(secs)
}

/// The last second RFC 3339 can write (9999-12-31T23:59:59Z).
const LAST_RFC3339_SECOND: u64 = 253_402_300_799;

/// `secs` since the Unix epoch as RFC 3339 UTC, through `humantime`. A later time (a file
/// whose mtime an agent set past the year 9999) is written as the last second the format
/// has, never a panic.
pub(crate) fn rfc3339(secs: u64) -> String {
    let time = UNIX_EPOCH + std::time::Duration::from_secs(secs.min(LAST_RFC3339_SECOND));
    humantime::format_rfc3339_seconds(time).to_string()
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn timestamps_are_rfc3339_utc_to_the_second() {
        let cases: &[(u64, &str)] = &[
            (0, "1970-01-01T00:00:00Z"),
            (1_709_251_199, "2024-02-29T23:59:59Z"),
            (1_777_636_800, "2026-05-01T12:00:00Z"),
            (253_402_300_799, "9999-12-31T23:59:59Z"),
            // Past what the format can write (an mtime set far ahead): the last second.
            (253_402_300_800, "9999-12-31T23:59:59Z"),
            (u64::MAX, "9999-12-31T23:59:59Z"),
        ];
        for (secs, expected) in cases {
            assert_eq!(rfc3339(*secs), *expected, "{secs}");
        }
    }
}
