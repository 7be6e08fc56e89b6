//! Resolving a configured model (and the command line's overrides) into a [`Target`]: the
//! provider family, the wire format, the request URL, and which key variable is read for it
//! (checked by `keys.rs` before it is read).

use fuseraft_compiler::ir;

use super::endpoint::Endpoint;
use super::keys::{self, Named};
use super::{Overrides, Secret};

/// The wire format a client speaks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Chat completions. `official`: OpenAI's or Azure's own service (they take
    /// `max_completion_tokens`; other servers take `max_tokens`).
    OpenAi {
        azure: bool,
        official: bool,
    },
    Anthropic,
    Ollama,
}

/// What the user's command line decided about endpoints and keys.
#[derive(Clone, Debug, Default)]
pub(crate) struct Given {
    /// `--endpoint`: every endpoint is the user's choice.
    pub endpoint: bool,
    /// `--api-key-env VAR`.
    pub api_key_env: Option<String>,
}

/// A resolved client: where to send, what to ask for, with which key.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub kind: Kind,
    /// The provider as named or inferred (`openai`, `azure`, `vllm`, `anthropic`, ...).
    pub provider: String,
    pub model: String,
    /// The full URL requests are POSTed to.
    pub url: String,
    pub key: Option<Secret>,
    /// The variable the key was read from (or would have been), for a 401's hint.
    pub key_variable: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    pub reasoning_effort: Option<String>,
    /// The model's context window in tokens (`window.rs`), when known.
    pub context_window: Option<u64>,
}

/// The bound on a reply when the model sets no `MaxTokens`, for servers that set none of
/// their own (llama.cpp's, vLLM's and Ollama's generate until the context is full: one reply
/// of a small local model ran to 8,001 tokens over 273 s).
pub(crate) const DEFAULT_REPLY_TOKENS: u64 = 4096;

/// The `max_tokens` a request carries when the model sets none: Anthropic's API requires
/// one; OpenAI's and Azure's own services bound replies by the model (and count reasoning
/// tokens in the bound, so a small default would cut reasoning models short); every other
/// server gets [`DEFAULT_REPLY_TOKENS`].
fn default_reply_tokens(kind: Kind) -> Option<u64> {
    match kind {
        Kind::Anthropic => Some(super::anthropic::DEFAULT_MAX_TOKENS),
        Kind::OpenAi { official: true, .. } => None,
        Kind::OpenAi {
            official: false, ..
        }
        | Kind::Ollama => Some(DEFAULT_REPLY_TOKENS),
    }
}

pub(crate) const OPENAI_ENDPOINT: &str = "https://api.openai.com/v1";
pub(crate) const ANTHROPIC_ENDPOINT: &str = "https://api.anthropic.com";
pub(crate) const OLLAMA_ENDPOINT: &str = "http://localhost:11434";
const AZURE_API_VERSION: &str = "2024-10-21";

/// The provider family a `Provider` name (or `--model` prefix) selects.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Family {
    OpenAi,
    Azure,
    /// Another OpenAI-compatible server (vLLM, llama.cpp, LM Studio, ...).
    Compatible,
    Anthropic,
    Ollama,
}

const PROVIDER_NAMES: &str =
    "openai, azure, anthropic, ollama, vllm, llamacpp, lmstudio, openai-compatible";

/// A provider name lower-cased without separators: `LM-Studio` → `lmstudio`.
fn normalized(name: &str) -> String {
    name.trim()
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.' | ' '))
        .collect()
}

fn family_named(name: &str) -> Option<Family> {
    Some(match normalized(name).as_str() {
        "openai" => Family::OpenAi,
        "azure" | "azureopenai" => Family::Azure,
        "anthropic" | "claude" => Family::Anthropic,
        "ollama" => Family::Ollama,
        "vllm" | "llamacpp" | "lmstudio" | "openaicompatible" | "compatible" | "custom"
        | "local" => Family::Compatible,
        _ => return None,
    })
}

/// `--model PROVIDER:MODEL` (or a bare model id, its provider inferred).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ModelFlag {
    provider: Option<String>,
    id: String,
}

