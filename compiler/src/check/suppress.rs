//! Inline suppression: `# fuseraft: allow(FR302) reason text` on the line before a YAML
//! node (or at the end of its first line) silences those codes for the node and its
//! subtree, the lines indented deeper below it. A reason is required (`FR902`), an unknown
//! code is reported (`FR903`), and so is a suppression that silenced nothing (`FR901`).
//! `FR015` (an MCP server that would start) is never silenced: the config is what it audits.
//! JSON has no comments, so JSON configs cannot suppress.

use std::sync::OnceLock;

use regex::Regex;

use super::rules::{
    fr901_unused_suppression, fr902_suppression_missing_reason, fr903_unknown_code,
};
use super::Suppressed;
use crate::diagnostic::{Code, Diagnostic};
use crate::source::{FileId, SourceMap, Span};

struct Allow {
    /// The `allow(...)` text, for findings about the suppression itself.
    span: Span,
    codes: Vec<(Code, Span)>,
    reason: String,
    /// Byte range of the node the comment applies to.
    scope: (FileId, usize, usize),
    used: Vec<bool>,
}

/// Removes suppressed findings from `diagnostics` (returning them) and appends findings
/// about the suppressions themselves.
pub(crate) fn apply(sources: &SourceMap, diagnostics: &mut Vec<Diagnostic>) -> Vec<Suppressed> {
    let mut allows = Vec::new();
    let mut meta = Vec::new();
    for (id, file) in sources.files() {
        let name = file.path.to_string_lossy().to_ascii_lowercase();
        if name.ends_with(".json") || name.ends_with(".fir") {
            continue;
        }
        parse_file(id, &file.text, &mut allows, &mut meta);
    }
    if allows.is_empty() {
        diagnostics.extend(meta);
        return Vec::new();
    }
    let mut suppressed = Vec::new();
    let mut kept = Vec::new();
    for diag in diagnostics.drain(..) {
        // What a config would start is reported whatever the config says about it.
        let audited = diag.code == Code::McpServerStarts;
        let hit = diag.span().filter(|_| !audited).and_then(|span| {
            allows.iter_mut().find_map(|allow| {
                let (file, start, end) = allow.scope;
                if file != span.file
                    || (span.start as usize) < start
                    || (span.start as usize) >= end
                {
                    return None;
                }
                let idx = allow
                    .codes
                    .iter()
                    .position(|(code, _)| *code == diag.code)?;
                allow.used[idx] = true;
                Some(allow.reason.clone())
            })
        });
        match hit {
            Some(reason)
                if !matches!(
                    diag.code,
                    Code::UnusedSuppression
                        | Code::SuppressionMissingReason
                        | Code::UnknownSuppressionCode
                ) =>
            {
                suppressed.push(Suppressed {
                    diagnostic: diag,
                    reason,
                })
            }
            _ => kept.push(diag),
        }
    }
    for allow in &allows {
        for ((code, span), used) in allow.codes.iter().zip(&allow.used) {
            if !used {
                meta.push(fr901_unused_suppression::diagnostic(
                    *code, *span, allow.span,
                ));
            }
        }
    }
    kept.extend(meta);
    *diagnostics = kept;
    suppressed
}

fn pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        Regex::new(r"#\s*fuseraft:\s*allow\(([^)]*)\)(.*)$")
            .expect("the suppression pattern is a valid regex")
    })
}

fn parse_file(file: FileId, text: &str, allows: &mut Vec<Allow>, meta: &mut Vec<Diagnostic>) {
    let lines: Vec<(usize, &str)> = line_starts(text);
    for (line_idx, (line_start, line)) in lines.iter().enumerate() {
        let Some(captures) = pattern().captures(line) else {
            continue;
        };
        let (Some(whole), Some(list), Some(rest)) =
            (captures.get(0), captures.get(1), captures.get(2))
        else {
            continue;
        };
        let span = Span::new(
            file,
            line_start + whole.start(),
            line_start + list.end() + 1,
        );
        let mut codes = Vec::new();
        let mut offset = list.start();
        for part in list.as_str().split(',') {
            let trimmed = part.trim();
            let lead = part.len() - part.trim_start().len();
            let part_span = Span::new(
                file,
                line_start + offset + lead,
                line_start + offset + lead + trimmed.len(),
            );
            offset += part.len() + 1;
            if trimmed.is_empty() {
                continue;
            }
            match Code::parse(trimmed) {
                Some(code) => codes.push((code, part_span)),
                None => meta.push(fr903_unknown_code::diagnostic(trimmed, part_span)),
            }
        }
        let reason = rest
            .as_str()
            .trim()
            .trim_start_matches([':', '-', '—', '–'])
            .trim()
            .to_string();
        if reason.is_empty() {
            meta.push(fr902_suppression_missing_reason::diagnostic(span));
        }
        if codes.is_empty() {
            continue;
        }
        let own_line = line[..whole.start()].trim().is_empty();
        let target = if own_line {
            lines[line_idx + 1..]
                .iter()
                .position(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                .map(|p| line_idx + 1 + p)
        } else {
            Some(line_idx)
        };
        let Some(target) = target else { continue };
        let indent = indentation(lines[target].1);
        let mut last = target;
        for (idx, (_, l)) in lines.iter().enumerate().skip(target + 1) {
            if l.trim().is_empty() || l.trim_start().starts_with('#') {
                continue;
            }
            if indentation(l) > indent {
                last = idx;
            } else {
                break;
            }
        }
        let start = lines[target].0;
        let end = lines[last].0 + lines[last].1.len() + 1;
        let used = vec![false; codes.len()];
        allows.push(Allow {
            span,
            codes,
            reason,
            scope: (file, start, end),
            used,
        });
    }
}

fn line_starts(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split('\n') {
        out.push((start, line));
        start += line.len() + 1;
    }
    out
}

/// Leading spaces; a list item's `- ` counts as indentation of its content.
fn indentation(line: &str) -> usize {
    line.len() - line.trim_start().len()
}
