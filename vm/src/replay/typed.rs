//! Reading a JSON replay file straight into a [`Script`], without first building a
//! `serde_json::Value` of the whole file (issue 17: a replay of 10,000 turns is 20 MB of
//! reply mappings). Only a file [`Script::from_json`] would accept is read this way; for any
//! other this reader gives up, and the caller reads the file the slow way for its error.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value as Json;

use super::{reply_of, OnExhausted, ReplyFields, Script, ScriptReply, REPLY_KEYS};

/// The keys of a replay file's root mapping.
const ROOT_KEYS: [&str; 2] = ["replies", "on_exhausted"];

impl Script {
    /// The script in `text` (a replay file's JSON) when the file is well-formed, nests at
    /// most `max_depth` levels (the root mapping is level 1) and is one that
    /// [`Script::from_json`] accepts, which then makes the same script of it; `None` for
    /// every other file (malformed, too deep, or refused), and for a key given twice.
    pub fn from_json_text(text: &str, max_depth: usize) -> Option<Script> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let (script, depth) = Root.deserialize(&mut deserializer).ok()?;
        deserializer.end().ok()?;
        (depth <= max_depth).then_some(script)
    }
}

/// How deeply lists and mappings nest in `value` (a scalar is 0), as the replay file's
/// depth limit counts.
fn depth(value: &Json) -> usize {
    match value {
        Json::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Json::Object(entries) => 1 + entries.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn twice<E: de::Error>(key: &str) -> E {
    E::custom(format_args!("`{key}` is given twice"))
}

/// A mapping key that must be one of `0`, read as its index there.
struct KeyIn(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeyIn {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIn {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "one of {:?}", self.0)
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<usize, E> {
        self.0
            .iter()
            .position(|known| *known == key)
            .ok_or_else(|| E::unknown_field(key, self.0))
    }
}

/// The root mapping: the script and how deeply the file nests.
struct Root;

impl<'de> DeserializeSeed<'de> for Root {
    type Value = (Script, usize);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Root {
    type Value = (Script, usize);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a replay file mapping")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut replies = None;
        let mut on_exhausted = None;
        while let Some(key) = map.next_key_seed(KeyIn(&ROOT_KEYS))? {
            if key == 0 {
                if replies.is_some() {
                    return Err(twice(ROOT_KEYS[0]));
                }
                replies = Some(map.next_value_seed(Queues)?);
            } else {
                if on_exhausted.is_some() {
                    return Err(twice(ROOT_KEYS[1]));
                }
                let name: &str = map.next_value_seed(Policy)?;
                on_exhausted = Some(name);
            }
        }
        let (queues, replies_depth) =
            replies.ok_or_else(|| de::Error::missing_field(ROOT_KEYS[0]))?;
        let on_exhausted = match on_exhausted {
            None => OnExhausted::Error,
            Some(name) => OnExhausted::named(name).map_err(de::Error::custom)?,
        };
        let script = Script {
            queues,
            on_exhausted,
        };
        Ok((script, 1 + replies_depth))
    }
}

/// `on_exhausted`: a string (one [`OnExhausted::named`] knows).
struct Policy;

impl<'de> DeserializeSeed<'de> for Policy {
    type Value = &'static str;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Policy {
    type Value = &'static str;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`error` or `repeat-last`")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<&'static str, E> {
        ["error", "repeat-last", "repeat_last"]
            .into_iter()
            .find(|known| *known == name)
            .ok_or_else(|| E::custom("unknown `on_exhausted`"))
    }
}

/// `replies`: each agent's queue, in file order, and how deeply the mapping nests.
struct Queues;

type QueueList = Vec<(String, Vec<ScriptReply>)>;

impl<'de> DeserializeSeed<'de> for Queues {
    type Value = (QueueList, usize);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Queues {
    type Value = (QueueList, usize);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping of agent names to lists of replies")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut queues: QueueList = Vec::new();
        let mut deepest = 0;
        while let Some(agent) = map.next_key::<String>()? {
            let (replies, depth) = map.next_value_seed(Queue { agent: &agent })?;
            deepest = deepest.max(depth);
            queues.push((agent, replies));
        }
        // A name given twice is left to `from_json` (its mapping keeps the last list).
        let mut names: Vec<&str> = queues.iter().map(|(name, _)| name.as_str()).collect();
        names.sort_unstable();
        if let Some(pair) = names.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(twice(pair[0]));
        }
        Ok((queues, 1 + deepest))
    }
}

/// One agent's list of replies, and how deeply it nests.
struct Queue<'a> {
    agent: &'a str,
}

impl<'de> DeserializeSeed<'de> for Queue<'_> {
    type Value = (Vec<ScriptReply>, usize);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Queue<'_> {
    type Value = (Vec<ScriptReply>, usize);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of replies for `{}`", self.agent)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut replies = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let mut deepest = 0;
        while let Some((reply, depth)) = seq.next_element_seed(Reply {
            agent: self.agent,
            idx: replies.len(),
        })? {
            deepest = deepest.max(depth);
            replies.push(reply);
        }
        Ok((replies, 1 + deepest))
    }
}

