//! Per-agent totals of a session: turns, tokens, cost, tool calls and time, added up from
//! the run's `turn_start`/`turn_end` events, kept in every checkpoint (`AgentTotals`) so a
//! resumed session goes on counting, and shown in the footer, `--json` (`agents`) and
//! `sessions show`.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use fuseraft_vm::event::{Event, EventKind};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// The session key the totals are kept under.
pub const KEY: &str = "AgentTotals";

/// What one agent's turns added up to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentTotals {
    pub turns: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// What its calls cost in USD, when any had a price.
    pub cost_usd: Option<f64>,
    pub tool_calls: u64,
    /// Wall time of its turns, from start to reply.
    pub seconds: f64,
}

/// The totals of every agent that took a turn, by name.
#[derive(Debug, Default)]
pub struct Agents {
    totals: BTreeMap<String, AgentTotals>,
    /// When each agent's turn in progress started.
    started: HashMap<String, Instant>,
}

impl Agents {
    /// The totals a resumed session saved (none for a new one, or one saved before them).
    pub fn restored(saved: Option<&Json>) -> Agents {
        let totals = saved
            .and_then(|saved| saved.get(KEY))
            .and_then(|totals| serde_json::from_value(totals.clone()).ok())
            .unwrap_or_default();
        Agents {
            totals,
            started: HashMap::new(),
        }
    }

    /// Counts `event` when it starts or ends an agent's turn.
    pub fn on_event(&mut self, event: &Event) {
        let Some(agent) = event.agent.as_deref() else {
            return;
        };
        match &event.kind {
            EventKind::TurnStart { .. } => {
                self.started.insert(agent.to_string(), Instant::now());
            }
            EventKind::TurnEnd {
                input_tokens,
                output_tokens,
                tool_calls,
                cache_read_tokens,
                cache_write_tokens,
                cost,
                ..
            } => {
                let seconds = self
                    .started
                    .remove(agent)
                    .map_or(0.0, |since| since.elapsed().as_secs_f64());
                let totals = self.totals.entry(agent.to_string()).or_default();
                totals.turns += 1;
                totals.input_tokens += input_tokens;
                totals.output_tokens += output_tokens;
                totals.cache_read_tokens += cache_read_tokens.unwrap_or(0);
                totals.cache_write_tokens += cache_write_tokens.unwrap_or(0);
                if let Some(cost) = cost {
                    *totals.cost_usd.get_or_insert(0.0) += cost.usd;
                }
                totals.tool_calls += *tool_calls as u64;
                totals.seconds += seconds;
            }
            _ => {}
        }
    }

    /// `{agent: {turns, input_tokens, ...}}`.
    pub fn json(&self) -> Json {
        serde_json::to_value(&self.totals).unwrap_or_default()
    }

    /// The footer's lines, one per agent, when more than one took a turn.
    pub fn lines(&self) -> String {
        if self.totals.len() < 2 {
            return String::new();
        }
        let mut out = String::new();
        for (agent, totals) in &self.totals {
            let cost = totals
                .cost_usd
                .map(|usd| format!(" · ${usd:.4}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "\n   {}: {} turn(s) · tokens in {} / out {}{cost} · {} tool call(s) · {:.1}s",
                crate::terminal::neutralise(agent),
                totals.turns,
                totals.input_tokens,
                totals.output_tokens,
                totals.tool_calls,
                totals.seconds
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(agent: &str, kind: EventKind) -> Event {
        Event::new(0, Some(agent), kind)
    }

    fn turn_end(input: u64, tools: usize) -> EventKind {
        EventKind::TurnEnd {
            state: "s".into(),
            input_tokens: input,
            output_tokens: 1,
            tool_calls: tools,
            cache_read_tokens: None,
            cache_write_tokens: None,
            usage: None,
            cost: None,
        }
    }

    #[test]
    fn turns_add_up_per_agent_and_survive_a_resume() {
        let mut agents = Agents::default();
        for (agent, input, tools) in [("Dev", 10, 2), ("Rev", 5, 0), ("Dev", 7, 1)] {
            agents.on_event(&event(agent, EventKind::TurnStart { state: "s".into() }));
            agents.on_event(&event(agent, turn_end(input, tools)));
        }
        let saved = serde_json::json!({ KEY: agents.json() });
        let restored = Agents::restored(Some(&saved));
        let dev = &restored.totals["Dev"];
        assert_eq!((dev.turns, dev.input_tokens, dev.tool_calls), (2, 17, 3));
        assert_eq!(restored.totals["Rev"].turns, 1);
        assert_eq!(restored.lines().lines().count(), 3);
    }
}
