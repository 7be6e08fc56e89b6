//! The `webhook` memory provider (upstream's `Memory: { Provider: webhook }`): before an
//! agent's turn, `POST {"agent"}` to `LoadUrl` and add the `block` it answers to the agent's
//! instructions for that turn; after every `SaveEveryNTurns`-th turn of an agent, `POST
//! {"agent", "history": [{"role", "content"}]}` to `SaveUrl`. Only these configured URLs are
//! reached; a failure is a notice and the run goes on without the memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value as Json};

use crate::effect::{ChatMessage, ChatRole, ModelCall, ModelReply};

/// The most characters of a loaded block put into a prompt.
const MAX_BLOCK_CHARS: usize = 8_000;

/// `Memory.Webhook` as the config writes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WebhookConfig {
    pub load_url: Option<String>,
    pub save_url: Option<String>,
    /// Values may name `${VAR}`s, expanded only for the variables the user allowed
    /// (`--mcp-env`), as an MCP server's headers are.
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    /// Save after every Nth turn of an agent (at least 1).
    pub save_every: u32,
}

/// The turn a block was loaded for, and the block (`None`: the webhook had none).
type Loaded = (u32, Option<Arc<str>>);

/// The webhook's client and what it loaded and saved so far.
#[derive(Debug)]
pub(super) struct Webhook {
    config: WebhookConfig,
    client: reqwest::Client,
    /// The block loaded for each agent's current turn (loaded once per turn).
    loaded: Mutex<HashMap<String, Loaded>>,
    /// Each agent's finished turns since its last save.
    turns: Mutex<HashMap<String, u32>>,
}

impl Webhook {
    pub(super) fn new(mut config: WebhookConfig) -> Result<Webhook, String> {
        for url in [&config.load_url, &config.save_url].into_iter().flatten() {
            let scheme_ok = url::Url::parse(url)
                .is_ok_and(|parsed| matches!(parsed.scheme(), "http" | "https"));
            if !scheme_ok {
                return Err(format!(
                    "the memory webhook's URL `{url}` is not an http or https URL"
                ));
            }
        }
        for (name, value) in &mut config.headers {
            *value = crate::mcp::vars::expand(value)
                .map_err(|reason| format!("the memory webhook's header `{name}`: {reason}"))?
                .text;
        }
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|error| format!("the memory webhook's client cannot be built: {error}"))?;
        Ok(Webhook {
            config,
            client,
            loaded: Mutex::new(HashMap::new()),
            turns: Mutex::new(HashMap::new()),
        })
    }

    async fn post(&self, url: &str, body: Json) -> Result<Json, String> {
        let mut request = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string());
        for (name, value) in &self.config.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let response = request
            .send()
            .await
            .map_err(|error| error.without_url().to_string())?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("the server answered {status}"));
        }
        let text = response
            .text()
            .await
            .map_err(|error| error.without_url().to_string())?;
        Ok(serde_json::from_str(&text).unwrap_or(Json::Null))
    }

    /// `call` with the agent's memory block for this turn added to its instructions (loaded
    /// at the turn's first call); `None` when there is nothing to add. A failed load is
    /// reported through `notice` once per turn.
    pub(super) async fn remembered(
        &self,
        call: &ModelCall,
        notice: &(dyn Fn(&str) + Sync),
    ) -> Option<ModelCall> {
        let url = self.config.load_url.as_deref()?;
        let cached = self
            .loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(call.agent.queue().as_ref())
            .filter(|(turn, _)| *turn == call.turn)
            .map(|(_, block)| block.clone());
        let block = match cached {
            Some(block) => block,
            None => {
                let block = match self.post(url, json!({"agent": call.agent.queue()})).await {
                    Ok(answer) => answer
                        .get("block")
                        .and_then(Json::as_str)
                        .map(str::trim)
                        .filter(|block| !block.is_empty())
                        .map(|block| Arc::from(bounded(block))),
                    Err(error) => {
                        notice(&format!(
                            "the memory webhook's load failed ({error}); this turn runs without it"
                        ));
                        None
                    }
                };
                self.loaded
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(call.agent.to_string(), (call.turn, block.clone()));
                block
            }
        }?;
        let mut call = call.clone();
        let text = format!("\n\n## Memory\n{block}");
        match call
            .messages
            .iter_mut()
            .find(|m| m.role == ChatRole::System)
        {
            Some(system) => system.content = format!("{}{text}", system.content).into(),
            None => call.messages.insert(
                0,
                ChatMessage {
                    role: ChatRole::System,
                    content: text.trim_start().into(),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                },
            ),
        }
        Some(call)
    }

    /// After a call whose reply ends the agent's turn (no tool calls): every
    /// `save_every`-th such turn, the turn's messages and reply go to `SaveUrl`.
    pub(super) async fn after(
        &self,
        call: &ModelCall,
        reply: &ModelReply,
        notice: &(dyn Fn(&str) + Sync),
    ) {
        let Some(url) = self.config.save_url.as_deref() else {
            return;
        };
        if !reply.tool_calls.is_empty() {
            return;
        }
        let due = {
            let mut turns = self.turns.lock().unwrap_or_else(PoisonError::into_inner);
            let count = turns.entry(call.agent.to_string()).or_insert(0);
            *count += 1;
            let due = *count >= self.config.save_every.max(1);
            if due {
                *count = 0;
            }
            due
        };
        if !due {
            return;
        }
        let mut history: Vec<Json> = call
            .messages
            .iter()
            .map(|message| json!({"role": role(message.role), "content": &*message.content}))
            .collect();
        history.push(json!({"role": "assistant", "content": reply.text}));
        let body = json!({"agent": call.agent.queue(), "history": history});
        if let Err(error) = self.post(url, body).await {
            notice(&format!("the memory webhook's save failed ({error})"));
        }
    }
}

fn role(role: ChatRole) -> &'static str {
    match role {
        ChatRole::System => "system",
        ChatRole::User => "user",
        ChatRole::Assistant => "assistant",
        ChatRole::Tool => "tool",
    }
}

/// `block` cut to [`MAX_BLOCK_CHARS`] characters.
fn bounded(block: &str) -> String {
    match block.char_indices().nth(MAX_BLOCK_CHARS) {
        Some((end, _)) => format!(
            "{}\n[memory cut to {MAX_BLOCK_CHARS} characters]",
            &block[..end]
        ),
        None => block.to_string(),
    }
}
