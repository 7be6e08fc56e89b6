//! `exec`'s provider options: the flags a session records (`ProviderOptions`) and reuses on
//! `--resume`, the exact resume hint, the timeout flags as [`Settings`], and how tokens and
//! cost read in the summary.

use std::path::Path;

use fuseraft_vm::driver;
use fuseraft_vm::providers::TimeoutFlags;
use serde_json::{json, Value as Json};

use crate::cli::ExecArgs;

/// `--model`, `--endpoint` and `--api-key-env` (a variable's name, never a key): what a
/// session records as `ProviderOptions` so that `--resume` runs against the same provider.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ProviderFlags {
    pub(super) model: Option<String>,
    pub(super) endpoint: Option<String>,
    pub(super) api_key_env: Option<String>,
}

impl ProviderFlags {
    pub(super) fn given(args: &ExecArgs) -> ProviderFlags {
        ProviderFlags {
            model: args.model.clone(),
            endpoint: args.endpoint.clone(),
            api_key_env: args.api_key_env.clone(),
        }
    }

    /// What a checkpoint recorded (`ProviderOptions`), if anything.
    pub(super) fn recorded(saved: &Json) -> ProviderFlags {
        let options = saved.get("ProviderOptions");
        let field = |name: &str| {
            options
                .and_then(|options| options.get(name))
                .and_then(Json::as_str)
                .map(str::to_string)
        };
        ProviderFlags {
            model: field("Model"),
            endpoint: field("Endpoint"),
            api_key_env: field("ApiKeyEnv"),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        *self == ProviderFlags::default()
    }

    pub(super) fn json(&self) -> Json {
        json!({"Model": self.model, "Endpoint": self.endpoint, "ApiKeyEnv": self.api_key_env})
    }

    /// ` --model 'openai:x' --endpoint 'http://…'`, shell-quoted.
    pub(super) fn flags(&self) -> String {
        let mut text = String::new();
        for (flag, value) in [
            ("--model", &self.model),
            ("--endpoint", &self.endpoint),
            ("--api-key-env", &self.api_key_env),
        ] {
            if let Some(value) = value {
                text.push_str(&format!(" {flag} {}", shell_quoted(value)));
            }
        }
        text
    }
}

/// `text` as one shell word: as is when it holds only safe characters, else single-quoted.
pub(crate) fn shell_quoted(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-.:/@%+=,".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The timeout flags given: each beats the models' own timeout keys, which beat the
/// defaults of [`Settings`].
pub(super) fn timeout_flags(args: &ExecArgs) -> Result<TimeoutFlags, String> {
    let mut flags = TimeoutFlags::default();
    for (flag, value, slot) in [
        ("--timeout", args.timeouts.timeout, &mut flags.timeout),
        (
            "--idle-timeout",
            args.timeouts.idle_timeout,
            &mut flags.idle,
        ),
        (
            "--connect-timeout",
            args.timeouts.connect_timeout,
            &mut flags.connect,
        ),
    ] {
        if let Some(seconds) = value {
            *slot = Some(
                std::time::Duration::try_from_secs_f64(seconds)
                    .ok()
                    .filter(|duration| !duration.is_zero())
                    .ok_or_else(|| {
                        format!("{flag} {seconds}: expected a positive number of seconds")
                    })?,
            );
        }
    }
    Ok(flags)
}

/// ` · cost $0.0123` by the bundled price table, `$0.0123+ (partial)` when some calls had
/// no known price; nothing when none had.
pub(super) fn cost_text(cost: &driver::Cost) -> String {
    match (cost.priced, cost.unpriced) {
        (0, _) => String::new(),
        (_, 0) => format!(" · cost ${:.4}", cost.usd),
        _ => format!(" · cost ${:.4}+ (partial)", cost.usd),
    }
}

/// The run's cost for `--json`: `{usd, complete, prices}` (the price table's date), or null.
pub(super) fn cost_json(cost: &driver::Cost) -> Json {
    let mut json = cost.json();
    if let Some(object) = json.as_object_mut() {
        object.insert(
            "prices".into(),
            json!(fuseraft_vm::providers::PRICE_TABLE_DATE),
        );
    }
    json
}

/// Token counts for the summary line: `tokens in 1200 / out 300`, or with calls whose
/// server reported no usage, `tokens in 1200+ (partial) / out 300+` or `tokens unknown`.
pub(super) fn tokens_text(usage: fuseraft_vm::history::Usage, unreported: u32) -> String {
    let text = tokens_counts(usage, unreported);
    if usage.cache_read_tokens > 0 || usage.cache_write_tokens > 0 {
        format!(
            "{text} (prompt cache: {} read, {} written)",
            usage.cache_read_tokens, usage.cache_write_tokens
        )
    } else {
        text
    }
}

fn tokens_counts(usage: fuseraft_vm::history::Usage, unreported: u32) -> String {
    if unreported == 0 {
        format!(
            "tokens in {} / out {}",
            usage.input_tokens, usage.output_tokens
        )
    } else if usage.total() == 0 {
        "tokens unknown (the server reported no usage)".to_string()
    } else {
        format!(
            "tokens in {}+ (partial) / out {}+",
            usage.input_tokens, usage.output_tokens
        )
    }
}

/// ` · resume with: fuseraft exec INPUT --resume ID --work-dir DIR` and the provider flags
/// the run used (`--model`, `--endpoint`, `--api-key-env`, or `--replay FILE`); nothing
/// for an `--ephemeral` run, which cannot be resumed.
pub(super) fn resume_hint(
    args: &ExecArgs,
    provider: &ProviderFlags,
    session: &str,
    work_dir: &Path,
) -> String {
    if args.ephemeral {
        return String::new();
    }
    let replay = args
        .replay
        .as_ref()
        .map(|path| format!(" --replay {}", shell_quoted(&path.display().to_string())))
        .unwrap_or_default();
    // The flags that change the program or where its key comes from.
    let same = [(args.no_replan, " --no-replan"), (args.vscode, " --vscode")]
        .iter()
        .filter(|(given, _)| *given)
        .map(|(_, flag)| *flag)
        .collect::<String>();
    format!(
        " · resume with: fuseraft exec {} --resume {session} --work-dir {}{replay}{}{same}",
        shell_quoted(&args.input.display().to_string()),
        shell_quoted(&work_dir.display().to_string()),
        provider.flags()
    )
}

/// The provider options of the run for `--json`: the flags used, or `replay`.
pub(super) fn provider_options_summary(args: &ExecArgs, provider: &ProviderFlags) -> Json {
    match &args.replay {
        Some(path) => json!({"replay": path.display().to_string()}),
        None => json!({
            "model": provider.model,
            "endpoint": provider.endpoint,
            "api_key_env": provider.api_key_env,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fuseraft_vm::history::Usage;

    #[test]
    fn resume_flags_are_shell_words() {
        assert_eq!(shell_quoted("openai:gpt-4o"), "openai:gpt-4o");
        assert_eq!(
            shell_quoted("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1"
        );
        assert_eq!(shell_quoted("a b"), "'a b'");
        assert_eq!(shell_quoted("it's"), "'it'\\''s'");
        assert_eq!(shell_quoted(""), "''");
        let flags = ProviderFlags {
            model: Some("ollama:qwen2.5".into()),
            endpoint: None,
            api_key_env: Some("MY KEY".into()),
        };
        assert_eq!(
            flags.flags(),
            " --model ollama:qwen2.5 --api-key-env 'MY KEY'"
        );
        assert_eq!(
            ProviderFlags::recorded(&json!({"ProviderOptions": flags.json()})),
            flags
        );
        assert!(ProviderFlags::recorded(&json!({})).is_empty());
    }

    #[test]
    fn tokens_and_cost_say_when_they_are_unknown_or_partial() {
        let usage = Usage {
            input_tokens: 1200,
            output_tokens: 30,
            ..Usage::default()
        };
        assert_eq!(tokens_text(usage, 0), "tokens in 1200 / out 30");
        assert_eq!(tokens_text(usage, 2), "tokens in 1200+ (partial) / out 30+");
        assert_eq!(
            tokens_text(Usage::default(), 1),
            "tokens unknown (the server reported no usage)"
        );
        let cost = |priced, unpriced| driver::Cost {
            usd: 0.006,
            priced,
            unpriced,
        };
        assert_eq!(cost_text(&cost(0, 3)), "");
        assert_eq!(cost_text(&cost(2, 0)), " · cost $0.0060");
        assert_eq!(cost_text(&cost(2, 1)), " · cost $0.0060+ (partial)");
        assert!(cost_json(&cost(0, 1)).is_null());
        assert_eq!(cost_json(&cost(1, 0))["complete"], true);
    }
}
