//! Property tests (proptest): the IR text round trip on generated programs, `compile` on
//! generated configs, the machine's step/resume on generated effect results, and one-pass
//! signal matching against each matcher.
//!
//! Case counts are kept small so that each property runs in a few seconds; the fuzz targets
//! under `fuzz/` explore the same ground for longer (see docs/reliability.md).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use fuseraft_compiler::ir::{
    self, Action, Agent, AgentId, Category, Cond, Context, ContextMode, ContextSource, Contract,
    ContractId, Counter, CounterId, EdgeClass, Effect, Exit, FailureAction, FailurePolicy,
    FailureRule, Field, FileIdx, Fork, Guard, Loc, Matcher, Merge, Model, NoMatch, Origin,
    Permissions, Predicate, PredicateType, Preset, Program, Select, SelectStyle, SelectionKind,
    State, StateId, StateKind, Step, StepKey, StopGate, StuckPolicy, Target, TermCond,
    TerminalMode, Termination, ToolChoice, Trigger, TurnUnit, Validator,
};
use fuseraft_compiler::MemoryFiles;
use fuseraft_vm::effect::{CheckResult, ModelReply, Request, Response};
use fuseraft_vm::history::{Message, ToolCall, Usage};
use fuseraft_vm::machine::{Machine, Options};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::RngSeed;
use serde_json::{json, Value as Json};

// =============================================================================================
// Shared generators

/// `cases` cases from a fixed seed, so that `cargo test` is reproducible; set
/// `PROPTEST_RNG_SEED=<n>` to explore other cases. Failures are not persisted to files: an
/// input worth keeping goes to `fixtures/regressions/` (tests/regressions.rs).
fn cases(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(cases);
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0xf05e_4af7);
    }
    config.failure_persistence = None;
    config
}

/// Any text, control characters and non-ASCII included.
fn any_text(max: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::string::string_regex(&format!("[a-zA-Z0-9_ .-]{{0,{max}}}")).unwrap(),
        2 => proptest::string::string_regex(&format!("(?s).{{0,{max}}}")).unwrap(),
        1 => prop::sample::select(vec![
            String::new(),
            "end".to_string(),
            "\"".to_string(),
            "\\".to_string(),
            "#".to_string(),
            "a b".to_string(),
            "\u{2028}".to_string(),
            "\u{feff}x".to_string(),
            "forward".to_string(),
            "null".to_string(),
            "@1:2".to_string(),
        ]),
    ]
}

/// Names for a table: `count` distinct strings (the IR refers to items by name).
fn distinct_names(count: usize) -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(any_text(8), count).prop_map(|names| {
        let mut seen = HashSet::new();
        names
            .into_iter()
            .enumerate()
            .map(|(idx, name)| {
                if seen.insert(name.clone()) {
                    name
                } else {
                    let unique = format!("{name}#{idx}");
                    seen.insert(unique.clone());
                    unique
                }
            })
            .collect()
    })
}

/// A condition in canonical shape (what `condition::parse` can produce): no one-operand
/// `&&`/`||`, no empty field path.
fn cond() -> impl Strategy<Value = Cond> {
    let field = prop_oneof![
        Just(Field::LastAgent),
        Just(Field::LastMessage),
        proptest::collection::vec(any_text(6), 1..3).prop_map(Field::Json),
    ];
    let leaf = prop_oneof![
        (field.clone(), any_text(6)).prop_map(|(f, v)| Cond::Eq(f, v)),
        (field.clone(), any_text(6)).prop_map(|(f, v)| Cond::Ne(f, v)),
        (field.clone(), any_text(6)).prop_map(|(f, v)| Cond::Contains(f, v)),
        field.prop_map(Cond::Exists),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        let junction = prop_oneof![
            Just(Vec::new()),
            proptest::collection::vec(inner.clone(), 2..4),
        ];
        prop_oneof![
            inner.prop_map(|c| Cond::Not(Box::new(c))),
            junction.clone().prop_map(Cond::And),
            junction.prop_map(Cond::Or),
        ]
    })
}

// =============================================================================================
// IR programs with valid references

#[derive(Clone, Copy, Debug)]
struct Sizes {
    files: usize,
    agents: usize,
    states: usize,
    contracts: usize,
    counters: usize,
}

fn opt<T: std::fmt::Debug + Clone>(
    strategy: impl Strategy<Value = T>,
) -> impl Strategy<Value = Option<T>> {
    proptest::option::of(strategy)
}

fn loc(sizes: Sizes) -> BoxedStrategy<Option<Loc>> {
    if sizes.files == 0 {
        return Just(None).boxed();
    }
    opt(
        (0..sizes.files as u32, any::<u32>(), any::<u32>()).prop_map(|(file, line, column)| Loc {
            file: FileIdx(file),
            line,
            column,
        }),
    )
    .boxed()
}

fn agent_id(sizes: Sizes) -> BoxedStrategy<AgentId> {
    (0..sizes.agents.max(1) as u32).prop_map(AgentId).boxed()
}

fn opt_agent(sizes: Sizes) -> BoxedStrategy<Option<AgentId>> {
    if sizes.agents == 0 {
        Just(None).boxed()
    } else {
        opt(agent_id(sizes)).boxed()
    }
}

fn agent_ids(sizes: Sizes) -> BoxedStrategy<Vec<AgentId>> {
    if sizes.agents == 0 {
        Just(Vec::new()).boxed()
    } else {
        proptest::collection::vec(agent_id(sizes), 0..3).boxed()
    }
}

fn state_id(sizes: Sizes) -> BoxedStrategy<StateId> {
    (0..sizes.states.max(1) as u32).prop_map(StateId).boxed()
}

fn target(sizes: Sizes) -> BoxedStrategy<Target> {
    prop_oneof![
        1 => Just(Target::End),
        3 => state_id(sizes).prop_map(Target::State),
    ]
    .boxed()
}

fn model() -> impl Strategy<Value = Model> {
    (
        (
            opt(any_text(6)),
            opt(any_text(6)),
            any_text(8),
            opt(any_text(8)),
        ),
        (
            opt(any_text(6)),
            any::<bool>(),
            opt(any_text(4)),
            opt(any::<u64>()),
            opt(any_text(6)),
        ),
        opt(any::<u64>()),
        model_limits(),
    )
        .prop_map(
            |(
                (alias, provider, id, endpoint),
                (api_key_env, has_literal_key, temperature, max_tokens, reasoning_effort),
                context_window,
                (pricing, timeouts),
            )| Model {
                alias,
                provider,
                id,
                endpoint,
                api_key_env,
                has_literal_key,
                temperature,
                max_tokens,
                reasoning_effort,
                context_window,
                pricing,
                timeouts,
            },
        )
}

/// A model's `Pricing` and timeouts (boxed: the strategy's type stays small).
fn model_limits() -> BoxedStrategy<(Option<ir::Pricing>, ir::ModelTimeouts)> {
    (
        opt((decimal(), decimal(), opt(decimal()))),
        (opt(decimal()), opt(decimal()), opt(decimal())),
    )
        .prop_map(|(pricing, (connect, idle, overall))| {
            let pricing = pricing.map(|(input, output, cached_input)| ir::Pricing {
                input,
                output,
                cached_input,
            });
            let timeouts = ir::ModelTimeouts {
                connect,
                idle,
                overall,
            };
            (pricing, timeouts)
        })
        .boxed()
}

