//! A provider's position as a checkpoint stores it under `Provider`: JSON for any provider,
//! or the replay provider's cursors written straight from their values (a durable replayed
//! run takes one after every turn; building it as a JSON map first cost more than writing it).

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value as Json;

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
