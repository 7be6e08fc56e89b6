//! A model's prices (`Pricing`) and timeouts (`ConnectTimeoutSeconds`, `IdleTimeoutSeconds`,
//! `TimeoutSeconds`), and `MaxTotalCost`: read as finite numbers, with `FR004` for a price
//! below zero or a timeout or budget that is not above zero (the run would reject every
//! reply, or never wait at all).

use super::fields::{Fields, Spanned};
use crate::diagnostic::{Code, Diagnostic};

pub const PRICING_KEYS: &[&str] = &[
    "InputPerMillion",
    "OutputPerMillion",
    "CachedInputPerMillion",
];

/// `Pricing`: US dollars per million tokens, as written.
#[derive(Clone, Debug)]
pub struct PricingDecl {
    pub span: crate::source::Span,
    pub input: Option<Spanned<f64>>,
    pub output: Option<Spanned<f64>>,
    pub cached_input: Option<Spanned<f64>>,
}

/// The three timeouts of a model, in seconds, as written.
#[derive(Clone, Debug, Default)]
pub struct TimeoutsDecl {
    pub connect: Option<Spanned<f64>>,
    pub idle: Option<Spanned<f64>>,
    pub overall: Option<Spanned<f64>>,
}

/// Reads a model's `Pricing` section, if it has one.
pub fn read_pricing(fields: &Fields<'_>, diags: &mut Vec<Diagnostic>) -> Option<PricingDecl> {
    let pricing = fields.section("Pricing", PRICING_KEYS, diags)?;
    let mut price = |key: &str| at_least_zero(&pricing, key, diags);
    let decl = PricingDecl {
        span: pricing.span(),
        input: price("InputPerMillion"),
        output: price("OutputPerMillion"),
        cached_input: price("CachedInputPerMillion"),
    };
    for (key, value) in [
        ("InputPerMillion", &decl.input),
        ("OutputPerMillion", &decl.output),
    ] {
        if value.is_none() && !pricing.has(key) {
            diags.push(
                Diagnostic::error(
                    Code::MissingRequiredKey,
                    format!("`Pricing` has no `{key}`"),
                )
                .with_label(decl.span, format!("add `{key}` (US dollars per million tokens)"))
                .with_help("a price needs both `InputPerMillion` and `OutputPerMillion`; write 0 for free tokens"),
            );
        }
    }
    Some(decl)
}

/// Reads a model's timeout keys.
pub fn read_timeouts(fields: &Fields<'_>, diags: &mut Vec<Diagnostic>) -> TimeoutsDecl {
    TimeoutsDecl {
        connect: positive(fields, "ConnectTimeoutSeconds", diags),
        idle: positive(fields, "IdleTimeoutSeconds", diags),
        overall: positive(fields, "TimeoutSeconds", diags),
    }
}

/// `MaxTotalCost`: a budget in US dollars, above zero.
pub fn read_max_total_cost(
    fields: &Fields<'_>,
    diags: &mut Vec<Diagnostic>,
) -> Option<Spanned<f64>> {
    positive(fields, "MaxTotalCost", diags)
}

/// A finite number (`.5`, `2`, `1e-3`), or `FR004` naming `key`.
fn number(fields: &Fields<'_>, key: &str, diags: &mut Vec<Diagnostic>) -> Option<Spanned<f64>> {
    let text = fields.str(key, diags)?;
    match text.value.trim().parse::<f64>() {
        Ok(value) if value.is_finite() => Some(Spanned::new(value, text.span)),
        _ => {
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("`{key}` must be a number, found `{}`", text.value),
                )
                .with_label(text.span, "expected a number"),
            );
            None
        }
    }
}

fn at_least_zero(
    fields: &Fields<'_>,
    key: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<Spanned<f64>> {
    let value = number(fields, key, diags)?;
    if value.value < 0.0 {
        diags.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!(
                    "`{key}` is negative ({}): a price cannot be below zero",
                    value.value
                ),
            )
            .with_label(value.span, "must be 0 or more")
            .with_help("write the provider's price in US dollars per million tokens"),
        );
        return None;
    }
    // `-0` is zero, printed as `0`.
    Some(Spanned::new(value.value.abs(), value.span))
}

fn positive(fields: &Fields<'_>, key: &str, diags: &mut Vec<Diagnostic>) -> Option<Spanned<f64>> {
    let value = number(fields, key, diags)?;
    if value.value <= 0.0 {
        let what = if key == "MaxTotalCost" {
            "US dollars: the run would stop at its first priced reply"
        } else {
            "seconds: every request would fail at once"
        };
        diags.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!(
                    "`{key}` is {}, not a positive number of {what}",
                    value.value
                ),
            )
            .with_label(value.span, "must be above 0")
            .with_help(if key == "MaxTotalCost" {
                "remove `MaxTotalCost` for no cost budget, or give a positive number".to_string()
            } else {
                format!("remove `{key}` for the default, or give a positive number")
            }),
        );
        return None;
    }
    Some(value)
}
