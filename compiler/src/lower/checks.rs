//! Validator names and contract predicate types, checked against the registries of `ir`
//! (`ir::Validator`, `ir::PredicateType`): a name the VM would not run is an error here, so
//! a program that compiles only gates routes on checks that exist (FR603, FR604).

use super::Builder;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::ir::{PredicateType, Validator, UNIMPLEMENTED_PREDICATES, UNIMPLEMENTED_VALIDATORS};
use crate::syntax::fuseraft::Config;

pub(super) fn check_names(config: &Config, builder: &mut Builder<'_>) {
    let validators = || Validator::ALL.iter().map(|validator| validator.name());
    for name in config.validator_names() {
        if Validator::parse(&name.value).is_some() {
            continue;
        }
        let diag = if let Some(upstream) = upstream(UNIMPLEMENTED_VALIDATORS, &name.value) {
            Diagnostic::error(
                Code::UnknownValidator,
                format!("validator `{upstream}` is upstream's, and fuseraft does not run it"),
            )
            .with_label(name.span, "this gate could never pass")
        } else {
            Diagnostic::error(
                Code::UnknownValidator,
                format!("unknown validator `{}`", name.value),
            )
            .with_label(name.span, "not a validator")
        };
        builder
            .diags
            .push(diag.with_help(help(&name.value, validators())));
    }
    let kinds = || PredicateType::ALL.iter().map(|kind| kind.name());
    for contract in &config.contracts {
        let contract_name = contract
            .name
            .as_ref()
            .map_or("?", |name| name.value.as_str());
        for kind in contract.requires.iter().filter_map(|p| p.kind.as_ref()) {
            if PredicateType::parse(&kind.value).is_some() {
                continue;
            }
            let diag = if let Some(upstream) = upstream(UNIMPLEMENTED_PREDICATES, &kind.value) {
                Diagnostic::error(
                    Code::UnknownPredicate,
                    format!("contract `{contract_name}` uses `{upstream}`, which neither upstream's contract engine nor fuseraft can evaluate"),
                )
                .with_label(kind.span, "no evaluator for this predicate type")
            } else {
                Diagnostic::error(
                    Code::UnknownPredicate,
                    format!(
                        "unknown predicate type `{}` in contract `{contract_name}`",
                        kind.value
                    ),
                )
                .with_label(kind.span, "not a predicate type")
            };
            builder
                .diags
                .push(diag.with_help(help(&kind.value, kinds())));
        }
    }
}

fn upstream(names: &'static [&'static str], written: &str) -> Option<&'static str> {
    names
        .iter()
        .copied()
        .find(|name| name.eq_ignore_ascii_case(written.trim()))
}

fn help<'a>(written: &str, known: impl Iterator<Item = &'a str> + Clone) -> String {
    let list = known.clone().collect::<Vec<_>>().join(", ");
    match did_you_mean(written, known) {
        Some(hint) => format!("{hint} (fuseraft runs: {list})"),
        None => format!("fuseraft runs: {list}"),
    }
}
