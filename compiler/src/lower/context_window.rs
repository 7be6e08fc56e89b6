//! An agent's `ContextWindow` keys that need more than a number: `ContextCapFraction` (a
//! decimal in 0.0–1.0, upstream's error outside it) and `ToolResultCharOverrides` (tool
//! names resolved to `ir::Tool`, an unknown one an error with a did-you-mean).

use super::Builder;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::ir::{Fraction, Tool};
use crate::syntax::fuseraft::AgentDecl;

/// `ContextCapFraction`: `None` when absent or 0 (off).
pub(super) fn cap_fraction(
    agent: &str,
    decl: &AgentDecl,
    builder: &mut Builder<'_>,
) -> Option<Fraction> {
    let written = decl.context_cap_fraction.as_ref()?;
    match written.value.trim().parse::<f64>() {
        Ok(0.0) => None,
        Ok(value) if (0.0..=1.0).contains(&value) => Fraction::new(value),
        _ => {
            builder.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!(
                        "agent `{agent}`: `ContextCapFraction` must be 0.0–1.0 (got {})",
                        written.value.trim()
                    ),
                )
                .with_label(written.span, "a share of the model's context window")
                .with_help("write a decimal such as `0.8`, or `0` for no cap"),
            );
            None
        }
    }
}

/// `ToolResultCharOverrides`: each tool named once, by its name or a plugin-qualified one.
pub(super) fn tool_result_overrides(
    decl: &AgentDecl,
    builder: &mut Builder<'_>,
) -> Vec<(Tool, u32)> {
    let mut overrides: Vec<(Tool, u32)> = Vec::new();
    for (name, chars) in &decl.tool_result_overrides {
        let Some(tool) = Tool::resolve(&name.value) else {
            let error = Diagnostic::error(
                Code::InvalidValue,
                format!(
                    "`ToolResultCharOverrides` names `{}`, which is no tool",
                    name.value
                ),
            )
            .with_label(name.span, "not a tool fuseraft offers");
            let names = Tool::ALL.iter().map(|tool| tool.name());
            builder.diags.push(match did_you_mean(&name.value, names) {
                Some(help) => error.with_help(help),
                None => error.with_help("write a tool's name, such as `read_file` or `shell_run`"),
            });
            continue;
        };
        let chars = chars.value.min(u32::MAX.into()) as u32;
        match overrides.iter_mut().find(|(known, _)| *known == tool) {
            Some(entry) => entry.1 = chars,
            None => overrides.push((tool, chars)),
        }
    }
    overrides
}
