//! The short human lines a run's events become on the terminal, in colour when asked: a
//! correction, a failed validator, a refused tool, a recovery, a warning, a model error; and
//! the key argument a tool call is shown with (`⚙ write_file src/main.rs`).

use fuseraft_vm::event::Event;
use fuseraft_vm::history::ToolCall;
use serde_json::Value as Json;

use super::neutralise;

/// SGR colours, or none.
#[derive(Copy, Clone, Debug)]
pub struct Paint {
    pub on: bool,
}

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub fn header(self, text: &str) -> String {
        self.wrap("1;36", text)
    }

    pub fn good(self, text: &str) -> String {
        self.wrap("32", text)
    }

    pub fn warn(self, text: &str) -> String {
        self.wrap("33", text)
    }

    pub fn bad(self, text: &str) -> String {
        self.wrap("31", text)
    }

    pub fn dim(self, text: &str) -> String {
        self.wrap("2", text)
    }
}

/// The most characters of a detail (a reason, a tool's result) shown on one line.
const DETAIL_CHARS: usize = 200;

/// `text` on one line: line breaks as ` ⏎ `, cut at `max` characters with `…`.
pub(super) fn one_line(text: &str, max: usize) -> String {
    let flat = text.trim().replace('\n', " ⏎ ");
    let mut shown: String = flat.chars().take(max).collect();
    if shown.len() < flat.len() {
        shown.push('…');
    }
    neutralise(&shown).into_owned()
}

fn text<'a>(payload: &'a Json, key: &str) -> &'a str {
    payload.get(key).and_then(Json::as_str).unwrap_or("")
}

/// The line of a notice event (`correction_injected`, `validation_fail`, `tool_blocked`,
/// `recovery_activated`, `warning`, `model_error`, a sub-agent's `sub_agent_*`), or `None`
/// for other events.
pub fn notice(event: &Event, paint: Paint) -> Option<String> {
    let payload = &event.payload;
    let agent = event.agent.as_deref().map(neutralise).unwrap_or_default();
    let line = match event.event_type {
        "correction_injected" => paint.warn(&format!(
            "  ↺ correction: {}",
            one_line(text(payload, "reason"), DETAIL_CHARS)
        )),
        "validation_fail" => {
            let check = [text(payload, "validator"), text(payload, "contract")]
                .into_iter()
                .find(|name| !name.is_empty())
                .unwrap_or("check");
            paint.bad(&format!(
                "  ✗ {}: {}",
                neutralise(check),
                one_line(text(payload, "error"), DETAIL_CHARS)
            ))
        }
        "tool_blocked" => paint.bad(&format!(
            "  ⊘ {} refused: {}",
            neutralise(text(payload, "tool")),
            one_line(text(payload, "result"), DETAIL_CHARS)
        )),
        "recovery_activated" => paint.warn(&format!(
            "  ↪ recovery by {agent}: {}",
            one_line(text(payload, "reason"), DETAIL_CHARS)
        )),
        "warning" => paint.warn(&format!(
            "  ! {}",
            one_line(text(payload, "message"), DETAIL_CHARS)
        )),
        "model_error" => paint.bad(&format!(
            "  ! model error: {}",
            one_line(text(payload, "error"), DETAIL_CHARS)
        )),
        // A sub-agent's run, indented under the call that started it.
        "sub_agent_start" => paint.dim(&format!(
            "  ⤷ sub-agent ({}): {}",
            neutralise(text(payload, "mode")),
            one_line(text(payload, "query"), 80)
        )),
        "sub_agent_tool_call" => {
            let line = format!("    ⚙ {}", neutralise(text(payload, "tool")));
            match payload.get("ok").and_then(Json::as_bool) {
                Some(true) => paint.dim(&format!("{line} (ok)")),
                _ if !text(payload, "result").is_empty() => paint.bad(&format!(
                    "{line} (failed): {}",
                    one_line(text(payload, "result"), DETAIL_CHARS)
                )),
                _ => paint.bad(&format!("{line} (failed)")),
            }
        }
        "sub_agent_end" => {
            let count = |key: &str| payload.get(key).and_then(Json::as_u64).unwrap_or(0);
            let line = format!(
                "  ⤶ sub-agent {} · {} tool calls · tokens in {} / out {}",
                neutralise(text(payload, "outcome")),
                count("tool_calls"),
                count("input_tokens"),
                count("output_tokens")
            );
            match text(payload, "outcome") {
                "completed" => paint.dim(&line),
                _ => paint.bad(&line),
            }
        }
        _ => return None,
    };
    Some(line)
}

