//! The bundled table of list prices (US dollars per million input and output tokens) of
//! well-known models on OpenAI's and Anthropic's own services, dated. The VM prices a call
//! by it when the model has no `Pricing` of its own and its server is that provider's own
//! (`vm/src/providers/pricing.rs`); `check` reads it to tell which models a `MaxTotalCost`
//! budget can see.
//!
//! A model id is priced by the longest entry it starts with at a `-` boundary
//! (`claude-sonnet-4-5-20250929` by `claude-sonnet-4-5`).

use super::Pricing;

impl Pricing {
    /// The cost in US dollars of a call with these token counts, `cached` of the input
    /// tokens read from the provider's prompt cache (at the cached price when there is one,
    /// else at the full input price: an upper bound). Counts come from servers and replay
    /// files: a `cached` above the input tokens is held to them.
    pub fn cost(&self, input_tokens: u64, cached: u64, output_tokens: u64) -> f64 {
        let cached = cached.min(input_tokens);
        let (full, cheap) = match self.cached_input {
            Some(price) => (input_tokens - cached, cached as f64 * price),
            None => (input_tokens, 0.0),
        };
        (full as f64 * self.input + cheap + output_tokens as f64 * self.output) / 1_000_000.0
    }
}

/// When the prices below were read off the providers' pricing pages.
pub const TABLE_DATE: &str = "2025-10";

/// Whose list the price comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PriceList {
    /// `api.openai.com`.
    OpenAi,
    /// `api.anthropic.com`.
    Anthropic,
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

/// The table of `list`: (model id prefix, input, output) in US dollars per million tokens,
/// as `fuseraft models` lists it.
pub fn entries(list: PriceList) -> &'static [(&'static str, f64, f64)] {
    match list {
        PriceList::OpenAi => OPENAI,
        PriceList::Anthropic => ANTHROPIC,
    }
}

/// The list price of `model` in `list`, if the table knows it.
pub fn list_price(list: PriceList, model: &str) -> Option<Pricing> {
    let table = match list {
        PriceList::OpenAi => OPENAI,
        PriceList::Anthropic => ANTHROPIC,
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
        .map(|&(_, input, output)| Pricing {
            input,
            output,
            cached_input: None,
        })
}

/// Whether either list knows `model` (whatever server it runs on).
pub fn listed(model: &str) -> bool {
    [PriceList::OpenAi, PriceList::Anthropic]
        .into_iter()
        .any(|list| list_price(list, model).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_at_a_dash_prices_a_model() {
        let input = |list, model| list_price(list, model).map(|price| price.input);
        assert_eq!(
            input(PriceList::OpenAi, "gpt-4o-mini-2024-07-18"),
            Some(0.15)
        );
        assert_eq!(input(PriceList::OpenAi, "gpt-4o-2024-05-13"), Some(5.0));
        assert_eq!(
            list_price(PriceList::Anthropic, "claude-sonnet-4-5-20250929").map(|p| p.output),
            Some(15.0)
        );
        // A prefix only counts at a `-` boundary: `o3` does not price `o3x`.
        assert_eq!(list_price(PriceList::OpenAi, "o3x"), None);
        assert!(listed("GPT-4o"));
        assert!(!listed("llama3"));
    }

    #[test]
    fn cost_is_per_million_tokens_with_cached_input_priced_apart() {
        let gpt4o = list_price(PriceList::OpenAi, "gpt-4o").unwrap();
        let cost = gpt4o.cost(120, 0, 42);
        assert!((cost - 0.00072).abs() < 1e-12, "{cost}");
        // Without a cached price, cached tokens cost the full input price.
        assert_eq!(gpt4o.cost(1_000_000, 600_000, 0), 2.5);
        let cached = Pricing {
            input: 2.0,
            output: 0.0,
            cached_input: Some(0.5),
        };
        // 400k at $2 + 600k at $0.5.
        assert!((cached.cost(1_000_000, 600_000, 0) - 1.1).abs() < 1e-12);
        // A server claiming more cached tokens than input tokens is held to the input.
        assert!((cached.cost(100, 10_000, 0) - 0.00005).abs() < 1e-12);
    }
}
