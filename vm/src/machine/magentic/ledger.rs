//! The magentic manager's progress ledger: read from its untrusted reply (a JSON object,
//! perhaps fenced or after some prose), every field checked, an error message that the
//! correction sent back to the manager can quote.

use serde_json::{Map, Value};

/// One round's assessment by the manager.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Ledger {
    pub satisfied: bool,
    pub in_loop: bool,
    pub progress: bool,
    /// The agent that acts next, as the program spells it (empty when satisfied).
    pub next_speaker: String,
    /// Why that agent: the `reason` of `next_speaker`, when given.
    pub reason: Option<String>,
    /// What the agent is told to do (empty when satisfied).
    pub instruction: String,
    /// A final answer given with the ledger (upstream's `final_answer`), used as is.
    pub final_answer: Option<String>,
}

/// The field names, as the prompt asks for them.
pub(super) const SATISFIED: &str = "is_request_satisfied";
pub(super) const IN_LOOP: &str = "is_in_loop";
pub(super) const PROGRESS: &str = "is_progress_being_made";
pub(super) const NEXT_SPEAKER: &str = "next_speaker";
pub(super) const INSTRUCTION: &str = "instruction_or_question";
pub(super) const FINAL_ANSWER: &str = "final_answer";

/// Reads a ledger from `reply`. `agents` are the names the manager may choose from; a name
/// is matched ignoring case and returned as `agents` spells it.
pub(super) fn parse(reply: &str, agents: &[String]) -> Result<Ledger, String> {
    let Some(text) = json_object(reply) else {
        return Err("the reply holds no JSON object".to_string());
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|error| format!("the ledger is not valid JSON ({error})"))?;
    let Value::Object(fields) = value else {
        return Err("the ledger is not a JSON object".to_string());
    };
    let satisfied = flag(&fields, SATISFIED)?;
    let in_loop = flag(&fields, IN_LOOP)?;
    let progress = flag(&fields, PROGRESS)?;
    let final_answer = text_field(&fields, FINAL_ANSWER)
        .filter(|text| !text.trim().is_empty() && !text.trim().eq_ignore_ascii_case("null"));
    if satisfied {
        return Ok(Ledger {
            satisfied,
            in_loop,
            progress,
            next_speaker: String::new(),
            reason: None,
            instruction: String::new(),
            final_answer,
        });
    }
    let speaker = text_field(&fields, NEXT_SPEAKER)
        .filter(|name| !name.trim().is_empty())
        .ok_or_else(|| format!("`{NEXT_SPEAKER}` is missing or not a name"))?;
    let next_speaker = agents
        .iter()
        .find(|agent| agent.eq_ignore_ascii_case(speaker.trim()))
        .cloned()
        .ok_or_else(|| {
            format!(
                "`{NEXT_SPEAKER}` `{}` is not one of the team: {}",
                speaker.trim(),
                agents.join(", ")
            )
        })?;
    let instruction = text_field(&fields, INSTRUCTION)
        .filter(|text| !text.trim().is_empty())
        .ok_or_else(|| format!("`{INSTRUCTION}` is missing or empty"))?;
    Ok(Ledger {
        satisfied,
        in_loop,
        progress,
        next_speaker,
        reason: reason(&fields, NEXT_SPEAKER),
        instruction: instruction.trim().to_string(),
        final_answer,
    })
}

/// The first balanced `{...}` of `reply` (strings and their escapes respected), so a ledger
/// inside a Markdown fence or after a sentence is found.
fn json_object(reply: &str) -> Option<&str> {
    let start = reply.find('{')?;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, c) in reply[start..].char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&reply[start..start + offset + 1]);
                }
            }
            _ => {}
        }
    }
    None
}

/// A field by name, ignoring case; its `answer` when it is Magentic-One's
/// `{"reason": ..., "answer": ...}` form.
fn field<'a>(fields: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    let value = fields
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value)?;
    match value {
        Value::Object(item) => item
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case("answer"))
            .map(|(_, answer)| answer),
        _ => Some(value),
    }
}

fn flag(fields: &Map<String, Value>, name: &str) -> Result<bool, String> {
    match field(fields, name) {
        Some(Value::Bool(value)) => Ok(*value),
        Some(Value::String(text)) => match text.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" => Ok(true),
            "false" | "no" => Ok(false),
            _ => Err(format!("`{name}` must be true or false, not `{text}`")),
        },
        Some(other) => Err(format!("`{name}` must be true or false, not `{other}`")),
        None => Err(format!("`{name}` is missing")),
    }
}