/// A non-negative finite number, of any magnitude (prices, seconds, budgets).
fn decimal() -> impl Strategy<Value = f64> {
    prop_oneof![
        (prop::num::f64::POSITIVE | prop::num::f64::ZERO).prop_filter("finite", |x| x.is_finite()),
        (0u32..100_000).prop_map(|cents| f64::from(cents) / 100.0),
    ]
}

fn context_source() -> impl Strategy<Value = ContextSource> {
    (any_text(10), any::<u32>(), opt(any_text(6))).prop_map(|(source, max_chars, label)| {
        ContextSource {
            source,
            max_chars,
            label,
        }
    })
}

fn context_mode() -> impl Strategy<Value = ContextMode> {
    prop::sample::select(vec![
        ContextMode::Shared,
        ContextMode::Firewall,
        ContextMode::Value,
        ContextMode::Artifacts,
    ])
}

fn agent(name: String, sizes: Sizes) -> impl Strategy<Value = Agent> {
    (
        (opt(any_text(12)), opt(model()), any_text(16)),
        (
            proptest::collection::vec(any_text(6), 0..3),
            prop::sample::select(vec![
                ToolChoice::Auto,
                ToolChoice::Required,
                ToolChoice::None,
            ]),
            (
                context_mode(),
                proptest::collection::vec(context_source(), 0..2),
                any::<bool>(),
                proptest::collection::vec(any_text(6), 0..2),
                (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>()),
                (
                    opt((1u32..=1000).prop_map(|per_mille| {
                        ir::Fraction::new(f64::from(per_mille) / 1000.0).expect("in (0, 1]")
                    })),
                    proptest::collection::vec((0..ir::Tool::ALL.len(), any::<u32>()), 0..3),
                ),
            ),
            opt(any_text(6)),
            loc(sizes),
        ),
    )
        .prop_map(
            move |(
                (description, model, instructions),
                (
                    tools,
                    tool_choice,
                    (
                        mode,
                        sources,
                        text_only,
                        exclude_agents,
                        (max_tail, max_turn_age, max_tool_result_chars, max_replay_chars),
                        (cap_fraction, overrides),
                    ),
                    pattern,
                    loc,
                ),
            )| {
                let mut agent = base_agent();
                agent.name = name.clone();
                agent.description = description;
                agent.model = model;
                agent.instructions = instructions;
                agent.tools = tools;
                agent.tool_choice = tool_choice;
                agent.context = Context {
                    mode,
                    sources,
                    text_only,
                    exclude_agents,
                    max_tail,
                    max_turn_age,
                    max_tool_result_chars,
                    max_replay_chars,
                    cap_fraction,
                    // One entry per tool, as the lowering keeps them.
                    tool_result_overrides: overrides
                        .into_iter()
                        .map(|(tool, chars)| (ir::Tool::ALL[tool], chars))
                        .fold(
                            Vec::new(),
                            |mut kept: Vec<(ir::Tool, u32)>, (tool, chars)| {
                                if !kept.iter().any(|(known, _)| *known == tool) {
                                    kept.push((tool, chars));
                                }
                                kept
                            },
                        ),
                };
                agent.pattern = pattern;
                agent.loc = loc;
                agent
            },
        )
}

/// An agent with every field at the value the IR parser gives an absent line, so that the
/// generator keeps compiling when `Agent` gains a field (the new field is not generated).
fn base_agent() -> Agent {
    let program = ir::parse(
        "fuseraft-ir 1\nprogram p origin tama\nentry s\nagent a\nstate s layer 0\n  terminal end_now\n",
    )
    .unwrap();
    program.agents[0].clone()
}

fn params() -> impl Strategy<Value = Vec<(String, String)>> {
    proptest::collection::vec((any_text(6), any_text(8)), 0..3)
}

fn guard(sizes: Sizes) -> BoxedStrategy<Guard> {
    let mut options: Vec<(u32, BoxedStrategy<Guard>)> = vec![
        (
            2,
            (proptest::sample::select(Validator::ALL), params())
                .prop_map(|(validator, params)| Guard::Validator {
                    name: validator.name().to_string(),
                    params,
                })
                .boxed(),
        ),
        (1, cond().prop_map(Guard::Cond).boxed()),
        (1, Just(Guard::HumanApproval).boxed()),
    ];
    if sizes.contracts > 0 {
        options.push((
            1,
            (0..sizes.contracts as u32)
                .prop_map(|id| Guard::Contract(ContractId(id)))
                .boxed(),
        ));
    }
    if sizes.counters > 0 {
        options.push((
            1,
            (0..sizes.counters as u32, any::<u32>())
                .prop_map(|(id, limit)| Guard::CounterBelow(CounterId(id), limit))
                .boxed(),
        ));
    }
    proptest::strategy::Union::new_weighted(options).boxed()
}

fn effect(sizes: Sizes) -> BoxedStrategy<Effect> {
    let mut options: Vec<(u32, BoxedStrategy<Effect>)> = vec![
        (
            1,
            proptest::collection::vec(context_source(), 0..3)
                .prop_map(Effect::InjectContext)
                .boxed(),
        ),
        (1, Just(Effect::PhaseBreak).boxed()),
        (1, Just(Effect::PromoteArtifact).boxed()),
        (1, Just(Effect::InjectCritique).boxed()),
        (1, any_text(10).prop_map(Effect::Warn).boxed()),
        (1, template(sizes).prop_map(Effect::SetValue).boxed()),
    ];
    if sizes.counters > 0 {
        let counter = (0..sizes.counters as u32).prop_map(CounterId);
        options.push((1, counter.clone().prop_map(Effect::Count).boxed()));
        options.push((1, counter.clone().prop_map(Effect::Reset).boxed()));
        options.push((
            1,
            (counter, any::<u32>(), opt(any_text(8)))
                .prop_map(|(counter, max, objections)| Effect::Revisit {
                    counter,
                    max,
                    objections,
                })
                .boxed(),
        ));
    }
    proptest::strategy::Union::new_weighted(options).boxed()
}

/// A tama step template: text and placeholders.
fn template(sizes: Sizes) -> BoxedStrategy<ir::Template> {
    let part = prop_oneof![
        3 => any_text(8).prop_map(ir::Part::Text),
        1 => proptest::collection::vec(state_id(sizes), 1..3).prop_map(ir::Part::Input),
        1 => proptest::collection::vec(state_id(sizes), 1..3).prop_map(ir::Part::Value),
        1 => Just(ir::Part::Item),
        1 => Just(ir::Part::Earlier),
        1 => Just(ir::Part::Operator),
    ];
    proptest::collection::vec(part, 0..5)
        .prop_map(ir::Template::new)
        .boxed()
}

fn step(sizes: Sizes) -> BoxedStrategy<Step> {
    let key = prop_oneof![
        Just(StepKey::Finish),
        any_text(6).prop_map(StepKey::Fixed),
        Just(StepKey::Verdict),
    ];
    (opt(template(sizes)), key, any::<bool>())
        .prop_map(|(input, key, react)| Step { input, key, react })
        .boxed()
}

