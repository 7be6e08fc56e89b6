//! `fuseraft models`: the models fuseraft knows without being told, from the bundled tables:
//! each one's context window (for fitting requests) and list price (for costs), with the
//! tables' dates. A model not listed still runs; set its `MaxContextTokens` and `Pricing`.

use fuseraft_compiler::ir::list_prices::{entries, PriceList, TABLE_DATE as PRICES_DATE};
use fuseraft_vm::providers::{context_window, known_windows, WINDOW_TABLE_DATE};
use serde_json::json;

use super::exit;
use crate::cli::ModelsArgs;

/// One known model: its id prefix, its provider's list, window and prices.
struct Known {
    model: &'static str,
    provider: &'static str,
    window: Option<u64>,
    price: Option<(f64, f64)>,
}

fn provider_of(model: &str) -> &'static str {
    if model.starts_with("claude") {
        "anthropic"
    } else {
        "openai"
    }
}

/// Every model either table names, sorted by provider then id.
fn known() -> Vec<Known> {
    let mut names: Vec<&'static str> = known_windows().iter().map(|(model, _)| *model).collect();
    for list in [PriceList::OpenAi, PriceList::Anthropic] {
        names.extend(entries(list).iter().map(|(model, _, _)| *model));
    }
    names.sort_by_key(|model| (provider_of(model), *model));
    names.dedup();
    names
        .into_iter()
        .map(|model| {
            let list = match provider_of(model) {
                "anthropic" => PriceList::Anthropic,
                _ => PriceList::OpenAi,
            };
            Known {
                model,
                provider: provider_of(model),
                window: context_window(model, None),
                price: fuseraft_compiler::ir::list_prices::list_price(list, model)
                    .map(|pricing| (pricing.input, pricing.output)),
            }
        })
        .collect()
}

pub fn run(args: &ModelsArgs) -> u8 {
    let models = known();
    let text = if args.json {
        let rows: Vec<serde_json::Value> = models
            .iter()
            .map(|known| {
                json!({
                    "model": known.model,
                    "provider": known.provider,
                    "context_window": known.window,
                    "input_per_million": known.price.map(|(input, _)| input),
                    "output_per_million": known.price.map(|(_, output)| output),
                })
            })
            .collect();
        let mut text = serde_json::to_string_pretty(&json!({
            "windows_as_of": WINDOW_TABLE_DATE,
            "prices_as_of": PRICES_DATE,
            "models": rows,
        }))
        .unwrap_or_default();
        text.push('\n');
        text
    } else {
        table(&models)
    };
    super::print_or_fail(&text).unwrap_or(exit::OK)
}

fn table(models: &[Known]) -> String {
    let mut out = format!(
        "{:<20} {:<10} {:>10} {:>10} {:>10}\n",
        "MODEL", "PROVIDER", "WINDOW", "IN $/M", "OUT $/M"
    );
    for known in models {
        let window = known
            .window
            .map_or("-".to_string(), |window| window.to_string());
        let (input, output) = known
            .price
            .map_or(("-".to_string(), "-".to_string()), |(i, o)| {
                (format!("{i:.2}"), format!("{o:.2}"))
            });
        out.push_str(&format!(
            "{:<20} {:<10} {window:>10} {input:>10} {output:>10}\n",
            known.model, known.provider
        ));
    }
    out.push_str(&format!(
        "{} models. A model id matches the longest entry it starts with at a `-`\n(`gpt-4o-mini-2024-07-18` is `gpt-4o-mini`). Windows as of {WINDOW_TABLE_DATE}; list prices\n(US dollars per million tokens on OpenAI's and Anthropic's own services) as of {PRICES_DATE}.\nAny other model runs too: set its `MaxContextTokens` and `Pricing`.\n",
        models.len()
    ));
    out
}
