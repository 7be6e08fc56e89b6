//! # FR306 `pattern-always-matches`
//!
//! ## What it does
//! Finds patterns that accept everything: a termination regex that matches the empty
//! string (`.*`, `x*`, `^`), so it matches every reply; a test assertion pattern that
//! matches an empty file; a `RequiredCommandPattern` with an empty alternative (`test|`,
//! `a||b`), which upstream's substring check accepts for every command.
//!
//! ## Why is this bad?
//! A termination that always matches ends the session on the first turn; a gate that
//! always passes is no gate. (A pattern that accepts any one character, such as `.` or
//! `^\S|\s`, counts as matching every reply.)
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!   Termination:
//!     Type: regex
//!     Pattern: "(DONE)?"
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!   Termination:
//!     Type: regex
//!     Pattern: "^DONE$"
//! ```

use super::super::context::Ctx;
use super::fr305_invalid_regex::patterns;
use crate::diagnostic::{Code, Diagnostic};

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for (pattern, what) in patterns(ctx) {
        let Ok(regex) = regex::RegexBuilder::new(&pattern.value)
            .case_insensitive(true)
            .build()
        else {
            continue;
        };
        // Five unrelated one-character texts: a pattern that accepts them all accepts any
        // non-empty reply (`.`, `^.`, `\S|\s`).
        let any_text = ["x", "Q", "7", "-", " "]
            .iter()
            .all(|text| regex.is_match(text));
        let what_matches = if regex.is_match("") {
            "the empty string"
        } else if any_text {
            "any single character"
        } else {
            continue;
        };
        let effect = if what == "termination pattern" {
            "it matches every reply, so the run stops after the first turn"
        } else {
            "it matches every file, so the assertion check always passes"
        };
        found.push(
            Diagnostic::warning(
                Code::PatternAlwaysMatches,
                format!(
                    "{what} `{}` matches {what_matches}: {effect}",
                    pattern.value
                ),
            )
            .with_label(pattern.span, "matches anything")
            .with_help("anchor the pattern on text that must be present, for example `^DONE$`"),
        );
    }
    if let Some(config) = ctx.config {
        let selection = &config.selection;
        let mut commands = Vec::new();
        for route in &selection.routes {
            commands.extend(route.required_command_pattern.clone());
        }
        if let Some(graph) = &selection.graph {
            for edge in &graph.edges {
                commands.extend(edge.required_command_pattern.clone());
            }
        }
        for pattern in commands {
            if pattern
                .value
                .split('|')
                .any(|alternative| alternative.trim().is_empty())
            {
                found.push(
                    Diagnostic::warning(
                        Code::PatternAlwaysMatches,
                        format!("`RequiredCommandPattern` `{}` has an empty alternative, which every command contains", pattern.value),
                    )
                    .with_label(pattern.span, "an empty `|` alternative matches any command")
                    .with_help("remove the empty alternative (a leading, trailing or doubled `|`)"),
                );
            }
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
