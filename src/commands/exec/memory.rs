//! `Memory: { Provider: webhook, Webhook: {...} }` read from the program's settings into the
//! providers' webhook configuration (upstream's defaults: 10 s, a save every 10 turns).

use std::time::Duration;

use fuseraft_compiler::ir::Program;
use fuseraft_vm::providers::WebhookConfig;

/// The webhook memory the program configures, if any.
pub fn webhook(program: &Program) -> Option<WebhookConfig> {
    let setting = |key: &str| {
        program
            .settings
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|(_, value)| value.trim().to_string())
            .filter(|value| !value.is_empty())
    };
    let provider = setting("Memory.Provider")?;
    if !provider.eq_ignore_ascii_case("webhook") {
        return None;
    }
    let prefix = "memory.webhook.headers.";
    let headers = program
        .settings
        .iter()
        .filter_map(|(name, value)| {
            let lower = name.to_ascii_lowercase();
            lower
                .starts_with(prefix)
                .then(|| (name[prefix.len()..].to_string(), value.clone()))
        })
        .collect();
    let number = |key: &str, default: u64| {
        setting(key)
            .and_then(|value| value.parse::<u64>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(default)
    };
    Some(WebhookConfig {
        load_url: setting("Memory.Webhook.LoadUrl"),
        save_url: setting("Memory.Webhook.SaveUrl"),
        headers,
        timeout: Duration::from_secs(number("Memory.Webhook.TimeoutSeconds", 10)),
        save_every: number("Memory.Webhook.SaveEveryNTurns", 10) as u32,
    })
}
