//! One module per rule. Each module opens with its documentation (`## What it does`,
//! `## Why is this bad?`, `## Example` with a failing and a fixed config); `RULE_DOCS` embeds
//! those headers so `fuseraft check --explain` and `docs/diagnostics.md` share one source.
//!
//! Order matters: config rules first, then route rules (which record exits that can never
//! fire), then graph rules (which follow only live exits and attach consequences).

mod fr005_ignored_section;
mod fr006_incompatible_settings;
mod fr007_inert_key;
mod fr015_mcp_server_starts;
mod fr105_unknown_model_alias;
mod fr106_unused_definition;
mod fr201_unreachable_state;
mod fr202_no_path_to_terminal;
mod fr203_no_terminal;
mod fr204_dead_end_state;
mod fr205_terminal_has_transitions;
mod fr206_cycle_without_exit;
mod fr301_duplicate_route;
mod fr302_shadowed_keyword;
mod fr303_catch_all_not_last;
mod fr304_unconditional_exit_shadows;
pub(crate) mod fr305_invalid_regex;
mod fr306_pattern_always_matches;
mod fr307_signal_not_instructed;
mod fr308_keyword_never_matches;
mod fr401_termination_ignored;
mod fr402_termination_cannot_fire;
mod fr403_budget_too_small;
mod fr404_non_positive_bound;
mod fr405_unpriced_model;
mod fr501_adversarial_self_critique;
mod fr502_invalid_fan_out;
mod fr503_degenerate_fan_out;
mod fr601_validator_missing_config;
mod fr602_contract_unsatisfiable;
mod fr604_unknown_predicate;
mod fr605_validator_unsatisfiable;
pub(crate) mod fr901_unused_suppression;
pub(crate) mod fr902_suppression_missing_reason;
pub(crate) mod fr903_unknown_code;
mod liveness;

use super::context::Ctx;
use super::flow::Flow;
use crate::diagnostic::Code;
use crate::ir::{Origin, SelectionKind};

pub(crate) fn run(ctx: &mut Ctx<'_>) {
    // Config rules: the typed syntax alone.
    fr005_ignored_section::check(ctx);
    fr006_incompatible_settings::check(ctx);
    fr007_inert_key::check(ctx);
    fr015_mcp_server_starts::check(ctx);
    fr205_terminal_has_transitions::check(ctx);
    fr305_invalid_regex::check(ctx);
    fr306_pattern_always_matches::check(ctx);
    fr401_termination_ignored::check(ctx);
    fr404_non_positive_bound::check(ctx);
    fr501_adversarial_self_critique::check(ctx);
    fr502_invalid_fan_out::check(ctx);
    fr503_degenerate_fan_out::check(ctx);
    fr601_validator_missing_config::check(ctx);
    fr604_unknown_predicate::check(ctx);
    fr105_unknown_model_alias::check(ctx);
    fr106_unused_definition::check(ctx);
    fr303_catch_all_not_last::check(ctx);

    // Route rules: exits of each state, in order, with the real matchers.
    let Some(program) = ctx.program else { return };
    if program.entry.0 as usize >= program.states.len() {
        // Nothing to route (a partial program without states).
        return;
    }
    fr308_keyword_never_matches::check(ctx, program);
    fr301_duplicate_route::check(ctx, program);
    fr302_shadowed_keyword::check(ctx, program);
    fr304_unconditional_exit_shadows::check(ctx, program);
    fr307_signal_not_instructed::check(ctx, program);
    fr405_unpriced_model::check(ctx, program);

    // Graph rules: live exits only. A compile error that left the graph incomplete (other
    // than an unresolved target, whose consequences are attributed to it) would make every
    // graph finding a guess: those wait until the error is fixed.
    let incomplete = ctx.diags[..ctx.n_compile].iter().any(|diag| {
        diag.is_error() && !matches!(diag.code, Code::UnknownState | Code::UnknownContract)
    });
    if incomplete {
        return;
    }
    let flow = Flow::new(ctx, program);
    fr201_unreachable_state::check(ctx, program, &flow);
    if ends_at_terminals(program) {
        let has_terminal = fr203_no_terminal::check(ctx, program, &flow);
        if has_terminal {
            liveness::check(ctx, program, &flow);
        }
        fr403_budget_too_small::check(ctx, program, &flow);
    }
    fr402_termination_cannot_fire::check(ctx, program, &flow);
    fr602_contract_unsatisfiable::check(ctx, program, &flow);
    fr605_validator_unsatisfiable::check(ctx, program, &flow);
}

