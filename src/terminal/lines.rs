//! The short human lines a run's events become on the terminal, in colour when asked: a
//! correction, a failed validator, a refused tool, a recovery, a warning, a model error; and
//! the key argument a tool call is shown with (`⚙ write_file src/main.rs`).

use fuseraft_vm::event::{Event, EventKind};
use fuseraft_vm::history::ToolCall;
use serde_json::Value as Json;

use super::neutralise;

/// The SGR colour of a turn's header line.
pub const HEADER: &str = "1;36";

/// The SGR colour of a route line.
pub const GOOD: &str = "32";

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

    /// One line written straight into `out`: what `write` writes, in colour `code` when
    /// colour is on, then a newline; the bytes of `writeln!(out, "{}", self.wrap(code, ..))`
    /// without building the strings (a turn writes two such lines).
    pub fn line(self, out: &mut Vec<u8>, code: &str, write: impl FnOnce(&mut Vec<u8>)) {
        if self.on {
            out.extend_from_slice(b"\x1b[");
            out.extend_from_slice(code.as_bytes());
            out.push(b'm');
            write(out);
            out.extend_from_slice(b"\x1b[0m\n");
        } else {
            write(out);
            out.push(b'\n');
        }
    }

    pub fn header(self, text: &str) -> String {
        self.wrap(HEADER, text)
    }

    pub fn good(self, text: &str) -> String {
        self.wrap(GOOD, text)
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
pub const DETAIL_CHARS: usize = 200;

/// `text` on one line: line breaks as ` ⏎ `, cut at `max` characters with `…`.
pub(super) fn one_line(text: &str, max: usize) -> String {
    let flat = text.trim().replace('\n', " ⏎ ");
    let mut shown: String = flat.chars().take(max).collect();
    if shown.len() < flat.len() {
        shown.push('…');
    }
    neutralise(&shown).into_owned()
}

/// The line of a notice event (`correction_injected`, `validation_fail`, `tool_blocked`,
/// `recovery_activated`, `warning`, `model_error`, a sub-agent's `sub_agent_*`), or `None`
/// for other events.
pub fn notice(event: &Event, paint: Paint, detail: usize) -> Option<String> {
    let agent = event.agent.as_deref().map(neutralise).unwrap_or_default();
    let line = match &event.kind {
        EventKind::CorrectionInjected { reason } => {
            paint.warn(&format!("  ↺ correction: {}", one_line(reason, detail)))
        }
        EventKind::ValidationFail {
            validator, error, ..
        } => {
            let check = if validator.is_empty() {
                "check"
            } else {
                validator
            };
            paint.bad(&format!(
                "  ✗ {}: {}",
                neutralise(check),
                one_line(error, detail)
            ))
        }
        EventKind::ToolBlocked { tool, result } => paint.bad(&format!(
            "  ⊘ {} refused: {}",
            neutralise(tool),
            one_line(result, detail)
        )),
        EventKind::RecoveryActivated { reason, .. } => paint.warn(&format!(
            "  ↪ recovery by {agent}: {}",
            one_line(reason, detail)
        )),
        EventKind::Warning { message, .. } => {
            paint.warn(&format!("  ! {}", one_line(message, detail)))
        }
        EventKind::ModelError { error } => {
            paint.bad(&format!("  ! model error: {}", one_line(error, detail)))
        }
        // A sub-agent's run, indented under the call that started it.
        EventKind::SubAgentStart { mode, query, .. } => paint.dim(&format!(
            "  ⤷ sub-agent ({}): {}",
            neutralise(mode),
            one_line(query, 80)
        )),
        EventKind::SubAgentToolCall { tool, ok, result } => {
            let line = format!("    ⚙ {}", neutralise(tool));
            match result.as_deref() {
                _ if *ok => paint.dim(&format!("{line} (ok)")),
                Some(result) if !result.is_empty() => {
                    paint.bad(&format!("{line} (failed): {}", one_line(result, detail)))
                }
                _ => paint.bad(&format!("{line} (failed)")),
            }
        }
        EventKind::SubAgentEnd {
            outcome,
            tool_calls,
            input_tokens,
            output_tokens,
            ..
        } => {
            let line = format!(
                "  ⤶ sub-agent {} · {tool_calls} tool calls · tokens in {input_tokens} / out {output_tokens}",
                neutralise(outcome),
            );
            match outcome.as_str() {
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

    #[test]
    fn a_line_written_in_place_is_the_wrapped_line() {
        use std::io::Write;
        for on in [false, true] {
            let paint = Paint { on };
            for (code, text) in [
                (HEADER, "── turn 3 · Dev · Developer ──"),
                (GOOD, "  → end"),
            ] {
                let mut expected = Vec::new();
                writeln!(expected, "{}", paint.wrap(code, text)).unwrap();
                let mut written = b"before".to_vec();
                paint.line(&mut written, code, |out| {
                    out.extend_from_slice(text.as_bytes())
                });
                assert_eq!(written[6..], expected[..], "{on} {text}");
            }
        }
    }

    fn event(kind: EventKind) -> Event {
        Event::new(0, Some("Dev"), kind)
    }

    fn warning(message: &str) -> EventKind {
        EventKind::Warning {
            message: message.into(),
            reason: None,
        }
    }

    fn model_error(error: &str) -> EventKind {
        EventKind::ModelError {
            error: error.into(),
        }
    }

    fn tool_call(tool: &str, ok: bool, result: Option<&str>) -> EventKind {
        EventKind::SubAgentToolCall {
            tool: tool.into(),
            ok,
            result: result.map(str::to_string),
        }
    }

    #[test]
    fn a_long_detail_is_cut_unless_verbose() {
        let plain = Paint { on: false };
        let long = "x".repeat(300);
        let cut = notice(&event(model_error(&long)), plain, DETAIL_CHARS).unwrap();
        assert!(
            cut.ends_with('…') && cut.matches('x').count() == DETAIL_CHARS,
            "{cut}"
        );
        let whole = notice(&event(model_error(&long)), plain, usize::MAX).unwrap();
        assert!(whole.ends_with(&long), "{whole}");
    }

    #[test]
    fn notices_are_short_lines_in_words() {
        let plain = Paint { on: false };
        let line = |kind| notice(&event(kind), plain, DETAIL_CHARS).unwrap();
        let reason = "no keyword".to_string();
        assert_eq!(
            line(EventKind::CorrectionInjected { reason }),
            "  ↺ correction: no keyword"
        );
        let failed = EventKind::ValidationFail {
            validator: "RequireShellPass".into(),
            state: None,
            to: None,
            consecutive: None,
            class: None,
            error: "no passing\nshell run".into(),
            strategy: None,
        };
        assert_eq!(line(failed), "  ✗ RequireShellPass: no passing ⏎ shell run");
        let blocked = EventKind::ToolBlocked {
            tool: "write_file".into(),
            result: "[DENIED: sandbox] `../x`".into(),
        };
        assert_eq!(
            line(blocked),
            "  ⊘ write_file refused: [DENIED: sandbox] `../x`"
        );
        let recovery = EventKind::RecoveryActivated {
            reason: "stuck".into(),
            validator: "RequireWriteFile".into(),
        };
        assert_eq!(line(recovery), "  ↪ recovery by Dev: stuck");
        assert_eq!(line(warning("slow")), "  ! slow");
        assert_eq!(line(model_error("HTTP 500")), "  ! model error: HTTP 500");
        let start = EventKind::TurnStart {
            state: "Dev".into(),
        };
        assert!(notice(&event(start), plain, DETAIL_CHARS).is_none());
        let long = "x".repeat(500);
        assert_eq!(
            line(warning(&long)).chars().count(),
            "  ! ".len() + DETAIL_CHARS + 1
        );
        let coloured = notice(&event(model_error("e")), Paint { on: true }, DETAIL_CHARS);
        assert_eq!(coloured.unwrap(), "\x1b[31m  ! model error: e\x1b[0m");
        let hostile = line(warning("\x1b]0;pwned\x07"));
        assert!(!hostile.contains('\x1b'), "{hostile}");
    }

    #[test]
    fn a_sub_agent_shows_as_indented_lines() {
        let plain = Paint { on: false };
        let line = |kind| notice(&event(kind), plain, DETAIL_CHARS).unwrap();
        let start = EventKind::SubAgentStart {
            mode: "explore".into(),
            query: "where is\nmain?".into(),
            max_tool_calls: 8,
            tools: 3,
        };
        assert_eq!(line(start), "  ⤷ sub-agent (explore): where is ⏎ main?");
        assert_eq!(
            line(tool_call("search_content", true, None)),
            "    ⚙ search_content (ok)"
        );
        assert_eq!(
            line(tool_call("write_file", false, None)),
            "    ⚙ write_file (failed)"
        );
        assert_eq!(
            line(tool_call(
                "write_file",
                false,
                Some("[DENIED: sub-agent] no")
            )),
            "    ⚙ write_file (failed): [DENIED: sub-agent] no"
        );
        let end = EventKind::SubAgentEnd {
            mode: "explore".into(),
            outcome: "cap_reached".into(),
            tool_calls: 2,
            input_tokens: 30,
            output_tokens: 4,
            result_chars: 10,
        };
        assert_eq!(
            line(end),
            "  ⤶ sub-agent cap_reached · 2 tool calls · tokens in 30 / out 4"
        );
        let hostile = line(tool_call("\x1b[2Jx", true, None));
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
            denied: None,
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
