//! Strict JSON loader (RFC 8259) into the same span-keeping [`Node`] tree as YAML.
//!
//! Hand-written recursive descent; the recursion depth is checked against
//! [`Budget::max_depth`] before every descent, so deep nesting fails cleanly. Numbers keep their
//! source text, `true`/`false` are plain scalars, `null` is [`NodeKind::Null`], strings and keys
//! are quoted scalars whose spans include the quotes. Comments, trailing commas and anything after
//! the value are errors; a leading byte order mark is skipped.

use super::node::{input_too_large, point_span, syntax_error, Budget, Node, NodeKind};
use crate::diagnostic::{Code, Diagnostic};
use crate::source::{FileId, Span};

/// Parses `text` as one JSON value into a [`Node`] tree with byte spans into `text`.
pub fn parse(file: FileId, text: &str, budget: &Budget) -> Result<Node, Diagnostic> {
    if text.len() > budget.max_bytes {
        return Err(input_too_large(file, text, budget.max_bytes, "json"));
    }
    let mut parser = JsonParser {
        file,
        text,
        bytes: text.as_bytes(),
        pos: 0,
        budget,
        depth: 0,
        nodes: 0,
    };
    if text.starts_with('\u{feff}') {
        parser.pos = '\u{feff}'.len_utf8();
    }
    parser.skip_whitespace();
    let node = parser.value()?;
    parser.skip_whitespace();
    if parser.pos < parser.bytes.len() {
        return Err(parser.unexpected("the end of input after the value"));
    }
    Ok(node)
}

struct JsonParser<'a> {
    file: FileId,
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    budget: &'a Budget,
    depth: usize,
    nodes: usize,
}

