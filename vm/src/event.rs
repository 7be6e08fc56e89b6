//! Run events: everything observable in a run, in the JSONL format of `docs/events.md`
//! (`{"ts", "session", "turn", "agent", "event_type", "payload"}`), names following upstream.
//!
//! The machine emits events without a timestamp (it has no clock); the driver stamps them.

mod kinds;

pub use kinds::{Budget, ContextCap, CostMark, EventKind, Resend, UsageMark, Via};

/// The version of the events-line format `docs/events.md` documents. Payloads only gain
/// fields and event types only get added within a version.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub turn: u32,
    pub agent: Option<String>,
    pub kind: EventKind,
}

impl Event {
    pub fn new(turn: u32, agent: Option<&str>, kind: EventKind) -> Event {
        Event {
            turn,
            agent: agent.map(str::to_string),
            kind,
        }
    }

    /// This event's `event_type`.
    pub fn name(&self) -> &'static str {
        self.kind.name()
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
        // The kind serializes as `{"event_type":..,"payload":..}`: its keys continue the line.
        out.push(b',');
        let at = out.len();
        let _ = serde_json::to_writer(&mut *out, &self.kind);
        out.remove(at);
    }

    /// The payload as JSON text (`{}` for an empty one).
    pub fn payload_json(&self) -> String {
        let whole = serde_json::to_string(&self.kind).unwrap_or_default();
        // `{"event_type":"<name>","payload":<payload>}`; names need no escaping.
        let prefix = "{\"event_type\":\"\",\"payload\":".len() + self.name().len();
        whole
            .get(prefix..whole.len().saturating_sub(1))
            .unwrap_or_default()
            .to_string()
    }

    /// The payload as a JSON value, for the web view's messages.
    pub fn payload_value(&self) -> serde_json::Value {
        match serde_json::to_value(&self.kind) {
            Ok(serde_json::Value::Object(mut object)) => {
                object.remove("payload").unwrap_or(serde_json::Value::Null)
            }
            _ => serde_json::Value::Null,
        }
    }

    /// A stable one-line rendering for trace snapshots: no timestamps, no session id.
    pub fn trace_line(&self) -> String {
        let agent = self.agent.as_deref().unwrap_or("-");
        let payload = self.payload_json();
        let gap = if payload.is_empty() { "" } else { " " };
        format!("{:>3} {agent:<12} {}{gap}{payload}", self.turn, self.name())
    }
}

/// How a run ended (`session_end.payload.outcome`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
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

    /// README.md's exit codes: 0 when ended by a terminal state or a termination strategy (including
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
    use serde_json::{json, Value as Json};

    /// The line as a JSON object built key by key (nulls omitted), serialized.
    fn reference(event: &Event, ts: &str, session: &str) -> String {
        let mut object = serde_json::Map::new();
        object.insert("ts".into(), json!(ts));
        object.insert("session".into(), json!(session));
        object.insert("turn".into(), json!(event.turn));
        if let Some(agent) = &event.agent {
            object.insert("agent".into(), json!(agent));
        }
        object.insert("event_type".into(), json!(event.name()));
        let payload = event.payload_value();
        if !payload.is_null() {
            object.insert("payload".into(), payload);
        }
        Json::Object(object).to_string()
    }

    #[test]
    fn event_lines_are_the_json_object_serialized() {
        let events = [
            Event::new(0, None, EventKind::TerminationTriggered {}),
            Event::new(
                7,
                Some("Dev \"quoted\"\n"),
                EventKind::AgentRouted {
                    from: "A".into(),
                    to: "end".into(),
                    signal: None,
                    exit: Some(2),
                },
            ),
            Event::new(
                u32::MAX,
                Some("é🦀"),
                EventKind::Warning {
                    message: "line\u{1}\ttab".into(),
                    reason: None,
                },
            ),
            Event::new(
                1,
                Some(""),
                EventKind::BudgetExceeded(Budget::Cost {
                    cost_usd: 0.6,
                    max_total_cost: 0.5,
                }),
            ),
        ];
        for event in events {
            let ts = "2026-11-22T07:00:00.000Z";
            let line = event.to_json_line(ts, "0000cafe");
            assert_eq!(line, reference(&event, ts, "0000cafe"));
            let payload = event.payload_value().to_string();
            assert_eq!(event.payload_json(), payload);
            assert!(event
                .trace_line()
                .ends_with(&format!("{} {payload}", event.name())));
        }
    }
}
