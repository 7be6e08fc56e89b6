//! Tests of the key registry: every key of every key table is classified, and the registry
//! names no key the readers would not accept.

use super::*;

#[test]
fn every_key_of_every_table_is_classified() {
    let mut missing = Vec::new();
    for (table, keys) in key_tables() {
        for key in keys {
            if effect(table, key).is_none() {
                missing.push(format!("{table}.{key}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "keys the readers accept but `KEY_EFFECTS` does not classify (acts or inert, and why): {missing:?}"
    );
}

#[test]
fn the_registry_names_only_keys_the_readers_accept() {
    let tables = key_tables();
    let mut stale = Vec::new();
    for (table, key, _) in KEY_EFFECTS {
        let known = tables
            .iter()
            .find(|(name, _)| name == table)
            .is_some_and(|(_, keys)| keys.contains(key));
        if !known {
            stale.push(format!("{table}.{key}"));
        }
    }
    assert!(stale.is_empty(), "classified but not accepted: {stale:?}");
    let mut seen = std::collections::HashSet::new();
    for (table, key, _) in KEY_EFFECTS {
        assert!(
            seen.insert((table, key)),
            "`{table}.{key}` is classified twice"
        );
    }
}

#[test]
fn every_table_with_an_inert_key_is_reached_by_the_walk() {
    // The walk of FR007 starts at `Orchestration` and follows `child`: a table holding an
    // inert key that the walk never enters would stay silent.
    let mut reached = vec!["Orchestration"];
    let mut at = 0;
    while at < reached.len() {
        let table = reached[at];
        at += 1;
        let keys = key_tables()
            .into_iter()
            .find(|(name, _)| *name == table)
            .map(|(_, keys)| keys)
            .unwrap_or_default();
        for key in keys {
            if let Some((next, _)) = child(table, key) {
                if !reached.contains(&next) {
                    reached.push(next);
                }
            }
        }
    }
    for (table, key, effect) in KEY_EFFECTS {
        if matches!(effect, KeyEffect::Inert(_)) {
            assert!(
                reached.contains(table),
                "`{table}.{key}` is inert but the walk never reaches `{table}`: add it to `NESTING`"
            );
        }
    }
}

#[test]
fn inert_reasons_read_as_clauses_about_fuseraft() {
    for (table, key, effect) in KEY_EFFECTS {
        if let KeyEffect::Inert(why) = effect {
            assert!(
                why.starts_with("fuseraft") || why.starts_with("the `"),
                "`{table}.{key}`: the reason should say what fuseraft does: {why}"
            );
            assert!(
                !why.ends_with('.'),
                "`{table}.{key}`: a clause, no full stop"
            );
        }
    }
}
