//! The events file (`--events FILE`): one JSON object per line, appended as the run goes.
//! Lines are buffered and written when a turn starts or ends and when the run ends, so a
//! reader following the file sees every turn as it finishes, for two writes per turn.
//! Writing is best-effort: a full disk is reported once and never stops the run. An event
//! upstream fuseraft-cli names otherwise is followed by a line under upstream's name
//! ([`upstream`]).

pub mod upstream;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::SystemTime;

use fuseraft_vm::event::{Event, EventKind};

pub struct EventsFile {
    file: Option<BufWriter<File>>,
    failed: bool,
    /// One event's line, reused.
    line: Vec<u8>,
}

impl EventsFile {
    pub fn open(path: &Path) -> std::io::Result<EventsFile> {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent)?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        // Events hold model replies and tool output: readable by the user only.
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(path)?;
        Ok(EventsFile {
            file: Some(BufWriter::with_capacity(64 * 1024, file)),
            failed: false,
            line: Vec::new(),
        })
    }

    pub fn none() -> EventsFile {
        EventsFile {
            file: None,
            failed: false,
            line: Vec::new(),
        }
    }

    pub fn write(&mut self, event: &Event, session: &str) {
        let Some(file) = &mut self.file else { return };
        self.line.clear();
        event.write_json_line(&timestamp(), session, &mut self.line);
        self.line.push(b'\n');
        let mut written = file.write_all(&self.line);
        if matches!(
            event.kind,
            EventKind::TurnStart { .. } | EventKind::TurnEnd { .. } | EventKind::SessionEnd { .. }
        ) {
            written = written.and_then(|_| file.flush());
        }
        if let Err(error) = written {
            self.report(error);
        }
    }

    /// Writes one event line made elsewhere (a served run's, as its server sent it), flushed.
    pub fn write_line(&mut self, line: &str) {
        let Some(file) = &mut self.file else { return };
        let written = file
            .write_all(line.as_bytes())
            .and_then(|_| file.write_all(b"\n"))
            .and_then(|_| file.flush());
        if let Err(error) = written {
            self.report(error);
        }
    }

    /// Writes `event`, then the lines upstream writes for it ([`upstream::aliases`]).
    pub fn write_with_upstream(
        &mut self,
        event: &Event,
        run: &fuseraft_vm::machine::Run,
        session: &str,
    ) {
        if self.file.is_none() {
            return;
        }
        if upstream::aliases(event, run).is_empty() {
            return self.write(event, session);
        }
        let Some(file) = &mut self.file else { return };
        self.line.clear();
        write_lines(event, run, &timestamp(), session, &mut self.line);
        if let Err(error) = file.write_all(&self.line).and_then(|_| file.flush()) {
            self.report(error);
        }
    }

    /// Writes a `model_text` line: `text` that `agent`'s model streamed in `turn`
    /// (`--events-text`).
    pub fn write_text(&mut self, turn: u32, agent: &str, text: &str, session: &str) {
        let Some(file) = &mut self.file else { return };
        let mut line = serde_json::Map::new();
        line.insert("ts".into(), timestamp().into());
        line.insert("session".into(), session.into());
        line.insert("turn".into(), turn.into());
        line.insert("agent".into(), agent.into());
        line.insert("event_type".into(), "model_text".into());
        line.insert("payload".into(), serde_json::json!({ "text": text }));
        self.line.clear();
        let _ = serde_json::to_writer(&mut self.line, &line);
        self.line.push(b'\n');
        if let Err(error) = file.write_all(&self.line).and_then(|_| file.flush()) {
            self.report(error);
        }
    }

    fn report(&mut self, error: std::io::Error) {
        if !self.failed {
            eprintln!(
                "warning: cannot write the events file ({error}); the run continues without it"
            );
            self.failed = true;
        }
    }
}

/// Writes the lines of `event` at `ts` (each ended by a newline): its own, then the lines
/// upstream writes for it ([`upstream::aliases`]), keys in the order fuseraft's own line has them.
pub fn write_lines(
    event: &Event,
    run: &fuseraft_vm::machine::Run,
    ts: &str,
    session: &str,
    out: &mut Vec<u8>,
) {
    event.write_json_line(ts, session, out);
    out.push(b'\n');
    for alias in upstream::aliases(event, run) {
        let mut line = serde_json::Map::new();
        line.insert("ts".into(), ts.into());
        line.insert("session".into(), session.into());
        line.insert("turn".into(), event.turn.into());
        if let Some(agent) = &event.agent {
            line.insert("agent".into(), agent.as_str().into());
        }
        line.insert("event_type".into(), alias.name.into());
        line.insert("payload".into(), alias.payload);
        let _ = serde_json::to_writer(&mut *out, &line);
        out.push(b'\n');
    }
}

impl Drop for EventsFile {
    fn drop(&mut self) {
        if let Some(file) = &mut self.file {
            if let Err(error) = file.flush() {
                self.report(error);
            }
        }
    }
}

/// Now, as an ISO-8601 UTC timestamp with milliseconds (`2026-11-23T07:00:00.123Z`).
pub fn timestamp() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_are_utc_to_the_millisecond() {
        let stamp = super::timestamp();
        let digits =
            |range: std::ops::Range<usize>| stamp[range].bytes().all(|b| b.is_ascii_digit());
        assert_eq!(stamp.len(), 24, "{stamp}");
        assert!(digits(0..4) && digits(5..7) && digits(8..10), "{stamp}");
        assert!(
            digits(11..13) && digits(14..16) && digits(17..19) && digits(20..23),
            "{stamp}"
        );
        let separators: Vec<(usize, char)> = [
            (4, '-'),
            (7, '-'),
            (10, 'T'),
            (13, ':'),
            (16, ':'),
            (19, '.'),
            (23, 'Z'),
        ]
        .to_vec();
        for (at, ch) in separators {
            assert_eq!(stamp[at..].chars().next(), Some(ch), "{stamp}");
        }
    }
}
