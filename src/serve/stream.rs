//! A served run's model text as it streams: a side channel beside the journal, never
//! journaled (only the final reply is). The worker running a turn appends each text delta to
//! `.fuseraft/stream/<session>/<turn>.<attempt>` in the run's work dir (on the filesystem
//! every worker sees), the first line naming the agent; `attempt` is drawn fresh by each
//! invocation, so a turn the server runs again after a kill streams into a file of its own.
//! The session's `text` handler reads the newest file from where a client stopped, and the
//! client, seeing the attempt change within a turn, says the text before is discarded.
//! A turn's file goes when the turn after the next streams (a client may still read the end of
//! the one before), and every file goes [`LINGER`] after the run ends.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use fuseraft_vm::state_dir::{Access, StateDir};
use serde::{Deserialize, Serialize};

/// How long an ended run's streamed text stays for its clients.
pub const LINGER: std::time::Duration = std::time::Duration::from_secs(10);

/// The most text one read hands out; the client asks again for the rest.
const READ_CAP: u64 = 256 * 1024;

fn dir_of(session: &str) -> PathBuf {
    Path::new(".fuseraft/stream").join(session)
}

/// Where a client stopped reading: the turn and attempt it read, and how far.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub turn: u32,
    pub attempt: String,
    pub offset: u64,
}

/// Text of the newest stream: its turn, attempt and agent, the text from the cursor's
/// offset (from its start when the turn or attempt is another), and the offset after it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Streamed {
    pub turn: u32,
    pub attempt: String,
    pub agent: String,
    pub text: String,
    pub offset: u64,
}

/// One invocation's streamed text, written as it comes.
pub struct TextOut {
    work_dir: PathBuf,
    session: String,
    attempt: String,
    turn: AtomicU32,
    /// The open file and the turn it is for.
    open: Mutex<Option<(u32, std::fs::File)>>,
}

impl TextOut {
    pub fn new(work_dir: &Path, session: &str) -> TextOut {
        let mut bytes = [0u8; 8];
        let _ = getrandom::getrandom(&mut bytes);
        TextOut {
            work_dir: work_dir.to_path_buf(),
            session: session.to_string(),
            attempt: crate::session::key::to_hex(&bytes),
            turn: AtomicU32::new(0),
            open: Mutex::new(None),
        }
    }

    /// The run started turn `turn`: the text that follows is that turn's.
    pub fn turn(&self, turn: u32) {
        self.turn.store(turn, Ordering::SeqCst);
    }

    /// Appends `delta`, `agent`'s; a side channel, so a failure to write loses only text
    /// the journal keeps anyway.
    pub fn write(&self, agent: &str, delta: &str) {
        let turn = self.turn.load(Ordering::SeqCst);
        let Ok(mut open) = self.open.lock() else {
            return;
        };
        if open.as_ref().map(|(at, _)| *at) != Some(turn) {
            *open = self.start(turn, agent).map(|file| (turn, file));
        }
        if let Some((_, file)) = open.as_mut() {
            let _ = file.write_all(delta.as_bytes());
        }
    }

    /// Opens turn `turn`'s file, its first line the agent, and removes the files of the
    /// turns before the one before.
    fn start(&self, turn: u32, agent: &str) -> Option<std::fs::File> {
        let dir = StateDir::open(&self.work_dir, &dir_of(&self.session)).ok()?;
        for name in dir.names().unwrap_or_default() {
            if parse_name(&name).is_some_and(|(older, _)| older + 1 < turn) {
                let _ = dir.remove(&name);
            }
        }
        let mut file = dir
            .open_file(&format!("{turn}.{}", self.attempt), Access::Truncate)
            .ok()?;
        // One line, short enough for the reader's first-line cap.
        let agent: String = agent.chars().filter(|c| *c != '\n').take(256).collect();
        file.write_all(format!("{agent}\n").as_bytes()).ok()?;
        Some(file)
    }

    /// The run ended: its streamed text goes, once its clients had [`LINGER`] to read the
    /// rest of it (the run's end reaches them after the text does).
    pub fn clear(&self) {
        if let Ok(mut open) = self.open.lock() {
            *open = None;
        }
        let (work_dir, session) = (self.work_dir.clone(), self.session.clone());
        std::thread::spawn(move || {
            std::thread::sleep(LINGER);
            clear(&work_dir, &session);
        });
    }
}

/// Removes a session's streamed text.
pub fn clear(work_dir: &Path, session: &str) {
    if let Ok(Some(dir)) = StateDir::find(work_dir, &dir_of(session)) {
        for name in dir.names().unwrap_or_default() {
            let _ = dir.remove(&name);
        }
    }
}

/// The agent a stream file names on its first line, and where its text starts.
fn head(file: &mut std::fs::File) -> Option<(String, u64)> {
    let mut agent = Vec::new();
    let mut byte = [0u8; 1];
    while file.read(&mut byte).ok()? == 1 && byte[0] != b'\n' && agent.len() < 4096 {
        agent.push(byte[0]);
    }
    let start = agent.len() as u64 + 1;
    Some((String::from_utf8_lossy(&agent).into_owned(), start))
}

/// Whether stream `name` holds text beyond `offset`.
fn has_more(dir: &StateDir, name: &str, offset: u64) -> bool {
    let Ok(mut file) = dir.open_file(name, Access::Read) else {
        return false;
    };
    let Some((_, start)) = head(&mut file) else {
        return false;
    };
    file.metadata()
        .is_ok_and(|meta| meta.len() > start + offset)
}

