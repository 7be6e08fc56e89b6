//! `Chatroom.Path`: the chatroom's messages written, as upstream's JSON lines (`timestamp`,
//! `from`, `to`, `message`, plus `turn`), to that file under the work dir after every turn.
//! The session stays the chatroom's record (`tools::notes`); the file is a copy for people and
//! tools that read upstream's log, appended to by every session that names it.
//!
//! The file is reached through the path confinement (`crate::confine`) and replaced by a fresh
//! file, never written through: a path that leaves the work dir, or a symlink an agent left at
//! it, is refused with a warning, so chatroom text never lands outside the work dir; nor in
//! git's metadata or fuseraft's own state (a `.git` component, `.fuseraft/sessions`, `state`,
//! `checkpoints`, `memory`), by the file tools' rule.

use std::path::{Path, PathBuf};

use fuseraft_compiler::ir::Program;
use serde_json::json;

use crate::confine::{Error, Root, Walk};
use crate::tools::notes::Notes;

/// The program's `Chatroom.Path`, if it sets one.
pub(super) fn setting(program: &Program) -> Option<&str> {
    program.chatroom_path.as_deref()
}

/// The largest chatroom file extended (beyond it, nothing more is written, with a warning).
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The copy of a run's chatroom at `Chatroom.Path`.
pub(super) struct ChatroomFile {
    /// Relative to the work dir; `None` when the config names no file.
    path: Option<PathBuf>,
    work_dir: PathBuf,
    /// Messages of the chatroom (dropped ones included) already in the file.
    written: u64,
    /// Places the file may not be in (the change log's directory).
    spared: Vec<PathBuf>,
}

fn total(notes: &Notes) -> u64 {
    notes.chatroom_dropped + notes.chatroom.len() as u64
}

impl ChatroomFile {
    /// The copy at `setting` (`Chatroom.Path`, `{session_id}` expanded), taking the messages
    /// `notes` holds (a resumed run's) as written already.
    pub(super) fn new(
        setting: Option<&str>,
        work_dir: &Path,
        session_id: &str,
        notes: &Notes,
    ) -> ChatroomFile {
        let path = setting
            .map(|value| PathBuf::from(value.trim().replace("{session_id}", session_id)))
            .filter(|path| !path.as_os_str().is_empty());
        ChatroomFile {
            path,
            work_dir: work_dir.to_path_buf(),
            written: total(notes),
            spared: Vec::new(),
        }
    }

    /// This copy, never written in `places` (absolute: the change log's directory).
    pub(super) fn sparing(mut self, places: &[PathBuf]) -> ChatroomFile {
        self.spared = places
            .iter()
            .map(|place| std::fs::canonicalize(place).unwrap_or_else(|_| place.clone()))
            .collect();
        self
    }

    /// Appends the messages posted since the last call; the reason when it cannot (then it
    /// stops trying, so a run warns once).
    pub(super) fn sync(&mut self, notes: &Notes) -> Result<(), String> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        let now = total(notes);
        if now <= self.written {
            return Ok(());
        }
        let first_new = (self.written.saturating_sub(notes.chatroom_dropped)) as usize;
        let mut lines = String::new();
        let timestamp = crate::tools::now_rfc3339();
        for message in notes.chatroom.iter().skip(first_new) {
            let line = json!({
                "timestamp": timestamp,
                "from": message.from,
                "to": message.to,
                "message": message.message,
                "turn": message.turn,
            });
            lines.push_str(&line.to_string());
            lines.push('\n');
        }
        self.written = now;
        let appended = append(&self.work_dir, &path, lines.as_bytes(), &self.spared);
        if appended.is_err() {
            self.path = None;
        }
        appended.map_err(|why| format!("`Chatroom.Path` `{}`: {why}", path.display()))
    }
}

