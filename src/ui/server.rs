//! The HTTP side: an axum router on a loopback listener. Every request must carry the
//! run's token (`?token=…`) or is refused 403, and a POST that a browser says comes from
//! another origin is refused too; every response forbids loading anything from
//! elsewhere (Content-Security-Policy) and leaks no URL (`Referrer-Policy: no-referrer`).
//!
//! Routes: `/` the page, `/app.js`, `/graph.js` (its graph layout), `/style.css`,
//! `/graph` (the IR's JSON view, or `null`),
//! `/events` (server-sent events: the history, then live), `POST /approve?id=N&approved=B`,
//! `POST /pause?id=N&action=continue|message|quit` (a message's text as the body);
//! for the session browser `/sessions`, `/session?id=ID` and `POST /rewind?id=ID&turn=N`;
//! for a server's sessions (`ui --on`) `/sessions`, `/session?id=ID` and
//! `POST /approve?id=SESSION.N&…`, each a call to the server.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures::stream::{self, Stream, StreamExt};
use serde_json::Value as Json;

use fuseraft_vm::driver::{Approval, Pause};

use super::broker::{Answer, Answered, Broker};
use super::hub::Hub;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const LAYOUT: &str = include_str!("page/graph.js");
const STYLE: &str = include_str!("page/style.css");

const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
    connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// What the server shows.
pub enum Mode {
    /// A run as it goes: its graph, its events, its approvals.
    Live {
        graph: Json,
        hub: Arc<Hub>,
        broker: Option<Arc<Broker>>,
    },
    /// The sessions of a work dir.
    Sessions { work_dir: PathBuf },
    /// The sessions a Restate server runs (`ui --on URL`): its ingress or a worker's front.
    Served { on: String },
}

pub struct App {
    pub token: String,
    pub mode: Mode,
}

/// A new random token: 128 bits, hex.
pub fn token() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes)
        .map_err(|error| format!("no randomness for the token: {error}"))?;
    Ok(crate::session::key::to_hex(&bytes))
}

/// Binds `addr` (`PORT`, `HOST:PORT`, or empty for a random loopback port).
pub fn bind(addr: &str) -> Result<TcpListener, String> {
    let addr = addr.trim();
    let target = if addr.is_empty() {
        "127.0.0.1:0".to_string()
    } else if addr.parse::<u16>().is_ok() {
        format!("127.0.0.1:{addr}")
    } else {
        addr.to_string()
    };
    let listener = TcpListener::bind(&target)
        .map_err(|error| format!("cannot listen on `{target}`: {error}"))?;
    if let Ok(local) = listener.local_addr() {
        if !local.ip().is_loopback() {
            eprintln!("warning: the web view listens on {local}, reachable from other machines; only its token protects it");
        }
    }
    listener
        .set_nonblocking(true)
        .map_err(|error| format!("cannot listen on `{target}`: {error}"))?;
    Ok(listener)
}

/// The page's address.
pub fn url(listener: &TcpListener, token: &str) -> String {
    let addr = listener
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)));
    format!("http://{addr}/?token={token}")
}

/// Serves until the runtime stops.
pub async fn serve(listener: TcpListener, app: App) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let app = Arc::new(app);
    let router = Router::new()
        .route("/", get(index))
        .route(
            "/app.js",
            get(|| async { asset("text/javascript", SCRIPT) }),
        )
        .route(
            "/graph.js",
            get(|| async { asset("text/javascript", LAYOUT) }),
        )
        .route("/style.css", get(|| async { asset("text/css", STYLE) }))
        .route("/graph", get(graph))
        .route("/events", get(events))
        .route("/approve", post(approve))
        .route("/pause", post(pause))
        .route("/sessions", get(sessions))
        .route("/session", get(session))
        .route("/rewind", post(rewind))
        .layer(middleware::from_fn_with_state(Arc::clone(&app), guard))
        .with_state(app);
    axum::serve(listener, router).await
}

/// The value of `name` in the query of `uri`.
pub fn query<'a>(uri: &'a Uri, name: &str) -> Option<&'a str> {
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

/// Refuses a request without the token; adds the security headers to every response.
async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let given = query(request.uri(), "token").unwrap_or("");
    let mut response = if !same_origin(&request) {
        (
            StatusCode::FORBIDDEN,
            "an answer must come from the page itself\n",
        )
            .into_response()
    } else if same(given.as_bytes(), app.token.as_bytes()) {
        next.run(request).await
    } else {
        (
            StatusCode::FORBIDDEN,
            "a token is required (use the URL fuseraft printed)\n",
        )
            .into_response()
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, POLICY),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Whether a request that changes something (a POST) comes from the page's own origin, as
/// far as the browser says: a page elsewhere that learned the token still cannot answer.
/// Requests without `Origin` (not from a browser's page) are left to the token.
pub(crate) fn same_origin(request: &Request) -> bool {
    if request.method() == axum::http::Method::GET {
        return true;
    }
    let headers = request.headers();
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    if header("sec-fetch-site").is_some_and(|site| site != "same-origin") {
        return false;
    }
    match (header("origin"), header("host")) {
        (None, _) => true,
        (Some(origin), Some(host)) => origin == format!("http://{host}"),
        (Some(_), None) => false,
    }
}