/// `TURN.ATTEMPT` of a stream file's name.
fn parse_name(name: &str) -> Option<(u32, &str)> {
    let (turn, attempt) = name.split_once('.')?;
    let valid = !attempt.is_empty() && attempt.bytes().all(|byte| byte.is_ascii_hexdigit());
    valid.then_some(())?;
    Some((turn.parse().ok()?, attempt))
}

/// The newest stream of `session` from `cursor` (see [`Streamed`]); `None` when nothing
/// streams.
pub fn read(work_dir: &Path, session: &str, cursor: &Cursor) -> Option<Streamed> {
    let dir = StateDir::find(work_dir, &dir_of(session)).ok()??;
    // The highest turn; within it, the attempt written last.
    let mut newest: Option<(u32, std::time::SystemTime, String)> = None;
    for name in dir.names().ok()? {
        let Some((turn, _)) = parse_name(&name) else {
            continue;
        };
        let Ok(file) = dir.open_file(&name, Access::Read) else {
            continue;
        };
        let modified = file
            .metadata()
            .and_then(|meta| meta.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        if newest
            .as_ref()
            .is_none_or(|(at, when, _)| (turn, modified) > (*at, *when))
        {
            newest = Some((turn, modified, name));
        }
    }
    let (_, _, newest) = newest?;
    // The cursor's own stream while it has text beyond the offset, else the newest.
    let own = format!("{}.{}", cursor.turn, cursor.attempt);
    let own_goes_on =
        own != newest && parse_name(&own).is_some() && has_more(&dir, &own, cursor.offset);
    let name = if own_goes_on { own } else { newest };
    let (turn, attempt) = parse_name(&name).map(|(turn, attempt)| (turn, attempt.to_string()))?;
    let mut file = dir.open_file(&name, Access::Read).ok()?;
    let (agent, start) = head(&mut file)?;
    let same = cursor.turn == turn && cursor.attempt == attempt;
    let from = if same { cursor.offset } else { 0 };
    file.seek(SeekFrom::Start(start + from)).ok()?;
    let mut text = Vec::new();
    file.take(READ_CAP).read_to_end(&mut text).ok()?;
    // Whole characters only: a delta cut mid-character is read with its rest next time.
    let whole = match std::str::from_utf8(&text) {
        Ok(_) => text.len(),
        Err(error) => error.valid_up_to(),
    };
    text.truncate(whole);
    Some(Streamed {
        turn,
        attempt,
        agent,
        offset: from + text.len() as u64,
        text: String::from_utf8(text).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_reads_each_delta_once_and_sees_an_attempt_start_over() {
        let work = tempfile::tempdir().unwrap();
        let first = TextOut::new(work.path(), "s1");
        assert_eq!(read(work.path(), "s1", &Cursor::default()), None);
        first.turn(2);
        first.write("Dev", "Hel");
        let read_one = read(work.path(), "s1", &Cursor::default()).unwrap();
        assert_eq!((read_one.turn, read_one.agent.as_str()), (2, "Dev"));
        assert_eq!(read_one.text, "Hel");
        first.write("Dev", "lo é");
        let cursor = Cursor {
            turn: 2,
            attempt: read_one.attempt.clone(),
            offset: read_one.offset,
        };
        let read_two = read(work.path(), "s1", &cursor).unwrap();
        assert_eq!(read_two.text, "lo é");
        // The same turn run again by another invocation: its text, from the start.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let second = TextOut::new(work.path(), "s1");
        second.turn(2);
        second.write("Dev", "Again");
        let cursor = Cursor {
            offset: read_two.offset,
            ..cursor
        };
        let read_three = read(work.path(), "s1", &cursor).unwrap();
        assert_ne!(read_three.attempt, read_one.attempt);
        assert_eq!(read_three.text, "Again");
        // The next turn streams: a client still reading this one gets its rest first.
        second.write("Dev", " more");
        second.turn(3);
        second.write("Rev", "Next");
        let cursor = Cursor {
            turn: 2,
            attempt: read_three.attempt.clone(),
            offset: read_three.offset,
        };
        let rest = read(work.path(), "s1", &cursor).unwrap();
        assert_eq!((rest.turn, rest.text.as_str()), (2, " more"));
        let cursor = Cursor {
            offset: rest.offset,
            ..cursor
        };
        let next = read(work.path(), "s1", &cursor).unwrap();
        assert_eq!(
            (next.turn, next.agent.as_str(), next.text.as_str()),
            (3, "Rev", "Next")
        );
        // The turn after the next goes on: the oldest turn's files go.
        let names = || {
            let mut names = StateDir::find(work.path(), &dir_of("s1"))
                .unwrap()
                .unwrap()
                .names()
                .unwrap();
            names.sort();
            names
        };
        assert_eq!(names().len(), 3);
        second.turn(4);
        second.write("Dev", "Last");
        assert_eq!(names().len(), 2, "{:?}", names());
        assert!(names().iter().all(|name| !name.starts_with("2.")));
        clear(work.path(), "s1");
        assert_eq!(read(work.path(), "s1", &Cursor::default()), None);
    }

    #[test]
    fn only_its_own_names_are_read() {
        assert_eq!(parse_name("3.00ff"), Some((3, "00ff")));
        for name in ["3", "x.00", "3.", "3.zz", "../3.00", "3.00/x"] {
            assert_eq!(parse_name(name), None, "{name}");
        }
    }
}
