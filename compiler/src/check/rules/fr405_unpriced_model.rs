//! # FR405 `unpriced-model`
//!
//! ## What it does
//! With a `MaxTotalCost` budget, finds each model an agent or a manager uses that has no
//! `Pricing` of its own and that the bundled list of prices does not know: a model id other
//! than OpenAI's and Anthropic's well-known ones, or one of those on another server (an
//! `Endpoint` other than `api.openai.com` or `api.anthropic.com`). Agents without a model
//! (the command line's `--model` decides) are not judged here; the run says so when it
//! meets an unknown cost.
//!
//! ## Why is this bad?
//! A call whose price is unknown costs an unknown amount: the budget cannot count it, so
//! the run may spend past `MaxTotalCost` without stopping. At run time fuseraft says so
//! once, with a warning, and goes on.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   MaxTotalCost: 5
//!   Models:
//!     local: { ModelId: qwen3, Endpoint: "http://localhost:8000/v1" }
//!   Agents:
//!     - { Name: Writer, Model: local }
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   MaxTotalCost: 5
//!   Models:
//!     local:
//!       ModelId: qwen3
//!       Endpoint: "http://localhost:8000/v1"
//!       Pricing: { InputPerMillion: 0.2, OutputPerMillion: 0.6 }
//!   Agents:
//!     - { Name: Writer, Model: local }
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::list_prices::listed;
use crate::ir::{Model, Program, StateKind};

pub(crate) fn check(ctx: &mut Ctx<'_>, program: &Program) {
    let Some(max) = program.termination.max_total_cost else {
        return;
    };
    let span = ctx
        .config
        .and_then(|config| config.max_total_cost.as_ref())
        .map(|max| max.span);
    let mut users: Vec<(&Model, Vec<String>)> = Vec::new();
    let managers = program.states.iter().filter_map(|state| match &state.kind {
        StateKind::Select(select) => select
            .manager
            .as_ref()
            .map(|model| (model, format!("the manager of `{}`", state.name))),
        _ => None,
    });
    let agents = program.agents.iter().filter_map(|agent| {
        agent
            .model
            .as_ref()
            .map(|model| (model, format!("`{}`", agent.name)))
    });
    for (model, user) in agents.chain(managers) {
        if priced(model) {
            continue;
        }
        match users.iter_mut().find(|(known, _)| *known == model) {
            Some((_, names)) => names.push(user),
            None => users.push((model, vec![user])),
        }
    }
    for (model, names) in users {
        let mut diag = Diagnostic::warning(
            Code::UnpricedModel,
            format!(
                "model `{}` (used by {}) has no known price: `MaxTotalCost` cannot count its calls",
                model.id,
                names.join(", ")
            ),
        );
        if let Some(span) = span {
            diag = diag.with_label(
                span,
                format!("a budget of ${max} that cannot see this model's cost"),
            );
        }
        ctx.push(diag.with_help(
            "give the model a `Pricing` with `InputPerMillion` and `OutputPerMillion` (US dollars per million tokens)",
        ));
    }
}

/// Whether the model's calls will have a price: its own `Pricing`, or a bundled list price
/// on the provider's own service.
fn priced(model: &Model) -> bool {
    if model.pricing.is_some() {
        return true;
    }
    let own_service = model.endpoint.as_deref().is_none_or(|endpoint| {
        let endpoint = endpoint.to_ascii_lowercase();
        endpoint.contains("://api.openai.com") || endpoint.contains("://api.anthropic.com")
    });
    own_service && listed(&model.id)
}
