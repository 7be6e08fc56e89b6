//! The config a session ran with, so that `--resume` with another config is refused.
//!
//! A session records `ConfigDigest` (in every state record, so it is authenticated with it):
//! the SHA-256 of the program's normalized IR text, the `.fir` form without source file
//! names and `@line:col` locations, so that moving or reformatting the config changes
//! nothing while any change of agents, states, routes, prompts or settings does. The text
//! itself is kept once in `<id>.config.fir` (0600) to name the first differing line.

use std::io::Read;
use std::path::{Path, PathBuf};

use fuseraft_compiler::ir::{self, Program};
use fuseraft_vm::state_dir::Access;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};

/// The config a run records: its digest, and its text when it must be kept (a new session
/// or a changed config), written by [`Recorded::keep`] once the run starts, so that a run
/// that fails before its first turn leaves nothing behind.
pub struct Recorded {
    pub digest: String,
    text: Option<String>,
}

impl Recorded {
    /// Keeps the text for later comparisons (best effort; the digest suffices to refuse a
    /// change, the text only shows where).
    pub fn keep(&self, work_dir: &Path, session: &str) {
        if let Some(text) = &self.text {
            let _ = save_text(work_dir, session, text);
        }
    }
}

/// Refuses to resume a session (`saved`) with a config (`program`, from `now_path`) that
/// compiles to another program unless `allow_change`. Returns what to record in the
/// session's checkpoints.
pub fn check(
    work_dir: &Path,
    session: &str,
    program: &Program,
    saved: Option<&Json>,
    now_path: &str,
    allow_change: bool,
) -> Result<Recorded, String> {
    let text = normalized(program);
    let digest = digest(&text);
    if let Some(saved) = saved {
        let recorded = saved
            .get("ConfigDigest")
            .and_then(Json::as_str)
            .unwrap_or_default();
        let recorded_path = saved
            .get("ConfigPath")
            .and_then(Json::as_str)
            .unwrap_or("?");
        if recorded.is_empty() {
            eprintln!(
                "warning: session `{session}` recorded no config digest (an older fuseraft), so the config cannot be checked against the one it ran"
            );
        } else {
            match difference(work_dir, session, recorded, recorded_path, &text, now_path) {
                None => return Ok(Recorded { digest, text: None }),
                Some(difference) if !allow_change => return Err(difference),
                Some(difference) => {
                    // What changed, without the hint to pass the flag that was passed.
                    let lines: Vec<&str> = difference.lines().collect();
                    let shown = lines.len().saturating_sub(1).max(1);
                    for line in lines.iter().take(shown) {
                        eprintln!("warning: {}", line.trim_start());
                    }
                    eprintln!("warning: resuming with the new config");
                }
            }
        }
    }
    // A new session, or a changed config: its text is kept once the run starts.
    Ok(Recorded {
        digest,
        text: Some(text),
    })
}

pub fn text_path(work_dir: &Path, id: &str) -> PathBuf {
    work_dir.join(super::DIR).join(format!("{id}.config.fir"))
}

/// The program's IR text without file names and locations.
pub fn normalized(program: &Program) -> String {
    let text = ir::print(program, &ir::PrintOptions::default());
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line.starts_with("file ") {
            continue;
        }
        out.push_str(&strip_locations(line));
        out.push('\n');
    }
    out
}

/// Removes ` @L:C` tokens (a space, `@`, digits, `:`, digits, then a space or the end).
fn strip_locations(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    let mut copied = 0;
    while let Some(found) = line[at..].find(" @") {
        let start = at + found;
        let mut end = start + 2;
        let digits = |from: usize| {
            let mut to = from;
            while to < bytes.len() && bytes[to].is_ascii_digit() {
                to += 1;
            }
            to
        };
        let after_line = digits(end);
        let is_location = after_line > end && bytes.get(after_line) == Some(&b':') && {
            end = digits(after_line + 1);
            end > after_line + 1 && (end == bytes.len() || bytes[end] == b' ')
        };
        if is_location {
            out.push_str(&line[copied..start]);
            copied = end;
            at = end;
        } else {
            at = start + 2;
        }
    }
    out.push_str(&line[copied..]);
    out
}

pub fn digest(text: &str) -> String {
    super::key::to_hex(&Sha256::digest(text.as_bytes()))
}

/// Keeps the normalized text of a session's config (atomically, 0600).
pub fn save_text(work_dir: &Path, id: &str, text: &str) -> std::io::Result<()> {
    let dir = super::dir(work_dir).map_err(super::dir_error)?;
    dir.replace(&format!("{id}.config.fir"), text.as_bytes())
}

/// Says how the config `now` (normalized, from `now_path`) differs from the one session `id`
/// recorded (`recorded_digest`, from `recorded_path`); `None` when it is the same.
pub fn difference(
    work_dir: &Path,
    id: &str,
    recorded_digest: &str,
    recorded_path: &str,
    now: &str,
    now_path: &str,
) -> Option<String> {
    if digest(now) == recorded_digest {
        return None;
    }
    let mut message = format!(
        "session `{id}` ran with another config: it recorded `{recorded_path}`, and `{now_path}` now compiles to a different program"
    );
    let recorded = super::existing_dir(work_dir)
        .ok()
        .flatten()
        .and_then(|dir| {
            let mut text = String::new();
            let mut file = dir
                .open_file(&format!("{id}.config.fir"), Access::Read)
                .ok()?;
            file.read_to_string(&mut text).ok().map(|_| text)
        })
        .filter(|text| digest(text) == recorded_digest);
    match recorded {
        Some(recorded) => message.push_str(&first_difference(&recorded, now)),
        None => message.push_str(
            "\n  (the recorded config text is missing or altered, so the difference cannot be shown)",
        ),
    }
    message.push_str("\n  pass `--allow-config-change` to resume with this config anyway");
    Some(message)
}

/// The first differing line of two normalized IR texts, shown both ways.
fn first_difference(was: &str, now: &str) -> String {
    let mut was_lines = was.lines();
    let mut now_lines = now.lines();
    let mut number = 0;
    loop {
        number += 1;
        match (was_lines.next(), now_lines.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (None, None) => return String::new(),
            (a, b) => {
                let show = |line: Option<&str>| {
                    line.map_or("(end of program)".to_string(), |line| {
                        let line: String = line.chars().take(160).collect();
                        format!("`{}`", line.trim())
                    })
                };
                return format!(
                    "\n  first difference, at line {number} of the program's IR:\n    was: {}\n    now: {}",
                    show(a),
                    show(b)
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_stripped_and_nothing_else() {
        assert_eq!(strip_locations("agent A @4:7"), "agent A");
        assert_eq!(
            strip_locations("  exit signal \"X @1:2 y\" -> B forward @11:9"),
            "  exit signal \"X y\" -> B forward"
        );
        assert_eq!(
            strip_locations("a @b:1 @1: @:2 @1:2x"),
            "a @b:1 @1: @:2 @1:2x"
        );
    }

    #[test]
    fn the_first_difference_names_the_line_both_ways() {
        let text = first_difference("a\nb\nc\n", "a\nB\nc\n");
        assert!(text.contains("line 2"), "{text}");
        assert!(
            text.contains("was: `b`") && text.contains("now: `B`"),
            "{text}"
        );
        let text = first_difference("a\n", "a\nextra\n");
        assert!(text.contains("was: (end of program)"), "{text}");
    }
}
