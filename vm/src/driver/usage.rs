//! Token usage and cost as the driver reports them: which calls reported no usage (their
//! tokens are unknown, not 0), what the calls cost by their models' known prices, and the
//! `usage` / `cost` objects added to `turn_end` and `session_end` events.

use crate::event::{Event, EventKind, UsageMark};
use crate::history::Usage;
use crate::models::Cost;

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
