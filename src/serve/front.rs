//! `fuseraft serve --front ADDR`: the one door clients use instead of the server's ingress.
//! It forwards only fuseraft's own handlers (sessions, questions, schedules, the lists) to
//! the ingress, and only for a request that carries the worker's token
//! (`Authorization: Bearer …`); a write a browser marks as coming from another origin is
//! refused even with the token. The ingress itself then stays on loopback, where only the
//! fronts reach it.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::job::{QUESTION, SESSION};
use super::schedule::SCHEDULE;

/// The objects a client may call through the front; the ingress's own endpoints
/// (awakeables, invocations, any other service) are not among them.
const OBJECTS: &[&str] = &[SESSION, QUESTION, SCHEDULE, "FuseraftNames"];

/// The largest request forwarded (a submitted job: its IR and replay file).
const BODY_LIMIT: usize = 64 * 1024 * 1024;

struct Front {
    ingress: String,
    token: String,
}

/// Serves the front on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, ingress: String, token: String) {
    let front = Arc::new(Front {
        ingress: ingress.trim_end_matches('/').to_string(),
        token,
    });
    let app = axum::Router::new().fallback(forward).with_state(front);
    if let Err(error) = axum::serve(listener, app).await {
        eprintln!("warning: the front stopped: {error}");
    }
}

/// Binds the front's address; a non-loopback one is said, as only the token guards it.
pub async fn bind(addr: &str) -> Result<tokio::net::TcpListener, String> {
    let addr: SocketAddr = addr
        .parse()
        .map_err(|error| format!("`--front {addr}` is not an address and port: {error}"))?;
    if !addr.ip().is_loopback() {
        eprintln!("warning: the front listens on {addr}, reachable from other machines; only its token protects it");
    }
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|error| format!("cannot listen on {addr}: {error}"))
}

fn refuse(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "code": status.as_u16(), "message": message }).to_string();
    (status, [("content-type", "application/json")], body).into_response()
}

/// Whether `path` calls one of fuseraft's objects: `/OBJECT/KEY/HANDLER[/send]`.
fn allowed(path: &str) -> bool {
    let mut parts = path.trim_start_matches('/').split('/');
    let object = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    OBJECTS.contains(&object)
        && matches!(rest.len(), 2 | 3)
        && rest
            .iter()
            .all(|part| !part.is_empty() && *part != "." && *part != "..")
        && (rest.len() == 2 || rest[2] == "send")
}

fn bearer(headers: &HeaderMap) -> &str {
    headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or("")
}

async fn forward(State(front): State<Arc<Front>>, request: Request) -> Response {
    if !crate::ui::server::same(bearer(request.headers()).as_bytes(), front.token.as_bytes()) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "a token is required: set FUSERAFT_SERVE_TOKEN to the worker's token",
        );
    }
    if !crate::ui::server::same_origin(&request) {
        return refuse(
            StatusCode::FORBIDDEN,
            "a write from another origin is refused",
        );
    }
    let path = request.uri().path().to_string();
    if request.method() != axum::http::Method::POST || !allowed(&path) {
        return refuse(
            StatusCode::NOT_FOUND,
            "the front forwards fuseraft's own calls only",
        );
    }
    let headers = request.headers().clone();
    let body: Bytes = match axum::body::to_bytes(request.into_body(), BODY_LIMIT).await {
        Ok(body) => body,
        Err(_) => return refuse(StatusCode::PAYLOAD_TOO_LARGE, "the request is too large"),
    };
    let header = |name: &str| headers.get(name).map(|value| value.as_bytes().to_vec());
    let forwarded = [
        ("content-type", header("content-type")),
        ("idempotency-key", header("idempotency-key")),
    ];
    match super::client::forward(&front.ingress, &path, &forwarded, body.to_vec()).await {
        Ok((status, kind, bytes)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
            (status, [("content-type", kind)], Body::from(bytes)).into_response()
        }
        Err(message) => refuse(StatusCode::BAD_GATEWAY, &message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_fuseraft_handlers_pass() {
        assert!(allowed("/FuseraftSession/1a2b3c4d/watch"));
        assert!(allowed("/FuseraftSession/1a2b3c4d/start/send"));
        assert!(allowed("/FuseraftQuestion/1a2b3c4d.1/answer"));
        assert!(!allowed("/restate/awakeables/abc/resolve"));
        assert!(!allowed("/FuseraftSession/1a2b3c4d"));
        assert!(!allowed("/FuseraftSession/../x/watch"));
        assert!(!allowed("/FuseraftSession/1a2b3c4d/watch/extra"));
        assert!(!allowed("/Other/1/x"));
    }
}
