//! `fuseraft sessions list|show|rm`: the checkpoints under `<work dir>/.fuseraft/sessions/`.

use std::path::PathBuf;

use super::exit;
use crate::cli::{SessionsAction, SessionsArgs};
use crate::session::{self, lock, Key, Trust};

pub fn run(args: &SessionsArgs) -> u8 {
    let work_dir = args.work_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    match &args.action {
        SessionsAction::List => {
            if let Err(error) = session::existing_dir(&work_dir) {
                return fail(&error.message);
            }
            let key = Key::load_or_create();
            let listed = session::list(&work_dir, key.as_ref().ok());
            if listed.is_empty() {
                eprintln!("no sessions in `{}`", work_dir.join(session::DIR).display());
            }
            for entry in listed {
                let task: String = entry.task.chars().take(60).collect();
                let task = crate::terminal::neutralise(&task);
                let line = format!(
                    "{}  {}  {:<22} {:>4} turns  {task}\n",
                    entry.id, entry.updated, entry.status, entry.turns
                );
                if let Some(code) = super::print_or_fail(&line) {
                    return code;
                }
                if super::stdout_closed() {
                    break;
                }
            }
            exit::OK
        }
        SessionsAction::Show {
            id,
            allow_unverified,
        } => {
            if !session::valid_id(id) {
                return fail(&session::invalid_id(id));
            }
            let key = Key::load_or_create();
            let trust = Trust {
                key: key.as_ref().map_err(String::as_str),
                allow_unverified: *allow_unverified,
            };
            match session::load(&work_dir, id, &trust) {
                Ok(loaded) => {
                    for note in &loaded.notes {
                        eprintln!("note: {note}");
                    }
                    if loaded.unverified {
                        eprintln!("warning: session `{id}` is not authenticated");
                    }
                    // The state holds model and tool text: printed as JSON with every control
                    // character escaped, so nothing in it drives the terminal.
                    let mut text = crate::terminal::json_safe(
                        serde_json::to_string_pretty(&loaded.state).unwrap_or_default(),
                    );
                    text.push('\n');
                    super::print_or_fail(&text).unwrap_or(exit::OK)
                }
                Err(message) => fail(&message),
            }
        }
        SessionsAction::Rm { id } => {
            if !session::valid_id(id) {
                return fail(&session::invalid_id(id));
            }
            // An altered session can be removed; a running one cannot.
            let _lock = match lock::acquire(&work_dir, id) {
                Ok(lock) => lock,
                Err(error) => return fail(&error.message(id)),
            };
            let dir = match session::dir(&work_dir) {
                Ok(dir) => dir,
                Err(error) => return fail(&error.message),
            };
            let state = format!("{id}.json");
            if !dir.exists(&state) {
                return fail(&format!("no session `{id}` in `{}`", dir.path().display()));
            }
            for extension in ["messages.jsonl", "config.fir", "transcript.md"] {
                let _ = dir.remove(&format!("{id}.{extension}"));
            }
            match dir.remove(&state) {
                Ok(()) => {
                    eprintln!("removed session `{id}`");
                    exit::OK
                }
                Err(error) => fail(&format!("cannot remove session `{id}`: {error}")),
            }
        }
    }
}

fn fail(message: &str) -> u8 {
    eprintln!("error: {message}");
    exit::USAGE
}
