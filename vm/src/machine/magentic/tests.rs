//! The magentic loop driven request by request on a program in IR text: what the manager
//! is asked, and a checkpoint taken mid-loop resuming the same ledger.

use fuseraft_compiler::ir::{parse, Program};

use crate::effect::{ChatRole, ModelCall, ModelReply, Request, Response};
use crate::event::Outcome;
use crate::machine::{Machine, Options};

const PROGRAM: &str = r#"fuseraft-ir 1
program Magentic origin fuseraft.magentic
entry select

agent Researcher
  description "Reads the code and reports."
  instructions "Research."

agent Developer
  instructions "Develop."

state select layer 0
  select magentic max_rounds 5 max_stalls 2 max_resets 0 plan_review false
  exit chosen -> Researcher forward
  exit chosen -> Developer forward

state Researcher layer 1
  turn agent Researcher
  exit always -> select back

state Developer layer 1
  turn agent Developer
  exit always -> select back
"#;

fn program() -> Program {
    parse(PROGRAM).unwrap_or_else(|error| panic!("{error:?}"))
}

fn options() -> Options {
    Options {
        session_id: "s".into(),
        task: "Add paging.".into(),
        max_turns: None,
        skip_prompts: false,
    }
}

fn reply(text: &str) -> Response {
    Response::Model(Ok(ModelReply {
        text: text.to_string(),
        ..Default::default()
    }))
}

fn model_call(request: Request) -> ModelCall {
    match request {
        Request::Model(call) => std::sync::Arc::unwrap_or_clone(call),
        other => panic!("expected a model call, got {other:?}"),
    }
}

const TO_RESEARCHER: &str = r#"{"is_request_satisfied": false, "is_in_loop": false, "is_progress_being_made": true, "next_speaker": "Researcher", "instruction_or_question": "Find the handler."}"#;
const NO_PROGRESS: &str = r#"{"is_request_satisfied": false, "is_in_loop": false, "is_progress_being_made": false, "next_speaker": "Developer", "instruction_or_question": "Try again."}"#;

#[test]
fn orientation_asks_for_facts_with_the_team_then_a_plan() {
    let program = program();
    let mut machine = Machine::new(&program, options());
    let facts = model_call(machine.step());
    assert_eq!(facts.agent, crate::effect::Caller::Manager);
    let asked = &facts.messages.last().unwrap().content;
    assert!(asked.contains("Add paging."), "{asked}");
    assert!(
        asked.contains("- Researcher: Reads the code and reports.\n- Developer"),
        "{asked}"
    );
    machine.resume(reply("Given: a list."));
    let plan = model_call(machine.step());
    let roles: Vec<ChatRole> = plan.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            ChatRole::System,
            ChatRole::User,
            ChatRole::Assistant,
            ChatRole::User
        ]
    );
    assert_eq!(&*plan.messages[2].content, "Given: a list.");
}

#[test]
fn a_checkpoint_mid_loop_resumes_the_same_ledger() {
    let program = program();
    let mut machine = Machine::new(&program, options());
    machine.step();
    machine.resume(reply("Given: a list."));
    machine.step();
    machine.resume(reply("1. Researcher finds the handler."));
    machine.step();
    machine.resume(reply(TO_RESEARCHER));
    let turn = model_call(machine.step());
    assert_eq!(turn.agent.to_string(), "Researcher");
    assert_eq!(
        &*turn.messages.last().unwrap().content,
        "Find the handler.",
        "the instruction is the agent's newest message"
    );
    machine.resume(reply("It is in src/list.rs."));
    // One stall, then the turn boundary: the checkpoint holds the plan and the count.
    machine.step();
    machine.resume(reply(NO_PROGRESS));
    assert!(machine.at_boundary());
    let mut checkpoint = machine.checkpoint_state().unwrap();
    checkpoint["Messages"] = crate::checkpoint::messages_json(&machine.run().history);
    let ledger = &checkpoint["Machine"]["Magentic"];
    assert_eq!(ledger["Plan"], "1. Researcher finds the handler.");
    assert_eq!(ledger["Stalls"], 1);
    assert_eq!(ledger["Rounds"], 2);

    let mut resumed = Machine::restore(&program, options(), &checkpoint).unwrap();
    // The Developer's round runs; the next question is a ledger, not a new orientation.
    let turn = model_call(resumed.step());
    assert_eq!(turn.agent.to_string(), "Developer");
    resumed.resume(reply("Tried."));
    let ledger = model_call(resumed.step());
    let asked = &ledger.messages.last().unwrap().content;
    assert!(
        asked.starts_with("PLAN:\n1. Researcher finds the handler."),
        "{asked}"
    );
    // The second stall in a row reaches `max_stalls 2`; `max_resets 0` allows no replan.
    resumed.resume(reply(NO_PROGRESS));
    assert!(matches!(resumed.step(), Request::Done));
    assert_eq!(resumed.run().outcome, Some(Outcome::Stuck));
}

