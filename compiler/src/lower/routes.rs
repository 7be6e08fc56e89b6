//! Lowering `keyword` and `structured` selection: one state per agent, the global route
//! list filtered per state by `SourceAgents`, and routing conditions in both forms.

use super::Builder;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{
    Cond, EdgeClass, Exit, Field, Guard, Matcher, NoMatch, StateKind, Target, Trigger,
};
use crate::source::Span;
use crate::syntax::fuseraft::Config;
use crate::syntax::selection::{ConditionDecl, RouteDecl};

/// One `turn` state per agent, named after it, in declaration order.
fn agent_states(builder: &mut Builder<'_>) {
    for idx in 0..builder.program.agents.len() {
        let agent = &builder.program.agents[idx];
        let name = agent.name.clone();
        let loc = agent.loc;
        let id = builder.add_state(
            &name,
            Some(crate::ir::AgentId(idx as u32)),
            StateKind::Turn,
            None,
        );
        builder.state_mut(id).loc = loc;
    }
}

/// `DefaultAgent` (or the first agent): where the run starts.
fn default_state(config: &Config, builder: &mut Builder<'_>) -> crate::ir::StateId {
    let default = config
        .selection
        .default_agent
        .as_ref()
        .and_then(|name| builder.agent_ref(name, "default agent"))
        .and_then(|agent| builder.agent_state(agent));
    default.unwrap_or(crate::ir::StateId(0))
}

pub(super) fn lower_keyword(config: &Config, builder: &mut Builder<'_>) -> Option<()> {
    agent_states(builder);
    let entry = default_state(config, builder);
    builder.program.entry = entry;
    if config.selection.routes.is_empty() {
        builder.diags.push(
            Diagnostic::error(
                Code::MissingRequiredKey,
                "keyword selection has no `Routes`",
            )
            .with_label(config.selection.span, "add `Routes:` under `Selection`"),
        );
    }
    // Resolve every route once; an unresolvable route is reported and skipped.
    let mut resolved = Vec::new();
    for route in &config.selection.routes {
        if let Some(lowered) = lower_route(route, builder) {
            resolved.push(lowered);
        }
    }
    for state_idx in 0..builder.program.states.len() {
        let state_agent = builder.program.states[state_idx].agent;
        let mut exits = Vec::new();
        for (sources, route_exits) in &resolved {
            if sources.is_empty() || state_agent.is_some_and(|agent| sources.contains(&agent)) {
                exits.extend(route_exits.iter().cloned());
            }
        }
        let state = &mut builder.program.states[state_idx];
        state.exits = exits;
        state.no_match = NoMatch::Fallback(entry);
    }
    Some(())
}