/// The argument a tool call is best known by (a path, a command, a pattern, a key), on one
/// short line; `None` when it has none.
pub fn key_argument(call: &ToolCall) -> Option<String> {
    const KEYS: &[&str] = &[
        "path",
        "command",
        "script",
        "source",
        "query",
        "pattern",
        "symbol",
        "url",
        "directory",
        "key",
        "route_keyword",
        "message",
    ];
    let args = match &call.args {
        Json::String(text) => serde_json::from_str::<Json>(text).ok()?,
        other => other.clone(),
    };
    KEYS.iter()
        .find_map(|key| args.get(*key).and_then(Json::as_str))
        .filter(|value| !value.trim().is_empty())
        .map(|value| one_line(value, 60))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(event_type: &'static str, payload: Json) -> Event {
        Event::new(0, Some("Dev"), event_type, payload)
    }

    #[test]
    fn notices_are_short_lines_in_words() {
        let plain = Paint { on: false };
        let line = |kind, payload| notice(&event(kind, payload), plain).unwrap();
        assert_eq!(
            line("correction_injected", json!({"reason": "no keyword"})),
            "  ↺ correction: no keyword"
        );
        assert_eq!(
            line(
                "validation_fail",
                json!({"validator": "RequireShellPass", "error": "no passing\nshell run"})
            ),
            "  ✗ RequireShellPass: no passing ⏎ shell run"
        );
        assert_eq!(
            line(
                "tool_blocked",
                json!({"tool": "write_file", "result": "[DENIED: sandbox] `../x`"})
            ),
            "  ⊘ write_file refused: [DENIED: sandbox] `../x`"
        );
        assert_eq!(
            line("recovery_activated", json!({"reason": "stuck"})),
            "  ↪ recovery by Dev: stuck"
        );
        assert_eq!(line("warning", json!({"message": "slow"})), "  ! slow");
        assert_eq!(
            line("model_error", json!({"error": "HTTP 500"})),
            "  ! model error: HTTP 500"
        );
        assert!(notice(&event("turn_start", json!({})), plain).is_none());
        let long = "x".repeat(500);
        assert_eq!(
            line("warning", json!({ "message": long })).chars().count(),
            "  ! ".len() + DETAIL_CHARS + 1
        );
        let coloured = notice(
            &event("model_error", json!({"error": "e"})),
            Paint { on: true },
        );
        assert_eq!(coloured.unwrap(), "\x1b[31m  ! model error: e\x1b[0m");
        let hostile = line("warning", json!({"message": "\x1b]0;pwned\x07"}));
        assert!(!hostile.contains('\x1b'), "{hostile}");
    }

    #[test]
    fn a_sub_agent_shows_as_indented_lines() {
        let plain = Paint { on: false };
        let line = |kind, payload| notice(&event(kind, payload), plain).unwrap();
        assert_eq!(
            line(
                "sub_agent_start",
                json!({"mode": "explore", "query": "where is\nmain?"})
            ),
            "  ⤷ sub-agent (explore): where is ⏎ main?"
        );
        assert_eq!(
            line(
                "sub_agent_tool_call",
                json!({"tool": "search_content", "ok": true})
            ),
            "    ⚙ search_content (ok)"
        );
        assert_eq!(
            line(
                "sub_agent_tool_call",
                json!({"tool": "write_file", "ok": false})
            ),
            "    ⚙ write_file (failed)"
        );
        assert_eq!(
            line(
                "sub_agent_tool_call",
                json!({"tool": "write_file", "ok": false, "result": "[DENIED: sub-agent] no"})
            ),
            "    ⚙ write_file (failed): [DENIED: sub-agent] no"
        );
        assert_eq!(
            line(
                "sub_agent_end",
                json!({"outcome": "cap_reached", "tool_calls": 2, "input_tokens": 30, "output_tokens": 4})
            ),
            "  ⤶ sub-agent cap_reached · 2 tool calls · tokens in 30 / out 4"
        );
        let hostile = line(
            "sub_agent_tool_call",
            json!({"tool": "\x1b[2Jx", "ok": true}),
        );
        assert!(!hostile.contains('\x1b'), "{hostile}");
    }

    #[test]
    fn a_tool_call_shows_its_key_argument() {
        let call = |name: &str, args: Json| ToolCall {
            id: "1".into(),
            name: name.into(),
            args,
            result: None,
            ok: true,
        };
        assert_eq!(
            key_argument(&call(
                "write_file",
                json!({"path": "src/main.rs", "content": "x"})
            )),
            Some("src/main.rs".into())
        );
        assert_eq!(
            key_argument(&call(
                "shell_run",
                json!("{\"command\": \"cargo test\\n\"}")
            )),
            Some("cargo test".into())
        );
        assert_eq!(key_argument(&call("changes_read", json!({}))), None);
        let long = key_argument(&call("shell_run", json!({"command": "y".repeat(100)}))).unwrap();
        assert_eq!(long.chars().count(), 61);
    }
}
