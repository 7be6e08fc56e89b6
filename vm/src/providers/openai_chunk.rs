//! The usual `chat.completion.chunk` event read by a hand-written scanner: a streamed reply
//! is hundreds of these, each carrying a few bytes of `choices[0].delta.content` in ~150
//! bytes of JSON the decoder ignores.
//!
//! [`scan`] answers only for an event it fully understands and checks as JSON on the way:
//! an object whose `choices` is null or holds at most one choice, whose `delta` carries
//! text (or null) and no tool calls, with `usage` and `error` absent or null. Anything
//! else (tool calls, usage, errors, a whole `chat.completion`, a `\u` escape, a repeated
//! key, malformed JSON) is `None`, and the caller decodes the event with serde as before,
//! which also words the errors. So the scanner never decides an outcome the typed decoder
//! would decide differently; `tests` holds it to that on generated events.

use std::borrow::Cow;
use std::ops::Range;

use crate::json_string::short_escape;

use crate::words;

/// What a usual chunk says: the text it adds (empty when it adds none), and where its
/// `content` string is (the quotes included), if it has one.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Usual<'a> {
    pub(super) text: Cow<'a, str>,
    pub(super) span: Option<Range<usize>>,
}

/// Nesting deeper than this is left to serde (which has its own limit).
const MAX_DEPTH: usize = 32;

/// Reads `data` as a usual chunk, or `None` when serde must decide.
pub(super) fn scan(data: &str) -> Option<Usual<'_>> {
    let mut cursor = Cursor {
        bytes: data.as_bytes(),
        text: data,
        at: 0,
    };
    let mut usual = Usual {
        text: Cow::Borrowed(""),
        span: None,
    };
    let mut seen = Seen::default();
    cursor.object(|cursor, key| match key {
        "choices" => {
            once(&mut seen.choices)?;
            cursor.choices(&mut usual)
        }
        // A stream's usage or error event is rare: serde reads it.
        "usage" | "error" => {
            once(&mut seen.usage_or_error)?;
            cursor.null()
        }
        _ => cursor.skip(0),
    })?;
    cursor.space();
    (cursor.at == cursor.bytes.len()).then_some(usual)
}

/// The chunks of one stream: a server sends the same JSON around each piece of text (the
/// same id, model and keys in the same order), so the bytes before and after the last
/// scanned chunk's `content` string are kept, and a chunk made of the same bytes around
/// another valid string is that chunk with another text, read without scanning the rest.
#[derive(Debug, Default)]
pub(super) struct Chunks {
    /// Up to and including the opening quote of `content` (empty: nothing learnt yet).
    before: Vec<u8>,
    /// From the closing quote of `content` to the end.
    after: Vec<u8>,
    /// `data: ` and `before`: how an event of the learnt shape starts in an SSE stream, when
    /// neither `before` nor `after` holds a line break (`\n` or `\r`); empty otherwise
    /// (`openai_framed`).
    line_start: Vec<u8>,
    /// `after` and the blank line that ends the event, when `line_start` is not empty.
    line_end: Vec<u8>,
}

impl Chunks {
    /// The text a usual chunk adds, or `None` when serde must decide.
    pub(super) fn read<'a>(&mut self, data: &'a str) -> Option<Cow<'a, str>> {
        if let Some(text) = self.same_shape(data) {
            return Some(text);
        }
        let usual = scan(data)?;
        if let Some(span) = &usual.span {
            let bytes = data.as_bytes();
            self.before.clear();
            self.before.extend_from_slice(&bytes[..span.start + 1]);
            self.after.clear();
            self.after.extend_from_slice(&bytes[span.end - 1..]);
            self.line_start.clear();
            self.line_end.clear();
            let breaks = |byte: &u8| *byte == b'\n' || *byte == b'\r';
            if !self.before.iter().chain(&self.after).any(breaks) {
                self.line_start.extend_from_slice(b"data: ");
                self.line_start.extend_from_slice(&self.before);
                self.line_end.extend_from_slice(&self.after);
                self.line_end.extend_from_slice(b"\n\n");
            }
        }
        Some(usual.text)
    }

    /// How an SSE event of the learnt shape starts (`data: ` and the learnt bytes up to the
    /// opening quote of the text) and ends (the learnt bytes from the closing quote on and a
    /// blank line), when a line of the stream can hold them.
    pub(super) fn event_shape(&self) -> Option<(&[u8], &[u8])> {
        (!self.line_start.is_empty()).then_some((&self.line_start, &self.line_end))
    }

    /// The text of a chunk that is the learnt bytes around one valid string.
    fn same_shape<'a>(&self, data: &'a str) -> Option<Cow<'a, str>> {
        let bytes = data.as_bytes();
        if self.before.is_empty()
            || bytes.len() < self.before.len() + self.after.len()
            || !bytes.starts_with(&self.before)
            || !bytes.ends_with(&self.after)
        {
            return None;
        }
        let mut cursor = Cursor {
            bytes,
            text: data,
            at: self.before.len() - 1,
        };
        let text = cursor.string()?;
        // The string must end where the learnt tail starts: its closing quote.
        (cursor.at == bytes.len() - self.after.len() + 1).then_some(text)
    }
}

