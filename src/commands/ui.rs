//! `fuseraft ui [--work-dir DIR] [--addr ADDR]`: browse the sessions of a work dir in a
//! web page (loopback, a token in the URL) until interrupted.

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
    eprintln!("sessions of `{}`: {url}", work_dir.display());
    eprintln!("(Ctrl-C stops)");
    let app = App {
        token,
        mode: Mode::Sessions { work_dir },
    };
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
