//! Removing sessions: `fuseraft sessions rm ID`, `prune` (the completed ones) and `cleanup
//! --older-than DURATION` (the idle ones). A session is removed only under its lock, so one
//! a run holds is never touched; each removal is printed on standard output, one line per
//! session (`removed ID ...`, or `would remove ID ...` with `--dry-run`).

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::exit;
use crate::session::{self, lock, Key, Listed};

/// The files of a session besides its snapshot `<id>.json`, removed first: a session whose
/// removal stops half-way still has its snapshot, so it is listed and can be removed again.
const BESIDE: [&str; 4] = [
    "messages.jsonl",
    "config.fir",
    "transcript.md",
    "audit.jsonl",
];

/// Removes session `id` under its lock: `Err` with the reason when it is running, missing or
/// cannot be removed.
pub fn remove(work_dir: &Path, id: &str) -> Result<(), String> {
    if !session::valid_id(id) {
        return Err(session::invalid_id(id));
    }
    // An altered session can be removed; a running one cannot.
    let _lock = lock::acquire(work_dir, id).map_err(|error| error.message(id))?;
    let dir = session::dir(work_dir).map_err(|error| error.message)?;
    let state = format!("{id}.json");
    if !dir.exists(&state) {
        return Err(format!("no session `{id}` in `{}`", dir.path().display()));
    }
    for extension in BESIDE {
        let _ = dir.remove(&format!("{id}.{extension}"));
    }
    dir.remove(&state)
        .map_err(|error| format!("cannot remove session `{id}`: {error}"))
}

/// `sessions prune`: removes every completed session.
pub fn prune(work_dir: &Path, dry_run: bool) -> u8 {
    remove_listed(work_dir, dry_run, "completed", |entry| entry.completed)
}

/// `sessions cleanup --older-than AGE`: removes every session idle for longer than `age`.
pub fn cleanup(work_dir: &Path, age: Duration, dry_run: bool) -> u8 {
    let now = SystemTime::now();
    let what = format!("idle for more than {}", humantime::format_duration(age));
    remove_listed(work_dir, dry_run, &what, |entry| {
        entry
            .last_activity
            .and_then(|at| now.duration_since(at).ok())
            .is_some_and(|idle| idle > age)
    })
}

/// Removes the listed sessions `chosen` accepts, printing each; `what` names them in the
/// summary. A session in use is kept and said so; the exit code is 0 unless a removal failed.
fn remove_listed(
    work_dir: &Path,
    dry_run: bool,
    what: &str,
    chosen: impl Fn(&Listed) -> bool,
) -> u8 {
    if let Err(error) = session::existing_dir(work_dir) {
        eprintln!("error: {}", error.message);
        return exit::USAGE;
    }
    let key = Key::load_or_create();
    let (mut removed, mut failed) = (0usize, false);
    for entry in session::list(work_dir, key.as_ref().ok()) {
        if !chosen(&entry) {
            continue;
        }
        if let Some(pid) = lock::holder_of(work_dir, &entry.id) {
            let by = pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default();
            eprintln!("kept `{}`: a fuseraft run is using it{by}", entry.id);
            continue;
        }
        let done = if dry_run {
            Ok(())
        } else {
            remove(work_dir, &entry.id)
        };
        match done {
            Ok(()) => {
                removed += 1;
                let verb = if dry_run { "would remove" } else { "removed" };
                if let Some(code) = super::print_or_fail(&line(verb, &entry)) {
                    return code;
                }
            }
            Err(message) => {
                eprintln!("error: {message}");
                failed = true;
            }
        }
    }
    let sessions = if removed == 1 { "session" } else { "sessions" };
    match (removed, dry_run) {
        (0, _) => eprintln!("no session {what} to remove"),
        (n, true) => eprintln!("{n} {sessions} {what} would be removed (nothing was removed)"),
        (n, false) => eprintln!("removed {n} {sessions} {what}"),
    }
    if failed {
        exit::FINDINGS
    } else {
        exit::OK
    }
}

/// `VERB ID  UPDATED  STATUS  N turns  TASK`, the task cut and made safe for a terminal.
fn line(verb: &str, entry: &Listed) -> String {
    let task: String = entry.task.chars().take(60).collect();
    let task = crate::terminal::neutralise(&task);
    format!(
        "{verb} {}  {}  {}  {} turns  {task}\n",
        entry.id, entry.updated, entry.status, entry.turns
    )
}