/// Compares in time independent of where the first difference is.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

async fn index(State(app): State<Arc<App>>) -> Response {
    let mode = match app.mode {
        Mode::Live { .. } => "live",
        Mode::Sessions { .. } => "sessions",
        Mode::Served { .. } => "served",
    };
    // The token is hex: safe inside an attribute.
    let page = INDEX
        .replace("__TOKEN__", &app.token)
        .replace("__MODE__", mode);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

fn json(value: &Json) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

async fn graph(State(app): State<Arc<App>>) -> Response {
    match &app.mode {
        Mode::Live { graph, .. } => json(graph),
        Mode::Sessions { .. } | Mode::Served { .. } => json(&Json::Null),
    }
}

async fn events(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Mode::Live { hub, .. } = &app.mode else {
        return StatusCode::NOT_FOUND.into_response();
    };
    // A reconnecting page continues after the last message it saw.
    let from = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok())
        .map_or(0, |last| last + 1);
    Sse::new(stream_from(hub, from))
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn stream_from(hub: &Hub, from: usize) -> impl Stream<Item = Result<Event, Infallible>> {
    let (replay, live) = hub.subscribe(from);
    // A page that falls too far behind is disconnected; it reconnects and replays.
    let live = stream::unfold(live, |mut live| async move {
        live.recv().await.ok().map(|message| (message, live))
    });
    stream::iter(replay)
        .chain(live)
        .map(|(index, text)| Ok(Event::default().id(index.to_string()).data(&*text)))
}

/// `POST /approve?id=N&approved=true|false`, or `answer=redirect` with the operator's text
/// as the body (an escalation or a plan review only).
async fn approve(State(app): State<Arc<App>>, uri: Uri, text: String) -> Response {
    if let Mode::Served { on } = &app.mode {
        return answer_served(on, &uri, &text).await;
    }
    let approval = match (query(&uri, "approved"), query(&uri, "answer")) {
        (Some("true"), None) => Ok(Some(Approval::Granted)),
        (Some("false"), None) => Ok(Some(Approval::Refused)),
        (None, Some("redirect")) => {
            operator_text(&text).map(|text| Some(Approval::Redirected(text)))
        }
        _ => Ok(None),
    };
    deliver(
        &app,
        &uri,
        approval.map(|approval| approval.map(Answer::Approval)),
        "expected id=N&approved=true|false or id=N&answer=redirect with a text body\n",
    )
}

/// The most bytes of an operator's message typed in the page.
const MESSAGE_BYTES: usize = 16 * 1024;

/// `POST /pause?id=N&action=continue|quit`, or `action=message` with the text as the body.
async fn pause(State(app): State<Arc<App>>, uri: Uri, text: String) -> Response {
    let action = match query(&uri, "action") {
        Some("continue") => Ok(Some(Pause::Continue)),
        Some("quit") => Ok(Some(Pause::Quit)),
        Some("message") => operator_text(&text).map(|text| Some(Pause::Message(text))),
        _ => Ok(None),
    };
    deliver(
        &app,
        &uri,
        action.map(|action| action.map(Answer::Pause)),
        "expected id=N&action=continue|message|quit\n",
    )
}

/// Hands the page's answer to the question `id=N` of the query to the broker: `404` when
/// the run asks nothing, the refusal of a malformed text, `400` (`expected`) when the id or
/// the answer is missing.
fn deliver(
    app: &App,
    uri: &Uri,
    answer: Result<Option<Answer>, Refusal>,
    expected: &'static str,
) -> Response {
    let Mode::Live {
        broker: Some(broker),
        ..
    } = &app.mode
    else {
        return (StatusCode::NOT_FOUND, "this run asks nothing\n").into_response();
    };
    let answer = match answer {
        Ok(answer) => answer,
        Err(refused) => return refused.into_response(),
    };
    let id = query(uri, "id").and_then(|id| id.parse::<u64>().ok());
    let (Some(id), Some(answer)) = (id, answer) else {
        return (StatusCode::BAD_REQUEST, expected).into_response();
    };
    taken(broker.answer(id, answer))
}

/// An operator's text typed in the page: trimmed, not empty, at most [`MESSAGE_BYTES`].
fn operator_text(text: &str) -> Result<String, Refusal> {
    let text = text.trim();
    if text.is_empty() {
        return Err((StatusCode::BAD_REQUEST, "a message needs text\n"));
    }
    if text.len() > MESSAGE_BYTES {
        return Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            "the message is over 16 KiB\n",
        ));
    }
    Ok(text.to_string())
}

