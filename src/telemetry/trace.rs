//! A run's events as OpenTelemetry spans, after the GenAI semantic conventions: the session
//! (the root), each turn (`invoke_agent {agent}`), its model calls (`chat {model}`) and tool
//! calls (`execute_tool {name}`), failed validators, approvals, forks and their branches;
//! routing decisions and corrections are span events.
//!
//! The trace id and the root's span id are hashes of the session id, so a resumed run
//! continues its session's trace with no state kept: its own root span is a child of the
//! first run's.

use std::collections::HashMap;
use std::time::SystemTime;

use fuseraft_vm::event::{Event, EventKind, Outcome};
use fuseraft_vm::history::{Message, Role};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::Tracer;
use sha2::{Digest, Sha256};

use super::attributes::{self, Model};
use super::RunInfo;

/// The session's trace id: the first 16 bytes of a SHA-256 of its id.
pub fn trace_id(session: &str) -> TraceId {
    let digest = Sha256::digest(format!("fuseraft trace {session}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[15] |= 1; // never the invalid all-zero id
    TraceId::from_bytes(bytes)
}

/// The span id of the session's first run, the root of its trace.
pub fn root_span_id(session: &str) -> SpanId {
    let digest = Sha256::digest(format!("fuseraft root {session}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    bytes[7] |= 1;
    SpanId::from_bytes(bytes)
}

/// One model call's measurements, for the metrics.
pub struct Call {
    pub model: Model,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub seconds: f64,
}

/// A turn whose span is open.
struct Turn {
    cx: Context,
    agent: String,
    start: SystemTime,
    /// The newest event the turn's span carries; the span ends there.
    last: SystemTime,
}

/// The spans a run has open, keyed as its events name them.
pub struct Trace {
    tracer: Tracer,
    capture: bool,
    session: String,
    program: String,
    models: HashMap<String, Model>,
    default_model: Model,
    replay: bool,
    resumed: bool,
    root: Option<Context>,
    /// Turns under way, by state (a fork's branches run at once).
    turns: HashMap<String, Turn>,
    /// The turn that ended last: routing events after its `turn_end` still belong to it.
    ended: Option<Turn>,
    fork: Option<Context>,
    branches: HashMap<String, Context>,
    approval: Option<Context>,
}

impl Trace {
    pub fn new(tracer: Tracer, capture: bool, info: &RunInfo<'_>) -> Trace {
        let (models, default_model) = attributes::models(info.program, info.model_flag);
        Trace {
            tracer,
            capture,
            session: info.session.to_string(),
            program: info.program.name.clone(),
            models,
            default_model,
            replay: info.replay,
            resumed: info.resumed,
            root: None,
            turns: HashMap::new(),
            ended: None,
            fork: None,
            branches: HashMap::new(),
            approval: None,
        }
    }

    /// Opens, ends or annotates the spans `event` concerns; a model call comes back for
    /// the metrics.
    pub fn event(&mut self, event: &Event, history: &[Message]) -> Option<Call> {
        let now = SystemTime::now();
        self.open_root(event, now);
        match &event.kind {
            EventKind::SessionStart { .. } | EventKind::SessionResumed { .. } => {}
            EventKind::TurnStart { state } => self.turn_start(event, state, now),
            EventKind::TurnEnd { state, .. } => return self.turn_end(event, state, history, now),
            EventKind::ValidationFail {
                validator, error, ..
            } => self.validation(event, validator, error, now),
            EventKind::HitlRequested { from, to, signal } => {
                let name = format!("approval {from} -> {to}");
                let attrs = vec![
                    KeyValue::new("fuseraft.approval.from", from.clone()),
                    KeyValue::new("fuseraft.approval.to", to.clone()),
                    KeyValue::new("fuseraft.signal", signal.clone()),
                ];
                let parent = self.root.clone().unwrap_or_default();
                self.approval = Some(self.child(&parent, name, now, attrs));
            }
            EventKind::HitlAnswered { approved, .. } => {
                if let Some(cx) = self.approval.take() {
                    cx.span()
                        .set_attribute(KeyValue::new("fuseraft.approval.approved", *approved));
                    cx.span().end_with_timestamp(now);
                }
            }
            EventKind::ForkStart {
                state, branches, ..
            } => self.fork_start(state, branches, now),
            EventKind::BranchEnd { state } => {
                let branch = self.branch_of(event, state);
                if let Some(cx) = branch.and_then(|branch| self.branches.remove(&branch)) {
                    cx.span().end_with_timestamp(now);
                }
            }
            EventKind::ForkJoin { .. } => {
                if let Some(fork) = &self.fork {
                    let attrs = attributes::payload(&event.kind, self.capture);
                    fork.span()
                        .add_event_with_timestamp(event.name(), now, attrs);
                }
                self.fork_join(now);
            }
            EventKind::SessionEnd { .. } => self.session_end(event, now),
            _ => self.span_event(event, now),
        }
        None
    }

    /// The run's root span, opened by its first event.
    fn open_root(&mut self, event: &Event, now: SystemTime) {
        if self.root.is_some() {
            return;
        }
        let trace = trace_id(&self.session);
        let root = root_span_id(&self.session);
        let mut builder = self
            .tracer
            .span_builder(format!("session {}", self.program))
            .with_kind(SpanKind::Internal)
            .with_start_time(now)
            .with_attributes(attributes::root(
                &self.session,
                &self.program,
                self.replay,
                self.resumed,
            ));
        let parent = if self.resumed {
            // The first run's root, which this run's root hangs under.
            Context::new().with_remote_span_context(SpanContext::new(
                trace,
                root,
                TraceFlags::SAMPLED,
                true,
                TraceState::default(),
            ))
        } else {
            builder.trace_id = Some(trace);
            builder.span_id = Some(root);
            Context::new()
        };
        let span = self.tracer.build_with_context(builder, &parent);
        let cx = Context::new().with_span(span);
        if let (true, EventKind::SessionStart { task, .. }) = (self.capture, &event.kind) {
            cx.span()
                .set_attribute(KeyValue::new("input.value", task.clone()));
            cx.span()
                .set_attribute(KeyValue::new("fuseraft.task", task.clone()));
        }
        self.root = Some(cx);
    }

    /// A child span of `parent`, started at `start`.
    fn child(
        &self,
        parent: &Context,
        name: String,
        start: SystemTime,
        attrs: Vec<KeyValue>,
    ) -> Context {
        let builder = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(attrs);
        let span = self.tracer.build_with_context(builder, parent);
        Context::new().with_span(span)
    }

    fn turn_start(&mut self, event: &Event, state: &str, now: SystemTime) {
        self.close_ended();
        let agent = event.agent.clone().unwrap_or_else(|| state.to_string());
        let branch = self.branch_of(event, state);
        let parent = branch
            .and_then(|branch| self.branches.get(&branch))
            .or(self.fork.as_ref())
            .or(self.root.as_ref())
            .cloned()
            .unwrap_or_default();
        let attrs = attributes::turn(&agent, state, event.turn);
        let cx = self.child(&parent, format!("invoke_agent {agent}"), now, attrs);
        let turn = Turn {
            cx,
            agent,
            start: now,
            last: now,
        };
        if let Some(open) = self.turns.insert(state.to_string(), turn) {
            open.cx.span().end_with_timestamp(open.last);
        }
    }

    fn turn_end(
        &mut self,
        event: &Event,
        state: &str,
        history: &[Message],
        now: SystemTime,
    ) -> Option<Call> {
        let mut turn = self.turns.remove(state)?;
        turn.last = now;
        let model = self
            .models
            .get(&turn.agent)
            .cloned()
            .unwrap_or_else(|| self.default_model.clone());
        let EventKind::TurnEnd {
            input_tokens,
            output_tokens,
            cache_read_tokens,
            cache_write_tokens,
            ..
        } = &event.kind
        else {
            return None;
        };
        let mut attrs = attributes::chat(&model);
        attrs.extend(attributes::usage(
            *input_tokens,
            *output_tokens,
            *cache_read_tokens,
            *cache_write_tokens,
        ));
        let messages: Vec<_> = history
            .iter()
            .filter(|message| message.turn == event.turn && message.agent == turn.agent)
            .collect();
        if self.capture {
            attrs.extend(attributes::content(&messages));
        }
        let chat = self.child(&turn.cx, format!("chat {}", model.id), turn.start, attrs);
        chat.span().end_with_timestamp(now);
        let calls = messages
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .flat_map(|message| &message.tool_calls);
        for call in calls {
            let attrs = attributes::tool(call, self.capture);
            let tool = self.child(&turn.cx, format!("execute_tool {}", call.name), now, attrs);
            if !call.ok {
                tool.span().set_status(Status::error(
                    call.denied
                        .as_ref()
                        .map_or("the tool failed", |_| "the tool call was refused"),
                ));
            }
            tool.span().end_with_timestamp(now);
        }
        turn.cx.span().set_attributes(attributes::usage(
            *input_tokens,
            *output_tokens,
            *cache_read_tokens,
            *cache_write_tokens,
        ));
        let seconds = now
            .duration_since(turn.start)
            .unwrap_or_default()
            .as_secs_f64();
        self.close_ended();
        self.ended = Some(turn);
        Some(Call {
            model,
            input_tokens: *input_tokens,
            output_tokens: *output_tokens,
            seconds,
        })
    }

    /// A failed validator: a span of its own under the turn it judged, in error.
    fn validation(&mut self, event: &Event, validator: &str, error: &str, now: SystemTime) {
        let parent = self.target(event, now);
        let mut attrs = vec![KeyValue::new("fuseraft.validator", validator.to_string())];
        attrs.extend(attributes::payload(&event.kind, self.capture));
        let cx = self.child(&parent, format!("validate {validator}"), now, attrs);
        cx.span().set_status(Status::error(error.to_string()));
        cx.span().end_with_timestamp(now);
    }

    fn fork_start(&mut self, state: &str, branches: &[String], now: SystemTime) {
        self.close_ended();
        let parent = self.root.clone().unwrap_or_default();
        let attrs = vec![
            KeyValue::new("fuseraft.state", state.to_string()),
            KeyValue::new("fuseraft.fork.branches", branches.len() as i64),
        ];
        let fork = self.child(&parent, format!("fork {state}"), now, attrs);
        for branch in branches {
            let attrs = vec![KeyValue::new("fuseraft.state", branch.clone())];
            let cx = self.child(&fork, format!("branch {branch}"), now, attrs);
            self.branches.insert(branch.clone(), cx);
        }
        self.fork = Some(fork);
    }

    /// The open branch an event of a fork concerns: `fork_start` names branches by agent,
    /// their turns and `branch_end` by state.
    fn branch_of(&self, event: &Event, state: &str) -> Option<String> {
        [Some(state), event.agent.as_deref()]
            .into_iter()
            .flatten()
            .find(|name| self.branches.contains_key(*name))
            .map(str::to_string)
    }

    fn fork_join(&mut self, now: SystemTime) {
        for (_, turn) in self.turns.drain() {
            turn.cx.span().end_with_timestamp(turn.last);
        }
        self.close_ended();
        for (_, cx) in self.branches.drain() {
            cx.span().end_with_timestamp(now);
        }
        if let Some(cx) = self.fork.take() {
            cx.span().end_with_timestamp(now);
        }
    }

    /// An event with no span of its own, as a span event on the turn it concerns (the
    /// root's when none).
    fn span_event(&mut self, event: &Event, now: SystemTime) {
        let target = self.target(event, now);
        target.span().add_event_with_timestamp(
            event.name(),
            now,
            attributes::payload(&event.kind, self.capture),
        );
        if let EventKind::ModelError { error } = &event.kind {
            target.span().set_status(Status::error(error.clone()));
        }
    }

    /// The span an event belongs to: its agent's turn under way, the turn that just ended,
    /// or the root. A turn it goes to lasts until it.
    fn target(&mut self, event: &Event, now: SystemTime) -> Context {
        let agent = event.agent.as_deref();
        if let Some(turn) = self
            .turns
            .values_mut()
            .find(|turn| Some(turn.agent.as_str()) == agent)
        {
            turn.last = now;
            return turn.cx.clone();
        }
        if let Some(turn) = self.ended.as_mut() {
            turn.last = now;
            return turn.cx.clone();
        }
        self.root.clone().unwrap_or_default()
    }

    fn close_ended(&mut self) {
        if let Some(turn) = self.ended.take() {
            turn.cx.span().end_with_timestamp(turn.last);
        }
    }

    fn session_end(&mut self, event: &Event, now: SystemTime) {
        self.fork_join(now);
        if let Some(cx) = self.approval.take() {
            cx.span().end_with_timestamp(now);
        }
        let Some(root) = self.root.take() else {
            return;
        };
        if let EventKind::SessionEnd {
            outcome, reason, ..
        } = &event.kind
        {
            root.span()
                .set_attributes(attributes::payload(&event.kind, self.capture));
            if !matches!(outcome, Outcome::Completed) {
                let why = reason
                    .clone()
                    .unwrap_or_else(|| outcome.as_str().to_string());
                root.span().set_status(Status::error(why));
            }
        }
        root.span().end_with_timestamp(now);
    }

    /// Ends every span still open (a run that ended without `session_end`).
    pub fn close(&mut self) {
        let now = SystemTime::now();
        self.fork_join(now);
        if let Some(cx) = self.approval.take() {
            cx.span().end_with_timestamp(now);
        }
        if let Some(root) = self.root.take() {
            root.span().end_with_timestamp(now);
        }
    }
}
