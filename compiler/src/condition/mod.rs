//! The condition language: `verdict == 'approved' && !exists(review.blockers)`, parsed with the
//! pest grammar in `grammar/condition.pest` and lowered to [`Cond`].
//!
//! ```text
//! or      := and ("||" and)*
//! and     := unary ("&&" unary)*
//! unary   := "!"* (  "(" or ")"  |  contains(field, literal)  |  exists(field)
//!                 |  field ("==" | "!=") literal  |  literal ("==" | "!=") field  |  true | false )
//! field   := segment ("." segment)*          segment := [A-Za-z_][A-Za-z0-9_-]*  |  `any text`
//! literal := 'text' | "text" | -?[0-9]+(.[0-9]+)? | true | false | null
//! ```
//!
//! `last_agent` and `last_message` (bare, alone) are the built-in fields; every other path reads
//! the reply's JSON. `field == null` means `!exists(field)` and `field != null` means
//! `exists(field)`. `&&`/`||` chains flatten into one `And`/`Or`; parentheses keep their
//! structure, so `Cond`'s `Display` (the canonical form) reads back to an equal `Cond`.
//! Nothing pest-specific leaves this module: callers see [`Cond`] or a [`ConditionError`].

use std::fmt;
use std::ops::Range;

use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::Pair;
use pest::Parser as _;

use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{Cond, Field};
use crate::source::Span;

#[cfg(test)]
mod tests;

mod grammar {
    #[derive(pest_derive::Parser)]
    #[grammar = "../grammar/condition.pest"]
    pub(super) struct ConditionParser;
}

use grammar::{ConditionParser, Rule};

/// Deepest parenthesis nesting accepted (keeps the parser's and the tree's recursion bounded).
const MAX_PAREN_DEPTH: usize = 32;
/// Longest run of `!` accepted.
const MAX_NOT_RUN: usize = 16;

/// The grammar in one line, for help texts.
const GRAMMAR_HELP: &str = "a condition is `field == 'value'`, `field != 'value'`, \
`contains(field, 'text')` or `exists(field)`, combined with `&&`, `||`, `!` and parentheses; \
fields are `last_agent`, `last_message` or a JSON path like `review.verdict`";

/// A syntax error in a condition string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionError {
    /// Byte offset of the offending token in the condition text.
    pub offset: usize,
    /// Byte length of the offending token (0 at the end of the text).
    pub len: usize,
    /// Lowercase, no trailing period, code in backticks.
    pub message: String,
}

impl ConditionError {
    fn new(offset: usize, len: usize, message: impl Into<String>) -> ConditionError {
        ConditionError {
            offset,
            len,
            message: message.into(),
        }
    }

    /// An `FR310` error; `span` covers the whole condition text in the source.
    pub fn to_diagnostic(&self, span: Span) -> Diagnostic {
        let start = self.offset.min(span.len());
        let end = self
            .offset
            .saturating_add(self.len)
            .clamp(start, span.len());
        Diagnostic::error(
            Code::ConditionSyntax,
            format!("invalid condition: {}", self.message),
        )
        .with_label(span.sub(start, end), self.message.clone())
        .with_help(GRAMMAR_HELP)
    }
}

impl fmt::Display for ConditionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

impl std::error::Error for ConditionError {}

/// Parses the string form of a routing condition.
pub fn parse(text: &str) -> Result<Cond, ConditionError> {
    check_nesting(text)?;
    let pairs = ConditionParser::parse(Rule::condition, text)
        .map_err(|error| syntax_error(text, &error))?;
    let or_expr = pairs
        .flat_map(|condition| condition.into_inner())
        .find(|pair| pair.as_rule() == Rule::or_expr)
        .ok_or_else(|| internal(0))?;
    lower_or(or_expr)
}

// ---------------------------------------------------------------------------------------------
// Lowering pest pairs to `Cond`.

type Result<T, E = ConditionError> = std::result::Result<T, E>;

fn internal(offset: usize) -> ConditionError {
    ConditionError::new(offset, 0, "internal error: unexpected condition parse tree")
}

fn start(pair: &Pair<'_, Rule>) -> usize {
    pair.as_span().start()
}

fn lower_or(pair: Pair<'_, Rule>) -> Result<Cond> {
    let offset = start(&pair);
    let mut items = Vec::new();
    for child in pair.into_inner() {
        if child.as_rule() == Rule::and_expr {
            items.push(lower_and(child)?);
        }
    }
    junction(items, Cond::Or, offset)
}

