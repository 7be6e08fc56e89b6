//! The Http plugin against real loopback HTTP servers: every method, the host list, private
//! addresses, redirects, a profile's headers and secrets, the size cap, the time limit, and
//! the permission authority (capabilities, `network_api`), from configs compiled for real.

use std::net::SocketAddr;

use crate::history::Denial;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fuseraft_compiler::ir::Program;
use fuseraft_compiler::source::MemoryFiles;
use serde_json::{json, Value as Json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::history::ToolCall;
use crate::mcp::Catalog;
use crate::tools::http_policy::HttpPolicy;
use crate::tools::permissions::{decide, Decision};
use crate::tools::testkit::call;
use crate::tools::ToolContext;

/// A request as a test server received it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

type Reply = Arc<dyn Fn(&Seen) -> Vec<u8> + Send + Sync>;

/// A loopback HTTP/1.1 server that records what it is sent and answers with `reply`.
struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    async fn start(reply: impl Fn(&Seen) -> Vec<u8> + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let reply: Reply = Arc::new(reply);
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (log, reply) = (log.clone(), reply.clone());
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut stream).await else {
                        return;
                    };
                    log.lock().unwrap().push(request.clone());
                    let _ = stream.write_all(&reply(&request)).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Server { addr, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&buf[..n]);
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = bytes[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some(Seen {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
    })
}

fn response(status: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut text = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    text.into_bytes()
}

/// Answers `METHOD path body` with a header `X-Echo: yes`.
fn echo(seen: &Seen) -> Vec<u8> {
    response(
        "200 OK",
        &[("X-Echo", "yes")],
        &format!("{} {} {}", seen.method, seen.path, seen.body),
    )
}

/// A program compiled from a config with one agent `Caller` (these agent lines) and these
/// root-level lines (`Security:`, `ApiProfiles:`).
fn program(agent: &str, root: &str) -> Program {
    let text = format!(
        "Orchestration:\n  Agents:\n    - Name: Caller\n      Instructions: Call.\n      Plugins: [Http]\n{agent}{root}"
    );
    let compiled = fuseraft_compiler::compile(
        Path::new("c.yaml"),
        &MemoryFiles::new().with("c.yaml", text),
    );
    let errors: Vec<_> = compiled.diagnostics.iter().map(|d| &d.message).collect();
    compiled
        .program
        .unwrap_or_else(|| panic!("the config compiles: {errors:?}"))
}

/// A tool context whose Http policy is `program`'s, `${VAR}` looked up in `vars`.
fn context(program: &Program, vars: &[(&str, &str)]) -> ToolContext {
    let mut ctx = ToolContext::new(&std::env::temp_dir(), "s", "Caller", 1).unwrap();
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    ctx.http = HttpPolicy::new(&program.security, &program.api_profiles, &|name| {
        vars.iter()
            .find(|(known, _)| known == name)
            .map(|(_, value)| value.clone())
    });
    ctx
}

/// Loopback allowed and listed.
fn loopback_program() -> Program {
    program(
        "",
        "  Security:\n    HttpAllowedHosts: [127.0.0.1]\n    AllowPrivateHosts: true\n",
    )
}

fn text(call: &ToolCall) -> &str {
    call.result.as_deref().unwrap_or_default()
}

#[tokio::test]
async fn every_method_reaches_an_allowed_host() {
    let server = Server::start(echo).await;
    let ctx = context(&loopback_program(), &[]);
    let get = call(&ctx, "http_get", json!({"url": server.url("/a?x=1")})).await;
    assert_eq!((text(&get), get.ok), ("GET /a?x=1 ", true));
    let post = call(
        &ctx,
        "Http-http_post",
        json!({"url": server.url("/p"), "body": "{\"k\":1}"}),
    )
    .await;
    assert_eq!(text(&post), "POST /p {\"k\":1}");
    let put = call(
        &ctx,
        "http_put",
        json!({"url": server.url("/u"), "body": "plain", "contentType": "text/plain", "headers": "{\"X-Trace\": \"7\"}"}),
    )
    .await;
    assert_eq!(text(&put), "PUT /u plain");
    let patch = call(
        &ctx,
        "http_patch",
        json!({"url": server.url("/q"), "body": "d"}),
    )
    .await;
    assert_eq!(text(&patch), "PATCH /q d");
    let delete = call(&ctx, "http_delete", json!({"url": server.url("/d")})).await;
    assert_eq!(text(&delete), "DELETE /d ");
    let head = call(&ctx, "http_head", json!({"url": server.url("/h")})).await;
    assert!(head.ok, "{}", text(&head));
    assert!(
        text(&head).starts_with("HTTP/1.1 200 OK"),
        "{}",
        text(&head)
    );
    assert!(text(&head).contains("x-echo: yes"), "{}", text(&head));

    let seen = server.seen();
    let methods: Vec<&str> = seen.iter().map(|seen| seen.method.as_str()).collect();
    assert_eq!(methods, ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]);
    assert_eq!(seen[1].header("content-type"), Some("application/json"));
    assert_eq!(seen[2].header("content-type"), Some("text/plain"));
    assert_eq!(seen[2].header("x-trace"), Some("7"));
}

