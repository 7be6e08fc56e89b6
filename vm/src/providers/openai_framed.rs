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

use super::openai_chunk::{self, Chunks, Read};
use super::words;

/// The first event of `bytes` when it is a usual chunk of the shape `chunks` learnt, alone on
/// its `data: ` line and ended by a blank line (`\n\n`): the text it adds and the length of
/// the event in bytes.
pub(super) fn usual_event<'a>(chunks: &Chunks, bytes: &'a [u8]) -> Option<(Read<'a>, usize)> {
    let (start, after) = chunks.event_shape()?;
    if !bytes.starts_with(start) {
        return None;
    }
    // `start` ends with the string's opening quote, `after` starts with its closing one.
    let (text, end) = openai_chunk::string_at(bytes, start.len() - 1)?;
    let line_end = end - 1 + after.len();
    let ends = bytes.get(end - 1..)?.starts_with(after)
        && bytes.get(line_end..line_end + 2) == Some(b"\n\n".as_slice());
    ends.then_some((text, line_end + 2))
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
