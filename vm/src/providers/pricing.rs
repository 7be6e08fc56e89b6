//! What model calls cost: a bundled table of list prices (US dollars per million input and
//! output tokens) for well-known models of OpenAI's and Anthropic's own services, dated.
//!
//! A model id is priced by the longest entry it starts with (`claude-sonnet-4-5-20250929`
//! by `claude-sonnet-4-5`), on OpenAI's own service (not Azure, whose prices differ) and
//! Anthropic's only; any other server, or a model not in the table, is unpriced. Input
//! tokens are priced at the full input rate, cached or not, so a cost is an upper bound when
//! the provider cached part of a prompt.

use super::Kind;

/// When the prices below were read off the providers' pricing pages.
pub const TABLE_DATE: &str = "2025-10";

/// US dollars per million tokens.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

impl Price {
    /// The cost in US dollars of a call with these token counts.
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input + output_tokens as f64 * self.output) / 1_000_000.0
    }
}

/// (model id prefix, input, output).
const OPENAI: &[(&str, f64, f64)] = &[
    ("gpt-5", 1.25, 10.0),
    ("gpt-5-mini", 0.25, 2.0),
    ("gpt-5-nano", 0.05, 0.40),
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4o", 2.50, 10.0),
    ("gpt-4o-2024-05-13", 5.0, 15.0),
    ("gpt-4o-mini", 0.15, 0.60),
    ("o3", 2.0, 8.0),
    ("o3-mini", 1.10, 4.40),
    ("o4-mini", 1.10, 4.40),
];

const ANTHROPIC: &[(&str, f64, f64)] = &[
    ("claude-opus-4", 15.0, 75.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-3-7-sonnet", 3.0, 15.0),
    ("claude-3-5-sonnet", 3.0, 15.0),
    ("claude-haiku-4-5", 1.0, 5.0),
    ("claude-3-5-haiku", 0.80, 4.0),
    ("claude-3-haiku", 0.25, 1.25),
];

/// The list price of `model` on a server of `kind`, if the table knows it.
pub fn price(kind: Kind, model: &str) -> Option<Price> {
    let table = match kind {
        Kind::OpenAi {
            official: true,
            azure: false,
        } => OPENAI,
        Kind::Anthropic => ANTHROPIC,
        _ => return None,
    };
    let model = model.trim().to_ascii_lowercase();
    table
        .iter()
        .filter(|(prefix, _, _)| {
            model == *prefix
                || model
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('-'))
        })
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map(|&(_, input, output)| Price { input, output })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENAI_KIND: Kind = Kind::OpenAi {
        azure: false,
        official: true,
    };

    #[test]
    fn the_longest_prefix_prices_a_model() {
        assert_eq!(
            price(OPENAI_KIND, "gpt-4o-mini-2024-07-18").map(|p| p.input),
            Some(0.15)
        );
        assert_eq!(price(OPENAI_KIND, "gpt-4o").map(|p| p.output), Some(10.0));
        assert_eq!(
            price(OPENAI_KIND, "gpt-4o-2024-05-13").map(|p| p.input),
            Some(5.0)
        );
        assert_eq!(
            price(Kind::Anthropic, "claude-sonnet-4-5-20250929").map(|p| p.output),
            Some(15.0)
        );
        // A prefix only counts at a `-` boundary: `o3` does not price `o3x`.
        assert_eq!(price(OPENAI_KIND, "o3x"), None);
        assert_eq!(price(OPENAI_KIND, "llama3"), None);
    }

    #[test]
    fn only_the_providers_own_services_are_priced() {
        let compatible = Kind::OpenAi {
            azure: false,
            official: false,
        };
        let azure = Kind::OpenAi {
            azure: true,
            official: true,
        };
        assert_eq!(price(compatible, "gpt-4o"), None);
        assert_eq!(price(azure, "gpt-4o"), None);
        assert_eq!(price(Kind::Ollama, "gpt-4o"), None);
    }

    #[test]
    fn cost_is_per_million_tokens() {
        let gpt4o = price(OPENAI_KIND, "gpt-4o").unwrap();
        let cost = gpt4o.cost(120, 42);
        assert!((cost - 0.00072).abs() < 1e-12, "{cost}");
    }
}