fn trigger(sizes: Sizes) -> BoxedStrategy<Trigger> {
    prop_oneof![
        3 => (
            any_text(10),
            prop::sample::select(vec![Matcher::Relaxed, Matcher::Strict, Matcher::Exact]),
            agent_ids(sizes),
        )
            .prop_map(|(text, matcher, sources)| Trigger::Signal {
                text,
                matcher,
                sources
            }),
        1 => any_text(6).prop_map(Trigger::FinishKey),
        1 => Just(Trigger::AnyKey),
        2 => (cond(), agent_ids(sizes)).prop_map(|(cond, sources)| Trigger::Cond { cond, sources }),
        1 => Just(Trigger::Chosen),
        1 => Just(Trigger::Always),
        1 => Just(Trigger::Otherwise),
    ]
    .boxed()
}

fn exit(sizes: Sizes) -> impl Strategy<Value = Exit> {
    (
        trigger(sizes),
        proptest::collection::vec(guard(sizes), 0..3),
        proptest::collection::vec(effect(sizes), 0..3),
        target(sizes),
        prop::sample::select(vec![EdgeClass::Forward, EdgeClass::Back]),
        opt_agent(sizes),
        loc(sizes),
    )
        .prop_map(
            |(trigger, guards, effects, target, class, recovery, loc)| Exit {
                trigger,
                guards,
                effects,
                target,
                class,
                recovery,
                loc,
            },
        )
}

fn state_kind(sizes: Sizes) -> BoxedStrategy<StateKind> {
    let fork = (
        proptest::collection::vec(state_id(sizes), 0..3),
        target(sizes),
        prop::sample::select(
            [
                Merge::ALL,
                &[Merge::Object, Merge::Transcript, Merge::Items],
            ]
            .concat(),
        ),
        opt_agent(sizes),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(branches, join, merge, merge_agent, per_line, sequential)| {
                StateKind::Fork(Fork {
                    branches,
                    join,
                    merge,
                    merge_agent,
                    per_item: None,
                    per_line,
                    sequential,
                })
            },
        );
    let style = prop_oneof![
        Just(SelectStyle::Llm),
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<bool>()).prop_map(
            |(max_rounds, max_stalls, max_resets, plan_review)| SelectStyle::Magentic {
                max_rounds,
                max_stalls,
                max_resets,
                plan_review,
            }
        ),
    ];
    let select = (style, opt(model()), opt(any_text(12))).prop_map(|(style, manager, prompt)| {
        StateKind::Select(Box::new(Select {
            style,
            manager,
            prompt,
        }))
    });
    prop_oneof![
        3 => Just(StateKind::Turn),
        1 => prop::sample::select(vec![
            TerminalMode::RunOnce,
            TerminalMode::EndNow,
            TerminalMode::RunUntilTermination,
        ])
        .prop_map(StateKind::Terminal),
        1 => fork,
        1 => select,
    ]
    .boxed()
}

fn state(name: String, sizes: Sizes) -> impl Strategy<Value = State> {
    let no_match = prop_oneof![
        any::<bool>().prop_map(|nudge| NoMatch::Correct { nudge }),
        state_id(sizes).prop_map(NoMatch::Fallback),
        Just(NoMatch::Fail),
        Just(NoMatch::Never),
    ];
    let stuck = (opt(any::<u32>()), opt(any::<u32>()), opt(any::<u32>())).prop_map(
        |(max_retries, max_visit_turns, max_without_signal)| StuckPolicy {
            max_retries,
            max_visit_turns,
            max_without_signal,
        },
    );
    (
        opt_agent(sizes),
        state_kind(sizes),
        opt(context_mode()),
        opt(any::<u32>()),
        proptest::collection::vec(exit(sizes), 0..4),
        no_match,
        stuck,
        (loc(sizes), opt(step(sizes))),
    )
        .prop_map(
            move |(agent, kind, context, layer, exits, no_match, stuck, (loc, step))| State {
                name: name.clone(),
                agent,
                kind,
                context,
                layer,
                exits,
                no_match,
                stuck,
                step,
                loc,
            },
        )
}

fn termination(sizes: Sizes) -> impl Strategy<Value = Termination> {
    let term =
        prop_oneof![
            (any_text(10), proptest::collection::vec(any_text(6), 0..2)).prop_map(
                |(text, agents)| TermCond::Regex {
                    // Any text, as a pattern that compiles (`ir::parse` refuses one that does not).
                    pattern: text
                        .chars()
                        .map(|ch| if ch.is_ascii_punctuation() {
                            format!("\\{ch}")
                        } else {
                            ch.to_string()
                        })
                        .collect(),
                    agents,
                }
            ),
            any::<u32>().prop_map(TermCond::MaxTurns),
            any::<u64>().prop_map(TermCond::Tokens),
            cond().prop_map(TermCond::Cond),
        ];
    let gate = (
        0usize..3,
        0usize..3,
        proptest::collection::vec(guard(sizes), 1..3),
    )
        .prop_map(|(first, len, validators)| StopGate {
            first,
            end: first + len,
            validators,
        });
    (
        proptest::collection::vec(term, 0..3),
        proptest::collection::vec(guard(sizes), 0..2),
        proptest::collection::vec(gate, 0..2),
        opt(any::<u64>()),
        opt(decimal()),
        prop::sample::select(vec![TurnUnit::Turns, TurnUnit::Phases]),
    )
        .prop_map(
            |(any, validators, gates, max_total_tokens, max_total_cost, unit)| Termination {
                any,
                validators,
                gates,
                max_total_tokens,
                max_total_cost,
                unit,
            },
        )
}

fn failure() -> impl Strategy<Value = FailurePolicy> {
    let rule = (
        prop::sample::select(FailureAction::ALL.to_vec()),
        any::<u32>(),
    )
        .prop_map(|(action, threshold)| FailureRule::new(action, threshold));
    prop_oneof![
        Just(FailurePolicy::default()),
        (rule.clone(), rule.clone(), rule.clone(), rule, any::<u32>()).prop_map(
            |(missing_evidence, invalid_transition, conflicting_evidence, no_progress, max)| {
                FailurePolicy {
                    missing_evidence,
                    invalid_transition,
                    conflicting_evidence,
                    no_progress,
                    max_contract_failures: max,
                }
            }
        ),
    ]
}

fn origin() -> impl Strategy<Value = Origin> {
    prop_oneof![
        Just(Origin::Tama),
        prop::sample::select(SelectionKind::ALL.to_vec()).prop_map(Origin::Fuseraft),
    ]
}