/// A keyword route as an exit: `signal(relaxed, SourceAgents)`; a route whose target agent
/// is among its own `SourceAgents` is the terminal self-route convention and ends the run.
fn lower_route(
    route: &RouteDecl,
    builder: &mut Builder<'_>,
) -> Option<(Vec<crate::ir::AgentId>, Vec<Exit>)> {
    let Some(keyword) = &route.keyword else {
        builder.diags.push(
            Diagnostic::error(Code::MissingRequiredKey, "a keyword route has no `Keyword`")
                .with_label(route.span, "add `Keyword:` to this route"),
        );
        return None;
    };
    let Some(agent_name) = &route.agent else {
        builder.diags.push(
            Diagnostic::error(Code::MissingRequiredKey, "a keyword route has no `Agent`")
                .with_label(route.span, "add `Agent:` to this route"),
        );
        return None;
    };
    let target_agent = builder.agent_ref(agent_name, "route target")?;
    let sources = builder.agent_refs(&route.source_agents, "source agent");
    let target = if sources.contains(&target_agent) {
        Target::End
    } else {
        Target::State(builder.agent_state(target_agent)?)
    };
    let mut guards = validator_guards(
        &route.validators,
        &route.required_command_pattern,
        &route.shell_fallback_pattern,
    );
    for name in &route.contracts {
        if let Some(contract) = builder.contract_ref(name) {
            guards.push(Guard::Contract(contract));
        }
    }
    let trigger = Trigger::Signal {
        text: keyword.value.clone(),
        matcher: Matcher::Relaxed,
        sources: sources.clone(),
    };
    // With `PreferStructuredOutput` the condition alone may also select the route.
    let mut structured_only = None;
    if let Some(condition) = &route.condition {
        if let Some(cond) = lower_condition(condition, builder) {
            if route.prefer_structured_output {
                structured_only = Some(cond.clone());
            }
            guards.insert(0, Guard::Cond(cond));
        }
    }
    if route.require_human_approval {
        guards.push(Guard::HumanApproval);
    }
    let recovery = route
        .recovery_agent
        .as_ref()
        .and_then(|name| builder.agent_ref(name, "recovery agent"));
    let loc = builder.loc(route.span);
    let exit = Exit {
        trigger,
        guards,
        effects: Vec::new(),
        target,
        class: EdgeClass::Forward,
        recovery,
        loc,
    };
    let mut exits = vec![exit.clone()];
    if let Some(cond) = structured_only {
        let mut by_condition = exit;
        by_condition.trigger = Trigger::Cond {
            cond,
            sources: sources.clone(),
        };
        by_condition.guards.remove(0);
        exits.push(by_condition);
    }
    Some((sources, exits))
}

/// Validator guards with the route's command patterns as parameters.
pub(super) fn validator_guards(
    names: &[crate::syntax::fields::Spanned<String>],
    required: &Option<crate::syntax::fields::Spanned<String>>,
    fallback: &Option<crate::syntax::fields::Spanned<String>>,
) -> Vec<Guard> {
    names
        .iter()
        .map(|name| {
            let mut params = Vec::new();
            if let Some(pattern) = required {
                params.push(("RequiredCommandPattern".to_string(), pattern.value.clone()));
            }
            if let Some(pattern) = fallback {
                params.push(("ShellFallbackPattern".to_string(), pattern.value.clone()));
            }
            Guard::Validator {
                name: name.value.clone(),
                params,
            }
        })
        .collect()
}

pub(super) fn lower_structured(config: &Config, builder: &mut Builder<'_>) -> Option<()> {
    agent_states(builder);
    builder.program.entry = default_state(config, builder);
    if config.selection.structured_routes.is_empty() {
        builder.diags.push(
            Diagnostic::error(
                Code::MissingRequiredKey,
                "structured selection has no `StructuredRoutes`",
            )
            .with_label(
                config.selection.span,
                "add `StructuredRoutes:` under `Selection`",
            ),
        );
    }
    let mut resolved = Vec::new();
    for route in &config.selection.structured_routes {
        let Some(agent_name) = &route.agent else {
            builder.diags.push(
                Diagnostic::error(
                    Code::MissingRequiredKey,
                    "a structured route has no `Agent`",
                )
                .with_label(route.span, "add `Agent:` to this route"),
            );
            continue;
        };
        let Some(agent) = builder.agent_ref(agent_name, "route target") else {
            continue;
        };
        let Some(condition) = &route.condition else {
            builder.diags.push(
                Diagnostic::error(
                    Code::MissingRequiredKey,
                    "a structured route has no `Condition`",
                )
                .with_label(route.span, "add `Condition:` to this route"),
            );
            continue;
        };
        let Some(cond) = lower_condition(condition, builder) else {
            continue;
        };
        let sources = builder.agent_refs(&route.source_agents, "source agent");
        let Some(target) = builder.agent_state(agent) else {
            continue;
        };
        let loc = builder.loc(route.span);
        resolved.push((
            sources.clone(),
            Exit {
                trigger: Trigger::Cond { cond, sources },
                guards: Vec::new(),
                effects: Vec::new(),
                target: Target::State(target),
                class: EdgeClass::Forward,
                recovery: None,
                loc,
            },
        ));
    }
    for state_idx in 0..builder.program.states.len() {
        let state_agent = builder.program.states[state_idx].agent;
        let exits: Vec<Exit> = resolved
            .iter()
            .filter(|(sources, _)| {
                sources.is_empty() || state_agent.is_some_and(|agent| sources.contains(&agent))
            })
            .map(|(_, exit)| exit.clone())
            .collect();
        let state = &mut builder.program.states[state_idx];
        state.exits = exits;
        state.no_match = NoMatch::Correct { nudge: true };
    }
    Some(())
}

