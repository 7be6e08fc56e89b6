//! Lowering `Termination` (any-of regex / max turns / tokens / structured conditions) and
//! `FailureHandling`.

use super::Builder;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::ir::{
    FailureAction, FailureRule, Guard, SelectionKind, StopGate, TermCond, Termination, TurnUnit,
};
use crate::syntax::fuseraft::{Config, TerminationDecl};

use crate::syntax::fuseraft::TERMINATION_TYPES as TYPES;

pub(super) fn lower_termination(config: &Config, kind: SelectionKind, builder: &mut Builder<'_>) {
    let mut termination = std::mem::take(&mut builder.program.termination);
    termination.max_total_tokens = config.max_total_tokens.as_ref().map(|max| max.value);
    termination.max_total_cost = config.max_total_cost.as_ref().map(|max| max.value);
    if kind == SelectionKind::Graph {
        termination.unit = TurnUnit::Phases;
    }
    if let Some(decl) = &config.termination {
        // The section's own `MaxIterations` caps the run whatever its type (upstream's
        // `ResolveMaxIterations`); a composite's direct `maxiterations` children do too.
        if let Some(max) = decl.max_iterations.as_ref().filter(|max| max.value > 0) {
            termination.any.push(TermCond::MaxTurns(clamp(max.value)));
        }
        lower_strategy(decl, true, builder, &mut termination);
        termination.validators.extend(validator_guards(decl));
    }
    builder.program.termination = termination;
}

fn clamp(value: u64) -> u32 {
    value.min(u32::MAX as u64) as u32
}

fn validator_guards(decl: &TerminationDecl) -> Vec<Guard> {
    decl.validators
        .iter()
        .map(|name| Guard::Validator {
            name: name.value.clone(),
            params: Vec::new(),
        })
        .collect()
}

fn kind_of(decl: &TerminationDecl) -> String {
    match &decl.kind {
        Some(kind) => kind.value.trim().to_ascii_lowercase(),
        // No `Type`: infer it from what the section holds.
        None if !decl.strategies.is_empty() => "composite".to_string(),
        None if decl.pattern.is_some() => "regex".to_string(),
        None => "maxiterations".to_string(),
    }
}

fn lower_strategy(
    decl: &TerminationDecl,
    top: bool,
    builder: &mut Builder<'_>,
    termination: &mut Termination,
) {
    let kind = kind_of(decl);
    let out = &mut termination.any;
    match kind.as_str() {
        "regex" => match &decl.pattern {
            Some(pattern) => {
                if let Some(diag) = crate::check::rules::fr305_invalid_regex::compile_error(
                    builder.sources,
                    pattern,
                    "termination pattern",
                ) {
                    builder.diags.push(diag);
                    return;
                }
                out.push(TermCond::Regex {
                    pattern: pattern.value.clone(),
                    agents: decl
                        .agent_names
                        .iter()
                        .map(|name| name.value.clone())
                        .collect(),
                })
            }
            None => builder.diags.push(
                Diagnostic::error(
                    Code::MissingRequiredKey,
                    "a `regex` termination has no `Pattern`",
                )
                .with_label(decl.span, "add `Pattern:` to this termination"),
            ),
        },
        "maxiterations" => {
            // A top-level section's `MaxIterations` was already taken by the caller.
            if !top {
                if let Some(max) = decl.max_iterations.as_ref().filter(|max| max.value > 0) {
                    out.push(TermCond::MaxTurns(clamp(max.value)));
                }
            }
        }
        "composite" => {
            if decl.strategies.is_empty() {
                builder.diags.push(
                    Diagnostic::error(
                        Code::MissingRequiredKey,
                        "a `composite` termination has no `Strategies`",
                    )
                    .with_label(decl.span, "add at least one child under `Strategies:`"),
                );
            }
            for child in &decl.strategies {
                let first = termination.any.len();
                lower_strategy(child, false, builder, termination);
                let end = termination.any.len();
                // A child's own `Validators` must pass before it may end the run (upstream
                // wraps every child but a `maxiterations` one, which the turn cap enforces).
                if !child.validators.is_empty() && kind_of(child) != "maxiterations" && end > first
                {
                    termination.gates.push(StopGate {
                        first,
                        end,
                        validators: validator_guards(child),
                    });
                }
            }
        }
        "tokenbudget" => match decl.max_tokens.as_ref().filter(|max| max.value > 0) {
            Some(max) => out.push(TermCond::Tokens(max.value)),
            None => builder.diags.push(
                Diagnostic::error(
                    Code::MissingRequiredKey,
                    "a `tokenbudget` termination needs a positive `MaxTokens`",
                )
                .with_label(decl.span, "add `MaxTokens:` to this termination"),
            ),
        },
        "structured" => match &decl.condition {
            Some(condition) => {
                if let Some(cond) = super::routes::lower_condition(condition, builder) {
                    out.push(TermCond::Cond(cond));
                }
            }
            None => builder.diags.push(
                Diagnostic::error(
                    Code::MissingRequiredKey,
                    "a `structured` termination has no `Condition`",
                )
                .with_label(decl.span, "add `Condition:` to this termination"),
            ),
        },
        _ => {
            let span = decl
                .kind
                .as_ref()
                .map(|kind| kind.span)
                .unwrap_or(decl.span);
            let mut diag = Diagnostic::error(
                Code::InvalidValue,
                format!("unknown termination type `{kind}`"),
            )
            .with_label(span, "not a termination type");
            diag = diag.with_help(match did_you_mean(&kind, TYPES.iter().copied()) {
                Some(hint) => hint,
                None => format!("termination types: {}", TYPES.join(", ")),
            });
            builder.diags.push(diag);
        }
    }
}

pub(super) fn lower_failure(config: &Config, builder: &mut Builder<'_>) {
    let policy = &mut builder.program.failure;
    let mut diags = Vec::new();
    for decl in &config.failure.rules {
        let (action, threshold) = (&decl.action, &decl.threshold);
        let rule = match decl.kind.value.as_str() {
            "MissingEvidence" => &mut policy.missing_evidence,
            "InvalidTransition" => &mut policy.invalid_transition,
            "ConflictingEvidence" => &mut policy.conflicting_evidence,
            _ => &mut policy.no_progress,
        };
        // A rule written without values defaults to Abort / 3 (upstream's FailureTypeConfig).
        let mut lowered = FailureRule::new(FailureAction::Abort, 3);
        if let Some(action) = action {
            match FailureAction::parse(&action.value) {
                Some(parsed) => lowered.action = parsed,
                None => diags.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("unknown failure action `{}`", action.value),
                    )
                    .with_label(action.span, "not a failure action")
                    .with_help("actions: Reinstruct, ActivateRecovery, EscalateToHuman, Abort"),
                ),
            }
        }
        if let Some(threshold) = threshold {
            lowered.threshold = threshold.value.min(u32::MAX as u64) as u32;
        }
        *rule = lowered;
    }
    if let Some(max) = &config.failure.max_contract_failures {
        policy.max_contract_failures = max.value.min(u32::MAX as u64) as u32;
    }
    builder.diags.extend(diags);
}