fn lower_and(pair: Pair<'_, Rule>) -> Result<Cond> {
    let offset = start(&pair);
    let mut items = Vec::new();
    for child in pair.into_inner() {
        if child.as_rule() == Rule::unary {
            items.push(lower_unary(child)?);
        }
    }
    junction(items, Cond::And, offset)
}

/// One operand stays itself; two or more make one flat `And`/`Or`.
fn junction(mut items: Vec<Cond>, make: fn(Vec<Cond>) -> Cond, offset: usize) -> Result<Cond> {
    match items.len() {
        0 => Err(internal(offset)),
        1 => Ok(items.remove(0)),
        _ => Ok(make(items)),
    }
}

fn lower_unary(pair: Pair<'_, Rule>) -> Result<Cond> {
    let offset = start(&pair);
    let mut nots = 0;
    let mut operand = None;
    for child in pair.into_inner() {
        match child.as_rule() {
            Rule::not_op => nots += 1,
            _ => operand = Some(lower_primary(child)?),
        }
    }
    let mut cond = operand.ok_or_else(|| internal(offset))?;
    for _ in 0..nots {
        cond = Cond::Not(Box::new(cond));
    }
    Ok(cond)
}

fn lower_primary(pair: Pair<'_, Rule>) -> Result<Cond> {
    let offset = start(&pair);
    match pair.as_rule() {
        Rule::group => {
            let inner = pair
                .into_inner()
                .find(|child| child.as_rule() == Rule::or_expr)
                .ok_or_else(|| internal(offset))?;
            lower_or(inner)
        }
        Rule::contains => {
            let (field, literal) = field_and_literal(pair)?;
            let (literal, range) = literal.ok_or_else(|| internal(offset))?;
            match literal {
                Literal::Text(text) => Ok(Cond::Contains(field, text)),
                Literal::Null => Err(ConditionError::new(
                    range.start,
                    range.len(),
                    "`contains(…)` needs text or a number, not `null`",
                )),
            }
        }
        Rule::exists => {
            let (field, _) = field_and_literal(pair)?;
            Ok(Cond::Exists(field))
        }
        Rule::comparison => {
            let negated = pair
                .clone()
                .into_inner()
                .find(|child| child.as_rule() == Rule::cmp_op)
                .map(|op| op.as_str() == "!=")
                .ok_or_else(|| internal(offset))?;
            let (field, literal) = field_and_literal(pair)?;
            let (literal, _) = literal.ok_or_else(|| internal(offset))?;
            Ok(match (literal, negated) {
                (Literal::Text(text), false) => Cond::Eq(field, text),
                (Literal::Text(text), true) => Cond::Ne(field, text),
                (Literal::Null, false) => Cond::Not(Box::new(Cond::Exists(field))),
                (Literal::Null, true) => Cond::Exists(field),
            })
        }
        Rule::constant => {
            let is_true = pair
                .into_inner()
                .any(|child| child.as_rule() == Rule::true_kw);
            Ok(if is_true {
                Cond::And(Vec::new())
            } else {
                Cond::Or(Vec::new())
            })
        }
        _ => Err(internal(offset)),
    }
}

enum Literal {
    Text(String),
    Null,
}

/// A literal and its byte range in the condition text.
type SpannedLiteral = (Literal, Range<usize>);

/// The field and (if any) the literal among a node's children, in whatever order they come.
fn field_and_literal(pair: Pair<'_, Rule>) -> Result<(Field, Option<SpannedLiteral>)> {
    let offset = start(&pair);
    let mut field = None;
    let mut literal = None;
    for child in pair.into_inner() {
        match child.as_rule() {
            Rule::field => field = Some(lower_field(child)?),
            Rule::literal => {
                let range = child.as_span().start()..child.as_span().end();
                literal = Some((lower_literal(child)?, range));
            }
            _ => {}
        }
    }
    Ok((field.ok_or_else(|| internal(offset))?, literal))
}

fn lower_field(pair: Pair<'_, Rule>) -> Result<Field> {
    let offset = start(&pair);
    let mut segments = Vec::new();
    let mut quoted = false;
    for child in pair.into_inner() {
        match child.as_rule() {
            Rule::ident => segments.push(child.as_str().to_string()),
            Rule::quoted_segment => {
                quoted = true;
                let inner = child.into_inner().next().ok_or_else(|| internal(offset))?;
                segments.push(unescape(inner.as_str(), start(&inner))?);
            }
            _ => {}
        }
    }
    if segments.is_empty() {
        return Err(internal(offset));
    }
    Ok(match (segments.as_slice(), quoted) {
        ([only], false) if only == "last_agent" => Field::LastAgent,
        ([only], false) if only == "last_message" => Field::LastMessage,
        _ => Field::Json(segments),
    })
}

