//! Scratchpad (`scratchpad_write`, `scratchpad_read`, `scratchpad_read_all`,
//! `scratchpad_search`, `scratchpad_delete`): named entries an agent keeps for itself, or,
//! with `scope: "global"`, shares with every agent. Keys compare case-insensitively, as
//! upstream's.

use serde::{Deserialize, Serialize};

use super::super::{Args, Outcome, Tool};
use super::Caller;

/// The most entries one scratchpad holds.
pub(super) const MAX_ENTRIES: usize = 100;
/// The most characters of a key.
pub(super) const MAX_KEY_CHARS: usize = 200;
/// The most characters of a value (and of its tags).
pub(super) const MAX_VALUE_CHARS: usize = 4_000;

/// One scratchpad: its entries in the order they were first written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Scratchpad {
    pub entries: Vec<ScratchpadEntry>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ScratchpadEntry {
    pub key: String,
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<String>,
    /// The turn that wrote it last.
    pub turn: u32,
}

impl Scratchpad {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.entries
            .iter()
            .position(|entry| entry.key.to_lowercase() == key.to_lowercase())
    }
}

fn key_arg(args: &Args, tool: Tool) -> Result<&str, Outcome> {
    let key = args.string("key")?.trim();
    if key.is_empty() {
        return Err(Outcome::error(format!(
            "tool `{}`: `key` must not be empty",
            tool.name()
        )));
    }
    Ok(key)
}

fn render(entry: &ScratchpadEntry) -> String {
    let tags = entry
        .tags
        .as_deref()
        .map_or(String::new(), |tags| format!("  tags: {tags}"));
    format!(
        "[{}]{tags}  turn: {}\n{}",
        entry.key, entry.turn, entry.value
    )
}

/// Runs one scratchpad tool on `pad`, which belongs to `owner` (an agent, or `global`).
pub(super) fn run(
    pad: &mut Scratchpad,
    owner: &str,
    tool: Tool,
    args: &Args,
    caller: Caller<'_>,
) -> Outcome {
    let scope = if owner == "global" { "global" } else { "agent" };
    match tool {
        Tool::ScratchpadWrite => {
            let key = match key_arg(args, tool) {
                Ok(key) => key,
                Err(outcome) => return outcome,
            };
            let (value, tags) = match (args.string("value"), args.opt_string("tags")) {
                (Ok(value), Ok(tags)) => (value, tags.map(str::trim).filter(|t| !t.is_empty())),
                (Err(outcome), _) | (_, Err(outcome)) => return outcome,
            };
            if key.chars().count() > MAX_KEY_CHARS {
                return Outcome::error(format!(
                    "tool `scratchpad_write`: `key` is longer than {MAX_KEY_CHARS} characters"
                ));
            }
            let size = value.chars().count() + tags.map_or(0, |tags| tags.chars().count());
            if size > MAX_VALUE_CHARS {
                return Outcome::error(format!(
                    "tool `scratchpad_write`: the value has {size} characters, more than the \
                     {MAX_VALUE_CHARS} allowed"
                ));
            }
            let entry = ScratchpadEntry {
                key: key.to_string(),
                value: value.to_string(),
                tags: tags.map(str::to_string),
                turn: caller.turn,
            };
            match pad.position(key) {
                Some(at) => pad.entries[at] = entry,
                None if pad.entries.len() >= MAX_ENTRIES => {
                    return Outcome::error(format!(
                        "tool `scratchpad_write`: the {scope} scratchpad is full ({MAX_ENTRIES} \
                         entries); delete one with `scratchpad_delete` first"
                    ))
                }
                None => pad.entries.push(entry),
            }
            Outcome::ok(format!("Saved `{key}` to the scratchpad ({scope} scope)."))
        }
        Tool::ScratchpadRead => {
            let key = match key_arg(args, tool) {
                Ok(key) => key,
                Err(outcome) => return outcome,
            };
            match pad.position(key) {
                Some(at) => Outcome::ok(render(&pad.entries[at])),
                None => Outcome::fail(format!(
                    "[NOT FOUND] no entry `{key}` in the {scope} scratchpad"
                )),
            }
        }
        Tool::ScratchpadReadAll => {
            if pad.is_empty() {
                return Outcome::ok(format!("[EMPTY] no entries in the {scope} scratchpad"));
            }
            let mut entries: Vec<&ScratchpadEntry> = pad.entries.iter().collect();
            entries.sort_by_key(|entry| entry.key.to_lowercase());
            let body: Vec<String> = entries.into_iter().map(render).collect();
            Outcome::ok(format!(
                "=== Scratchpad ({scope}: {owner}, {} entries) ===\n\n{}",
                body.len(),
                body.join("\n\n")
            ))
        }
        Tool::ScratchpadSearch => {
            let query = match args.string("query") {
                Ok(query) if !query.trim().is_empty() => query.trim().to_lowercase(),
                Ok(_) => {
                    return Outcome::error("tool `scratchpad_search`: `query` must not be empty")
                }
                Err(outcome) => return outcome,
            };
            let found: Vec<String> = pad
                .entries
                .iter()
                .filter(|entry| {
                    entry.key.to_lowercase().contains(&query)
                        || entry.value.to_lowercase().contains(&query)
                        || entry
                            .tags
                            .as_deref()
                            .is_some_and(|tags| tags.to_lowercase().contains(&query))
                })
                .map(render)
                .collect();
            if found.is_empty() {
                return Outcome::ok(format!(
                    "[NO RESULTS] no entry of the {scope} scratchpad matches `{query}`"
                ));
            }
            Outcome::ok(format!(
                "=== {} match(es) for `{query}` ({scope}: {owner}) ===\n\n{}",
                found.len(),
                found.join("\n\n")
            ))
        }
        Tool::ScratchpadDelete => {
            let key = match key_arg(args, tool) {
                Ok(key) => key,
                Err(outcome) => return outcome,
            };
            match pad.position(key) {
                Some(at) => {
                    pad.entries.remove(at);
                    Outcome::ok(format!(
                        "Deleted `{key}` from the scratchpad ({scope} scope)."
                    ))
                }
                None => Outcome::fail(format!(
                    "[NOT FOUND] no entry `{key}` in the {scope} scratchpad"
                )),
            }
        }
        _ => Outcome::error(format!("tool `{}` is not a scratchpad tool", tool.name())),
    }
}
