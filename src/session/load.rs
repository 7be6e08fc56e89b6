//! Reading a session back, and verifying it: every state record of the log carries a MAC
//! (HMAC-SHA256 under the user's session key, [`super::key`]) over the bytes since the
//! previous record (the turn's message lines and the record's state), the previous record's
//! MAC and the session id. So an edited message or state, a dropped or reordered turn, or a
//! record copied from another session fails, and loading refuses naming the record.
//!
//! A log cut after a whole record is a valid, older session; a torn or unreadable end (a
//! crash mid-write) is ignored as before: the session continues from the last whole record
//! that verifies. Sessions written without MACs (before session keys, or without a key) are
//! refused unless the caller allows unverified sessions (`--allow-unverified`).

use std::io::Read;
use std::path::Path;

use fuseraft_vm::state_dir::{Access, StateDir};

use serde_json::Value as Json;

use super::key::{self, Key, Tag};
use super::Chain;
use super::{
    invalid_id, messages_path, path, valid_id, verify_snapshot, DIR, LOG_DOMAIN, MAC_CLOSE,
    MAC_OPEN, MAC_SUFFIX_LEN, RECORD_OPEN,
};

/// What loading may trust.
pub struct Trust<'a> {
    /// The session key, or why there is none.
    pub key: Result<&'a Key, &'a str>,
    /// Accept sessions (or parts) written without MACs.
    pub allow_unverified: bool,
}

/// A loaded session.
#[derive(Debug)]
pub struct Loaded {
    /// The newest state, with `Messages` from the log.
    pub state: Json,
    /// Where the next record written continues the chain.
    pub chain: Chain,
    /// It was written (in part) without MACs, and the caller allowed that.
    pub unverified: bool,
    /// What the user should know (a log that ends before the snapshot, ...).
    pub notes: Vec<String>,
}

/// Reads a session's whole checkpoint: its newest complete state (see the module doc) with
/// `Messages` from the log. Errors say what is wrong in words a user can act on.
pub fn load(work_dir: &Path, id: &str, trust: &Trust<'_>) -> Result<Loaded, String> {
    load_with(work_dir, id, trust, false)
}

/// [`load`] for a run that will continue the session (under its lock): the log is cut after
/// the state loaded, dropping the remainder of an interrupted turn, so the resumed run
/// appends after it.
pub fn load_for_resume(work_dir: &Path, id: &str, trust: &Trust<'_>) -> Result<Loaded, String> {
    load_with(work_dir, id, trust, true)
}

fn message_count(state: &Json) -> usize {
    state
        .get("MessageCount")
        .and_then(Json::as_u64)
        .map_or(0, |count| usize::try_from(count).unwrap_or(usize::MAX))
}

/// A state record of the log.
struct Record {
    state: Json,
    /// The byte offset after it.
    end: usize,
    /// Its MAC; `None` for a record written without one.
    tag: Option<Tag>,
}

/// What a session log holds, read up to its first torn or damaged line.
struct Log {
    messages: Vec<Json>,
    /// The byte offset after each message line.
    message_ends: Vec<usize>,
    /// The last state record.
    record: Option<Record>,
    /// Each whole record's turn (`Machine.Turn`) and state, in order, when asked for.
    turns: Option<Vec<(u64, Json)>>,
    /// Whether any record carried a MAC.
    authenticated: bool,
    /// The line of the first record without a MAC.
    unauthenticated: Option<usize>,
    /// Where reading stopped before the end, and why.
    damage: Option<String>,
    /// The first message line since the last record that is JSON but not a whole message
    /// (its line and why): an error once a record covers it, a torn tail otherwise.
    malformed: Option<(usize, String)>,
}

/// A record line's state text and MAC, when it ends with `,"Mac":"<hex>"}`.
fn split_mac(line: &[u8]) -> Option<(&[u8], Tag)> {
    let body = line.len().checked_sub(MAC_SUFFIX_LEN)?;
    let suffix = &line[body..];
    if body < RECORD_OPEN.len() || !suffix.starts_with(MAC_OPEN) || !suffix.ends_with(MAC_CLOSE) {
        return None;
    }
    let hex = std::str::from_utf8(&suffix[MAC_OPEN.len()..suffix.len() - MAC_CLOSE.len()]).ok()?;
    Some((&line[RECORD_OPEN.len()..body], key::tag_from_hex(hex)?))
}

