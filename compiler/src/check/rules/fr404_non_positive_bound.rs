//! # FR404 `non-positive-bound`
//!
//! ## What it does
//! Finds bounds that are zero where upstream needs at least one: `Adversarial.Rounds`,
//! `Magentic.MaxRoundCount` and `MaxStallCount` (errors, as in `fuseraft validate`), graph
//! `MaxRetries` and `MaxTotalTurnsMultiplier`, and a `maxiterations` termination with
//! `MaxIterations: 0` (warnings: upstream treats 0 as "no cap" or stops at once), and
//! `Compaction.KeepRecentTurns` not below `TriggerTurnCount`. In tama front matter: a
//! debate with `rounds: 0`, a best-of-n with `n: 0` (error) or `n: 1` (warning: one variant
//! and a judge), and `max_iter: 0` (the agent stops before its first step).
//!
//! ## Why is this bad?
//! A zero bound silently disables a loop (no adversarial round runs), removes a cap the
//! author meant to set, or makes compaction keep everything it was meant to summarise.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!     - Name: Critic
//!   Selection:
//!     Type: adversarial
//!     Adversarial:
//!       Rounds: 0
//!       Stages:
//!         - { Generator: Writer, Critic: Critic }
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!     - Name: Critic
//!   Selection:
//!     Type: adversarial
//!     Adversarial:
//!       Rounds: 3
//!       Stages:
//!         - { Generator: Writer, Critic: Critic }
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic, Severity};
use crate::syntax::fields::Spanned;

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    tama(ctx);
    let Some(config) = ctx.config else { return };
    let mut found = Vec::new();
    let mut zero = |value: &Option<Spanned<u64>>, severity: Severity, what: &str, effect: &str| {
        if let Some(value) = value.as_ref().filter(|v| v.value == 0) {
            found.push(
                Diagnostic::new(
                    Code::NonPositiveBound,
                    severity,
                    format!("`{what}` is 0: {effect}"),
                )
                .with_label(value.span, "must be at least 1")
                .with_help(format!("set `{what}` to 1 or more")),
            );
        }
    };
    let selection = &config.selection;
    if let Some(adversarial) = &selection.adversarial {
        zero(
            &adversarial.rounds,
            Severity::Error,
            "Rounds",
            "no generator/critic round can run",
        );
    }
    if let Some(magentic) = &selection.magentic {
        zero(
            &magentic.max_round_count,
            Severity::Error,
            "MaxRoundCount",
            "the manager gets no round",
        );
        zero(
            &magentic.max_stall_count,
            Severity::Error,
            "MaxStallCount",
            "the first stalled round already resets the plan",
        );
    }
    if let Some(graph) = &selection.graph {
        zero(
            &graph.max_retries,
            Severity::Warning,
            "MaxRetries",
            "every node is stuck after its first failure",
        );
        zero(
            &graph.max_total_turns_multiplier,
            Severity::Warning,
            "MaxTotalTurnsMultiplier",
            "a node gets no turns",
        );
    }
    if let Some(termination) = &config.termination {
        let maxiterations = termination
            .kind
            .as_ref()
            .is_some_and(|k| k.value.eq_ignore_ascii_case("maxiterations"));
        if maxiterations {
            zero(
                &termination.max_iterations,
                Severity::Warning,
                "MaxIterations",
                "the run has no iteration cap",
            );
        }
    }
    let setting = |key: &str| {
        config
            .settings
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.value.trim().parse::<u64>().ok().map(|n| (n, v.span)))
    };
    if let (Some((keep, keep_span)), Some((trigger, trigger_span))) = (
        setting("Compaction.KeepRecentTurns"),
        setting("Compaction.TriggerTurnCount"),
    ) {
        if keep >= trigger {
            found.push(
                Diagnostic::warning(
                    Code::NonPositiveBound,
                    format!("`KeepRecentTurns` ({keep}) is not below `TriggerTurnCount` ({trigger}): compaction keeps every turn it was meant to summarise"),
                )
                .with_label(keep_span, "keeps this many turns")
                .with_label(trigger_span, "compaction triggers at this many")
                .with_help("keep fewer recent turns than the trigger count"),
            );
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}

/// Bounds in tama front matter, read from the node tree (the typed syntax keeps none).
fn tama(ctx: &mut Ctx<'_>) {
    let mut found = Vec::new();
    for md in ctx.tama {
        let Some(node) = ctx.tama_front_matter(md) else {
            continue;
        };
        let name = md.name.as_ref().map_or("?", |n| n.value.as_str());
        let pattern = md.pattern.as_ref().map_or("", |p| p.value.as_str());
        let number = |key: &str| {
            let value = node.get(key)?;
            let parsed = value.as_str()?.trim().parse::<u64>().ok()?;
            Some((parsed, value.span))
        };
        if let Some((0, span)) = number("rounds").filter(|_| pattern == "debate") {
            found.push(
                Diagnostic::error(Code::NonPositiveBound, format!("debate `{name}` has `rounds: 0`: no agent ever argues and the judge sees an empty transcript"))
                    .with_label(span, "must be at least 1")
                    .with_help("set `rounds` to 1 or more"),
            );
        }
        if let Some((n, span)) = number("n").filter(|(n, _)| *n < 2 && pattern == "best-of-n") {
            let diag = if n == 0 {
                Diagnostic::error(Code::NonPositiveBound, format!("best-of-n `{name}` has `n: 0`: no variant runs and the judge has nothing to choose from"))
            } else {
                Diagnostic::warning(Code::NonPositiveBound, format!("best-of-n `{name}` has `n: 1`: one variant, so the judge has nothing to choose from"))
            };
            found.push(
                diag.with_label(span, "must be at least 2")
                    .with_help("set `n` to 2 or more"),
            );
        }
        if let Some((0, span)) = number("max_iter") {
            found.push(
                Diagnostic::error(
                    Code::NonPositiveBound,
                    format!("`{name}` has `max_iter: 0`: it stops before its first step"),
                )
                .with_label(span, "must be at least 1")
                .with_help("set `max_iter` to 1 or more, or remove it for the default"),
            );
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