#[test]
fn a_resumed_stuck_run_gets_fresh_stall_counts() {
    let program = program();
    let mut machine = Machine::new(&program, options());
    machine.step();
    machine.resume(reply("Given: a list."));
    machine.step();
    machine.resume(reply("1. Developer codes."));
    for _ in 0..2 {
        machine.step();
        machine.resume(reply("not a ledger"));
    }
    assert!(matches!(machine.step(), Request::Done));
    assert_eq!(machine.run().outcome, Some(Outcome::Stuck));
    let mut checkpoint = machine.checkpoint_state().unwrap();
    checkpoint["Messages"] = crate::checkpoint::messages_json(&machine.run().history);
    let mut resumed = Machine::restore(&program, options(), &checkpoint).unwrap();
    let ledger = model_call(resumed.step());
    assert!(ledger.messages.last().unwrap().content.starts_with("PLAN:"));
    assert_eq!(resumed.run().magentic.as_ref().unwrap().stalls, 0);
}

#[test]
fn a_huge_plan_is_kept_bounded_and_its_review_question_short() {
    let program = parse(&PROGRAM.replace("plan_review false", "plan_review true")).unwrap();
    let mut machine = Machine::new(&program, options());
    machine.step();
    machine.resume(reply("Given: a list."));
    machine.step();
    let huge = format!("1. {}\n2. Developer codes.", "x".repeat(200_000));
    machine.resume(reply(&huge));
    let Request::Approve { question, to, .. } = machine.step() else {
        panic!("the plan is put to the operator");
    };
    let signal = question.signal();
    assert_eq!(to, "plan");
    assert!(signal.starts_with("plan review: 1. xxx"), "{signal}");
    assert!(signal.chars().count() <= 140, "{}", signal.len());
    let plan = machine
        .run()
        .magentic
        .as_ref()
        .unwrap()
        .plan
        .clone()
        .unwrap();
    assert!(plan.chars().count() <= crate::machine::MAX_MESSAGE_CHARS);
    assert!(
        plan.ends_with("2. Developer codes."),
        "head and tail are kept"
    );
    // A redirect sends the feedback to the manager; the revision is reviewed again.
    machine.resume(Response::Redirect("Smaller steps.".into()));
    let revise = model_call(machine.step());
    assert!(revise
        .messages
        .last()
        .unwrap()
        .content
        .contains("Smaller steps."));
    machine.resume(reply("1. Researcher reads."));
    assert!(matches!(machine.step(), Request::Approve { .. }));
    machine.resume(Response::Approve(false));
    assert!(matches!(machine.step(), Request::Done));
    assert_eq!(machine.run().outcome, Some(Outcome::Stuck));
}

#[test]
fn a_replan_is_reviewed_like_the_first_plan() {
    let text = PROGRAM.replace(
        "max_resets 0 plan_review false",
        "max_resets 1 plan_review true",
    );
    let program = parse(&text).unwrap();
    let mut machine = Machine::new(&program, options());
    machine.step();
    machine.resume(reply("Given: a list."));
    machine.step();
    machine.resume(reply("1. Developer codes."));
    assert!(matches!(machine.step(), Request::Approve { .. }));
    machine.resume(Response::Approve(true));
    machine.step();
    machine.resume(reply(NO_PROGRESS));
    assert_eq!(
        model_call(machine.step()).agent,
        crate::effect::Caller::Agent("Developer".into())
    );
    machine.resume(reply("Tried."));
    machine.step();
    machine.resume(reply(NO_PROGRESS));
    // The second stall: the facts and then the plan are asked again, and the new plan is
    // put to the operator before any round.
    let facts = model_call(machine.step());
    assert!(facts
        .messages
        .last()
        .unwrap()
        .content
        .contains("[Developer]: Tried."));
    machine.resume(reply("Given: trying again does not help."));
    let plan = model_call(machine.step());
    assert!(plan
        .messages
        .last()
        .unwrap()
        .content
        .starts_with("PREVIOUS PLAN:\n1. Developer codes."));
    machine.resume(reply("1. Researcher reads first."));
    let Request::Approve { question, .. } = machine.step() else {
        panic!("the new plan is reviewed");
    };
    let signal = question.signal();
    assert_eq!(signal, "plan review: 1. Researcher reads first.");
    machine.resume(Response::Approve(true));
    let ledger = model_call(machine.step());
    assert!(ledger
        .messages
        .last()
        .unwrap()
        .content
        .starts_with("PLAN:\n1. Researcher reads first."));
    assert_eq!(machine.run().magentic.as_ref().unwrap().resets, 1);
}