#[tokio::test]
async fn a_listed_name_is_reached_at_the_addresses_it_was_checked_at() {
    let server = Server::start(echo).await;
    let program = program(
        "",
        "  Security:\n    HttpAllowedHosts: [LOCALHOST]\n    AllowPrivateHosts: true\n",
    );
    let ctx = context(&program, &[]);
    let url = format!("http://localhost:{}/named", server.addr.port());
    let get = call(&ctx, "http_get", json!({"url": url})).await;
    assert_eq!((text(&get), get.ok), ("GET /named ", true));
    assert_eq!(
        server.seen()[0].header("host"),
        Some(format!("localhost:{}", server.addr.port()).as_str())
    );
}

#[tokio::test]
async fn a_failure_status_is_shown_and_not_ok() {
    let server = Server::start(|_| response("404 Not Found", &[], "no such thing")).await;
    let ctx = context(&loopback_program(), &[]);
    let get = call(&ctx, "http_get", json!({"url": server.url("/missing")})).await;
    assert_eq!(
        (text(&get), get.ok),
        ("[HTTP 404 Not Found]\nno such thing", false)
    );
}

#[tokio::test]
async fn unlisted_hosts_are_refused_before_any_connection() {
    let server = Server::start(echo).await;
    let ctx = context(&loopback_program(), &[]);
    let url = format!("http://localhost:{}/", server.addr.port());
    let get = call(&ctx, "http_get", json!({"url": url})).await;
    assert!(
        text(&get)
            .starts_with("[DENIED: http] host `localhost` is not in `Security.HttpAllowedHosts`"),
        "{}",
        text(&get)
    );
    assert!(!get.ok);
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn private_addresses_are_refused_unless_allowed() {
    let server = Server::start(echo).await;
    // Listed, but loopback without `AllowPrivateHosts`.
    let listed = program(
        "",
        "  Security:\n    HttpAllowedHosts: [127.0.0.1, localhost]\n",
    );
    // No list at all: every public host, no private one.
    let open = program("", "");
    for program in [&listed, &open] {
        let ctx = context(program, &[]);
        for url in [
            server.url("/"),
            format!("http://localhost:{}/", server.addr.port()),
        ] {
            let get = call(&ctx, "http_get", json!({"url": url})).await;
            assert!(
                text(&get).starts_with("[DENIED: http]")
                    && text(&get).contains("private or loopback"),
                "{url}: {}",
                text(&get)
            );
        }
    }
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn redirects_are_judged_hop_by_hop() {
    let elsewhere = Server::start(echo).await;
    let refused = format!("http://localhost:{}/stolen", elsewhere.addr.port());
    let allowed = elsewhere.url("/landed");
    let server = Server::start(move |seen| match seen.path.as_str() {
        "/to-refused" => response("302 Found", &[("Location", &refused)], ""),
        "/to-allowed" => response("303 See Other", &[("Location", &allowed)], ""),
        "/loop" => response("307 Temporary Redirect", &[("Location", "/loop")], ""),
        _ => echo(seen),
    })
    .await;
    let ctx = context(&loopback_program(), &[]);
    let refused = call(&ctx, "http_get", json!({"url": server.url("/to-refused")})).await;
    assert!(
        text(&refused).starts_with("[DENIED: http] host `localhost`"),
        "{}",
        text(&refused)
    );
    assert!(elsewhere.seen().is_empty());

    let followed = call(
        &ctx,
        "http_post",
        json!({"url": server.url("/to-allowed"), "body": "x"}),
    )
    .await;
    assert_eq!(text(&followed), "GET /landed ");

    let looping = call(&ctx, "http_get", json!({"url": server.url("/loop")})).await;
    assert!(
        text(&looping).contains("redirected more than 5 times"),
        "{}",
        text(&looping)
    );
}

#[tokio::test]
async fn a_profiles_headers_go_only_to_its_host_and_its_secrets_never_come_back() {
    let other = Server::start(|seen| {
        let auth = seen.header("authorization").unwrap_or("none");
        response("200 OK", &[], &format!("other saw {auth}"))
    })
    .await;
    let landing = other.url("/landing");
    let api = Server::start(move |seen| match seen.path.as_str() {
        "/api/away" => response("302 Found", &[("Location", &landing)], ""),
        _ => {
            let auth = seen.header("authorization").unwrap_or("none");
            response("200 OK", &[], &format!("{} got {auth}", seen.path))
        }
    })
    .await;
    let profiles = format!(
        "  Security:\n    HttpAllowedHosts: [127.0.0.1]\n    AllowPrivateHosts: true\n  ApiProfiles:\n    svc:\n      BaseUrl: {}\n      DefaultHeaders:\n        Authorization: Bearer ${{SVC_TOKEN}}\n    leaky:\n      BaseUrl: {}\n      DefaultHeaders:\n        Authorization: Bearer ${{OPENAI_API_KEY}}\n",
        api.url("/api"),
        api.url("/api"),
    );
    let program = program("", &profiles);
    let ctx = context(&program, &[("SVC_TOKEN", "tok-secret-1234")]);

    let items = call(
        &ctx,
        "http_get",
        json!({"url": "items/1", "profile": "svc"}),
    )
    .await;
    assert_eq!(text(&items), "/api/items/1 got Bearer [REDACTED]");
    assert_eq!(
        api.seen()[0].header("authorization"),
        Some("Bearer tok-secret-1234")
    );

    let elsewhere = call(
        &ctx,
        "http_get",
        json!({"url": other.url("/x"), "profile": "svc"}),
    )
    .await;
    assert!(
        text(&elsewhere).starts_with("[DENIED: http] API profile `svc` sends its headers only to"),
        "{}",
        text(&elsewhere)
    );
    let sneaky = call(
        &ctx,
        "http_get",
        json!({"url": format!("HTTP://localhost:{}/x", other.addr.port()), "profile": "svc"}),
    )
    .await;
    assert!(
        text(&sneaky).starts_with("[DENIED: http]"),
        "{}",
        text(&sneaky)
    );
    assert!(other.seen().is_empty());

    let away = call(&ctx, "http_get", json!({"url": "away", "profile": "svc"})).await;
    assert_eq!(text(&away), "other saw none");
    assert_eq!(other.seen()[0].header("authorization"), None);

    let leaky = call(&ctx, "http_get", json!({"url": "x", "profile": "leaky"})).await;
    assert!(
        text(&leaky).starts_with("[ERROR]") && text(&leaky).contains("model API key"),
        "{}",
        text(&leaky)
    );
    assert_eq!(api.seen().len(), 2, "the leaky profile sent nothing");
}

#[tokio::test]
async fn a_huge_body_is_capped() {
    let big = "x".repeat(1 << 20);
    let server = Server::start(move |_| response("200 OK", &[], &big)).await;
    let mut ctx = context(&loopback_program(), &[]);
    ctx.limits.output_cap = 1000;
    let get = call(&ctx, "http_get", json!({"url": server.url("/big")})).await;
    let (body, note) = text(&get).split_once('\n').unwrap();
    assert_eq!(body, "x".repeat(1000));
    assert_eq!(
        note,
        "[TRUNCATED: the response body is longer than 1000 bytes]"
    );
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream); // never answered
        }
    });
    let ctx = context(&loopback_program(), &[]);
    let started = Instant::now();
    let get = call(
        &ctx,
        "http_get",
        json!({"url": format!("http://{addr}/"), "timeoutSeconds": 0.5}),
    )
    .await;
    assert!(
        text(&get).starts_with("[TIMEOUT] the http request exceeded its 0.5s time limit"),
        "{}",
        text(&get)
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn bad_arguments_get_clear_results() {
    let server = Server::start(echo).await;
    let ctx = context(&loopback_program(), &[]);
    let cases = [
        (
            json!({}),
            "[ERROR] tool `http_get` needs a string argument `url`",
        ),
        (
            json!({"url": "ftp://127.0.0.1/"}),
            "[ERROR] `ftp://127.0.0.1/` is not an http or https URL",
        ),
        (
            json!({"url": "/relative"}),
            "[ERROR] `/relative` is not an http or https URL",
        ),
        (
            json!({"url": server.url("/"), "headers": "[1]"}),
            "[ERROR] tool `http_get`: argument `headers` must be a JSON object",
        ),
        (
            json!({"url": server.url("/"), "headers": {"bad name": "v"}}),
            "[ERROR] tool `http_get`: `bad name` is not a valid header name",
        ),
        (
            json!({"url": server.url("/"), "headers": {"Host": "internal"}}),
            "[DENIED: http] tool `http_get` may not set the `Host` header",
        ),
        (
            json!({"url": "x", "profile": "nope"}),
            "[ERROR] API profile `nope` is not defined in `ApiProfiles` (defined: none)",
        ),
        (
            json!({"url": server.url("/"), "timeoutSeconds": -1}),
            "[ERROR] tool `http_get`: argument `timeoutSeconds` must be a positive number",
        ),
    ];
    for (args, expected) in cases {
        let done = call(&ctx, "http_get", args.clone()).await;
        assert!(text(&done).starts_with(expected), "{args}: {}", text(&done));
        assert!(!done.ok);
    }
    let post = call(&ctx, "http_post", json!({"url": server.url("/")})).await;
    assert_eq!(
        text(&post),
        "[ERROR] tool `http_post` needs a string argument `body`"
    );
    assert!(server.seen().is_empty());
}

fn tool_call(name: &str, args: Json) -> ToolCall {
    ToolCall {
        id: "c".into(),
        name: name.into(),
        args,
        result: None,
        ok: false,
        denied: None,
    }
}

#[test]
fn capabilities_narrow_http_by_method() {
    let program = program("      Capabilities: { Http: [get] }\n", "");
    let agent = program.agents.first();
    let root = std::env::temp_dir();
    for (name, allowed) in [
        ("http_get", true),
        ("http_head", true),
        ("http_post", false),
        ("http_delete", false),
    ] {
        let call = tool_call(name, json!({"url": "https://example.com/"}));
        let decision = decide(&call, agent, &program, &root, &Catalog::default());
        match decision {
            Decision::Allow(_) => assert!(allowed, "{name}"),
            Decision::Block(Denial { text: reason, .. }) => {
                assert!(!allowed, "{name}: {reason}");
                assert!(reason.starts_with("[DENIED: permission]"), "{reason}");
            }
            Decision::Ask(..) => panic!("{name}: nothing asks under the default policy"),
        }
    }
}

#[test]
fn the_network_api_policy_governs_every_request() {
    let root = std::env::temp_dir();
    let call = tool_call(
        "http_get",
        json!({"url": "https://api.example.com/x", "profile": "gh"}),
    );
    let blocked = program("", "  Security:\n    Permissions: { network_api: block }\n");
    match decide(&call, blocked.agents.first(), &blocked, &root, &Catalog::default()) {
        Decision::Block(Denial { text: reason, .. }) => assert_eq!(
            reason,
            "[DENIED: permission] http_get `https://api.example.com/x` with API profile `gh` needs the network, which the permission policy blocks (network_api)"
        ),
        other => panic!("{other:?}"),
    }
    let asked = program(
        "",
        "  Security:\n    Permissions: { Preset: approval-required }\n",
    );
    match decide(
        &call,
        asked.agents.first(),
        &asked,
        &root,
        &Catalog::default(),
    ) {
        Decision::Ask(_, action) => assert_eq!(
            action,
            "http_get `https://api.example.com/x` with API profile `gh`"
        ),
        other => panic!("{other:?}"),
    }
}
