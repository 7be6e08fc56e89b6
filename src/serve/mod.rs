//! `fuseraft serve --restate ADMIN_URL [--listen ADDR]`: a worker for a Restate server. It
//! serves the session and question objects (`objects`) over HTTP/2, registers itself with
//! the server's admin API, and runs until a stop signal. Runs are submitted with
//! `exec --on` and answered with `fuseraft approve` (`crate::commands::remote`).

mod blobs;
pub mod client;
mod front;
pub mod job;
mod names;
mod objects;
mod question;
mod reply;
pub mod schedule;
pub mod stream;
mod turn;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use restate_sdk::prelude::*;

use crate::cli::ServeArgs;
use crate::commands::exit;
use names::FuseraftNames;
use objects::FuseraftSession;
use question::FuseraftQuestion;
use schedule::FuseraftSchedule;

/// How long an invocation that cannot suspend (a model call or a tool run under way) has
/// after the server asked it to, before it is aborted and retried: above the longest model
/// request (`--timeout`'s default 1,800 s) and tool run.
const ABORT: Duration = Duration::from_secs(3600);

pub fn run(args: &ServeArgs) -> u8 {
    let listen: SocketAddr = match args.listen.parse() {
        Ok(listen) => listen,
        Err(error) => {
            eprintln!(
                "error: `--listen {}` is not an address and port: {error}",
                args.listen
            );
            return exit::USAGE;
        }
    };
    let work_root = match &args.work_root {
        Some(root) => root.clone(),
        None => PathBuf::from("."),
    };
    let work_root = match std::fs::canonicalize(&work_root) {
        Ok(root) => root,
        Err(error) => {
            eprintln!(
                "error: the work root `{}` cannot be used: {error}",
                work_root.display()
            );
            return exit::USAGE;
        }
    };
    crate::mcp_trust::allow_variables(&args.mcp_env);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the worker's runtime: {error}");
            return exit::USAGE;
        }
    };
    runtime.block_on(serve(args, listen, work_root))
}

async fn serve(args: &ServeArgs, listen: SocketAddr, work_root: PathBuf) -> u8 {
    let listener = match tokio::net::TcpListener::bind(listen).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("error: cannot listen on {listen}: {error}");
            return exit::USAGE;
        }
    };
    let bound = listener.local_addr().unwrap_or(listen);
    let options = || {
        ServiceOptions::new()
            .inactivity_timeout(Duration::from_secs_f64(args.suspend_after))
            .abort_timeout(ABORT)
    };
    let endpoint = Endpoint::builder()
        .bind(
            FuseraftSession {
                work_root: work_root.clone(),
                inline_limit: args.inline_limit,
                trust_mcp: args.trust_mcp,
            }
            .into_service_definition()
            // Its events and history grow with its turns: a turn fetches only the keys it reads.
            .options(options().enable_lazy_state(true)),
        )
        .bind(
            FuseraftQuestion
                .into_service_definition()
                .options(options()),
        )
        .bind(
            FuseraftSchedule
                .into_service_definition()
                .options(options()),
        )
        .bind(FuseraftNames.into_service_definition().options(options()))
        .build();
    let server = tokio::spawn(HttpServer::new(endpoint).serve(listener));
    if let Some(addr) = &args.front {
        if let Err(message) = start_front(addr, &args.ingress).await {
            eprintln!("error: {message}");
            server.abort();
            return exit::USAGE;
        }
    }
    let uri = args
        .advertise
        .clone()
        .unwrap_or_else(|| format!("http://{bound}"));
    if !args.no_register {
        if let Err(message) = client::register(&args.restate, &uri).await {
            eprintln!("error: {message}");
            server.abort();
            return exit::USAGE;
        }
    }
    let registered = if args.no_register {
        format!("the server calls {uri}, registered elsewhere")
    } else {
        format!("registered as {uri}")
    };
    eprintln!(
        "fuseraft serve: serving sessions on {bound} ({registered}); work dirs under {}",
        work_root.display()
    );
    stopped().await;
    server.abort();
    exit::OK
}

/// Starts the front (`--front ADDR`) before the ingress at `ingress`, its token from
/// `FUSERAFT_SERVE_TOKEN` or made now and printed once.
async fn start_front(addr: &str, ingress: &str) -> Result<(), String> {
    let listener = front::bind(addr).await?;
    let bound = listener.local_addr().map_err(|error| error.to_string())?;
    let token = match std::env::var("FUSERAFT_SERVE_TOKEN") {
        Ok(token) if token.len() >= 16 => {
            eprintln!(
                "fuseraft serve: front on http://{bound}, its token from FUSERAFT_SERVE_TOKEN"
            );
            token
        }
        Ok(_) => return Err("FUSERAFT_SERVE_TOKEN must be at least 16 characters".to_string()),
        Err(_) => {
            let token = crate::ui::server::token()?;
            eprintln!(
                "fuseraft serve: front on http://{bound}; clients set FUSERAFT_SERVE_TOKEN={token} and use --on http://{bound}"
            );
            token
        }
    };
    tokio::spawn(front::serve(listener, ingress.to_string(), token));
    Ok(())
}

/// Resolves at SIGINT or SIGTERM.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let (Ok(mut interrupt), Ok(mut terminate)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
