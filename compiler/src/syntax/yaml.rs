//! YAML loader: `saphyr-parser` events to a span-keeping [`Node`] tree, under a [`Budget`].
//!
//! Decisions worth knowing:
//! - Only the first document of a stream is read. Everything after its end (a later `---`
//!   document) is ignored and not even scanned, so errors there are not reported.
//! - No schema is applied and tags are ignored: scalars stay text. Plain `~`, `null`, `Null`,
//!   `NULL` and empty values become [`NodeKind::Null`]. Merge keys (`<<`) are ordinary keys.
//! - An alias expands to a copy of the anchored node. The copy's root takes the span of the alias
//!   (`*name`), so "expected a mapping" points at the use; everything below it keeps the spans of
//!   the anchored original, so problems inside point at the definition.
//! - saphyr's markers count characters; [`CharOffsets`] turns them into byte offsets.
//! - Spans: a scalar covers its token without anchor or tag (quotes included; a block scalar from
//!   its `|`/`>` indicator to the end of its last content line); a flow collection runs from its
//!   opening to its closing bracket; a block collection from its first key or dash to the end of
//!   its last value.
//! - The tree is built with an explicit stack, never by recursion over the input, and the depth
//!   is checked at every collection start and alias, so deep nesting fails with
//!   `Code::ResourceLimit` long before any recursion (conversion, drop) could overflow the stack.
//!   Alias expansion is costed arithmetically (node count, height, text bytes) before anything is
//!   copied, so alias bombs fail fast without allocating.
//! - Plain block YAML, what nearly every config is, is first read by [`fast`], which gives the
//!   same tree several times faster or gives up (before anything is reported) on anything it
//!   does not fully understand, including every error; then saphyr reads the text.

use std::borrow::Cow;
use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span as YamlSpan};

use super::node::{
    describe_bytes, input_too_large, point_span, syntax_error, Budget, Node, NodeKind,
};
use crate::diagnostic::{Code, Diagnostic};
use crate::source::{FileId, Span};

mod fast;
#[cfg(test)]
mod fast_gen;
#[cfg(test)]
mod fast_tests;

/// Parses the first YAML document of `text` into a [`Node`] tree with byte spans into `text`.
///
/// An empty stream, or one holding only comments, gives a [`NodeKind::Null`] spanning the text.
pub fn parse(file: FileId, text: &str, budget: &Budget) -> Result<Node, Diagnostic> {
    if text.len() > budget.max_bytes {
        return Err(input_too_large(file, text, budget.max_bytes, "yaml"));
    }
    match fast::parse(file, text, budget) {
        Some(node) => Ok(node),
        None => parse_with_saphyr(file, text, budget),
    }
}

/// [`parse`] through saphyr's events, for any YAML (the size limit already checked).
fn parse_with_saphyr(file: FileId, text: &str, budget: &Budget) -> Result<Node, Diagnostic> {
    let mut builder = Builder {
        file,
        text,
        offsets: CharOffsets::new(text),
        budget,
        stack: Vec::new(),
        children: Vec::new(),
        anchors: HashMap::new(),
        root: None,
        nodes: 0,
        max_nodes: budget.document_nodes(text.len()),
        expanded: 0,
        bytes: 0,
        expansions: 0,
        last_end: 0,
    };
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|err| builder.scan_error(&err))?;
        if builder.event(event, span)? {
            break;
        }
    }
    Ok(builder.finish())
}

/// The cost of a subtree once every alias in it is expanded.
#[derive(Copy, Clone, Debug, Default)]
struct Stats {
    nodes: usize,
    /// Collection levels: 0 for a scalar, 1 for a list of scalars.
    height: usize,
    /// Scalar text bytes.
    bytes: usize,
}

impl Stats {
    fn add_child(&mut self, child: Stats) {
        self.nodes = self.nodes.saturating_add(child.nodes);
        self.height = self.height.max(child.height + 1);
        self.bytes = self.bytes.saturating_add(child.bytes);
    }
}

/// An open list or mapping. Its children wait on [`Builder::children`] from index `first`
/// (a mapping's alternate key, value) until it closes, when they move into a vector of
/// exactly their number: no vector per open collection grows by doubling, and the tree
/// keeps no spare capacity.
struct Frame {
    map: bool,
    start: usize,
    anchor: usize,
    first: usize,
    stats: Stats,
}

