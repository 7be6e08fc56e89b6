//! Where a key may go. A well-known provider key (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
//! …) is sent only over https to that provider's own hosts, or to an endpoint the user
//! gave on the command line; a config (shared, cloned, downloaded) that aims one anywhere
//! else is refused before the first call. A key variable of any other name is the config
//! author's choice, and `--api-key-env VAR` is the user's.

use super::endpoint::Endpoint;

/// A host rule: the host itself, or any subdomain of it.
#[derive(Copy, Clone, Debug)]
enum Rule {
    Exact(&'static str),
    Under(&'static str),
}

/// A well-known key variable and the hosts it belongs to.
struct WellKnown {
    variable: &'static str,
    owner: &'static str,
    hosts: &'static [Rule],
}

use Rule::{Exact, Under};

/// Whether `variable` is a well-known provider key variable (`OPENAI_API_KEY`, ...), which
/// goes only to its provider's hosts or an endpoint given on the command line.
pub fn is_well_known(variable: &str) -> bool {
    WELL_KNOWN.iter().any(|known| known.variable == variable)
}

const WELL_KNOWN: &[WellKnown] = &[
    WellKnown {
        variable: "OPENAI_API_KEY",
        owner: "OpenAI",
        hosts: &[Exact("api.openai.com")],
    },
    WellKnown {
        variable: "ANTHROPIC_API_KEY",
        owner: "Anthropic",
        hosts: &[Exact("api.anthropic.com")],
    },
    WellKnown {
        variable: "AZURE_OPENAI_API_KEY",
        owner: "Azure OpenAI",
        hosts: &[
            Under("openai.azure.com"),
            Under("cognitiveservices.azure.com"),
            Under("services.ai.azure.com"),
        ],
    },
    WellKnown {
        variable: "XAI_API_KEY",
        owner: "xAI",
        hosts: &[Exact("api.x.ai")],
    },
    WellKnown {
        variable: "GROQ_API_KEY",
        owner: "Groq",
        hosts: &[Exact("api.groq.com")],
    },
    WellKnown {
        variable: "MISTRAL_API_KEY",
        owner: "Mistral",
        hosts: &[Exact("api.mistral.ai")],
    },
    WellKnown {
        variable: "DEEPSEEK_API_KEY",
        owner: "DeepSeek",
        hosts: &[Exact("api.deepseek.com")],
    },
    WellKnown {
        variable: "OPENROUTER_API_KEY",
        owner: "OpenRouter",
        hosts: &[Exact("openrouter.ai")],
    },
    WellKnown {
        variable: "GEMINI_API_KEY",
        owner: "Google Gemini",
        hosts: &[Exact("generativelanguage.googleapis.com")],
    },
    WellKnown {
        variable: "GOOGLE_API_KEY",
        owner: "Google",
        hosts: &[Exact("generativelanguage.googleapis.com")],
    },
    WellKnown {
        variable: "TOGETHER_API_KEY",
        owner: "Together AI",
        hosts: &[Exact("api.together.xyz"), Exact("api.together.ai")],
    },
    WellKnown {
        variable: "FIREWORKS_API_KEY",
        owner: "Fireworks AI",
        hosts: &[Exact("api.fireworks.ai")],
    },
    WellKnown {
        variable: "PERPLEXITY_API_KEY",
        owner: "Perplexity",
        hosts: &[Exact("api.perplexity.ai")],
    },
    WellKnown {
        variable: "CEREBRAS_API_KEY",
        owner: "Cerebras",
        hosts: &[Exact("api.cerebras.ai")],
    },
];

fn well_known(variable: &str) -> Option<&'static WellKnown> {
    WELL_KNOWN.iter().find(|known| known.variable == variable)
}

/// The hosts of a well-known variable, for messages: `https://api.openai.com`,
/// `https://*.openai.azure.com`.
fn hosts_of(known: &WellKnown) -> String {
    known
        .hosts
        .iter()
        .map(|rule| match rule {
            Exact(host) => format!("https://{host}"),
            Under(domain) => format!("https://*.{domain}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `variable`'s key may go to `endpoint` without the user saying so: any variable
/// that is not well-known; a well-known one only over https to its owner's hosts.
pub(crate) fn belongs(variable: &str, endpoint: &Endpoint) -> bool {
    match well_known(variable) {
        None => true,
        Some(known) => endpoint.is_https() && known_host(known, endpoint),
    }
}

/// Where the key variable of a model came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Named {
    /// `--api-key-env` on the command line: the user's choice.
    CommandLine,
    /// The model's `ApiKeyEnvVar` in the config.
    Config,
    /// The provider's own variable, no one named it.
    Default,
}

/// Refuses a config that aims a well-known key at a host that is not its owner's, unless
/// the user chose the endpoint or the variable on the command line. The message says what
/// happened, why, and how to allow it; it names variables, never values.
pub(crate) fn check(
    who: &str,
    variable: &str,
    named: Named,
    endpoint: &Endpoint,
    endpoint_from_command_line: bool,
) -> Result<(), String> {
    if named == Named::CommandLine || endpoint_from_command_line || belongs(variable, endpoint) {
        return Ok(());
    }
    let Some(known) = well_known(variable) else {
        return Ok(());
    };
    let shown = endpoint.display();
    let how = match named {
        Named::Config => format!("the config names {variable} as the model's ApiKeyEnvVar"),
        _ => format!("{variable} is the provider's own key variable"),
    };
    let why = if endpoint.is_https() || !known_host(known, endpoint) {
        format!(
            "{variable} is {}'s key and goes only to {}",
            known.owner,
            hosts_of(known)
        )
    } else {
        format!("{variable} goes only over https, and this endpoint is plain http")
    };
    Err(format!(
        "{who}: refusing to send {variable} to {shown}: {how}, and the config's Endpoint is \
         {shown}, but {why}; a config from someone else must not be able to send your key to \
         a host of its choosing. If you trust this endpoint, give it on the command line \
         (`--endpoint {shown}`) or name the key variable there (`--api-key-env {variable}`); \
         or give the model a key variable of its own (ApiKeyEnvVar: A_VARIABLE_FOR_THIS_SERVER)"
    ))
}

fn known_host(known: &WellKnown, endpoint: &Endpoint) -> bool {
    known.hosts.iter().any(|rule| match rule {
        Exact(host) => endpoint.host_is(host),
        Under(domain) => endpoint.host_under(domain),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(url: &str) -> Endpoint {
        Endpoint::parse(url).unwrap()
    }

    #[test]
    fn well_known_keys_stay_with_their_owners() {
        let allowed = [
            ("OPENAI_API_KEY", "https://api.openai.com/v1"),
            ("ANTHROPIC_API_KEY", "https://API.ANTHROPIC.COM"),
            ("AZURE_OPENAI_API_KEY", "https://res.openai.azure.com/"),
            ("XAI_API_KEY", "https://api.x.ai/v1"),
            ("MY_PROXY_KEY", "http://gateway.example:8080/v1"),
        ];
        for (variable, url) in allowed {
            assert!(belongs(variable, &at(url)), "{variable} → {url}");
        }
        let refused = [
            ("ANTHROPIC_API_KEY", r"https://evil.example\.anthropic.com"),
            ("ANTHROPIC_API_KEY", "https://evil.anthropic.com"),
            (
                "ANTHROPIC_API_KEY",
                "https://api.anthropic.com.evil.example",
            ),
            ("ANTHROPIC_API_KEY", "http://api.anthropic.com"),
            ("OPENAI_API_KEY", "https://api.openai.com@evil.example"),
            ("OPENAI_API_KEY", "http://127.0.0.1:8000/v1"),
            (
                "AZURE_OPENAI_API_KEY",
                "https://openai.azure.com.evil.example",
            ),
            ("AZURE_OPENAI_API_KEY", "https://evilopenai.azure.com"),
            ("OPENAI_API_KEY", "https://api.anthropic.com"),
        ];
        for (variable, url) in refused {
            let parsed = Endpoint::parse(url);
            assert!(
                parsed.is_err() || !belongs(variable, &parsed.unwrap()),
                "{variable} → {url}"
            );
        }
    }

    #[test]
    fn the_refusal_explains_and_the_command_line_allows() {
        let evil = at("https://evil.example/v1");
        let error = check("agent `A`", "OPENAI_API_KEY", Named::Config, &evil, false).unwrap_err();
        for part in [
            "agent `A`: refusing to send OPENAI_API_KEY to https://evil.example/v1",
            "ApiKeyEnvVar",
            "goes only to https://api.openai.com",
            "`--endpoint https://evil.example/v1`",
            "`--api-key-env OPENAI_API_KEY`",
        ] {
            assert!(error.contains(part), "{part}: {error}");
        }
        let http = check(
            "agent `A`",
            "ANTHROPIC_API_KEY",
            Named::Default,
            &at("http://api.anthropic.com"),
            false,
        )
        .unwrap_err();
        assert!(http.contains("only over https"), "{http}");
        assert!(check("a", "OPENAI_API_KEY", Named::Config, &evil, true).is_ok());
        assert!(check("a", "OPENAI_API_KEY", Named::CommandLine, &evil, false).is_ok());
        assert!(check("a", "MY_KEY", Named::Config, &evil, false).is_ok());
    }
}
