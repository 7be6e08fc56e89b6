//! Keys and plain scalars for the YAML fast path: where a line holds a key (plain or
//! quoted, then `:` and a blank), and a plain value to the end of its line.

use super::super::super::node::Node;
use super::{Reader, MAX_KEY};

impl Reader<'_> {
    /// When a key starts at `pos` (plain or quoted, on one line, then `:` and a blank):
    /// the position of its `:`.
    pub(super) fn key_colon(&self, pos: usize) -> Option<usize> {
        let bytes = self.bytes;
        let at = match bytes.get(pos)? {
            b'"' | b'\'' => {
                let quote = bytes[pos];
                let mut at = pos + 1;
                while *bytes.get(at)? != quote || (quote == b'"' && escaped(bytes, pos, at)) {
                    if bytes[at] == b'\n' {
                        return None;
                    }
                    at += 1;
                }
                at += 1;
                while self.at(at) == b' ' {
                    at += 1;
                }
                at
            }
            &first if starts_plain(first, self.at(pos + 1)) => {
                let mut at = pos + 1;
                loop {
                    match *bytes.get(at)? {
                        b'\n' => return None,
                        b':' if matches!(self.at(at + 1), b' ' | b'\n' | 0) => break,
                        b'#' if bytes[at - 1] == b' ' => return None,
                        _ => at += 1,
                    }
                }
                at
            }
            _ => return None,
        };
        if self.at(at) != b':' || !matches!(self.at(at + 1), b' ' | b'\n' | 0) {
            return None;
        }
        (at - pos <= MAX_KEY).then_some(at)
    }

    /// The key at `pos`, and the position of its `:`.
    pub(super) fn key(&mut self) -> Option<(Node, usize)> {
        let colon = self.key_colon(self.pos)?;
        let key = match self.at(self.pos) {
            b'"' | b'\'' => self.quoted()?,
            _ => {
                let mut end = colon;
                while self.bytes[end - 1] == b' ' {
                    end -= 1;
                }
                self.scalar(self.pos, end)?
            }
        };
        Some((key, colon))
    }

    /// A plain scalar value from `pos` to the end of its line or comment.
    pub(super) fn plain_value(&mut self) -> Option<Node> {
        let start = self.pos;
        if !starts_plain(self.at(start), self.at(start + 1)) {
            return None;
        }
        let line_end = self.line_end(start);
        let mut end = start + 1;
        while end < line_end {
            match self.bytes[end] {
                b'#' if self.bytes[end - 1] == b' ' => break,
                b':' if matches!(self.at(end + 1), b' ' | b'\n' | 0) => return None,
                _ => end += 1,
            }
        }
        self.pos = end;
        while self.bytes[end - 1] == b' ' {
            end -= 1;
        }
        self.scalar(start, end)
    }
}

/// Whether the byte at `at` is escaped by the backslashes before it (after `open`).
fn escaped(bytes: &[u8], open: usize, at: usize) -> bool {
    let mut count = 0;
    let mut pos = at;
    while pos > open + 1 && bytes[pos - 1] == b'\\' {
        count += 1;
        pos -= 1;
    }
    count % 2 == 1
}

/// Whether a plain scalar may start with `first` (followed by `second`) here: not an
/// indicator, and `-` only before a non-blank that is not a flow character.
pub(super) fn starts_plain(first: u8, second: u8) -> bool {
    match first {
        b'-' => !matches!(second, b' ' | b'\n' | 0 | b',' | b'[' | b']' | b'{' | b'}'),
        b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|'
        | b'>' | b'\'' | b'"' | b'%' | b'@' | b'`' | b' ' | b'\n' | 0 => false,
        _ => true,
    }
}
