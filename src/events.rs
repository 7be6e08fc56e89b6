//! The events file (`--events FILE`): one JSON object per line, appended as the run goes.
//! Lines are buffered and written when a turn starts or ends and when the run ends, so a
//! reader following the file sees every turn as it finishes, for two writes per turn.
//! Writing is best-effort: a full disk is reported once and never stops the run.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

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

    fn report(&mut self, error: std::io::Error) {
        if !self.failed {
            eprintln!(
                "warning: cannot write the events file ({error}); the run continues without it"
            );
            self.failed = true;
        }
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

/// Now, as an ISO-8601 UTC timestamp with milliseconds.
pub fn timestamp() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        now.subsec_millis()
    )
}