/// Appends the text of the JSON string whose opening quote is at `open` in `bytes` (which
/// need not be UTF-8 elsewhere) to `out`, read as [`Chunks::read`] reads the `content` string
/// of a chunk of its learnt shape, and gives the offset just past its closing quote. `None`
/// for a `\u` escape, a control character, bytes that are not UTF-8, or no closing quote;
/// then `out` may hold part of the string, and the caller cuts it back.
///
/// `out` stays UTF-8 when it was: ASCII bytes are appended as they are, any other run only
/// once it is checked (a streamed token is a few bytes, and `str::from_utf8` on each cost
/// more than reading it).
pub(super) fn string_into(bytes: &[u8], open: usize, out: &mut Vec<u8>) -> Option<usize> {
    if bytes.get(open) != Some(&b'"') {
        return None;
    }
    // Undone run by run, in the one scan that finds the end (a token holding a line break,
    // say). Runs are split at ASCII bytes, so each is UTF-8 when the whole is.
    let mut at = open + 1;
    loop {
        let plain = &bytes[at..at + words::json_plain_end(bytes.get(at..)?)?];
        if !plain.is_ascii() {
            std::str::from_utf8(plain).ok()?;
        }
        out.extend_from_slice(plain);
        at += plain.len();
        match bytes[at] {
            b'"' => return Some(at + 1),
            b'\\' => {
                let mut escaped = [0; 4];
                let escaped = short_escape(*bytes.get(at + 1)?)?.encode_utf8(&mut escaped);
                out.extend_from_slice(escaped.as_bytes());
                at += 2;
            }
            _ => return None, // a control character
        }
    }
}

/// Keys already met: serde's derived decoder refuses a known key given twice.
#[derive(Default)]
struct Seen {
    choices: bool,
    usage_or_error: bool,
}

fn once(seen: &mut bool) -> Option<()> {
    (!std::mem::replace(seen, true)).then_some(())
}

struct Cursor<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn space(&mut self) {
        // JSON's whitespace is all at or below b' '; most servers send none.
        if self.bytes.get(self.at).is_some_and(|&byte| byte > b' ') {
            return;
        }
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// Skips whitespace and takes `byte` if it comes next.
    fn eat(&mut self, byte: u8) -> bool {
        self.space();
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end) == Some(word)).then(|| self.at = end)
    }

    fn null(&mut self) -> Option<()> {
        self.space();
        self.literal(b"null")
    }

    /// An object, handing each key (unescaped keys only) to `value` to read its value.
    fn object(&mut self, mut value: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            self.space();
            let key = self.key()?;
            if !self.eat(b':') {
                return None;
            }
            value(self, key)?;
            if self.eat(b'}') {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// `null`, `[]` or a one-choice array.
    fn choices(&mut self, usual: &mut Usual<'a>) -> Option<()> {
        self.space();
        if self.bytes.get(self.at) == Some(&b'n') {
            return self.literal(b"null");
        }
        if !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(());
        }
        let mut delta = false;
        self.object(|cursor, key| match key {
            "delta" => {
                once(&mut delta)?;
                cursor.delta(usual)
            }
            // A whole `chat.completion`: serde reads it.
            "message" => None,
            _ => cursor.skip(0),
        })?;
        // A second choice is serde's to read (the decoder checks every choice's shape).
        self.eat(b']').then_some(())
    }

    /// `null` or `{"content": string or null, …}` with no tool calls.
    fn delta(&mut self, usual: &mut Usual<'a>) -> Option<()> {
        self.space();
        if self.bytes.get(self.at) == Some(&b'n') {
            return self.literal(b"null");
        }
        let mut content = false;
        let mut calls = false;
        self.object(|cursor, key| match key {
            "content" => {
                once(&mut content)?;
                cursor.space();
                if cursor.bytes.get(cursor.at) == Some(&b'n') {
                    return cursor.literal(b"null");
                }
                let start = cursor.at;
                usual.text = cursor.string()?;
                usual.span = Some(start..cursor.at);
                Some(())
            }
            "tool_calls" => {
                once(&mut calls)?;
                cursor.null()
            }
            _ => cursor.skip(0),
        })
    }

    /// The end of the string at the cursor (just past its closing quote) and whether it
    /// has escapes; `None` for a `\u` escape (surrogates and all are serde's), a control
    /// character or a missing end.
    fn string_end(&self) -> Option<(usize, bool)> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let mut at = self.at + 1;
        let mut escaped = false;
        loop {
            at += words::json_plain_end(self.bytes.get(at..)?)?;
            match self.bytes[at] {
                b'"' => return Some((at + 1, escaped)),
                b'\\' => match self.bytes.get(at + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                        escaped = true;
                        at += 2;
                    }
                    _ => return None,
                },
                _ => return None, // a control character
            }
        }
    }

    /// Skips the string at the cursor.
    fn skip_string(&mut self) -> Option<()> {
        self.at = self.string_end()?.0;
        Some(())
    }

    /// A key at the cursor, as written (`None` when it has escapes, which serde undoes).
    fn key(&mut self) -> Option<&'a str> {
        let (end, escaped) = self.string_end()?;
        if escaped {
            return None;
        }
        let key = self.text.get(self.at + 1..end - 1)?;
        self.at = end;
        Some(key)
    }

    /// The string at the cursor, borrowed unless it has escapes.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let (end, escaped) = self.string_end()?;
        let open = std::mem::replace(&mut self.at, end);
        if !escaped {
            return self.text.get(open + 1..end - 1).map(Cow::Borrowed);
        }
        let mut owned = Vec::with_capacity(end - open);
        string_into(self.bytes, open, &mut owned)?;
        String::from_utf8(owned).ok().map(Cow::Owned)
    }

    /// Skips one JSON value, checking its syntax.
    fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.space();
        match *self.bytes.get(self.at)? {
            b'"' => self.skip_string(),
            b'{' => self.object(|cursor, _| cursor.skip(depth + 1)),
            b'[' => {
                self.at += 1;
                if self.eat(b']') {
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    if self.eat(b']') {
                        return Some(());
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Option<()> {
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        match *self.bytes.get(self.at)? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.bytes.get(self.at) {
            self.at += 1;
        }
        self.at - start
    }
}

#[cfg(test)]
#[path = "openai_chunk_tests.rs"]
mod tests;
