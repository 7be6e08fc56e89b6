//! One-line flow collections for the YAML fast path: a list of plain or quoted scalars
//! (`[a, "b c", 'd']`, `[]`) or an empty mapping (`{}`). Nesting, a `:`, a comment, a
//! trailing comma or a line break inside is left to saphyr.

use super::super::super::node::{Node, NodeKind};
use super::keys::starts_plain;
use super::Reader;

impl Reader<'_> {
    /// A flow list of scalars on one line, or an empty flow mapping, at `pos`.
    pub(super) fn flow(&mut self) -> Option<Node> {
        let start = self.pos;
        self.open()?;
        let open = self.at(start);
        self.pos += 1;
        self.skip_spaces();
        let kind = if open == b'{' {
            if self.at(self.pos) != b'}' {
                return None;
            }
            NodeKind::Map(Vec::new())
        } else {
            let first = self.items.len();
            while self.at(self.pos) != b']' {
                let item = match self.at(self.pos) {
                    b'"' | b'\'' => self.quoted()?,
                    _ => self.flow_plain()?,
                };
                self.items.push(item);
                self.skip_spaces();
                match self.at(self.pos) {
                    b']' => {}
                    b',' => {
                        self.pos += 1;
                        self.skip_spaces();
                        // A trailing comma is saphyr's to judge.
                        if self.at(self.pos) == b']' {
                            return None;
                        }
                    }
                    _ => return None,
                }
            }
            let mut items = Vec::with_capacity(self.items.len() - first);
            items.extend(self.items.drain(first..));
            NodeKind::Seq(items)
        };
        self.pos = self.trailing_blanks(self.pos + 1);
        self.depth -= 1;
        Some(Node::new(self.span(start, self.pos), kind))
    }

    /// A plain scalar inside a flow list: up to `,` or `]`, no `:`, `#` or brackets.
    fn flow_plain(&mut self) -> Option<Node> {
        let start = self.pos;
        if !starts_plain(self.at(start), self.at(start + 1)) {
            return None;
        }
        let mut end = start;
        loop {
            match self.at(end) {
                b',' | b']' => break,
                b':' | b'#' | b'[' | b'{' | b'}' | b'\n' | 0 => return None,
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