impl JsonParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn span(&self, start: usize) -> Span {
        Span::new(self.file, start, self.pos)
    }

    fn value(&mut self) -> Result<Node, Diagnostic> {
        match self.peek() {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => {
                let start = self.pos;
                self.count_node(start)?;
                let text = self.string()?;
                Ok(Node::new(
                    self.span(start),
                    NodeKind::Scalar { text, quoted: true },
                ))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't' | b'f' | b'n') => self.literal(),
            _ => Err(self.unexpected("a value")),
        }
    }

    fn literal(&mut self) -> Result<Node, Diagnostic> {
        let start = self.pos;
        let word_end = self.word_end();
        let kind = match &self.text[start..word_end] {
            "null" => NodeKind::Null,
            word @ ("true" | "false") => NodeKind::Scalar {
                text: word.to_string(),
                quoted: false,
            },
            _ => return Err(self.unexpected("a value")),
        };
        self.count_node(start)?;
        self.pos = word_end;
        Ok(Node::new(self.span(start), kind))
    }

    /// The end of the run of ASCII letters, digits and `_` at the current position.
    fn word_end(&self) -> usize {
        let mut end = self.pos;
        while self
            .bytes
            .get(end)
            .is_some_and(|byte| byte.is_ascii_alphanumeric() || *byte == b'_')
        {
            end += 1;
        }
        end
    }

    fn number(&mut self) -> Result<Node, Diagnostic> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if self.peek().is_some_and(|byte| byte.is_ascii_digit()) {
                    return Err(self.error_at(start, "numbers cannot have leading zeros"));
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.unexpected("a digit after `-`")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !self.peek().is_some_and(|byte| byte.is_ascii_digit()) {
                return Err(self.unexpected("a digit after the decimal point"));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !self.peek().is_some_and(|byte| byte.is_ascii_digit()) {
                return Err(self.unexpected("a digit in the exponent"));
            }
            self.digits();
        }
        self.count_node(start)?;
        Ok(Node::new(
            self.span(start),
            NodeKind::Scalar {
                text: self.text[start..self.pos].to_string(),
                quoted: false,
            },
        ))
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|byte| byte.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    /// A string starting at the current `"`; returns its decoded text.
    fn string(&mut self) -> Result<String, Diagnostic> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            while self
                .peek()
                .is_some_and(|byte| byte != b'"' && byte != b'\\' && byte >= 0x20)
            {
                self.pos += 1;
            }
            out.push_str(&self.text[run_start..self.pos]);
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => out.push(self.escape()?),
                Some(_) => return Err(self.error_at(
                    self.pos,
                    "control characters must be escaped in strings (use `\\n`, `\\t` or `\\u00XX`)",
                )),
                None => {
                    return Err(syntax_error(
                        "json",
                        "unterminated string",
                        Span::new(self.file, start, start + 1),
                    ))
                }
            }
        }
    }

    /// One escape sequence starting at the current `\`.
    fn escape(&mut self) -> Result<char, Diagnostic> {
        let start = self.pos;
        self.pos += 1;
        let Some(byte) = self.peek() else {
            return Err(self.unexpected("an escape sequence"));
        };
        self.pos += 1;
        let ch = match (byte, short_escape(byte)) {
            (_, Some(ch)) => ch,
            (b'u', None) => {
                let first = self.hex4(start)?;
                match first {
                    0xD800..=0xDBFF => {
                        if self.bytes[self.pos..].starts_with(b"\\u") {
                            self.pos += 2;
                            let second = self.hex4(start)?;
                            if (0xDC00..=0xDFFF).contains(&second) {
                                let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                                char::from_u32(code).unwrap_or('\u{fffd}')
                            } else {
                                return Err(self.lone_surrogate(start, first));
                            }
                        } else {
                            return Err(self.lone_surrogate(start, first));
                        }
                    }
                    0xDC00..=0xDFFF => return Err(self.lone_surrogate(start, first)),
                    _ => char::from_u32(first).unwrap_or('\u{fffd}'),
                }
            }
            _ => {
                let end = (start + 1..=self.bytes.len())
                    .find(|&end| end > start + 1 && self.text.is_char_boundary(end))
                    .unwrap_or(self.bytes.len());
                let escape = &self.text[start..end];
                return Err(syntax_error(
                    "json",
                    &format!("invalid escape `{escape}` in string"),
                    Span::new(self.file, start, end),
                ));
            }
        };
        Ok(ch)
    }

    /// Four hex digits of a `\u` escape that started at `escape_start`.
    fn hex4(&mut self, escape_start: usize) -> Result<u32, Diagnostic> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .filter(|digits| digits.iter().all(u8::is_ascii_hexdigit));
        let Some(digits) = digits else {
            let mut end = self.pos;
            while end < self.pos + 4 && self.bytes.get(end).is_some_and(u8::is_ascii_hexdigit) {
                end += 1;
            }
            return Err(syntax_error(
                "json",
                "`\\u` must be followed by four hex digits",
                Span::new(self.file, escape_start, end),
            ));
        };
        let value = digits.iter().fold(0u32, |acc, digit| {
            acc * 16 + (*digit as char).to_digit(16).unwrap_or(0)
        });
        self.pos += 4;
        Ok(value)
    }

    fn lone_surrogate(&self, start: usize, code: u32) -> Diagnostic {
        syntax_error(
            "json",
            &format!("unpaired surrogate `\\u{code:04x}` in string"),
            Span::new(self.file, start, start + 6),
        )
    }

    fn array(&mut self) -> Result<Node, Diagnostic> {
        let start = self.pos;
        self.enter(start)?;
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
        } else {
            loop {
                self.skip_whitespace();
                items.push(self.value()?);
                self.skip_whitespace();
                match self.peek() {
                    Some(b',') => {
                        let comma = self.pos;
                        self.pos += 1;
                        self.skip_whitespace();
                        if self.peek() == Some(b']') {
                            return Err(self.trailing_comma(comma));
                        }
                    }
                    Some(b']') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.unexpected("`,` or `]` after a list item")),
                }
            }
        }
        self.depth -= 1;
        Ok(Node::new(self.span(start), NodeKind::Seq(items)))
    }

    fn object(&mut self) -> Result<Node, Diagnostic> {
        let start = self.pos;
        self.enter(start)?;
        self.pos += 1;
        let mut entries = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.skip_whitespace();
                if self.peek() != Some(b'"') {
                    return Err(self.unexpected("a string key"));
                }
                let key = self.value()?;
                self.skip_whitespace();
                if self.peek() != Some(b':') {
                    return Err(self.unexpected("`:` after an object key"));
                }
                self.pos += 1;
                self.skip_whitespace();
                let value = self.value()?;
                entries.push((key, value));
                self.skip_whitespace();
                match self.peek() {
                    Some(b',') => {
                        let comma = self.pos;
                        self.pos += 1;
                        self.skip_whitespace();
                        if self.peek() == Some(b'}') {
                            return Err(self.trailing_comma(comma));
                        }
                    }
                    Some(b'}') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.unexpected("`,` or `}` after an object member")),
                }
            }
        }
        self.depth -= 1;
        Ok(Node::new(self.span(start), NodeKind::Map(entries)))
    }

    /// Enters a list or object at `start`, enforcing the depth and node budgets.
    fn enter(&mut self, start: usize) -> Result<(), Diagnostic> {
        if self.depth >= self.budget.max_depth {
            return Err(Diagnostic::error(
                Code::ResourceLimit,
                format!(
                    "json nesting is deeper than {} levels",
                    self.budget.max_depth
                ),
            )
            .with_label(
                point_span(self.file, self.text, start),
                format!("level {} starts here", self.depth + 1),
            ));
        }
        self.count_node(start)?;
        self.depth += 1;
        Ok(())
    }

    fn count_node(&mut self, start: usize) -> Result<(), Diagnostic> {
        self.nodes += 1;
        let max_nodes = self.budget.document_nodes(self.text.len());
        if self.nodes > max_nodes {
            return Err(Diagnostic::error(
                Code::ResourceLimit,
                format!("json document has more than {max_nodes} nodes"),
            )
            .with_label(
                point_span(self.file, self.text, start),
                "the limit is reached here",
            ));
        }
        Ok(())
    }

    fn trailing_comma(&self, comma: usize) -> Diagnostic {
        syntax_error(
            "json",
            "trailing commas are not allowed",
            Span::new(self.file, comma, comma + 1),
        )
    }

    fn error_at(&self, offset: usize, message: &str) -> Diagnostic {
        syntax_error("json", message, point_span(self.file, self.text, offset))
    }

    /// `expected <what>`, labelled with what was found at the current position.
    fn unexpected(&self, what: &str) -> Diagnostic {
        let rest = &self.bytes[self.pos..];
        if rest.starts_with(b"//") || rest.starts_with(b"/*") {
            return syntax_error(
                "json",
                "comments are not allowed",
                Span::new(self.file, self.pos, self.pos + 2),
            );
        }
        let Some(ch) = self.text[self.pos..].chars().next() else {
            return Diagnostic::error(Code::SyntaxError, format!("invalid json: expected {what}"))
                .with_label(self.span(self.pos), "the input ends here");
        };
        let word_end = self.word_end();
        let (found, end) = if word_end > self.pos {
            let end = word_end.min(self.pos + 24);
            (&self.text[self.pos..end], end)
        } else {
            let end = self.pos + ch.len_utf8();
            (&self.text[self.pos..end], end)
        };
        let found = match ch {
            '\n' | '\r' | '\t' => format!("{:?}", ch),
            _ => format!("`{found}`"),
        };
        Diagnostic::error(Code::SyntaxError, format!("invalid json: expected {what}")).with_label(
            Span::new(self.file, self.pos, end),
            format!("found {found}"),
        )
    }
}