struct Builder<'a> {
    file: FileId,
    text: &'a str,
    offsets: CharOffsets<'a>,
    budget: &'a Budget,
    stack: Vec<Frame>,
    /// The finished children of every open collection, innermost last.
    children: Vec<Node>,
    /// Completed anchored nodes by saphyr's anchor id (unique per stream); an alias copies
    /// one after its cost is checked.
    anchors: HashMap<usize, (Node, Stats)>,
    root: Option<Node>,
    /// Nodes written in the document itself, and their budget.
    nodes: usize,
    max_nodes: usize,
    /// Nodes produced by alias expansion (budgeted by `Budget::max_nodes`).
    expanded: usize,
    /// Scalar text bytes so far, aliases expanded.
    bytes: usize,
    expansions: usize,
    /// Byte end of the previous event (to find a block scalar's indicator).
    last_end: usize,
}

impl Builder<'_> {
    /// Handles one event; true when the first document is complete.
    fn event(&mut self, event: Event<'_>, span: YamlSpan) -> Result<bool, Diagnostic> {
        let start = self.offsets.byte(span.start.index());
        let end = self.offsets.byte(span.end.index());
        let done = match event {
            Event::Nothing | Event::StreamStart | Event::DocumentStart(_) => false,
            Event::DocumentEnd | Event::StreamEnd => true,
            Event::Alias(id) => {
                self.alias(id, Span::new(self.file, start, end))?;
                false
            }
            Event::Scalar(value, style, anchor, tag) => {
                self.scalar(value, style, anchor, tag.is_some(), start, end)?;
                false
            }
            Event::SequenceStart(anchor, tag) => {
                self.open(false, anchor, tag.is_some(), start, end)?;
                false
            }
            Event::MappingStart(anchor, tag) => {
                self.open(true, anchor, tag.is_some(), start, end)?;
                false
            }
            Event::SequenceEnd | Event::MappingEnd => {
                self.close(start, end);
                false
            }
        };
        self.last_end = end;
        Ok(done)
    }

    fn scalar(
        &mut self,
        value: Cow<'_, str>,
        style: ScalarStyle,
        anchor: usize,
        has_tag: bool,
        start: usize,
        end: usize,
    ) -> Result<(), Diagnostic> {
        let (start, mut end) = self.scalar_bounds(style, anchor != 0 || has_tag, start, end);
        if value.is_empty() && style == ScalarStyle::Plain {
            // saphyr sometimes stretches an empty value over the next token or separator.
            end = start;
        }
        let span = Span::new(self.file, start, end);
        self.count_node(span)?;
        let is_null = style == ScalarStyle::Plain
            && matches!(value.as_ref(), "" | "~" | "null" | "Null" | "NULL");
        let len = value.len();
        let kind = if is_null {
            NodeKind::Null
        } else {
            self.bytes = self.bytes.saturating_add(len);
            if self.bytes > self.budget.max_bytes {
                return Err(self.limit(
                    format!(
                        "yaml text is larger than {}",
                        describe_bytes(self.budget.max_bytes)
                    ),
                    span,
                    "the limit is reached here",
                ));
            }
            // A copy of exactly the text's size: saphyr's own strings carry spare capacity
            // (32 bytes and up), and the tree lives through the whole compile. Moving them in
            // saves 5% of the instructions at 10,000 states but costs 25% more peak memory;
            // shrinking them in place costs both.
            NodeKind::Scalar {
                text: value.as_ref().to_owned(),
                quoted: style != ScalarStyle::Plain,
            }
        };
        let stats = Stats {
            nodes: 1,
            height: 0,
            bytes: len,
        };
        self.complete(Node { span, kind }, stats, anchor);
        Ok(())
    }

    fn open(
        &mut self,
        map: bool,
        anchor: usize,
        has_tag: bool,
        start: usize,
        end: usize,
    ) -> Result<(), Diagnostic> {
        let start = if anchor != 0 || has_tag {
            skip_properties(self.text, start, end)
        } else {
            start
        };
        let span = point_span(self.file, self.text, start);
        if self.stack.len() >= self.budget.max_depth {
            return Err(self.limit(
                format!(
                    "yaml nesting is deeper than {} levels",
                    self.budget.max_depth
                ),
                span,
                format!("level {} starts here", self.stack.len() + 1),
            ));
        }
        self.count_node(span)?;
        self.stack.push(Frame {
            map,
            start,
            anchor,
            first: self.children.len(),
            stats: Stats {
                nodes: 1,
                height: 1,
                bytes: 0,
            },
        });
        Ok(())
    }

    fn close(&mut self, start: usize, end: usize) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        // Flow collections end at their bracket; block ones get an empty end marker at the next
        // token (possibly lines further down), so they end with their last child instead.
        let end = if end > start {
            end
        } else {
            self.children
                .last()
                .filter(|_| self.children.len() > frame.first)
                .map_or(frame.start, |child| child.span.end as usize)
        };
        let span = Span::new(self.file, frame.start, end);
        let count = self.children.len() - frame.first;
        let file = self.file;
        let mut children = self.children.drain(frame.first..);
        let kind = if frame.map {
            let mut pairs = Vec::with_capacity(count.div_ceil(2));
            while let Some(key) = children.next() {
                let value = children.next().unwrap_or_else(|| {
                    let at = key.span.end as usize;
                    Node::new(Span::new(file, at, at), NodeKind::Null)
                });
                pairs.push((key, value));
            }
            NodeKind::Map(pairs)
        } else {
            let mut items = Vec::with_capacity(count);
            items.extend(children.by_ref());
            NodeKind::Seq(items)
        };
        drop(children);
        self.complete(Node { span, kind }, frame.stats, frame.anchor);
    }

    fn alias(&mut self, id: usize, span: Span) -> Result<(), Diagnostic> {
        let Some(&(_, stats)) = self.anchors.get(&id) else {
            // saphyr rejects unknown anchors, so this one is still open: the alias is inside it.
            let name = &self.text[span.start as usize..span.end as usize];
            return Err(Diagnostic::error(
                Code::SyntaxError,
                format!("invalid yaml: alias `{name}` is used inside the node it refers to"),
            )
            .with_label(span, "this alias would make the document infinite"));
        };
        self.expansions += 1;
        if self.expansions > self.budget.max_alias_expansions {
            return Err(self.limit(
                format!(
                    "yaml uses more than {} aliases",
                    self.budget.max_alias_expansions
                ),
                span,
                "the limit is reached here",
            ));
        }
        if self.stack.len() + stats.height > self.budget.max_depth {
            return Err(self.limit(
                format!(
                    "yaml nesting is deeper than {} levels",
                    self.budget.max_depth
                ),
                span,
                format!("this alias nests {} levels here", stats.height),
            ));
        }
        self.expanded = self.expanded.saturating_add(stats.nodes);
        if self.expanded > self.budget.max_nodes {
            return Err(self.limit(
                format!(
                    "yaml aliases expand to more than {} nodes",
                    self.budget.max_nodes
                ),
                span,
                format!("this alias expands to {} nodes", stats.nodes),
            ));
        }
        self.bytes = self.bytes.saturating_add(stats.bytes);
        if self.bytes > self.budget.max_bytes {
            return Err(self.limit(
                format!(
                    "yaml aliases expand to more than {} of text",
                    describe_bytes(self.budget.max_bytes)
                ),
                span,
                format!("this alias copies {}", describe_bytes(stats.bytes)),
            ));
        }
        // Checked above: the copy is within the budget.
        let kind = self.anchors[&id].0.kind.clone();
        self.complete(Node { span, kind }, stats, 0);
        Ok(())
    }

    /// Records an anchored node and hands a finished node to its parent (or makes it the root).
    fn complete(&mut self, node: Node, stats: Stats, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, (node.clone(), stats));
        }
        match self.stack.last_mut() {
            Some(frame) => {
                frame.stats.add_child(stats);
                self.children.push(node);
            }
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
        }
    }

    fn count_node(&mut self, span: Span) -> Result<(), Diagnostic> {
        self.nodes = self.nodes.saturating_add(1);
        if self.nodes > self.max_nodes {
            return Err(self.limit(
                format!("yaml document has more than {} nodes", self.max_nodes),
                span,
                "the limit is reached here",
            ));
        }
        Ok(())
    }

    fn limit(&self, message: String, span: Span, label: impl Into<String>) -> Diagnostic {
        Diagnostic::error(Code::ResourceLimit, message).with_label(span, label)
    }

    fn scan_error(&self, err: &ScanError) -> Diagnostic {
        let offset = self.offsets.byte(err.marker().index());
        let span = point_span(self.file, self.text, offset);
        if err.info() == "recursion limit exceeded" {
            // saphyr's own cap on flow nesting (255 levels); it can fire before our depth check
            // because the scanner reads ahead.
            let levels = self.budget.max_depth.min(usize::from(u8::MAX));
            return self.limit(
                format!("yaml nesting is deeper than {levels} levels"),
                span,
                "the limit is reached here",
            );
        }
        syntax_error("yaml", err.info(), span)
    }

    /// Byte bounds of a scalar token: anchor and tag skipped, block scalars from their indicator.
    fn scalar_bounds(
        &self,
        style: ScalarStyle,
        has_properties: bool,
        start: usize,
        end: usize,
    ) -> (usize, usize) {
        let mut start = start;
        let mut end = end;
        if has_properties {
            start = skip_properties(self.text, start, end);
        }
        if matches!(style, ScalarStyle::Literal | ScalarStyle::Folded) {
            let bytes = self.text.as_bytes();
            if !matches!(bytes.get(start), Some(b'|' | b'>')) {
                if let Some(indicator) = self.block_indicator(start) {
                    start = indicator;
                }
            }
            while end > start + 1 && matches!(bytes[end - 1], b' ' | b'\t' | b'\r' | b'\n') {
                end -= 1;
            }
        }
        (start, end.max(start))
    }

    /// The `|` or `>` that introduces the block scalar whose content starts at `content`: on the
    /// last non-blank line before the content line, after the previous token.
    fn block_indicator(&self, content: usize) -> Option<usize> {
        let text = self.text;
        let mut line_start = text[..content].rfind('\n').map_or(0, |idx| idx + 1);
        let header = loop {
            if line_start == 0 {
                return None;
            }
            let prev_start = text[..line_start - 1].rfind('\n').map_or(0, |idx| idx + 1);
            let line = prev_start..line_start - 1;
            if text[line.clone()].trim().is_empty() {
                line_start = prev_start;
            } else {
                break line;
            }
        };
        if self.last_end > header.end {
            return None;
        }
        let bytes = text.as_bytes();
        let mut pos = self.last_end.max(header.start);
        loop {
            match bytes.get(pos) {
                Some(b' ' | b'\t' | b'\r' | b':' | b'-' | b'?') => pos += 1,
                Some(b'&' | b'!') => pos = skip_properties(text, pos, header.end),
                Some(b'|' | b'>') if pos < header.end => return Some(pos),
                _ => return None,
            }
        }
    }

    fn finish(mut self) -> Node {
        let whole = Span::new(self.file, 0, self.text.len());
        match self.root.take() {
            None => Node::new(whole, NodeKind::Null),
            Some(mut node) => {
                if node.is_null() && node.span.is_empty() {
                    node.span = whole;
                }
                node
            }
        }
    }
}

