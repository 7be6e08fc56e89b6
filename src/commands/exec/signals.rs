//! Stop signals: Ctrl-C (SIGINT), SIGTERM and SIGHUP each cancel a run the same way. The
//! run's one `select!` (`running.rs`) races the drive against them; a prompt the operator
//! is reading (on a thread of its own) learns of the signal through [`Stopped`] and returns,
//! and [`Asking`] says what was being asked, for the run's last line.

use std::sync::{Arc, Mutex, OnceLock};

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP.
pub(super) struct StopSignals {
    #[cfg(unix)]
    listeners: [(&'static str, Option<tokio::signal::unix::Signal>); 3],
}

impl StopSignals {
    /// Installs the handlers now (not on first poll), so no signal is missed once the run
    /// has started.
    pub(super) fn listen() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            StopSignals {
                listeners: [
                    ("SIGINT", signal(SignalKind::interrupt()).ok()),
                    ("SIGTERM", signal(SignalKind::terminate()).ok()),
                    ("SIGHUP", signal(SignalKind::hangup()).ok()),
                ],
            }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// The name of the first signal received.
    pub(super) async fn recv(self) -> &'static str {
        #[cfg(unix)]
        {
            let [(int, mut a), (term, mut b), (hup, mut c)] = self.listeners;
            tokio::select! {
                _ = received(&mut a) => int,
                _ = received(&mut b) => term,
                _ = received(&mut c) => hup,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

/// Resolves when `listener` receives its signal; never when it could not be installed.
#[cfg(unix)]
async fn received(listener: &mut Option<tokio::signal::unix::Signal>) {
    match listener {
        Some(listener) => {
            if listener.recv().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

/// The stop signal received, once one is: a prompt polls it and gives up.
pub(super) type Stopped = Arc<OnceLock<&'static str>>;

/// What the operator is being asked right now ("an approval", "a pause"), if anything.
#[derive(Clone, Default)]
pub(super) struct Asking(Arc<Mutex<Option<&'static str>>>);

impl Asking {
    /// Runs `prompt`, marked as asking `what` while it waits.
    pub(super) fn during<T>(&self, what: &'static str, prompt: impl FnOnce() -> T) -> T {
        self.set(Some(what));
        let answer = prompt();
        self.set(None);
        answer
    }

    /// What is being asked now.
    pub(super) fn now(&self) -> Option<&'static str> {
        self.0.lock().ok().and_then(|asking| *asking)
    }

    fn set(&self, what: Option<&'static str>) {
        if let Ok(mut asking) = self.0.lock() {
            *asking = what;
        }
    }
}

/// A [`Stopped`] set by a thread with a runtime of its own, for a prompt before the run
/// starts (trusting a config's MCP servers), when no run's `select!` listens yet.
pub(super) fn watch_stop_signals() -> Stopped {
    let stopped = Stopped::default();
    let set = stopped.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    if let Ok(runtime) = runtime {
        // Installed here, before the run starts; the thread lives as long as the process.
        let stop = runtime.block_on(async { StopSignals::listen() });
        std::thread::spawn(move || {
            let signal = runtime.block_on(stop.recv());
            let _ = set.set(signal);
        });
    }
    stopped
}