/// The character a two-byte JSON escape `\` + `byte` stands for (`\"`, `\\`, `\/`, `\b`,
/// `\f`, `\n`, `\r`, `\t`); `None` for `u` (four hex digits follow) and for any other byte.
/// The VM's stream reader has its own copy (`json_string::short_escape`, tested equal).
pub fn short_escape(byte: u8) -> Option<char> {
    Some(match byte {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceFile;
    use crate::Severity;

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

    fn slice(text: &str, span: Span) -> &str {
        &text[span.start as usize..span.end as usize]
    }

    fn scalar(node: &Node) -> (&str, bool) {
        match &node.kind {
            NodeKind::Scalar { text, quoted } => (text, *quoted),
            other => panic!("expected a scalar, found {other:?}"),
        }
    }

    #[test]
    fn values_and_spans() {
        let text = "{\"title\": \"a → b\", \"n\": -1.5e+3, \"ok\": true, \"no\": false, \"z\": null,\n \"list\": [1, \"é\", {}], \"—\": 0}";
        let root = load(text);
        assert_eq!(slice(text, root.span), text);
        let title = root.get("title").unwrap();
        assert_eq!(scalar(title), ("a → b", true));
        assert_eq!(slice(text, title.span), "\"a → b\"");
        let (key, _) = &root.entries()[0];
        assert_eq!(scalar(key), ("title", true));
        assert_eq!(slice(text, key.span), "\"title\"");
        assert_eq!(scalar(root.get("n").unwrap()), ("-1.5e+3", false));
        assert_eq!(scalar(root.get("ok").unwrap()), ("true", false));
        assert_eq!(scalar(root.get("no").unwrap()), ("false", false));
        assert!(root.get("z").unwrap().is_null());
        assert_eq!(slice(text, root.get("z").unwrap().span), "null");
        let list = root.get("list").unwrap();
        assert_eq!(slice(text, list.span), "[1, \"é\", {}]");
        assert_eq!(slice(text, list.items()[1].span), "\"é\"");
        let file = SourceFile::new("t.json", "t.json", text);
        let pos = file.line_col(list.items()[2].span.start);
        assert_eq!((pos.line, pos.column), (2, 19));
        let dash = root.get("—").unwrap();
        assert_eq!(slice(text, dash.span), "0");
        assert_eq!(load("  \"x\"  ").as_str(), Some("x"));
        assert_eq!(load("\u{feff}[]").kind_name(), "a list");
    }

    #[test]
    fn duplicate_keys_are_kept() {
        let root = load(r#"{"a": 1, "a": 2}"#);
        assert_eq!(root.entries().len(), 2);
        assert_eq!(root.get("a").and_then(Node::as_str), Some("1"));
    }

    #[test]
    fn escapes() {
        let root =
            load(r#"["\"\\\/\b\f\n\r\t", "\u0041\u00e9\u2192", "\ud83d\ude00", "a\u0000b"]"#);
        let texts: Vec<&str> = root.items().iter().filter_map(Node::as_str).collect();
        assert_eq!(texts, ["\"\\/\u{8}\u{c}\n\r\t", "Aé→", "😀", "a\0b"]);
        let diag = fail(r#""\ud83d""#);
        assert_eq!(
            diag.message,
            "invalid json: unpaired surrogate `\\ud83d` in string"
        );
        assert_eq!(diag.span(), Some(Span::new(FileId(0), 1, 7)));
        assert_eq!(fail(r#""\ude00x""#).code, Code::SyntaxError);
        assert_eq!(fail(r#""\ud83d\u0041""#).code, Code::SyntaxError);
        let diag = fail(r#""\q""#);
        assert_eq!(diag.message, "invalid json: invalid escape `\\q` in string");
        let diag = fail(r#""\u12x4""#);
        assert_eq!(
            diag.message,
            "invalid json: `\\u` must be followed by four hex digits"
        );
        assert_eq!(
            fail("\"\\é\"").message,
            "invalid json: invalid escape `\\é` in string"
        );
        assert!(fail("\"a\nb\"").message.contains("control characters"));
        let diag = fail("[\"abc");
        assert_eq!(diag.message, "invalid json: unterminated string");
        assert_eq!(diag.span(), Some(Span::new(FileId(0), 1, 2)));
        assert_eq!(fail("\"\\").code, Code::SyntaxError);
    }

    #[test]
    fn syntax_errors() {
        let cases: &[(&str, &str, u32)] = &[
            (
                "{\"a\": 1 \"b\": 2}",
                "invalid json: expected `,` or `}` after an object member",
                8,
            ),
            (
                "[1 2]",
                "invalid json: expected `,` or `]` after a list item",
                3,
            ),
            (
                "{\"a\" 1}",
                "invalid json: expected `:` after an object key",
                5,
            ),
            ("{a: 1}", "invalid json: expected a string key", 1),
            ("[1,]", "invalid json: trailing commas are not allowed", 2),
            (
                "{\"a\": 1,\n}",
                "invalid json: trailing commas are not allowed",
                7,
            ),
            ("// c\n{}", "invalid json: comments are not allowed", 0),
            ("{} /* c */", "invalid json: comments are not allowed", 3),
            (
                "{} x",
                "invalid json: expected the end of input after the value",
                3,
            ),
            (
                "[1] ]",
                "invalid json: expected the end of input after the value",
                4,
            ),
            ("", "invalid json: expected a value", 0),
            ("   ", "invalid json: expected a value", 3),
            ("[", "invalid json: expected a value", 1),
            ("{", "invalid json: expected a string key", 1),
            ("True", "invalid json: expected a value", 0),
            ("nul", "invalid json: expected a value", 0),
            ("[nullx]", "invalid json: expected a value", 1),
            ("01", "invalid json: numbers cannot have leading zeros", 0),
            ("-", "invalid json: expected a digit after `-`", 1),
            (
                "1.",
                "invalid json: expected a digit after the decimal point",
                2,
            ),
            ("1e+", "invalid json: expected a digit in the exponent", 3),
            ("'x'", "invalid json: expected a value", 0),
            ("[→]", "invalid json: expected a value", 1),
        ];
        for (text, message, offset) in cases {
            let diag = fail(text);
            assert_eq!(diag.code, Code::SyntaxError, "{text:?}");
            assert_eq!(diag.severity, Severity::Error);
            assert_eq!(&diag.message, message, "{text:?}");
            assert_eq!(
                diag.span().map(|span| span.start),
                Some(*offset),
                "{text:?}"
            );
        }
        let diag = fail("{\"a\": 1 \"b\": 2}");
        assert_eq!(diag.labels[0].message, "found `\"`");
        assert_eq!(fail("True").labels[0].message, "found `True`");
        assert_eq!(fail("[").labels[0].message, "the input ends here");
    }

    #[test]
    fn budgets() {
        let diag = fail(&"[".repeat(100_000));
        assert_eq!(diag.code, Code::ResourceLimit);
        assert_eq!(diag.message, "json nesting is deeper than 64 levels");
        assert_eq!(diag.span(), Some(Span::new(FileId(0), 64, 65)));
        let ok = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert_eq!(load(&ok).kind_name(), "a list");
        let deep_objects = "{\"a\":".repeat(65) + "1" + &"}".repeat(65);
        assert_eq!(fail(&deep_objects).code, Code::ResourceLimit);
        let budget = Budget {
            max_nodes: 3,
            ..Budget::default()
        };
        let diag = parse(FileId(0), "[1, 2, 3]", &budget).unwrap_err();
        assert_eq!(diag.message, "json document has more than 3 nodes");
        assert_eq!(diag.span(), Some(Span::new(FileId(0), 7, 8)));
        let budget = Budget {
            max_bytes: 4,
            ..Budget::default()
        };
        let diag = parse(FileId(0), "[1, 2]", &budget).unwrap_err();
        assert_eq!(diag.code, Code::ResourceLimit);
        assert_eq!(diag.message, "json file is larger than 4 bytes");
    }

    #[test]
    fn garbage_never_panics() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let alphabet: Vec<char> = "{}[]:,\"\\/*ufnrt0123-+.eE \n\tlsaé→".chars().collect();
        for _ in 0..50_000 {
            let mut input = String::new();
            for _ in 0..(seed % 30) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                input.push(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            match parse(FileId(0), &input, &Budget::default()) {
                Ok(node) => {
                    assert!(node.span.end as usize <= input.len());
                    assert!(
                        serde_json::from_str::<serde_json::Value>(&input).is_ok(),
                        "{input:?} is invalid json"
                    );
                    if let Ok(value) = serde_json::from_str::<serde_json::Value>(&input) {
                        assert_eq!(value.is_null(), node.is_null(), "{input:?}");
                    }
                }
                Err(diag) => {
                    let span = diag.span().unwrap();
                    assert!(span.end as usize <= input.len(), "{input:?}");
                    assert!(
                        input.is_char_boundary(span.start as usize)
                            && input.is_char_boundary(span.end as usize)
                    );
                    assert!(
                        serde_json::from_str::<serde_json::Value>(&input).is_err(),
                        "{input:?} is valid json: {diag:?}"
                    );
                }
            }
        }
    }
}
