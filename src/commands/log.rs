//! `fuseraft log events FILE [--session ID] [--event TYPE]... [--last N]`: an events file
//! (`docs/events.md`) one event a line, in words. The words are the web view's
//! (`ui::cards::describe`), so the terminal and the page say the same.
//!
//! Exit codes: 0 every line was an event, 1 some line was not (each is reported on standard
//! error with its number, and skipped), 2 the file could not be read.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use fuseraft_vm::event::EventKind;
use serde_json::Value as Json;

use super::exit;
use crate::cli::{LogAction, LogArgs, LogEventsArgs};

pub fn run(args: &LogArgs) -> u8 {
    match &args.action {
        LogAction::Events(args) => events(args),
    }
}

fn events(args: &LogEventsArgs) -> u8 {
    if let Some(id) = &args.session {
        if !crate::session::valid_id(id) {
            eprintln!("error: {}", crate::session::invalid_id(id));
            return exit::USAGE;
        }
    }
    let name = args.file.display().to_string();
    let reader: Box<dyn Read> = if args.file == Path::new("-") {
        Box::new(std::io::stdin())
    } else {
        match std::fs::File::open(&args.file) {
            Ok(file) => Box::new(file),
            Err(error) => {
                eprintln!(
                    "error: cannot read the events file `{name}`: {error}{}",
                    hint(&args.file)
                );
                return exit::USAGE;
            }
        }
    };
    let mut skipped = false;
    let mut kept: VecDeque<String> = VecDeque::new();
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => number += 1,
            Err(error) => {
                let name = crate::terminal::neutralise(&name);
                eprintln!("error: cannot read `{name}` after line {number}: {error}");
                return exit::USAGE;
            }
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        let shown = match render(text.trim()) {
            Ok(shown) => shown,
            Err(why) => {
                // The reason quotes the line (serde names a bad value): shown escaped.
                let why = crate::terminal::neutralise(&why);
                let name = crate::terminal::neutralise(&name);
                eprintln!("warning: {name}:{number}: {why}; skipped");
                skipped = true;
                continue;
            }
        };
        if !chosen(&shown, args) {
            continue;
        }
        match args.last {
            Some(last) => {
                kept.push_back(shown.line);
                if kept.len() > last {
                    kept.pop_front();
                }
            }
            None => {
                if let Some(code) = super::print_or_fail(&shown.line) {
                    return code;
                }
            }
        }
        if super::stdout_closed() {
            return exit::OK;
        }
    }
    for line in kept {
        if let Some(code) = super::print_or_fail(&line) {
            return code;
        }
    }
    if skipped {
        exit::FINDINGS
    } else {
        exit::OK
    }
}

/// For a path that does not exist but reads as a session id: where a session's events are.
fn hint(path: &Path) -> &'static str {
    let id = path.to_str().unwrap_or("");
    if crate::session::valid_id(id) && !path.exists() {
        "\nhelp: a session keeps no events of its own; a run writes them with `exec --events FILE`, and `fuseraft log events FILE --session ID` shows one session's"
    } else {
        ""
    }
}

/// One event line in words (`TS  turn N  AGENT: WORDS` and a newline); `None` for a line
/// under upstream's name (it repeats the one before) or one that is no event.
pub(crate) fn in_words(text: &str) -> Option<String> {
    let shown = render(text).ok()?;
    let repeated = crate::events::upstream::NAMES.contains(&shown.event_type.as_str());
    (!repeated).then_some(shown.line)
}

/// One event, rendered, with what the filters look at.
struct Shown {
    session: String,
    event_type: String,
    line: String,
}

fn chosen(shown: &Shown, args: &LogEventsArgs) -> bool {
    // Upstream's names repeat the event before them: shown only when asked for by name.
    let repeated = crate::events::upstream::NAMES.contains(&shown.event_type.as_str());
    args.session.as_ref().is_none_or(|id| *id == shown.session)
        && match args.events.is_empty() {
            true => !repeated,
            false => args.events.contains(&shown.event_type),
        }
}

/// `TS  turn N  AGENT: WORDS`, every part made safe for a terminal; `Err` says why the line
/// is not an event.
fn render(text: &str) -> Result<Shown, String> {
    let value: Json =
        serde_json::from_str(text).map_err(|error| format!("not a JSON object ({error})"))?;
    let field = |key: &str| value.get(key).and_then(Json::as_str);
    let event_type = field("event_type")
        .ok_or("no `event_type` string")?
        .to_string();
    let words = match serde_json::from_value::<EventKind>(value.clone()) {
        Ok(kind) => crate::ui::cards::describe(&kind),
        // `--events-text`: a piece of a streaming reply.
        Err(_) if event_type == "model_text" => {
            format!(
                "writes: {}",
                value["payload"]["text"].as_str().unwrap_or_default()
            )
        }
        Err(_) if crate::events::upstream::NAMES.contains(&event_type.as_str()) => {
            format!("`{event_type}` (upstream fuseraft-cli's name for the event before it)")
        }
        // A reader ignores what it does not know (docs/events.md): a newer fuseraft's event.
        Err(_) if !EventKind::ALL.contains(&event_type.as_str()) => {
            format!("`{event_type}` (an event this fuseraft does not know)")
        }
        Err(error) => {
            return Err(format!(
                "a `{event_type}` event whose payload does not fit ({error})"
            ))
        }
    };
    let mut line = field("ts").unwrap_or("-").to_string();
    if let Some(turn) = value.get("turn").and_then(Json::as_u64) {
        line.push_str(&format!("  turn {turn}"));
    }
    line.push_str("  ");
    if let Some(agent) = field("agent") {
        line.push_str(agent);
        line.push_str(": ");
    }
    line.push_str(&words.replace('\n', " ⏎ "));
    let mut line = crate::terminal::neutralise(&line).into_owned();
    line.push('\n');
    Ok(Shown {
        session: field("session").unwrap_or("").to_string(),
        event_type,
        line,
    })
}
