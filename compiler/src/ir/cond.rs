//! Routing conditions: one type for upstream's `Condition` objects and the string form.
//!
//! `Condition: { Field: verdict, Is: approved }` and `verdict == 'approved'` lower to the same
//! [`Cond`]. Comparisons ignore case, as upstream's evaluator does.

use std::fmt;

/// A condition over the newest reply and the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cond {
    /// `field == 'v'` / `Is: v`: present and equal ignoring case (absent is false).
    Eq(Field, String),
    /// `field != 'v'` / `IsNot: v`: absent or different ignoring case (absent is true).
    Ne(Field, String),
    /// `contains(field, 'v')` / `Contains: v`: present and contains `v` ignoring case.
    Contains(Field, String),
    /// `exists(field)` / `Exists: true`: present and not null.
    Exists(Field),
    Not(Box<Cond>),
    And(Vec<Cond>),
    Or(Vec<Cond>),
}

/// What a condition reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    /// `last_agent`: the name of the agent that wrote the newest reply.
    LastAgent,
    /// `last_message`: the newest reply's text.
    LastMessage,
    /// A dot path into the JSON object extracted from the newest reply (`review.verdict`).
    Json(Vec<String>),
}

/// A literal a field is compared with, kept as text (upstream compares rendered text).
pub type Value = String;

/// The canonical string form, which `condition::parse` reads back to an equal [`Cond`]:
/// strings single-quoted, `&&` inside `||` bare, every other nested `&&`/`||` parenthesised,
/// comparisons parenthesised under `!`. The empty `&&` prints `true` and the empty `||` prints
/// `false`; a one-operand `&&`/`||` prints as its operand (same meaning, not the same tree).
impl fmt::Display for Cond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_cond(self, Context::Top, f)
    }
}

/// `last_agent`, `last_message` or a dot path; segments that are not plain identifiers (and a
/// lone segment spelled like a built-in field) are backquoted. The empty path prints `$`,
/// which has no string form.
impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::LastAgent => f.write_str("last_agent"),
            Field::LastMessage => f.write_str("last_message"),
            Field::Json(segments) if segments.is_empty() => f.write_str("$"),
            Field::Json(segments) => {
                let lone = segments.len() == 1;
                for (idx, segment) in segments.iter().enumerate() {
                    if idx > 0 {
                        f.write_str(".")?;
                    }
                    let builtin = lone && (segment == "last_agent" || segment == "last_message");
                    if is_plain_segment(segment) && !builtin {
                        f.write_str(segment)?;
                    } else {
                        write_quoted(segment, '`', f)?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// Where a condition is printed, which decides whether it needs parentheses.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Context {
    Top,
    OrOperand,
    AndOperand,
    NotOperand,
}

fn write_cond(cond: &Cond, ctx: Context, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match cond {
        Cond::Eq(field, value) | Cond::Ne(field, value) => {
            let op = if matches!(cond, Cond::Eq(..)) {
                "=="
            } else {
                "!="
            };
            let parens = ctx == Context::NotOperand;
            if parens {
                f.write_str("(")?;
            }
            write!(f, "{field} {op} ")?;
            write_quoted(value, '\'', f)?;
            if parens {
                f.write_str(")")?;
            }
            Ok(())
        }
        Cond::Contains(field, value) => {
            write!(f, "contains({field}, ")?;
            write_quoted(value, '\'', f)?;
            f.write_str(")")
        }
        Cond::Exists(field) => write!(f, "exists({field})"),
        Cond::Not(inner) => {
            f.write_str("!")?;
            write_cond(inner, Context::NotOperand, f)
        }
        Cond::And(items) => {
            let parens = matches!(ctx, Context::AndOperand | Context::NotOperand);
            write_junction(items, " && ", "true", Context::AndOperand, ctx, parens, f)
        }
        Cond::Or(items) => {
            let parens = ctx != Context::Top;
            write_junction(items, " || ", "false", Context::OrOperand, ctx, parens, f)
        }
    }
}

fn write_junction(
    items: &[Cond],
    separator: &str,
    empty: &str,
    inner: Context,
    outer: Context,
    parens: bool,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    match items {
        [] => f.write_str(empty),
        [only] => write_cond(only, outer, f),
        _ => {
            if parens {
                f.write_str("(")?;
            }
            for (idx, item) in items.iter().enumerate() {
                if idx > 0 {
                    f.write_str(separator)?;
                }
                write_cond(item, inner, f)?;
            }
            if parens {
                f.write_str(")")?;
            }
            Ok(())
        }
    }
}

/// `[A-Za-z_][A-Za-z0-9_-]*` and not one of the literal keywords.
fn is_plain_segment(segment: &str) -> bool {
    let mut chars = segment.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    starts_well
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !matches!(segment, "true" | "false" | "null")
}

/// `text` between `quote`s with `\\`, `\<quote>`, `\n`, `\t`, `\r` and `\u{…}` escapes.
fn write_quoted(text: &str, quote: char, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use fmt::Write as _;
    f.write_char(quote)?;
    for ch in text.chars() {
        match ch {
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            c if c == quote => write!(f, "\\{c}")?,
            c if c.is_control() => write!(f, "\\u{{{:x}}}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char(quote)
}
