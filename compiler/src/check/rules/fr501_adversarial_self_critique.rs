//! # FR501 `adversarial-self-critique`
//!
//! ## What it does
//! Finds adversarial stages whose `Generator` and `Critic` are the same agent (names
//! compare case-insensitively). `fuseraft validate` warns the same.
//!
//! ## Why is this bad?
//! The critic runs behind a context firewall to judge the artifact with fresh eyes; an
//! agent critiquing its own output removes the adversarial signal the pattern exists for.
//!
//! ## Example
//! ```yaml
//! Orchestration:
//!   Agents:
//!     - Name: Writer
//!   Selection:
//!     Type: adversarial
//!     Adversarial:
//!       Stages:
//!         - { Generator: Writer, Critic: writer }
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
//!       Stages:
//!         - { Generator: Writer, Critic: Critic }
//! ```

use super::super::context::Ctx;
use crate::diagnostic::{Code, Diagnostic};

pub(crate) fn check(ctx: &mut Ctx<'_>) {
    let Some(config) = ctx.config else { return };
    let Some(adversarial) = &config.selection.adversarial else {
        return;
    };
    let mut found = Vec::new();
    for (idx, stage) in adversarial.stages.iter().enumerate() {
        let (Some(generator), Some(critic)) = (&stage.generator, &stage.critic) else {
            continue;
        };
        if generator.value.eq_ignore_ascii_case(&critic.value) {
            found.push(
                Diagnostic::warning(
                    Code::AdversarialSelfCritique,
                    format!("stage {} has `{}` critique its own work", idx + 1, generator.value),
                )
                .with_label(critic.span, "the critic is the generator")
                .with_label(generator.span, "generator")
                .with_help("use a different agent as the critic; self-critique defeats the context firewall"),
            );
        }
    }
    for diag in found {
        ctx.push(diag);
    }
}
