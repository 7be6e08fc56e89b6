//! Tests of the checkpoint records: strict reading names the field, the session log's state
//! line is the record with the caller's keys after it, and a run survives its checkpoint.

use fuseraft_compiler::ir::Program;
use fuseraft_compiler::MemoryFiles;
use serde_json::{json, Value as Json};

use super::records::{CompactionRecord, MagenticRecord};
use super::*;
use crate::effect::{ModelReply, Request, Response};
use crate::machine::{Compacted, Magentic};
use crate::machine::{Machine, Options};

fn program() -> Program {
    let config = "Orchestration:\n  Name: Records\n  Agents:\n    - { Name: A, Instructions: Go. }\n    - { Name: B, Instructions: Check. }\n  Selection: { Type: roundrobin }\n  Termination: { Type: maxiterations, MaxIterations: 10 }\n";
    let files = MemoryFiles::new().with("c.yaml", config);
    fuseraft_compiler::compile(std::path::Path::new("c.yaml"), &files)
        .program
        .expect("the config compiles")
}

fn options() -> Options {
    Options {
        session_id: "rec00000".to_string(),
        task: "a \"quoted\"\ttask\n".to_string(),
        max_turns: Some(10),
        skip_prompts: true,
    }
}

/// A checkpoint after one turn whose reply needs escapes and made a tool call.
fn checkpoint(program: &Program) -> Json {
    let mut machine = Machine::new(program, options());
    let Request::Model(_) = machine.step() else {
        panic!("a model call");
    };
    machine.resume(Response::Model(Ok(ModelReply {
        text: "done \u{1}\"here\"\\ é🦀".to_string(),
        ..ModelReply::default()
    })));
    let mut checkpoint = machine.checkpoint().expect("between turns");
    checkpoint["Messages"][1]["ToolCalls"] = json!([{
        "Id": "call_1", "Name": "read_file", "Args": {"path": "a"}, "Result": "text", "Succeeded": true
    }]);
    checkpoint
}

#[test]
fn a_malformed_field_is_an_error_naming_it() {
    let program = program();
    let good = checkpoint(&program);
    let cases = [
        ("/Machine/Turn", json!("three"), "field `Machine.Turn`"),
        ("/Machine/Phase", json!(-1), "field `Machine.Phase`"),
        (
            "/Machine/VisitTurns",
            json!(u64::MAX),
            "field `Machine.VisitTurns`",
        ),
        ("/Machine/Counters", json!([1]), "field `Machine.Counters`"),
        (
            "/Machine/Recovered",
            json!([7]),
            "field `Machine.Recovered[0]`",
        ),
        ("/Machine/Value", json!(5), "field `Machine.Value`"),
        (
            "/Messages/1/Role",
            json!("robot"),
            "field `Messages[1].Role`",
        ),
        (
            "/Messages/0/TurnIndex",
            json!(1.5),
            "field `Messages[0].TurnIndex`",
        ),
        (
            "/Messages/1/ToolCalls/0/Succeeded",
            json!("yes"),
            "field `Messages[1].ToolCalls[0].Succeeded`",
        ),
        ("/SessionId", json!(null), "field `SessionId`"),
    ];
    for (pointer, value, named) in cases {
        let mut bad = good.clone();
        *bad.pointer_mut(pointer).expect(pointer) = value;
        let error = Machine::restore(&program, options(), &bad)
            .err()
            .unwrap_or_else(|| panic!("{pointer} was accepted"));
        assert!(
            error.starts_with("the checkpoint is malformed: ") && error.contains(named),
            "{pointer}: {error}"
        );
    }
    assert!(Machine::restore(&program, options(), &good).is_ok());
}

#[test]
fn an_unknown_outcome_or_version_is_refused() {
    let program = program();
    let mut bad = checkpoint(&program);
    bad["Machine"]["Outcome"] = json!("exploded");
    let error = Machine::restore(&program, options(), &bad).err().unwrap();
    assert!(error.contains("outcome `exploded` is unknown"), "{error}");
    let mut newer = checkpoint(&program);
    newer["Version"] = json!(2);
    let error = Machine::restore(&program, options(), &newer).err().unwrap();
    assert_eq!(error, "checkpoint version 2 is not supported (expected 1)");
}

#[test]
fn a_run_survives_its_checkpoint_and_writes_it_again_byte_for_byte() {
    let program = program();
    let saved = checkpoint(&program);
    let text = serde_json::to_vec(&saved).unwrap();
    let restored = Machine::restore(&program, options(), &saved).expect("restores");
    // The restored machine's checkpoint is the same bytes (its history carries the call).
    let again = restored.checkpoint().expect("at a boundary");
    assert_eq!(
        String::from_utf8(serde_json::to_vec(&again).unwrap()).unwrap(),
        String::from_utf8(text).unwrap()
    );
    for message in &restored.run().history {
        let mut line = Vec::new();
        write_message(message, &mut line).unwrap();
        assert_eq!(line, serde_json::to_vec(&message_json(message)).unwrap());
        let read: MessageRecord<'_> = serde_json::from_slice(&line).unwrap();
        assert_eq!(&read.into_message(), message);
    }
}