fn read_log(
    bytes: &[u8],
    id: &str,
    trust: &Trust<'_>,
    log_path: &Path,
    keep_turns: bool,
) -> Result<Log, String> {
    let mut log = Log {
        messages: Vec::new(),
        message_ends: Vec::new(),
        record: None,
        turns: keep_turns.then(Vec::new),
        authenticated: false,
        unauthenticated: None,
        damage: None,
        malformed: None,
    };
    let altered = |number: usize, why: &str| {
        format!(
            "session `{id}` was altered: the state record at line {number} of `{}` {why}; it will not be resumed or shown (remove it with `fuseraft sessions rm {id}`)",
            log_path.display()
        )
    };
    let mut chain: Tag = [0; key::MAC_LEN];
    // Where the bytes the next record's MAC covers start.
    let mut segment = 0;
    let mut start = 0;
    for (number, line) in bytes.split_inclusive(|byte| *byte == b'\n').enumerate() {
        let number = number + 1;
        let end = start + line.len();
        if !line.ends_with(b"\n") {
            log.damage = Some(format!("line {number} is cut off"));
            break;
        }
        if line.starts_with(RECORD_OPEN) {
            let (state, tag) = match split_mac(line) {
                Some((text, tag)) => {
                    let key = trust
                        .key
                        .map_err(|problem| format!("cannot verify session `{id}`: {problem}"))?;
                    let covered = &bytes[segment..end - MAC_SUFFIX_LEN];
                    if !key.verify(&[LOG_DOMAIN, id.as_bytes(), &chain, covered], &tag) {
                        return Err(altered(
                            number,
                            "fails authentication (it, or a message or record before it, was edited, dropped or moved)",
                        ));
                    }
                    let state = serde_json::from_slice::<Json>(text)
                        .map_err(|error| altered(number, &format!("is not JSON ({error})")))?;
                    (state, Some(tag))
                }
                None => match serde_json::from_slice::<Json>(&line[..line.len() - 1]) {
                    Ok(Json::Object(mut object))
                        if object.len() == 1 && object.contains_key(super::RECORD_KEY) =>
                    {
                        if log.authenticated {
                            return Err(altered(
                                number,
                                "has no MAC where the records before it have one",
                            ));
                        }
                        (object.remove(super::RECORD_KEY).unwrap_or_default(), None)
                    }
                    Ok(_) if log.authenticated => {
                        return Err(altered(number, "is not a record fuseraft wrote"));
                    }
                    _ => {
                        log.damage = Some(format!("line {number} is not a whole state record"));
                        break;
                    }
                },
            };
            if !state.is_object() {
                return Err(altered(number, "holds no state object"));
            }
            // A whole record covers the lines before it: they must be whole messages, and
            // it a whole state.
            if let Some((line, why)) = log.malformed.take() {
                return Err(malformed(id, line, "message record", log_path, &why));
            }
            if let Err(why) = fuseraft_vm::checkpoint::check_state(&state)
                .and_then(|()| super::fields::check(&state))
            {
                return Err(malformed(id, number, "state record", log_path, &why));
            }
            if message_count(&state) != log.messages.len() {
                if tag.is_some() {
                    return Err(altered(number, "counts messages the log does not hold"));
                }
                log.damage = Some(format!(
                    "the state at line {number} counts {} messages where {} precede it",
                    message_count(&state),
                    log.messages.len()
                ));
                break;
            }
            match tag {
                Some(tag) => {
                    log.authenticated = true;
                    chain = tag;
                }
                None => {
                    log.unauthenticated.get_or_insert(number);
                    chain = [0; key::MAC_LEN];
                }
            }
            segment = end;
            if let Some(turns) = &mut log.turns {
                let turn = state["Machine"]["Turn"].as_u64().unwrap_or(0);
                turns.push((turn, state.clone()));
            }
            log.record = Some(Record { state, end, tag });
        } else {
            match serde_json::from_slice::<Json>(line) {
                Ok(message @ Json::Object(_)) => {
                    if let Err(why) = fuseraft_vm::checkpoint::check_message(&message) {
                        log.malformed.get_or_insert((number, why));
                    }
                    log.messages.push(message);
                    log.message_ends.push(end);
                }
                Ok(_) => {
                    log.damage = Some(format!("line {number} is not a JSON object"));
                    break;
                }
                Err(error) => {
                    log.damage = Some(format!("line {number}: {error}"));
                    break;
                }
            }
        }
        start = end;
    }
    // No record covers a malformed message: it is the torn end of an interrupted turn.
    if let (Some((line, why)), None) = (log.malformed.take(), &log.damage) {
        log.damage = Some(format!("line {line} is not a whole message ({why})"));
    }
    Ok(log)
}

