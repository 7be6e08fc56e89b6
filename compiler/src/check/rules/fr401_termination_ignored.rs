//! # FR401 `termination-ignored`
//!
//! ## What it does
//! Finds a `Termination` section under a selection type that ignores it: `magentic` (its
//! manager's `MaxRoundCount` bounds the run), `adversarial` (`Rounds` per stage), and the
//! fan-out types `mapreduce` and `scattergather`. `fuseraft validate` warns the same for
//! magentic.
//!
//! ## Why is this bad?
//! The author believes `MaxIterations: 50` or a stop pattern applies; it does not.
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
//!       Stages:
//!         - { Generator: Writer, Critic: Critic }
//!   Termination:
//!     Type: maxiterations
//!     MaxIterations: 10
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
//!       Rounds: 5
//!       Stages:
//!         - { Generator: Writer, Critic: Critic }
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::SelectionKind;

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let Some(termination) = &config.termination else {
        return;
    };
    let kind = config
        .selection
        .kind
        .as_ref()
        .and_then(|kind| SelectionKind::parse(&kind.value));
    let bound = match kind {
        Some(SelectionKind::Magentic) => "the magentic manager's `MaxRoundCount`",
        Some(SelectionKind::Adversarial) => "`Adversarial.Rounds` per stage",
        Some(SelectionKind::MapReduce | SelectionKind::ScatterGather) => {
            "the fan-out itself: each worker runs once"
        }
        _ => return,
    };
    let kind = kind.map(|k| k.as_str()).unwrap_or_default();
    let mut diag = Diagnostic::warning(
        Code::TerminationIgnored,
        format!(
            "`Termination` is ignored by selection type `{kind}`: the run is bounded by {bound}"
        ),
    );
    let span = termination
        .kind
        .as_ref()
        .map(|k| k.span)
        .or(termination.max_iterations.as_ref().map(|m| m.span))
        .unwrap_or(termination.span);
    diag = diag.with_label(span, "never evaluated");
    if let Some(selection_kind) = &config.selection.kind {
        diag = diag.with_label(
            selection_kind.span,
            "this selection type ignores `Termination`",
        );
    }
    ctx.push(diag.with_help(
        "remove the `Termination` section, or bound the run with the selection's own setting",
    ));
}
