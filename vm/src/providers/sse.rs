//! Stream framing: bytes cut anywhere → complete lines (NDJSON) → server-sent events.
//!
//! Chunks from the network split lines, events and UTF-8 sequences anywhere; these
//! buffers hand on only complete units and say what is left over when the body ends, so a
//! body cut mid-line is told apart from one that ended cleanly. `each` hands lines and
//! events over borrowed, so a stream's hot path allocates nothing per event. Each byte is
//! scanned once:
//! a line that never ends costs time linear in its length (its length is capped by the
//! caller, `http.rs`).

use super::http::Failure;
use crate::words;

/// Splits a byte stream into lines (`\n` or `\r\n`).
#[derive(Debug, Default)]
pub(crate) struct Lines {
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no `\n`: not scanned again.
    scanned: usize,
}

impl Lines {
    /// The complete lines in `chunk` (with what was buffered before), without terminators.
    pub(super) fn push(&mut self, chunk: &[u8]) -> Result<Vec<String>, Failure> {
        let mut lines = Vec::new();
        self.each(chunk, &mut |line| {
            lines.push(line.to_string());
            Ok(())
        })?;
        Ok(lines)
    }

    /// Hands each complete line in `chunk` (with what was buffered before) to `line`,
    /// without terminators and without allocating.
    pub(super) fn each(
        &mut self,
        chunk: &[u8],
        line: &mut dyn FnMut(&str) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        if self.buf.is_empty() {
            // The usual case: lines wholly inside the chunk are read from it, and only
            // the unfinished tail is kept (a whole streamed reply often comes as one chunk).
            let (start, outcome) = split(chunk, 0, line);
            self.buf.extend_from_slice(&chunk[start..]);
            self.scanned = self.buf.len();
            return outcome;
        }
        self.buf.extend_from_slice(chunk);
        let (start, outcome) = split(&self.buf, self.scanned, line);
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        outcome
    }

    /// The bytes after the last line break (a line cut short, or a last line without one).
    pub(super) fn rest(&self) -> &[u8] {
        &self.buf
    }
}

/// Hands each complete line of `bytes` to `line` (looking for line breaks from `from`,
/// the bytes before it being known to hold none), stopping at the first failure; gives the
/// offset just past the last line handed over.
fn split(
    bytes: &[u8],
    from: usize,
    line: &mut dyn FnMut(&str) -> Result<(), Failure>,
) -> (usize, Result<(), Failure>) {
    // The complete lines are checked as UTF-8 at once (a streamed reply is hundreds of
    // short lines); if they are not all valid, line by line, so the lines before the bad
    // one are still handed over.
    let whole = bytes[from..]
        .iter()
        .rposition(|&byte| byte == b'\n')
        .and_then(|last| std::str::from_utf8(&bytes[..=from + last]).ok());
    let mut start = 0;
    let mut from = from;
    while let Some(offset) = newline(&bytes[from..]) {
        let end = from + offset;
        let mut stop = end;
        if stop > start && bytes[stop - 1] == b'\r' {
            stop -= 1;
        }
        let text = match whole {
            // `start` and `stop` are next to ASCII bytes: character boundaries.
            Some(whole) => whole.get(start..stop).ok_or(()),
            None => std::str::from_utf8(&bytes[start..stop]).map_err(drop),
        };
        start = end + 1;
        from = start;
        let outcome = text
            .map_err(|()| Failure::fatal("the response is not valid UTF-8"))
            .and_then(&mut *line);
        if outcome.is_err() {
            return (start, outcome);
        }
    }
    (start, Ok(()))
}

