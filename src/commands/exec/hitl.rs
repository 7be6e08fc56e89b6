//! `exec --hitl`: the pause after every turn, answered on the terminal (and, with `--ui`, in
//! the page): Enter goes on, a line of text is sent to the team as the operator's message,
//! `q` stops resumable.

use fuseraft_vm::effect::Question;
use std::io::IsTerminal;
use std::sync::Arc;

use fuseraft_vm::driver::{Pause, PauseFn, Paused};

use super::signals::{Asking, Stopped};
use crate::terminal::neutralise;

/// What answers `--hitl` pauses: with `--ui`, the page and the terminal (when stdin is
/// one), whichever first, and the run waits for them; otherwise the terminal when stdin is
/// one; otherwise, with `--approve`, nobody (the run goes on); without either, the first
/// pause ends the run resumable instead of waiting for an answer that cannot come. A stop
/// signal during a pause quits it (the run is over by then); each pause is marked in
/// `asking` while it waits.
pub(super) fn pauses(
    ui: Option<&crate::ui::Live>,
    approve_given: bool,
    stopped: &Stopped,
    asking: &Asking,
) -> Arc<PauseFn> {
    let pause: Arc<PauseFn> = if let Some(ui) = ui {
        ui.pauses(question, answer, Arc::clone(stopped))
    } else if std::io::stdin().is_terminal() {
        let stopped = Arc::clone(stopped);
        Arc::new(move |at: &Paused<'_>| {
            match crate::terminal::read_answer(&question(at), &stopped) {
                Ok(Some(line)) => answer(&line),
                // End of input: nobody can answer any more; stop resumable.
                Ok(None) | Err(_) => Pause::Quit,
            }
        })
    } else if approve_given {
        return Arc::new(|_: &Paused<'_>| Pause::Continue);
    } else {
        return Arc::new(|at: &Paused<'_>| {
            eprintln!(
                "── paused after turn {}: standard input is not a terminal, so the run stops here \
                 (resumable; pass `--approve all` to run --hitl unattended)",
                at.turn
            );
            Pause::Quit
        });
    };
    let asking = asking.clone();
    Arc::new(move |at: &Paused<'_>| asking.during("a pause", || pause(at)))
}

/// The prompt of one pause.
fn question(at: &Paused<'_>) -> String {
    if matches!(at.about, Some(Question::PlanReview { .. })) {
        return "── the manager's plan (above) is up for review · Enter approves it, a message asks the manager to revise it, q refuses it (the run stops)\n> ".to_string();
    }
    if let Some(Question::Human { context }) = at.about {
        let who = at
            .agent
            .map(|agent| format!("`{}`", neutralise(agent)))
            .unwrap_or_else(|| "the step".to_string());
        return format!(
            "── {who} asks the operator: {} · your line is its answer (Enter answers nothing, q stops the run)\n> ",
            neutralise(context.trim())
        );
    }
    if let Some(Question::Escalation { why }) = at.about {
        let who = at
            .agent
            .map(|agent| format!("`{}`", neutralise(agent)))
            .unwrap_or_else(|| "the agent".to_string());
        return format!(
            "── {} · Enter lets {who} try again, a message is sent to it, q stops the run (resumable)\n> ",
            neutralise(why.trim())
        );
    }
    let by = at
        .agent
        .map(|agent| format!(" by `{}`", neutralise(agent)))
        .unwrap_or_default();
    format!(
        "── paused after turn {}{by}, now in `{}` · Enter continues, a message is sent to the team, q quits (resumable)\n> ",
        at.turn,
        neutralise(at.state)
    )
}

/// The pause an answer line asks for.
fn answer(line: &str) -> Pause {
    let text = line.trim();
    if text.is_empty() {
        Pause::Continue
    } else if text.eq_ignore_ascii_case("q") || text.eq_ignore_ascii_case("quit") {
        Pause::Quit
    } else {
        Pause::Message(text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_mean_continue_message_or_quit() {
        assert_eq!(answer(""), Pause::Continue);
        assert_eq!(answer("   "), Pause::Continue);
        assert_eq!(answer("q"), Pause::Quit);
        assert_eq!(answer(" QUIT "), Pause::Quit);
        assert_eq!(
            answer("  use the staging database  "),
            Pause::Message("use the staging database".into())
        );
        assert_eq!(
            answer("quit smoking"),
            Pause::Message("quit smoking".into())
        );
    }
}
