//! The providers' HTTP: one attempt of a POST whose body streams into a [`Decoder`], with an
//! idle timeout (no bytes for a while), `Retry-After`, and caps on the reply, the body and
//! one line of it. Retries, backoff and the fallback to not streaming are in `retry.rs`.
//!
//! This is the only file of the crate that names reqwest. A failure is a [`Failure`]: a
//! message plus whether retrying may help. 429, 408, 409, 5xx, connection errors, a stream
//! cut short and a timeout are retried; any other status is final. Every message leaving
//! this file has the request's key scrubbed out of it. Redirects are not followed: a key
//! goes to the URL that was checked for it, and nowhere a server points.

use super::body::Body;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};

use super::limits::{reply_size, Budget};
use super::{sse, Secret, Settings, Timeouts};
use crate::effect::ModelReply;

/// The longest `Retry-After` honoured; a server asking for more is waited on this long.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// How much of an error body is read to find the server's message.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Why one attempt failed.
#[derive(Debug)]
pub(crate) struct Failure {
    pub message: String,
    /// Whether another attempt may succeed.
    pub retry: bool,
    /// The server's `Retry-After`, when it sent one.
    pub after: Option<Duration>,
    /// The HTTP status of an error response.
    pub status: Option<u16>,
    /// A streamed reply that ended before anything of it arrived: what a server that fails
    /// inside its streaming path sends (llama.cpp's Python server answers a `tool_choice`
    /// its chat format cannot honour by an empty 200 stream).
    pub empty_stream: bool,
}

impl Failure {
    /// A failure retrying cannot fix (a 4xx, a malformed event).
    pub(super) fn fatal(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            retry: false,
            after: None,
            status: None,
            empty_stream: false,
        }
    }

    /// A failure another attempt may not hit (a dropped connection, a truncated stream).
    pub(super) fn transient(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            retry: true,
            after: None,
            status: None,
            empty_stream: false,
        }
    }

    /// A streamed reply that ended before any of it arrived.
    pub(super) fn empty_stream() -> Failure {
        Failure {
            empty_stream: true,
            ..Failure::transient("the stream ended before any reply arrived (no `data: [DONE]`)")
        }
    }
}

/// Turns a streamed response body into a reply, chunk by chunk.
pub(crate) trait Decoder: Send {
    /// One chunk of the body, cut anywhere (mid-line, mid-UTF-8 sequence).
    fn feed(&mut self, chunk: &[u8]) -> Result<(), Failure>;
    /// The body ended: the reply, or why it is incomplete.
    fn finish(self) -> Result<ModelReply, Failure>;
    /// The bytes of reply decoded so far: text, tool names and tool arguments.
    fn size(&self) -> usize;
    /// The tool calls (or content blocks) begun so far.
    fn calls(&self) -> usize;
    /// The whole body of a server that answered with one JSON document
    /// (`application/json`) instead of a stream.
    fn whole(mut self, body: &[u8]) -> Result<ModelReply, Failure>
    where
        Self: Sized,
    {
        self.feed(body)?;
        self.finish()
    }
}

