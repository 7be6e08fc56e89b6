//! Who answers a run's approvals: `--approve all|none`, else the web view and the terminal
//! (whichever answers first), else the terminal, else nobody (refused, saying why). Every
//! answer the operator gives is also a record of the session's audit chain.

use std::io::IsTerminal;

use fuseraft_vm::driver::{Approval, Approvals};
use fuseraft_vm::effect::Question;

use super::{cancel_on_signal, watch_stop_signals};
use crate::cli::{Approve, ExecArgs};
use crate::terminal::approval_question;

/// The approvals of this run (`cancel_on_signal` ends the process when a stop signal
/// comes while the operator is asked).
pub(super) fn approvals(
    args: &ExecArgs,
    ui: Option<&crate::ui::Live>,
    begun: &super::prepare::Begun,
) -> Approvals {
    let cancel = || {
        cancel_on_signal(
            args,
            &begun.provider,
            &begun.session,
            &begun.work_dir,
            "an approval",
        )
    };
    match (args.approve, ui) {
        (Some(Approve::All), _) => Approvals::All,
        (Some(Approve::None), _) => Approvals::None,
        // The page and the terminal (when there is one) both answer, whichever first.
        (None, Some(ui)) => ui.approvals(watch_stop_signals(), cancel()),
        (None, None) if std::io::stdin().is_terminal() => on_the_terminal(cancel()),
        (None, None) => Approvals::Ask(Box::new(move |from: &str, to: &str, asked: &Question| {
            let question = approval_question(from, to, asked);
            eprintln!(
                "{}\n  standard input is not a terminal: refused (pass `--approve all` or `--approve none`)",
                question.trim_end_matches(" [y/N] ")
            );
            Approval::Refused
        })),
    }
}

/// Approvals asked on the terminal. A prompt blocks the run's thread: a signal during it is
/// seen by a watcher thread, and the prompt ends the process (the last checkpoint stays
/// resumable).
fn on_the_terminal(cancel: Box<dyn Fn(&'static str) + Send + Sync>) -> Approvals {
    let stopped = watch_stop_signals();
    Approvals::Ask(Box::new(move |from: &str, to: &str, asked: &Question| {
        let question = approval_question(from, to, asked);
        if matches!(asked, Question::Human { .. }) {
            // A tama `human` step: the line typed is its input; the end of input answers
            // nothing, which stops the run.
            return match crate::terminal::read_answer(&question, &stopped) {
                Ok(Some(line)) => Approval::Redirected(line),
                Ok(None) => Approval::Refused,
                Err(signal) => {
                    cancel(signal);
                    Approval::Refused
                }
            };
        }
        let granted = crate::terminal::ask(&question, &stopped).unwrap_or_else(|signal| {
            cancel(signal);
            false
        });
        Approval::of(granted)
    }))
}

/// `approvals` whose every answer from the operator is also an audit record.
pub(super) fn audited(approvals: Approvals, audit: Option<crate::audit::Shared>) -> Approvals {
    match (approvals, audit) {
        (Approvals::Ask(ask), Some(audit)) => Approvals::Ask(Box::new(
            move |from: &str, to: &str, question: &Question| {
                let answer = ask(from, to, question);
                if let Ok(mut audit) = audit.lock() {
                    audit.operator_answered(from, to, question, &answer);
                }
                answer
            },
        )),
        // `--approve all|none` decides alone: the chain's first record says which.
        (approvals, _) => approvals,
    }
}
