//! Static questions about upstream's three keyword matchers (`research/fuseraft-semantics.md`
//! §2): can a keyword ever match a line of text, and does every line that matches one keyword
//! also match an earlier one. The matchers themselves are `ir::Matcher::matches_line`, shared
//! with the VM, and the tests below check every answer against them.
//!
//! All three split a reply on `\n`, test each line, and ignore case (ordinal).
//! - **relaxed** (keyword routes, state-machine signals): trim, delete every `*` and `_`
//!   anywhere in the line, trim again; the line equals the keyword, or starts with it and
//!   the next character is whitespace or .NET punctuation.
//! - **strict** (graph, workflow): trim, then trim `*`, `_` and spaces from both ends; the
//!   rest equals the keyword.
//! - **exact** (adversarial pass keyword): the whitespace-trimmed line equals the keyword.

use crate::ir::Matcher;

/// Whether `line` (one line of a reply) matches `keyword` under `matcher`: the VM's own
/// implementation (`ir::Matcher::matches_line`), so the checks and the runtime agree.
pub fn line_matches(matcher: Matcher, line: &str, keyword: &str) -> bool {
    matcher.matches_line(line, keyword)
}

/// Whether any reply text can contain `keyword`, per a reply's scan by `matcher`.
/// `Some(reason)` when it cannot: the reason names what the matcher does to the line.
pub fn unmatchable(matcher: Matcher, keyword: &str) -> Option<String> {
    if keyword.contains('\n') {
        return Some("replies are matched one line at a time, and this keyword spans lines".into());
    }
    match matcher {
        Matcher::Relaxed => {
            if let Some(ch) = keyword.chars().find(|ch| *ch == '*' || *ch == '_') {
                return Some(format!(
                    "the matcher deletes every `{ch}` from a reply line before comparing, but not from the keyword"
                ));
            }
            if keyword.trim() != keyword {
                return Some(
                    "the matcher trims the line, but the keyword starts or ends with whitespace"
                        .into(),
                );
            }
            None
        }
        Matcher::Strict => {
            let trimmed = keyword.trim_matches(|ch| ch == '*' || ch == '_' || ch == ' ');
            if trimmed != keyword || keyword.trim() != keyword {
                return Some(
                    "the matcher trims `*`, `_` and spaces from both ends of a line, but the keyword starts or ends with one"
                        .into(),
                );
            }
            None
        }
        Matcher::Exact => {
            if keyword.trim() != keyword {
                return Some(
                    "the matcher trims the line, but the keyword starts or ends with whitespace"
                        .into(),
                );
            }
            None
        }
    }
}

/// When every line that matches `later` also matches `earlier` (so `earlier`, tried first,
/// always wins), a line that shows it. `None` when some line matches `later` only.
/// Equal keywords are duplicates, not shadowing, and also yield `None`.
pub fn shadowing_line(matcher: Matcher, earlier: &str, later: &str) -> Option<String> {
    if unmatchable(matcher, earlier).is_some() || unmatchable(matcher, later).is_some() {
        return None;
    }
    if fold(earlier) == fold(later) {
        return None;
    }
    match matcher {
        // A line matching `later` is `later` itself or `later` + separator + text, after
        // normalisation. It matches `earlier` exactly when `later` starts with `earlier`
        // followed by a separator.
        Matcher::Relaxed => {
            let (earlier_folded, later_folded) = (fold(earlier), fold(later));
            let rest = later_folded.strip_prefix(earlier_folded.as_str())?;
            rest.chars()
                .next()
                .is_some_and(is_separator)
                .then(|| later.to_string())
        }
        // Both compare the whole (trimmed) line: different keywords never share a line.
        Matcher::Strict | Matcher::Exact => None,
    }
}

/// Whether two keywords are the same route under `matcher` (case-insensitive equality).
pub fn same_keyword(earlier: &str, later: &str) -> bool {
    fold(earlier) == fold(later)
}

