//! What a run shows on the terminal: a header per turn, tool calls, the reply (streamed as
//! tokens arrive when the provider streams), routing, corrections, and a spinner line while
//! a model has not answered yet. With `--json` all of it goes to standard error.
//!
//! On a terminal every event is shown as it happens. Redirected to a file or a pipe, a turn's
//! lines are collected and written at once when the next turn starts or the run ends, so a
//! fast run makes one write per turn instead of one per line.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use fuseraft_vm::event::Event;
use fuseraft_vm::history::Role;
use fuseraft_vm::machine::Run;

/// Shared between the event callback and the provider's token sink.
pub struct Terminal {
    json_mode: bool,
    /// Tokens are printed as they arrive (so a turn's reply is not printed again at its end).
    streaming: bool,
    /// A "waiting" line is on screen and must be cleared before output.
    waiting: AtomicBool,
    /// Tokens of the current turn were printed and the line is not finished.
    mid_reply: AtomicBool,
    tty: bool,
    /// Output not written yet.
    pending: Mutex<Vec<u8>>,
}

impl Terminal {
    pub fn new(json_mode: bool, streaming: bool) -> Arc<Terminal> {
        let tty = if json_mode {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
        Arc::new(Terminal {
            json_mode,
            streaming,
            waiting: AtomicBool::new(false),
            mid_reply: AtomicBool::new(false),
            tty,
            pending: Mutex::new(Vec::new()),
        })
    }

    /// Writes what is pending, in one write.
    pub fn flush(&self) {
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        self.write_out(&mut pending);
    }

    fn write_out(&self, pending: &mut Vec<u8>) {
        if pending.is_empty() {
            return;
        }
        let _ = if self.json_mode {
            let mut out = std::io::stderr().lock();
            out.write_all(pending).and_then(|_| out.flush())
        } else {
            let mut out = std::io::stdout().lock();
            out.write_all(pending).and_then(|_| out.flush())
        };
        pending.clear();
    }

    fn clear_waiting(&self, out: &mut Vec<u8>) {
        if self.waiting.swap(false, Ordering::SeqCst) && self.tty {
            let _ = write!(out, "\r\x1b[2K");
        }
    }

    /// A text delta from a streaming provider.
    pub fn token(&self, delta: &str) {
        let Ok(mut out) = self.pending.lock() else {
            return;
        };
        self.clear_waiting(&mut out);
        out.extend_from_slice(delta.as_bytes());
        self.write_out(&mut out);
        self.mid_reply
            .store(!delta.ends_with('\n'), Ordering::SeqCst);
    }

    pub fn event(&self, event: &Event, run: &Run) {
        let Ok(mut out) = self.pending.lock() else {
            return;
        };
        self.format(&mut out, event, run);
        if self.tty || matches!(event.event_type, "turn_start" | "session_end") {
            self.write_out(&mut out);
        }
    }

    fn format(&self, out: &mut Vec<u8>, event: &Event, run: &Run) {
        match event.event_type {
            "turn_start" => {
                let agent = event.agent.as_deref().unwrap_or("");
                let state = event
                    .payload
                    .get("state")
                    .and_then(|s| s.as_str())
                    .unwrap_or("");
                let _ = writeln!(out, "── turn {} · {agent} · {state} ──", event.turn + 1);
                if self.streaming && self.tty {
                    let _ = write!(out, "  ⋯ waiting for {agent}");
                    self.waiting.store(true, Ordering::SeqCst);
                }
            }
            "turn_end" => {
                self.clear_waiting(out);
                if self.mid_reply.swap(false, Ordering::SeqCst) {
                    let _ = writeln!(out);
                }
                let Some(message) = run.history.iter().rev().find(|m| m.role == Role::Assistant)
                else {
                    return;
                };
                for call in &message.tool_calls {
                    let outcome = if call.ok { "ok" } else { "failed" };
                    let _ = writeln!(out, "  ⚙ {} ({outcome})", call.name);
                }
                if !self.streaming && !message.content.is_empty() {
                    let _ = writeln!(out, "{}", message.content.trim_end());
                }
            }
            "agent_routed" => {
                let to = event
                    .payload
                    .get("to")
                    .and_then(|to| to.as_str())
                    .unwrap_or("");
                let signal = event
                    .payload
                    .get("signal")
                    .and_then(|signal| signal.as_str());
                let via = signal
                    .map(|signal| format!(" on `{signal}`"))
                    .unwrap_or_default();
                let _ = writeln!(out, "  → {to}{via}");
            }
            "correction_injected"
            | "validation_fail"
            | "recovery_activated"
            | "warning"
            | "tool_blocked"
            | "model_error" => {
                self.clear_waiting(out);
                let _ = writeln!(out, "  ! {} {}", event.event_type, event.payload);
            }
            _ => {}
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.flush();
    }
}