fn program() -> impl Strategy<Value = Program> {
    // A program has at least one state (the IR parser rejects one without).
    (0..3usize, 0..4usize, 1..6usize, 0..3usize, 0..3usize)
        .prop_map(|(files, agents, states, contracts, counters)| Sizes {
            files,
            agents,
            states,
            contracts,
            counters,
        })
        .prop_flat_map(|sizes| {
            let agents = distinct_names(sizes.agents).prop_flat_map(move |names| {
                names
                    .into_iter()
                    .map(|name| agent(name, sizes))
                    .collect::<Vec<_>>()
            });
            let states = distinct_names(sizes.states).prop_flat_map(move |names| {
                names
                    .into_iter()
                    .map(|name| state(name, sizes))
                    .collect::<Vec<_>>()
            });
            let contracts = distinct_names(sizes.contracts).prop_flat_map(move |names| {
                names
                    .into_iter()
                    .map(|name| {
                        (
                            proptest::collection::vec(
                                (proptest::sample::select(PredicateType::ALL), params()).prop_map(
                                    |(kind, params)| Predicate {
                                        kind: kind.name().to_string(),
                                        params,
                                    },
                                ),
                                0..3,
                            ),
                            loc(sizes),
                        )
                            .prop_map(move |(predicates, loc)| Contract {
                                name: name.clone(),
                                predicates,
                                loc,
                            })
                    })
                    .collect::<Vec<_>>()
            });
            let counters = distinct_names(sizes.counters)
                .prop_map(|names| names.into_iter().map(|name| Counter { name }).collect());
            (
                (
                    any_text(8),
                    origin(),
                    proptest::collection::vec(any_text(10), sizes.files),
                ),
                (0..sizes.states.max(1) as u32).prop_map(StateId),
                agents,
                states,
                contracts,
                counters,
                (
                    termination(sizes),
                    failure(),
                    proptest::collection::vec((any_text(8), any_text(8)), 0..3),
                    permissions(),
                    opt(model()),
                ),
                skills(),
            )
        })
        .prop_map(
            |(
                (name, origin, files),
                entry,
                agents,
                states,
                contracts,
                counters,
                (termination, failure, settings, permissions, compaction_model),
                skills,
            )| {
                let mut program = Program {
                    files,
                    entry,
                    agents,
                    states,
                    contracts,
                    counters,
                    termination,
                    failure,
                    settings,
                    permissions,
                    compaction_model,
                    skills,
                    ..Program::new(name, origin)
                };
                // The typed sections, as the lowering and the `.fir` parser fill them.
                program.settle_settings();
                program
            },
        )
}

/// tama skills, by distinct names.
fn skills() -> BoxedStrategy<Vec<ir::Skill>> {
    distinct_names(2)
        .prop_flat_map(|names| {
            let count = names.len();
            (
                Just(names),
                proptest::collection::vec((any_text(10), any_text(20)), count),
            )
                .prop_map(|(names, texts)| {
                    names
                        .into_iter()
                        .zip(texts)
                        .map(|(name, (description, body))| ir::Skill {
                            name,
                            description,
                            body,
                        })
                        .collect()
                })
        })
        .boxed()
}

fn permissions() -> impl Strategy<Value = Permissions> {
    (
        0..Preset::ALL.len(),
        proptest::sample::subsequence(Category::ALL.to_vec(), 0..=Category::ALL.len()),
        proptest::collection::vec(0..Action::ALL.len(), Category::ALL.len()),
    )
        .prop_map(|(preset, categories, actions)| Permissions {
            preset: Preset::ALL[preset],
            overrides: categories
                .into_iter()
                .zip(actions)
                .map(|(category, action)| (category, Action::ALL[action]))
                .collect(),
        })
}

/// `parse(print(p)) == p` for programs whose references are valid, and printing the parsed
/// program gives the same text. Run on a thread of its own with a deeper stack: a generated
/// program is built through many nested strategy closures, which an unoptimised build lays
/// out frame by frame (the 2 MiB a test thread gets is not enough).
#[test]
fn ir_text_round_trips() {
    let run = || {
        let mut runner = proptest::test_runner::TestRunner::new(cases(300));
        let outcome = runner.run(&program(), |program| {
            let text = ir::print(&program, &ir::PrintOptions::default());
            let back = ir::parse(&text);
            prop_assert!(back.is_ok(), "{:?}\n{}", back.err(), text);
            let back = back.unwrap();
            prop_assert_eq!(&back, &program, "{}", text);
            prop_assert_eq!(ir::print(&back, &ir::PrintOptions::default()), text);
            // The elided form still parses.
            let elided = ir::print(&program, &ir::PrintOptions { elide_text: true });
            prop_assert!(ir::parse(&elided).is_ok(), "{}", elided);
            Ok(())
        });
        if let Err(failure) = outcome {
            panic!("{failure}");
        }
    };
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(run)
        .expect("a thread")
        .join()
        .expect("the round trip holds");
}

// =============================================================================================
// Generated configs

/// A YAML/JSON value tree.
#[derive(Clone, Debug)]
enum Value {
    Null,
    /// Text and whether to quote it.
    Scalar(String, bool),
    Seq(Vec<Value>),
    Map(Vec<(String, Value)>),
}

const KEYS: &[&str] = &[
    "Name",
    "Description",
    "Agents",
    "Instructions",
    "Model",
    "Models",
    "Plugins",
    "FunctionChoice",
    "Selection",
    "Type",
    "Routes",
    "Keyword",
    "Agent",
    "SourceAgents",
    "Validators",
    "Condition",
    "RequireHumanApproval",
    "RecoveryAgent",
    "DefaultAgent",
    "StateMachine",
    "Initial",
    "States",
    "Transitions",
    "Signal",
    "To",
    "Terminal",
    "Graph",
    "Nodes",
    "Edges",
    "From",
    "EntryNode",
    "Adversarial",
    "Generator",
    "Critic",
    "PassKeyword",
    "Stages",
    "Termination",
    "Pattern",
    "MaxIterations",
    "MaxTotalTokens",
    "MaxTotalCost",
    "Pricing",
    "InputPerMillion",
    "IdleTimeoutSeconds",
    "Context",
    "ContextWindow",
    "MaxTailMessages",
    "ExcludeAgents",
    "TextOnly",
    "FailureHandling",
    "MissingEvidence",
    "Action",
    "Threshold",
    "Contracts",
    "Contract",
    "Requires",
    "Path",
    "HandoffContext",
    "Source",
    "MaxChars",
    "MaxRevisits",
    "MaxRetries",
    "Magentic",
    "MaxRoundCount",
    "Prompt",
    "Parallel",
    "Merge",
    "Security",
    "FileSystemSandboxPath",
    "Validation",
    "BriefPath",
    "Field",
    "Is",
    "IsNot",
    "Contains",
    "Exists",
    "Provider",
    "ModelId",
    "Endpoint",
    "ApiKeyEnvVar",
    "ApiKey",
    "Temperature",
    "MaxTokens",
    "ReasoningEffort",
    "Capabilities",
    "Permissions",
    "StructuredRoutes",
    "Rounds",
    "Participants",
    "Mapper",
    "Reducer",
    "Splitter",
    "Targets",
    "Synthesizer",
    "Strategy",
];

const WORDS: &[&str] = &[
    "Planner",
    "Developer",
    "Reviewer",
    "Critic",
    "end",
    "keyword",
    "statemachine",
    "graph",
    "workflow",
    "adversarial",
    "sequential",
    "roundrobin",
    "structured",
    "llm",
    "magentic",
    "mapreduce",
    "scattergather",
    "regex",
    "maxiterations",
    "true",
    "false",
    "0",
    "-1",
    "3",
    "1e999",
    "~",
    "null",
    "APPROVED",
    "HANDOFF TO DEVELOPER",
    "verdict == 'approved'",
    "RequireShellPass",
    "RequireWriteFile",
    "FileExists",
    "Reinstruct",
    "Abort",
    "union",
    "vote",
    "gpt-4o",
    "openai",
    "../../etc/passwd",
    "*",
    "&anchor",
    "!!str",
    "{",
    "[",
    "'",
    "\"",
    "#",
    "|",
    ">",
    "- x",
    ": y",
    "\t",
    "é",
];

