//! Lowering `adversarial` selection: per stage a generator state and a critic state behind
//! the context firewall; the pass keyword (exact line) moves on, otherwise the generator
//! revises while rounds remain, and an exhausted stage promotes its last artifact anyway.

use super::{missing_block, Builder};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{
    ContextMode, EdgeClass, Effect, Exit, Guard, Matcher, NoMatch, SelectionKind, StateId,
    StateKind, Target, Trigger,
};
use crate::syntax::fuseraft::Config;

const DEFAULT_ROUNDS: u64 = 3;
const DEFAULT_PASS_KEYWORD: &str = "APPROVED";

fn exit(trigger: Trigger, guards: Vec<Guard>, effects: Vec<Effect>, target: Target) -> Exit {
    Exit {
        trigger,
        guards,
        effects,
        target,
        class: EdgeClass::Forward,
        recovery: None,
        loc: None,
    }
}

pub(super) fn lower(config: &Config, builder: &mut Builder<'_>) -> Option<()> {
    let Some(adversarial) = &config.selection.adversarial else {
        missing_block(
            builder,
            "Adversarial",
            SelectionKind::Adversarial,
            config.selection.span,
        );
        return None;
    };
    if adversarial.stages.is_empty() {
        builder.diags.push(
            Diagnostic::error(
                Code::MissingRequiredKey,
                "the adversarial block has no `Stages`",
            )
            .with_label(
                adversarial.span,
                "add `Stages:` with a generator and a critic each",
            ),
        );
        return None;
    }
    let rounds = adversarial
        .rounds
        .as_ref()
        .map_or(DEFAULT_ROUNDS, |rounds| rounds.value);
    let rounds = rounds.min(u32::MAX as u64) as u32;
    let pass = adversarial
        .pass_keyword
        .as_ref()
        .map_or(DEFAULT_PASS_KEYWORD.to_string(), |keyword| {
            keyword.value.clone()
        });

    // Build every stage's pair first, then wire each critic to the next stage.
    let mut stages: Vec<(StateId, StateId, crate::ir::CounterId, String)> = Vec::new();
    for (idx, stage) in adversarial.stages.iter().enumerate() {
        let number = idx + 1;
        let generator = stage
            .generator
            .as_ref()
            .and_then(|name| builder.agent_ref(name, "generator"));
        let critic = stage
            .critic
            .as_ref()
            .and_then(|name| builder.agent_ref(name, "critic"));
        if stage.generator.is_none() || stage.critic.is_none() {
            builder.diags.push(
                Diagnostic::error(
                    Code::MissingRequiredKey,
                    format!("stage {number} needs a `Generator` and a `Critic`"),
                )
                .with_label(stage.span, "this stage"),
            );
        }
        let (Some(generator), Some(critic)) = (generator, critic) else {
            continue;
        };
        let label = stage.label.as_ref().map_or_else(
            || {
                format!(
                    "{} → {}",
                    builder.program.agent(generator).name,
                    builder.program.agent(critic).name
                )
            },
            |label| label.value.clone(),
        );
        let gen_state = builder.add_state(
            &format!("stage{number}/generate"),
            Some(generator),
            StateKind::Turn,
            Some(stage.span),
        );
        let critic_state = builder.add_state(
            &format!("stage{number}/critique"),
            Some(critic),
            StateKind::Turn,
            Some(stage.span),
        );
        builder.state_mut(critic_state).context = Some(ContextMode::Firewall);
        let counter = builder.add_counter(format!("stage{number}.rounds"));
        stages.push((gen_state, critic_state, counter, label));
    }
    if stages.is_empty() {
        return None;
    }
    for (idx, (generator, critic, counter, label)) in stages.iter().enumerate() {
        let next = stages
            .get(idx + 1)
            .map_or(Target::End, |(next_generator, ..)| {
                Target::State(*next_generator)
            });
        builder.state_mut(*generator).exits.push(exit(
            Trigger::Always,
            Vec::new(),
            vec![Effect::Count(*counter)],
            Target::State(*critic),
        ));
        let critic_state = builder.state_mut(*critic);
        critic_state.exits.push(exit(
            Trigger::Signal {
                text: pass.clone(),
                matcher: Matcher::Exact,
                sources: Vec::new(),
            },
            Vec::new(),
            vec![Effect::PromoteArtifact],
            next.clone(),
        ));
        critic_state.exits.push(exit(
            Trigger::Otherwise,
            vec![Guard::CounterBelow(*counter, rounds)],
            vec![Effect::InjectCritique],
            Target::State(*generator),
        ));
        critic_state.exits.push(exit(
            Trigger::Otherwise,
            Vec::new(),
            vec![
                Effect::Warn(format!(
                    "stage {} ({label}) ended without `{pass}` after {rounds} rounds",
                    idx + 1
                )),
                Effect::PromoteArtifact,
            ],
            next,
        ));
        critic_state.no_match = NoMatch::Never;
    }
    builder.program.entry = stages[0].0;
    Some(())
}
