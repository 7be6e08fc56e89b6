//! What the operator is asked during a run: an approval, an escalated failure or a plan
//! review at a `--hitl` pause, a tama `human` step's line. Every prompt runs on a thread of
//! its own, so the run's task stays free while the operator reads: whoever drives the run
//! (`exec` races it against its stop signals) sees a signal during a prompt as at any
//! other moment.

use std::sync::Arc;

use super::{Approval, Approvals, AskFn, Env, Pause, PauseFn, Paused};
use crate::effect::{Question, Response};
use crate::machine::Machine;

/// `ask(from, to, question)`, answered off the run's task; a prompt that panicked refuses.
pub(super) async fn ask_operator(
    ask: &Arc<AskFn>,
    from: &str,
    to: &str,
    question: &Question,
) -> Approval {
    let ask = Arc::clone(ask);
    let (from, to, question) = (from.to_string(), to.to_string(), question.clone());
    tokio::task::spawn_blocking(move || ask(&from, &to, &question))
        .await
        .unwrap_or(Approval::Refused)
}

/// `pause(at)`, answered off the run's task; a prompt that panicked quits.
pub(super) async fn pause_operator(pause: &Arc<PauseFn>, at: &Paused<'_>) -> Pause {
    let pause = Arc::clone(pause);
    let turn = at.turn;
    let agent = at.agent.map(str::to_string);
    let state = at.state.to_string();
    let about = at.about.cloned();
    tokio::task::spawn_blocking(move || {
        pause(&Paused {
            turn,
            agent: agent.as_deref(),
            state: &state,
            about: about.as_ref(),
        })
    })
    .await
    .unwrap_or(Pause::Quit)
}

/// An escalation or a plan review put to the operator as a `--hitl` pause: go on approves,
/// a message redirects (or asks for a revised plan), quit refuses.
pub(super) async fn escalation_answer(
    machine: &Machine<'_>,
    env: &Env,
    state: &str,
    question: &Question,
) -> Response {
    let Some(pause) = &env.pause else {
        return Response::Approve(false);
    };
    let run = machine.run();
    let agent = run.history.iter().rev().find_map(|message| {
        (message.role == crate::history::Role::Assistant).then_some(message.agent.as_str())
    });
    let at = Paused {
        turn: run.turn,
        agent,
        state,
        about: Some(question),
    };
    match pause_operator(pause, &at).await {
        Pause::Continue => Response::Approve(true),
        Pause::Message(text) => Response::Redirect(text),
        Pause::Quit => Response::Approve(false),
    }
}

/// The operator's line for a step that asks for one (tama `human`): at a `--hitl` pause
/// (a message is the line, going on an empty line, quitting none), else through the
/// approval prompt (a redirect's text is the line); `--approve all` answers an empty line
/// and `--approve none` none.
pub(super) async fn operator_line(
    env: &Env,
    machine: &Machine<'_>,
    agent: &str,
    state: &str,
    context: &str,
) -> Option<String> {
    let question = Question::Human {
        context: context.to_string(),
    };
    if let Some(pause) = &env.pause {
        let paused = Paused {
            turn: machine.run().turn,
            agent: Some(agent),
            state,
            about: Some(&question),
        };
        return match pause_operator(pause, &paused).await {
            Pause::Message(text) => Some(text),
            Pause::Continue => Some(String::new()),
            Pause::Quit => None,
        };
    }
    match &env.approvals {
        Approvals::All => Some(String::new()),
        Approvals::None => None,
        Approvals::Ask(ask) => match ask_operator(ask, agent, state, &question).await {
            Approval::Redirected(text) => Some(text),
            Approval::Granted => Some(String::new()),
            Approval::Refused => None,
        },
    }
}