/// The provider names a misspelt `--model` prefix is compared with.
const PROVIDER_SPELLINGS: &[&str] = &[
    "openai",
    "azure",
    "anthropic",
    "ollama",
    "vllm",
    "llamacpp",
    "lmstudio",
    "openai-compatible",
];

pub(crate) fn parse_model_flag(text: &str) -> Result<ModelFlag, String> {
    let text = text.trim();
    let flag = match text.split_once(':') {
        Some((provider, id)) if family_named(provider).is_some() => ModelFlag {
            provider: Some(provider.trim().to_ascii_lowercase()),
            id: id.trim().to_string(),
        },
        // `antropic:claude-sonnet-4-5`: a misspelt provider, not a model id.
        Some((provider, _)) if near_provider(provider).is_some() => {
            let hint = near_provider(provider).unwrap_or_default();
            return Err(format!(
                "--model `{text}`: `{provider}` is not a provider; {hint} (expected PROVIDER:MODEL with one of {PROVIDER_NAMES})"
            ));
        }
        // `llama3.2:3b`: an Ollama tag, not a provider.
        _ => ModelFlag {
            provider: None,
            id: text.to_string(),
        },
    };
    if flag.id.is_empty() {
        return Err(format!(
            "--model `{text}` names no model: expected PROVIDER:MODEL ({PROVIDER_NAMES})"
        ));
    }
    Ok(flag)
}

/// `did you mean `anthropic`?` for a name a small edit away from a provider's.
fn near_provider(name: &str) -> Option<String> {
    let name = name.trim();
    if name.len() < 3 {
        return None;
    }
    fuseraft_compiler::ir::did_you_mean(name, PROVIDER_SPELLINGS.iter().copied())
}

/// The model a call really uses, the overrides applied.
pub(crate) fn effective_model(
    configured: Option<&ir::Model>,
    forced: Option<&ModelFlag>,
    overrides: &Overrides,
) -> Result<ir::Model, String> {
    let mut model = match (configured, forced) {
        (Some(configured), None) => configured.clone(),
        (configured, Some(flag)) => {
            let mut model = ir::Model {
                provider: flag.provider.clone(),
                id: flag.id.clone(),
                ..ir::Model::default()
            };
            if let Some(configured) = configured {
                model.alias = configured.alias.clone();
                model.temperature = configured.temperature.clone();
                model.max_tokens = configured.max_tokens;
                model.reasoning_effort = configured.reasoning_effort.clone();
                // The endpoint and key belong to the configured provider: keep them only
                // when the flag keeps that provider.
                if family_of(configured)? == family_of(&model)? {
                    model.endpoint = configured.endpoint.clone();
                    model.api_key_env = configured.api_key_env.clone();
                    model.has_literal_key = configured.has_literal_key;
                    // So are the timeouts (they describe that server), and the price when
                    // the flag names the same model.
                    model.timeouts = configured.timeouts;
                    if model.id.trim().eq_ignore_ascii_case(configured.id.trim()) {
                        model.pricing = configured.pricing;
                    }
                }
            }
            model
        }
        (None, None) => return Err("no model: pass --model PROVIDER:MODEL".to_string()),
    };
    if let Some(endpoint) = &overrides.endpoint {
        model.endpoint = Some(endpoint.trim().to_string());
    }
    Ok(model)
}

/// The provider family of a model: explicit, else inferred from its id and endpoint.
fn family_of(model: &ir::Model) -> Result<Family, String> {
    if let Some(provider) = &model.provider {
        return family_named(provider).ok_or_else(|| {
            format!("unknown provider `{provider}` (expected one of {PROVIDER_NAMES})")
        });
    }
    let id = model.id.to_ascii_lowercase();
    if id.starts_with("claude") {
        return Ok(Family::Anthropic);
    }
    if let Some(endpoint) = &model.endpoint {
        let endpoint = Endpoint::parse(endpoint)?;
        if endpoint.host_is("anthropic.com") || endpoint.host_under("anthropic.com") {
            return Ok(Family::Anthropic);
        }
        if endpoint.host_under("azure.com") {
            return Ok(Family::Azure);
        }
        if endpoint.host_is("api.openai.com") {
            return Ok(Family::OpenAi);
        }
        let path = endpoint.path();
        let path = path.trim_end_matches('/');
        if path.ends_with("/api") || path.ends_with("/api/chat") {
            return Ok(Family::Ollama);
        }
        if endpoint.port() == Some(11434) && !path.contains("/v1") {
            return Ok(Family::Ollama);
        }
        return Ok(Family::Compatible);
    }
    Ok(Family::OpenAi)
}