fn lower_literal(pair: Pair<'_, Rule>) -> Result<Literal> {
    let offset = start(&pair);
    let value = pair.into_inner().next().ok_or_else(|| internal(offset))?;
    match value.as_rule() {
        Rule::string => {
            let inner = value.into_inner().next().ok_or_else(|| internal(offset))?;
            Ok(Literal::Text(unescape(inner.as_str(), start(&inner))?))
        }
        Rule::number | Rule::true_kw | Rule::false_kw => {
            Ok(Literal::Text(value.as_str().to_string()))
        }
        Rule::null_kw => Ok(Literal::Null),
        _ => Err(internal(offset)),
    }
}

/// Resolves backslash escapes; `base` is the byte offset of `raw` in the condition text.
fn unescape(raw: &str, base: usize) -> Result<String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.char_indices().peekable();
    while let Some((at, ch)) = chars.next() {
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        let Some((_, escaped)) = chars.next() else {
            return Err(ConditionError::new(base + at, 1, "unterminated escape"));
        };
        match escaped {
            '\\' | '\'' | '"' | '`' => out.push(escaped),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'u' => {
                let mut digits = String::new();
                let mut end = at + 2;
                let mut closed = false;
                if chars.next_if(|&(_, c)| c == '{').is_some() {
                    end += 1;
                    while let Some((i, c)) = chars.next_if(|&(_, c)| c.is_ascii_hexdigit() || c == '}') {
                        end = i + 1;
                        if c == '}' {
                            closed = true;
                            break;
                        }
                        digits.push(c);
                    }
                }
                let decoded = if closed && (1..=6).contains(&digits.len()) {
                    u32::from_str_radix(&digits, 16).ok().and_then(char::from_u32)
                } else {
                    None
                };
                match decoded {
                    Some(c) => out.push(c),
                    None => {
                        return Err(ConditionError::new(
                            base + at,
                            end - at,
                            "invalid unicode escape: write `\\u{…}` with 1 to 6 hex digits of a valid code point",
                        ))
                    }
                }
            }
            other => {
                return Err(ConditionError::new(
                    base + at,
                    1 + other.len_utf8(),
                    format!(
                        "unknown escape `\\{other}`: use `\\\\`, `\\'`, `\\\"`, `\\n`, `\\t`, `\\r` or `\\u{{…}}`"
                    ),
                ))
            }
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Errors: pest's failures translated to words, pointing at the offending token.

/// Rejects nesting deep enough to threaten the stack before pest or the lowering recurse.
fn check_nesting(text: &str) -> Result<()> {
    let mut depth = 0usize;
    let mut not_run = 0usize;
    let mut at = 0;
    while at < text.len() {
        let token = token_at(text, at);
        match token.kind {
            TokenKind::End => break,
            TokenKind::Space => {}
            TokenKind::Other if &text[token.start..token.end] == "(" => {
                depth += 1;
                not_run = 0;
                if depth > MAX_PAREN_DEPTH {
                    return Err(ConditionError::new(
                        token.start,
                        1,
                        format!("parentheses nested more than {MAX_PAREN_DEPTH} deep"),
                    ));
                }
            }
            TokenKind::Other if &text[token.start..token.end] == ")" => {
                depth = depth.saturating_sub(1);
                not_run = 0;
            }
            TokenKind::Op if text[token.start..token.end].bytes().all(|b| b == b'!') => {
                not_run += token.end - token.start;
                if not_run > MAX_NOT_RUN {
                    return Err(ConditionError::new(
                        token.start,
                        token.end - token.start,
                        format!("more than {MAX_NOT_RUN} `!` in a row"),
                    ));
                }
            }
            _ => not_run = 0,
        }
        at = token.end.max(at + 1);
    }
    Ok(())
}

/// What the parser wanted at the failure position, in the order messages list them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Expected {
    Operand,
    Field,
    Value,
    CmpOp,
    LParen,
    Comma,
    RParen,
    AndOp,
    OrOp,
    End,
}

impl Expected {
    fn of(rule: Rule) -> Option<Expected> {
        Some(match rule {
            Rule::condition
            | Rule::or_expr
            | Rule::and_expr
            | Rule::unary
            | Rule::group
            | Rule::contains
            | Rule::exists
            | Rule::comparison
            | Rule::constant
            | Rule::not_op
            | Rule::contains_kw
            | Rule::exists_kw => Expected::Operand,
            Rule::field | Rule::ident | Rule::quoted_segment | Rule::quoted_inner => {
                Expected::Field
            }
            Rule::literal
            | Rule::string
            | Rule::sq_inner
            | Rule::dq_inner
            | Rule::number
            | Rule::true_kw
            | Rule::false_kw
            | Rule::null_kw => Expected::Value,
            Rule::cmp_op => Expected::CmpOp,
            Rule::lparen => Expected::LParen,
            Rule::comma => Expected::Comma,
            Rule::rparen => Expected::RParen,
            Rule::and_op => Expected::AndOp,
            Rule::or_op => Expected::OrOp,
            Rule::EOI => Expected::End,
            _ => return None,
        })
    }

    /// The alternatives this stands for, each one item of an "a, b or c" list.
    fn phrases(self) -> &'static [&'static str] {
        match self {
            Expected::Operand => &["a comparison", "`contains(…)`", "`exists(…)`"],
            Expected::Field => &["a field name"],
            Expected::Value => &["a value (a quoted string, a number, `true`, `false` or `null`)"],
            Expected::CmpOp => &["`==`", "`!=`"],
            Expected::LParen => &["`(`"],
            Expected::Comma => &["`,` and the text to look for"],
            Expected::RParen => &["`)`"],
            Expected::AndOp => &["`&&`"],
            Expected::OrOp => &["`||`"],
            Expected::End => &["the end of the condition"],
        }
    }
}

