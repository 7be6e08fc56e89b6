//! Long-term memory: what an agent chose to remember, kept across sessions per agent and
//! per project in `.fuseraft/memory/<agent>.jsonl` under the sandbox root (fuseraft's own
//! state: opened without following a link, out of reach of the file tools and of every
//! started process's writes). A memory is appended and synced before its tool call
//! returns, so a kill right after it loses nothing. Search ranks memories with BM25 (the
//! `bm25` crate, English stemming); before an agent's turn the memories most relevant to the
//! task go into its prompt (`memory` context source), within the source's character budget.
//! Two project layers sit beside them: `MEMORY.md` (the project's long-term memory, which
//! people keep) and the daily notes (`daily/YYYY-MM-DD.md`, a line per memory appended),
//! today's and yesterday's going into the prompts too.

use std::io::{Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::state_dir::{Access, StateDir};

/// Where the memories live, under the sandbox root.
pub const DIR: &str = ".fuseraft/memory";

/// The project's long-term memory, in [`DIR`]: written by the team's people, read by every
/// agent that keeps memories.
pub const PROJECT_FILE: &str = "MEMORY.md";

/// The daily notes, one `YYYY-MM-DD.md` a day: every memory an agent appends is noted there
/// too, and today's and yesterday's go into the prompts.
pub const DAILY_DIR: &str = ".fuseraft/memory/daily";

/// The most bytes of one memory's text.
pub const MAX_TEXT: usize = 4000;

/// One memory, as a line of the agent's file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Memory {
    pub text: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// The session and turn that wrote it, and when (RFC 3339).
    pub session: String,
    pub turn: u32,
    pub at: String,
}

/// The file of `agent`'s memories: its name made safe for a file name, and a hash of the
/// name so that two names made alike never share a file.
fn file_name(agent: &str) -> String {
    let safe: String = agent
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    // FNV-1a: stable across releases and platforms.
    let hash = agent.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{safe}-{hash:016x}.jsonl")
}

/// Appends `memory` to `agent`'s file under `root` and syncs it; returns its id (its place
/// among the agent's memories, from 1).
pub fn append(root: &Path, agent: &str, memory: &Memory) -> Result<usize, String> {
    let dir = StateDir::open(root, Path::new(DIR)).map_err(|error| error.message)?;
    let count = read(&dir, agent)?.len();
    let mut line = serde_json::to_vec(memory).map_err(|error| error.to_string())?;
    line.push(b'\n');
    let mut file = dir
        .open_file(&file_name(agent), Access::Append)
        .map_err(|error| format!("cannot open the memory file: {error}"))?;
    file.write_all(&line)
        .and_then(|()| file.sync_data())
        .map_err(|error| format!("cannot write the memory file: {error}"))?;
    note_daily(root, agent, memory)?;
    Ok(count + 1)
}

/// Notes `memory` in the daily note of the day it was written.
fn note_daily(root: &Path, agent: &str, memory: &Memory) -> Result<(), String> {
    let (Some(date), Some(time)) = (memory.at.get(..10), memory.at.get(11..19)) else {
        return Ok(());
    };
    let dir = StateDir::open(root, Path::new(DAILY_DIR)).map_err(|error| error.message)?;
    let line = format!("- {time} {}: {}\n", one_line(agent), one_line(&memory.text));
    let mut file = dir
        .open_file(&format!("{date}.md"), Access::Append)
        .map_err(|error| format!("cannot open the daily note: {error}"))?;
    file.write_all(line.as_bytes())
        .and_then(|()| file.sync_data())
        .map_err(|error| format!("cannot write the daily note: {error}"))
}

/// The project's layers for a prompt: `MEMORY.md` (at most half of `max_chars`), then the
/// daily notes of yesterday and `today` (`YYYY-MM-DD`), their newest lines kept; `None`
/// when there are none.
pub fn project_block(
    root: &Path,
    today: &str,
    yesterday: &str,
    max_chars: usize,
) -> Result<Option<String>, String> {
    let mut out = String::new();
    if let Some(text) = read_text(root, DIR, PROJECT_FILE)?.filter(|t| !t.trim().is_empty()) {
        out.push_str("### MEMORY.md\n");
        out.push_str(&cut(text.trim(), max_chars / 2));
        out.push('\n');
    }
    for date in [yesterday, today] {
        let Some(text) = read_text(root, DAILY_DIR, &format!("{date}.md"))? else {
            continue;
        };
        let room = max_chars.saturating_sub(out.len() + date.len() + 16);
        let mut kept: Vec<&str> = Vec::new();
        let mut used = 0;
        for line in text.lines().rev().filter(|line| !line.trim().is_empty()) {
            if used + line.len() + 1 > room {
                break;
            }
            used += line.len() + 1;
            kept.push(line);
        }
        if kept.is_empty() {
            continue;
        }
        kept.reverse();
        out.push_str(&format!("### Notes of {date}\n{}\n", kept.join("\n")));
    }
    Ok((!out.is_empty()).then(|| out.trim_end().to_string()))
}

