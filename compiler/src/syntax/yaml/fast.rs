//! The YAML loader's fast path: a hand-written reader for the plain block YAML that configs
//! are written in, giving exactly the tree (spans included) that the saphyr path gives.
//!
//! It understands block mappings and lists (indented or not), single-line plain and quoted
//! scalars, `|`/`>` block scalars without an indentation indicator, comments, and one-line
//! flow lists of scalars (`[a, "b"]`, `[]`, `{}`). Anything else, and anything it is not
//! sure of (anchors, aliases, tags, directives, documents markers, complex keys, tabs, CRs,
//! control characters, a multi-line plain or quoted scalar, odd indentation, any error, a
//! budget limit), makes [`parse`] return `None` before anything is reported, and the caller
//! parses the text again with saphyr, which gives the answer or the diagnostic.

mod flow;
mod keys;
mod scalars;

use super::super::node::{Budget, Node, NodeKind};
use crate::source::{FileId, Span};

/// Deeper nesting goes to saphyr, whatever the budget allows: this reader recurses.
const MAX_DEPTH: usize = 100;

/// Longest plain or quoted key read here (saphyr limits simple keys to 1024 characters).
const MAX_KEY: usize = 1000;

/// The tree of `text`, or `None` when the saphyr path must decide.
pub(super) fn parse(file: FileId, text: &str, budget: &Budget) -> Option<Node> {
    if !plain_characters(text.as_bytes()) {
        return None;
    }
    let mut reader = Reader {
        file,
        text,
        bytes: text.as_bytes(),
        pos: 0,
        indent: -1,
        depth: 0,
        max_depth: budget.max_depth.min(MAX_DEPTH),
        nodes: 0,
        max_nodes: budget.document_nodes(text.len()),
        scalar_bytes: 0,
        max_bytes: budget.max_bytes,
        items: Vec::new(),
        pairs: Vec::new(),
    };
    reader.next_line()?;
    let col = usize::try_from(reader.indent).ok()?;
    let root = reader.collection(col)?;
    // Anything left (a line indented less than the root) is saphyr's to judge.
    (reader.indent < 0).then_some(root)
}

/// No tab, CR, other control character or byte order mark anywhere: those have rules of
/// their own that only saphyr applies.
fn plain_characters(bytes: &[u8]) -> bool {
    let controls = bytes.iter().fold(false, |found, &b| {
        found | ((b < 0x20 && b != b'\n') | (b == 0x7f))
    });
    !controls && memchr::memmem::find(bytes, "\u{feff}".as_bytes()).is_none()
}

struct Reader<'a> {
    file: FileId,
    text: &'a str,
    bytes: &'a [u8],
    /// The next byte to read.
    pos: usize,
    /// After [`Reader::next_line`]: the indentation of the line at `pos`, -1 at the end.
    indent: isize,
    /// Open collections, and the most allowed.
    depth: usize,
    max_depth: usize,
    /// Nodes so far and the budget's limit (as in the saphyr path).
    nodes: usize,
    max_nodes: usize,
    /// Text bytes of non-null scalars so far, and the budget's limit.
    scalar_bytes: usize,
    max_bytes: usize,
    /// The finished items and entries of the open collections, innermost last.
    items: Vec<Node>,
    pairs: Vec<(Node, Node)>,
}

