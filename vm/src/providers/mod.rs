//! The network model providers behind the `model_call` effect: OpenAI-compatible chat
//! completions, Anthropic Messages and Ollama's native `/api/chat`, all streamed.
//!
//! [`Providers::new`] resolves every model the program uses (agents and `select` managers)
//! into a client once, before the first call: the provider, the URL, the key read from the
//! environment. A missing key fails there, naming the agent, the provider and the variable.
//! [`Providers`] then answers [`ModelCall`]s by routing each to the client of its model.
//!
//! Which model: `--model PROVIDER:MODEL` replaces every agent's provider and model id (the
//! config's temperature, max tokens and reasoning effort stay; its endpoint and key variable
//! stay only when the provider is unchanged); otherwise the config's model. Which provider:
//! the explicit one (the `PROVIDER:` of `--model`, or the config's `Provider`), else inferred:
//! a `claude-*` model id or an `anthropic.com` endpoint is Anthropic; an endpoint ending in
//! `/api` or on port 11434 (not `/v1`) is Ollama native; anything else is OpenAI-compatible.
//! `--endpoint` replaces every endpoint.
//!
//! Keys: `--api-key-env VAR` (the user's choice, sent wherever the model goes), else the
//! model's `ApiKeyEnvVar`, else the provider's well-known variable (`OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, `AZURE_OPENAI_API_KEY`), read only for that provider's own host. A
//! well-known variable goes only over https to its owner's hosts or to an `--endpoint`
//! the user gave; a config aiming one elsewhere is refused before the first call
//! (`keys.rs`). Endpoints are parsed by the `url` crate (`endpoint.rs`). Keys never leave
//! `Secret`: Debug output and every error string are redacted.
//! `http.rs` is the only file here (and in the crate) that names reqwest.

mod anthropic;
mod body;
mod endpoint;
mod fit;
mod http;
mod keys;
mod limits;
mod memory_webhook;
mod ollama;
mod openai;
mod openai_body;
mod openai_chunk;
mod openai_framed;
mod openai_stream;
mod pricing;
mod reply_format;
mod resolve;
mod retry;
mod sse;
mod timeouts;

pub use memory_webhook::WebhookConfig;

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fuseraft_compiler::ir::{self, StateKind};

pub use self::keys::is_well_known as is_well_known_key;
use self::resolve::{effective_model, parse_model_flag, Given};
pub(crate) use self::resolve::{Kind, Target};
pub use self::timeouts::TimeoutFlags;
pub(crate) use self::timeouts::Timeouts;
use crate::effect::{ChatRole, ModelCall, ModelReply};
use crate::event::EventKind;
pub use crate::model_windows::BYTES_PER_TOKEN;
pub use crate::model_windows::{context_window, known_windows, TABLE_DATE as WINDOW_TABLE_DATE};
use crate::models::{Cost, Models};
use crate::notices::Notices;
pub use fuseraft_compiler::ir::list_prices::TABLE_DATE as PRICE_TABLE_DATE;

/// Command-line overrides of the configured models.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--model PROVIDER:MODEL`: the model every agent and manager uses.
    pub model: Option<String>,
    /// `--endpoint URL`: the endpoint every call goes to. Given by the user, so any key
    /// (a well-known provider key too) may go there.
    pub endpoint: Option<String>,
    /// `--api-key-env VAR`: the variable whose key every call carries, wherever it goes
    /// (the user's choice, unlike a config's `ApiKeyEnvVar`).
    pub api_key_env: Option<String>,
    /// `--timeout`, `--idle-timeout`, `--connect-timeout`: each beats every model's own
    /// timeout key, which beats the default of [`Settings`].
    pub timeouts: TimeoutFlags,
}

/// Resilience settings.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The overall cap of one attempt, from sending the request to the end of the stream
    /// (default 30 minutes: a slow but steady stream is ended by the idle timeout only when
    /// it stalls, not cut at a fixed time).
    pub timeout: Duration,
    /// The longest wait for a connection to be established.
    pub connect_timeout: Duration,
    /// Retries after the first attempt (on 429, 408, 409, 5xx, connection errors,
    /// truncated streams and timeouts).
    pub max_retries: u32,
    /// The first backoff; doubled per retry, with jitter, capped at 30 s.
    pub base_backoff: Duration,
    /// The most a reply may hold: streamed text plus tool names and arguments, in bytes.
    /// The response body as received is capped at 16 times this (framing, usage events),
    /// and one line of a stream at twice this plus 64 KiB. Exceeding any is a final error.
    pub max_response_bytes: usize,
    /// The longest wait for the next bytes of a response (headers or body) before the
    /// attempt fails as stalled (retried like a timeout).
    pub idle_timeout: Duration,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            timeout: Duration::from_secs(30 * 60),
            connect_timeout: Duration::from_secs(30),
            max_retries: 4,
            base_backoff: Duration::from_millis(500),
            max_response_bytes: 4 * 1024 * 1024,
            idle_timeout: Duration::from_secs(60),
        }
    }
}