#[test]
fn the_state_line_is_the_record_with_the_callers_keys_after_it() {
    let program = program();
    let saved = checkpoint(&program);
    let machine = Machine::restore(&program, options(), &saved).expect("restores");
    let provider = json!({"Cursors": {"A": 1}});
    let started = json!("2026-11-23T00:00:00Z");
    let options_json = json!({"Model": "m"});
    let cursors = super::ProviderState::Cursors {
        cursors: vec![("A", 2, 1), ("B \"b\"", 0, 0)],
        next_id: 7,
    };
    let mut line = Vec::new();
    for provider in [super::ProviderState::Json(provider), cursors] {
        line.clear();
        machine
            .write_checkpoint_state(
                &provider,
                &json!({"StartedAt": started, "ProviderOptions": options_json}),
                &mut line,
            )
            .unwrap();
        let mut expected = machine.checkpoint_state().unwrap();
        expected["Provider"] = provider.to_json();
        expected["StartedAt"] = started.clone();
        expected["ProviderOptions"] = options_json.clone();
        assert_eq!(
            String::from_utf8(line.clone()).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
    }
    let read: Json = serde_json::from_slice(&line).unwrap();
    check_state(&read).expect("a whole state record");
    let error = machine
        .write_checkpoint_state(
            &super::ProviderState::Json(Json::Null),
            &json!(["not", "keys"]),
            &mut Vec::new(),
        )
        .unwrap_err();
    assert!(
        error.to_string().contains("must be a JSON object"),
        "{error}"
    );
    let mut line = Vec::new();
    machine
        .write_checkpoint_state(
            &super::ProviderState::Json(Json::Null),
            &json!({}),
            &mut line,
        )
        .unwrap();
    assert!(
        line.ends_with(b",\"Provider\":null}"),
        "{}",
        String::from_utf8_lossy(&line)
    );
}

#[test]
fn a_message_line_is_checked_field_by_field() {
    assert_eq!(
        check_message(&json!({"AgentName": "A", "Role": "user", "Content": "hi"})),
        Ok(())
    );
    let error = check_message(&json!({"AgentName": "A", "Role": "user"})).unwrap_err();
    assert!(error.contains("missing field `Content`"), "{error}");
    let error = check_message(
        &json!({"AgentName": "A", "Role": "user", "Content": "hi", "Usage": {"InputTokens": "9"}}),
    )
    .unwrap_err();
    assert!(
        error.starts_with("field `Usage.InputTokens`: invalid type"),
        "{error}"
    );
}

#[test]
fn a_magentic_ledger_survives_its_record_and_an_unknown_step_is_refused() {
    use crate::machine::MagenticStep;
    let ledger = Magentic {
        next: MagenticStep::ReplanPlan,
        facts: Some("facts".into()),
        plan: Some("plan".into()),
        rounds: 4,
        stalls: 1,
        resets: 1,
        invalid: 2,
        retry: Some(("oops".into(), "answer again".into())),
        feedback: Some("smaller steps".into()),
    };
    let json = serde_json::to_value(magentic_record(&ledger)).unwrap();
    assert_eq!(json["InvalidLedgers"], json!(2));
    assert_eq!(
        json["Retry"],
        json!({"Reply": "oops", "Correction": "answer again"})
    );
    let record = read::<MagenticRecord<'_>>(&json).unwrap();
    assert_eq!(magentic_of(record), Ok(ledger));
    let error =
        magentic_of(read::<MagenticRecord<'_>>(&json!({"Next": "dance"})).unwrap()).unwrap_err();
    assert!(error.contains("`dance`"), "{error}");
    let error = read::<MagenticRecord<'_>>(&json!({"Next": "plan", "Rounds": "4"})).unwrap_err();
    assert!(error.starts_with("field `Rounds`"), "{error}");
}

#[test]
fn a_compaction_keeps_its_summary_and_its_extent_is_checked() {
    let compacted = Compacted {
        summary: "so far".into(),
        through: 3,
        count: 2,
        turn: 5,
        made_at: 6,
        savings: vec![2_500, 10_000],
    };
    let json = serde_json::to_value(compaction_record(&compacted)).unwrap();
    assert_eq!(
        json,
        json!({"Summary": {"AgentName": "system", "Role": "user", "Content": "so far", "TurnIndex": 5, "IsCompactionSummary": true}, "Through": 3, "Count": 2, "MadeAtTurn": 6, "RecentSavings": [2_500, 10_000]})
    );
    let record = || read::<CompactionRecord<'_>>(&json).unwrap();
    assert_eq!(compacted_of(record(), 3), Ok(compacted));
    let error = compacted_of(record(), 2).unwrap_err();
    assert!(error.contains("outside the 2 stored messages"), "{error}");
}

#[test]
fn a_message_line_is_the_derived_record_byte_for_byte() {
    let call = crate::history::ToolCall {
        id: "call_1".to_string(),
        name: "write_file".to_string(),
        args: json!({"path": "a,\"Content\":\"\"", "content": "x\ny"}),
        result: Some("ok \"done\"".to_string()),
        ok: true,
        denied: None,
    };
    let hostile = [
        ",\"Content\":\"\"",
        "\\\",\"Content\":\"\"",
        "A",
        "",
        "é🦀\u{1}",
    ];
    for agent in hostile {
        for content in hostile
            .iter()
            .chain(["line one\nline \"two\"\t\\ end"].iter())
        {
            let mut message = Message::user(agent, *content, 3);
            for calls in [Vec::new(), vec![call.clone()]] {
                message.tool_calls = calls;
                let mut written = b"[".to_vec();
                write_message(&message, &mut written).unwrap();
                let expected = serde_json::to_vec(&MessageRecord::of(&message)).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&written[1..]),
                    String::from_utf8_lossy(&expected),
                    "{agent:?} {content:?}"
                );
            }
        }
    }
}
