//! The line matcher behind `grep_file` and `search_content`: an untrusted pattern compiled
//! with ripgrep's `grep-regex` under size limits, and its matching lines (with context)
//! found by `grep-searcher` in bytes already read through the sandbox.
//!
//! Security decisions:
//! - A pattern is untrusted model input: it is refused when longer than
//!   [`MAX_PATTERN_BYTES`], nested deeper than 64 groups, or when its compiled program or
//!   lazy DFA would pass 1 MiB each; the refusal is an `[ERROR]` result naming the problem.
//!   The regex engine runs in time linear in the text (no backtracking).
//! - Files holding a NUL byte are binary and never searched (ripgrep's rule); a line is
//!   shown up to [`MAX_LINE_CHARS`] characters.

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};

use super::Outcome;

/// The longest pattern accepted, in bytes.
pub(crate) const MAX_PATTERN_BYTES: usize = 4096;
/// The most characters of one line shown.
pub(crate) const MAX_LINE_CHARS: usize = 400;
/// The compiled size allowed to a pattern (program and lazy DFA each), in bytes.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Compiles an untrusted pattern, or says why not in `tool`'s words.
pub(crate) fn compile(
    tool: &str,
    pattern: &str,
    case_sensitive: bool,
) -> Result<RegexMatcher, Outcome> {
    if pattern.is_empty() {
        return Err(Outcome::error(format!("{tool}: the pattern is empty")));
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(Outcome::error(format!(
            "{tool}: the pattern is {} bytes, longer than the {MAX_PATTERN_BYTES} allowed",
            pattern.len()
        )));
    }
    RegexMatcherBuilder::new()
        .case_insensitive(!case_sensitive)
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .nest_limit(64)
        .build(pattern)
        .map_err(|error| {
            let reason = error.to_string();
            let reason = reason.trim();
            Outcome::error(format!("{tool}: invalid regex `{pattern}`: {reason}"))
        })
}

/// Whether `bytes` look binary (hold a NUL byte).
pub(crate) fn is_binary(bytes: &[u8]) -> bool {
    bytes.contains(&0)
}

/// A line of a search's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// A matching line (`matched`) or a context line, numbered from 1.
    Line {
        number: u64,
        text: String,
        matched: bool,
    },
    /// A gap between two groups of lines.
    Break,
}

/// The matching lines of `bytes` with `context` lines before and after each, at most
/// `max_matches` matches; and the number of matches found.
pub(crate) fn find(
    matcher: &RegexMatcher,
    bytes: &[u8],
    context: usize,
    max_matches: u64,
) -> (Vec<Piece>, u64) {
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .max_matches(Some(max_matches))
        .build();
    let mut sink = Collect::default();
    // Searching a slice cannot fail: the sink never errs and there is no reader.
    let _ = searcher.search_slice(matcher, bytes, &mut sink);
    (sink.pieces, sink.matches)
}

#[derive(Default)]
struct Collect {
    pieces: Vec<Piece>,
    matches: u64,
}

impl Collect {
    fn push(&mut self, number: Option<u64>, bytes: &[u8], matched: bool) {
        self.pieces.push(Piece::Line {
            number: number.unwrap_or(0),
            text: shown_line(bytes),
            matched,
        });
    }
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        self.matches += 1;
        self.push(found.line_number(), found.bytes(), true);
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, line: &SinkContext<'_>) -> Result<bool, std::io::Error> {
        self.push(line.line_number(), line.bytes(), false);
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, std::io::Error> {
        self.pieces.push(Piece::Break);
        Ok(true)
    }
}

/// A line as shown: without its terminator, invalid UTF-8 replaced, at most
/// [`MAX_LINE_CHARS`] characters.
fn shown_line(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{} [line truncated]", &text[..cut]),
        None => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_lines_and_breaks_surround_matches() {
        let matcher =
            compile("grep_file", "needle", false).unwrap_or_else(|o| panic!("{}", o.text));
        let text = b"a\nNeedle one\nb\nc\nd\ne\nneedle two\nf\n";
        let (pieces, matches) = find(&matcher, text, 1, 10);
        assert_eq!(matches, 2);
        let line = |number, text: &str, matched| Piece::Line {
            number,
            text: text.to_string(),
            matched,
        };
        assert_eq!(
            pieces,
            [
                line(1, "a", false),
                line(2, "Needle one", true),
                line(3, "b", false),
                Piece::Break,
                line(6, "e", false),
                line(7, "needle two", true),
                line(8, "f", false),
            ]
        );
        let (_, capped) = find(&matcher, text, 0, 1);
        assert_eq!(capped, 1);
    }

    #[test]
    fn bad_and_huge_patterns_are_refused_with_a_reason() {
        let bad = compile("search_content", "fn (", true)
            .err()
            .map(|o| o.text);
        assert!(
            bad.as_deref()
                .is_some_and(|t| t.starts_with("[ERROR] search_content: invalid regex `fn (`")),
            "{bad:?}"
        );
        let huge = compile("search_content", "\\w{1000}\\w{1000}\\w{1000}", true)
            .err()
            .map(|o| o.text);
        assert!(
            huge.as_deref().is_some_and(|t| t.contains("invalid regex")),
            "{huge:?}"
        );
        let long = "a".repeat(MAX_PATTERN_BYTES + 1);
        let long = compile("search_content", &long, true).err().map(|o| o.text);
        assert!(
            long.as_deref().is_some_and(|t| t.contains("longer than")),
            "{long:?}"
        );
        let deep = format!("{}a{}", "(".repeat(100), ")".repeat(100));
        assert!(compile("grep_file", &deep, true).is_err());
        assert!(compile("grep_file", "", true).is_err());
    }
}
