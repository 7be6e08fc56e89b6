//! Token usage and cost as the driver reports them: which calls reported no usage (their
//! tokens are unknown, not 0), what the calls cost by their models' known prices, and the
//! `usage` / `cost` objects added to `turn_end` and `session_end` events.

use crate::event::{CostMark, Event, EventKind, UsageMark};
use crate::history::Usage;

/// What model calls cost in US dollars, by the models' list prices: `priced` calls had a
/// known price, `unpriced` calls did not (a local server, a model not in the table).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Cost {
    pub usd: f64,
    pub priced: u32,
    pub unpriced: u32,
}

impl Cost {
    /// Counts one call that cost `usd`, or whose cost is unknown.
    pub fn add(&mut self, usd: Option<f64>) {
        match usd {
            Some(usd) => {
                self.usd += usd;
                self.priced += 1;
            }
            None => self.unpriced += 1,
        }
    }

    /// The calls made since `before`.
    pub fn since(self, before: Cost) -> Cost {
        Cost {
            usd: (self.usd - before.usd).max(0.0),
            priced: self.priced.saturating_sub(before.priced),
            unpriced: self.unpriced.saturating_sub(before.unpriced),
        }
    }

    /// `{usd, complete}` for events and `--json`, or null when no call had a price.
    pub fn json(&self) -> serde_json::Value {
        match self.mark() {
            Some(mark) => serde_json::to_value(mark).unwrap_or_default(),
            None => serde_json::Value::Null,
        }
    }

    /// The `cost` of an event, or `None` when no call had a price.
    pub fn mark(&self) -> Option<CostMark> {
        (self.priced > 0).then_some(CostMark {
            usd: self.usd,
            complete: self.unpriced == 0,
        })
    }
}

/// The usage of a turn or a run as events and summaries show it: `complete` unless some
/// call's server reported none; `known` unless no call reported any.
pub fn usage_json(usage: Usage, unreported: u32) -> serde_json::Value {
    serde_json::to_value(usage_mark(usage, unreported)).unwrap_or_default()
}

/// [`usage_json`] as the typed `usage` of an event.
pub(super) fn usage_mark(usage: Usage, unreported: u32) -> UsageMark {
    UsageMark {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        complete: unreported == 0,
        known: unreported == 0 || usage.total() > 0,
    }
}

/// Adds `usage` (see [`usage_json`]) to a `turn_end` or `session_end` payload when some of
/// its calls reported no usage, and `cost` (see [`Cost::json`]) when some had a price.
pub(super) fn mark_usage(event: &Event, unreported: u32, cost: Cost) -> Option<Event> {
    if unreported == 0 && cost.priced == 0 {
        return None;
    }
    let mut event = event.clone();
    let (input_tokens, output_tokens, usage, cost_mark) = match &mut event.kind {
        EventKind::TurnEnd {
            input_tokens,
            output_tokens,
            usage,
            cost,
            ..
        }
        | EventKind::SessionEnd {
            input_tokens,
            output_tokens,
            usage,
            cost,
            ..
        } => (*input_tokens, *output_tokens, usage, cost),
        _ => return None,
    };
    if unreported > 0 {
        let counted = Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        };
        *usage = Some(usage_mark(counted, unreported));
    }
    *cost_mark = cost.mark();
    Some(event)
}