/// The offset of the first `\n` in `bytes`, looked for eight bytes at a time (a streamed
/// reply is mostly short lines of JSON; a byte at a time this search was a sixth of
/// decoding it).
fn newline(bytes: &[u8]) -> Option<usize> {
    words::first(
        bytes,
        |word| words::equal(word, b'\n'),
        |byte| byte == b'\n',
    )
}

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Event {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Receives each event of a stream: `(event field, data)`.
pub(crate) type EventSink<'a> = dyn FnMut(Option<&str>, &str) -> Result<(), Failure> + 'a;

/// Assembles server-sent events from a byte stream.
#[derive(Debug, Default)]
pub(crate) struct Sse {
    lines: Lines,
    event: Option<String>,
    /// The `data:` lines of the event under way, joined with `\n` (reused between events).
    data: String,
    /// Whether the event under way has a `data:` line (which may be empty).
    has_data: bool,
}

impl Sse {
    /// The events completed by `chunk`.
    pub(super) fn push(&mut self, chunk: &[u8]) -> Result<Vec<Event>, Failure> {
        let mut events = Vec::new();
        self.each(chunk, &mut |event, data| {
            events.push(Event {
                event: event.map(str::to_string),
                data: data.to_string(),
            });
            Ok(())
        })?;
        Ok(events)
    }

    /// Hands each event completed by `chunk` to `on_event` as `(event field, data)`,
    /// borrowed: after the first events, nothing is allocated per event.
    pub(super) fn each(
        &mut self,
        chunk: &[u8],
        on_event: &mut EventSink<'_>,
    ) -> Result<(), Failure> {
        let Sse {
            lines,
            event,
            data,
            has_data,
        } = self;
        lines.each(chunk, &mut |line| {
            if line.is_empty() {
                if std::mem::take(has_data) {
                    let outcome = on_event(event.as_deref(), data);
                    data.clear();
                    *event = None;
                    return outcome;
                }
                *event = None;
                return Ok(());
            }
            if line.starts_with(':') {
                return Ok(()); // a comment (keep-alive)
            }
            let (field, value) = match line.strip_prefix("data:") {
                // The usual line, read without searching for its colon.
                Some(value) => ("data", value.strip_prefix(' ').unwrap_or(value)),
                None => match line.split_once(':') {
                    Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                    None => (line, ""),
                },
            };
            match field {
                "event" => *event = Some(value.to_string()),
                "data" => {
                    if std::mem::replace(has_data, true) {
                        data.push('\n');
                    }
                    data.push_str(value);
                }
                _ => {} // id, retry: not used by model APIs
            }
            Ok(())
        })
    }

    /// Whether the framing is between events: no line cut short buffered, no field of an
    /// event under way. Bytes starting a new event then frame as if they started the body.
    pub(super) fn idle(&self) -> bool {
        self.lines.buf.is_empty() && !self.has_data && self.event.is_none()
    }

    /// The body ended: the last event if its lines were complete but the blank line that
    /// ends it never came, or a failure when the body was cut mid-line.
    pub(super) fn finish(&mut self) -> Result<Option<Event>, Failure> {
        if !self.lines.rest().iter().all(u8::is_ascii_whitespace) {
            return Err(Failure::transient(format!(
                "the response was cut off mid-event: `{}`",
                snippet(&String::from_utf8_lossy(self.lines.rest()))
            )));
        }
        Ok(self.dispatch())
    }

    fn dispatch(&mut self) -> Option<Event> {
        if !std::mem::take(&mut self.has_data) {
            self.event = None;
            return None;
        }
        Some(Event {
            event: self.event.take(),
            data: std::mem::take(&mut self.data),
        })
    }
}

/// The start of a payload, for error messages.
pub(crate) fn snippet(text: &str) -> String {
    const MAX: usize = 120;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}…")
    }
}

