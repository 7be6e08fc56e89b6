//! Telling an agent how to route: the signals and finish keys open to it in a state, the
//! routing block appended to its instructions, and the `enum` its routing tools carry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use fuseraft_compiler::ir::{Cond, Field, Matcher, Origin, Program, StateId, ToolChoice, Trigger};

use crate::effect::ToolSchema;

/// What a model call carries that depends only on the program, the state and the agent: the
/// system prompt (the agent's instructions and the routing block) and the tools offered.
#[derive(Debug)]
pub(super) struct FixedPrompt {
    pub system: Arc<str>,
    pub tools: Arc<[ToolSchema]>,
    /// The JSON fields the state's structured routes read, for the reply's format.
    pub reply_fields: Arc<[String]>,
}

/// The [`FixedPrompt`]s of a run, each built on its first model call for its (state, agent)
/// and reused by the later ones (the program does not change during a run).
#[derive(Debug, Default)]
pub(super) struct FixedPrompts(Mutex<HashMap<(StateId, String), Arc<FixedPrompt>>>);

impl FixedPrompts {
    /// The prompt of `agent` in `state`, from `build` the first time.
    pub(super) fn get(
        &self,
        state: StateId,
        agent: &str,
        build: impl FnOnce() -> FixedPrompt,
    ) -> Arc<FixedPrompt> {
        // A poisoned lock only means a panic elsewhere; the map itself is always whole.
        let mut map = self.0.lock().unwrap_or_else(|poison| poison.into_inner());
        if let Some(prompt) = map.get(&(state, agent.to_string())) {
            return Arc::clone(prompt);
        }
        let prompt = Arc::new(build());
        map.insert((state, agent.to_string()), Arc::clone(&prompt));
        prompt
    }
}

/// What an agent may emit to leave a state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Choices {
    /// Signals of the state's exits whose `SourceAgents` admit the agent, in exit order.
    pub signals: Vec<String>,
    /// tama finish keys of the state's exits, in exit order.
    pub keys: Vec<String>,
    /// A `"*"` exit: any finish key routes.
    pub any_key: bool,
    /// The state belongs to a tama program: its agent ends a step with `finish`.
    pub tama: bool,
    /// JSON fields the state's structured routes read (no signals).
    pub fields: Vec<String>,
}

/// The choices open to `agent` in `state`.
pub(super) fn choices(program: &Program, state_id: StateId, agent: &str) -> Choices {
    let state = program.state(state_id);
    let mut out = Choices {
        tama: program.origin == Origin::Tama,
        ..Choices::default()
    };
    let has_signals = state
        .exits
        .iter()
        .any(|exit| matches!(exit.trigger, Trigger::Signal { .. }));
    if !has_signals {
        out.fields = json_fields(program, state_id, agent);
    }
    for exit in &state.exits {
        match &exit.trigger {
            Trigger::Signal { text, sources, .. } => {
                let admitted = sources.is_empty()
                    || sources
                        .iter()
                        .any(|id| program.agent(*id).name.eq_ignore_ascii_case(agent));
                if admitted && !out.signals.iter().any(|s| s.eq_ignore_ascii_case(text)) {
                    out.signals.push(text.clone());
                }
            }
            Trigger::FinishKey(key) if !out.keys.contains(key) => out.keys.push(key.clone()),
            Trigger::AnyKey => out.any_key = true,
            _ => {}
        }
    }
    out
}

/// The JSON fields (dot paths) the state's conditions read, for exits `agent` may take.
pub(super) fn json_fields(program: &Program, state: StateId, agent: &str) -> Vec<String> {
    fn walk(cond: &Cond, out: &mut Vec<String>) {
        match cond {
            Cond::Eq(field, _)
            | Cond::Ne(field, _)
            | Cond::Contains(field, _)
            | Cond::Exists(field) => {
                if let Field::Json(path) = field {
                    let path = path.join(".");
                    if !out.contains(&path) {
                        out.push(path);
                    }
                }
            }
            Cond::Not(inner) => walk(inner, out),
            Cond::And(items) | Cond::Or(items) => items.iter().for_each(|item| walk(item, out)),
        }
    }
    let mut out = Vec::new();
    for exit in &program.state(state).exits {
        if let Trigger::Cond { cond, sources } = &exit.trigger {
            let admitted = sources.is_empty()
                || sources
                    .iter()
                    .any(|id| program.agent(*id).name.eq_ignore_ascii_case(agent));
            if admitted {
                walk(cond, &mut out);
            }
        }
    }
    out
}

/// Does the state route by signals at all (whoever may send them)?
pub(super) fn has_signals(program: &Program, state: StateId) -> bool {
    program
        .state(state)
        .exits
        .iter()
        .any(|exit| matches!(exit.trigger, Trigger::Signal { .. }))
}

/// Signals of the program that `agent` may not send in `state` (another role's, or another
/// state's) and that `text` or `handoff` carries: a reply that says one of them used a
/// keyword that is not its own.
pub(super) fn foreign_signals(
    program: &Program,
    state: StateId,
    agent: &str,
    text: &str,
    handoff: Option<&str>,
) -> Vec<String> {
    let own = choices(program, state, agent).signals;
    let mut others: Vec<(&str, Matcher)> = Vec::new();
    for other in &program.states {
        for exit in &other.exits {
            if let Trigger::Signal { text, matcher, .. } = &exit.trigger {
                let known = own.iter().any(|s| s.eq_ignore_ascii_case(text))
                    || others.iter().any(|(s, _)| s.eq_ignore_ascii_case(text));
                if !known {
                    others.push((text.as_str(), *matcher));
                }
            }
        }
    }
    let found = Matcher::find_all(text, &others);
    others
        .iter()
        .zip(found)
        .filter(|((signal, _), hit)| {
            *hit || handoff.is_some_and(|h| h.trim().eq_ignore_ascii_case(signal))
        })
        .map(|((signal, _), _)| signal.to_string())
        .collect()
}