fn value(depth: u32) -> BoxedStrategy<Value> {
    let scalar = prop_oneof![
        4 => (prop::sample::select(WORDS), any::<bool>())
            .prop_map(|(word, quoted)| Value::Scalar(word.to_string(), quoted)),
        1 => (any_text(12), any::<bool>()).prop_map(|(text, quoted)| Value::Scalar(text, quoted)),
        1 => any::<i64>().prop_map(|n| Value::Scalar(n.to_string(), false)),
        1 => Just(Value::Null),
    ];
    if depth == 0 {
        return scalar.boxed();
    }
    let key = prop_oneof![
        6 => prop::sample::select(KEYS).prop_map(str::to_string),
        1 => prop::sample::select(KEYS).prop_map(|key| key.to_lowercase()),
        1 => proptest::string::string_regex("[A-Za-z]{1,8}").unwrap(),
    ];
    prop_oneof![
        3 => scalar,
        2 => proptest::collection::vec(value(depth - 1), 0..4).prop_map(Value::Seq),
        3 => proptest::collection::vec((key, value(depth - 1)), 0..6).prop_map(Value::Map),
    ]
    .boxed()
}

/// A config: an `Orchestration:` root whose usual keys hold mostly plausible values.
fn config() -> impl Strategy<Value = Value> {
    let agent = (
        prop::sample::select(&WORDS[..4]),
        value(1),
        proptest::collection::vec((prop::sample::select(KEYS), value(2)), 0..3),
    )
        .prop_map(|(name, instructions, extra)| {
            let mut entries = vec![
                ("Name".to_string(), Value::Scalar(name.to_string(), false)),
                ("Instructions".to_string(), instructions),
            ];
            entries.extend(extra.into_iter().map(|(k, v)| (k.to_string(), v)));
            Value::Map(entries)
        });
    let selection = (
        prop::sample::select(&WORDS[5..19]),
        proptest::collection::vec((prop::sample::select(KEYS), value(3)), 0..5),
    )
        .prop_map(|(kind, extra)| {
            let mut entries = vec![("Type".to_string(), Value::Scalar(kind.to_string(), false))];
            entries.extend(extra.into_iter().map(|(k, v)| (k.to_string(), v)));
            Value::Map(entries)
        });
    (
        proptest::collection::vec(agent, 0..4),
        selection,
        proptest::collection::vec((prop::sample::select(KEYS), value(3)), 0..4),
    )
        .prop_map(|(agents, selection, extra)| {
            let mut entries = vec![
                ("Name".to_string(), Value::Scalar("Generated".into(), false)),
                ("Agents".to_string(), Value::Seq(agents)),
                ("Selection".to_string(), selection),
            ];
            entries.extend(extra.into_iter().map(|(k, v)| (k.to_string(), v)));
            Value::Map(vec![("Orchestration".to_string(), Value::Map(entries))])
        })
}

fn yaml_scalar(text: &str, quoted: bool) -> String {
    if quoted || text.is_empty() {
        // JSON string syntax is a valid YAML double-quoted scalar.
        serde_json::to_string(text).unwrap()
    } else {
        text.replace('\n', " ")
    }
}

/// Block-style YAML (plain scalars may well be invalid YAML: that is part of the test).
fn to_yaml(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Null => out.push_str(" ~\n"),
        Value::Scalar(text, quoted) => {
            out.push(' ');
            out.push_str(&yaml_scalar(text, *quoted));
            out.push('\n');
        }
        Value::Seq(items) if items.is_empty() => out.push_str(" []\n"),
        Value::Map(entries) if entries.is_empty() => out.push_str(" {}\n"),
        Value::Seq(items) => {
            out.push('\n');
            for item in items {
                out.push_str(&pad);
                out.push('-');
                to_yaml(item, indent + 2, out);
            }
        }
        Value::Map(entries) => {
            out.push('\n');
            for (key, value) in entries {
                out.push_str(&pad);
                out.push_str(&yaml_scalar(key, false));
                out.push(':');
                to_yaml(value, indent + 2, out);
            }
        }
    }
}

fn to_json(value: &Value) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Scalar(text, _) => Json::String(text.clone()),
        Value::Seq(items) => Json::Array(items.iter().map(to_json).collect()),
        Value::Map(entries) => Json::Object(
            entries
                .iter()
                .map(|(key, value)| (key.clone(), to_json(value)))
                .collect(),
        ),
    }
}

/// Compiles `text` at `path`; a program that compiles must round-trip through the IR text,
/// and `check` must not panic.
fn compile_text(path: &str, text: String) {
    let reader = MemoryFiles::new().with(path, text);
    let compiled = fuseraft_compiler::compile(Path::new(path), &reader);
    if let Some(program) = &compiled.program {
        let printed = ir::print(program, &ir::PrintOptions::default());
        assert_eq!(
            ir::parse(&printed).as_ref(),
            Ok(program),
            "round trip of\n{printed}"
        );
    }
    let _ = fuseraft_compiler::check::check(&compiled);
}

proptest! {
    #![proptest_config(cases(200))]

    /// `compile` never panics on generated configs, as YAML and as JSON.
    #[test]
    fn compile_never_panics(config in config()) {
        let mut yaml = String::new();
        if let Value::Map(entries) = &config {
            for (key, value) in entries {
                yaml.push_str(key);
                yaml.push(':');
                to_yaml(value, 2, &mut yaml);
            }
        }
        compile_text("/gen/config.yaml", yaml);
        compile_text("/gen/config.json", to_json(&config).to_string());
    }

    /// Arbitrary values under arbitrary fuseraft keys, anywhere.
    #[test]
    fn compile_never_panics_on_any_tree(tree in value(4)) {
        let mut yaml = String::from("Orchestration:");
        to_yaml(&tree, 2, &mut yaml);
        compile_text("/gen/config.yaml", yaml);
        let json = json!({"Orchestration": to_json(&tree)});
        compile_text("/gen/config.json", json.to_string());
    }
}

// =============================================================================================
// The machine under generated effect results

/// Every fixture program that compiles (configs under `fixtures/compile/ok/` and the configs
/// of `fixtures/run/*`).
fn fixture_programs() -> &'static [(String, Program)] {
    static PROGRAMS: std::sync::OnceLock<Vec<(String, Program)>> = std::sync::OnceLock::new();
    PROGRAMS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut paths = Vec::new();
        for dir in ["compile/ok", "run"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
                let path = entry.path();
                if path.join("config.yaml").exists() {
                    paths.push(path.join("config.yaml"));
                } else if path.join("tama.toml").exists() || path.is_file() {
                    paths.push(path);
                }
            }
        }
        paths.sort();
        let programs: Vec<(String, Program)> = paths
            .iter()
            .filter_map(|path| {
                let program = fuseraft_compiler::compile(path, &fuseraft::disk::Disk).program?;
                Some((path.display().to_string(), program))
            })
            .collect();
        assert!(
            programs.len() >= 20,
            "only {} fixture programs",
            programs.len()
        );
        programs
    })
}