/// One model request, ready to send.
pub(crate) struct Post {
    /// Names the endpoint in error messages: `openai model `gpt-4o` at URL`.
    pub label: String,
    pub url: String,
    /// The variable the key comes from, for the hint of a 401 or 403.
    pub key_variable: Option<String>,
    /// Plain headers (`anthropic-version`).
    pub headers: Vec<(&'static str, String)>,
    /// The credential header (`authorization: Bearer …`, `x-api-key`, `api-key`), if any.
    pub auth: Option<(&'static str, Secret)>,
    pub body: Body,
    /// The tool call the request forces, as its failure names it (`tool_choice` `"required"`
    /// over 2 tools), when it forces one.
    pub forced: Option<String>,
}

/// The HTTP clients and the resilience settings.
pub(crate) struct Http {
    /// One pair of clients per connect timeout the models use (reqwest sets it per client).
    clients: Vec<Clients>,
    pub(super) settings: Settings,
    /// The URL last sent to, parsed, and whether it is on the loopback interface: a run
    /// sends every request to one endpoint or two, and comparing the text costs far less
    /// than parsing it again.
    last_url: std::sync::Mutex<Option<Parsed>>,
}

struct Parsed {
    text: String,
    url: Option<reqwest::Url>,
    loopback: bool,
}

struct Clients {
    connect_timeout: Duration,
    /// For remote endpoints: honours the proxy environment variables.
    remote: reqwest::Client,
    /// For loopback endpoints: never goes through a proxy.
    local: reqwest::Client,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Http {
    /// The clients for `settings` and for each of `connect_timeouts` (the models' own).
    pub(super) fn new(settings: Settings, connect_timeouts: &[Duration]) -> Result<Http, String> {
        let mut clients: Vec<Clients> = Vec::new();
        for &connect_timeout in std::iter::once(&settings.connect_timeout).chain(connect_timeouts) {
            if clients
                .iter()
                .any(|known| known.connect_timeout == connect_timeout)
            {
                continue;
            }
            let builder = || {
                reqwest::Client::builder()
                    .connect_timeout(connect_timeout)
                    .redirect(reqwest::redirect::Policy::none())
                    .user_agent(concat!("fuseraft/", env!("CARGO_PKG_VERSION")))
            };
            let start = |error| format!("cannot start the HTTP client: {}", describe(error));
            clients.push(Clients {
                connect_timeout,
                remote: builder().build().map_err(start)?,
                local: builder().no_proxy().build().map_err(start)?,
            });
        }
        Ok(Http {
            clients,
            settings,
            last_url: std::sync::Mutex::new(None),
        })
    }

    /// `text` parsed (`None` when it does not parse: reqwest then says why) and whether it
    /// is on the loopback interface, from [`Http::last_url`] when it is the same text.
    fn parsed(&self, text: &str) -> (Option<reqwest::Url>, bool) {
        let mut last = self
            .last_url
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let parsed = match last.take().filter(|parsed| parsed.text == text) {
            Some(parsed) => parsed,
            None => Parsed {
                text: text.to_string(),
                url: reqwest::Url::parse(text).ok(),
                loopback: is_loopback(text),
            },
        };
        let found = (parsed.url.clone(), parsed.loopback);
        *last = Some(parsed);
        found
    }

    /// One attempt: the request sent, the response decoded.
    pub(super) async fn attempt<D: Decoder>(
        &self,
        post: &Post,
        body: bytes::Bytes,
        mut decoder: D,
        timeouts: Timeouts,
    ) -> Result<ModelReply, Failure> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in &post.headers {
            let value = HeaderValue::from_str(value)
                .map_err(|_| Failure::fatal(format!("invalid value for header `{name}`")))?;
            headers.insert(HeaderName::from_static(name), value);
        }
        if let Some((name, secret)) = &post.auth {
            let value = if *name == "authorization" {
                format!("Bearer {}", secret.expose())
            } else {
                secret.expose().to_string()
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                Failure::fatal("the API key holds characters an HTTP header cannot carry")
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static(name), value);
        }
        let clients = self
            .clients
            .iter()
            .find(|clients| clients.connect_timeout == timeouts.connect)
            .unwrap_or(&self.clients[0]);
        let (url, loopback) = self.parsed(&post.url);
        let client = if loopback {
            &clients.local
        } else {
            &clients.remote
        };
        let idle = timeouts.idle;
        let request = match url {
            Some(url) => client.post(url),
            None => client.post(&post.url),
        };
        let sent = request.headers(headers).body(body).send();
        let mut response = match tokio::time::timeout(idle, sent).await {
            Ok(sent) => sent.map_err(|error| Failure::transient(unsent(error)))?,
            Err(_) => return Err(stalled(idle, "before the response began")),
        };
        let status = response.status();
        if status.is_redirection() {
            let to = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .unwrap_or("(no Location)");
            return Err(Failure::fatal(format!(
                "HTTP {} redirect to `{}`: redirects are not followed (the key would go along); \
                 give the final URL as the endpoint",
                status.as_u16(),
                sse::snippet(to)
            )));
        }
        if !status.is_success() {
            let after = retry_after(response.headers());
            let mut text = Vec::new();
            while text.len() < MAX_ERROR_BODY {
                match next_chunk(&mut response, idle).await {
                    Ok(Some(chunk)) => text.extend_from_slice(chunk.as_ref()),
                    _ => break,
                }
            }
            let code = status.as_u16();
            let retry = matches!(code, 408 | 409 | 429) || status.is_server_error();
            let reason = status.canonical_reason().unwrap_or("");
            let hint = match code {
                401 | 403 => key_hint(post),
                _ => String::new(),
            };
            return Err(Failure {
                message: format!(
                    "HTTP {code} {reason}: {}{hint}",
                    server_message(&String::from_utf8_lossy(&text))
                ),
                retry,
                after,
                status: Some(code),
                empty_stream: false,
            });
        }
        let whole = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim().starts_with("application/json"));
        let mut budget = Budget::new(&self.settings);
        if whole {
            let mut body = Vec::new();
            while let Some(chunk) = next_chunk(&mut response, idle).await? {
                budget.body(chunk.as_ref())?;
                body.extend_from_slice(chunk.as_ref());
            }
            let reply = decoder.whole(&body)?;
            budget.reply(reply_size(&reply))?;
            return Ok(reply);
        }
        while let Some(chunk) = next_chunk(&mut response, idle).await? {
            budget.body(chunk.as_ref())?;
            budget.lines(chunk.as_ref())?;
            decoder.feed(chunk.as_ref())?;
            budget.reply(decoder.size())?;
            budget.calls(decoder.calls())?;
        }
        decoder.finish()
    }
}

/// The next piece of a body, or a failure when none comes within `idle`.
async fn next_chunk(
    response: &mut reqwest::Response,
    idle: Duration,
) -> Result<Option<impl AsRef<[u8]>>, Failure> {
    match tokio::time::timeout(idle, response.chunk()).await {
        Ok(Ok(chunk)) => Ok(chunk),
        Ok(Err(error)) => Err(Failure::transient(format!(
            "the connection broke mid-response: {}",
            describe(error)
        ))),
        Err(_) => Err(stalled(idle, "mid-response")),
    }
}

fn stalled(idle: Duration, when: &str) -> Failure {
    Failure::transient(format!(
        "the server sent nothing for {} {when} (stalled; the idle timeout)",
        seconds(idle)
    ))
}

/// What a 401 or 403 says about keys: which variable was sent, or that none was.
fn key_hint(post: &Post) -> String {
    match (&post.auth, &post.key_variable) {
        (Some(_), Some(variable)) => format!(
            " (the key sent came from {variable}: check that it is valid for this endpoint, \
             or pass the variable holding the right one with `--api-key-env VARIABLE`)"
        ),
        _ => " (no key was sent: a provider's well-known key, like OPENAI_API_KEY or \
              ANTHROPIC_API_KEY, goes only to that provider's own host; name the variable \
              holding this server's key with `--api-key-env VARIABLE` on the command line or \
              ApiKeyEnvVar in the model's config)"
            .to_string(),
    }
}

/// A reqwest error with its causes, without the URL (the label names it already):
/// `error sending request: client error (Connect): tcp connect error: Connection refused`.
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let error: &dyn std::error::Error = &error;
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Why a request could not be sent, in a user's words and with what to check, instead of
/// the client's chain of errors (`error sending request: client error (Connect): tcp connect
/// error: Connection refused (os error 111)`). The label before it names the endpoint.
fn unsent(error: reqwest::Error) -> String {
    let connect = error.is_connect();
    let timeout = error.is_timeout();
    let error = error.without_url();
    let (cause, refused) = {
        let mut innermost: &dyn std::error::Error = &error;
        let mut refused = false;
        while let Some(cause) = innermost.source() {
            if let Some(io) = cause.downcast_ref::<std::io::Error>() {
                refused |= io.kind() == std::io::ErrorKind::ConnectionRefused;
            }
            innermost = cause;
        }
        (innermost.to_string(), refused)
    };
    let chain = describe(error).to_ascii_lowercase();
    if !connect {
        return format!("the request could not be sent: {cause}");
    }
    if refused {
        "cannot connect: connection refused (nothing listens there: is the server running, and is the endpoint right?)".to_string()
    } else if chain.contains("dns error") || chain.contains("lookup address") {
        "cannot connect: the host name does not resolve (check the endpoint's spelling, the network and any proxy settings)".to_string()
    } else if timeout {
        "cannot connect: no answer before the connect timeout (is the host reachable? `--connect-timeout` sets the wait)".to_string()
    } else if chain.contains("certificate") || chain.contains("tls") {
        format!("cannot connect: the TLS handshake failed: {cause} (a local server usually speaks `http://`, not `https://`)")
    } else {
        format!("cannot connect: {cause}")
    }
}

/// `120s`, `0.2s`.
pub(crate) fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

/// The server's own words from an error body: OpenAI's and Anthropic's `error.message`,
/// Ollama's `error`, or the body itself, shortened.
pub(crate) fn server_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(body) {
        let found = json
            .pointer("/error/message")
            .or_else(|| json.get("error"))
            .or_else(|| json.get("message"))
            .or_else(|| json.get("detail"));
        match found {
            Some(serde_json::Value::String(text)) => return shorten(text),
            Some(other) if !other.is_null() => return shorten(&other.to_string()),
            _ => {}
        }
    }
    let body = body.trim();
    if body.is_empty() {
        "(empty body)".to_string()
    } else {
        shorten(body)
    }
}