/// Receives text as it streams in: `(agent, text delta)`.
pub type TokenSink = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// The network providers, one client per distinct model of the program.
pub struct Providers {
    http: http::Http,
    clients: Vec<Target>,
    /// Each configured model (as the machine passes it in a call) → its client.
    routes: Vec<(ir::Model, usize)>,
    /// The client for calls whose agent names no model (`--model`).
    fallback: Option<usize>,
    on_token: Option<TokenSink>,
    /// Retries, requests cut to fit a context window and memory webhook failures, as events
    /// for the driver to hand out (`notices.rs`).
    notices: Notices,
    /// Per client: its server refused a streamed request and answered an unstreamed one,
    /// so the rest of the run asks it without streaming.
    unstreamed: Vec<AtomicBool>,
    /// Per client: its server refused a reply format, so the rest of the run asks it for
    /// none.
    unformatted: Vec<AtomicBool>,
    /// Each agent's `FunctionChoice`.
    choices: Vec<(String, ir::ToolChoice)>,
    /// Replies whose server reported no token usage.
    unreported: AtomicU32,
    /// Per client: its model's price, if known (`pricing.rs`).
    prices: Vec<Option<ir::Pricing>>,
    /// Per client: the timeouts of its requests.
    timeouts: Vec<Timeouts>,
    /// The memory webhook, when the config names one.
    memory: Option<memory_webhook::Webhook>,
    /// What the replies so far cost.
    cost: Mutex<Cost>,
    /// Each agent's last OpenAI request body, kept so the next one writes only the
    /// messages it adds instead of serialising the history again (`openai_body.rs`).
    openai_bodies: Mutex<openai_body::Bodies>,
}