/// The error for a whole record (`kind`, at line `number`) with a malformed field.
fn malformed(id: &str, number: usize, kind: &str, log_path: &Path, why: &str) -> String {
    format!(
        "session `{id}` is malformed: the {kind} at line {number} of `{}`: {why}",
        log_path.display()
    )
}

fn load_with(work_dir: &Path, id: &str, trust: &Trust<'_>, repair: bool) -> Result<Loaded, String> {
    if !valid_id(id) {
        return Err(invalid_id(id));
    }
    let dir = match super::existing_dir(work_dir) {
        Ok(Some(dir)) => dir,
        Ok(None) => return Err(no_session(work_dir, id)),
        Err(error) => return Err(error.message),
    };
    let mut snapshot = load_state(&dir, work_dir, id)?;
    let snapshot_verified = verify_snapshot(trust.key.ok(), id, &mut snapshot);
    if snapshot_verified == Some(false) {
        return Err(format!(
            "session `{id}` was altered: `{}` fails authentication; it will not be resumed or shown (remove it with `fuseraft sessions rm {id}`)",
            path(work_dir, id).display()
        ));
    }
    let log_path = messages_path(work_dir, id);
    let mut bytes = Vec::new();
    let read = dir
        .open_file(&format!("{id}.messages.jsonl"), Access::Read)
        .and_then(|mut file| file.read_to_end(&mut bytes));
    read.map_err(|error| {
        format!(
            "cannot read the session's messages `{}`: {error}",
            log_path.display()
        )
    })?;
    let log = read_log(&bytes, id, trust, &log_path, false)?;
    // Records without MACs under an authenticated snapshot: the MACs were stripped. (A
    // session written before keys and continued with one has MAC'd records after them.)
    if let (Some(true), false, Some(number)) =
        (snapshot_verified, log.authenticated, log.unauthenticated)
    {
        return Err(format!(
            "session `{id}` was altered: the state record at line {number} of `{}` has no MAC where the session's snapshot has one; it will not be resumed or shown (remove it with `fuseraft sessions rm {id}`)",
            log_path.display()
        ));
    }
    let mut notes = Vec::new();
    let mut unverified = log.unauthenticated.is_some() || snapshot_verified.is_none();
    let record_end = log.record.as_ref().map_or(0, |record| record.end);
    let (mut state, end, chain) = match log.record {
        Some(record) if log.authenticated => {
            // Only what a MAC covers is used: the last record that verifies, whatever the
            // snapshot says.
            if snapshot_verified.is_none() {
                return Err(format!(
                    "session `{id}` was altered: `{}` has no MAC where its log has them",
                    path(work_dir, id).display()
                ));
            }
            // Records before the first MAC'd one (a session an older fuseraft began) stay
            // unverified.
            unverified = log.unauthenticated.is_some();
            if message_count(&snapshot) > message_count(&record.state) {
                notes.push(format!(
                    "the log of session `{id}` ends before its newest saved state{}; continuing from the last whole turn it holds",
                    log.damage.as_ref().map(|damage| format!(" ({damage})")).unwrap_or_default()
                ));
            }
            let tag = record.tag.unwrap_or([0; key::MAC_LEN]);
            (
                record.state,
                record.end,
                Chain {
                    tag,
                    carry: Vec::new(),
                },
            )
        }
        Some(record) if message_count(&record.state) >= message_count(&snapshot) => {
            (record.state, record.end, Chain::default())
        }
        _ => {
            // The snapshot is the newest state: a session written before state records.
            unverified = true;
            if let Err(why) = fuseraft_vm::checkpoint::check_state(&snapshot)
                .and_then(|()| super::fields::check(&snapshot))
            {
                return Err(format!(
                    "session `{id}` is malformed: `{}`: {why}",
                    path(work_dir, id).display()
                ));
            }
            let count = message_count(&snapshot);
            if log.messages.len() < count {
                return Err(format!(
                    "session log `{}` holds {} of the session's {count} messages{}",
                    log_path.display(),
                    log.messages.len(),
                    log.damage
                        .map(|damage| format!(" (it is damaged: {damage})"))
                        .unwrap_or_default()
                ));
            }
            let end = count
                .checked_sub(1)
                .map_or(0, |last| log.message_ends[last]);
            // The messages after the last record belong to the first new record's MAC.
            let carry = bytes.get(record_end..end).unwrap_or_default().to_vec();
            (
                snapshot,
                end,
                Chain {
                    tag: [0; key::MAC_LEN],
                    carry,
                },
            )
        }
    };
    if unverified && !trust.allow_unverified {
        return Err(format!(
            "session `{id}` was saved without authentication (by an older fuseraft, or without a session key), so fuseraft cannot tell whether it was altered; pass `--allow-unverified` to use it anyway"
        ));
    }
    match state.get("SessionId").and_then(Json::as_str) {
        Some(saved) if saved == id => {}
        Some(saved) => {
            return Err(format!(
                "session `{id}` is damaged or forged: its state names session `{}`",
                saved.escape_default()
            ))
        }
        None => {
            return Err(format!(
                "session `{id}` is damaged: its state has no `SessionId`"
            ))
        }
    }
    let mut messages = log.messages;
    messages.truncate(message_count(&state));
    if repair && end < bytes.len() {
        let file = dir
            .open_file(&format!("{id}.messages.jsonl"), Access::Update)
            .map_err(|error| format!("cannot repair `{}`: {error}", log_path.display()))?;
        file.set_len(end as u64)
            .and_then(|_| file.sync_all())
            .map_err(|error| format!("cannot repair `{}`: {error}", log_path.display()))?;
    }
    state["Messages"] = Json::Array(messages);
    Ok(Loaded {
        state,
        chain,
        unverified,
        notes,
    })
}

