//! Checking `Memory`: the provider is `local` or `webhook` (upstream disables memory for any
//! other: a warning here); a webhook's `LoadUrl` and `SaveUrl` are http or https URLs (its
//! URLs are not expanded, only its headers), at least one is given, and `TimeoutSeconds` and
//! `SaveEveryNTurns` are positive whole numbers; a misspelled key is a warning.

use super::Builder;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::syntax::fuseraft::Config;

const WEBHOOK: &str = "Memory.Webhook.";
const WEBHOOK_KEYS: &[&str] = &[
    "LoadUrl",
    "SaveUrl",
    "Headers",
    "TimeoutSeconds",
    "SaveEveryNTurns",
];

pub(super) fn check_memory(config: &Config, builder: &mut Builder<'_>) {
    let setting = |key: &str| {
        config
            .settings
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|(_, value)| value)
    };
    let Some(provider) = setting("Memory.Provider") else {
        return;
    };
    let name = provider.value.trim().to_ascii_lowercase();
    if name != "local" && name != "webhook" {
        builder.diags.push(
            Diagnostic::warning(
                Code::InvalidValue,
                format!(
                    "unknown memory provider `{}`: memory is off",
                    provider.value
                ),
            )
            .with_label(provider.span, "not a memory provider")
            .with_help("providers: `local` (memories under `.fuseraft/memory/`) and `webhook`"),
        );
        return;
    }
    let mut urls = 0;
    for (key, value) in &config.settings {
        let Some(field) = key
            .get(..WEBHOOK.len())
            .filter(|prefix| prefix.eq_ignore_ascii_case(WEBHOOK))
            .map(|_| &key[WEBHOOK.len()..])
        else {
            continue;
        };
        let head = field.split('.').next().unwrap_or(field);
        match head.to_ascii_lowercase().as_str() {
            "loadurl" | "saveurl" => {
                urls += 1;
                if !is_http_url(&value.value) {
                    let diag = Diagnostic::error(
                        Code::InvalidValue,
                        format!("the memory webhook's `{head}` is not an http or https URL"),
                    )
                    .with_label(value.span, "fuseraft posts to an http or https URL only")
                    .with_help("write the scheme and host: `https://memory.example.com/load` (`${VAR}` expands in `Headers` only)");
                    builder.diags.push(diag);
                }
            }
            "timeoutseconds" | "saveeverynturns" => {
                if value.value.trim().parse::<u64>().map_or(true, |n| n == 0) {
                    let diag = Diagnostic::error(
                        Code::InvalidValue,
                        format!("the memory webhook's `{head}` must be a positive whole number"),
                    )
                    .with_label(value.span, "expected a number such as `10`");
                    builder.diags.push(diag);
                }
            }
            "headers" => {}
            _ => {
                let mut diag = Diagnostic::warning(
                    Code::UnknownKey,
                    format!("unknown key `{head}` in `Memory.Webhook`"),
                )
                .with_label(value.span, "fuseraft does not read this key");
                if let Some(help) = did_you_mean(head, WEBHOOK_KEYS.iter().copied()) {
                    diag = diag.with_help(help);
                }
                builder.diags.push(diag);
            }
        }
    }
    if name == "webhook" && urls == 0 {
        builder.diags.push(
            Diagnostic::warning(
                Code::MissingRequiredKey,
                "the webhook memory provider names no `Webhook.LoadUrl` or `Webhook.SaveUrl`: it does nothing",
            )
            .with_label(provider.span, "the webhook provider is chosen here"),
        );
    }
}

/// Whether `text` is an http or https URL with a host.
fn is_http_url(text: &str) -> bool {
    let lower = text.trim().to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    rest.is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
}