/// One reply: a string (its text) or a mapping of [`REPLY_KEYS`]; and how deeply it nests.
struct Reply<'a> {
    agent: &'a str,
    idx: usize,
}

impl<'de> DeserializeSeed<'de> for Reply<'_> {
    type Value = (ScriptReply, usize);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Reply<'_> {
    type Value = (ScriptReply, usize);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a reply: its text, or a mapping with `text` and/or `tool_calls`")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok((ScriptReply::text(text.to_string()), 0))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok((ScriptReply::text(text), 0))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = ReplyFields::default();
        while let Some(key) = map.next_key_seed(KeyIn(&REPLY_KEYS))? {
            let slot = match key {
                0 => &mut fields.text,
                1 => &mut fields.tool_calls,
                2 => &mut fields.times,
                3 => &mut fields.usage,
                _ => &mut fields.delay_ms,
            };
            if slot.is_some() {
                return Err(twice(REPLY_KEYS[key]));
            }
            *slot = Some(map.next_value::<Json>()?);
        }
        let deepest = [
            &fields.text,
            &fields.tool_calls,
            &fields.times,
            &fields.usage,
            &fields.delay_ms,
        ]
        .into_iter()
        .flatten()
        .map(depth)
        .max()
        .unwrap_or(0);
        let reply = reply_of(self.agent, self.idx, fields).map_err(de::Error::custom)?;
        Ok((reply, 1 + deepest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What `from_json` makes of `text`, or `None` where it refuses (or the text is not JSON).
    fn by_value(text: &str) -> Option<Script> {
        let value: Json = serde_json::from_str(text).ok()?;
        Script::from_json(value).ok()
    }

    #[test]
    fn accepts_what_from_json_accepts_and_makes_the_same_script() {
        let files = [
            json!({"replies": {}}),
            json!({"replies": {"A": []}}),
            json!({"on_exhausted": "repeat-last", "replies": {"A": ["x"], "*": ["y"]}}),
            json!({"replies": {"A": ["x"]}, "on_exhausted": "repeat_last"}),
            json!({"on_exhausted": "error", "replies": {"B": ["b"], "A": ["a\n\"q\"\u{e9}"]}}),
            json!({"replies": {"A": [{"text": "a", "times": 2}, {"text": null}, {}]}}),
            json!({"replies": {"A": [{"text": 5}, {"text": {"k": [1, 2]}}, {"text": true}]}}),
            json!({"replies": {"A": [{"times": "3"}, {"times": null}, {"times": " 7 "}]}}),
            json!({"replies": {"A": [{"usage": {"input_tokens": 10, "output_tokens": "4"}}]}}),
            json!({"replies": {"A": [{"usage": 3}, {"usage": null}]}}),
            json!({"replies": {"A": [{"delay_ms": 250}, {"delay_ms": "5", "text": "t"}]}}),
            json!({"replies": {"A": [{"tool_calls": null}, {"tool_calls": []}]}}),
            json!({"replies": {"A": [{"tool_calls": [
                {"name": "write_file", "args": {"path": "a", "content": "b"}},
                {"name": "t", "args": null, "other": 1},
                {"name": "u"}
            ], "text": "t"}]}}),
        ];
        for file in files {
            let text = file.to_string();
            let expected = by_value(&text);
            assert!(expected.is_some(), "{text}");
            assert_eq!(Script::from_json_text(&text, 64), expected, "{text}");
            let pretty = serde_json::to_string_pretty(&file).unwrap();
            assert_eq!(Script::from_json_text(&pretty, 64), expected, "{pretty}");
        }
    }

    #[test]
    fn leaves_every_other_file_to_from_json() {
        for text in [
            "",
            "[]",
            "{}",
            "null",
            "{\"replies\": {\"A\": \"x\"}}",
            "{\"replies\": {\"A\": [{\"txt\": \"x\"}]}}",
            "{\"replies\": {\"A\": [{\"times\": 0}]}}",
            "{\"replies\": {\"A\": [{\"times\": 1.5}]}}",
            "{\"replies\": {\"A\": [{\"delay_ms\": -1}]}}",
            "{\"replies\": {\"A\": [{\"delay_ms\": 600001}]}}",
            "{\"replies\": {\"A\": [{\"tool_calls\": [{\"args\": {}}]}]}}",
            "{\"replies\": {\"A\": [{\"tool_calls\": [{\"name\": \"t\", \"args\": 1}]}]}}",
            "{\"replies\": {\"A\": [{\"tool_calls\": {}}]}}",
            "{\"replies\": {\"A\": [null]}}",
            "{\"replies\": {\"A\": [1]}}",
            "{\"on_exhausted\": \"loop\", \"replies\": {}}",
            "{\"replies\": {}, \"extra\": 1}",
            "{\"replies\": {\"A\": [\"x\"]}} trailing",
            "{\"replies\": {\"A\": [\"x\"]}",
            "{\"replies\": {\"A\": [\"x\\q\"]}}",
        ] {
            assert_eq!(Script::from_json_text(text, 64), None, "{text}");
            assert_eq!(by_value(text), None, "{text}");
        }
        // Accepted by `from_json`, which decides what they mean: a key given twice (the
        // mapping keeps the last value), and an `on_exhausted` that is not a string.
        for text in [
            "{\"replies\": {\"A\": [\"x\"], \"A\": [\"y\"]}}",
            "{\"replies\": {}, \"replies\": {\"A\": [\"y\"]}}",
            "{\"replies\": {\"A\": [{\"text\": \"x\", \"text\": \"y\"}]}}",
            "{\"on_exhausted\": null, \"replies\": {}}",
        ] {
            assert_eq!(Script::from_json_text(text, 64), None, "{text}");
            assert!(by_value(text).is_some(), "{text}");
        }
    }

    #[test]
    fn counts_depth_as_the_whole_file_nests() {
        // Root, replies, queue, reply, tool_calls, call: six levels before the arguments.
        let nested = |levels: usize| {
            let args = "{\"a\": ".repeat(levels) + "1" + &"}".repeat(levels);
            format!(
                "{{\"replies\": {{\"A\": [{{\"tool_calls\": [{{\"name\": \"t\", \"args\": {args}}}]}}]}}}}"
            )
        };
        for levels in [1, 2, 10, 58] {
            let text = nested(levels);
            let value: Json = serde_json::from_str(&text).unwrap();
            let whole = depth(&value);
            assert_eq!(whole, 6 + levels);
            assert!(Script::from_json_text(&text, whole).is_some(), "{levels}");
            assert!(
                Script::from_json_text(&text, whole - 1).is_none(),
                "{levels}"
            );
        }
        assert!(Script::from_json_text("{\"replies\": {}}", 2).is_some());
        assert!(Script::from_json_text("{\"replies\": {}}", 1).is_none());
        assert!(Script::from_json_text("{\"replies\": {\"A\": [\"x\"]}}", 3).is_some());
        assert!(Script::from_json_text("{\"replies\": {\"A\": [{}]}}", 3).is_none());
    }
}
