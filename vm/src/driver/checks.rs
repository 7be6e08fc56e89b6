//! Running a step's checks (validators and contract predicates) off the runtime, in order
//! until one fails; in a served run the verdicts are a journaled effect like a tool call's
//! result, so a retried turn does not judge the work again.

use std::path::PathBuf;
use std::sync::Arc;

use super::Models;
use crate::effect::{Check, CheckContext, CheckResult};
use crate::journal::{Recalled, Repeat};
use crate::sandbox::Confinement;

/// Runs `checks` in order, stopping at the first that fails; a kept verdict from an earlier
/// attempt stands in for them.
pub(super) async fn run_checks<M: Models>(
    models: &M,
    checks: Vec<Check>,
    context: Box<CheckContext>,
    work_dir: PathBuf,
    confinement: Arc<Confinement>,
) -> Vec<CheckResult> {
    let Some(journal) = models.journal() else {
        return evaluate(checks, context, work_dir, confinement).await;
    };
    // A check that runs commands acts (its tests may write): made at most once, like a
    // command; one that only reads may be judged again.
    let repeat = match checks.iter().any(Check::runs_commands) {
        true => Repeat::Once,
        false => Repeat::Safe,
    };
    match journal.recall("checks", repeat).await {
        Recalled::Kept(text) => match crate::journal::restore_check_results(&text) {
            Some(results) => results,
            None => evaluate(checks, context, work_dir, confinement).await,
        },
        Recalled::Interrupted if repeat == Repeat::Safe => {
            evaluate(checks, context, work_dir, confinement).await
        }
        Recalled::Interrupted => vec![CheckResult::fail(crate::journal::CHECKS_INTERRUPTED)],
        Recalled::Make(keep) => {
            let results = evaluate(checks, context, work_dir, confinement).await;
            keep(crate::journal::check_results(&results));
            results
        }
    }
}

/// Validators read files and may run test commands: they run off the runtime.
async fn evaluate(
    checks: Vec<Check>,
    context: Box<CheckContext>,
    work_dir: PathBuf,
    confinement: Arc<Confinement>,
) -> Vec<CheckResult> {
    let evaluated = tokio::task::spawn_blocking(move || {
        let mut results = Vec::new();
        for check in &checks {
            let result = crate::validate::run(check, &context, &work_dir, &confinement);
            let failed = !result.ok;
            results.push(result);
            if failed {
                break;
            }
        }
        results
    })
    .await;
    evaluated
        .unwrap_or_else(|error| vec![CheckResult::fail(format!("a validator crashed: {error}"))])
}
