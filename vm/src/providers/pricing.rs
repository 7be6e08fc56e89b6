//! What a model call costs: the model's own `Pricing` from the config, else the bundled
//! list price (`ir::list_prices`) when the server is that provider's own service (OpenAI's
//! `api.openai.com`, not Azure, whose prices differ; Anthropic's); any other server without
//! a `Pricing` is unpriced. Input tokens the provider read from its prompt cache cost the
//! `CachedInputPerMillion` price when the model has one, else the full input price (an upper
//! bound).

use fuseraft_compiler::ir::list_prices::{list_price, PriceList};
use fuseraft_compiler::ir::Pricing;

use super::Kind;

/// The price of `model` on a server of `kind`: the config's `pricing`, else the bundled
/// list price when the server is the provider's own.
pub(super) fn price(kind: Kind, model: &str, pricing: Option<Pricing>) -> Option<Pricing> {
    if pricing.is_some() {
        return pricing;
    }
    let list = match kind {
        Kind::OpenAi {
            official: true,
            azure: false,
        } => PriceList::OpenAi,
        Kind::Anthropic => PriceList::Anthropic,
        _ => return None,
    };
    list_price(list, model)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENAI_KIND: Kind = Kind::OpenAi {
        azure: false,
        official: true,
    };

    #[test]
    fn only_the_providers_own_services_are_priced_by_the_list() {
        let compatible = Kind::OpenAi {
            azure: false,
            official: false,
        };
        let azure = Kind::OpenAi {
            azure: true,
            official: true,
        };
        assert!(price(OPENAI_KIND, "gpt-4o", None).is_some());
        assert!(price(Kind::Anthropic, "claude-sonnet-4-5", None).is_some());
        assert_eq!(price(compatible, "gpt-4o", None), None);
        assert_eq!(price(azure, "gpt-4o", None), None);
        assert_eq!(price(Kind::Ollama, "gpt-4o", None), None);
    }

    #[test]
    fn a_configured_price_beats_the_list_and_prices_any_server() {
        let own = Pricing {
            input: 1.0,
            output: 2.0,
            cached_input: None,
        };
        let input = |kind, model| price(kind, model, Some(own)).map(|p| p.input);
        assert_eq!(input(OPENAI_KIND, "gpt-4o"), Some(1.0));
        assert_eq!(input(Kind::Ollama, "qwen3"), Some(1.0));
    }
}
