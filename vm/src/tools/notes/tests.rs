//! The notes tools on their own: what each answers, their bounds, bad arguments, and the
//! notes surviving a checkpoint's JSON.

use serde_json::json;

use super::*;

fn call(notes: &mut Notes, name: &str, agent: &str, args: Json) -> (String, bool) {
    let tool = Tool::resolve(name).expect("a tool name");
    assert!(answers(tool), "{name}");
    answer(notes, tool, &args, Caller { agent, turn: 3 })
}

#[test]
fn session_context_is_replaced_and_read_back() {
    let mut notes = Notes::default();
    let (text, ok) = call(&mut notes, "session_context_read", "Tester", json!({}));
    assert!(ok && text.starts_with("No session context yet"), "{text}");
    let (text, ok) = call(
        &mut notes,
        "session_context_write",
        "Developer",
        json!({"summary": "  - changed src/lib.rs\n"}),
    );
    assert!(ok, "{text}");
    call(
        &mut notes,
        "SessionContext-session_context_write",
        "Developer",
        json!({"summary": "- changed src/main.rs"}),
    );
    let (text, ok) = call(&mut notes, "session_context_read", "Tester", json!({}));
    assert!(ok);
    assert_eq!(
        text,
        "[Session context, written by Developer in turn 3]\n\n- changed src/main.rs"
    );
}

#[test]
fn session_context_refuses_empty_and_oversized_summaries() {
    let mut notes = Notes::default();
    for args in [
        json!({}),
        json!({"summary": "   "}),
        json!({"summary": 5}),
        json!("[1]"),
    ] {
        let (text, ok) = call(&mut notes, "session_context_write", "A", args.clone());
        assert!(!ok && text.starts_with("[ERROR]"), "{args}: {text}");
    }
    let long = "x".repeat(session_context::MAX_SUMMARY_CHARS + 1);
    let (text, ok) = call(
        &mut notes,
        "session_context_write",
        "A",
        json!({"summary": long}),
    );
    assert!(!ok && text.contains("32000"), "{text}");
    assert!(notes.session_context.is_none());
    // A long summary within the bound is kept whole and read back capped.
    let long = "y".repeat(session_context::READ_CHARS + 10);
    call(
        &mut notes,
        "session_context_write",
        "A",
        json!({"summary": long}),
    );
    let (text, _) = call(&mut notes, "session_context_read", "B", json!({}));
    assert!(
        text.ends_with("[session context truncated: 10 characters omitted]"),
        "{text}"
    );
}

#[test]
fn scratchpads_are_per_agent_unless_global() {
    let mut notes = Notes::default();
    let (text, ok) = call(
        &mut notes,
        "scratchpad_write",
        "Planner",
        json!({"key": "plan", "value": "three steps", "tags": "todo"}),
    );
    assert!(ok, "{text}");
    // Another agent's scratchpad does not hold it; keys ignore case.
    let (text, ok) = call(
        &mut notes,
        "scratchpad_read",
        "Developer",
        json!({"key": "plan"}),
    );
    assert!(!ok && text.starts_with("[NOT FOUND]"), "{text}");
    let (text, ok) = call(
        &mut notes,
        "scratchpad_read",
        "Planner",
        json!({"key": "PLAN"}),
    );
    assert!(ok);
    assert_eq!(text, "[plan]  tags: todo  turn: 3\nthree steps");
    // The global scope is shared.
    call(
        &mut notes,
        "scratchpad_write",
        "Planner",
        json!({"key": "owner", "value": "team-a", "scope": "global"}),
    );
    let (text, ok) = call(
        &mut notes,
        "scratchpad_read",
        "Developer",
        json!({"key": "owner", "scope": "GLOBAL"}),
    );
    assert!(ok && text.ends_with("team-a"), "{text}");
    let (text, ok) = call(
        &mut notes,
        "scratchpad_read_all",
        "Planner",
        json!({"scope": "team"}),
    );
    assert!(!ok && text.contains("`agent` or `global`"), "{text}");
}