/// Ordinal ignore-case comparison, as .NET's `OrdinalIgnoreCase` (simple upper-casing).
fn fold(text: &str) -> String {
    text.chars()
        .map(|ch| {
            let mut upper = ch.to_uppercase();
            match (upper.next(), upper.next()) {
                (Some(single), None) => single,
                _ => ch,
            }
        })
        .collect()
}

/// .NET `char.IsWhiteSpace || char.IsPunctuation`, the character the relaxed matcher
/// requires after a keyword that starts a longer line.
pub fn is_separator(ch: char) -> bool {
    ch.is_whitespace() || crate::ir::is_punctuation(ch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relaxed_matches_the_documented_lines() {
        let keyword = "APPROVED";
        for line in [
            "APPROVED",
            "APPROVED.",
            "APPROVED: text",
            "APPROVED All good",
            "**APPROVED**",
            "APPROVED-ish",
            "  approved  ",
            "A_P_P_R_O_V_E_D",
        ] {
            assert!(line_matches(Matcher::Relaxed, line, keyword), "{line}");
        }
        for line in [
            "APPROVEDX",
            "APPROVED+",
            "Status: APPROVED",
            "- APPROVED",
            "> APPROVED",
            "`APPROVED`",
        ] {
            assert!(!line_matches(Matcher::Relaxed, line, keyword), "{line}");
        }
    }

    #[test]
    fn strict_and_exact_compare_whole_lines() {
        assert!(line_matches(Matcher::Strict, "** APPROVED **", "APPROVED"));
        assert!(line_matches(
            Matcher::Strict,
            "__PLANNING_COMPLETE__",
            "PLANNING_COMPLETE"
        ));
        assert!(!line_matches(Matcher::Strict, "APPROVED.", "APPROVED"));
        assert!(!line_matches(Matcher::Strict, "*\tAPPROVED", "APPROVED"));
        assert!(line_matches(Matcher::Exact, " approved ", "APPROVED"));
        assert!(!line_matches(Matcher::Exact, "**APPROVED**", "APPROVED"));
    }

    #[test]
    fn underscores_make_a_relaxed_keyword_unmatchable() {
        // Upstream's matcher cannot see it (FR308 reports that); fuseraft's runtime
        // normalises the keyword too and does (docs/semantics.md).
        assert!(unmatchable(Matcher::Relaxed, "DEPLOYMENT_COMPLETE").is_some());
        assert!(line_matches(
            Matcher::Relaxed,
            "DEPLOYMENT_COMPLETE",
            "DEPLOYMENT_COMPLETE"
        ));
        assert!(unmatchable(Matcher::Strict, "DEPLOYMENT_COMPLETE").is_none());
        assert!(unmatchable(Matcher::Strict, "_DONE").is_some());
    }

    #[test]
    fn shadowing_follows_the_prefix_and_separator_rule() {
        assert_eq!(
            shadowing_line(Matcher::Relaxed, "HANDOFF", "HANDOFF TO TESTER").as_deref(),
            Some("HANDOFF TO TESTER")
        );
        assert!(shadowing_line(Matcher::Relaxed, "APPROVED", "NOT APPROVED").is_none());
        assert!(shadowing_line(Matcher::Relaxed, "APPROVED", "APPROVEDX").is_none());
        assert!(shadowing_line(Matcher::Relaxed, "DONE", "DONE-ISH").is_some());
        assert!(shadowing_line(Matcher::Relaxed, "DONE", "DONE+1").is_none());
        assert!(shadowing_line(Matcher::Strict, "HANDOFF", "HANDOFF TO TESTER").is_none());
    }

    #[test]
    fn every_shadowing_counterexample_really_routes_to_the_earlier_keyword() {
        let pairs = [
            ("HANDOFF", "HANDOFF TO TESTER"),
            ("go", "GO: now"),
            ("x", "x.y"),
        ];
        for (earlier, later) in pairs {
            let line = shadowing_line(Matcher::Relaxed, earlier, later).unwrap_or_default();
            assert!(line_matches(Matcher::Relaxed, &line, later));
            assert!(line_matches(Matcher::Relaxed, &line, earlier));
        }
    }
}
