//! Reading the Git tools' arguments: refs that can never be read as options, `git_add`'s
//! paths, flags and counts, all as results rather than panics.

use crate::history::DenialKind;
use serde_json::Value as Json;

use crate::tools::{Args, Outcome};

/// The most commits `git_log` lists.
const MAX_LOG: u64 = 1000;

/// A ref-like argument: trimmed, `None` when absent or empty, refused when it would be read
/// as an option or holds a control character.
pub(super) fn revision(
    tool: &str,
    key: &str,
    value: Option<&str>,
) -> Result<Option<String>, Outcome> {
    let Some(value) = value.map(str::trim).filter(|value| !value.is_empty()) else {
        return Ok(None);
    };
    if value.starts_with('-') {
        return Err(Outcome::denied(
            DenialKind::Git,
            format!("`{key}` `{value}` starts with `-` and would be read as an option of git"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(Outcome::error(format!(
            "tool `{tool}`: `{key}` may not hold control characters"
        )));
    }
    Ok(Some(value.to_string()))
}

/// The path of a `REV:path` (or `:path`, `:N:path`) revision, which names a file's content.
pub(super) fn blob_path(rev: &str) -> Option<&str> {
    let (_, path) = rev.split_once(':')?;
    let path = match path.split_once(':') {
        Some((stage, rest)) if rev.starts_with(':') && stage.len() == 1 => rest,
        _ => path,
    };
    (!path.is_empty()).then_some(path)
}

/// `git_add`'s `paths`: a string of whitespace-separated paths (as upstream) or an array of
/// strings; each is passed after `--`, so none is read as an option.
pub(super) fn paths(args: &Args) -> Result<Vec<String>, Outcome> {
    let list: Vec<String> = match args.value("paths") {
        Some(Json::String(text)) => text.split_whitespace().map(str::to_string).collect(),
        Some(Json::Array(items)) => {
            let mut list = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(path) if !path.trim().is_empty() => list.push(path.trim().to_string()),
                    _ => {
                        return Err(Outcome::error(
                            "tool `git_add`: `paths` must hold non-empty strings",
                        ))
                    }
                }
            }
            list
        }
        _ => {
            return Err(Outcome::error(
                "tool `git_add` needs `paths`: a path, several separated by spaces, or `.` for everything",
            ))
        }
    };
    if list.is_empty() {
        return Err(Outcome::error(
            "tool `git_add` needs at least one path in `paths`",
        ));
    }
    if list.iter().any(|path| path.contains('\0')) {
        return Err(Outcome::error("a path may not contain a NUL character"));
    }
    Ok(list)
}

/// An optional boolean argument (a JSON boolean or `"true"`/`"false"`).
pub(super) fn flag(args: &Args, key: &str) -> Result<bool, Outcome> {
    match args.value(key) {
        None => Ok(false),
        Some(Json::Bool(value)) => Ok(*value),
        Some(Json::String(text)) if text.eq_ignore_ascii_case("true") => Ok(true),
        Some(Json::String(text)) if text.eq_ignore_ascii_case("false") => Ok(false),
        Some(_) => Err(Outcome::error(format!(
            "argument `{key}` must be true or false"
        ))),
    }
}

/// An optional positive whole number (a JSON number or a numeric string).
fn number(args: &Args, key: &str, default: u64) -> Result<u64, Outcome> {
    let value = match args.value(key) {
        None => return Ok(default),
        Some(Json::Number(number)) => number.as_u64(),
        Some(Json::String(text)) => text.trim().parse::<u64>().ok(),
        Some(_) => None,
    };
    match value {
        Some(value) if value > 0 => Ok(value),
        _ => Err(Outcome::error(format!(
            "argument `{key}` must be a positive whole number"
        ))),
    }
}

pub(super) fn count(args: &Args) -> Result<u64, Outcome> {
    Ok(number(args, "count", 10)?.min(MAX_LOG))
}

pub(super) fn lines(args: &Args, default: u64) -> Result<usize, Outcome> {
    Ok(usize::try_from(number(args, "max_lines", default)?).unwrap_or(usize::MAX))
}
