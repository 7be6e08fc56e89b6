//! What the magentic manager is asked at each step of its loop, in fuseraft's own words
//! (the structure follows upstream's `MagenticOrchestrator`: facts, a plan, a JSON ledger
//! per round, a replan after stalls, a final answer).

use fuseraft_compiler::ir::Program;

use super::ledger::{FINAL_ANSWER, INSTRUCTION, IN_LOOP, NEXT_SPEAKER, PROGRESS, SATISFIED};
use crate::history::Message;

/// The manager's system prompt when `Magentic.Instructions` sets none.
pub(super) const DEFAULT_SYSTEM: &str = "You are the manager of a team of agents. You do not do \
the work yourself: you find out what is known, make a plan, and at every round decide which \
team member acts next and tell them precisely what to do. Be brief and keep the request in view.";

/// How many of the newest messages a ledger, replan or final prompt shows.
const CONVERSATION_WINDOW: usize = 30;

/// One line per team member: its name and, when it has one, its description.
pub(super) fn team(program: &Program, agents: &[String]) -> String {
    agents
        .iter()
        .map(|name| {
            let description = program
                .agent_named(name)
                .and_then(|id| program.agent(id).description.clone())
                .filter(|text| !text.trim().is_empty());
            match description {
                Some(text) => format!("- {name}: {}", text.trim()),
                None => format!("- {name}"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The newest messages with text, one `[author]: text` paragraph each; fuseraft's routing
/// markers (`[fuseraft: manager → Developer]`) are left out, the instruction after each
/// says the same.
pub(super) fn conversation(history: &[Message]) -> String {
    let shown: Vec<String> = history
        .iter()
        .filter(|message| !message.content.trim().is_empty())
        .filter(|message| {
            !(message.agent == "orchestrator" && message.content.starts_with("[fuseraft: "))
        })
        .map(|message| format!("[{}]: {}", message.agent, message.content))
        .collect();
    let start = shown.len().saturating_sub(CONVERSATION_WINDOW);
    shown[start..].join("\n\n")
}

/// Orientation, first question: what is known.
pub(super) fn facts(task: &str, team: &str) -> String {
    format!(
        "REQUEST:\n{task}\n\nTEAM:\n{team}\n\n\
         Before anyone starts, write down what we know. Use three short headings:\n\
         1. Given: what the request states or what we can be sure of.\n\
         2. To find out: what must be looked up or worked out.\n\
         3. Limits: constraints the work must respect.\n\
         Keep only what matters for getting the request done."
    )
}

/// Orientation, second question: the plan.
pub(super) fn plan(team: &str) -> String {
    format!(
        "Now write the plan that gets the request done: a short overview, then numbered \
         steps, each naming the one team member who carries it out. Team members:\n{team}\n\n\
         Prefer a few substantial steps to many small ones, and use only the names above."
    )
}

/// The operator's feedback on the plan under review.
pub(super) fn revise(feedback: &str) -> String {
    format!(
        "The operator reviewed your plan and asks for changes:\n{feedback}\n\n\
         Write the whole revised plan, in the same form."
    )
}

/// A round's ledger question.
pub(super) fn ledger(plan: &str, conversation: &str, names: &str) -> String {
    format!(
        "PLAN:\n{plan}\n\nCONVERSATION SO FAR:\n{conversation}\n\nTEAM MEMBERS: {names}\n\n\
         Judge where the work stands. Answer with a single JSON object and nothing else:\n\
         {{\n  \"{SATISFIED}\": true or false,\n  \"{IN_LOOP}\": true or false,\n  \
         \"{PROGRESS}\": true or false,\n  \"{NEXT_SPEAKER}\": \"one team member's exact name\",\n  \
         \"{NEXT_SPEAKER}_reason\": \"why that member\",\n  \
         \"{INSTRUCTION}\": \"what that member must do now, concrete and self-contained\"\n}}\n\n\
         - `{SATISFIED}`: true only when the request is fully done and checked.\n\
         - `{IN_LOOP}`: true when the same requests or answers keep coming back.\n\
         - `{PROGRESS}`: true when the latest round moved the work forward.\n\
         - `{NEXT_SPEAKER}` must be exactly one of: {names}.\n\
         - When `{SATISFIED}` is true, `{NEXT_SPEAKER}` and `{INSTRUCTION}` may be left out; \
         a `{FINAL_ANSWER}` string may be given instead."
    )
}

/// The correction after a ledger that could not be used.
pub(super) fn correction(error: &str) -> String {
    format!(
        "That answer cannot be used as the progress ledger: {error}. Answer again with the \
         JSON object only, every field present, `{NEXT_SPEAKER}` naming a team member exactly."
    )
}

/// Replan, first question: the facts updated after a stall.
pub(super) fn replan_facts(conversation: &str) -> String {
    format!(
        "The team has stopped making progress with the current plan.\n\n\
         RECENT CONVERSATION:\n{conversation}\n\n\
         Rewrite what we know in the same three headings, adding what has been learned and \
         correcting what turned out wrong."
    )
}

/// Replan, second question: a new plan.
pub(super) fn replan_plan(old_plan: &str, team: &str) -> String {
    format!(
        "PREVIOUS PLAN:\n{old_plan}\n\n\
         That plan stalled. Say briefly what was tried and why it did not work, then write a \
         new plan that takes a different route: numbered steps, each naming one team \
         member. Team members:\n{team}"
    )
}

/// The final answer, once the request is satisfied.
pub(super) fn final_answer(conversation: &str) -> String {
    format!(
        "The request is done. CONVERSATION:\n{conversation}\n\n\
         Write the final answer for the person who made the request: what was done, the \
         results, and anything they should watch out for."
    )
}
