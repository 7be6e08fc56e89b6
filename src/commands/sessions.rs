//! `fuseraft sessions list|show|rm`: the checkpoints under `<work dir>/.fuseraft/sessions/`.

use std::path::PathBuf;

use super::exit;
use crate::cli::{SessionsAction, SessionsArgs};
use crate::session;

pub fn run(args: &SessionsArgs) -> u8 {
    let work_dir = args.work_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    match &args.action {
        SessionsAction::List => {
            let listed = session::list(&work_dir);
            if listed.is_empty() {
                eprintln!("no sessions in `{}`", work_dir.join(session::DIR).display());
            }
            for entry in listed {
                let task: String = entry.task.chars().take(60).collect();
                println!(
                    "{}  {}  {:<22} {:>4} turns  {task}",
                    entry.id, entry.updated, entry.status, entry.turns
                );
            }
            exit::OK
        }
        SessionsAction::Show { id } => match session::load(&work_dir, id) {
            Ok(json) => {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&json).unwrap_or_default()
                );
                exit::OK
            }
            Err(message) => {
                eprintln!("error: {message}");
                exit::USAGE
            }
        },
        SessionsAction::Rm { id } => {
            if let Err(message) = session::load(&work_dir, id) {
                eprintln!("error: {message}");
                return exit::USAGE;
            }
            let _ = std::fs::remove_file(session::messages_path(&work_dir, id));
            match std::fs::remove_file(session::path(&work_dir, id)) {
                Ok(()) => {
                    eprintln!("removed session `{id}`");
                    exit::OK
                }
                Err(error) => {
                    eprintln!("error: cannot remove session `{id}`: {error}");
                    exit::USAGE
                }
            }
        }
    }
}