/// A malformed answer: its status and the reason.
type Refusal = (StatusCode, &'static str);

fn taken(answered: Answered) -> Response {
    match answered {
        Answered::Taken => (StatusCode::OK, "answered\n").into_response(),
        Answered::NotPending => {
            (StatusCode::CONFLICT, "not waiting (already answered)\n").into_response()
        }
        Answered::WrongKind => (
            StatusCode::CONFLICT,
            "question `id` asks for another answer\n",
        )
            .into_response(),
    }
}

/// `POST /approve?id=SESSION.N&approved=B` (or `answer=redirect`, the text as the body) for
/// a served session: answered on the server; `409` when the question was answered before.
async fn answer_served(on: &str, uri: &Uri, text: &str) -> Response {
    let decision = match (query(uri, "approved"), query(uri, "answer")) {
        (Some("true"), None) => Ok(("yes", None)),
        (Some("false"), None) => Ok(("no", None)),
        (None, Some("redirect")) => operator_text(text).map(|text| ("redirect", Some(text))),
        _ => {
            let expected = "expected id=SESSION.N&approved=true|false or answer=redirect\n";
            return (StatusCode::BAD_REQUEST, expected).into_response();
        }
    };
    let (decision, text) = match decision {
        Ok(decision) => decision,
        Err(refused) => return refused.into_response(),
    };
    let question = query(uri, "id").unwrap_or("");
    match super::served::answer(on, question, decision, text).await {
        Ok(answered) => json(&answered),
        Err(not_taken) => (
            StatusCode::from_u16(not_taken.status).unwrap_or(StatusCode::BAD_GATEWAY),
            not_taken.message,
        )
            .into_response(),
    }
}

async fn sessions(State(app): State<Arc<App>>) -> Response {
    if let Mode::Served { on } = &app.mode {
        return match super::served::list(on).await {
            Ok(listed) => json(&listed),
            Err(message) => (StatusCode::BAD_GATEWAY, message).into_response(),
        };
    }
    let Mode::Sessions { work_dir } = &app.mode else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let work_dir = work_dir.clone();
    let listed = tokio::task::spawn_blocking(move || super::sessions::list(&work_dir)).await;
    json(&listed.unwrap_or(Json::Null))
}

async fn session(State(app): State<Arc<App>>, uri: Uri) -> Response {
    let Some(id) = query(&uri, "id").map(str::to_string) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    if let Mode::Served { on } = &app.mode {
        return match super::served::show(on, &id).await {
            Ok(shown) => json(&shown),
            Err(message) => (StatusCode::NOT_FOUND, message).into_response(),
        };
    }
    let Mode::Sessions { work_dir } = &app.mode else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let work_dir = work_dir.clone();
    let shown = tokio::task::spawn_blocking(move || super::sessions::show(&work_dir, &id)).await;
    match shown {
        Ok(Ok(value)) => json(&value),
        Ok(Err(message)) => (StatusCode::NOT_FOUND, message).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// `POST /rewind?id=ID&turn=N`: a new session from session `ID` as it stood after turn `N`
/// (`exec --from-turn`), nothing run; answers `{id, command}`, the command that runs it on.
async fn rewind(State(app): State<Arc<App>>, uri: Uri) -> Response {
    let Mode::Sessions { work_dir } = &app.mode else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let (Some(id), Some(Ok(turn))) = (
        query(&uri, "id").map(str::to_string),
        query(&uri, "turn").map(str::parse::<u64>),
    ) else {
        return (StatusCode::BAD_REQUEST, "give `id` and a whole `turn`\n").into_response();
    };
    let work_dir = work_dir.clone();
    let made =
        tokio::task::spawn_blocking(move || super::sessions::rewind(&work_dir, &id, turn)).await;
    match made {
        Ok(Ok(value)) => json(&value),
        Ok(Err(message)) => (StatusCode::CONFLICT, message).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_found_by_exact_name() {
        let uri: Uri = "/approve?token=ab&id=3&approved=true&xid=9"
            .parse()
            .unwrap();
        assert_eq!(query(&uri, "token"), Some("ab"));
        assert_eq!(query(&uri, "id"), Some("3"));
        assert_eq!(query(&uri, "approved"), Some("true"));
        assert_eq!(query(&uri, "missing"), None);
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }
}