/// Families whose runs are meant to end in a terminal state (or at `end`); the others
/// (keyword, structured, rotations, managers) end only by `Termination`.
fn ends_at_terminals(program: &crate::ir::Program) -> bool {
    match program.origin {
        Origin::Tama => true,
        Origin::Fuseraft(kind) => matches!(
            kind,
            SelectionKind::StateMachine
                | SelectionKind::Graph
                | SelectionKind::Workflow
                | SelectionKind::Adversarial
                | SelectionKind::MapReduce
                | SelectionKind::ScatterGather
        ),
    }
}

/// The source text of every rule module (and of the compile-stage code docs), whose `//!`
/// header is that rule's documentation.
pub const RULE_DOCS: &[&str] = &[
    include_str!("compile_codes.md"),
    include_str!("fr005_ignored_section.rs"),
    include_str!("fr006_incompatible_settings.rs"),
    include_str!("fr007_inert_key.rs"),
    include_str!("fr015_mcp_server_starts.rs"),
    include_str!("fr105_unknown_model_alias.rs"),
    include_str!("fr106_unused_definition.rs"),
    include_str!("fr201_unreachable_state.rs"),
    include_str!("fr202_no_path_to_terminal.rs"),
    include_str!("fr203_no_terminal.rs"),
    include_str!("fr204_dead_end_state.rs"),
    include_str!("fr205_terminal_has_transitions.rs"),
    include_str!("fr206_cycle_without_exit.rs"),
    include_str!("fr301_duplicate_route.rs"),
    include_str!("fr302_shadowed_keyword.rs"),
    include_str!("fr303_catch_all_not_last.rs"),
    include_str!("fr304_unconditional_exit_shadows.rs"),
    include_str!("fr305_invalid_regex.rs"),
    include_str!("fr306_pattern_always_matches.rs"),
    include_str!("fr307_signal_not_instructed.rs"),
    include_str!("fr308_keyword_never_matches.rs"),
    include_str!("fr401_termination_ignored.rs"),
    include_str!("fr402_termination_cannot_fire.rs"),
    include_str!("fr403_budget_too_small.rs"),
    include_str!("fr404_non_positive_bound.rs"),
    include_str!("fr405_unpriced_model.rs"),
    include_str!("fr501_adversarial_self_critique.rs"),
    include_str!("fr502_invalid_fan_out.rs"),
    include_str!("fr503_degenerate_fan_out.rs"),
    include_str!("fr601_validator_missing_config.rs"),
    include_str!("fr602_contract_unsatisfiable.rs"),
    include_str!("fr604_unknown_predicate.rs"),
    include_str!("fr605_validator_unsatisfiable.rs"),
    include_str!("fr901_unused_suppression.rs"),
    include_str!("fr902_suppression_missing_reason.rs"),
    include_str!("fr903_unknown_code.rs"),
];

/// The documentation of one code, as Markdown: the section whose heading names it.
pub fn explain(code: Code) -> Option<String> {
    all_docs()
        .into_iter()
        .find(|(found, _)| *found == code)
        .map(|(_, text)| text)
}

/// Every documented code with its Markdown section, in code order.
pub fn all_docs() -> Vec<(Code, String)> {
    let mut out = Vec::new();
    for source in RULE_DOCS {
        for (code, text) in sections(source) {
            out.push((code, text));
        }
    }
    out.sort_by_key(|(code, _)| *code);
    out
}

/// Splits a doc source into sections, each starting at a `# FRxxx` heading. A Rust file
/// contributes its leading `//!` lines; a Markdown file its whole text.
fn sections(source: &str) -> Vec<(Code, String)> {
    let text: String = if source.trim_start().starts_with("//!") {
        source
            .lines()
            .take_while(|line| line.starts_with("//!"))
            .map(|line| {
                let rest = &line[3..];
                format!("{}\n", rest.strip_prefix(' ').unwrap_or(rest))
            })
            .collect()
    } else {
        source.to_string()
    };
    let mut out: Vec<(Code, String)> = Vec::new();
    for line in text.lines() {
        if let Some(code) = heading_code(line) {
            out.push((code, String::new()));
        }
        if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    for (_, body) in &mut out {
        let trimmed = body.trim_end().to_string();
        *body = trimmed + "\n";
    }
    out
}

fn heading_code(line: &str) -> Option<Code> {
    let rest = line.strip_prefix("# ")?;
    let code = rest.split_whitespace().next()?;
    Code::parse(code).filter(|parsed| parsed.as_str() == code)
}