fn shorten(text: &str) -> String {
    const MAX: usize = 500;
    if text.chars().count() <= MAX {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

/// `Retry-After` (seconds, possibly fractional, or an HTTP date) or OpenAI's
/// `retry-after-ms`.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<f64>().ok())
    {
        return duration_from_secs(ms / 1000.0);
    }
    let text = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    parse_retry_after(text, SystemTime::now())
}

pub(crate) fn parse_retry_after(text: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(secs) = text.parse::<f64>() {
        return duration_from_secs(secs);
    }
    let when = httpdate::parse_http_date(text).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

fn duration_from_secs(secs: f64) -> Option<Duration> {
    if secs.is_finite() && secs >= 0.0 {
        Some(Duration::from_secs_f64(
            secs.min(MAX_RETRY_AFTER.as_secs_f64()),
        ))
    } else {
        None
    }
}

use super::endpoint::is_loopback;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("0.25", now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_retry_after("100000", now), Some(MAX_RETRY_AFTER));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(7)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn server_messages() {
        assert_eq!(
            server_message(
                r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}"#
            ),
            "Incorrect API key"
        );
        assert_eq!(
            server_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            server_message(r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(server_message("Bad Gateway"), "Bad Gateway");
        assert_eq!(server_message(""), "(empty body)");
    }
}
