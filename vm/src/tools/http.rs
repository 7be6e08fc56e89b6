//! The Http plugin: `http_get`, `http_head`, `http_post`, `http_put`, `http_patch` and
//! `http_delete` (upstream's names and arguments), sent with reqwest where `http_policy.rs`
//! allows.
//!
//! Security decisions (with those of `http_policy.rs`):
//! - Redirects are followed here, one hop at a time (at most [`MAX_REDIRECTS`]), each target
//!   judged like the first URL: a redirect to an unlisted or private host is refused.
//! - A profile's headers are sent only while the request is at the profile's origin; a
//!   redirect elsewhere drops them. A model may not set `Host`.
//! - No proxy from the environment: the request goes to the addresses that were checked.
//! - The response is read up to the tools' output cap and the time limit (the model's
//!   `timeoutSeconds`, else the profile's, else 30 s, never above the run's tool limit);
//!   every profile secret in it is replaced by `[REDACTED]` before the model sees it.

use crate::history::DenialKind;
use std::net::SocketAddr;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, LOCATION};
use reqwest::{Method, StatusCode};
use serde_json::Value as Json;
use url::{Origin, Url};

use super::http_policy::{ApiProfile, HttpPolicy};
use super::http_response;
use super::{Args, Outcome, Tool, ToolContext};

/// The most redirects one call follows.
pub(super) const MAX_REDIRECTS: usize = 5;
/// A call's time limit when neither the model nor the profile names one.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Request headers, in order.
type Headers = Vec<(HeaderName, HeaderValue)>;

/// One request as the model asked for it, resolved against its profile.
struct Request<'a> {
    method: Method,
    url: Url,
    /// The body and its content type.
    body: Option<(String, String)>,
    /// The model's own `headers`.
    headers: Headers,
    profile: Option<ProfileUse<'a>>,
}

/// The profile a request uses: where its headers may go, and the headers.
struct ProfileUse<'a> {
    profile: &'a ApiProfile,
    origin: Origin,
    headers: Headers,
}

/// Runs one Http tool call.
pub(super) async fn run(tool: Tool, args: &Args, ctx: &ToolContext) -> Outcome {
    let policy = &ctx.http;
    let request = match request(tool, args, policy) {
        Ok(request) => request,
        Err(outcome) => return outcome,
    };
    let timeout = match timeout(args, request.profile.as_ref().map(|used| used.profile), ctx) {
        Ok(timeout) => timeout,
        Err(outcome) => return outcome,
    };
    let outcome = match tokio::time::timeout(timeout, send(request, policy, ctx)).await {
        Ok(outcome) => outcome,
        Err(_) => Outcome::fail(format!(
            "[TIMEOUT] the http request exceeded its {}s time limit",
            timeout.as_secs_f64()
        )),
    };
    Outcome {
        text: http_response::redact(&outcome.text, &policy.secrets()),
        ok: outcome.ok,
        denied: outcome.denied,
    }
}

fn method_of(tool: Tool) -> Method {
    match tool {
        Tool::HttpHead => Method::HEAD,
        Tool::HttpPost => Method::POST,
        Tool::HttpPut => Method::PUT,
        Tool::HttpPatch => Method::PATCH,
        Tool::HttpDelete => Method::DELETE,
        _ => Method::GET,
    }
}