fn no_session(work_dir: &Path, id: &str) -> String {
    format!(
        "no session `{id}` in `{}` (is `--work-dir` the one the session ran in?)",
        work_dir.join(DIR).display()
    )
}

/// Reads a session's state file only.
fn load_state(dir: &StateDir, work_dir: &Path, id: &str) -> Result<Json, String> {
    let file = path(work_dir, id);
    let mut text = String::new();
    let read = dir
        .open_file(&format!("{id}.json"), Access::Read)
        .and_then(|mut opened| opened.read_to_string(&mut text));
    read.map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => no_session(work_dir, id),
        _ => format!("cannot read `{}`: {error}", file.display()),
    })?;
    let state: Json = serde_json::from_str(&text)
        .map_err(|error| format!("session file `{}` is damaged: {error}", file.display()))?;
    if !state.is_object() {
        return Err(format!(
            "session file `{}` is damaged: it is not a JSON object",
            file.display()
        ));
    }
    Ok(state)
}

/// A verified session's state as it stood after turn `turn` (the log's state record of that
/// turn, with `Messages`), and the exact bytes of those messages' lines in the log, in order.
pub(super) fn state_after_turn(
    work_dir: &Path,
    id: &str,
    trust: &Trust<'_>,
    turn: u64,
) -> Result<(Json, Vec<u8>), String> {
    // The whole session first: a session that does not load is not forked.
    load(work_dir, id, trust)?;
    let dir = super::existing_dir(work_dir)
        .map_err(|error| error.message)?
        .ok_or_else(|| no_session(work_dir, id))?;
    let log_path = messages_path(work_dir, id);
    let mut bytes = Vec::new();
    dir.open_file(&format!("{id}.messages.jsonl"), Access::Read)
        .and_then(|mut file| file.read_to_end(&mut bytes))
        .map_err(|error| format!("cannot read `{}`: {error}", log_path.display()))?;
    let log = read_log(&bytes, id, trust, &log_path, true)?;
    let turns = log.turns.unwrap_or_default();
    let newest = turns.last().map_or(0, |(turn, _)| *turn);
    let Some((_, state)) = turns.into_iter().rev().find(|(at, _)| *at == turn) else {
        return Err(format!(
            "session `{id}` has no saved state after turn {turn} (it saved turns up to {newest}; a turn whose checkpoint was held in memory, or a fork's branch, has none)"
        ));
    };
    let count = message_count(&state);
    let mut lines = Vec::new();
    for index in 0..count {
        let end = log.message_ends[index];
        let start = end - line_length(&bytes[..end]);
        lines.extend_from_slice(&bytes[start..end]);
    }
    let mut state = state;
    state["Messages"] = Json::Array(log.messages.into_iter().take(count).collect());
    Ok((state, lines))
}

/// The length of the last line of `bytes` (which ends with its newline).
fn line_length(bytes: &[u8]) -> usize {
    let body = &bytes[..bytes.len().saturating_sub(1)];
    bytes.len()
        - body
            .iter()
            .rposition(|byte| *byte == b'\n')
            .map_or(0, |at| at + 1)
}
