//! The `replay` model provider: answers model calls from a script instead of a network.
//!
//! The script is the replay file of `docs/replay-format.md` (per-agent queues consumed in order,
//! `times`, a `"*"` fallback queue, `on_exhausted: error | repeat-last`), given here as JSON;
//! the CLI reads YAML or JSON files into that JSON. Tools named in a reply run for real.

use std::sync::Mutex;

use serde_json::Value as Json;

use crate::effect::{ModelCall, ModelReply};
use crate::history::{ToolCall, Usage};
use crate::models::{Cost, Models, ProviderState};

mod typed;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OnExhausted {
    Error,
    RepeatLast,
}

impl OnExhausted {
    /// The policy an `on_exhausted` string names.
    fn named(text: &str) -> Result<OnExhausted, String> {
        match text {
            "error" => Ok(OnExhausted::Error),
            "repeat-last" | "repeat_last" => Ok(OnExhausted::RepeatLast),
            other => Err(format!(
                "`on_exhausted` must be `error` or `repeat-last`, found `{other}`"
            )),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ScriptReply {
    pub text: String,
    pub tool_calls: Vec<(String, Json)>,
    /// How many consecutive calls this reply answers.
    pub times: u32,
    pub usage: Usage,
    /// How long the reply takes to arrive (`delay_ms`): a slow model, for tests of what
    /// happens while a call is under way.
    pub delay: std::time::Duration,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    /// Queues by agent name, in file order (`*` is the fallback queue).
    pub queues: Vec<(String, Vec<ScriptReply>)>,
    pub on_exhausted: OnExhausted,
}

fn number(value: &Json) -> Option<u64> {
    value
        .as_u64()
        .or_else(|| value.as_str().and_then(|text| text.trim().parse().ok()))
}

fn parse_reply(agent: &str, idx: usize, value: Json) -> Result<ScriptReply, String> {
    let mut object = match value {
        Json::String(text) => return Ok(ScriptReply::text(text)),
        Json::Object(object) => object,
        _ => {
            return Err(format!(
                "replies.{agent}[{idx}] must be a mapping with `text` and/or `tool_calls`"
            ))
        }
    };
    for key in object.keys() {
        if !REPLY_KEYS.contains(&key.as_str()) {
            return Err(format!(
                "replies.{agent}[{idx}] has an unknown key `{key}` (expected text, tool_calls, times, usage, delay_ms)"
            ));
        }
    }
    reply_of(
        agent,
        idx,
        ReplyFields {
            text: object.remove("text"),
            tool_calls: object.remove("tool_calls"),
            times: object.remove("times"),
            usage: object.remove("usage"),
            delay_ms: object.remove("delay_ms"),
        },
    )
}

/// The keys a reply given as a mapping may have.
const REPLY_KEYS: [&str; 5] = ["text", "tool_calls", "times", "usage", "delay_ms"];

/// The values of a reply given as a mapping, by key (`None`: the key is absent).
#[derive(Default)]
struct ReplyFields {
    text: Option<Json>,
    tool_calls: Option<Json>,
    times: Option<Json>,
    usage: Option<Json>,
    delay_ms: Option<Json>,
}

/// The longest `delay_ms` a reply may have: ten minutes.
const LONGEST_DELAY_MS: u64 = 600_000;

impl ScriptReply {
    /// A reply of only `text`, answering one call.
    fn text(text: String) -> ScriptReply {
        ScriptReply {
            text,
            tool_calls: Vec::new(),
            times: 1,
            usage: Usage::default(),
            delay: std::time::Duration::ZERO,
        }
    }
}

/// Reply `idx` of `agent`'s queue from its fields: what both readers of a replay file
/// ([`Script::from_json`] and [`Script::from_json_text`]) make of a reply mapping.
fn reply_of(agent: &str, idx: usize, fields: ReplyFields) -> Result<ScriptReply, String> {
    let at = || format!("replies.{agent}[{idx}]");
    let text = match fields.text {
        None | Some(Json::Null) => String::new(),
        Some(Json::String(text)) => text,
        Some(other) => other.to_string(),
    };
    let mut tool_calls = Vec::new();
    match fields.tool_calls {
        None | Some(Json::Null) => {}
        Some(Json::Array(calls)) => {
            for (call_idx, mut call) in calls.into_iter().enumerate() {
                let name = match call.get_mut("name").map(Json::take) {
                    Some(Json::String(name)) => name,
                    _ => return Err(format!("{}.tool_calls[{call_idx}] needs a `name`", at())),
                };
                let args = match call.get_mut("args").map(Json::take) {
                    None | Some(Json::Null) => Json::Object(Default::default()),
                    Some(args) if args.is_object() => args,
                    Some(_) => {
                        return Err(format!(
                            "{}.tool_calls[{call_idx}].args must be a mapping",
                            at()
                        ))
                    }
                };
                tool_calls.push((name, args));
            }
        }
        Some(_) => return Err(format!("{}.tool_calls must be a list", at())),
    }
    let times = match &fields.times {
        None | Some(Json::Null) => 1,
        Some(value) => match number(value) {
            Some(times) if times >= 1 && times <= u32::MAX as u64 => times as u32,
            _ => {
                return Err(format!(
                    "{}.times must be a whole number of at least 1",
                    at()
                ))
            }
        },
    };
    let usage = match &fields.usage {
        None | Some(Json::Null) => Usage::default(),
        Some(usage) => Usage {
            input_tokens: usage.get("input_tokens").and_then(number).unwrap_or(0),
            output_tokens: usage.get("output_tokens").and_then(number).unwrap_or(0),
            cache_read_tokens: usage.get("cache_read_tokens").and_then(number).unwrap_or(0),
            cache_write_tokens: usage
                .get("cache_write_tokens")
                .and_then(number)
                .unwrap_or(0),
        },
    };
    let delay_ms = match &fields.delay_ms {
        None | Some(Json::Null) => 0,
        Some(value) => match number(value) {
            Some(ms) if ms <= LONGEST_DELAY_MS => ms,
            _ => {
                return Err(format!(
                "{}.delay_ms must be a whole number of milliseconds, at most {LONGEST_DELAY_MS}",
                at()
            ))
            }
        },
    };
    Ok(ScriptReply {
        text,
        tool_calls,
        times,
        usage,
        delay: std::time::Duration::from_millis(delay_ms),
    })
}

impl Script {
    /// Reads a replay file's content, taken by value so the replies' text is moved, not
    /// copied. Errors name the place in the file.
    pub fn from_json(root: Json) -> Result<Script, String> {
        let Json::Object(mut object) = root else {
            return Err(
                "a replay file is a mapping with `replies` (and optionally `on_exhausted`)".into(),
            );
        };
        for key in object.keys() {
            if key != "replies" && key != "on_exhausted" {
                return Err(format!(
                    "unknown key `{key}` in the replay file (expected `replies`, `on_exhausted`)"
                ));
            }
        }
        let on_exhausted = match object.get("on_exhausted").and_then(Json::as_str) {
            None => OnExhausted::Error,
            Some(text) => OnExhausted::named(text)?,
        };
        let Some(Json::Object(replies)) = object.remove("replies") else {
            return Err(
                "the replay file needs `replies:` mapping agent names to lists of replies".into(),
            );
        };
        let mut queues = Vec::new();
        for (agent, list) in replies {
            let Json::Array(items) = list else {
                return Err(format!("replies.{agent} must be a list of replies"));
            };
            let parsed = items
                .into_iter()
                .enumerate()
                .map(|(idx, item)| parse_reply(&agent, idx, item))
                .collect::<Result<Vec<_>, _>>()?;
            queues.push((agent, parsed));
        }
        Ok(Script {
            queues,
            on_exhausted,
        })
    }
}

/// Serves a script's replies, each queue consumed in order.
pub struct Replay {
    script: Script,
    /// Per queue, in script order: (index of the current reply, times it was served), or
    /// `None` while the queue is untouched; and the replies' texts.
    served: Mutex<Served>,
    /// Queue indices by queue name, the order in which [`Replay::state`] lists them.
    by_name: Vec<usize>,
    next_id: Mutex<u64>,
    /// What the replies cost by their models' `Pricing`.
    spent: Mutex<crate::models::Cost>,
}

/// Where each queue is, and the texts of its replies, moved out of the script: a reply's
/// text moves into the answer that serves it last (`None` after that), so a turn does not
/// copy its reply (issue 17).
struct Served {
    cursors: Vec<Option<(usize, u32)>>,
    texts: Vec<Vec<Option<String>>>,
}

impl Replay {
    pub fn new(mut script: Script) -> Replay {
        let texts = script
            .queues
            .iter_mut()
            .map(|(_, replies)| {
                replies
                    .iter_mut()
                    .map(|reply| Some(std::mem::take(&mut reply.text)))
                    .collect()
            })
            .collect();
        let served = Served {
            cursors: vec![None; script.queues.len()],
            texts,
        };
        let mut by_name: Vec<usize> = (0..script.queues.len()).collect();
        by_name.sort_by(|a, b| script.queues[*a].0.cmp(&script.queues[*b].0));
        Replay {
            script,
            served: Mutex::new(served),
            by_name,
            next_id: Mutex::new(0),
            spent: Mutex::new(crate::models::Cost::default()),
        }
    }

    /// What the replies so far cost by their models' `Pricing`.
    pub fn cost(&self) -> crate::models::Cost {
        self.spent.lock().map(|spent| *spent).unwrap_or_default()
    }

    /// The queue that answers `agent`: its exact name, else its name in any case, else `*`.
    /// The queue answering `agent`: its own, else the `"*"` queue, except for compaction
    /// calls, which only their own `compaction` queue answers (a compaction never takes a
    /// reply meant for an agent, so a run routes the same with and without compaction).
    fn queue(&self, agent: &str) -> Option<usize> {
        let queues = &self.script.queues;
        queues
            .iter()
            .position(|(name, _)| name == agent)
            .or_else(|| {
                queues
                    .iter()
                    .position(|(name, _)| name.eq_ignore_ascii_case(agent))
            })
            .or_else(|| {
                (agent != crate::machine::COMPACTION_AGENT)
                    .then(|| queues.iter().position(|(name, _)| name == "*"))
                    .flatten()
            })
    }

    /// The provider's position (per-queue cursors and the next tool-call id), for checkpoints.
    pub fn state(&self) -> Json {
        self.checkpoint_state().to_json()
    }

    /// [`Replay::state`] as a checkpoint writes it: the cursors of the queues that served a
    /// reply, in name order.
    pub fn checkpoint_state(&self) -> ProviderState<'_> {
        let cursors = self
            .served
            .lock()
            .map(|served| {
                self.by_name
                    .iter()
                    .filter_map(|&queue| {
                        let (idx, times) = served.cursors[queue]?;
                        Some((self.script.queues[queue].0.as_str(), idx, times))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let next_id = self.next_id.lock().map(|id| *id).unwrap_or(0);
        ProviderState::Cursors { cursors, next_id }
    }

    /// Moves the provider to a position saved by [`Replay::state`], before it serves a
    /// reply (a reply's text is let go once served for the last time). Queues the script no
    /// longer has are ignored.
    pub fn restore(&self, state: &Json) {
        if let (Ok(mut served), Some(saved)) = (
            self.served.lock(),
            state.get("cursors").and_then(Json::as_object),
        ) {
            served.cursors.iter_mut().for_each(|cursor| *cursor = None);
            for (name, pair) in saved {
                let idx = pair.get(0).and_then(Json::as_u64).unwrap_or(0) as usize;
                let times = pair.get(1).and_then(Json::as_u64).unwrap_or(0) as u32;
                if let Some(queue) = self.script.queues.iter().position(|(n, _)| n == name) {
                    served.cursors[queue] = Some((idx, times));
                }
            }
        }
        if let (Ok(mut next_id), Some(saved)) = (
            self.next_id.lock(),
            state.get("next_id").and_then(Json::as_u64),
        ) {
            *next_id = saved;
        }
    }

    /// [`Replay::state`] as if, since `base` (an earlier state), only `agents` had been
    /// asked: their queues' cursors are the current ones, every other queue's is `base`'s.
    /// The id counter is the current one (ids only need to be new).
    pub fn state_keeping(&self, base: &Json, agents: &[String]) -> Json {
        let mut state = self.state();
        let kept: Vec<&str> = agents
            .iter()
            .filter_map(|agent| self.queue(agent))
            .map(|queue| self.script.queues[queue].0.as_str())
            .collect();
        let mut cursors = base
            .get("cursors")
            .and_then(Json::as_object)
            .cloned()
            .unwrap_or_default();
        cursors.retain(|name, _| !kept.contains(&name.as_str()));
        if let Some(current) = state.get("cursors").and_then(Json::as_object) {
            for (name, cursor) in current {
                if kept.contains(&name.as_str()) {
                    cursors.insert(name.clone(), cursor.clone());
                }
            }
        }
        state["cursors"] = Json::Object(cursors);
        state
    }

    /// The next reply for this call's agent.
    pub fn next(&self, call: &ModelCall) -> Result<ModelReply, String> {
        self.next_after(call).map(|(reply, _)| reply)
    }

    /// The next reply for this call's agent, and how long it takes to arrive.
    fn next_after(&self, call: &ModelCall) -> Result<(ModelReply, std::time::Duration), String> {
        let Some(queue) = self.queue(&call.agent.queue()) else {
            if call.agent == crate::effect::Caller::Compaction {
                return Err(format!(
                    "replay: the config's `Compaction` asks for a summary before turn {} and the replay file has no `compaction` queue",
                    call.turn
                ));
            }
            return Err(format!(
                "replay: no replies for agent `{}` (turn {}) and no `\"*\"` queue",
                call.agent, call.turn
            ));
        };
        let (name, replies) = &self.script.queues[queue];
        let mut served = self
            .served
            .lock()
            .map_err(|_| "replay: cursor lock poisoned".to_string())?;
        let Served { cursors, texts } = &mut *served;
        let texts = &mut texts[queue];
        let cursor = cursors[queue].get_or_insert((0, 0));
        let repeat_last = self.script.on_exhausted == OnExhausted::RepeatLast;
        let (reply, text) = match replies.get(cursor.0) {
            Some(reply) => {
                let idx = cursor.0;
                cursor.1 += 1;
                // Served for the last time: the text moves into the answer, unless an
                // exhausted queue repeats it.
                let last_time = cursor.1 >= reply.times;
                if last_time {
                    *cursor = (cursor.0 + 1, 0);
                }
                let keep = !last_time || (repeat_last && idx + 1 == replies.len());
                let text = match keep {
                    true => texts[idx].clone(),
                    false => texts[idx].take(),
                };
                (reply, text)
            }
            None => match (repeat_last, replies.last()) {
                (true, Some(last)) => (last, texts.last().cloned().flatten()),
                _ => {
                    return Err(format!(
                        "replay: the replies for agent `{}` ran out at turn {} (queue `{name}` has {} replies; set `on_exhausted: repeat-last` to reuse the last)",
                        call.agent,
                        call.turn,
                        replies.len()
                    ))
                }
            },
        };
        drop(served);
        // A reply is served once more only after `restore` took its queue back.
        let Some(text) = text else {
            return Err(format!(
                "replay: a reply of queue `{name}` was served again after its last time (turn {})",
                call.turn
            ));
        };
        let mut next_id = self
            .next_id
            .lock()
            .map_err(|_| "replay: id lock poisoned".to_string())?;
        let tool_calls = reply
            .tool_calls
            .iter()
            .map(|(name, args)| {
                *next_id += 1;
                ToolCall {
                    id: format!("call_{}", *next_id),
                    name: name.clone(),
                    args: args.clone(),
                    result: None,
                    ok: false,
                    denied: None,
                }
            })
            .collect();
        // Priced as a provider would: by the model's `Pricing`, when the reply has usage.
        let cost = call
            .model
            .as_ref()
            .and_then(|model| model.pricing)
            .filter(|_| reply.usage != Usage::default())
            .map(|pricing| pricing.cost(reply.usage.input_tokens, 0, reply.usage.output_tokens));
        if let Ok(mut spent) = self.spent.lock() {
            spent.add(cost);
        }
        let answer = ModelReply {
            text,
            tool_calls,
            usage: reply.usage,
            cost,
        };
        Ok((answer, reply.delay))
    }
}

impl Models for Replay {
    async fn call(&self, call: &ModelCall) -> Result<ModelReply, String> {
        let (reply, delay) = self.next_after(call)?;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Ok(reply)
    }

    fn reads_prompts(&self) -> bool {
        false
    }

    fn replayed(&self) -> bool {
        true
    }

    fn state(&self) -> serde_json::Value {
        Replay::state(self)
    }

    fn checkpoint_state(&self) -> ProviderState<'_> {
        Replay::checkpoint_state(self)
    }

    fn restore(&self, state: &serde_json::Value) {
        Replay::restore(self, state)
    }

    fn state_keeping(&self, base: &serde_json::Value, agents: &[String]) -> serde_json::Value {
        Replay::state_keeping(self, base, agents)
    }

    fn cost(&self) -> Cost {
        Replay::cost(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(agent: &str, turn: u32) -> ModelCall {
        ModelCall {
            agent: crate::effect::Caller::from_queue(agent),
            model: None,
            messages: Vec::new(),
            tools: Vec::new().into(),
            turn,
            reply_fields: Default::default(),
        }
    }

    #[test]
    fn compaction_calls_take_only_their_own_queue() {
        let script = Script::from_json(json!({ "replies": { "*": ["any"] } })).unwrap();
        let replay = Replay::new(script);
        let error = replay.next(&call("compaction", 20)).unwrap_err();
        assert!(error.contains("no `compaction` queue"), "{error}");
        // The fallback queue's reply is still there for the agent it was meant for.
        assert_eq!(replay.next(&call("Planner", 20)).unwrap().text, "any");
        let script = Script::from_json(json!({
            "replies": { "*": ["any"], "compaction": ["Summary."] }
        }))
        .unwrap();
        assert_eq!(
            Replay::new(script)
                .next(&call("compaction", 20))
                .unwrap()
                .text,
            "Summary."
        );
    }

    #[test]
    fn a_reply_with_a_delay_arrives_no_sooner() {
        let script = Script::from_json(json!({
            "replies": { "A": [{"text": "slow", "delay_ms": 120}, "quick"] }
        }))
        .unwrap();
        let replay = Replay::new(script);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let asked = std::time::Instant::now();
        let reply = runtime
            .block_on(Models::call(&replay, &call("A", 0)))
            .unwrap();
        assert_eq!(reply.text, "slow");
        assert!(asked.elapsed() >= std::time::Duration::from_millis(120));
        let reply = runtime
            .block_on(Models::call(&replay, &call("A", 1)))
            .unwrap();
        assert_eq!(reply.text, "quick");
        let error =
            Script::from_json(json!({ "replies": { "A": [{"delay_ms": "soon"}] } })).unwrap_err();
        assert_eq!(
            error,
            "replies.A[0].delay_ms must be a whole number of milliseconds, at most 600000"
        );
    }

    #[test]
    fn queues_times_fallback_and_exhaustion() {
        let script = Script::from_json(json!({
            "replies": {
                "Planner": [{"text": "a", "times": 2}, "b"],
                "*": [{"text": "any"}],
            }
        }))
        .unwrap();
        let replay = Replay::new(script);
        let texts: Vec<String> = (0..3)
            .map(|turn| replay.next(&call("Planner", turn)).unwrap().text)
            .collect();
        assert_eq!(texts, ["a", "a", "b"]);
        let error = replay.next(&call("Planner", 3)).unwrap_err();
        assert!(error.contains("`Planner` ran out at turn 3"), "{error}");
        assert_eq!(replay.next(&call("Other", 0)).unwrap().text, "any");
    }

    #[test]
    fn texts_move_out_only_when_served_for_the_last_time() {
        let script = Script::from_json(json!({
            "on_exhausted": "repeat-last",
            "replies": { "A": [{"text": "a", "times": 2}, "b", {"text": "c", "times": 2}] }
        }))
        .unwrap();
        let replay = Replay::new(script);
        // Resumed after the first `a`: the restored cursor serves the second.
        replay.restore(&json!({"cursors": {"A": [0, 1]}, "next_id": 0}));
        let texts: Vec<String> = (0..6)
            .map(|turn| replay.next(&call("A", turn)).unwrap().text)
            .collect();
        assert_eq!(texts, ["a", "b", "c", "c", "c", "c"]);
        // Taken back past a reply already let go: an error, never another text.
        replay.restore(&json!({"cursors": {"A": [1, 0]}, "next_id": 0}));
        let error = replay.next(&call("A", 6)).unwrap_err();
        assert!(error.contains("served again"), "{error}");
    }

    #[test]
    fn repeat_last_and_bad_files() {
        let script =
            Script::from_json(json!({"on_exhausted": "repeat-last", "replies": {"A": ["x"]}}))
                .unwrap();
        let replay = Replay::new(script);
        assert_eq!(replay.next(&call("A", 0)).unwrap().text, "x");
        assert_eq!(replay.next(&call("a", 1)).unwrap().text, "x");
        for bad in [
            json!([]),
            json!({"replies": {"A": "x"}}),
            json!({"replies": {"A": [{"txt": "x"}]}}),
            json!({"replies": {"A": [{"times": 0}]}}),
            json!({"replies": {"A": [{"tool_calls": [{"args": {}}]}]}}),
            json!({"on_exhausted": "loop", "replies": {}}),
        ] {
            assert!(Script::from_json(bad.clone()).is_err(), "{bad}");
        }
    }
}