/// The request a call stands for, or the `[ERROR]`/`[DENIED: ...]` result.
fn request<'a>(tool: Tool, args: &Args, policy: &'a HttpPolicy) -> Result<Request<'a>, Outcome> {
    let method = method_of(tool);
    let raw = args.string("url")?;
    let body = if matches!(method, Method::POST | Method::PUT | Method::PATCH) {
        let body = args.string("body")?.to_string();
        let content_type = args
            .opt_text("contentType")?
            .unwrap_or("application/json")
            .to_string();
        Some((body, content_type))
    } else {
        None
    };
    let headers = header_list(args.tool, args.value("headers"), "headers")?;
    let Some(name) = args
        .opt_text("profile")?
        .filter(|name| !name.trim().is_empty())
    else {
        let url = absolute(raw).ok_or_else(|| {
            Outcome::error(format!(
                "`{raw}` is not an http or https URL (a path needs a `profile`)"
            ))
        })?;
        return Ok(Request {
            method,
            url,
            body,
            headers,
            profile: None,
        });
    };
    let profile = policy.profile(name).ok_or_else(|| {
        let known: Vec<String> = policy
            .profiles
            .iter()
            .map(|profile| format!("`{}`", profile.name))
            .collect();
        Outcome::error(format!(
            "API profile `{name}` is not defined in `ApiProfiles` (defined: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ))
    })?;
    let base = profile.base_url.as_ref().map_err(Outcome::error)?;
    if let Some(problem) = &profile.problem {
        return Err(Outcome::error(problem));
    }
    let url = match absolute(raw) {
        Some(url) => url,
        None => {
            let mut base = base.clone();
            if !base.path().ends_with('/') {
                let path = format!("{}/", base.path());
                base.set_path(&path);
            }
            base.join(raw.trim_start_matches('/'))
                .ok()
                .filter(|url| matches!(url.scheme(), "http" | "https"))
                .ok_or_else(|| {
                    Outcome::error(format!("`{raw}` is not a path or an http or https URL"))
                })?
        }
    };
    if url.origin() != base.origin() {
        return Err(Outcome::denied(DenialKind::Http,format!(
            "API profile `{}` sends its headers only to `{}`; `{}` is elsewhere (leave out `profile` to call another host)",
            profile.name,
            base.origin().ascii_serialization(),
            url.origin().ascii_serialization()
        )));
    }
    let pairs: Vec<(String, Json)> = profile
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), Json::String(value.clone())))
        .collect();
    let profile_headers = header_pairs(args.tool, pairs, "DefaultHeaders")?;
    Ok(Request {
        method,
        url,
        body,
        headers,
        profile: Some(ProfileUse {
            profile,
            origin: base.origin(),
            headers: profile_headers,
        }),
    })
}

/// `text` as an absolute http(s) URL, if it is one.
fn absolute(text: &str) -> Option<Url> {
    let text = text.trim();
    let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return None;
    }
    Url::parse(text)
        .ok()
        .filter(|url| url.host_str().is_some_and(|host| !host.is_empty()))
}

/// The model's `headers`: a JSON object of strings, or a JSON string holding one.
fn header_list(tool: &str, value: Option<&Json>, what: &str) -> Result<Headers, Outcome> {
    let parsed;
    let map = match value {
        None => return Ok(Vec::new()),
        Some(Json::String(text)) if text.trim().is_empty() => return Ok(Vec::new()),
        Some(Json::String(text)) => {
            parsed = serde_json::from_str::<Json>(text).ok();
            parsed.as_ref()
        }
        other => other,
    };
    let Some(Json::Object(map)) = map else {
        return Err(Outcome::error(format!(
            "tool `{tool}`: argument `{what}` must be a JSON object of header names to values"
        )));
    };
    header_pairs(tool, map.clone().into_iter().collect(), what)
}

fn header_pairs(tool: &str, pairs: Vec<(String, Json)>, what: &str) -> Result<Headers, Outcome> {
    let mut out = Vec::new();
    for (name, value) in pairs {
        let text = match &value {
            Json::String(text) => text.clone(),
            Json::Number(_) | Json::Bool(_) => value.to_string(),
            _ => {
                return Err(Outcome::error(format!(
                    "tool `{tool}`: header `{name}` in `{what}` must be a string"
                )))
            }
        };
        let header = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            Outcome::error(format!(
                "tool `{tool}`: `{name}` is not a valid header name"
            ))
        })?;
        if header == reqwest::header::HOST {
            return Err(Outcome::denied(
                DenialKind::Http,
                format!("tool `{tool}` may not set the `Host` header"),
            ));
        }
        let value = HeaderValue::from_str(&text).map_err(|_| {
            Outcome::error(format!(
                "tool `{tool}`: the value of header `{name}` is not a valid header value"
            ))
        })?;
        out.push((header, value));
    }
    Ok(out)
}

