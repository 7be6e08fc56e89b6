//! The Search plugin's symbol tools, upstream's `search_symbol` (where a name is defined)
//! and `search_callers` (where it is used), by language-agnostic line patterns over the
//! same walk as `search_content` (ripgrep's rules, no symlink followed, reads through the
//! race-free walk, `.git/`, credential and binary files skipped).
//!
//! The symbol matches as a whole word in its exact case. It is untrusted: it must be an identifier (letters, digits, `_`), at most
//! [`MAX_SYMBOL_CHARS`] characters, and is escaped before it enters a pattern.

use std::path::Path;

use super::grep::{self, Piece};
use super::search::{
    open_scope, read_found, walk, NameFilter, HEADER_ROOM, MAX_FILE_BYTES, MAX_RESULTS,
};
use super::{Args, Outcome, ToolContext};

/// The longest symbol accepted.
const MAX_SYMBOL_CHARS: usize = 200;

/// What a symbol search looks for.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Looking {
    Definitions,
    Callers,
}

/// A line that defines `symbol` in one of the common forms: a type (`class`, `struct`,
/// `enum`, `trait`, `interface`, `record`, `type`), a function (`fn`, `def`, `func`,
/// `function`, `sub`), a method after a modifier (`public`, `static`, `async`, ...), a
/// variable (`let`, `var`, `const`, `val`).
/// Keywords match in any case, the name exactly (`(?-i:…)`): `let parser` does not define
/// `Parser`.
fn definition_pattern(symbol: &str) -> String {
    let name = format!("(?-i:{})", regex::escape(symbol));
    [
        format!(r"\b(?:class|record|struct|enum|trait|interface|type|union)\s+{name}\b"),
        format!(r"\b(?:function|func|fn|def|sub)\s+{name}\b"),
        format!(
            r"\b(?:public|private|protected|internal|static|async|override|virtual|pub)\b[\w\s]*\s{name}\s*[(<]"
        ),
        format!(r"\b(?:var|let|const|val)\s+(?:mut\s+)?{name}\s*[=:]"),
    ]
    .join("|")
}

/// A line that uses `symbol`: a call or generic use (`name(`, `name<`), a member or path
/// (`name.`, `name::`), `new name`, a type annotation or base type (`: name`).
fn caller_pattern(symbol: &str) -> String {
    let name = format!("(?-i:{})", regex::escape(symbol));
    format!(r"\b{name}\s*[(<.:]|\bnew\s+{name}\b|:\s*{name}\b")
}

fn checked_symbol<'a>(tool: &str, args: &'a Args) -> Result<&'a str, Outcome> {
    let symbol = args.string("symbol")?.trim();
    let identifier = symbol.chars().all(|ch| ch.is_alphanumeric() || ch == '_');
    if symbol.is_empty() || !identifier || symbol.chars().count() > MAX_SYMBOL_CHARS {
        return Err(Outcome::error(format!(
            "{tool}: `symbol` must be one identifier (letters, digits, `_`, at most {MAX_SYMBOL_CHARS} characters); \
             use search_content for other patterns"
        )));
    }
    Ok(symbol)
}

/// `extension` (`.rs`, `rs`) as a file-name glob.
fn extension_glob(tool: &str, args: &Args) -> Result<String, Outcome> {
    let extension = args.opt_text("extension")?.unwrap_or("").trim();
    let extension = extension.strip_prefix('.').unwrap_or(extension);
    if extension.is_empty() {
        return Ok("*".to_string());
    }
    if extension.contains(['/', '*', '?', '[', '{', '\\']) {
        return Err(Outcome::error(format!(
            "{tool}: `extension` must be a file extension such as `.rs`"
        )));
    }
    Ok(format!("*.{extension}"))
}

pub(crate) fn search_symbol(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    run("search_symbol", Looking::Definitions, args, root, ctx)
}

pub(crate) fn search_callers(args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    run("search_callers", Looking::Callers, args, root, ctx)
}

fn run(tool: &str, looking: Looking, args: &Args, root: &Path, ctx: &ToolContext) -> Outcome {
    let default = match looking {
        Looking::Definitions => 50,
        Looking::Callers => 100,
    };
    let inputs = (
        checked_symbol(tool, args),
        extension_glob(tool, args),
        args.opt_count("maxResults", default, 1, MAX_RESULTS),
    );
    let (symbol, glob, max) = match inputs {
        (Ok(symbol), Ok(glob), Ok(max)) => (symbol, glob, max),
        (Err(outcome), _, _) | (_, Err(outcome), _) | (_, _, Err(outcome)) => return outcome,
    };
    let definition = definition_pattern(symbol);
    let (pattern, exclude) = match looking {
        Looking::Definitions => (definition, None),
        Looking::Callers => {
            let exclude = regex::RegexBuilder::new(&definition)
                .case_insensitive(true)
                .size_limit(1 << 20)
                .build();
            match exclude {
                Ok(exclude) => (caller_pattern(symbol), Some(exclude)),
                Err(error) => return Outcome::error(format!("{tool}: {error}")),
            }
        }
    };
    let (matcher, filter, scope) = match (
        grep::compile(tool, &pattern, false),
        NameFilter::new(tool, &glob),
        open_scope(tool, args, root, ctx),
    ) {
        (Ok(matcher), Ok(filter), Ok(scope)) => (matcher, filter, scope),
        (Err(outcome), _, _) | (_, Err(outcome), _) | (_, _, Err(outcome)) => return outcome,
    };
    let budget = ctx.limits.output_cap.saturating_sub(HEADER_ROOM);
    let mut body = String::new();
    let mut count = 0;
    let mut full = false;
    let walked = walk(&scope, &filter, Some(MAX_FILE_BYTES), |found| {
        let Some(bytes) = read_found(&scope, found) else {
            return false;
        };
        if grep::is_binary(&bytes) {
            return false;
        }
        // Callers are filtered after matching, so every candidate line of the file is found.
        let limit = match looking {
            Looking::Definitions => (max - count) as u64,
            Looking::Callers => u64::MAX,
        };
        let (pieces, _) = grep::find(&matcher, &bytes, 0, limit);
        for piece in &pieces {
            let Piece::Line { number, text, .. } = piece else {
                continue;
            };
            if exclude
                .as_ref()
                .is_some_and(|exclude| exclude.is_match(text))
            {
                continue;
            }
            let line = format!("{}:L{number}  {}", found.rel, text.trim());
            if body.len() + line.len() + 1 > budget {
                full = true;
                return true;
            }
            body.push_str(&line);
            body.push('\n');
            count += 1;
            if count >= max {
                return true;
            }
        }
        false
    });
    let what = match looking {
        Looking::Definitions => "definition",
        Looking::Callers => "call site",
    };
    if count == 0 {
        return Outcome::ok(format!(
            "No {what} found for `{symbol}` under {} (hidden and .gitignored files are not searched)",
            scope.shown
        ));
    }
    let mut header = format!("[RESULTS] {count} {what}(s) found for `{symbol}`");
    if count >= max {
        header.push_str(" (limit reached; raise `maxResults` to see more)");
    }
    if full {
        header.push_str(" (output cap reached; narrow `directory` or `extension`)");
    }
    if walked.cut {
        header.push_str(" (the walk stopped early; narrow `directory`)");
    }
    body.pop();
    Outcome::ok(format!("{header}\n\n{body}"))
}