/// Skips anchors (`&a`), tags (`!t`, `!!str`), white space and comments from `start`, up to `limit`.
fn skip_properties(text: &str, start: usize, limit: usize) -> usize {
    let bytes = text.as_bytes();
    let limit = limit.min(bytes.len());
    let mut pos = start;
    while pos < limit {
        match bytes[pos] {
            b' ' | b'\t' | b'\r' | b'\n' => pos += 1,
            b'#' if pos == start || matches!(bytes[pos - 1], b' ' | b'\t' | b'\r' | b'\n') => {
                while pos < limit && bytes[pos] != b'\n' {
                    pos += 1;
                }
            }
            b'&' | b'!' => {
                while pos < limit
                    && !matches!(
                        bytes[pos],
                        b' ' | b'\t' | b'\r' | b'\n' | b'[' | b']' | b'{' | b'}' | b','
                    )
                {
                    pos += 1;
                }
            }
            _ => break,
        }
    }
    pos
}

/// Character index to byte offset, for saphyr's character-counting markers: a checkpoint every
/// [`CharOffsets::STEP`] characters, then a short walk (identity for ASCII text).
struct CharOffsets<'a> {
    text: &'a str,
    ascii: bool,
    checkpoints: Vec<u32>,
}

impl<'a> CharOffsets<'a> {
    const STEP: usize = 64;

