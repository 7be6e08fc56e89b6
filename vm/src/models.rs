//! The model-call contract beside the effects: [`Models`], what answers a
//! [`crate::effect::ModelCall`] (a real provider or the replay), what its calls cost
//! ([`Cost`]), and its position as a checkpoint stores it ([`ProviderState`]: JSON for any
//! provider, or the replay provider's cursors written straight from their values).

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value as Json;

use crate::effect::{ModelCall, ModelReply};
use crate::event::CostMark;

/// What a checkpoint writes under `Provider`.
#[derive(Clone, Debug, PartialEq)]
pub enum ProviderState<'a> {
    /// Any provider's position, as JSON.
    Json(Json),
    /// The replay provider's position: `{"cursors": {queue: [index, times], ...},
    /// "next_id": n}`, the queues in name order.
    Cursors {
        cursors: Vec<(&'a str, usize, u32)>,
        next_id: u64,
    },
}

impl ProviderState<'_> {
    /// The same position as a JSON value.
    pub fn to_json(&self) -> Json {
        match self {
            ProviderState::Json(json) => json.clone(),
            ProviderState::Cursors { cursors, next_id } => {
                let cursors = cursors
                    .iter()
                    .map(|&(name, idx, times)| {
                        let pair = Json::Array(vec![Json::from(idx), Json::from(times)]);
                        (name.to_string(), pair)
                    })
                    .collect::<serde_json::Map<_, _>>();
                let mut state = serde_json::Map::with_capacity(2);
                state.insert("cursors".into(), Json::Object(cursors));
                state.insert("next_id".into(), Json::from(*next_id));
                Json::Object(state)
            }
        }
    }
}

impl Serialize for ProviderState<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ProviderState::Json(json) => json.serialize(serializer),
            ProviderState::Cursors { cursors, next_id } => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("cursors", &Cursors(cursors))?;
                map.serialize_entry("next_id", next_id)?;
                map.end()
            }
        }
    }
}

/// The cursors as a JSON object of `[index, times]` pairs.
struct Cursors<'c, 'a>(&'c [(&'a str, usize, u32)]);

impl Serialize for Cursors<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, idx, times) in self.0 {
            map.serialize_entry(name, &(idx, times))?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_write_what_their_json_writes() {
        let cases = [
            ProviderState::Cursors {
                cursors: vec![],
                next_id: 0,
            },
            ProviderState::Cursors {
                cursors: vec![
                    ("*", 3, 1),
                    ("Dev \"q\"\n", usize::MAX, u32::MAX),
                    ("é", 0, 0),
                ],
                next_id: u64::MAX,
            },
            ProviderState::Json(serde_json::json!({"a": [1, 2], "b": null})),
        ];
        for state in cases {
            let written = serde_json::to_string(&state).unwrap();
            assert_eq!(written, serde_json::to_string(&state.to_json()).unwrap());
        }
    }
}

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

/// Answers model calls.
pub trait Models: Sync {
    fn call(
        &self,
        call: &ModelCall,
    ) -> impl std::future::Future<Output = Result<ModelReply, String>> + Send;

    /// Whether the provider reads prompts (messages, tool schemas). The machine skips
    /// assembling them for providers that do not.
    fn reads_prompts(&self) -> bool {
        true
    }

    /// Whether a call's answer can be asked again with the same result and no effect outside
    /// the process (a replay's recorded replies): a turn made only of such calls can be redone
    /// from the checkpoint before it (see [`Checkpoint::redoable`]).
    fn replayed(&self) -> bool {
        false
    }

    /// The provider's position, saved in checkpoints (the replay provider's cursors).
    fn state(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// [`Models::state`] as a checkpoint writes it after every turn (the replay provider
    /// writes its cursors without building JSON).
    fn checkpoint_state(&self) -> ProviderState<'_> {
        ProviderState::Json(self.state())
    }

    /// Returns to a position saved by [`Models::state`].
    fn restore(&self, _state: &serde_json::Value) {}

    /// The position to save while a fork's branches are out: `base` (the position when they
    /// started) moved on by the calls of `agents` only (those whose branches finished), so a
    /// resumed run asks again for exactly the branches that run again.
    fn state_keeping(&self, _base: &serde_json::Value, _agents: &[String]) -> serde_json::Value {
        self.state()
    }

    /// How many replies so far came without token usage (their server reported none), so
    /// their tokens are unknown rather than 0.
    fn usage_unreported(&self) -> u32 {
        0
    }

    /// What the replies so far cost, by their models' known prices.
    fn cost(&self) -> Cost {
        Cost::default()
    }

    /// What the provider did on its way to replies (retries, requests cut to fit), queued
    /// for the driver to hand out as events; `None` when it never does any of that.
    fn notices(&self) -> Option<&crate::notices::Notices> {
        None
    }

    /// The durable engine that keeps this run's effects (its tool calls), when the run is
    /// one invocation of a served session; `None` (every effect is made) for a local run.
    fn journal(&self) -> Option<&dyn crate::journal::Journal> {
        None
    }
}