fn syntax_error(text: &str, error: &pest::error::Error<Rule>) -> ConditionError {
    let offset = match error.location {
        InputLocation::Pos(pos) => pos,
        InputLocation::Span((start, _)) => start,
    }
    .min(text.len());
    let mut expected: Vec<Expected> = match &error.variant {
        ErrorVariant::ParsingError { positives, .. } => positives
            .iter()
            .filter_map(|rule| Expected::of(*rule))
            .collect(),
        ErrorVariant::CustomError { message } => {
            return ConditionError::new(offset, 0, format!("condition too complex ({message})"))
        }
    };
    expected.sort();
    expected.dedup();
    if expected.contains(&Expected::Operand) {
        // An operand may start with a field, a literal or `(`; "a comparison" covers them.
        expected.retain(|e| !matches!(e, Expected::Field | Expected::Value | Expected::LParen));
    }
    if expected.is_empty() {
        expected.push(Expected::Operand);
    }
    describe_failure(text, offset, &expected)
}

fn describe_failure(text: &str, offset: usize, expected: &[Expected]) -> ConditionError {
    let found = token_at(text, offset);
    let found_text = &text[found.start..found.end];
    let at_found =
        |message: String| ConditionError::new(found.start, found.end - found.start, message);
    let wants = |e: Expected| expected.contains(&e);

    match found.kind {
        TokenKind::Str { terminated: false } => {
            return at_found("unterminated string literal".into())
        }
        TokenKind::Backquoted { terminated: false } => {
            return at_found("unterminated backquoted field name".into())
        }
        _ => {}
    }
    if text.trim().is_empty() {
        return ConditionError::new(
            offset,
            0,
            format!("empty condition: expected {}", list(&[Expected::Operand])),
        );
    }
    if (wants(Expected::Operand) || wants(Expected::Field))
        && found.kind == TokenKind::Other
        && found_text.chars().all(char::is_alphanumeric)
    {
        // A field name with letters outside ASCII: take the whole word for the advice.
        let rest = &text[found.start..];
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-')))
            .unwrap_or(rest.len());
        let word = &rest[..len];
        return ConditionError::new(
            found.start,
            len,
            format!("field names with characters other than ASCII letters, digits, `_` and `-` must be backquoted: `` `{word}` ``"),
        );
    }
    if wants(Expected::CmpOp) {
        if let Some(message) = comparison_hint(text, offset, &found, found_text) {
            return message;
        }
    }
    if wants(Expected::AndOp) || wants(Expected::OrOp) {
        let lower = found_text.to_ascii_lowercase();
        let replacement = match (found.kind, lower.as_str()) {
            (TokenKind::Word, "and") | (TokenKind::Op, "&") => Some("&&"),
            (TokenKind::Word, "or") | (TokenKind::Op, "|") => Some("||"),
            _ => None,
        };
        if let Some(replacement) = replacement {
            return at_found(format!("use `{replacement}` instead of `{found_text}`"));
        }
        if found_text == ")" && !wants(Expected::RParen) {
            return at_found("unexpected `)`: there is no `(` to close".into());
        }
    }
    let mut message = format!(
        "expected {}, found {}",
        list(expected),
        describe(&found, found_text)
    );
    if wants(Expected::Value)
        && found.kind == TokenKind::Word
        && !found_text.starts_with(|c: char| c.is_ascii_digit() || c == '-')
    {
        message.push_str(&format!("; quote text like `'{found_text}'`"));
    }
    at_found(message)
}

