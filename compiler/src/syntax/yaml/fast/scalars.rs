//! Quoted and block scalars for the YAML fast path, read as saphyr reads them; `None` for
//! every form this reader leaves to saphyr (a quoted scalar over several lines, an escaped
//! line break, an unknown escape, an indentation indicator, an empty block scalar, a
//! whitespace-only line deeper than the content, and so on).

/// A single- or double-quoted scalar on one line, its quote at `start`: the text, and the
/// position after the closing quote.
pub(super) fn quoted(text: &str, start: usize) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let quote = *bytes.get(start)?;
    let mut out = String::new();
    let mut run = start + 1;
    let mut pos = run;
    loop {
        let byte = *bytes.get(pos)?;
        match byte {
            b'\n' => return None,
            b'\'' if quote == b'\'' => {
                out.push_str(&text[run..pos]);
                if bytes.get(pos + 1) == Some(&b'\'') {
                    out.push('\'');
                    pos += 2;
                    run = pos;
                } else {
                    return Some((out, pos + 1));
                }
            }
            b'"' if quote == b'"' => {
                out.push_str(&text[run..pos]);
                return Some((out, pos + 1));
            }
            b'\\' if quote == b'"' => {
                out.push_str(&text[run..pos]);
                let (ch, len) = escape(bytes, pos + 1)?;
                out.push(ch);
                pos += 1 + len;
                run = pos;
            }
            _ => pos += 1,
        }
    }
}

/// The character of the escape after a `\` (at `at`), and how many bytes it takes.
fn escape(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let ch = match *bytes.get(at)? {
        b'0' => '\0',
        b'a' => '\u{7}',
        b'b' => '\u{8}',
        b't' => '\t',
        b'n' => '\n',
        b'v' => '\u{b}',
        b'f' => '\u{c}',
        b'r' => '\r',
        b'e' => '\u{1b}',
        b' ' => ' ',
        b'"' => '"',
        b'/' => '/',
        b'\\' => '\\',
        b'N' => '\u{85}',
        b'_' => '\u{a0}',
        b'L' => '\u{2028}',
        b'P' => '\u{2029}',
        b'x' => return hex(bytes, at + 1, 2),
        b'u' => return hex(bytes, at + 1, 4),
        b'U' => return hex(bytes, at + 1, 8),
        _ => return None,
    };
    Some((ch, 1))
}

/// `digits` hex digits at `at` as a character (the escape letter counted in the length).
fn hex(bytes: &[u8], at: usize, digits: usize) -> Option<(char, usize)> {
    let code = bytes.get(at..at + digits)?;
    let mut value: u32 = 0;
    for &digit in code {
        value = (value << 4) | char::from(digit).to_digit(16)?;
    }
    Some((char::from_u32(value)?, 1 + digits))
}

/// A block scalar read by [`block`].
pub(super) struct Block {
    pub(super) text: String,
    /// The end of its last content character (the span's end).
    pub(super) end: usize,
    /// The start of the first line after it (or the end of the text).
    pub(super) next_line: usize,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Chomping {
    Strip,
    Clip,
    Keep,
}

/// The `|` or `>` block scalar whose indicator is at `at`, in a block collection at column
/// `parent`.
pub(super) fn block(text: &str, at: usize, parent: usize) -> Option<Block> {
    let bytes = text.as_bytes();
    let byte = |pos: usize| bytes.get(pos).copied().unwrap_or(0);
    let literal = byte(at) == b'|';
    let mut pos = at + 1;
    let chomping = match byte(pos) {
        b'-' => Chomping::Strip,
        b'+' => Chomping::Keep,
        _ => Chomping::Clip,
    };
    if chomping != Chomping::Clip {
        pos += 1;
    }
    // The rest of the header: blanks and a comment.
    if byte(pos) == b' ' {
        while byte(pos) == b' ' {
            pos += 1;
        }
        if byte(pos) == b'#' {
            pos = line_end(bytes, pos);
        }
    }
    if byte(pos) != b'\n' {
        return None;
    }
    pos += 1;
    // Leading empty lines, then the first content line sets the indentation.
    let mut breaks = 0;
    let mut widest_blank = 0;
    let indent = loop {
        let line = pos;
        while byte(pos) == b' ' {
            pos += 1;
        }
        match byte(pos) {
            b'\n' => {
                widest_blank = widest_blank.max(pos - line);
                breaks += 1;
                pos += 1;
            }
            _ if pos >= bytes.len() => return None,
            _ => break pos - line,
        }
    };
    // Content at or left of the parent makes an empty scalar; a wider blank line before the
    // content is an error; content starting with `|` or `>` is spanned differently.
    if indent <= parent || widest_blank > indent || matches!(byte(pos), b'|' | b'>') {
        return None;
    }
    let mut out = String::new();
    let mut leading_break = false;
    let mut leading_blank = false;
    let mut end;
    loop {
        // At the first content character of a content line.
        let trailing_blank = byte(pos) == b' ';
        if !literal && leading_break && !leading_blank && !trailing_blank {
            if breaks == 0 {
                out.push(' ');
            }
        } else if leading_break {
            out.push('\n');
        }
        push_breaks(&mut out, breaks);
        breaks = 0;
        leading_break = false;
        leading_blank = trailing_blank;
        let eol = line_end(bytes, pos);
        out.push_str(&text[pos..eol]);
        end = eol;
        while end > pos && bytes[end - 1] == b' ' {
            end -= 1;
        }
        if end == pos {
            // A line of blanks deeper than the content.
            return None;
        }
        if eol >= bytes.len() {
            pos = eol;
            break;
        }
        pos = eol + 1;
        leading_break = true;
        // Indentation and empty lines up to the next content line.
        let col = loop {
            let line = pos;
            while pos - line < indent && byte(pos) == b' ' {
                pos += 1;
            }
            match byte(pos) {
                b'\n' => {
                    breaks += 1;
                    pos += 1;
                }
                _ if pos >= bytes.len() => {
                    if pos > line {
                        return None;
                    }
                    break 0;
                }
                b' ' => {
                    if bytes[pos..line_end(bytes, pos)].iter().all(|&b| b == b' ') {
                        return None;
                    }
                    break pos - line;
                }
                _ => break pos - line,
            }
        };
        if col != indent || pos >= bytes.len() {
            break;
        }
    }
    if chomping != Chomping::Strip {
        if leading_break {
            out.push('\n');
        }
        if pos >= bytes.len() && !text.ends_with('\n') {
            out.push('\n');
        }
    }
    if chomping == Chomping::Keep {
        push_breaks(&mut out, breaks);
    }
    let next_line = if pos >= bytes.len() {
        bytes.len()
    } else {
        memchr::memrchr(b'\n', &bytes[..pos]).map_or(0, |idx| idx + 1)
    };
    Some(Block {
        text: out,
        end,
        next_line,
    })
}

fn push_breaks(out: &mut String, breaks: usize) {
    for _ in 0..breaks {
        out.push('\n');
    }
}

/// The end of the line holding `pos` (its `\n`, or the end of the text).
fn line_end(bytes: &[u8], pos: usize) -> usize {
    memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |idx| pos + idx)
}