/// Signals, finish keys, conditions, state and agent names: what makes routing progress.
fn program_words(program: &Program) -> Vec<String> {
    let mut words = vec![
        "{\"verdict\": \"approved\"}".to_string(),
        "```json\n{\"verdict\": \"revise\"}\n```".to_string(),
        "APPROVED".to_string(),
    ];
    for state in &program.states {
        words.push(state.name.clone());
        for exit in &state.exits {
            match &exit.trigger {
                Trigger::Signal { text, .. } => words.push(text.clone()),
                Trigger::FinishKey(key) => words.push(key.clone()),
                Trigger::Cond { cond, .. } => words.push(cond.to_string()),
                _ => {}
            }
        }
    }
    words.extend(program.agents.iter().map(|agent| agent.name.clone()));
    words
}

/// The text of a reply.
#[derive(Clone, Debug)]
enum Text {
    Empty,
    Word(Index),
    /// A word repeated on `n` lines (a reply with thousands of signals).
    Repeated(Index, u16),
    /// Several words on their own lines.
    Words(Vec<Index>),
    Arbitrary(String),
}

#[derive(Clone, Debug)]
struct Call {
    name: Index,
    args: CallArgs,
}

#[derive(Clone, Debug)]
enum CallArgs {
    Keyword(Index),
    Finish(Index),
    Missing,
    WrongType(i64),
    Arbitrary(String, String),
}

/// One answer: the machine picks the part that fits the request it made.
#[derive(Clone, Debug)]
struct Answer {
    text: Text,
    calls: Vec<Call>,
    usage: (u32, u32),
    model_error: bool,
    tool_ok: bool,
    tool_result: Text,
    verdicts: Vec<bool>,
    approve: bool,
    /// Answer with a response of another kind (a driver bug the machine must survive).
    wrong_kind: bool,
}

fn text_choice() -> impl Strategy<Value = Text> {
    prop_oneof![
        1 => Just(Text::Empty),
        4 => any::<Index>().prop_map(Text::Word),
        1 => (any::<Index>(), 1..3000u16).prop_map(|(i, n)| Text::Repeated(i, n)),
        2 => proptest::collection::vec(any::<Index>(), 1..4).prop_map(Text::Words),
        1 => any_text(40).prop_map(Text::Arbitrary),
    ]
}

fn answer() -> impl Strategy<Value = Answer> {
    let call_args = prop_oneof![
        3 => any::<Index>().prop_map(CallArgs::Keyword),
        2 => any::<Index>().prop_map(CallArgs::Finish),
        1 => Just(CallArgs::Missing),
        1 => any::<i64>().prop_map(CallArgs::WrongType),
        1 => (any_text(8), any_text(8)).prop_map(|(k, v)| CallArgs::Arbitrary(k, v)),
    ];
    let call = (any::<Index>(), call_args).prop_map(|(name, args)| Call { name, args });
    (
        (
            text_choice(),
            proptest::collection::vec(call, 0..3),
            (0..5000u32, 0..5000u32),
            prop::bool::weighted(0.03),
        ),
        (
            any::<bool>(),
            text_choice(),
            proptest::collection::vec(prop::bool::weighted(0.7), 0..4),
            any::<bool>(),
            prop::bool::weighted(0.02),
        ),
    )
        .prop_map(
            |(
                (text, calls, usage, model_error),
                (tool_ok, tool_result, verdicts, approve, wrong_kind),
            )| Answer {
                text,
                calls,
                usage,
                model_error,
                tool_ok,
                tool_result,
                verdicts,
                approve,
                wrong_kind,
            },
        )
}

const TOOL_NAMES: &[&str] = &[
    "handoff",
    "finish",
    "write_file",
    "read_file",
    "run_command",
    "FileSystem-write_file",
    "unknown_tool",
    "",
];

