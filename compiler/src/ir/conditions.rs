//! What condition triggers mean on a reply: the JSON object extracted from it and the
//! evaluation of conditions. Shared by the VM (routing) and `check`, like the matchers.
//!
//! Reference: `research/fuseraft-semantics.md` §11 (JSON, conditions).

use serde_json::Value as Json;

use super::matching::eq_ignore_case;
use super::{Cond, Field};

/// The JSON object in a reply: the whole text, else the first ```json fenced block, else
/// the span from the first `{` to the last `}`. Only objects count.
pub fn extract_json(text: &str) -> Option<Json> {
    let object = |candidate: &str| match serde_json::from_str::<Json>(candidate.trim()) {
        Ok(value @ Json::Object(_)) => Some(value),
        _ => None,
    };
    if let Some(value) = object(text) {
        return Some(value);
    }
    let lower = text.to_ascii_lowercase();
    if let Some(start) = lower.find("```json") {
        let body = &text[start + 7..];
        let end = body.find("```").unwrap_or(body.len());
        if let Some(value) = object(&body[..end]) {
            return Some(value);
        }
    }
    let first = text.find('{')?;
    let last = text.rfind('}')?;
    if last > first {
        object(&text[first..=last])
    } else {
        None
    }
}

/// What a condition reads.
pub struct CondInput<'a> {
    pub last_agent: &'a str,
    pub last_message: &'a str,
    /// The JSON object extracted from the newest reply, if any.
    pub json: Option<&'a Json>,
}

/// A field's value as text: strings as themselves, null or missing as absent, anything else
/// as its JSON text with booleans capitalised as upstream renders them.
fn field_text(field: &Field, input: &CondInput<'_>) -> Option<String> {
    match field {
        Field::LastAgent => Some(input.last_agent.to_string()),
        Field::LastMessage => Some(input.last_message.to_string()),
        Field::Json(path) => {
            let mut value = input.json?;
            for segment in path {
                value = value.as_object()?.get(segment)?;
            }
            match value {
                Json::Null => None,
                Json::String(text) => Some(text.clone()),
                Json::Bool(true) => Some("True".to_string()),
                Json::Bool(false) => Some("False".to_string()),
                other => Some(other.to_string()),
            }
        }
    }
}

impl Cond {
    /// Evaluates the condition; comparisons ignore case.
    pub fn eval(&self, input: &CondInput<'_>) -> bool {
        match self {
            Cond::Eq(field, value) => {
                field_text(field, input).is_some_and(|text| eq_ignore_case(&text, value))
            }
            Cond::Ne(field, value) => {
                field_text(field, input).is_none_or(|text| !eq_ignore_case(&text, value))
            }
            Cond::Contains(field, value) => field_text(field, input)
                .is_some_and(|text| text.to_lowercase().contains(&value.to_lowercase())),
            Cond::Exists(field) => field_text(field, input).is_some(),
            Cond::Not(inner) => !inner.eval(input),
            Cond::And(items) => items.iter().all(|item| item.eval(input)),
            Cond::Or(items) => items.iter().any(|item| item.eval(input)),
        }
    }

    /// Does the condition read the reply's JSON (so a reply without JSON cannot satisfy it)?
    pub fn reads_json(&self) -> bool {
        match self {
            Cond::Eq(field, _)
            | Cond::Ne(field, _)
            | Cond::Contains(field, _)
            | Cond::Exists(field) => {
                matches!(field, Field::Json(_))
            }
            Cond::Not(inner) => inner.reads_json(),
            Cond::And(items) | Cond::Or(items) => items.iter().any(Cond::reads_json),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_extraction_tries_whole_fenced_then_braces() {
        assert_eq!(extract_json(r#"{"a": 1}"#).unwrap()["a"], 1);
        assert_eq!(
            extract_json("Here:\n```JSON\n{\"a\": 2}\n```\n").unwrap()["a"],
            2
        );
        assert_eq!(
            extract_json("verdict below {\"a\": 3} thanks").unwrap()["a"],
            3
        );
        assert!(extract_json("[1, 2]").is_none());
        assert!(extract_json("no json").is_none());
        assert!(extract_json("} before {").is_none());
    }

    #[test]
    fn conditions_follow_upstream_absent_rules() {
        let json: Json =
            serde_json::from_str(r#"{"verdict": "Approved", "score": 5.0, "ok": true, "n": null}"#)
                .unwrap();
        let input = CondInput {
            last_agent: "Editor",
            last_message: "ok PASS",
            json: Some(&json),
        };
        let path = |p: &str| Field::Json(p.split('.').map(str::to_string).collect());
        assert!(Cond::Eq(path("verdict"), "approved".into()).eval(&input));
        assert!(Cond::Eq(path("score"), "5.0".into()).eval(&input));
        assert!(Cond::Eq(path("ok"), "true".into()).eval(&input));
        assert!(!Cond::Eq(path("missing"), "x".into()).eval(&input));
        assert!(
            Cond::Ne(path("missing"), "x".into()).eval(&input),
            "absent is not equal"
        );
        assert!(
            !Cond::Exists(path("n")).eval(&input),
            "null counts as absent"
        );
        assert!(Cond::Contains(Field::LastMessage, "pass".into()).eval(&input));
        assert!(Cond::Eq(Field::LastAgent, "editor".into()).eval(&input));
    }
}