impl Reader<'_> {
    fn at(&self, pos: usize) -> u8 {
        self.bytes.get(pos).copied().unwrap_or(0)
    }

    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start, end)
    }

    /// The end of the line holding `pos` (its `\n`, or the end of the text).
    fn line_end(&self, pos: usize) -> usize {
        memchr::memchr(b'\n', &self.bytes[pos..]).map_or(self.bytes.len(), |idx| pos + idx)
    }

    /// The start of the line holding `pos`.
    fn line_start(&self, pos: usize) -> usize {
        memchr::memrchr(b'\n', &self.bytes[..pos]).map_or(0, |idx| idx + 1)
    }

    /// From the start of a line, skips blank and comment lines to the first character of the
    /// next line with content, and records its indentation (-1 at the end of the text).
    /// `None` for a document marker or directive.
    fn next_line(&mut self) -> Option<()> {
        loop {
            let start = self.pos;
            let mut pos = start;
            while self.at(pos) == b' ' {
                pos += 1;
            }
            match self.at(pos) {
                b'\n' => self.pos = pos + 1,
                b'#' => self.pos = (self.line_end(pos) + 1).min(self.bytes.len()),
                0 if pos >= self.bytes.len() => {
                    self.pos = pos;
                    self.indent = -1;
                    return Some(());
                }
                byte => {
                    if pos == start
                        && (byte == b'%'
                            || self.bytes[pos..].starts_with(b"---")
                            || self.bytes[pos..].starts_with(b"..."))
                    {
                        return None;
                    }
                    self.pos = pos;
                    self.indent = isize::try_from(pos - start).ok()?;
                    return Some(());
                }
            }
        }
    }

    /// After a value on its line: only blanks and a comment may follow; then on to the next
    /// line with content.
    fn end_of_line(&mut self) -> Option<()> {
        let mut pos = self.pos;
        while self.at(pos) == b' ' {
            pos += 1;
        }
        match self.at(pos) {
            b'#' if pos > 0 && self.bytes[pos - 1] == b' ' => pos = self.line_end(pos),
            b'\n' => {}
            0 if pos >= self.bytes.len() => {}
            _ => return None,
        }
        self.pos = (pos + 1).min(self.bytes.len());
        self.next_line()
    }

    /// `-` followed by a blank or the end of the line.
    fn is_entry(&self, pos: usize) -> bool {
        self.at(pos) == b'-' && matches!(self.at(pos + 1), b' ' | b'\n' | 0)
    }

    fn count_node(&mut self) -> Option<()> {
        self.nodes += 1;
        (self.nodes <= self.max_nodes).then_some(())
    }

    fn open(&mut self) -> Option<()> {
        if self.depth >= self.max_depth {
            return None;
        }
        self.depth += 1;
        self.count_node()
    }

    /// A block collection whose first key or `-` is at `pos`, in column `col`.
    fn collection(&mut self, col: usize) -> Option<Node> {
        if self.is_entry(self.pos) {
            self.sequence(col, false)
        } else {
            self.mapping(col)
        }
    }

    /// A block list at `col`. An indentless one (the value of a key in the same column) ends
    /// at the first line there that is not an entry.
    fn sequence(&mut self, col: usize, indentless: bool) -> Option<Node> {
        self.open()?;
        let first = self.items.len();
        let mut start = self.pos;
        loop {
            self.pos += 1;
            self.skip_spaces();
            // saphyr marks an entry after its `-`, blanks and comment: where an indentless
            // list starts, and where a null item is.
            let mark = match self.at(self.pos) {
                b'#' => self.line_end(self.pos),
                _ => self.pos,
            };
            if indentless && self.items.len() == first {
                start = mark;
            }
            let item = match self.at(self.pos) {
                b'\n' | b'#' | 0 => {
                    self.end_of_line()?;
                    self.below(mark, col)?
                }
                _ => self.inline(col, true)?,
            };
            self.items.push(item);
            let next = usize::try_from(self.indent).ok();
            if next == Some(col) && self.is_entry(self.pos) {
                continue;
            }
            if next.is_none_or(|next| next < col) || (indentless && next == Some(col)) {
                break;
            }
            return None;
        }
        let end = self
            .items
            .last()
            .map_or(start, |item| item.span.end as usize);
        let mut items = Vec::with_capacity(self.items.len() - first);
        items.extend(self.items.drain(first..));
        self.depth -= 1;
        Some(Node::new(self.span(start, end), NodeKind::Seq(items)))
    }

    /// A block mapping whose first key is at `pos`, in column `col`.
    fn mapping(&mut self, col: usize) -> Option<Node> {
        self.open()?;
        let start = self.pos;
        let first = self.pairs.len();
        loop {
            let (key, colon) = self.key()?;
            self.pos = colon + 1;
            while self.at(self.pos) == b' ' {
                self.pos += 1;
            }
            let value = match self.at(self.pos) {
                b'\n' | b'#' | 0 => {
                    self.end_of_line()?;
                    let indent = usize::try_from(self.indent).ok();
                    if indent == Some(col) && self.is_entry(self.pos) {
                        self.sequence(col, true)?
                    } else {
                        self.below(colon, col)?
                    }
                }
                _ => self.inline(col, false)?,
            };
            self.pairs.push((key, value));
            match usize::try_from(self.indent).ok() {
                Some(next) if next == col && !self.is_entry(self.pos) => {}
                Some(next) if next >= col => return None,
                _ => break,
            }
        }
        let end = self
            .pairs
            .last()
            .map_or(start, |(_, value)| value.span.end as usize);
        let mut pairs = Vec::with_capacity(self.pairs.len() - first);
        pairs.extend(self.pairs.drain(first..));
        self.depth -= 1;
        Some(Node::new(self.span(start, end), NodeKind::Map(pairs)))
    }

    /// The value of an entry whose line ends after its `:` or `-` (at `mark`): a collection
    /// indented deeper than `col` on the next line, or null (spanning nothing at `mark`).
    fn below(&mut self, mark: usize, col: usize) -> Option<Node> {
        match usize::try_from(self.indent).ok() {
            Some(indent) if indent > col => self.collection(indent),
            _ => {
                self.count_node()?;
                Some(Node::new(self.span(mark, mark), NodeKind::Null))
            }
        }
    }

    /// A value that starts on the line of its key or `-` (`in_list`), at `pos`, in a
    /// collection at `col`. Only a list item may be a compact mapping or list.
    fn inline(&mut self, col: usize, in_list: bool) -> Option<Node> {
        let pos = self.pos;
        let inner = pos - self.line_start(pos);
        if in_list && self.is_entry(pos) {
            return self.sequence(inner, false);
        }
        if in_list && self.key_colon(pos).is_some() {
            return self.mapping(inner);
        }
        let node = match self.at(pos) {
            b'|' | b'>' => return self.block_scalar(col),
            b'"' | b'\'' => self.quoted()?,
            b'[' | b'{' => self.flow()?,
            _ => self.plain_value()?,
        };
        self.end_of_line()?;
        Some(node)
    }

    /// A plain scalar node for `start..end`: null for the null forms.
    fn scalar(&mut self, start: usize, end: usize) -> Option<Node> {
        self.count_node()?;
        let text = &self.text[start..end];
        let kind = if matches!(text, "~" | "null" | "Null" | "NULL") {
            NodeKind::Null
        } else {
            self.text_node(text.to_owned(), false)?
        };
        Some(Node::new(self.span(start, end), kind))
    }

    /// A non-null scalar's kind, its text counted against the budget.
    fn text_node(&mut self, text: String, quoted: bool) -> Option<NodeKind> {
        self.scalar_bytes += text.len();
        (self.scalar_bytes <= self.max_bytes).then_some(NodeKind::Scalar { text, quoted })
    }

    /// A single- or double-quoted scalar on one line, at `pos`. Like saphyr's, its span
    /// runs on over the blanks and the comment after it; `pos` ends there.
    fn quoted(&mut self) -> Option<Node> {
        let start = self.pos;
        let (text, end) = scalars::quoted(self.text, start)?;
        let end = self.trailing_blanks(end);
        self.count_node()?;
        self.pos = end;
        let kind = self.text_node(text, true)?;
        Some(Node::new(self.span(start, end), kind))
    }

    /// `|` or `>` at `pos`, in a collection at `col`.
    fn block_scalar(&mut self, col: usize) -> Option<Node> {
        let block = scalars::block(self.text, self.pos, col)?;
        self.count_node()?;
        let kind = self.text_node(block.text, true)?;
        let node = Node::new(self.span(self.pos, block.end), kind);
        self.pos = block.next_line;
        self.next_line()?;
        Some(node)
    }

    /// Past the blanks after a token that ends at `end`, and past a comment after them:
    /// saphyr's end of a quoted scalar or a flow collection.
    fn trailing_blanks(&self, end: usize) -> usize {
        let mut pos = end;
        while self.at(pos) == b' ' {
            pos += 1;
        }
        if self.at(pos) == b'#' && pos > end {
            pos = self.line_end(pos);
        }
        pos
    }

    fn skip_spaces(&mut self) {
        while self.at(self.pos) == b' ' {
            self.pos += 1;
        }
    }
}