impl Target {
    /// Resolves one model for `who` (`agent `X``), reading its key through `env`.
    pub(crate) fn resolve(
        who: &str,
        model: &ir::Model,
        given: &Given,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Target, String> {
        let family = family_of(model).map_err(|error| format!("{who}: {error}"))?;
        let provider = match (&model.provider, family) {
            (Some(provider), _) => provider.trim().to_ascii_lowercase(),
            (None, Family::OpenAi) => "openai".to_string(),
            (None, Family::Azure) => "azure".to_string(),
            (None, Family::Compatible) => "openai-compatible".to_string(),
            (None, Family::Anthropic) => "anthropic".to_string(),
            (None, Family::Ollama) => "ollama".to_string(),
        };
        if model.id.trim().is_empty() {
            return Err(format!("{who}: provider `{provider}` needs a model id"));
        }
        // OpenAI's ids hold no `:` but a fine-tune's (`ft:gpt-4o-mini:org::id`): `foo:bar`
        // sent there is a provider or an Ollama tag gone astray.
        let id = model.id.trim();
        if family == Family::OpenAi
            && model.endpoint.is_none()
            && id.contains(':')
            && !id.starts_with("ft:")
        {
            let (prefix, _) = id.split_once(':').unwrap_or_default();
            return Err(format!(
                "{who}: `{id}` is no OpenAI model id and `{prefix}` no provider (one of {PROVIDER_NAMES}); an Ollama model with a tag is `ollama:{id}`"
            ));
        }
        let endpoint_text = match (&model.endpoint, family) {
            (Some(endpoint), _) => endpoint.clone(),
            (None, Family::OpenAi) => OPENAI_ENDPOINT.to_string(),
            // The local servers' own defaults; a generic compatible server must say where.
            (None, Family::Compatible) => match normalized(&provider).as_str() {
                "vllm" => "http://localhost:8000/v1".to_string(),
                "llamacpp" => "http://localhost:8080/v1".to_string(),
                "lmstudio" => "http://localhost:1234/v1".to_string(),
                _ => {
                    return Err(format!(
                        "{who}: provider `{provider}` needs an Endpoint (the server's URL, like http://localhost:8000/v1)"
                    ))
                }
            },
            (None, Family::Anthropic) => ANTHROPIC_ENDPOINT.to_string(),
            (None, Family::Ollama) => OLLAMA_ENDPOINT.to_string(),
            (None, Family::Azure) => {
                return Err(format!(
                    "{who}: provider `azure` needs an Endpoint (https://RESOURCE.openai.azure.com)"
                ))
            }
        };
        let endpoint =
            Endpoint::parse(&endpoint_text).map_err(|error| format!("{who}: {error}"))?;
        let path = endpoint.path().trim_end_matches('/').to_string();
        let official = endpoint.host_is("api.openai.com");
        let (kind, url) = match family {
            Family::OpenAi | Family::Compatible => {
                // A Provider of `ollama` with a `/v1` endpoint lands here too (see below).
                (
                    Kind::OpenAi {
                        azure: false,
                        official,
                    },
                    openai_url(&endpoint, &path),
                )
            }
            Family::Azure => {
                let url = if path.contains("/chat/completions") {
                    endpoint.with_path(&path)
                } else if path.contains("/openai/deployments/") {
                    endpoint.with_path(&format!(
                        "{path}/chat/completions?api-version={AZURE_API_VERSION}"
                    ))
                } else if path.ends_with("/openai/v1") || path.ends_with("/v1") {
                    endpoint.with_path(&format!("{path}/chat/completions"))
                } else {
                    endpoint.with_path(&format!(
                        "{path}/openai/deployments/{}/chat/completions?api-version={AZURE_API_VERSION}",
                        model.id.trim()
                    ))
                };
                (
                    Kind::OpenAi {
                        azure: true,
                        official: true,
                    },
                    url,
                )
            }
            Family::Anthropic => {
                let url = if path.ends_with("/messages") {
                    endpoint.with_path(&path)
                } else if path.ends_with("/v1") {
                    endpoint.with_path(&format!("{path}/messages"))
                } else {
                    endpoint.with_path(&format!("{path}/v1/messages"))
                };
                (Kind::Anthropic, url)
            }
            Family::Ollama if path.ends_with("/v1") || path.contains("/v1/") => (
                // Ollama's OpenAI-compatible API.
                Kind::OpenAi {
                    azure: false,
                    official: false,
                },
                openai_url(&endpoint, &path),
            ),
            Family::Ollama => {
                let url = if path.ends_with("/api/chat") {
                    endpoint.with_path(&path)
                } else if path.ends_with("/api") {
                    endpoint.with_path(&format!("{path}/chat"))
                } else {
                    endpoint.with_path(&format!("{path}/api/chat"))
                };
                (Kind::Ollama, url)
            }
        };
        // Which variable holds the key, and whether the call cannot go without one: the
        // command line's, else the model's ApiKeyEnvVar, else the provider's well-known
        // variable, which is read only for that provider's own host (an OpenAI-compatible
        // server elsewhere or a local one gets no key unless one is named).
        let (variable, named) = match (&given.api_key_env, &model.api_key_env, family) {
            (Some(variable), _, _) => (Some(variable.clone()), Named::CommandLine),
            (None, Some(variable), _) => (Some(variable.trim().to_string()), Named::Config),
            (None, None, Family::OpenAi | Family::Compatible)
                if keys::belongs("OPENAI_API_KEY", &endpoint) =>
            {
                (Some("OPENAI_API_KEY".to_string()), Named::Default)
            }
            (None, None, Family::Anthropic) if keys::belongs("ANTHROPIC_API_KEY", &endpoint) => {
                (Some("ANTHROPIC_API_KEY".to_string()), Named::Default)
            }
            // Azure always needs a key: its own variable, checked below like any other.
            (None, None, Family::Azure) => {
                (Some("AZURE_OPENAI_API_KEY".to_string()), Named::Default)
            }
            (None, None, _) => (None, Named::Default),
        };
        let required = variable.is_some();
        if let Some(variable) = &variable {
            keys::check(who, variable, named, &endpoint, given.endpoint)?;
        }
        let key = match &variable {
            Some(variable) => env(variable)
                .map(|value| value.trim().to_string())
                .filter(|value| !value.is_empty())
                .map(Secret),
            None => None,
        };
        if key.is_none() && (required || model.has_literal_key) {
            let variable = variable.unwrap_or_else(|| "the variable named by ApiKeyEnvVar".into());
            let literal = if model.has_literal_key {
                " (the config's literal ApiKey is never read: keys stay out of the IR; use ApiKeyEnvVar)"
            } else {
                ""
            };
            return Err(format!(
                "{who} uses provider `{provider}`, but {variable} is not set{literal}"
            ));
        }
        let temperature = match &model.temperature {
            Some(text) => Some(
                text.trim()
                    .parse::<f64>()
                    .map_err(|_| format!("{who}: Temperature `{text}` is not a number"))?,
            ),
            None => None,
        };
        Ok(Target {
            kind,
            provider,
            model: model.id.trim().to_string(),
            url,
            key,
            key_variable: variable,
            temperature,
            max_tokens: model.max_tokens.or(default_reply_tokens(kind)),
            reasoning_effort: model
                .reasoning_effort
                .as_ref()
                .map(|effort| effort.trim().to_ascii_lowercase())
                .filter(|effort| !effort.is_empty()),
            context_window: crate::model_windows::context_window(&model.id, model.context_window),
        })
    }

    /// `openai model `gpt-4o` at URL`, for error messages.
    pub(crate) fn label(&self) -> String {
        format!("{} model `{}` at {}", self.provider, self.model, self.url)
    }
}

fn openai_url(endpoint: &Endpoint, path: &str) -> String {
    if path.ends_with("/chat/completions") {
        endpoint.with_path(path)
    } else if path.is_empty() {
        endpoint.with_path("/v1/chat/completions")
    } else {
        endpoint.with_path(&format!("{path}/chat/completions"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(provider: Option<&str>, id: &str, endpoint: Option<&str>) -> ir::Model {
        ir::Model {
            provider: provider.map(str::to_string),
            id: id.to_string(),
            endpoint: endpoint.map(str::to_string),
            ..ir::Model::default()
        }
    }

    fn resolve(model: &ir::Model) -> Result<Target, String> {
        Target::resolve("agent `A`", model, &Given::default(), &|name| {
            Some(format!("key-of-{name}"))
        })
    }

    #[test]
    fn providers_and_urls() {
        let cases = [
            (model(None, "gpt-4o", None), "openai", "https://api.openai.com/v1/chat/completions"),
            (model(None, "claude-sonnet-4-5", None), "anthropic", "https://api.anthropic.com/v1/messages"),
            (model(Some("anthropic"), "x", Some("http://127.0.0.1:9/v1")), "anthropic", "http://127.0.0.1:9/v1/messages"),
            (model(Some("ollama"), "qwen3", None), "ollama", "http://localhost:11434/api/chat"),
            (model(None, "qwen3", Some("http://box:11434")), "ollama", "http://box:11434/api/chat"),
            (model(None, "qwen3", Some("http://box:11434/v1")), "openai-compatible", "http://box:11434/v1/chat/completions"),
            (model(Some("ollama"), "qwen3", Some("http://box:11434/v1")), "ollama", "http://box:11434/v1/chat/completions"),
            (model(None, "grok", Some("https://api.x.ai/v1")), "openai-compatible", "https://api.x.ai/v1/chat/completions"),
            (model(None, "m", Some("https://host/api/openai/v1")), "openai-compatible", "https://host/api/openai/v1/chat/completions"),
            (model(Some("vllm"), "m", Some("http://[::1]:8000")), "vllm", "http://[::1]:8000/v1/chat/completions"),
            (model(Some("azure"), "gpt4o-deploy", Some("https://res.openai.azure.com/")), "azure", "https://res.openai.azure.com/openai/deployments/gpt4o-deploy/chat/completions?api-version=2024-10-21"),
            (model(None, "d", Some("https://res.openai.azure.com/openai/deployments/d")), "azure", "https://res.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"),
        ];
        for (model, provider, url) in cases {
            let target = resolve(&model).unwrap();
            assert_eq!(
                (target.provider.as_str(), target.url.as_str()),
                (provider, url),
                "{model:?}"
            );
        }
        let ollama_v1 = resolve(&model(Some("ollama"), "q", Some("http://h:11434/v1"))).unwrap();
        assert!(matches!(
            ollama_v1.kind,
            Kind::OpenAi {
                official: false,
                ..
            }
        ));
    }

    #[test]
    fn keys_come_from_the_right_variable() {
        let read = |model: &ir::Model| {
            Target::resolve("agent `A`", model, &Given::default(), &|name| {
                Some(format!("key-of-{name}"))
            })
            .unwrap()
            .key
            .map(|key| key.expose().to_string())
        };
        assert_eq!(
            read(&model(None, "gpt-4o", None)).as_deref(),
            Some("key-of-OPENAI_API_KEY")
        );
        assert_eq!(
            read(&model(None, "claude-3", None)).as_deref(),
            Some("key-of-ANTHROPIC_API_KEY")
        );
        assert_eq!(
            read(&model(
                Some("azure"),
                "d",
                Some("https://r.openai.azure.com")
            ))
            .as_deref(),
            Some("key-of-AZURE_OPENAI_API_KEY")
        );
        // No OpenAI key to third parties or local servers.
        assert_eq!(
            read(&model(None, "grok", Some("https://api.x.ai/v1"))),
            None
        );
        assert_eq!(read(&model(Some("ollama"), "q", None)), None);
        assert_eq!(
            read(&model(
                Some("openai"),
                "m",
                Some("https://owui.example/api/openai/v1")
            )),
            None
        );
        assert_eq!(
            read(&model(
                Some("anthropic"),
                "claude-3",
                Some("http://127.0.0.1:9")
            )),
            None
        );
        let mut xai = model(None, "grok", Some("https://api.x.ai/v1"));
        xai.api_key_env = Some("XAI_API_KEY".into());
        assert_eq!(read(&xai).as_deref(), Some("key-of-XAI_API_KEY"));
    }

    #[test]
    fn missing_keys_name_who_which_provider_and_which_variable() {
        let none = |_: &str| None;
        let error = Target::resolve(
            "agent `Planner`",
            &model(None, "claude-3", None),
            &Given::default(),
            &none,
        )
        .unwrap_err();
        assert_eq!(
            error,
            "agent `Planner` uses provider `anthropic`, but ANTHROPIC_API_KEY is not set"
        );
        let mut literal = model(Some("openai"), "gpt-4o", None);
        literal.has_literal_key = true;
        let error = Target::resolve("agent `Dev`", &literal, &Given::default(), &none).unwrap_err();
        assert!(error.starts_with("agent `Dev` uses provider `openai`, but OPENAI_API_KEY is not set (the config's literal ApiKey"), "{error}");
        let empty = |_: &str| Some("  ".to_string());
        assert!(Target::resolve(
            "agent `A`",
            &model(None, "gpt-4o", None),
            &Given::default(),
            &empty
        )
        .is_err());
        assert!(Target::resolve(
            "agent `A`",
            &model(Some("ollama"), "q", None),
            &Given::default(),
            &none
        )
        .is_ok());
    }

    #[test]
    fn bad_configs_are_errors() {
        let error = resolve(&model(Some("bedrock"), "m", None)).unwrap_err();
        assert!(
            error.starts_with("agent `A`: unknown provider `bedrock`"),
            "{error}"
        );
        let mut hot = model(None, "gpt-4o", None);
        hot.temperature = Some("warm".into());
        assert_eq!(
            resolve(&hot).unwrap_err(),
            "agent `A`: Temperature `warm` is not a number"
        );
        assert!(resolve(&model(None, "m", Some("ftp://x"))).is_err());
        assert!(resolve(&model(Some("openai-compatible"), "m", None))
            .unwrap_err()
            .contains("needs an Endpoint"));
        assert_eq!(
            resolve(&model(Some("LM-Studio"), "m", None)).unwrap().url,
            "http://localhost:1234/v1/chat/completions"
        );
        assert!(resolve(&model(Some("azure"), "m", None))
            .unwrap_err()
            .contains("needs an Endpoint"));
    }

    #[test]
    fn model_flag() {
        assert_eq!(
            parse_model_flag("ollama:llama3.2:3b").unwrap(),
            ModelFlag {
                provider: Some("ollama".into()),
                id: "llama3.2:3b".into()
            }
        );
        assert_eq!(
            parse_model_flag("llama3.2:3b").unwrap(),
            ModelFlag {
                provider: None,
                id: "llama3.2:3b".into()
            }
        );
        assert!(parse_model_flag("openai:").is_err());
        // The flag replaces provider and id; sampling settings stay; the endpoint stays
        // only for the same provider.
        let mut configured = model(Some("ollama"), "qwen3", Some("http://gpu:11434"));
        configured.temperature = Some("0.2".into());
        let same = effective_model(
            Some(&configured),
            Some(&parse_model_flag("ollama:llama3").unwrap()),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(
            (
                same.id.as_str(),
                same.endpoint.as_deref(),
                same.temperature.as_deref()
            ),
            ("llama3", Some("http://gpu:11434"), Some("0.2"))
        );
        let other = effective_model(
            Some(&configured),
            Some(&parse_model_flag("anthropic:claude-x").unwrap()),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(
            (other.provider.as_deref(), other.endpoint.as_deref()),
            (Some("anthropic"), None)
        );
        let endpoint = Overrides {
            endpoint: Some("http://127.0.0.1:1/v1".into()),
            ..Overrides::default()
        };
        assert_eq!(
            effective_model(Some(&configured), None, &endpoint)
                .unwrap()
                .endpoint
                .as_deref(),
            Some("http://127.0.0.1:1/v1")
        );
    }
}