/// Parses one event's or line's JSON; malformed JSON in a complete unit is the server's
/// fault, so retrying will not help.
pub(crate) fn json(text: &str) -> Result<serde_json::Value, Failure> {
    serde_json::from_str(text).map_err(|error| {
        Failure::fatal(format!(
            "malformed JSON in the response ({error}): `{}`",
            snippet(text)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_at_a_time_search_finds_the_first_newline_like_a_byte_at_a_time_one() {
        // Every position of one or two newlines in lines of 0 to 40 bytes, next to the
        // bytes most like a newline (`\x0b`, `\x8a`, `\x09`, `\r`) and to multi-byte text.
        let fillers: [&[u8]; 4] = [
            b"a",
            b"\x0b\x8a\x09\r",
            "\u{e9}\u{1f980}".as_bytes(),
            b"\x00\xff",
        ];
        for filler in fillers {
            for len in 0..40 {
                let base: Vec<u8> = filler.iter().copied().cycle().take(len).collect();
                let expected = |bytes: &[u8]| bytes.iter().position(|&byte| byte == b'\n');
                assert_eq!(newline(&base), expected(&base));
                for first in 0..len {
                    for second in first..len {
                        let mut bytes = base.clone();
                        bytes[second] = b'\n';
                        bytes[first] = b'\n';
                        assert_eq!(newline(&bytes), Some(first), "{bytes:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn lines_split_anywhere() {
        let mut lines = Lines::default();
        assert_eq!(lines.push(b"ab").unwrap(), Vec::<String>::new());
        assert_eq!(lines.push(b"c\r\nde\nf").unwrap(), vec!["abc", "de"]);
        assert_eq!(lines.rest(), b"f");
        // A UTF-8 sequence cut between chunks.
        let snow = "☃\n".as_bytes();
        let mut lines = Lines::default();
        assert!(lines.push(&snow[..1]).unwrap().is_empty());
        assert_eq!(lines.push(&snow[1..]).unwrap(), vec!["☃"]);
    }

    #[test]
    fn the_lines_before_one_that_is_not_utf8_are_handed_over_then_it_fails() {
        for (buffered, chunk) in [
            (&b""[..], &b"a\r\n\xff\nc\n"[..]),
            (b"a", b"\r\n\xffz\nc\n"),
        ] {
            let mut lines = Lines::default();
            assert!(lines.push(buffered).unwrap().is_empty());
            let mut seen = Vec::new();
            let outcome = lines.each(chunk, &mut |line| {
                seen.push(line.to_string());
                Ok(())
            });
            assert_eq!(seen, vec!["a"]);
            assert_eq!(
                outcome.unwrap_err().message,
                "the response is not valid UTF-8"
            );
            assert_eq!(lines.rest(), b"c\n");
        }
    }

    #[test]
    fn a_long_line_is_scanned_once() {
        let mut lines = Lines::default();
        for round in 1..=1000 {
            assert!(lines.push(&[b'x'; 1024]).unwrap().is_empty());
            // Everything buffered is known to hold no line break: the next push scans
            // only its own bytes.
            assert_eq!(lines.scanned, round * 1024);
        }
        let done = lines.push(b"\nrest").unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].len(), 1000 * 1024);
        assert_eq!((lines.rest(), lines.scanned), (&b"rest"[..], 4));
    }

    #[test]
    fn events_assemble_across_chunks() {
        let mut sse = Sse::default();
        let body = b": keep-alive\n\nevent: ping\ndata: {}\n\ndata: a\ndata: b\n\ndata: [DONE]\n\n";
        let mut events = Vec::new();
        for chunk in body.chunks(3) {
            events.extend(sse.push(chunk).unwrap());
        }
        assert_eq!(
            events,
            vec![
                Event {
                    event: Some("ping".into()),
                    data: "{}".into()
                },
                Event {
                    event: None,
                    data: "a\nb".into()
                },
                Event {
                    event: None,
                    data: "[DONE]".into()
                },
            ]
        );
        assert_eq!(sse.finish().unwrap(), None);
    }

    #[test]
    fn a_cut_event_is_an_error_and_an_unterminated_one_is_kept() {
        let mut sse = Sse::default();
        assert!(sse.push(b"data: {\"choi").unwrap().is_empty());
        let error = sse.finish().unwrap_err();
        assert!(error.retry);
        assert!(
            error.message.contains("cut off mid-event"),
            "{}",
            error.message
        );

        let mut sse = Sse::default();
        assert!(sse.push(b"data: [DONE]\n").unwrap().is_empty());
        assert_eq!(sse.finish().unwrap().unwrap().data, "[DONE]");
    }
}