    fn new(text: &'a str) -> CharOffsets<'a> {
        let ascii = text.is_ascii();
        let checkpoints = if ascii {
            Vec::new()
        } else {
            text.char_indices()
                .step_by(Self::STEP)
                .map(|(offset, _)| offset as u32)
                .collect()
        };
        CharOffsets {
            text,
            ascii,
            checkpoints,
        }
    }

    fn byte(&self, chars: usize) -> usize {
        if self.ascii {
            return chars.min(self.text.len());
        }
        let Some(&base) = self.checkpoints.get(chars / Self::STEP) else {
            return self.text.len();
        };
        let base = base as usize;
        self.text[base..]
            .char_indices()
            .nth(chars % Self::STEP)
            .map_or(self.text.len(), |(offset, _)| base + offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceFile;
    use crate::Severity;
    use std::time::{Duration, Instant};

    fn load(text: &str) -> Node {
        match parse(FileId(0), text, &Budget::default()) {
            Ok(node) => node,
            Err(diag) => panic!("unexpected error {diag:?} for {text:?}"),
        }
    }

    fn fail(text: &str) -> Diagnostic {
        match parse(FileId(0), text, &Budget::default()) {
            Ok(node) => panic!("expected an error for {text:?}, got {node:?}"),
            Err(diag) => diag,
        }
    }

    fn slice<'t>(text: &'t str, node: &Node) -> &'t str {
        &text[node.span.start as usize..node.span.end as usize]
    }

    fn line_col(text: &str, offset: u32) -> (u32, u32) {
        let pos = SourceFile::new("t.yaml", "t.yaml", text).line_col(offset);
        (pos.line, pos.column)
    }

    fn scalar(node: &Node) -> (&str, bool) {
        match &node.kind {
            NodeKind::Scalar { text, quoted } => (text, *quoted),
            other => panic!("expected a scalar, found {other:?}"),
        }
    }

    #[test]
    fn char_offsets() {
        let text = "a→b".repeat(100);
        let offsets = CharOffsets::new(&text);
        for (chars, (bytes, _)) in text.char_indices().enumerate() {
            assert_eq!(offsets.byte(chars), bytes);
        }
        assert_eq!(offsets.byte(300), text.len());
        assert_eq!(offsets.byte(100_000), text.len());
        assert_eq!(CharOffsets::new("abc").byte(2), 2);
        assert_eq!(CharOffsets::new("abc").byte(9), 3);
    }

    #[test]
    fn spans_after_non_ascii_text() {
        let text = "title: a → b — c\nnote: \"é\"\nlist:\n  - ☃ x\n  - 'y'\n";
        let root = load(text);
        assert_eq!(root.kind_name(), "a mapping");
        assert_eq!(root.span.start, 0);
        let title = root.get("title").unwrap();
        assert_eq!(slice(text, title), "a → b — c");
        assert_eq!(scalar(title), ("a → b — c", false));
        let note = root.get("note").unwrap();
        assert_eq!(slice(text, note), "\"é\"");
        assert_eq!(scalar(note), ("é", true));
        assert_eq!(line_col(text, note.span.start), (2, 7));
        let (note_key, _) = &root.entries()[1];
        assert_eq!(slice(text, note_key), "note");
        assert_eq!(line_col(text, note_key.span.start), (2, 1));
        let list = root.get("list").unwrap();
        assert_eq!(slice(text, list), "- ☃ x\n  - 'y'");
        assert_eq!(slice(text, &list.items()[0]), "☃ x");
        assert_eq!(slice(text, &list.items()[1]), "'y'");
        assert_eq!(line_col(text, list.items()[1].span.start), (5, 5));
        assert_eq!(slice(text, &root), text.trim_end());
    }

    #[test]
    fn quoted_and_plain() {
        let root =
            load("a: true\nb: 'true'\nc: \"5\"\nd: 5\ne: |\n  block\nf: >-\n  folded\n  text\n");
        assert_eq!(scalar(root.get("a").unwrap()), ("true", false));
        assert_eq!(scalar(root.get("b").unwrap()), ("true", true));
        assert_eq!(scalar(root.get("c").unwrap()), ("5", true));
        assert_eq!(scalar(root.get("d").unwrap()), ("5", false));
        assert_eq!(scalar(root.get("e").unwrap()), ("block\n", true));
        assert_eq!(scalar(root.get("f").unwrap()), ("folded text", true));
    }

    #[test]
    fn block_scalar_spans() {
        let text = "e: |\n  block\n  two\n\n# c\nf: &x !t >- # note\n  folded\ng:\n- |\n  item\n";
        let root = load(text);
        assert_eq!(slice(text, root.get("e").unwrap()), "|\n  block\n  two");
        assert_eq!(slice(text, root.get("f").unwrap()), ">- # note\n  folded");
        assert_eq!(slice(text, &root.get("g").unwrap().items()[0]), "|\n  item");
        let text = "--- |2-\n  x\n";
        assert_eq!(slice(text, &load(text)), "|2-\n  x");
        let text = "a: |\n";
        let root = load(text);
        assert_eq!(scalar(root.get("a").unwrap()), ("", true));
        assert_eq!(slice(text, root.get("a").unwrap()), "|");
    }

    #[test]
    fn null_forms() {
        let text = "a: ~\nb: null\nc: Null\nd: NULL\ne:\nf: \"~\"\ng: 'null'\nh: nULL\n";
        let root = load(text);
        for key in ["a", "b", "c", "d", "e"] {
            assert!(root.get(key).unwrap().is_null(), "{key}");
        }
        assert_eq!(slice(text, root.get("a").unwrap()), "~");
        assert_eq!(scalar(root.get("f").unwrap()), ("~", true));
        assert_eq!(scalar(root.get("g").unwrap()), ("null", true));
        assert_eq!(scalar(root.get("h").unwrap()), ("nULL", false));
        let seq = load("- \n- ~\n-\n");
        assert_eq!(seq.items().len(), 3);
        assert!(seq.items().iter().all(Node::is_null));
    }

    #[test]
    fn empty_and_comment_only() {
        for text in [
            "",
            "# just a comment\n",
            "\n\n   \n",
            "---\n",
            "--- # c\n...\n",
        ] {
            let node = load(text);
            assert!(node.is_null(), "{text:?}");
            assert_eq!(node.span, Span::new(FileId(0), 0, text.len()), "{text:?}");
        }
    }

    #[test]
    fn first_document_only() {
        let root = load("a: 1\n---\nb: 2\n--- [unterminated\n");
        assert_eq!(root.entries().len(), 1);
        assert_eq!(root.get("a").and_then(Node::as_str), Some("1"));
        let root = load("--- x\n--- y\n");
        assert_eq!(root.as_str(), Some("x"));
    }

    #[test]
    fn duplicate_keys_are_kept() {
        let text = "a: 1\nb: 2\na: 3\n";
        let root = load(text);
        let keys: Vec<&str> = root
            .entries()
            .iter()
            .filter_map(|(key, _)| key.as_str())
            .collect();
        assert_eq!(keys, ["a", "b", "a"]);
        assert_eq!(root.get("a").and_then(Node::as_str), Some("1"));
        assert_eq!(line_col(text, root.entries()[2].0.span.start), (3, 1));
    }

    #[test]
    fn case_insensitive_lookup() {
        let root = load("Name: x\nname: y\n");
        assert_eq!(root.get_ci("NAME").and_then(Node::as_str), Some("x"));
        assert_eq!(root.get("name").and_then(Node::as_str), Some("y"));
    }

    #[test]
    fn flow_style() {
        let text = "{a: [{x: b}, {\"*\": ~}]}";
        let root = load(text);
        assert_eq!(slice(text, &root), text);
        let list = root.get("a").unwrap();
        assert_eq!(slice(text, list), "[{x: b}, {\"*\": ~}]");
        assert_eq!(list.items().len(), 2);
        assert_eq!(slice(text, &list.items()[0]), "{x: b}");
        assert_eq!(list.items()[0].get("x").and_then(Node::as_str), Some("b"));
        let (star, value) = &list.items()[1].entries()[0];
        assert_eq!(scalar(star), ("*", true));
        assert_eq!(slice(text, star), "\"*\"");
        assert!(value.is_null());
        let pairs = load("[a: b, c]");
        assert_eq!(pairs.items().len(), 2);
        assert_eq!(pairs.items()[0].get("a").and_then(Node::as_str), Some("b"));
        assert_eq!(load("{}").entries().len(), 0);
        assert_eq!(load("[]").kind_name(), "a list");
    }

    #[test]
    fn anchors_and_aliases() {
        let text = "base: &b {model: m, tags: [x, y]}\nuse: *b\nname: &n hello\nagain: *n\nnested:\n  - *b\n";
        let root = load(text);
        let base = root.get("base").unwrap();
        assert_eq!(slice(text, base), "{model: m, tags: [x, y]}");
        let used = root.get("use").unwrap();
        assert_eq!(
            used.kind, base.kind,
            "the copy keeps the original's spans inside"
        );
        assert_eq!(slice(text, used), "*b");
        assert_eq!(line_col(text, used.span.start), (2, 6));
        assert_eq!(slice(text, root.get("name").unwrap()), "hello");
        assert_eq!(root.get("again").and_then(Node::as_str), Some("hello"));
        assert_eq!(slice(text, root.get("again").unwrap()), "*n");
        let nested = &root.get("nested").unwrap().items()[0];
        assert_eq!(nested.get("model").and_then(Node::as_str), Some("m"));
        // Redefinition: an alias refers to the most recent anchor of that name.
        let root = load("a: &x 1\nb: &x 2\nc: *x\n");
        assert_eq!(root.get("c").and_then(Node::as_str), Some("2"));
        // Block collection with an anchor starts at its first key.
        let text = "k: &a\n  x: 1\nl: *a\n";
        let root = load(text);
        assert_eq!(slice(text, root.get("k").unwrap()), "x: 1");
        assert_eq!(
            root.get("l").unwrap().get("x").and_then(Node::as_str),
            Some("1")
        );
    }

    #[test]
    fn tags_are_ignored() {
        let text = "a: !!str 5\nb: !custom {x: 1}\n";
        let root = load(text);
        assert_eq!(scalar(root.get("a").unwrap()), ("5", false));
        assert_eq!(slice(text, root.get("a").unwrap()), "5");
        assert_eq!(slice(text, root.get("b").unwrap()), "{x: 1}");
    }

    #[test]
    fn recursive_alias_is_an_error() {
        let diag = fail("a: &x [1, *x]\n");
        assert_eq!(diag.code, Code::SyntaxError);
        assert!(diag.message.contains("`*x`"), "{}", diag.message);
        assert_eq!(diag.span(), Some(Span::new(FileId(0), 10, 12)));
    }

    #[test]
    fn alias_bomb_fails_fast() {
        let mut text = String::from("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for level in 1..=9 {
            let prev = level - 1;
            let refs = vec![format!("*l{prev}"); 9].join(", ");
            text.push_str(&format!("l{level}: &l{level} [{refs}]\n"));
        }
        let started = Instant::now();
        let diag = fail(&text);
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(diag.code, Code::ResourceLimit);
        assert_eq!(diag.severity, Severity::Error);
        assert_eq!(
            diag.message,
            "yaml aliases expand to more than 1000000 nodes"
        );
        let span = diag.span().unwrap();
        assert_eq!(&text[span.start as usize..span.end as usize], "*l5");
    }

    #[test]
    fn alias_count_and_text_limits() {
        let budget = Budget {
            max_alias_expansions: 3,
            ..Budget::default()
        };
        let diag = parse(FileId(0), "a: &a x\nb: [*a, *a, *a, *a]\n", &budget).unwrap_err();
        assert_eq!(diag.code, Code::ResourceLimit);
        assert_eq!(diag.message, "yaml uses more than 3 aliases");
        let budget = Budget {
            max_bytes: 100,
            ..Budget::default()
        };
        let text = format!("a: &a {}\nb: [*a, *a]\n", "x".repeat(40));
        let diag = parse(FileId(0), &text, &budget).unwrap_err();
        assert_eq!(
            diag.message,
            "yaml aliases expand to more than 100 bytes of text"
        );
        let diag = parse(FileId(0), &"x".repeat(101), &budget).unwrap_err();
        assert_eq!(diag.message, "yaml file is larger than 100 bytes");
        let budget = Budget {
            max_nodes: 5,
            ..Budget::default()
        };
        let diag = parse(FileId(0), "[1, 2, 3, 4, 5, 6]", &budget).unwrap_err();
        assert_eq!(diag.message, "yaml document has more than 5 nodes");
    }

    #[test]
    fn deep_nesting_fails_without_overflow() {
        let text = "[".repeat(100_000);
        let diag = fail(&text);
        assert_eq!(diag.code, Code::ResourceLimit);
        assert_eq!(diag.message, "yaml nesting is deeper than 64 levels");
        assert!(diag.span().unwrap().start <= 255);
        let text = "[".repeat(100);
        let diag = fail(&text);
        assert_eq!(diag.code, Code::ResourceLimit);
        assert_eq!(diag.span(), Some(Span::new(FileId(0), 64, 65)));
        // Exactly at the limit is fine.
        let text = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert_eq!(load(&text).kind_name(), "a list");
        // Block nesting.
        let mut text = String::new();
        for level in 0..100 {
            text.push_str(&" ".repeat(level));
            text.push_str("k:\n");
        }
        assert_eq!(fail(&text).code, Code::ResourceLimit);
        // Aliases that would nest too deep.
        let inner = format!("{}{}", "[".repeat(40), "]".repeat(40));
        let text = format!(
            "a: &a {inner}\nb: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n"
        );
        let diag = fail(&text);
        assert_eq!(diag.message, "yaml nesting is deeper than 64 levels");
    }

    #[test]
    fn syntax_errors_have_positions() {
        let text = "name: →x\na: b: c\n";
        let diag = fail(text);
        assert_eq!(diag.code, Code::SyntaxError);
        assert_eq!(diag.severity, Severity::Error);
        assert_eq!(
            diag.message,
            "invalid yaml: mapping values are not allowed in this context"
        );
        let span = diag.span().unwrap();
        assert_eq!(line_col(text, span.start), (2, 5));
        assert_eq!(&text[span.start as usize..span.end as usize], ":");

        let text = "a: \"unterminated\n";
        let diag = fail(text);
        assert!(
            diag.message.starts_with("invalid yaml: "),
            "{}",
            diag.message
        );
        assert_eq!(line_col(text, diag.span().unwrap().start), (1, 4));

        let diag = fail("a: *missing\n");
        assert_eq!(diag.code, Code::SyntaxError);
        assert_eq!(diag.span().unwrap().start, 3);
    }

    #[test]
    fn garbage_never_panics() {
        let inputs = [
            "*",
            "&",
            "!",
            "\"abc",
            "'abc",
            "{",
            "}",
            "[",
            "]",
            "- - -",
            "\tx: 1",
            "x:\t1",
            "a:\n\tb: 1",
            "? ",
            ": ",
            ",",
            "|",
            ">",
            "%",
            "@",
            "`",
            "---",
            "...",
            "--- ---",
            "{a: [}",
            "[a: {]",
            "a: b: c",
            "key: 'x' y",
            "- a\nb: c",
            "a:\n  - b\n c: d",
            "&a *a",
            "*a &a",
            "!!",
            "!<",
            "%YAML 2.0\n---",
            "%TAG ! x\n%TAG ! y\n---",
            "\u{feff}",
            "\u{feff}a: 1",
            "a: \u{0}",
            "\r\r\n\r",
            "a: |\n\tb",
            "? - a\n: - b",
            "[[[[[[[[[[",
            "{{{{{{{{",
            "{a: 1} }",
            "[1] ]",
            "a: [1, 2] x",
            "→: —",
            "\"\\u12\"",
            "\"\\xZZ\"",
            "a: !foo!bar x",
            "&anchor",
            "- &a\n- *a",
            "a: >\n b\n  c\nd",
        ];
        for input in inputs {
            let _ = parse(FileId(0), input, &Budget::default());
        }
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let alphabet: Vec<char> = "ab: -?[]{},&*!|>'\"#%\n\n  \t\\~→".chars().collect();
        for _ in 0..20_000 {
            let mut input = String::new();
            for _ in 0..(seed % 40) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                input.push(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            if let Ok(node) = parse(FileId(0), &input, &Budget::default()) {
                check_spans(&input, &node);
            }
        }
    }

    /// Every span lies inside the text, on character boundaries.
    fn check_spans(text: &str, node: &Node) {
        let (start, end) = (node.span.start as usize, node.span.end as usize);
        assert!(start <= end && end <= text.len(), "{text:?}: {node:?}");
        assert!(
            text.is_char_boundary(start) && text.is_char_boundary(end),
            "{text:?}: {node:?}"
        );
        for item in node.items() {
            check_spans(text, item);
        }
        for (key, value) in node.entries() {
            check_spans(text, key);
            check_spans(text, value);
        }
    }

    #[test]
    fn own_fixtures_and_shared_corpus_parse() {
        // The project's own fixtures always, and `../shared/corpus` beside the checkout when
        // it is there (the compiler crate is one level down), so this never passes on nothing.
        let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut dirs = vec![crate_dir.join("../fixtures/compile/ok")];
        let corpus = crate_dir.join("../../shared/corpus");
        if corpus.is_dir() {
            dirs.push(corpus);
        } else {
            eprintln!("skipped: ../shared/corpus is absent (only the project's fixtures parsed)");
        }
        let mut files = Vec::new();
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if matches!(
                    path.extension().and_then(|ext| ext.to_str()),
                    Some("yaml" | "yml" | "json")
                ) {
                    files.push(path);
                }
            }
        }
        files.sort();
        let mut failures = Vec::new();
        for path in &files {
            let Ok(text) = std::fs::read_to_string(path) else {
                continue;
            };
            let is_json = path.extension().is_some_and(|ext| ext == "json");
            let result = if is_json {
                super::super::json::parse(FileId(0), &text, &Budget::default())
            } else {
                parse(FileId(0), &text, &Budget::default())
            };
            match result {
                Ok(node) => check_spans(&text, &node),
                Err(diag) => failures.push(format!("{}: {}", path.display(), diag.message)),
            }
        }
        eprintln!("parsed {} files", files.len());
        assert!(
            files.len() >= 10,
            "expected the fixtures, found {} files",
            files.len()
        );
        assert!(failures.is_empty(), "{failures:#?}");
    }