/// Today's and yesterday's dates (`YYYY-MM-DD`, UTC): the daily notes a prompt shows.
pub fn today_and_yesterday() -> (String, String) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let day = |secs: u64| crate::tools::rfc3339(secs).chars().take(10).collect();
    (day(secs), day(secs.saturating_sub(86_400)))
}

/// The text of `name` in the state directory `rel`, if it exists.
fn read_text(root: &Path, rel: &str, name: &str) -> Result<Option<String>, String> {
    let Some(dir) = StateDir::find(root, Path::new(rel)).map_err(|error| error.message)? else {
        return Ok(None);
    };
    let mut text = String::new();
    match dir.open_file(name, Access::Read) {
        Ok(mut file) => file
            .read_to_string(&mut text)
            .map(|_| Some(text))
            .map_err(|error| format!("cannot read `{name}`: {error}")),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(format!("cannot read `{name}`: {error}")),
    }
}

/// `text` cut to `max` bytes at a character boundary, marked when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[cut]", &text[..end])
}

/// `agent`'s memories under `root`, oldest first (none when it has none).
pub fn all(root: &Path, agent: &str) -> Result<Vec<Memory>, String> {
    match StateDir::find(root, Path::new(DIR)) {
        Ok(Some(dir)) => read(&dir, agent),
        Ok(None) => Ok(Vec::new()),
        Err(error) => Err(error.message),
    }
}

fn read(dir: &StateDir, agent: &str) -> Result<Vec<Memory>, String> {
    let mut text = String::new();
    match dir.open_file(&file_name(agent), Access::Read) {
        Ok(mut file) => {
            file.read_to_string(&mut text)
                .map_err(|error| format!("cannot read the memory file: {error}"))?;
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(format!("cannot read the memory file: {error}")),
    }
    // A torn last line (a crash mid-append) is skipped, as is any line that is not a memory.
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

/// The ids (from 1) of the memories most relevant to `query`, best first, at most `limit`.
pub fn search(memories: &[Memory], query: &str, limit: usize) -> Vec<usize> {
    if memories.is_empty() || query.trim().is_empty() {
        return Vec::new();
    }
    let documents = memories.iter().enumerate().map(|(index, memory)| {
        let text = format!("{} {}", memory.text, memory.tags.join(" "));
        bm25::Document::new(index + 1, text)
    });
    let engine =
        bm25::SearchEngineBuilder::<usize>::with_documents(bm25::Language::English, documents)
            .build();
    engine
        .search(query, limit)
        .into_iter()
        .filter(|result| result.score > 0.0)
        .map(|result| result.document.id)
        .collect()
}

/// The prompt block of `agent`'s memories for a turn on `query` (the task): the most
/// relevant first, then the newest, each as `[id] text`, within `max_chars`; `None` when
/// the agent remembers nothing.
pub fn block(
    root: &Path,
    agent: &str,
    query: &str,
    max_chars: usize,
) -> Result<Option<String>, String> {
    let memories = all(root, agent)?;
    if memories.is_empty() {
        return Ok(None);
    }
    let mut order = search(&memories, query, memories.len());
    for id in (1..=memories.len()).rev() {
        if !order.contains(&id) {
            order.push(id);
        }
    }
    let mut out = String::new();
    for id in order {
        let line = format!("[{id}] {}\n", one_line(&memories[id - 1].text));
        if out.len() + line.len() > max_chars {
            break;
        }
        out.push_str(&line);
    }
    Ok((!out.is_empty()).then(|| out.trim_end().to_string()))
}

/// `text` on one line.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(text: &str) -> Memory {
        Memory {
            text: text.to_string(),
            tags: Vec::new(),
            session: "s".to_string(),
            turn: 0,
            at: "t".to_string(),
        }
    }

    #[test]
    fn memories_persist_rank_and_fit_their_budget() {
        let root = std::env::temp_dir().join(format!("fuseraft-memory-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        for text in [
            "The staging database is called orders-stage.",
            "Use cargo nextest for the test suite.",
            "The release branch is cut on Fridays.",
        ] {
            append(&root, "Dev/ops", &memory(text)).unwrap();
        }
        assert_eq!(
            append(&root, "Dev/ops", &memory("Deploys go through CI.")).unwrap(),
            4
        );
        let kept = all(&root, "Dev/ops").unwrap();
        assert_eq!(kept.len(), 4);
        assert!(
            all(&root, "Dev_ops").unwrap().is_empty(),
            "another agent's file"
        );
        assert_eq!(search(&kept, "which database does staging use", 2)[0], 1);
        let block = block(&root, "Dev/ops", "run the tests", 90)
            .unwrap()
            .unwrap();
        assert!(block.starts_with("[2] Use cargo nextest"), "{block}");
        assert!(block.len() <= 90, "{block}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