/// Targeted advice where a comparison operator was expected.
fn comparison_hint(
    text: &str,
    offset: usize,
    found: &Token,
    found_text: &str,
) -> Option<ConditionError> {
    let at_found =
        |message: String| ConditionError::new(found.start, found.end - found.start, message);
    if found.kind == TokenKind::Op {
        return match found_text {
            "=" | "===" => Some(at_found("use `==` for comparison".into())),
            "<>" => Some(at_found("use `!=` for comparison".into())),
            "<" | ">" | "<=" | ">=" | "=<" | "=>" => Some(at_found(format!(
                "`{found_text}` is not supported: conditions compare text with `==` and `!=`"
            ))),
            _ => None,
        };
    }
    let previous = previous_word(text, offset);
    if let Some((start, end)) = previous {
        let word = &text[start..end];
        if word.eq_ignore_ascii_case("not") && found.kind != TokenKind::End {
            return Some(ConditionError::new(
                start,
                end - start,
                "use `!` instead of `not`",
            ));
        }
        if found_text == "(" {
            return Some(ConditionError::new(
                start,
                end - start,
                format!(
                    "unknown function `{word}`: use `contains(field, 'text')` or `exists(field)`"
                ),
            ));
        }
    }
    if found.kind == TokenKind::Word && found_text == "contains" {
        return Some(at_found(
            "write `contains(field, 'text')` to test for a substring".into(),
        ));
    }
    None
}

fn list(expected: &[Expected]) -> String {
    let phrases: Vec<&str> = expected.iter().flat_map(|e| e.phrases()).copied().collect();
    match phrases.as_slice() {
        [] => String::new(),
        [only] => (*only).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

fn describe(token: &Token, text: &str) -> String {
    match token.kind {
        TokenKind::End => "the end of the condition".to_string(),
        TokenKind::Space => "whitespace".to_string(),
        _ => {
            const MAX: usize = 24;
            if text.chars().count() <= MAX {
                format!("`{text}`")
            } else {
                let head: String = text.chars().take(MAX - 4).collect();
                format!("`{head}…`")
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A rough tokenizer, used only to find what the parser tripped over.

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum TokenKind {
    End,
    Space,
    Str { terminated: bool },
    Backquoted { terminated: bool },
    Word,
    Op,
    Other,
}

#[derive(Copy, Clone, Debug)]
struct Token {
    start: usize,
    end: usize,
    kind: TokenKind,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

fn is_op_char(c: char) -> bool {
    matches!(c, '=' | '!' | '<' | '>' | '&' | '|')
}

/// The token starting at byte `start` (which must be a char boundary or the end).
fn token_at(text: &str, start: usize) -> Token {
    let Some(rest) = text.get(start..) else {
        return Token {
            start: text.len(),
            end: text.len(),
            kind: TokenKind::End,
        };
    };
    let Some(first) = rest.chars().next() else {
        return Token {
            start,
            end: start,
            kind: TokenKind::End,
        };
    };
    let run = |pred: fn(char) -> bool| start + rest.find(|c: char| !pred(c)).unwrap_or(rest.len());
    let (end, kind) = match first {
        c if c.is_whitespace() => (run(char::is_whitespace), TokenKind::Space),
        '\'' | '"' | '`' => {
            let mut escaped = false;
            let mut close = None;
            for (i, c) in rest.char_indices().skip(1) {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == first {
                    close = Some(start + i + 1);
                    break;
                }
            }
            let terminated = close.is_some();
            let end = close.unwrap_or(text.len());
            if first == '`' {
                (end, TokenKind::Backquoted { terminated })
            } else {
                (end, TokenKind::Str { terminated })
            }
        }
        c if is_word_char(c) => (run(is_word_char), TokenKind::Word),
        c if is_op_char(c) => (run(is_op_char), TokenKind::Op),
        c => (start + c.len_utf8(), TokenKind::Other),
    };
    Token { start, end, kind }
}

/// The word (identifier-like run) just before `offset`, skipping whitespace.
fn previous_word(text: &str, offset: usize) -> Option<(usize, usize)> {
    let before = text.get(..offset)?.trim_end();
    let end = before.len();
    let start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| !is_word_char(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    (start < end).then_some((start, end))
}
