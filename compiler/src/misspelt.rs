//! A cause before its symptoms: a required key the compiler misses and the misspelling that
//! explains it are one problem, reported once, at the misspelling.
//!
//! The rule, for every stage and section alike: an unknown key (FR001) whose did-you-mean
//! names `K`, lying inside the span of an error that names `K` (`config defines no agents`
//! labelled "`Agents:` is missing", "an agent has no `Name`", "the state machine has no
//! `Initial` state"), is folded into that error (the innermost when several hold it): the
//! error keeps its code and message, says that `K:` is misspelt, and points at the
//! misspelling with its did-you-mean. Without the fold, position order printed the symptom
//! first and the cause after it, as a mere warning.

use crate::diagnostic::{Diagnostic, Label};
use crate::Code;

/// Folds each misspelling into the error it explains (see the module header).
pub(crate) fn fold(diags: &mut Vec<Diagnostic>) {
    let mut at = 0;
    while at < diags.len() {
        let Some(meant) = suggestion(&diags[at]) else {
            at += 1;
            continue;
        };
        match symptom(diags, at, &meant) {
            Some(error) => {
                let unknown = diags.remove(at);
                let error = if error > at { error - 1 } else { error };
                diags[error] = merged(&diags[error], &unknown, &meant);
            }
            None => at += 1,
        }
    }
}

/// The key an unknown-key report suggests, from its `did you mean `K`?`.
fn suggestion(diag: &Diagnostic) -> Option<String> {
    if diag.code != Code::UnknownKey {
        return None;
    }
    let help = diag.help.as_deref()?;
    let key = help.strip_prefix("did you mean `")?.strip_suffix("`?")?;
    Some(key.to_string())
}

/// The innermost error that names `` `meant` `` and whose span holds the misspelling.
fn symptom(diags: &[Diagnostic], unknown: usize, meant: &str) -> Option<usize> {
    let inner = diags[unknown].span()?;
    let named = [format!("`{meant}`"), format!("`{meant}:`")];
    let names = |text: &str| named.iter().any(|name| text.contains(name.as_str()));
    diags
        .iter()
        .enumerate()
        .filter(|(index, diag)| *index != unknown && diag.is_error())
        .filter(|(_, diag)| {
            names(&diag.message)
                || diag.labels.iter().any(|label| names(&label.message))
                || diag.help.as_deref().is_some_and(names)
        })
        .filter_map(|(index, diag)| Some((index, diag.span()?)))
        .filter(|(_, outer)| {
            outer.file == inner.file && outer.start <= inner.start && inner.end <= outer.end
        })
        .min_by_key(|(_, outer)| outer.end - outer.start)
        .map(|(index, _)| index)
}

/// `error` said at the misspelling: its message with the cause, the misspelt key as its one
/// label, the did-you-mean as its help.
fn merged(error: &Diagnostic, unknown: &Diagnostic, meant: &str) -> Diagnostic {
    let mut out = Diagnostic::new(
        error.code,
        error.severity,
        format!("{}: `{meant}:` is misspelt", error.message),
    );
    out.labels = unknown
        .span()
        .map(|span| Label {
            span,
            message: format!("fuseraft reads `{meant}:`, not this key"),
            primary: true,
        })
        .into_iter()
        .collect();
    out.help = Some(format!(
        "did you mean `{meant}`? (upstream ignores the misspelt key silently)"
    ));
    out.related = error.related.clone();
    out
}
