//! `fuseraft sessions list [--all]|show|rm|prune|cleanup`: the checkpoints under
//! `<work dir>/.fuseraft/sessions/`. Removing is `sessions_remove`.

use std::path::PathBuf;

use super::exit;
use crate::cli::{SessionsAction, SessionsArgs};
use crate::session::{self, Key, Trust};

pub fn run(args: &SessionsArgs) -> u8 {
    let work_dir = args.work_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if let Some(on) = &args.on {
        return match &args.action {
            SessionsAction::List { .. } => super::remote::sessions_on(on),
            SessionsAction::Export { id } => super::remote::sessions_export(on, id, &work_dir),
            SessionsAction::Show { id, .. } => super::remote::sessions_show_on(on, id),
            _ => fail("only `sessions list`, `show` and `export` take `--on` (a server's questions are answered with `fuseraft approve`)"),
        };
    }
    match &args.action {
        SessionsAction::List { all } => {
            if let Err(error) = session::existing_dir(&work_dir) {
                return fail(&error.message);
            }
            let key = Key::load_or_create();
            let mut listed = session::list(&work_dir, key.as_ref().ok());
            let family = family(&listed);
            let total = listed.len();
            if !all {
                listed.retain(|entry| !entry.completed);
            }
            let hidden = total - listed.len();
            if total == 0 {
                eprintln!("no sessions in `{}`", work_dir.join(session::DIR).display());
            } else if hidden > 0 {
                let (n, s) = (hidden, if hidden == 1 { "" } else { "s" });
                eprintln!("{n} completed session{s} not shown; `sessions list --all` shows them");
            }
            for entry in listed {
                let task: String = entry.task.chars().take(60).collect();
                let task = crate::terminal::neutralise(&task);
                let kin = family.get(&entry.id).map(String::as_str).unwrap_or("");
                let line = format!(
                    "{}  {}  {:<22} {:>4} turns  {task}{kin}\n",
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
        SessionsAction::Export { .. } => {
            fail("`sessions export ID` copies a session from a server: give it `--on URL`")
        }
        SessionsAction::Rm { id } => match super::sessions_remove::remove(&work_dir, id) {
            Ok(()) => {
                eprintln!("removed session `{id}`");
                exit::OK
            }
            Err(message) => fail(&message),
        },
        SessionsAction::Prune { dry_run } => super::sessions_remove::prune(&work_dir, *dry_run),
        SessionsAction::Cleanup {
            older_than,
            dry_run,
        } => super::sessions_remove::cleanup(&work_dir, *older_than, *dry_run),
    }
}

fn fail(message: &str) -> u8 {
    eprintln!("error: {message}");
    exit::USAGE
}

/// What `sessions list` says of each session's family: `  (from ID after turn N)` for a
/// fork, `  (forked: ID at N, ...)` for a session forks were made from.
fn family(listed: &[session::Listed]) -> std::collections::HashMap<String, String> {
    let mut family: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut forks: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for entry in listed {
        if let Some((from, turn)) = &entry.forked_from {
            let from = crate::terminal::neutralise(from).into_owned();
            family.insert(
                entry.id.clone(),
                format!("  (from {from} after turn {turn})"),
            );
            forks
                .entry(
                    entry
                        .forked_from
                        .as_ref()
                        .map_or("", |(from, _)| from.as_str()),
                )
                .or_default()
                .push(format!("{} at {turn}", entry.id));
        }
    }
    for (parent, children) in forks {
        let note = format!("  (forked: {})", children.join(", "));
        family
            .entry(parent.to_string())
            .and_modify(|line| line.push_str(&note))
            .or_insert(note);
    }
    family
}
