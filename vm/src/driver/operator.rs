//! What the operator is asked during a run besides route approvals: an escalated failure
//! or a plan review at a `--hitl` pause, and a tama `human` step's line.

use super::{Approval, Approvals, Env, Pause, Paused};
use crate::effect::{Question, Response};
use crate::machine::Machine;

/// An escalation or a plan review put to the operator as a `--hitl` pause: go on approves,
/// a message redirects (or asks for a revised plan), quit refuses.
pub(super) fn escalation_answer(
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
    match pause(&Paused {
        turn: run.turn,
        agent,
        state,
        about: Some(question),
    }) {
        Pause::Continue => Response::Approve(true),
        Pause::Message(text) => Response::Redirect(text),
        Pause::Quit => Response::Approve(false),
    }
}

/// The operator's line for a step that asks for one (tama `human`): at a `--hitl` pause
/// (a message is the line, going on an empty line, quitting none), else through the
/// approval prompt (a redirect's text is the line); `--approve all` answers an empty line
/// and `--approve none` none.
pub(super) fn operator_line(
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
        return match pause(&paused) {
            Pause::Message(text) => Some(text),
            Pause::Continue => Some(String::new()),
            Pause::Quit => None,
        };
    }
    match &env.approvals {
        Approvals::All => Some(String::new()),
        Approvals::None => None,
        Approvals::Ask(ask) => match ask(agent, state, &question) {
            Approval::Redirected(text) => Some(text),
            Approval::Granted => Some(String::new()),
            Approval::Refused => None,
        },
    }
}