impl fmt::Debug for Providers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Providers")
            .field("http", &self.http)
            .field("clients", &self.clients)
            .field("fallback", &self.fallback)
            .field("on_token", &self.on_token.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Providers {
    /// Builds a client for every distinct model the program uses (agents and select
    /// managers), reading keys through `env` (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
    /// `AZURE_OPENAI_API_KEY`, or the model's `ApiKeyEnvVar`). A missing key is an error
    /// naming the agent, the provider and the variable, before any call. Ollama and
    /// OpenAI-compatible servers other than OpenAI's own need no key.
    pub fn new(
        program: &ir::Program,
        overrides: &Overrides,
        settings: Settings,
        env: &dyn Fn(&str) -> Option<String>,
        on_token: Option<TokenSink>,
    ) -> Result<Providers, String> {
        let (users, modelless) = users_of(program);
        Providers::with_users(
            program, &users, modelless, overrides, settings, env, on_token,
        )
    }

    /// A client for one model a file names (an eval suite's judge, as `who`): its endpoint
    /// and key variable are the file's, judged as a config's are (a well-known key goes
    /// only over https to its provider's hosts), never as the command line's. Every call
    /// goes to it.
    pub fn for_model(
        program: &ir::Program,
        who: &str,
        model: &ir::Model,
        settings: Settings,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Providers, String> {
        let users = [(who.to_string(), model)];
        let none = Overrides::default();
        let mut providers =
            Providers::with_users(program, &users, None, &none, settings, env, None)?;
        providers.fallback = Some(0);
        Ok(providers)
    }

    fn with_users(
        program: &ir::Program,
        users: &[(String, &ir::Model)],
        modelless: Option<String>,
        overrides: &Overrides,
        settings: Settings,
        env: &dyn Fn(&str) -> Option<String>,
        on_token: Option<TokenSink>,
    ) -> Result<Providers, String> {
        let forced = match &overrides.model {
            Some(text) => Some(parse_model_flag(text)?),
            None => None,
        };
        let given = Given {
            endpoint: overrides.endpoint.is_some(),
            api_key_env: overrides
                .api_key_env
                .as_ref()
                .map(|variable| variable.trim().to_string()),
        };
        if given.api_key_env.as_deref() == Some("") {
            return Err("--api-key-env names no variable".to_string());
        }
        let mut clients: Vec<Target> = Vec::new();
        let mut routes: Vec<(ir::Model, usize)> = Vec::new();
        let mut resolved: Vec<(ir::Model, usize)> = Vec::new();
        let mut add =
            |who: &str, effective: ir::Model, clients: &mut Vec<Target>| -> Result<usize, String> {
                if let Some((_, idx)) = resolved.iter().find(|(model, _)| *model == effective) {
                    return Ok(*idx);
                }
                let target = Target::resolve(who, &effective, &given, env)?;
                clients.push(target);
                resolved.push((effective, clients.len() - 1));
                Ok(clients.len() - 1)
            };
        for (who, model) in users {
            if routes.iter().any(|(known, _)| known == *model) {
                continue;
            }
            let effective = effective_model(Some(model), forced.as_ref(), overrides)?;
            let idx = add(who, effective, &mut clients)?;
            routes.push(((*model).clone(), idx));
        }
        let fallback = match (&forced, modelless) {
            (Some(_), modelless) => {
                let who = modelless.unwrap_or_else(|| "`--model`".to_string());
                let effective = effective_model(None, forced.as_ref(), overrides)?;
                Some(add(&who, effective, &mut clients)?)
            }
            // Refused before any turn: the run would fail at that caller's first call.
            (None, Some(who)) => {
                return Err(format!(
                    "{who} has no model: give it a `Model` in the config, pass `--model PROVIDER:MODEL` (e.g. `openai:gpt-4o-mini`), or answer every call from a replay file with `--replay FILE`"
                ))
            }
            (None, None) => None,
        };
        // `resolved` holds each client's effective model, in client order.
        let prices = resolved
            .iter()
            .map(|(model, idx)| {
                pricing::price(clients[*idx].kind, &clients[*idx].model, model.pricing)
            })
            .collect();
        let timeouts: Vec<Timeouts> = resolved
            .iter()
            .map(|(model, _)| Timeouts::of(model, &overrides.timeouts, &settings))
            .collect();
        let connects: Vec<Duration> = timeouts.iter().map(|timeouts| timeouts.connect).collect();
        Ok(Providers {
            http: http::Http::new(settings, &connects)?,
            unstreamed: clients.iter().map(|_| AtomicBool::new(false)).collect(),
            unformatted: clients.iter().map(|_| AtomicBool::new(false)).collect(),
            prices,
            timeouts,
            clients,
            routes,
            fallback,
            on_token,
            notices: Notices::default(),
            choices: program
                .agents
                .iter()
                .map(|agent| (agent.name.clone(), agent.tool_choice))
                .collect(),
            unreported: AtomicU32::new(0),
            cost: Mutex::new(Cost::default()),
            openai_bodies: Mutex::new(openai_body::Bodies::default()),
            memory: None,
        })
    }

    /// Loads each agent's memory from a webhook before its turns and saves its turns there
    /// (`Memory: { Provider: webhook }`).
    pub fn with_memory_webhook(mut self, config: WebhookConfig) -> Result<Providers, String> {
        self.memory = Some(memory_webhook::Webhook::new(config)?);
        Ok(self)
    }

    /// `call`, fitted to the context window of `target`'s model when it is known and the
    /// request exceeds it (`fit.rs`); an error when it cannot fit.
    fn fitted<'c>(
        &self,
        target: &Target,
        call: &'c ModelCall,
    ) -> Result<std::borrow::Cow<'c, ModelCall>, String> {
        let Some(window) = target.context_window else {
            return Ok(std::borrow::Cow::Borrowed(call));
        };
        // Room for the reply: what the request asks for, else what the provider defaults to.
        let reserve = target
            .max_tokens
            .unwrap_or((window / 4).min(resolve::DEFAULT_REPLY_TOKENS));
        match fit::fit(call, window, reserve, &target.model)? {
            None => Ok(std::borrow::Cow::Borrowed(call)),
            Some(fitted) => {
                let kind = EventKind::RequestFitted {
                    model: target.model.clone(),
                    window,
                    messages_left_out: fitted.dropped,
                    tokens: fitted.tokens,
                };
                self.notices.push(&call.agent, kind);
                Ok(std::borrow::Cow::Owned(fitted.call))
            }
        }
    }

    fn target(&self, call: &ModelCall) -> Result<(usize, &Target), String> {
        let idx = match &call.model {
            Some(model) => self
                .routes
                .iter()
                .find(|(known, _)| *known == **model)
                .map(|(_, idx)| *idx)
                .or(self.fallback)
                .ok_or_else(|| {
                    format!(
                        "agent `{}`: model `{}` was not among the program's models at start",
                        call.agent, model.id
                    )
                })?,
            None => self.fallback.ok_or_else(|| {
                format!(
                    "agent `{}` has no model: pass --model PROVIDER:MODEL or --replay FILE",
                    call.agent
                )
            })?,
        };
        Ok((idx, &self.clients[idx]))
    }

    /// The `FunctionChoice` of the calling agent (`auto` for a `select` manager).
    fn choice(&self, agent: &str) -> ir::ToolChoice {
        self.choices
            .iter()
            .find(|(name, _)| name == agent)
            .map_or(ir::ToolChoice::Auto, |(_, choice)| *choice)
    }
}