/// The routing block a model call carries after the agent's instructions; `None` when the
/// state offers this agent nothing to emit.
pub(super) fn block(choices: &Choices, tool_choice: ToolChoice) -> Option<String> {
    let tools = tool_choice != ToolChoice::None;
    if !choices.signals.is_empty() {
        let mut text = String::from(
            "## Routing\nWhen your part of the work is done, end your reply with exactly one of these signals, alone on its own line:\n",
        );
        for signal in &choices.signals {
            text.push_str(signal);
            text.push('\n');
        }
        if tools {
            text.push_str("Or call the `handoff` tool with `route_keyword` set to one of them.\n");
        }
        text.push_str("Send one signal per reply, and only one of these.");
        return Some(text);
    }
    if !choices.fields.is_empty() {
        let listed: Vec<String> = choices.fields.iter().map(|f| format!("`{f}`")).collect();
        return Some(format!(
            "## Routing\nEnd your reply with a JSON object with the fields {}: their values choose who works next.",
            listed.join(", ")
        ));
    }
    if tools && (!choices.keys.is_empty() || choices.any_key || choices.tama) {
        let keys = if choices.keys.is_empty() {
            "the outcome of your step".to_string()
        } else {
            let listed: Vec<String> = choices.keys.iter().map(|k| format!("`{k}`")).collect();
            let any = if choices.any_key {
                " (any other key takes the default route)"
            } else {
                ""
            };
            format!("one of {}{any}", listed.join(", "))
        };
        // A reply without `finish` is key `done`: say so where `done` does not route.
        let implicit = if choices.any_key
            || choices.keys.is_empty()
            || choices
                .keys
                .iter()
                .any(|key| key.eq_ignore_ascii_case("done"))
        {
            ""
        } else {
            " A reply without a `finish` call counts as key `done`, which this step does not route: always call `finish`."
        };
        return Some(format!(
            "## Finishing\nTo end this step, call the `finish` tool with `key` set to {keys}, and `value` set to the result handed to the next step.{implicit}"
        ));
    }
    None
}

/// `handoff` and `finish` limited to what this agent may emit here (an `enum`); a `handoff`
/// with nothing to name is not offered.
pub(super) fn restrict(tools: Vec<ToolSchema>, choices: &Choices) -> Vec<ToolSchema> {
    tools
        .into_iter()
        .filter_map(|tool| {
            let name = tool.name.to_ascii_lowercase();
            if name == "handoff" {
                if choices.signals.is_empty() {
                    return None;
                }
                return Some(crate::tools::with_choices(tool, &choices.signals));
            }
            if name == "finish" && !choices.any_key {
                return Some(crate::tools::with_choices(tool, &choices.keys));
            }
            Some(tool)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_names_the_signals_and_the_tool() {
        let choices = Choices {
            signals: vec!["APPROVED".into(), "REVISE".into()],
            ..Choices::default()
        };
        let text = block(&choices, ToolChoice::Auto).unwrap();
        assert!(text.contains("\nAPPROVED\nREVISE\n"), "{text}");
        assert!(text.contains("`handoff`"), "{text}");
        let text = block(&choices, ToolChoice::None).unwrap();
        assert!(!text.contains("handoff"), "{text}");
        assert_eq!(block(&Choices::default(), ToolChoice::Auto), None);
        let tama = Choices {
            keys: vec!["approved".into()],
            tama: true,
            ..Choices::default()
        };
        let text = block(&tama, ToolChoice::Auto).unwrap();
        assert!(
            text.contains("`finish`") && text.contains("`approved`"),
            "{text}"
        );
    }

    #[test]
    fn a_fixed_prompt_is_built_once_per_state_and_agent() {
        let prompts = FixedPrompts::default();
        let built = std::cell::Cell::new(0);
        let get = |state: u32, agent: &str| {
            prompts.get(StateId(state), agent, || {
                built.set(built.get() + 1);
                FixedPrompt {
                    system: format!("{agent} in {state}").into(),
                    tools: Vec::new().into(),
                    reply_fields: Default::default(),
                }
            })
        };
        assert_eq!(&*get(0, "Dev").system, "Dev in 0");
        assert_eq!(&*get(0, "Dev").system, "Dev in 0");
        assert_eq!(built.get(), 1, "the second call reuses the first build");
        assert_eq!(&*get(0, "Reviewer").system, "Reviewer in 0");
        assert_eq!(&*get(1, "Dev").system, "Dev in 1");
        assert_eq!(built.get(), 3, "another agent or state is built for itself");
    }

    #[test]
    fn handoff_is_enumerated_or_withheld() {
        let tools = crate::tools::schemas(&["Handoff".to_string(), "Finish".to_string()]);
        let choices = Choices {
            signals: vec!["GO".into()],
            keys: vec!["done".into()],
            ..Choices::default()
        };
        let restricted = restrict(tools.clone(), &choices);
        assert_eq!(
            restricted[0].parameters["properties"]["route_keyword"]["enum"],
            serde_json::json!(["GO"])
        );
        assert_eq!(
            restricted[1].parameters["properties"]["key"]["enum"],
            serde_json::json!(["done"])
        );
        let none = restrict(tools, &Choices::default());
        assert_eq!(none.len(), 1);
        assert_eq!(none[0].name, "finish");
    }
}