fn append(work_dir: &Path, path: &Path, lines: &[u8], spared: &[PathBuf]) -> Result<(), String> {
    if path.is_absolute() {
        return Err("must be relative to the work dir; the chatroom is not written".to_string());
    }
    let root =
        Root::open(work_dir).map_err(|error| format!("the work dir cannot be opened: {error}"))?;
    let walk = Walk {
        follow_final: false,
        missing_dirs: true,
    };
    let mut place = root.resolve(path, walk).map_err(|error| match error {
        Error::Escapes(place) => {
            format!("resolves to `{place}`, outside the work dir; the chatroom is not written")
        }
        other => other.to_string(),
    })?;
    // Git's metadata and fuseraft's own state are written by neither the tools nor the
    // chatroom: model text in `.git/hooks/pre-commit` would run at the next commit.
    if let Some(what) = crate::tools::protected_state(&place.rel()) {
        return Err(format!("it is {what}; the chatroom is not written"));
    }
    let absolute = root.path().join(place.rel());
    if spared.iter().any(|spared| absolute.starts_with(spared)) {
        return Err("it is in the change log's directory, which only fuseraft's change log writes; the chatroom is not written".to_string());
    }
    place.make_dirs().map_err(|error| error.to_string())?;
    let mut content = match place.read(MAX_FILE_BYTES) {
        Ok((bytes, size)) if size > MAX_FILE_BYTES || bytes.len() as u64 > MAX_FILE_BYTES => {
            return Err(format!(
                "the file is over {MAX_FILE_BYTES} bytes; the chatroom is no longer written"
            ))
        }
        Ok((bytes, _)) => bytes,
        Err(Error::NotFound) => Vec::new(),
        Err(error) => return Err(format!("{error}; the chatroom is not written")),
    };
    if !content.is_empty() && !content.ends_with(b"\n") {
        content.push(b'\n');
    }
    content.extend_from_slice(lines);
    place.replace(&content).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::notes::{answer, Caller};
    use fuseraft_compiler::ir::Tool;

    fn temp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("fuseraft-chatroom-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::canonicalize(dir).unwrap()
    }

    fn send(notes: &mut Notes, from: &str, message: &str) {
        let args = json!({"recipient": "All", "message": message});
        let (_, ok) = answer(
            notes,
            Tool::ChatroomSend,
            &args,
            Caller {
                agent: from,
                turn: 2,
            },
        );
        assert!(ok);
    }

    fn lines(path: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn new_messages_are_appended_as_upstreams_lines() {
        let work = temp("append");
        std::fs::create_dir_all(work.join("comms")).unwrap();
        std::fs::write(
            work.join("comms/chat.jsonl"),
            "{\"from\":\"earlier session\"}",
        )
        .unwrap();
        let mut notes = Notes::default();
        send(&mut notes, "Planner", "resumed before");
        // A resumed run's messages are in the file already.
        let mut file = ChatroomFile::new(Some("comms/{session_id}.jsonl"), &work, "chat", &notes);
        send(&mut notes, "Planner", "plan ready");
        send(&mut notes, "Developer", "on it");
        file.sync(&notes).unwrap();
        file.sync(&notes).unwrap();
        let written = lines(&work.join("comms/chat.jsonl"));
        assert_eq!(written.len(), 3, "{written:?}");
        assert_eq!(written[0]["from"], "earlier session");
        assert_eq!(written[1]["from"], "Planner");
        assert_eq!(written[1]["to"], "All");
        assert_eq!(written[1]["message"], "plan ready");
        assert_eq!(written[1]["turn"], 2);
        assert!(written[1]["timestamp"].as_str().unwrap().ends_with('Z'));
        assert_eq!(written[2]["message"], "on it");
        let _ = std::fs::remove_dir_all(work);
    }

    #[test]
    fn no_path_writes_nothing() {
        let work = temp("none");
        let mut notes = Notes::default();
        let mut file = ChatroomFile::new(None, &work, "s", &notes);
        send(&mut notes, "A", "hi");
        file.sync(&notes).unwrap();
        assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(work);
    }

    #[test]
    fn the_file_never_leads_outside_the_work_dir() {
        let work = temp("escape");
        let outside = temp("escape-outside");
        std::fs::write(outside.join("profile"), "keep\n").unwrap();
        std::os::unix::fs::symlink(outside.join("profile"), work.join("chat.jsonl")).unwrap();
        let escape = format!(
            "../{}/chat.jsonl",
            outside.file_name().unwrap().to_string_lossy()
        );
        for (path, needle) in [
            ("chat.jsonl", "a symlink, not a regular file"),
            (escape.as_str(), "outside the work dir"),
            ("/tmp/chat.jsonl", "relative to the work dir"),
        ] {
            let mut notes = Notes::default();
            let mut file = ChatroomFile::new(Some(path), &work, "s", &notes);
            send(&mut notes, "A", "echo pwned >> ~/.bashrc");
            let why = file.sync(&notes).unwrap_err();
            assert!(why.contains(needle), "{path}: {why}");
            // Refused once, then quiet.
            send(&mut notes, "A", "again");
            assert!(file.sync(&notes).is_ok());
        }
        assert_eq!(
            std::fs::read_to_string(outside.join("profile")).unwrap(),
            "keep\n"
        );
        assert!(!outside.join("chat.jsonl").exists());
        let _ = std::fs::remove_dir_all(work);
        let _ = std::fs::remove_dir_all(outside);
    }

    #[test]
    fn the_file_is_never_in_the_change_logs_directory() {
        let work = temp("beside-log");
        std::fs::create_dir_all(work.join("logs")).unwrap();
        std::fs::write(work.join("logs/changes.jsonl"), "{\"record\": 1}\n").unwrap();
        let mut notes = Notes::default();
        let mut file = ChatroomFile::new(Some("logs/changes.jsonl"), &work, "s", &notes)
            .sparing(&[work.join("logs")]);
        send(&mut notes, "A", "erase the log");
        let why = file.sync(&notes).unwrap_err();
        assert!(why.contains("the change log's directory"), "{why}");
        assert_eq!(
            std::fs::read_to_string(work.join("logs/changes.jsonl")).unwrap(),
            "{\"record\": 1}\n"
        );
        let _ = std::fs::remove_dir_all(work);
    }

    #[test]
    fn the_file_is_never_gits_metadata_or_fuseraft_state() {
        let work = temp("state");
        std::fs::create_dir_all(work.join(".git/hooks")).unwrap();
        std::fs::write(
            work.join(".git/hooks/pre-commit"),
            "#!/bin/sh\necho lint-ok\n",
        )
        .unwrap();
        for path in [
            ".git/hooks/pre-commit",
            "vendor/lib/.GIT/config",
            ".fuseraft/memory/MEMORY.md",
            ".fuseraft/sessions/forged.json",
        ] {
            let mut notes = Notes::default();
            let mut file = ChatroomFile::new(Some(path), &work, "s", &notes);
            send(&mut notes, "A", "$(touch pwned)");
            let why = file.sync(&notes).unwrap_err();
            assert!(why.contains("the chatroom is not written"), "{path}: {why}");
        }
        assert_eq!(
            std::fs::read_to_string(work.join(".git/hooks/pre-commit")).unwrap(),
            "#!/bin/sh\necho lint-ok\n"
        );
        assert!(!work.join(".fuseraft").exists() && !work.join("vendor").exists());
        let _ = std::fs::remove_dir_all(work);
    }
}
