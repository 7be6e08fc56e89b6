//! # FR105 `unknown-model-alias`
//!
//! ## What it does
//! Checks every model reference (an agent's `Model`, `Selection.Model`, `Magentic.Model`):
//! - a `ModelId` that is not a `Models:` alias but is one or two edits away from one
//!   (`fats` for `fast`) is a warning: upstream sends the typo to the provider as a model
//!   name;
//! - a `ModelId` with no `Endpoint` (its own or its alias's) that matches no known provider
//!   prefix (`gpt`, `o1`/`o3`/`o4`, `claude-`, `gemini-`, `grok-`, `mistral-`, `deepseek-`, …)
//!   and is not a local Ollama id (`llama…`, `qwen…`, `name:tag`) is an error, as in
//!   `fuseraft validate` (which, unlike `check`, also fills empty endpoints from the
//!   user's `~/.fuseraft/config`).
//!
//! ## Why is this bad?
//! Otherwise the mistake surfaces only at the first API call.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Models:
//!     fast: { ModelId: gpt-4o-mini, ApiKeyEnvVar: OPENAI_API_KEY }
//!   Agents:
//!     - Name: Writer
//!       Model: fats
//! ```
//! Use instead:
//! ```yaml
//! Orchestration:
//!   Models:
//!     fast: { ModelId: gpt-4o-mini, ApiKeyEnvVar: OPENAI_API_KEY }
//!   Agents:
//!     - Name: Writer
//!       Model: fast
//! ```

use super::super::context::{transposed, Ctx};
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::syntax::fuseraft::ModelDecl;

const PREFIXES: &[&str] = &[
    "gpt",
    "o1",
    "o3",
    "o4",
    "grok-",
    "claude-",
    "gemini-",
    "learnlm-",
    "mistral-",
    "mixtral-",
    "codestral-",
    "pixtral-",
    "deepseek-",
    "llama",
    "phi",
    "qwen",
    "gemma",
    "codellama",
    "smollm",
];

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let mut models: Vec<&ModelDecl> = config
        .agents
        .iter()
        .filter_map(|a| a.model.as_ref())
        .collect();
    models.extend(config.selection.model.as_ref());
    models.extend(
        config
            .selection
            .magentic
            .as_ref()
            .and_then(|m| m.model.as_ref()),
    );
    let aliases: Vec<&str> = config
        .models
        .iter()
        .map(|(alias, _)| alias.value.as_str())
        .collect();
    let mut found = Vec::new();
    for model in models {
        let Some(id) = &model.model_id else { continue };
        let alias = config
            .models
            .iter()
            .find(|(alias, _)| alias.value.eq_ignore_ascii_case(&id.value));
        let near = || {
            did_you_mean(&id.value, aliases.iter().copied()).or_else(|| {
                aliases
                    .iter()
                    .find(|alias| transposed(&id.value, alias))
                    .map(|alias| format!("did you mean `{alias}`?"))
            })
        };
        if let Some(hint) = alias.is_none().then(near).flatten() {
            let meant = hint.split('`').nth(1).unwrap_or_default().to_string();
            found.push((
                Some(meant),
                Diagnostic::warning(
                    Code::UnknownModelAlias,
                    format!(
                        "model `{}` is not a `Models:` alias, but looks like one",
                        id.value
                    ),
                )
                .with_label(id.span, "sent to the provider as a model name")
                .with_help(hint),
            ));
            continue;
        }
        let (resolved, endpoint) = match alias {
            Some((_, base)) => (
                base.model_id
                    .as_ref()
                    .map(|m| m.value.clone())
                    .unwrap_or_default(),
                model.endpoint.is_some() || base.endpoint.is_some(),
            ),
            None => (id.value.clone(), model.endpoint.is_some()),
        };
        let lower = resolved.to_ascii_lowercase();
        let known = PREFIXES.iter().any(|prefix| lower.starts_with(prefix));
        let ollama = lower.contains(':') && !lower.contains("://");
        if !endpoint && !known && !ollama && !resolved.is_empty() {
            found.push((None,
                Diagnostic::error(
                    Code::UnknownModelAlias,
                    format!("model `{resolved}` has no `Endpoint` and matches no known provider"),
                )
                .with_label(id.span, "no endpoint to send this model's requests to")
                .with_help("add `Endpoint:`, name a `Models:` alias that has one, or use a provider model id (`gpt-…`, `claude-…`, `gemini-…`, …)"),
            ));
        }
    }
    for (meant, diag) in found {
        let idx = ctx.push(diag);
        if let Some(meant) = meant {
            ctx.suggested.push((idx, meant));
        }
    }
}
