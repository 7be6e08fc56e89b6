//! # FR305 `invalid-regex`
//!
//! ## What it does
//! Compiles every regular expression of the config with the engine fuseraft runs them on
//! (Rust's `regex` crate, case-insensitive): `Termination.Pattern` (at any depth of a
//! composite) and `Validation.TestAssertionPatterns`. The caret points at the offending
//! part *inside* the pattern. The Rust engine has no look-around and no backreferences,
//! which .NET patterns written for upstream sometimes use. A `Termination` pattern that
//! does not compile is an error of the compilation itself, so `fuseraft compile` and
//! `fuseraft exec` refuse the config too.
//!
//! ## Why is this bad?
//! The failure would otherwise appear at the first turn, after the first paid model call,
//! or the termination would silently never fire and the run go on until its budget.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!   Termination:
//!     Type: regex
//!     Pattern: "(?<!NOT )APPROVED"
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!   Termination:
//!     Type: regex
//!     Pattern: "^APPROVED$"
//! ```

use super::super::context::{value_sub_span, Ctx};
use crate::diagnostic::{Code, Diagnostic};
use crate::source::{SourceMap, Span};
use crate::syntax::fields::Spanned;
use crate::syntax::fuseraft::TerminationDecl;

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    // Termination patterns are compiled (and reported) by the lowering: an invalid one is a
    // compile error, since the run would otherwise never stop on it.
    for (pattern, what) in patterns(ctx) {
        if what == TERMINATION {
            continue;
        }
        if let Some(diag) = compile_error(ctx.sources, &pattern, what) {
            found.push(diag);
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}

/// Every regex of the config with what it is for.
pub(crate) fn patterns(ctx: &Ctx<'_>) -> Vec<(Spanned<String>, &'static str)> {
    let mut out = Vec::new();
    let Some(config) = ctx.config else { return out };
    if let Some(termination) = &config.termination {
        termination_patterns(termination, &mut out);
    }
    if let Some((_, list)) = config
        .settings
        .iter()
        .find(|(key, _)| key == "Validation.TestAssertionPatterns")
    {
        let text = &ctx.sources.get(list.span.file).text;
        let raw = text
            .get(list.span.start as usize..list.span.end as usize)
            .unwrap_or("");
        let mut cursor = 0;
        for pattern in list.value.split('\n').filter(|p| !p.is_empty()) {
            // Find each item's own scalar in the written list to point inside it.
            let span = match raw[cursor..]
                .find(pattern)
                .or_else(|| find_quoted(&raw[cursor..], pattern))
            {
                Some(at) => {
                    let start = list.span.start as usize + cursor + at;
                    let end = scalar_end(text, start);
                    // Past the first character of this item (a char boundary).
                    cursor += at + raw[cursor + at..].chars().next().map_or(1, char::len_utf8);
                    Span::new(list.span.file, start, end)
                }
                None => list.span,
            };
            out.push((
                Spanned::new(pattern.to_string(), span),
                "test assertion pattern",
            ));
        }
    }
    out
}

fn termination_patterns(decl: &TerminationDecl, out: &mut Vec<(Spanned<String>, &'static str)>) {
    if let Some(pattern) = &decl.pattern {
        out.push((pattern.clone(), TERMINATION));
    }
    for child in &decl.strategies {
        termination_patterns(child, out);
    }
}

/// The start of a quoted item: `"` or `'` just before the first escaped-looking match.
fn find_quoted(raw: &str, pattern: &str) -> Option<usize> {
    let first = pattern.chars().next()?;
    raw.find(['"', '\''])
        .filter(|at| raw[*at + 1..].starts_with(first))
}

/// The end of the scalar starting at `start` (a quoted string, or to the end of the line).
fn scalar_end(text: &str, start: usize) -> usize {
    let rest = &text[start..];
    match rest.chars().next() {
        Some(quote @ ('"' | '\'')) => {
            let mut escaped = false;
            for (idx, ch) in rest.char_indices().skip(1) {
                if ch == quote && !escaped {
                    return start + idx + 1;
                }
                escaped = quote == '"' && ch == '\\' && !escaped;
            }
            text.len()
        }
        _ => {
            start
                + rest
                    .find(['\n', ',', ']'])
                    .unwrap_or(rest.len())
                    .min(rest.len())
        }
    }
}

const TERMINATION: &str = "termination pattern";

/// The diagnostic for a pattern that does not compile (with Rust's `regex`,
/// case-insensitive), pointing inside it; `None` when it compiles. Also used by the lowering
/// of `Termination` patterns.
pub(crate) fn compile_error(
    sources: &SourceMap,
    pattern: &Spanned<String>,
    what: &str,
) -> Option<Diagnostic> {
    let parsed = regex_syntax::ParserBuilder::new()
        .case_insensitive(true)
        .build()
        .parse(&pattern.value);
    let (message, range) = match parsed {
        Ok(_) => match regex::RegexBuilder::new(&pattern.value)
            .case_insensitive(true)
            .build()
        {
            Ok(_) => return None,
            Err(error) => (first_line(&error.to_string()), None),
        },
        Err(regex_syntax::Error::Parse(error)) => {
            let span = error.span();
            (
                error.kind().to_string(),
                Some((span.start.offset, span.end.offset)),
            )
        }
        Err(regex_syntax::Error::Translate(error)) => {
            let span = error.span();
            (
                error.kind().to_string(),
                Some((span.start.offset, span.end.offset)),
            )
        }
        Err(error) => (first_line(&error.to_string()), None),
    };
    let span = match range {
        Some((start, end)) => {
            let end = if end <= start {
                pattern.value[start..]
                    .chars()
                    .next()
                    .map_or(start, |ch| start + ch.len_utf8())
            } else {
                end
            };
            value_sub_span(sources, pattern.span, &pattern.value, start, end)
        }
        None => pattern.span,
    };
    let hint = if message.contains("look-around") {
        "the Rust regex engine has no look-around; match the positive form (for example `^APPROVED$` on its own line)"
    } else if message.contains("backreference") {
        "the Rust regex engine has no backreferences; repeat the group instead"
    } else {
        "fix the pattern; it is compiled case-insensitively with Rust's `regex` crate"
    };
    Some(
        Diagnostic::error(
            Code::InvalidRegex,
            format!("{what} `{}` does not compile: {message}", pattern.value),
        )
        .with_label(span, message)
        .with_help(hint),
    )
}

fn first_line(text: &str) -> String {
    text.lines()
        .last()
        .unwrap_or(text)
        .trim()
        .trim_start_matches("error: ")
        .to_string()
}
