//! Who answers a run's approvals: `--approve all|none`, else the web view and the terminal
//! (whichever answers first), else the terminal, else nobody (refused, saying why). Every
//! answer the operator gives is also a record of the session's audit chain. A prompt runs
//! on a thread of its own (the driver's); a stop signal ends the run's `select!`, and the
//! prompt, seeing [`Stopped`], gives up.

use std::io::IsTerminal;
use std::sync::Arc;

use fuseraft_vm::driver::{Approval, Approvals};
use fuseraft_vm::effect::Question;

use super::signals::{Asking, Stopped};
use crate::cli::{Approve, ExecArgs};
use crate::terminal::approval_question;

/// The approvals of this run, each prompt marked in `asking` while it waits.
pub(super) fn approvals(
    args: &ExecArgs,
    ui: Option<&crate::ui::Live>,
    stopped: &Stopped,
    asking: &Asking,
) -> Approvals {
    let approvals = match (args.approve, ui) {
        (Some(Approve::All), _) => Approvals::All,
        (Some(Approve::None), _) => Approvals::None,
        // The page and the terminal (when there is one) both answer, whichever first.
        (None, Some(ui)) => ui.approvals(Arc::clone(stopped)),
        (None, None) if std::io::stdin().is_terminal() => on_the_terminal(Arc::clone(stopped)),
        (None, None) => Approvals::Ask(Arc::new(move |from: &str, to: &str, asked: &Question| {
            let question = approval_question(from, to, asked);
            eprintln!(
                "{}\n  standard input is not a terminal: refused (pass `--approve all` or `--approve none`)",
                question.trim_end_matches(" [y/N] ")
            );
            Approval::Refused
        })),
    };
    marked(approvals, asking)
}

/// Approvals asked on the terminal; a stop signal during a prompt refuses (the run is over
/// by then).
fn on_the_terminal(stopped: Stopped) -> Approvals {
    Approvals::Ask(Arc::new(move |from: &str, to: &str, asked: &Question| {
        let question = approval_question(from, to, asked);
        if matches!(asked, Question::Human { .. }) {
            // A tama `human` step: the line typed is its input; the end of input answers
            // nothing, which stops the run.
            return match crate::terminal::read_answer(&question, &stopped) {
                Ok(Some(line)) => Approval::Redirected(line),
                Ok(None) | Err(_) => Approval::Refused,
            };
        }
        Approval::of(crate::terminal::ask(&question, &stopped).unwrap_or(false))
    }))
}

/// `approvals` with every prompt marked in `asking` while it waits.
fn marked(approvals: Approvals, asking: &Asking) -> Approvals {
    match approvals {
        Approvals::Ask(ask) => {
            let asking = asking.clone();
            Approvals::Ask(Arc::new(
                move |from: &str, to: &str, question: &Question| {
                    asking.during("an approval", || ask(from, to, question))
                },
            ))
        }
        approvals => approvals,
    }
}

/// `approvals` whose every answer from the operator is also an audit record; a prompt a
/// stop signal ended records nothing (nobody answered it).
pub(super) fn audited(
    approvals: Approvals,
    audit: Option<crate::audit::Shared>,
    stopped: &Stopped,
) -> Approvals {
    match (approvals, audit) {
        (Approvals::Ask(ask), Some(audit)) => {
            let stopped = Arc::clone(stopped);
            Approvals::Ask(Arc::new(
                move |from: &str, to: &str, question: &Question| {
                    let answer = ask(from, to, question);
                    if stopped.get().is_none() {
                        if let Ok(mut audit) = audit.lock() {
                            audit.operator_answered(from, to, question, &answer);
                        }
                    }
                    answer
                },
            ))
        }
        // `--approve all|none` decides alone: the chain's first record says which.
        (approvals, _) => approvals,
    }
}