fn text_field(fields: &Map<String, Value>, name: &str) -> Option<String> {
    match field(fields, name)? {
        Value::String(text) => Some(text.clone()),
        _ => None,
    }
}

/// The `reason` of a field given in the `{"reason", "answer"}` form, or a sibling
/// `<name>_reason` field.
fn reason(fields: &Map<String, Value>, name: &str) -> Option<String> {
    let nested = fields
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .and_then(|(_, value)| value.as_object())
        .and_then(|item| {
            item.iter()
                .find(|(key, _)| key.eq_ignore_ascii_case("reason"))
                .and_then(|(_, reason)| reason.as_str())
        });
    let sibling = format!("{name}_reason");
    nested
        .or_else(|| {
            fields
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(&sibling))
                .and_then(|(_, reason)| reason.as_str())
        })
        .map(str::trim)
        .filter(|reason| !reason.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team() -> Vec<String> {
        vec!["Researcher".to_string(), "Developer".to_string()]
    }

    #[test]
    fn a_flat_ledger_in_a_fence_after_prose_is_read() {
        let reply = "Here is my assessment.\n```json\n{\"is_request_satisfied\": false, \"is_in_loop\": \"no\", \"is_progress_being_made\": true, \"next_speaker\": \"developer\", \"next_speaker_reason\": \"code is next\", \"instruction_or_question\": \"Write {the} code.\"}\n```";
        let ledger = parse(reply, &team()).unwrap();
        assert!(!ledger.satisfied && !ledger.in_loop && ledger.progress);
        assert_eq!(ledger.next_speaker, "Developer");
        assert_eq!(ledger.reason.as_deref(), Some("code is next"));
        assert_eq!(ledger.instruction, "Write {the} code.");
    }

    #[test]
    fn the_reason_answer_form_is_read() {
        let reply = r#"{"is_request_satisfied": {"reason": "r", "answer": false},
            "is_in_loop": {"reason": "r", "answer": false},
            "is_progress_being_made": {"reason": "r", "answer": true},
            "next_speaker": {"reason": "needs facts", "answer": "Researcher"},
            "instruction_or_question": {"reason": "r", "answer": "Find the API."}}"#;
        let ledger = parse(reply, &team()).unwrap();
        assert_eq!(ledger.next_speaker, "Researcher");
        assert_eq!(ledger.reason.as_deref(), Some("needs facts"));
        assert_eq!(ledger.instruction, "Find the API.");
    }

    #[test]
    fn a_satisfied_ledger_needs_no_speaker() {
        let reply = r#"{"is_request_satisfied": true, "is_in_loop": false, "is_progress_being_made": true, "final_answer": "null"}"#;
        let ledger = parse(reply, &team()).unwrap();
        assert!(ledger.satisfied);
        assert_eq!(ledger.final_answer, None);
    }

    #[test]
    fn bad_ledgers_say_what_is_wrong() {
        let cases = [
            (
                "Researcher should go next.",
                "the reply holds no JSON object",
            ),
            (
                "{\"is_request_satisfied\": false,",
                "the reply holds no JSON object",
            ),
            (
                "{is_request_satisfied: false}",
                "the ledger is not valid JSON",
            ),
            (
                "{\"is_in_loop\": false}",
                "`is_request_satisfied` is missing",
            ),
            (
                r#"{"is_request_satisfied": 1, "is_in_loop": false, "is_progress_being_made": true}"#,
                "`is_request_satisfied` must be true or false, not `1`",
            ),
            (
                r#"{"is_request_satisfied": false, "is_in_loop": false, "is_progress_being_made": true, "next_speaker": "Tester", "instruction_or_question": "x"}"#,
                "`next_speaker` `Tester` is not one of the team: Researcher, Developer",
            ),
            (
                r#"{"is_request_satisfied": false, "is_in_loop": false, "is_progress_being_made": true, "next_speaker": "Developer", "instruction_or_question": " "}"#,
                "`instruction_or_question` is missing or empty",
            ),
        ];
        for (reply, expected) in cases {
            let error = parse(reply, &team()).unwrap_err();
            assert!(error.starts_with(expected), "{reply}: {error}");
        }
    }

    #[test]
    fn deep_or_unbalanced_input_does_not_panic() {
        let deep = "{".repeat(10_000) + &"}".repeat(10_000);
        assert!(parse(&deep, &team()).is_err());
        assert!(parse("}}}{", &team()).is_err());
        assert!(parse("{\"a\": \"\\\"}\"", &team()).is_err());
    }
}
