//! Run events: everything observable in a run, in the JSONL format of DESIGN.md §4
//! (`{"ts", "session", "turn", "agent", "event_type", "payload"}`), names following upstream.
//!
//! The machine emits events without a timestamp (it has no clock); the driver stamps them.

use serde_json::Value as Json;

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub turn: u32,
    pub agent: Option<String>,
    pub event_type: &'static str,
    pub payload: Json,
}

impl Event {
    pub fn new(turn: u32, agent: Option<&str>, event_type: &'static str, payload: Json) -> Event {
        Event {
            turn,
            agent: agent.map(str::to_string),
            event_type,
            payload,
        }
    }

    /// One JSON line (nulls omitted), as written to `--events`.
    pub fn to_json_line(&self, ts: &str, session: &str) -> String {
        let mut line = Vec::new();
        self.write_json_line(ts, session, &mut line);
        String::from_utf8(line).unwrap_or_default()
    }

    /// Appends [`Event::to_json_line`] to `out`, written field by field rather than built as
    /// a JSON object first (the events file takes several a turn).
    pub fn write_json_line(&self, ts: &str, session: &str, out: &mut Vec<u8>) {
        // Writing JSON into a Vec cannot fail.
        fn field<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, name: &str, value: &T) {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            let _ = serde_json::to_writer(&mut *out, value);
        }
        out.extend_from_slice(b"{\"ts\":");
        let _ = serde_json::to_writer(&mut *out, ts);
        field(out, "session", session);
        field(out, "turn", &self.turn);
        if let Some(agent) = &self.agent {
            field(out, "agent", agent);
        }
        field(out, "event_type", self.event_type);
        if !self.payload.is_null() {
            field(out, "payload", &self.payload);
        }
        out.push(b'}');
    }

    /// A stable one-line rendering for trace snapshots: no timestamps, no session id.
    pub fn trace_line(&self) -> String {
        let agent = self.agent.as_deref().unwrap_or("-");
        let payload = if self.payload.is_null() {
            String::new()
        } else {
            format!(" {}", self.payload)
        };
        format!("{:>3} {agent:<12} {}{payload}", self.turn, self.event_type)
    }
}

/// How a run ended (`session_end.payload.outcome`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A terminal state or a termination strategy ended the run.
    Completed,
    /// The turn cap was reached.
    MaxTurns,
    /// A failure repeated past its threshold.
    Stuck,
    /// `MaxTotalTokens` was exceeded.
    Budget,
    /// The run could not continue (a provider error, no transition, a dead end).
    Error,
    Cancelled,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::MaxTurns => "max_turns",
            Outcome::Stuck => "stuck",
            Outcome::Budget => "budget",
            Outcome::Error => "error",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// DESIGN.md §5: 0 when ended by a terminal state or a termination strategy (including
    /// the iteration cap), 1 when stuck, over budget or on error.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Completed | Outcome::MaxTurns => 0,
            Outcome::Stuck | Outcome::Budget | Outcome::Error | Outcome::Cancelled => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The line as a JSON object built key by key (nulls omitted), serialized.
    fn reference(event: &Event, ts: &str, session: &str) -> String {
        let mut object = serde_json::Map::new();
        object.insert("ts".into(), json!(ts));
        object.insert("session".into(), json!(session));
        object.insert("turn".into(), json!(event.turn));
        if let Some(agent) = &event.agent {
            object.insert("agent".into(), json!(agent));
        }
        object.insert("event_type".into(), json!(event.event_type));
        if !event.payload.is_null() {
            object.insert("payload".into(), event.payload.clone());
        }
        Json::Object(object).to_string()
    }

    #[test]
    fn event_lines_are_the_json_object_serialized() {
        let events = [
            Event::new(0, None, "session_start", Json::Null),
            Event::new(
                7,
                Some("Dev \"quoted\"\n"),
                "agent_routed",
                json!({"from": "A", "to": "end", "signal": null, "exit": 2}),
            ),
            Event::new(
                u32::MAX,
                Some("é🦀"),
                "warning",
                json!({"message": "line\u{1}\ttab", "nested": [1, {"b": true}]}),
            ),
            Event::new(1, Some(""), "turn_end", json!([])),
        ];
        for event in events {
            let ts = "2026-11-22T07:00:00.000Z";
            assert_eq!(
                event.to_json_line(ts, "0000cafe"),
                reference(&event, ts, "0000cafe")
            );
        }
    }
}