/// The `FunctionChoice` a request of a turn is sent with. `required` forces a tool call in
/// the turn's first request only: once tools ran (the request goes on after their results),
/// it is sent as `none`, as Semantic Kernel (upstream's engine) stops advertising the
/// functions after the first request; forced again, a model would call tools until the
/// turn's limit of calls and never answer.
fn turn_choice(choice: ir::ToolChoice, call: &ModelCall) -> ir::ToolChoice {
    let after_tools = call
        .messages
        .last()
        .is_some_and(|message| message.role == ChatRole::Tool);
    if choice == ir::ToolChoice::Required && after_tools {
        ir::ToolChoice::None
    } else {
        choice
    }
}

/// The model `PROVIDER:MODEL` names (as `--model` spells it), with nothing else set.
pub fn named_model(text: &str) -> Result<ir::Model, String> {
    let flag = parse_model_flag(text)?;
    effective_model(None, Some(&flag), &Overrides::default())
}

/// Who in `program` calls a model, with the model (agents, their sub-agents, select
/// managers, the compaction model), and the first caller that names none.
fn users_of(program: &ir::Program) -> (Vec<(String, &ir::Model)>, Option<String>) {
    let mut users: Vec<(String, &ir::Model)> = Vec::new();
    let mut modelless: Option<String> = None;
    for agent in &program.agents {
        match &agent.model {
            Some(model) => users.push((format!("agent `{}`", agent.name), model)),
            None => {
                modelless.get_or_insert_with(|| format!("agent `{}`", agent.name));
            }
        }
        // A sub-agent's own model (`SubAgentModel`), when it has one.
        if let Some(model) = &agent.sub_agent.model {
            users.push((format!("the sub-agent of agent `{}`", agent.name), model));
        }
    }
    for state in &program.states {
        if let StateKind::Select(select) = &state.kind {
            match &select.manager {
                Some(model) => {
                    users.push((format!("the manager of state `{}`", state.name), model))
                }
                None => {
                    modelless
                        .get_or_insert_with(|| format!("the manager of state `{}`", state.name));
                }
            }
        }
    }
    if let Some(model) = &program.compaction_model {
        users.push((
            "the compaction model (`Compaction.Model`)".to_string(),
            model,
        ));
    }
    (users, modelless)
}

impl Models for Providers {
    async fn call(&self, call: &ModelCall) -> Result<ModelReply, String> {
        let memory_notice = |text: &str| {
            let kind = EventKind::Warning {
                message: text.to_string(),
                reason: Some("memory_webhook".to_string()),
            };
            self.notices.push(&call.agent, kind);
        };
        let remembered = match &self.memory {
            Some(memory) => memory.remembered(call, &memory_notice).await,
            None => None,
        };
        let reply = self.call_model(remembered.as_ref().unwrap_or(call)).await;
        if let (Some(memory), Ok(reply)) = (&self.memory, &reply) {
            memory.after(call, reply, &memory_notice).await;
        }
        reply
    }

    fn usage_unreported(&self) -> u32 {
        self.unreported.load(Ordering::Relaxed)
    }

    fn cost(&self) -> Cost {
        self.cost.lock().map(|cost| *cost).unwrap_or_default()
    }