    fn yaml_files(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                yaml_files(&path, files);
            } else if matches!(
                path.extension().and_then(|ext| ext.to_str()),
                Some("yaml" | "yml")
            ) {
                files.push(path);
            }
        }
    }

    /// The fast path against saphyr on every YAML file at hand (see `fast_tests`).
    #[test]
    fn every_config_at_hand_reads_the_same() {
        let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        yaml_files(&crate_dir.join("../fixtures"), &mut files);
        yaml_files(&crate_dir.join("../tests"), &mut files);
        yaml_files(&crate_dir.join("tests"), &mut files);
        let corpus = crate_dir.join("../../shared/corpus");
        if corpus.is_dir() {
            yaml_files(&corpus, &mut files);
        } else {
            eprintln!(
                "skipped: ../shared/corpus is absent (only the project's own files compared)"
            );
        }
        files.sort();
        let mut taken = 0;
        for path in &files {
            let Ok(text) = std::fs::read_to_string(path) else {
                continue;
            };
            if super::fast_tests::agree(&text, &Budget::default()) {
                taken += 1;
            }
            // Each file cut short at every third line: fresh ends inside its constructs.
            for (idx, _) in text.match_indices('\n').step_by(3) {
                super::fast_tests::agree(&text[..idx], &Budget::default());
            }
        }
        eprintln!("the fast path took {taken} of {} files", files.len());
        assert!(files.len() >= 10, "found only {} files", files.len());
        assert!(
            taken * 4 >= files.len(),
            "the fast path took only {taken} of {} files",
            files.len()
        );
    }
}