/// Lowers either condition form to one [`Cond`]. The object form evaluates only its first
/// operator in upstream's priority: `Is`, `IsNot`, `Contains`, `Exists`.
pub(super) fn lower_condition(decl: &ConditionDecl, builder: &mut Builder<'_>) -> Option<Cond> {
    match decl {
        ConditionDecl::Text(text) => match crate::condition::parse(&text.value) {
            Ok(cond) => Some(cond),
            Err(error) => {
                let diag = match string_content_span(builder, text.span, &text.value) {
                    Some(span) => error.to_diagnostic(span),
                    None => {
                        // Escapes or folding make source offsets differ from the condition's:
                        // label the whole string and say where in the condition it went wrong.
                        let column = text.value[..error.offset.min(text.value.len())]
                            .chars()
                            .count()
                            + 1;
                        let mut diag = error.to_diagnostic(text.span);
                        diag.labels.clear();
                        diag.with_label(
                            text.span,
                            format!("{} (at character {column} of the condition)", error.message),
                        )
                    }
                };
                builder.diags.push(diag);
                None
            }
        },
        ConditionDecl::Object {
            span,
            field,
            is,
            is_not,
            contains,
            exists,
        } => {
            let Some(field) = field else {
                builder.diags.push(
                    Diagnostic::error(Code::MissingRequiredKey, "a condition has no `Field`")
                        .with_label(*span, "add `Field:` (a dot path into the reply's JSON)"),
                );
                return None;
            };
            let path = Field::Json(field.value.split('.').map(str::to_string).collect());
            if let Some(value) = is {
                return Some(Cond::Eq(path, value.value.clone()));
            }
            if let Some(value) = is_not {
                return Some(Cond::Ne(path, value.value.clone()));
            }
            if let Some(value) = contains {
                return Some(Cond::Contains(path, value.value.clone()));
            }
            if let Some(flag) = exists {
                let cond = Cond::Exists(path);
                return Some(if flag.value {
                    cond
                } else {
                    Cond::Not(Box::new(cond))
                });
            }
            // Upstream evaluates it as false; so does fuseraft, and says so.
            builder
                .diags
                .push(condition_always_false(*span, &field.value));
            Some(Cond::Or(Vec::new()))
        }
    }
}

/// FR311: a structured condition with a `Field` and no operator never holds.
fn condition_always_false(span: Span, field: &str) -> Diagnostic {
    Diagnostic::warning(
        Code::ConditionAlwaysFalse,
        format!("the condition on `{field}` has no operator, so it is always false"),
    )
    .with_label(span, "add one of `Is`, `IsNot`, `Contains`, `Exists`")
    .with_help("upstream evaluates a condition without an operator as false, and so does fuseraft: the route never fires")
}

/// The span of a string's content when the source spells it byte for byte (plain scalars,
/// quoted strings without escapes); `None` when offsets in the value are not source offsets.
fn string_content_span(builder: &Builder<'_>, span: Span, value: &str) -> Option<Span> {
    let text = &builder.sources.get(span.file).text;
    let raw = text
        .get(span.start as usize..span.end as usize)
        .unwrap_or("");
    let quoted = raw.len() >= 2 && (raw.starts_with('"') || raw.starts_with('\''));
    let (inner, inner_span) = if quoted {
        (&raw[1..raw.len() - 1], span.sub(1, raw.len() - 1))
    } else {
        (raw, span)
    };
    (inner == value).then_some(inner_span)
}
