//! Checking the `Compaction` section, which stays dotted settings read by
//! `ir::Program::compaction`: a `Mode` that is none of `llm`, `lossless`, `hybrid`,
//! `window` and `intent` and an `AntiThrashMinSavingsRatio` outside 0–1 are errors
//! (`FR004`), never a silent fall back to `llm`.

use super::Builder;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::ir::CompactionMode;
use crate::syntax::fuseraft::Config;

pub(super) fn check_compaction(config: &Config, builder: &mut Builder<'_>) {
    let setting = |name: &str| {
        config
            .settings
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(&format!("Compaction.{name}")))
            .map(|(_, value)| value)
    };
    if let Some(mode) = setting("Mode") {
        let written = mode.value.trim();
        if CompactionMode::parse(written).is_none() {
            let names = CompactionMode::ALL.iter().map(|mode| mode.as_str());
            let error = Diagnostic::error(
                Code::InvalidValue,
                format!("`Compaction.Mode` `{written}` is not a compaction mode"),
            )
            .with_label(
                mode.span,
                "not `llm`, `lossless`, `hybrid`, `window` or `intent`",
            );
            let diagnostic = match did_you_mean(written, names) {
                Some(help) => error.with_help(help),
                None => error.with_help("write `llm`, `lossless`, `hybrid`, `window` or `intent`"),
            };
            builder.diags.push(diagnostic);
        }
    }
    if let Some(ratio) = setting("AntiThrashMinSavingsRatio") {
        let valid = ratio
            .value
            .trim()
            .parse::<f64>()
            .is_ok_and(|value| (0.0..=1.0).contains(&value));
        if !valid {
            builder.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!(
                        "`Compaction.AntiThrashMinSavingsRatio` must be 0.0–1.0 (got {})",
                        ratio.value.trim()
                    ),
                )
                .with_label(ratio.span, "a share of the request's messages")
                .with_help("write a decimal such as `0.1`, or `0` to turn the guard off"),
            );
        }
    }
    for key in ["TokenBudget", "AntiThrashWindow"] {
        if let Some(value) = setting(key).filter(|value| value.value.trim().parse::<u64>().is_err())
        {
            builder.diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`Compaction.{key}` must be a whole number"),
                )
                .with_label(value.span, "not a whole number"),
            );
        }
    }
}