fn render(text: &Text, words: &[String]) -> String {
    match text {
        Text::Empty => String::new(),
        Text::Word(index) => index.get(words).clone(),
        Text::Repeated(index, count) => {
            let word = index.get(words);
            let mut out = String::with_capacity((word.len() + 1) * *count as usize);
            for _ in 0..*count {
                out.push_str(word);
                out.push('\n');
            }
            out
        }
        Text::Words(indices) => indices
            .iter()
            .map(|index| index.get(words).as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        Text::Arbitrary(text) => text.clone(),
    }
}

fn respond(request: &Request, answer: &Answer, words: &[String], next_id: &mut u32) -> Response {
    let reply = |next_id: &mut u32| {
        if answer.model_error {
            return Err("generated model failure".to_string());
        }
        let tool_calls = answer
            .calls
            .iter()
            .map(|call| {
                *next_id += 1;
                let args = match &call.args {
                    CallArgs::Keyword(index) => json!({"route_keyword": index.get(words)}),
                    CallArgs::Finish(index) => json!({"key": index.get(words), "value": "v"}),
                    CallArgs::Missing => json!({}),
                    CallArgs::WrongType(n) => json!({"route_keyword": n, "key": [n], "path": n}),
                    CallArgs::Arbitrary(key, value) => json!({ key: value }),
                };
                ToolCall {
                    id: format!("call_{next_id}"),
                    name: call.name.get(TOOL_NAMES).to_string(),
                    args,
                    result: None,
                    ok: false,
                    denied: None,
                }
            })
            .collect();
        Ok(ModelReply {
            text: render(&answer.text, words),
            tool_calls,
            usage: Usage {
                input_tokens: u64::from(answer.usage.0),
                output_tokens: u64::from(answer.usage.1),
                ..Usage::default()
            },
            ..ModelReply::default()
        })
    };
    if answer.wrong_kind {
        return match request {
            Request::Approve { .. } => Response::Context(Vec::new()),
            _ => Response::Approve(answer.approve),
        };
    }
    match request {
        // A fork's branches are answered request by request (`answer_request`).
        Request::Model(_) | Request::Done | Request::Fork(_) => Response::Model(reply(next_id)),
        Request::Tools { calls, .. } => Response::Tools(
            calls
                .iter()
                .map(|call| ToolCall {
                    result: Some(render(&answer.tool_result, words)),
                    ok: answer.tool_ok,
                    ..call.clone()
                })
                .collect(),
        ),
        Request::Validate { checks, .. } => Response::Validate(
            checks
                .iter()
                .zip(answer.verdicts.iter().chain(std::iter::repeat(&true)))
                .map(|(_, ok)| {
                    if *ok {
                        CheckResult::pass()
                    } else {
                        CheckResult::fail("generated failure")
                    }
                })
                .collect(),
        ),
        Request::Approve { .. } => Response::Approve(answer.approve),
        Request::Ask { .. } => Response::Answer(Some(render(&answer.tool_result, words))),
        Request::Context { sources, .. } => Response::Context(
            sources
                .iter()
                .map(|_| render(&answer.tool_result, words))
                .collect(),
        ),
    }
}

/// Answers `request` with `respond`; a fork's branches are each stepped to their end and
/// handed back one by one.
fn answer_request(
    machine: &mut Machine<'_>,
    request: &Request,
    mut respond: impl FnMut(&Request) -> Response,
) {
    match request {
        Request::Fork(branches) => {
            for branch in branches.clone() {
                let done = branch.run_with(&mut respond);
                machine.resume(Response::Branch(Box::new(done)));
            }
        }
        _ => machine.resume(respond(request)),
    }
}

/// `before` is still the start of `after`.
fn history_grew(before: &[Message], after: &[Message]) -> Result<(), String> {
    if after.len() < before.len() {
        return Err(format!(
            "history shrank from {} to {} messages",
            before.len(),
            after.len()
        ));
    }
    match before.iter().zip(after).position(|(old, new)| old != new) {
        Some(idx) => Err(format!("history message {idx} changed")),
        None => Ok(()),
    }
}

/// Runs `program` answering requests from `answers` (cycled); returns the number of steps.
fn drive(program: &Program, answers: &[Answer], checkpoint_every: usize) -> Result<usize, String> {
    let words = program_words(program);
    let options = Options {
        session_id: "prop0000".to_string(),
        task: "generated".to_string(),
        max_turns: Some(25),
        skip_prompts: false,
    };
    let mut machine = Machine::new(program, options.clone());
    let mut next_id = 0;
    for step in 0..answers.len() * 2 {
        if checkpoint_every > 0 && step % checkpoint_every == 0 && machine.at_boundary() {
            let checkpoint = machine.checkpoint().ok_or("no checkpoint at a boundary")?;
            let before = machine.run().history.clone();
            let restored = Machine::restore(program, options.clone(), &checkpoint);
            if let Ok(restored) = restored {
                if restored.run().history != before {
                    return Err("a restored checkpoint lost history".to_string());
                }
                machine = restored;
            }
        }
        let request = machine.step();
        if request == Request::Done {
            return Ok(step);
        }
        let before = machine.run().history.clone();
        answer_request(&mut machine, &request, |request| {
            respond(
                request,
                &answers[step % answers.len()],
                &words,
                &mut next_id,
            )
        });
        history_grew(&before, &machine.run().history)?;
    }
    Ok(answers.len() * 2)
}

proptest! {
    #![proptest_config(cases(200))]

    /// For any sequence of effect results, `step`/`resume` never panic and the history only
    /// grows (no message is dropped or rewritten), across checkpoints and restores too.
    #[test]
    fn machine_survives_any_effect_results(
        program in any::<Index>(),
        answers in proptest::collection::vec(answer(), 1..40),
        checkpoint_every in 0..6usize,
    ) {
        let programs = fixture_programs();
        let (path, program) = program.get(programs);
        let result = drive(program, &answers, checkpoint_every);
        prop_assert!(result.is_ok(), "{}: {:?}", path, result.err());
    }
}

// =============================================================================================
// Corrupted checkpoints (a session file edited, truncated or written by another version)

/// A checkpoint taken after a few turns of the keyword fixture.
fn sample_checkpoint(program: &Program) -> Json {
    let mut machine = Machine::new(
        program,
        Options {
            session_id: "ckpt0000".to_string(),
            task: "checkpoint".to_string(),
            max_turns: Some(10),
            skip_prompts: true,
        },
    );
    for text in [
        "HANDOFF TO DEVELOPER",
        "HANDOFF TO REVIEWER",
        "REVISION REQUIRED",
    ] {
        let request = machine.step();
        let response = match request {
            Request::Model(_) => Response::Model(Ok(ModelReply {
                text: text.to_string(),
                tool_calls: vec![ToolCall {
                    id: "call_1".to_string(),
                    name: "write_file".to_string(),
                    args: json!({"path": "a.txt"}),
                    result: None,
                    ok: false,
                    denied: None,
                }],
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    ..Usage::default()
                },
                ..ModelReply::default()
            })),
            Request::Tools { calls, .. } => Response::Tools(calls),
            Request::Validate { checks, .. } => {
                Response::Validate(checks.iter().map(|_| CheckResult::pass()).collect())
            }
            Request::Approve { .. } => Response::Approve(true),
            _ => break,
        };
        machine.resume(response);
        while !machine.at_boundary() {
            let request = machine.step();
            let response = match request {
                Request::Model(_) => Response::Model(Ok(ModelReply {
                    text: text.to_string(),
                    ..ModelReply::default()
                })),
                Request::Tools { calls, .. } => Response::Tools(calls),
                Request::Validate { checks, .. } => {
                    Response::Validate(checks.iter().map(|_| CheckResult::pass()).collect())
                }
                Request::Approve { .. } => Response::Approve(true),
                Request::Ask { .. } => Response::Answer(Some(String::new())),
                Request::Context { sources, .. } => {
                    Response::Context(sources.iter().map(|_| String::new()).collect())
                }
                Request::Fork(branches) => {
                    for branch in branches {
                        let done =
                            branch.run_with(&mut |_| Response::Model(Ok(ModelReply::default())));
                        machine.resume(Response::Branch(Box::new(done)));
                    }
                    continue;
                }
                Request::Done => break,
            };
            machine.resume(response);
        }
    }
    let checkpoint = machine.checkpoint().expect("a checkpoint between turns");
    let messages = checkpoint["Messages"].as_array().map_or(0, Vec::len);
    assert!(messages >= 4, "only {messages} messages in {checkpoint}");
    checkpoint
}

/// Every path to a value inside `json`, as indices into objects' and arrays' entries.
fn paths(json: &Json, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    out.push(prefix.clone());
    let children: Vec<&Json> = match json {
        Json::Object(map) => map.values().collect(),
        Json::Array(items) => items.iter().collect(),
        _ => return,
    };
    for (idx, child) in children.into_iter().enumerate() {
        prefix.push(idx);
        paths(child, prefix, out);
        prefix.pop();
    }
}

fn at_path<'j>(json: &'j mut Json, path: &[usize]) -> &'j mut Json {
    match path.split_first() {
        None => json,
        Some((&idx, rest)) => match json {
            Json::Object(map) => {
                let key = map.keys().nth(idx).cloned().unwrap();
                at_path(map.get_mut(&key).unwrap(), rest)
            }
            Json::Array(items) => at_path(&mut items[idx], rest),
            _ => unreachable!("paths only lead through containers"),
        },
    }
}

fn json_leaf() -> impl Strategy<Value = Json> {
    prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        Just(json!(i64::MAX)),
        Just(json!(u64::MAX)),
        Just(json!(-1)),
        Just(json!(1.5)),
        any_text(12).prop_map(Json::String),
        Just(json!([])),
        Just(json!({})),
    ]
}

