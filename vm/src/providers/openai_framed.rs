//! The usual `chat.completion.chunk` events found straight in a network chunk's bytes, without
//! framing them into lines and events first.
//!
//! A streamed reply is hundreds of events `data: {…"content":"tok"…}\n\n` of one shape
//! (`openai_chunk::Chunks` learns it). Once it is learnt and the SSE framing is between
//! events (nothing buffered, no event under way), an event that is exactly `data: `, the
//! learnt bytes before the text, one JSON string, the learnt bytes after it and a blank line
//! is read by comparing the learnt bytes and scanning the string: what the framing and the
//! chunk reader would make of the same bytes (`Lines` would hand over the line
//! `data: …` and then an empty line, `Sse` the event's data, `Chunks::read` this text).
//! Anything else goes through the framing as before, one event at a time, so the two ways
//! take turns within a chunk (`openai_stream::Stream::feed`); `tests` holds them to the same
//! outcome as a stream fed a byte at a time.

use super::openai_chunk::{self, Chunks};
use crate::words;

/// The usual events `bytes` starts with: chunks of the shape `chunks` learnt, each alone on
/// its `data: ` line and ended by a blank line (`\n\n`). Their text is appended to `text`
/// (which stays UTF-8), and the number of bytes they take is returned; the first event that
/// is not one is left, bytes and text, as it was.
pub(super) fn usual_events(chunks: &Chunks, bytes: &[u8], text: &mut Vec<u8>) -> usize {
    let Some((start, end)) = chunks.event_shape() else {
        return 0;
    };
    let mut read = 0;
    while let Some(len) = bytes
        .get(read..)
        .and_then(|rest| usual_event(start, end, rest, text))
    {
        read += len;
    }
    read
}

/// The event `bytes` starts with if it is `start`, a JSON string (its opening quote ends
/// `start`) and `end` (which starts with the closing one): the event's length, its text
/// appended to `text`.
#[inline(always)]
fn usual_event(start: &[u8], end: &[u8], bytes: &[u8], text: &mut Vec<u8>) -> Option<usize> {
    if !bytes.starts_with(start) {
        return None;
    }
    let open = start.len();
    let kept = text.len();
    let close = match bytes.get(open..).and_then(words::short_ascii_string) {
        // The usual token, read here without a call.
        Some(len) => {
            // All eight bytes read are copied (one move, not a call), then cut to the text.
            let mut eight = [0u8; 8];
            eight.copy_from_slice(&bytes[open..open + 8]);
            text.extend_from_slice(&eight);
            text.truncate(text.len() - 8 + len);
            Some(open + len)
        }
        None => openai_chunk::string_into(bytes, open - 1, text).map(|after| after - 1),
    }
    .filter(|&close| bytes.get(close..close + end.len()) == Some(end));
    if close.is_none() {
        text.truncate(kept);
    }
    close.map(|close| close + end.len())
}

/// The offset just past the first blank line's `\n\n` in `bytes`, if there is one: where the
/// framing is sure to be between lines, and usually between events.
pub(super) fn event_end(bytes: &[u8]) -> Option<usize> {
    let mut from = 0;
    loop {
        let at = from + newline(bytes.get(from..)?)?;
        if bytes.get(at + 1) == Some(&b'\n') {
            return Some(at + 2);
        }
        from = at + 1;
    }
}

fn newline(bytes: &[u8]) -> Option<usize> {
    words::first(
        bytes,
        |word| words::equal(word, b'\n'),
        |byte| byte == b'\n',
    )
}

#[cfg(test)]
#[path = "openai_framed_tests.rs"]
mod tests;
