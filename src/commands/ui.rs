//! `fuseraft ui [--work-dir DIR | --on URL] [--addr ADDR]`: browse the sessions of a work
//! dir, or those a Restate server runs (answering their questions), in a web page
//! (loopback, a token in the URL) until interrupted.

use std::path::PathBuf;

use super::exit;
use crate::cli::UiArgs;
use crate::ui::server::{self, App, Mode};

pub fn run(args: &UiArgs) -> u8 {
    let work_dir = args.work_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let started = server::token().and_then(|token| {
        let listener = server::bind(args.addr.as_deref().unwrap_or(""))?;
        Ok((server::url(&listener, &token), listener, token))
    });
    let (url, listener, token) = match started {
        Ok(started) => started,
        Err(message) => {
            eprintln!("error: {message}");
            return exit::USAGE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            return exit::USAGE;
        }
    };
    let mode = match &args.on {
        Some(on) => {
            eprintln!("sessions of {on}: {url}");
            Mode::Served { on: on.clone() }
        }
        None => {
            eprintln!("sessions of `{}`: {url}", work_dir.display());
            Mode::Sessions { work_dir }
        }
    };
    eprintln!("(Ctrl-C stops)");
    let app = App { token, mode };
    let served = runtime.block_on(async {
        tokio::select! {
            served = server::serve(listener, app) => served,
            _ = tokio::signal::ctrl_c() => Ok(()),
        }
    });
    match served {
        Ok(()) => exit::OK,
        Err(error) => {
            eprintln!("error: the web view stopped: {error}");
            exit::USAGE
        }
    }
}