#[test]
fn scratchpad_lists_searches_and_deletes() {
    let mut notes = Notes::default();
    for (key, value) in [("zeta", "last"), ("alpha", "first"), ("mid", "has needle")] {
        call(
            &mut notes,
            "scratchpad_write",
            "A",
            json!({"key": key, "value": value}),
        );
    }
    let (text, _) = call(&mut notes, "scratchpad_read_all", "A", json!({}));
    let order: Vec<&str> = text.lines().filter(|line| line.starts_with('[')).collect();
    assert_eq!(
        order,
        ["[alpha]  turn: 3", "[mid]  turn: 3", "[zeta]  turn: 3"],
        "{text}"
    );
    let (text, _) = call(
        &mut notes,
        "scratchpad_search",
        "A",
        json!({"query": "NEEDLE"}),
    );
    assert!(
        text.contains("1 match(es)") && text.contains("[mid]"),
        "{text}"
    );
    let (text, ok) = call(&mut notes, "scratchpad_delete", "A", json!({"key": "mid"}));
    assert!(ok, "{text}");
    let (text, ok) = call(&mut notes, "scratchpad_delete", "A", json!({"key": "mid"}));
    assert!(!ok && text.starts_with("[NOT FOUND]"), "{text}");
    let (text, _) = call(
        &mut notes,
        "scratchpad_search",
        "A",
        json!({"query": "needle"}),
    );
    assert!(text.starts_with("[NO RESULTS]"), "{text}");
    // Deleting the last entry leaves no empty scratchpad behind.
    call(
        &mut notes,
        "scratchpad_delete",
        "A",
        json!({"key": "alpha"}),
    );
    call(&mut notes, "scratchpad_delete", "A", json!({"key": "zeta"}));
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn scratchpad_bounds_refuse_rather_than_cut() {
    let mut notes = Notes::default();
    for at in 0..scratchpad::MAX_ENTRIES {
        let (text, ok) = call(
            &mut notes,
            "scratchpad_write",
            "A",
            json!({"key": format!("k{at}"), "value": "v"}),
        );
        assert!(ok, "{text}");
    }
    let (text, ok) = call(
        &mut notes,
        "scratchpad_write",
        "A",
        json!({"key": "one more", "value": "v"}),
    );
    assert!(!ok && text.contains("full"), "{text}");
    // Replacing an entry of a full scratchpad is fine.
    let (_, ok) = call(
        &mut notes,
        "scratchpad_write",
        "A",
        json!({"key": "K0", "value": "w"}),
    );
    assert!(ok);
    let big = "v".repeat(scratchpad::MAX_VALUE_CHARS + 1);
    let (text, ok) = call(
        &mut notes,
        "scratchpad_write",
        "B",
        json!({"key": "k", "value": big}),
    );
    assert!(!ok && text.contains("4000"), "{text}");
    let (text, ok) = call(
        &mut notes,
        "scratchpad_write",
        "B",
        json!({"key": " ", "value": "v"}),
    );
    assert!(!ok && text.contains("must not be empty"), "{text}");
    assert!(!notes.scratchpads.contains_key("B"));
}

#[test]
fn chatroom_keeps_the_newest_messages() {
    let mut notes = Notes::default();
    let (text, ok) = call(&mut notes, "chatroom_read", "A", json!({}));
    assert!(ok && text.starts_with("[EMPTY]"), "{text}");
    let (text, ok) = call(
        &mut notes,
        "chatroom_send",
        "Planner",
        json!({"recipient": "All", "message": "tests first"}),
    );
    assert_eq!((text.as_str(), ok), ("Message sent to All.", true));
    call(
        &mut notes,
        "chatroom_send",
        "Developer",
        json!({"recipient": "Planner", "message": "ok"}),
    );
    let (text, _) = call(&mut notes, "chatroom_read", "Tester", json!({"count": 1}));
    assert_eq!(
        text,
        "=== Chatroom (last 1 message(s)) ===\n\n[turn 3] Developer → Planner\nok"
    );
    for at in 0..MAX_CHATROOM_MESSAGES {
        call(
            &mut notes,
            "chatroom_send",
            "A",
            json!({"recipient": "B", "message": format!("m{at}")}),
        );
    }
    assert_eq!(notes.chatroom.len(), MAX_CHATROOM_MESSAGES);
    assert_eq!(notes.chatroom_dropped, 2);
    assert_eq!(notes.chatroom[0].message, "m0");
    for args in [
        json!({"recipient": "B"}),
        json!({"recipient": "", "message": "x"}),
        json!({"recipient": "B", "message": "x".repeat(chatroom::MAX_MESSAGE_CHARS + 1)}),
    ] {
        let (text, ok) = call(&mut notes, "chatroom_send", "A", args);
        assert!(!ok && text.starts_with("[ERROR]"), "{text}");
    }
    let (text, ok) = call(&mut notes, "chatroom_read", "A", json!({"count": "many"}));
    assert!(!ok && text.contains("`count`"), "{text}");
}

#[test]
fn notes_round_trip_through_checkpoint_json() {
    let mut notes = Notes::default();
    assert_eq!(serde_json::to_value(&notes).unwrap(), json!({}));
    call(
        &mut notes,
        "session_context_write",
        "A",
        json!({"summary": "done"}),
    );
    call(
        &mut notes,
        "scratchpad_write",
        "A",
        json!({"key": "k", "value": "v"}),
    );
    call(
        &mut notes,
        "scratchpad_write",
        "A",
        json!({"key": "g", "value": "w", "scope": "global"}),
    );
    call(
        &mut notes,
        "chatroom_send",
        "A",
        json!({"recipient": "B", "message": "hi"}),
    );
    let json = serde_json::to_value(&notes).unwrap();
    assert_eq!(crate::checkpoint::read::<Notes>(&json).unwrap(), notes);
    let error = crate::checkpoint::read::<Notes>(&json!({"Chatroom": 5})).unwrap_err();
    assert!(
        error.starts_with("field `Chatroom`: invalid type"),
        "{error}"
    );
}

#[test]
fn odd_arguments_are_results_for_every_notes_tool() {
    let odd = [
        Json::Null,
        json!("not json"),
        json!("{\"key\": 1}"),
        json!([]),
        json!(7),
        json!({"key": null, "value": [], "scope": 3, "summary": {}, "recipient": 1, "count": -1}),
        json!({"key": "\u{0}", "value": "\u{0}", "query": "\u{0}", "summary": "\u{0}"}),
        json!({"key": "k", "value": "v", "scope": "GLOBAL ", "count": 1e300}),
    ];
    let mut notes = Notes::default();
    for tool in Tool::ALL.iter().copied().filter(|tool| answers(*tool)) {
        for args in &odd {
            let (text, _) = answer(
                &mut notes,
                tool,
                args,
                Caller {
                    agent: "A",
                    turn: 0,
                },
            );
            assert!(!text.is_empty(), "{tool} {args}");
        }
    }
}