    fn notices(&self) -> Option<&Notices> {
        Some(&self.notices)
    }
}

impl Providers {
    /// One call to the model `call` is for.
    async fn call_model(&self, call: &ModelCall) -> Result<ModelReply, String> {
        let (idx, target) = self.target(call)?;
        let call = &*self.fitted(target, call)?;
        let sink = self.on_token.clone();
        let agent = call.agent.queue();
        let agent = agent.as_ref();
        let choice = turn_choice(self.choice(agent), call);
        let notice = |kind: EventKind| self.notices.push(&call.agent, kind);
        let how = retry::How {
            unstreamed: &self.unstreamed[idx],
            unformatted: &self.unformatted[idx],
            notice: &notice,
            timeouts: self.timeouts[idx],
        };
        let reply = match target.kind {
            Kind::OpenAi { .. } => {
                let post = {
                    let mut bodies = self
                        .openai_bodies
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    openai::request(target, call, choice, &mut bodies)
                };
                self.http
                    .send(&post, || openai::Stream::new(agent, sink.clone()), &how)
                    .await
            }
            Kind::Anthropic => {
                let post = anthropic::request(target, call, choice);
                self.http
                    .send(&post, || anthropic::Stream::new(agent, sink.clone()), &how)
                    .await
            }
            Kind::Ollama => {
                let post = ollama::request(target, call, choice);
                self.http
                    .send(&post, || ollama::Stream::new(agent, sink.clone()), &how)
                    .await
            }
        }?;
        let mut reply = reply;
        let unreported = reply.usage == crate::history::Usage::default();
        if unreported {
            self.unreported.fetch_add(1, Ordering::Relaxed);
        }
        // A reply without usage has a cost, just not a known one.
        reply.cost = self.prices[idx]
            .filter(|_| !unreported)
            .map(|price| price_reply(&price, &reply));
        if let Ok(mut cost) = self.cost.lock() {
            cost.add(reply.cost);
        }
        Ok(reply)
    }
}

/// What `reply` cost at `price`.
pub(crate) fn price_reply(price: &ir::Pricing, reply: &ModelReply) -> f64 {
    price.cost(
        reply.usage.input_tokens,
        reply.usage.cache_read_tokens,
        reply.usage.output_tokens,
    )
}

/// An API key. Its Debug output is redacted, and it is only read to build the header.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// `text` with every run of 6 or more characters that also occurs in the key replaced by
/// `<redacted>` (servers echo keys whole or masked: `sk-proj-***…abcd`).
pub(crate) fn redact(text: &str, secret: &Secret) -> String {
    const MIN: usize = 6;
    let key = secret.expose();
    if key.is_empty() {
        return text.to_string();
    }
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        // The longest run starting at i that occurs in the key.
        let mut best = 0;
        let mut j = i + 1;
        while j <= chars.len() {
            let end = chars.get(j).map_or(text.len(), |(at, _)| *at);
            if key.contains(&text[chars[i].0..end]) {
                best = j - i;
                j += 1;
            } else {
                break;
            }
        }
        if best >= MIN.min(key.chars().count()) && best > 0 {
            out.push_str("<redacted>");
            i += best;
        } else {
            out.push(chars[i].1);
            i += 1;
        }
    }
    out
}

/// The `id` of tool call `idx` of a reply when the server sent none.
pub(crate) fn fallback_call_id(idx: usize) -> String {
    format!("call_{}", idx + 1)
}

/// Tool arguments as the model wrote them: an object, `{}` for nothing, or the raw text
/// when it is not JSON (the tool then reports the bad arguments back to the model).
pub(crate) fn parse_arguments(raw: &str) -> serde_json::Value {
    if raw.trim().is_empty() {
        return serde_json::Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| serde_json::Value::String(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction() {
        let secret = Secret("sk-proj-abcdefghijklmnop1234".into());
        assert_eq!(
            redact(
                "Incorrect API key provided: sk-proj-abcdefghijklmnop1234.",
                &secret
            ),
            "Incorrect API key provided: <redacted>."
        );
        let masked = redact(
            "Incorrect API key provided: sk-proj-********************1234.",
            &secret,
        );
        assert!(!masked.contains("sk-proj-"), "{masked}");
        assert_eq!(redact("HTTP 500: oops", &secret), "HTTP 500: oops");
        assert!(!format!("{secret:?}").contains("abcdef"));
    }
}
