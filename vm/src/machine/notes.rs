//! What the machine answers from the run itself: the notes tools (SessionContext,
//! Scratchpad, Chatroom; `tools::notes`), permitted by the one permission authority
//! (`tools::permissions::resolve`) before they run, and the context sources that read the
//! run (`session_context`, `own_history:N`), merged in order with the blocks the driver read
//! from disk. Also the assembly of an agent's own `Context` sources before its model call,
//! and the session context shown to the agents that declare none.

use fuseraft_compiler::ir::{ContextMode, ContextSource, Effect, SourceKind, Tool};

use super::Machine;
use crate::context_block;
use crate::effect::Request;
use crate::event::EventKind;
use crate::history::{Role, ToolCall};
use crate::tools::notes::{self, Caller};
use crate::tools::permissions;

/// How many replies `own_history` shows when it names no number (upstream's 6).
const OWN_HISTORY_DEFAULT: usize = 6;

impl Machine<'_> {
    /// Answers `call` when it names a notes tool, for `agent`, and says whether it did. A
    /// tool the agent is not offered is refused as the driver refuses one.
    pub(super) fn answer_note(&mut self, agent: &str, call: &mut ToolCall) -> bool {
        let answered = |tool: Tool| notes::answers(tool) || tool == Tool::ReadSkill;
        if !Tool::resolve(&call.name).is_some_and(answered) {
            return false;
        }
        let program = self.program;
        let agent_ir = program.agent_named(agent).map(|id| program.agent(id));
        match permissions::resolve(call, agent_ir) {
            Ok(tool) => {
                let caller = Caller {
                    agent,
                    turn: self.run.turn,
                };
                let (text, ok) = match tool {
                    Tool::ReadSkill => self.read_skill(call.arg("name").unwrap_or_default()),
                    _ => notes::answer(&mut self.run.notes, tool, &call.args, caller),
                };
                call.result = Some(text);
                call.ok = ok;
            }
            Err(denial) => {
                self.emit(
                    Some(agent),
                    EventKind::ToolBlocked {
                        tool: call.name.clone(),
                        result: denial.text.clone(),
                    },
                );
                denial.answer(call);
            }
        }
        true
    }

    /// `read_skill`: the skill's instructions under a `# Skill:` header.
    fn read_skill(&self, name: &str) -> (String, bool) {
        let skills = &self.program.skills;
        match skills.iter().find(|skill| skill.name == name.trim()) {
            Some(skill) => (format!("# Skill: {}\n\n{}", skill.name, skill.body), true),
            None => {
                let known: Vec<&str> = skills.iter().map(|skill| skill.name.as_str()).collect();
                let text = format!(
                    "[ERROR] no skill `{name}`; the skills are: {}",
                    known.join(", ")
                );
                (text, false)
            }
        }
    }

    /// The `HandoffContext` sources of exit `idx` of the current state.
    pub(super) fn exit_sources(&self, idx: usize) -> Vec<ContextSource> {
        self.program.state(self.run.state).exits[idx]
            .effects
            .iter()
            .filter_map(|effect| match effect {
                Effect::InjectContext(sources) => Some(sources.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// The blocks of exit `idx`'s sources: `read` holds the driver's, in order, for the
    /// sources the run does not answer.
    pub(super) fn with_run_blocks(&self, idx: usize, read: Vec<String>) -> Vec<String> {
        self.merge_blocks(&self.exit_sources(idx), read, None)
    }

    /// One block per source, in order: the run's own for `session_context` and
    /// `own_history`, the next of `read` for the others.
    fn merge_blocks(
        &self,
        sources: &[ContextSource],
        read: Vec<String>,
        agent: Option<&str>,
    ) -> Vec<String> {
        let mut read = read.into_iter();
        sources
            .iter()
            .map(|source| {
                if context_block::from_run(source) {
                    context_block::render(source, &self.run_source(source, agent))
                } else {
                    read.next().unwrap_or_else(|| {
                        context_block::render(source, "(the source was not read)")
                    })
                }
            })
            .collect()
    }

    /// The text of a source the run answers.
    fn run_source(&self, source: &ContextSource, agent: Option<&str>) -> String {
        match source.kind() {
            SourceKind::SessionContext => match &self.run.notes.session_context {
                Some(context) => context.text.clone(),
                None => "(no session context has been written yet)".to_string(),
            },
            SourceKind::OwnHistory(count) => {
                let Some(agent) = agent else {
                    return "(`own_history` is only available in an agent's `Context`)".to_string();
                };
                let count = count.unwrap_or(OWN_HISTORY_DEFAULT);
                let own: Vec<String> = self
                    .run
                    .history
                    .iter()
                    .filter(|message| {
                        message.role == Role::Assistant
                            && message.agent.eq_ignore_ascii_case(agent)
                            && !message.content.is_empty()
                    })
                    .map(|message| format!("(turn {}) {}", message.turn, message.content))
                    .collect();
                if own.is_empty() {
                    return "(no earlier replies of yours)".to_string();
                }
                own[own.len().saturating_sub(count)..].join("\n\n")
            }
            _ => String::new(),
        }
    }

    /// The session context as a prompt shows it to an agent that declares no `Context`
    /// sources (upstream's `[Session Context]` message after the task), if one was written.
    pub(super) fn session_context_message(&self) -> Option<String> {
        let context = self.run.notes.session_context.as_ref()?;
        Some(format!(
            "[Session Context]\n\n{}",
            context_block::capped(&context.text, context_block::DEFAULT_MAX_CHARS)
        ))
    }

    /// The `Context` sources `agent` assembles its prompt from in the current state, if any
    /// (an agent whose context is only its sources and the task).
    fn agent_sources(&self, agent: &str) -> Option<Vec<ContextSource>> {
        let program = self.program;
        let agent = program.agent(program.agent_named(agent)?);
        let mode = program
            .state(self.run.state)
            .context
            .unwrap_or(agent.context.mode);
        (mode == ContextMode::Artifacts && !agent.context.sources.is_empty())
            .then(|| agent.context.sources.clone())
    }

    /// Starts assembling `agent`'s own `Context` sources: the request that reads those on
    /// disk, or `None` when nothing needs reading (the blocks, if any, are ready).
    pub(super) fn assemble(&mut self, agent: &str) -> Option<Request> {
        self.assembled = None;
        if self.options.skip_prompts {
            return None;
        }
        let sources = self.agent_sources(agent)?;
        let on_disk: Vec<ContextSource> = sources
            .iter()
            .filter(|source| !context_block::from_run(source))
            .cloned()
            .collect();
        if on_disk.is_empty() {
            self.on_assembled(agent, &sources, Vec::new());
            return None;
        }
        Some(Request::Context {
            sources: on_disk,
            session_id: self.run.session_id.clone(),
        })
    }

    /// The driver read `agent`'s sources: keep the blocks and ask the model.
    pub(super) fn on_assembly(&mut self, agent: String, read: Vec<String>) {
        let sources = self.agent_sources(&agent).unwrap_or_default();
        self.on_assembled(&agent, &sources, read);
        let request = self.start_model(agent);
        self.pending = Some(request);
    }

    fn on_assembled(&mut self, agent: &str, sources: &[ContextSource], read: Vec<String>) {
        let blocks = self.merge_blocks(sources, read, Some(agent));
        let chars: usize = blocks.iter().map(|block| block.chars().count()).sum();
        self.emit(
            Some(agent),
            EventKind::ContextAssembly {
                sources: blocks.len(),
                chars,
            },
        );
        self.assembled = Some((agent.to_string(), blocks));
    }
}
