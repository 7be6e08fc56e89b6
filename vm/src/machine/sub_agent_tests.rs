//! The sub-agent loop on its own: arguments, the cap, replies that are no answer, a failing
//! model, the bounded answer and its events (driven through real tools in
//! `vm/tests/sub_agent.rs`).

use fuseraft_compiler::ir::{Agent, SubAgentMode};
use serde_json::json;

use super::*;
use crate::effect::ModelReply;

fn caller() -> Agent {
    let program = fuseraft_compiler::ir::parse(
        "fuseraft-ir 1\nprogram p origin tama\nentry s\nagent Dev\n  tools [FileSystem, SubAgent]\n  sub_agent_max_tool_calls 2\nstate s layer 0\n  terminal end_now\n",
    )
    .expect("a valid program");
    program.agents[0].clone()
}

fn call(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: name.into(),
        args,
        result: None,
        ok: false,
        denied: None,
    }
}

fn reply(text: &str, calls: &[(&str, serde_json::Value)]) -> Response {
    Response::Model(Ok(ModelReply {
        text: text.into(),
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(idx, (name, args))| ToolCall {
                id: format!("s{idx}"),
                name: name.to_string(),
                args: args.clone(),
                result: None,
                ok: false,
                denied: None,
            })
            .collect(),
        usage: Usage {
            input_tokens: 10,
            output_tokens: 2,
            ..Usage::default()
        },
        cost: None,
    }))
}

fn explore() -> SubAgent {
    let call = call("sub_agent_explore", json!({"query": "where is main?"}));
    SubAgent::start(&caller(), SubAgentMode::Explore, &call, 3, Vec::new()).expect("starts")
}

/// Answers each tool request with the calls marked done.
fn answered(request: Request) -> Response {
    match request {
        Request::Tools { calls, .. } => Response::Tools(
            calls
                .into_iter()
                .map(|mut call| {
                    call.result = Some("found".into());
                    call.ok = true;
                    call
                })
                .collect(),
        ),
        other => panic!("expected tools, got {other:?}"),
    }
}

#[test]
fn bad_arguments_start_no_sub_agent() {
    let agent = caller();
    for (mode, name, args, expected) in [
        (
            SubAgentMode::Explore,
            "sub_agent_explore",
            json!({}),
            "needs a non-empty string argument `query`",
        ),
        (
            SubAgentMode::Explore,
            "sub_agent_explore",
            json!({"query": "  "}),
            "`query`",
        ),
        (
            SubAgentMode::Explore,
            "sub_agent_explore",
            json!({"query": "x", "format": "yaml"}),
            "`format` is `prose` or `file_list`, not `yaml`",
        ),
        (
            SubAgentMode::Locate,
            "sub_agent_locate",
            json!({"target": 7}),
            "needs a non-empty string argument `target`",
        ),
    ] {
        let error =
            SubAgent::start(&agent, mode, &call(name, args), 0, Vec::new()).expect_err("refused");
        assert!(
            error.starts_with("[ERROR]") && error.contains(expected),
            "{error}"
        );
    }
}

#[test]
fn its_model_call_is_its_own_conversation_on_its_own_queue() {
    let mut sub_agent = explore();
    let Request::Model(call) = sub_agent.step() else {
        panic!("a model call first")
    };
    assert_eq!(call.agent, crate::effect::Caller::SubAgent("Dev".into()));
    assert_eq!(call.agent.queue(), "Dev/sub_agent");
    assert_eq!(call.turn, 3);
    assert_eq!(call.messages.len(), 2);
    assert_eq!(call.messages[0].role, ChatRole::System);
    assert!(call.messages[0].content.contains("at most 2 tool calls"));
    assert!(call.messages[0].content.contains("`read_file`"));
    assert_eq!(&*call.messages[1].content, "where is main?");
}

#[test]
fn the_cap_cuts_calls_then_asks_for_an_answer_without_tools() {
    let mut sub_agent = explore();
    sub_agent.call.tools = crate::tools::schemas_of(&sub_agent_tools(&caller())).into();
    let _ = sub_agent.step();
    let three = [
        ("read_file", json!({"path": "a"})),
        ("read_file", json!({"path": "b"})),
        ("read_file", json!({"path": "c"})),
    ];
    sub_agent.resume(reply("", &three));
    let request = sub_agent.step();
    let Request::Tools { ref calls, .. } = request else {
        panic!("tools")
    };
    assert_eq!(calls.len(), 2, "cut to the cap of 2");
    sub_agent.resume(answered(request));
    let Request::Model(last) = sub_agent.step() else {
        panic!("asked again")
    };
    assert!(last.tools.is_empty(), "its last request offers no tool");
    assert!(last
        .messages
        .last()
        .unwrap()
        .content
        .contains("used your 2 tool calls"));
    // It asks for tools again instead of answering: the call ends with an error result.
    sub_agent.resume(reply("", &three));
    assert_eq!(sub_agent.step(), Request::Done);
    let events: Vec<_> = sub_agent.drain_events();
    let done = sub_agent.finish();
    assert!(!done.ok);
    assert!(
        done.result.contains("(2 of 2 made) and gave no answer"),
        "{}",
        done.result
    );
    assert_eq!(done.usage.total(), 24);
    let types: Vec<&str> = events.iter().map(|event| event.name()).collect();
    assert_eq!(
        types,
        [
            "sub_agent_start",
            "sub_agent_tool_call",
            "sub_agent_tool_call",
            "sub_agent_end"
        ]
    );
    let crate::event::EventKind::SubAgentEnd { outcome, .. } = &events[3].kind else {
        panic!("{:?}", events[3]);
    };
    assert_eq!(outcome, "cap_reached");
}

#[test]
fn an_empty_reply_and_a_failing_model_are_error_results() {
    let mut empty = explore();
    let _ = empty.step();
    empty.resume(reply("  \n", &[]));
    assert_eq!(empty.step(), Request::Done);
    let done = empty.finish();
    assert!(!done.ok && done.result.contains("neither an answer nor a tool call"));

    let mut failing = explore();
    let _ = failing.step();
    failing.resume(Response::Model(Err(
        "replay queue `Dev/sub_agent` is exhausted".into(),
    )));
    assert_eq!(failing.step(), Request::Done);
    let done = failing.finish();
    assert!(!done.ok);
    assert!(done
        .result
        .starts_with("[ERROR] the sub-agent failed: replay queue"));
}

#[test]
fn an_answer_is_bounded() {
    let mut sub_agent = explore();
    let _ = sub_agent.step();
    let long = "é".repeat(MAX_ANSWER_CHARS + 50);
    sub_agent.resume(reply(&long, &[]));
    let done = sub_agent.finish();
    assert!(done.ok);
    assert!(done
        .result
        .ends_with("[… 50 more characters cut: a sub-agent's answer is at most 8000 characters]"));
    assert!(done.result.chars().count() < MAX_ANSWER_CHARS + 100);
}