proptest! {
    #![proptest_config(cases(300))]

    /// `Machine::restore` on a checkpoint with values replaced (wrong types, out-of-range
    /// numbers, unknown names) or removed returns an error or a machine that runs; never a
    /// panic.
    #[test]
    fn restore_never_panics_on_corrupted_checkpoints(
        edits in proptest::collection::vec((any::<Index>(), json_leaf(), any::<bool>()), 1..6),
    ) {
        let programs = fixture_programs();
        let (_, program) = programs
            .iter()
            .find(|(path, _)| path.ends_with("run/keyword/config.yaml"))
            .expect("the keyword run fixture");
        let mut checkpoint = sample_checkpoint(program);
        for (index, value, remove) in edits {
            let mut all = Vec::new();
            paths(&checkpoint, &mut Vec::new(), &mut all);
            let path = index.get(&all).clone();
            if remove && !path.is_empty() {
                let (last, parent) = path.split_last().unwrap();
                match at_path(&mut checkpoint, parent) {
                    Json::Object(map) => {
                        let key = map.keys().nth(*last).cloned().unwrap();
                        map.remove(&key);
                    }
                    Json::Array(items) => {
                        items.remove(*last);
                    }
                    _ => {}
                }
            } else {
                *at_path(&mut checkpoint, &path) = value;
            }
        }
        let options = Options {
            session_id: "ckpt0000".to_string(),
            task: "checkpoint".to_string(),
            max_turns: Some(20),
            skip_prompts: false,
        };
        if let Ok(mut machine) = Machine::restore(program, options, &checkpoint) {
            for _ in 0..10 {
                let request = machine.step();
                if request == Request::Done {
                    break;
                }
                let answer = Answer {
                    text: Text::Arbitrary("HANDOFF TO DEVELOPER".to_string()),
                    calls: Vec::new(),
                    usage: (1, 1),
                    model_error: false,
                    tool_ok: true,
                    tool_result: Text::Empty,
                    verdicts: Vec::new(),
                    approve: true,
                    wrong_kind: false,
                };
                let words = program_words(program);
                let mut next_id = 100;
                answer_request(&mut machine, &request, |request| {
                    respond(request, &answer, &words, &mut next_id)
                });
            }
        }
    }
}

// =============================================================================================
// Generated tama projects

/// The YAML of one FSM state's transitions: terminal, a goto, or keyed targets.
fn fsm_next(states: Vec<String>) -> impl Strategy<Value = String> {
    let target = prop_oneof![
        3 => prop::sample::select(states.clone()),
        1 => Just("~".to_string()),
        1 => any_text(6).prop_map(|text| serde_json::to_string(&text).unwrap()),
    ];
    prop_oneof![
        1 => Just(" ~".to_string()),
        2 => target.clone().prop_map(|target| format!(" {target}")),
        3 => proptest::collection::vec((prop::sample::select(WORDS), target), 0..4).prop_map(
            |keyed| {
                if keyed.is_empty() {
                    return " []".to_string();
                }
                keyed
                    .into_iter()
                    .map(|(key, target)| {
                        format!("\n    - {}: {target}", serde_json::to_string(key).unwrap())
                    })
                    .collect()
            }
        ),
        1 => value(2).prop_map(|tree| {
            let mut out = String::new();
            to_yaml(&tree, 4, &mut out);
            out.trim_end().to_string()
        }),
    ]
}

fn agent_md() -> impl Strategy<Value = String> {
    // FSM states are agents: the siblings, an unknown one, and now and then the FSM itself.
    let names = vec![
        "worker".to_string(),
        "critic".to_string(),
        "review".to_string(),
        "worker".to_string(),
        "critic".to_string(),
        "ghost".to_string(),
        "main".to_string(),
    ];
    (
        prop::sample::select(vec!["fsm", "fsm", "oneshot", "react", "critic", "nonsense"]),
        prop::sample::select(names.clone()),
        proptest::collection::vec((prop::sample::select(names.clone()), fsm_next(names)), 0..5),
        proptest::collection::vec((prop::sample::select(KEYS), value(2)), 0..2),
        prop::sample::select(vec![
            "---\n", "---\n", "---\n", "---\n", "", "---\r\n", "  ---\n",
        ]),
    )
        .prop_map(|(pattern, initial, states, extra, close)| {
            let mut out = format!("---\nname: main\npattern: {pattern}\ninitial: {initial}\n");
            if !states.is_empty() {
                out.push_str("states:\n");
                for (name, next) in states {
                    out.push_str(&format!("  {name}:{next}\n"));
                }
            }
            for (key, value) in extra {
                out.push_str(&key.to_lowercase());
                out.push(':');
                to_yaml(&value, 2, &mut out);
            }
            out.push_str(close);
            out.push_str("Body text.\n");
            out
        })
}

proptest! {
    #![proptest_config(cases(200))]

    /// A tama project whose entry `AGENT.md` front matter is generated (FSM states with
    /// terminal, goto and keyed transitions, unknown keys, a missing or odd closing line)
    /// compiles or reports diagnostics; a program round-trips through the IR text.
    #[test]
    fn tama_projects_never_panic(main in agent_md()) {
        let mut files = BTreeMap::from([
            (
                PathBuf::from("/p/tama.toml"),
                "[project]\nname = \"gen\"\nentrypoint = \"main\"\n".to_string(),
            ),
            (PathBuf::from("/p/agents/main/AGENT.md"), main),
        ]);
        for name in ["worker", "critic", "review"] {
            files.insert(
                PathBuf::from(format!("/p/agents/{name}/AGENT.md")),
                format!("---\nname: {name}\npattern: oneshot\n---\nDo {name} things.\n"),
            );
        }
        let reader = MemoryFiles(files);
        for input in ["/p", "/p/agents/main/AGENT.md"] {
            let compiled = fuseraft_compiler::compile(Path::new(input), &reader);
            if let Some(program) = &compiled.program {
                let printed = ir::print(program, &ir::PrintOptions::default());
                let back = ir::parse(&printed);
                prop_assert_eq!(back.as_ref(), Ok(program), "{}", printed);
            }
            let _ = fuseraft_compiler::check::check(&compiled);
        }
    }
}

// =============================================================================================
// Signal matching in one pass

/// Reply lines and keywords built from the pieces the matchers treat specially.
fn signal_text(lines: usize) -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "",
        " ",
        "\t",
        "*",
        "**",
        "_",
        "__",
        "a",
        "A",
        "b",
        "B",
        ".",
        ":",
        "+",
        "-",
        "é",
        "É",
        "\u{212a}",
        "k",
        "\u{a0}",
        "\u{3000}",
        "done",
        "DONE",
        "bugs found",
    ]);
    prop::collection::vec(prop::collection::vec(piece, 0..6), 0..lines).prop_map(|lines| {
        lines
            .into_iter()
            .map(|pieces| pieces.concat())
            .collect::<Vec<_>>()
            .join("\n")
    })
}

proptest! {
    #![proptest_config(cases(500))]

    /// The routing pass that reads a reply's lines once (`Matcher::find_all`) finds exactly the
    /// signals that each matcher finds on its own, whatever the mix of matchers.
    #[test]
    fn one_pass_matching_agrees_with_each_matcher(
        text in signal_text(12),
        keywords in prop::collection::vec((signal_text(2), 0..3usize), 0..12),
    ) {
        let matchers = [Matcher::Relaxed, Matcher::Strict, Matcher::Exact];
        let signals: Vec<(&str, Matcher)> = keywords
            .iter()
            .map(|(keyword, matcher)| (keyword.as_str(), matchers[*matcher]))
            .collect();
        let found = Matcher::find_all(&text, &signals);
        for ((keyword, matcher), hit) in signals.iter().zip(found) {
            prop_assert_eq!(hit, matcher.finds(&text, keyword), "{:?} {:?} in {:?}", matcher, keyword, text);
        }
    }
}