/// The call's time limit: `timeoutSeconds`, else the profile's, else 30 s; at most the run's
/// tool limit.
fn timeout(
    args: &Args,
    profile: Option<&ApiProfile>,
    ctx: &ToolContext,
) -> Result<Duration, Outcome> {
    let asked = match args.opt_seconds("timeoutSeconds")? {
        Some(seconds) => Some(seconds),
        None => args.opt_seconds("timeout_seconds")?,
    };
    let chosen = asked
        .map(|seconds| Duration::from_secs_f64(seconds.min(86_400.0)))
        .or(profile.and_then(|profile| profile.timeout))
        .unwrap_or(DEFAULT_TIMEOUT);
    Ok(chosen.min(ctx.limits.shell_timeout))
}

/// Sends the request, following redirects one judged hop at a time.
async fn send(request: Request<'_>, policy: &HttpPolicy, ctx: &ToolContext) -> Outcome {
    let Request {
        mut method,
        mut url,
        mut body,
        headers,
        profile,
    } = request;
    for _ in 0..=MAX_REDIRECTS {
        if let Some(denial) = policy.unlisted(&url) {
            return Outcome::from(denial);
        }
        let addresses = match policy.addresses(&url).await {
            Ok(addresses) => addresses,
            Err(outcome) => return outcome,
        };
        let client = match client(&url, &addresses) {
            Ok(client) => client,
            Err(error) => {
                return Outcome::error(format!("the http client could not be built: {error}"))
            }
        };
        let mut map = HeaderMap::new();
        if let Some(used) = &profile {
            if url.origin() == used.origin {
                for (name, value) in &used.headers {
                    map.insert(name.clone(), value.clone());
                }
            }
        }
        for (name, value) in &headers {
            map.insert(name.clone(), value.clone());
        }
        let mut builder = client.request(method.clone(), url.clone());
        if let Some((text, content_type)) = &body {
            if !map.contains_key(CONTENT_TYPE) {
                if let Ok(value) = HeaderValue::from_str(content_type) {
                    map.insert(CONTENT_TYPE, value);
                }
            }
            builder = builder.body(text.clone());
        }
        let response = match builder.headers(map).send().await {
            Ok(response) => response,
            Err(error) => {
                return Outcome::error(format!(
                    "the {method} request to `{}` failed: {}",
                    url.origin().ascii_serialization(),
                    reqwest_reason(&error)
                ))
            }
        };
        let status = response.status();
        let location = response
            .headers()
            .get(LOCATION)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string);
        match (status.is_redirection(), location) {
            (true, Some(location)) => {
                let Some(next) = url
                    .join(&location)
                    .ok()
                    .filter(|next| matches!(next.scheme(), "http" | "https"))
                else {
                    return Outcome::error(format!(
                        "the response redirects to `{location}`, which is not an http or https URL"
                    ));
                };
                // 301, 302 and 303 turn a request with a body into a GET, as browsers do.
                if !matches!(
                    status,
                    StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
                ) && method != Method::HEAD
                {
                    method = Method::GET;
                    body = None;
                }
                url = next;
            }
            _ => return http_response::read(response, method == Method::HEAD, ctx, policy).await,
        }
    }
    Outcome::error(format!(
        "the request was redirected more than {MAX_REDIRECTS} times"
    ))
}

/// A client that connects `url`'s host only to `addresses`, follows no redirect and uses no
/// proxy.
fn client(url: &Url, addresses: &[SocketAddr]) -> reqwest::Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(concat!("fuseraft/", env!("CARGO_PKG_VERSION")));
    if let Some(url::Host::Domain(domain)) = url.host() {
        builder = builder.resolve_to_addrs(domain, addresses);
    }
    builder.build()
}

/// The cause of a reqwest error, without the URL it carries (it may hold a secret).
pub(super) fn reqwest_reason(error: &reqwest::Error) -> String {
    let mut reason = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else if error.is_body() || error.is_decode() {
        "the body could not be read"
    } else {
        "the request failed"
    }
    .to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        reason = format!("{reason}: {inner}");
        source = inner.source();
    }
    reason
}

#[cfg(all(test, unix))]
#[path = "http_tests.rs"]
mod tests;
