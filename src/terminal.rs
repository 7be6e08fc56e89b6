//! What a run shows on the terminal: a header per turn, tool calls, the reply (streamed as
//! tokens arrive when the provider streams), routing, corrections, and a spinner line while
//! a model has not answered yet. With `--json` all of it goes to standard error.
//!
//! On a terminal every event is shown as it happens. Redirected to a file or a pipe, a turn's
//! lines are collected and written at once when the next turn starts or the run ends, so a
//! fast run makes one write per turn instead of one per line; streamed text goes out at most
//! every 50 ms rather than one write per token.
//!
//! Nothing a model, a tool or a config wrote reaches the terminal raw: [`neutralise`] shows
//! every control character but `\n` and `\t` (ESC, BEL, CR, DEL, the C1 range U+0080–U+009F
//! that some terminals read as CSI/OSC) and the bidirectional overrides escaped, so no
//! escape sequence can retitle the window, clear the screen or hide text.

mod lines;
mod magentic;

use fuseraft_vm::effect::Question;
use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use lines::Paint;

use fuseraft_vm::event::{Event, EventKind};
use fuseraft_vm::history::Role;
use fuseraft_vm::machine::Run;

/// Whether `c` must not reach a terminal as is: a control character other than `\n` and
/// `\t`, a bidirectional formatting character (which can reorder what is shown), or an
/// invisible one (zero-width spaces and joiners, the word joiner, the byte-order mark, the
/// soft hyphen), which would make `.fuseraft\u{200b}/sessions` read as `.fuseraft/sessions`.
fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{00ad}' | '\u{180e}' | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// Whether `text` holds an [`unsafe_char`]: `text.chars().any(unsafe_char)`, but passing
/// over 32 bytes at a time that are all printable ASCII, `\n` or `\t` (most of a reply; the
/// window's test compiles to a few vector instructions), so only the windows with a control
/// byte, DEL or a non-ASCII character are decoded.
fn has_unsafe(text: &str) -> bool {
    const WINDOW: usize = 32;
    fn plain(byte: u8) -> bool {
        matches!(byte, 0x20..=0x7e | b'\n' | b'\t')
    }
    let bytes = text.as_bytes();
    // Invariant: `at` is on a character boundary (a window passed over was all ASCII; the
    // slow path moves by whole characters).
    let mut at = 0;
    while let Some(window) = bytes
        .get(at..at + WINDOW)
        .and_then(|window| <&[u8; WINDOW]>::try_from(window).ok())
    {
        // No early exit inside the window, so the loop vectorizes.
        let odd = window
            .iter()
            .fold(0u8, |odd, &byte| odd | u8::from(!plain(byte)));
        if odd == 0 {
            at += WINDOW;
            continue;
        }
        let end = at + WINDOW;
        for c in text[at..].chars() {
            if unsafe_char(c) {
                return true;
            }
            at += c.len_utf8();
            if at >= end {
                break;
            }
        }
    }
    // The last window's worth, and short texts (names, signals): bytes first, characters
    // only when there is a byte that is not plain.
    !bytes[at..].iter().all(|&byte| plain(byte)) && text[at..].chars().any(unsafe_char)
}

/// `text` with every unsafe character shown escaped: `\x1b`, `\r`, `\u{9b}`, `\u{202e}`.
pub fn neutralise(text: &str) -> Cow<'_, str> {
    if !has_unsafe(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if unsafe_char(c) && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A writer that passes text on with every [`unsafe_char`] escaped as [`neutralise`] shows
/// it, for files people read with `cat` (the Markdown transcript): a character split across
/// two writes is held until it is whole.
pub struct Neutral<W: Write> {
    out: W,
    pending: Vec<u8>,
}

impl<W: Write> Neutral<W> {
    pub fn new(out: W) -> Neutral<W> {
        Neutral {
            out,
            pending: Vec::new(),
        }
    }
}

impl<W: Write> Write for Neutral<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        let whole = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            // Not UTF-8 at all: passed on as it is; an unfinished character waits.
            Err(error) if error.error_len().is_some() => self.pending.len(),
            Err(error) => error.valid_up_to(),
        };
        let rest = self.pending.split_off(whole);
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.out.write_all(neutralise(&text).as_bytes())?;
        self.pending = rest;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let rest = std::mem::take(&mut self.pending);
        self.out.write_all(&rest)?;
        self.out.flush()
    }
}

/// A JSON value as one line for a terminal: serde_json escapes C0 controls already; C1
/// controls, DEL and bidirectional overrides are escaped too (`\u009b`), still valid JSON.
pub fn json_line(value: &serde_json::Value) -> String {
    json_safe(value.to_string())
}

/// JSON text (one line or pretty) with C1 controls, DEL and bidirectional overrides escaped
/// as `\u009b`; serde_json escaped the C0 controls inside strings already, and the newlines
/// and tabs left are the layout's.
pub fn json_safe(text: String) -> String {
    if !has_unsafe(&text) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// What an approval asks, for the operator: which tool call (`from` is the agent, `to` the
/// action, e.g. `run `COMMAND``), which route (from a state to a state, or `end`, on a
/// signal), an escalated failure, the manager's plan, or a `human` step's line. The action
/// is shown whole, a line per line, with control characters escaped, so the text approved
/// is the text that runs.
pub fn approval_question(from: &str, to: &str, asked: &Question) -> String {
    let shown_lines = |text: &str, out: &mut String| {
        let shown = neutralise(text);
        for line in shown.split('\n') {
            out.push_str("    │ ");
            out.push_str(line);
            out.push('\n');
        }
        matches!(shown, Cow::Owned(_))
    };
    match asked {
        Question::ToolCall => {
            let mut text = format!("approve this tool call by agent `{}`?\n", neutralise(from));
            if shown_lines(to, &mut text) {
                text.push_str("    (control characters are shown escaped, as \\xNN or \\u{NN})\n");
            }
            text.push_str("approve tool call? [y/N] ");
            text
        }
        // A magentic plan review: yes lets the manager's plan (shown above) run, no stops.
        Question::PlanReview { .. } => "approve the manager's plan shown above? [y/N] ".to_string(),
        // A tama `human` step: the line typed is the step's input.
        Question::Human { context } => {
            let mut text = format!(
                "`{}` (state `{}`) asks the operator:\n",
                neutralise(from),
                neutralise(to)
            );
            shown_lines(context, &mut text);
            text.push_str("your answer: ");
            text
        }
        // An `EscalateToHuman` failure: yes lets the agent try again, no stops the run.
        Question::Escalation { why } => format!(
            "`{}` cannot go on to `{}`: {} (escalated); let it try again? [y/N] ",
            neutralise(from),
            neutralise(to),
            neutralise(why.trim())
        ),
        Question::Route { signal } => format!(
            "approve route `{}` → `{}` on `{}`? [y/N] ",
            neutralise(from),
            neutralise(to),
            neutralise(signal)
        ),
    }
}

/// Asks on the terminal (stderr, an answer line on stdin): `Ok(approved)`, or `Err(signal)`
/// when `stopped` is set first (a stop signal, seen by another thread, while this one waits).
pub fn ask(
    question: &str,
    stopped: &std::sync::OnceLock<&'static str>,
) -> Result<bool, &'static str> {
    Ok(read_answer(question, stopped)?
        .is_some_and(|line| matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")))
}

/// Prints `question` on stderr and reads one line from stdin: `Ok(Some(line))` (without its
/// line end), `Ok(None)` at the end of input, or `Err(signal)` when `stopped` is set first.
pub fn read_answer(
    question: &str,
    stopped: &std::sync::OnceLock<&'static str>,
) -> Result<Option<String>, &'static str> {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let (send, answer) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::stdin().read_line(&mut line).map(|_| line);
        let _ = send.send(read);
    });
    loop {
        match answer.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(Ok(line)) if !line.is_empty() => {
                return Ok(Some(line.trim_end_matches(['\n', '\r']).to_string()))
            }
            Ok(_) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Some(signal) = stopped.get() {
                    return Err(signal);
                }
            }
        }
    }
    // End of input: a terminal that hung up sends SIGHUP too; a signal on its way cancels
    // instead of counting as an answer.
    for _ in 0..25 {
        if let Some(signal) = stopped.get() {
            return Err(signal);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(None)
}

/// Shared between the event callback and the provider's token sink.
pub struct Terminal {
    json_mode: bool,
    /// Tokens are printed as they arrive (so a turn's reply is not printed again at its end).
    streaming: bool,
    /// A "waiting" line is on screen and must be cleared before output.
    waiting: AtomicBool,
    /// Tokens of the current turn were printed and the line is not finished.
    mid_reply: AtomicBool,
    /// Tokens of the current model request were printed (a retry discards them).
    printed: AtomicBool,
    tty: bool,
    paint: Paint,
    /// Whom the "waiting" line waits for, and since when (its elapsed time ticks).
    wait: Mutex<Option<(String, Instant)>>,
    /// Output not written yet.
    pending: Mutex<Vec<u8>>,
    /// When streamed text was last written to a file or a pipe.
    last_token_write: Mutex<Instant>,
    /// A model error's line, held until the next event: when that ends the run with this
    /// error, the run's footer says it, and the line would say it a second time.
    held_error: Mutex<Option<(String, String)>>,
    /// The reason of the last `model_retry` shown: the next one failing the same way says so.
    last_retry: Mutex<Option<String>>,
    /// The most characters of a notice's detail shown (all of it under `--verbose`).
    detail: usize,
}

/// How often streamed text that is not going to a terminal is written, at most.
const TOKEN_FLUSH: Duration = Duration::from_millis(50);
/// How much streamed text may wait to be written.
const TOKEN_BUFFER: usize = 64 * 1024;

/// The frames of the waiting line's spinner.
const SPINNER: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// How often the waiting line is redrawn.
const TICK: Duration = Duration::from_millis(120);

impl Terminal {
    /// The run's terminal output: standard output, or standard error under `--json`;
    /// `style` says whether it is coloured. With a streaming provider on a terminal, the
    /// waiting line shows a spinner and the time waited so far, redrawn by a thread that
    /// ends with the terminal.
    pub fn new(
        json_mode: bool,
        streaming: bool,
        verbose: bool,
        style: crate::render::Style,
    ) -> Arc<Terminal> {
        let tty = if json_mode {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
        let terminal = Arc::new(Terminal {
            json_mode,
            streaming,
            waiting: AtomicBool::new(false),
            mid_reply: AtomicBool::new(false),
            printed: AtomicBool::new(false),
            tty,
            paint: Paint {
                on: style.colour_for(tty),
            },
            wait: Mutex::new(None),
            pending: Mutex::new(Vec::new()),
            last_token_write: Mutex::new(Instant::now()),
            held_error: Mutex::new(None),
            last_retry: Mutex::new(None),
            detail: if verbose {
                usize::MAX
            } else {
                lines::DETAIL_CHARS
            },
        });
        if streaming && tty {
            let weak = Arc::downgrade(&terminal);
            std::thread::spawn(move || tick(&weak));
        }
        terminal
    }

    /// Redraws the waiting line, if one is on screen.
    fn redraw_waiting(&self, frame: usize) {
        let Ok(mut out) = self.pending.lock() else {
            return;
        };
        if !self.waiting.load(Ordering::SeqCst) {
            return;
        }
        let Some(line) = self.wait.lock().ok().and_then(|wait| {
            wait.as_ref()
                .map(|(agent, since)| waiting_line(agent, since.elapsed(), frame, self.paint))
        }) else {
            return;
        };
        let _ = write!(out, "\r\x1b[2K{line}");
        self.write_out(&mut out);
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

    /// Starts the waiting line for `agent` (already neutralised).
    fn start_waiting(&self, out: &mut Vec<u8>, agent: &str) {
        if let Ok(mut wait) = self.wait.lock() {
            *wait = Some((agent.to_string(), Instant::now()));
        }
        let _ = write!(
            out,
            "{}",
            waiting_line(agent, Duration::ZERO, 0, self.paint)
        );
        self.waiting.store(true, Ordering::SeqCst);
    }

    /// A text delta from a streaming provider. A terminal shows each as it comes; a file or
    /// a pipe gets what came at most every [`TOKEN_FLUSH`] (or when [`TOKEN_BUFFER`] bytes
    /// wait), so a fast stream costs a few writes per reply instead of one per token, and a
    /// slow one is still written as it comes; whatever waits is written before the next
    /// event.
    pub fn token(&self, delta: &str) {
        let Ok(mut out) = self.pending.lock() else {
            return;
        };
        self.clear_waiting(&mut out);
        out.extend_from_slice(neutralise(delta).as_bytes());
        let due = self.tty
            || out.len() >= TOKEN_BUFFER
            || self.last_token_write.lock().is_ok_and(|mut last| {
                let due = last.elapsed() >= TOKEN_FLUSH;
                if due {
                    *last = Instant::now();
                }
                due
            });
        if due {
            self.write_out(&mut out);
        }
        self.mid_reply
            .store(!delta.ends_with('\n'), Ordering::SeqCst);
        self.printed.store(true, Ordering::SeqCst);
    }

    /// A `model_retry` or `request_fitted` line: `mark agent: words`, on a line of its own
    /// (after a reply cut short), saying that the text a failed attempt streamed (above it)
    /// is discarded, not continued by the retry. A retry that failed as the one before says
    /// so instead of the whole reason again.
    fn request_line(&self, out: &mut Vec<u8>, event: &Event) {
        self.clear_waiting(out);
        if self.mid_reply.swap(false, Ordering::SeqCst) {
            let _ = writeln!(out);
        }
        let (mark, words, discarded) = match &event.kind {
            EventKind::ModelRetry { reason, .. } => {
                let Ok(mut last) = self.last_retry.lock() else {
                    return;
                };
                let again = last.as_deref() == Some(reason.as_str());
                let words = crate::ui::cards::retry(&event.kind, again).unwrap_or_default();
                *last = Some(reason.clone());
                let discarded = self.printed.swap(false, Ordering::SeqCst);
                ("↻", words, discarded)
            }
            kind => ("✂", crate::ui::cards::describe(kind), false),
        };
        let discarded = if discarded {
            " · the partial reply above is discarded"
        } else {
            ""
        };
        let who = match &event.agent {
            Some(agent) => format!("{}: ", neutralise(agent)),
            None => String::new(),
        };
        let _ = writeln!(out, "  {mark} {who}{}{discarded}", neutralise(&words));
    }

    pub fn event(&self, event: &Event, run: &Run) {
        let Ok(mut out) = self.pending.lock() else {
            return;
        };
        self.format(&mut out, event, run);
        if self.tty
            || matches!(
                event.kind,
                EventKind::TurnStart { .. }
                    | EventKind::SessionEnd { .. }
                    | EventKind::ModelRetry { .. }
                    | EventKind::RequestFitted { .. }
            )
        {
            self.write_out(&mut out);
        }
    }

    fn format(&self, out: &mut Vec<u8>, event: &Event, run: &Run) {
        self.release_held_error(out, &event.kind);
        match &event.kind {
            EventKind::TurnStart { state } => {
                let agent = event.agent.as_deref().unwrap_or("");
                let (agent, state) = (neutralise(agent), neutralise(state));
                // `── turn N · agent · state ──`, written in place.
                self.paint.line(out, lines::HEADER, |out| {
                    let _ = write!(out, "── turn {} · ", event.turn + 1);
                    out.extend_from_slice(agent.as_bytes());
                    out.extend_from_slice(" · ".as_bytes());
                    out.extend_from_slice(state.as_bytes());
                    out.extend_from_slice(" ──".as_bytes());
                });
                self.printed.store(false, Ordering::SeqCst);
                if self.streaming && self.tty {
                    self.start_waiting(out, &agent);
                }
            }
            EventKind::TurnEnd { state, .. } => {
                self.clear_waiting(out);
                if self.mid_reply.swap(false, Ordering::SeqCst) {
                    let _ = writeln!(out);
                }
                // A fork's branch is in the run's fork until the fork joins.
                let branch = run.fork.iter().flatten().find(|done| done.state == *state);
                let (tool_calls, content) = match branch {
                    Some(done) => (&done.tool_calls, done.text.as_str()),
                    None => {
                        let Some(message) =
                            run.history.iter().rev().find(|m| m.role == Role::Assistant)
                        else {
                            return;
                        };
                        (&message.tool_calls, &*message.content)
                    }
                };
                for call in tool_calls {
                    let argument = lines::key_argument(call)
                        .map(|argument| format!(" {argument}"))
                        .unwrap_or_default();
                    let line = format!("  ⚙ {}{argument}", neutralise(&call.name));
                    let _ = if call.ok {
                        writeln!(out, "{line} {}", self.paint.dim("(ok)"))
                    } else {
                        writeln!(out, "{line} {}", self.paint.bad("(failed)"))
                    };
                }
                if !self.streaming && !content.is_empty() {
                    out.extend_from_slice(neutralise(content.trim_end()).as_bytes());
                    out.push(b'\n');
                }
                if self.streaming {
                    let tokens = format!("  · {}", turn_tokens(&event.kind));
                    let _ = writeln!(out, "{}", self.paint.dim(&tokens));
                }
            }
            EventKind::AgentRouted { to, signal, .. } => {
                // `  → to on `signal``, written in place.
                self.paint.line(out, lines::GOOD, |out| {
                    out.extend_from_slice("  → ".as_bytes());
                    out.extend_from_slice(neutralise(to).as_bytes());
                    if let Some(signal) = signal {
                        out.extend_from_slice(b" on `");
                        out.extend_from_slice(neutralise(signal).as_bytes());
                        out.push(b'`');
                    }
                });
            }
            EventKind::ModelRetry { .. } | EventKind::RequestFitted { .. } => {
                self.request_line(out, event)
            }
            EventKind::ModelError { error } if !self.json_mode => {
                let line = lines::notice(event, self.paint, self.detail);
                if let (Some(line), Ok(mut held)) = (line, self.held_error.lock()) {
                    self.clear_waiting(out);
                    *held = Some((error.clone(), line));
                }
            }
            _ => {
                let line = lines::notice(event, self.paint, self.detail)
                    .or_else(|| magentic::line(event, self.paint));
                if let Some(line) = line {
                    self.clear_waiting(out);
                    let _ = writeln!(out, "{line}");
                }
            }
        }
    }
}

impl Terminal {
    /// Writes the held model error's line before `next`, unless `next` is the end of a turn
    /// (still held) or the end of the run with that error as its reason (the footer says it).
    fn release_held_error(&self, out: &mut Vec<u8>, next: &EventKind) {
        let Ok(mut held) = self.held_error.lock() else {
            return;
        };
        let Some((error, line)) = held.take() else {
            return;
        };
        match next {
            EventKind::TurnEnd { .. } => *held = Some((error, line)),
            EventKind::SessionEnd {
                reason: Some(reason),
                ..
            } if reason.contains(&error) => {}
            _ => {
                let _ = writeln!(out, "{line}");
            }
        }
    }
}

/// Redraws `terminal`'s waiting line every [`TICK`] until the terminal is gone.
fn tick(terminal: &Weak<Terminal>) {
    let mut frame = 0usize;
    loop {
        std::thread::sleep(TICK);
        let Some(terminal) = terminal.upgrade() else {
            return;
        };
        frame = frame.wrapping_add(1);
        terminal.redraw_waiting(frame);
    }
}

/// The waiting line: a spinner frame, whom it waits for and for how long (`3.2s`, `1m05s`).
fn waiting_line(agent: &str, waited: Duration, frame: usize, paint: Paint) -> String {
    let secs = waited.as_secs_f64();
    let elapsed = if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!("{}m{:02}s", waited.as_secs() / 60, waited.as_secs() % 60)
    };
    let spinner = SPINNER[frame % SPINNER.len()];
    paint.dim(&format!("  {spinner} waiting for {agent} · {elapsed}"))
}

/// A turn's tokens from its `turn_end` payload: `tokens in 120 / out 42`, or `unknown` /
/// `partial` when the driver marked calls whose server reported no usage; and its cost
/// when the driver added one.
fn turn_tokens(kind: &EventKind) -> String {
    let EventKind::TurnEnd {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens,
        cache_write_tokens,
        usage,
        cost,
        ..
    } = kind
    else {
        return String::new();
    };
    let tokens = match usage {
        Some(usage) if !usage.known => "tokens unknown (the server reported no usage)".to_string(),
        Some(usage) if !usage.complete => format!("tokens in {input}+ (partial) / out {output}+"),
        _ => format!("tokens in {input} / out {output}"),
    };
    // Prompt caching: of the input tokens, those read from and written to the cache.
    let (read, written) = (
        cache_read_tokens.unwrap_or(0),
        cache_write_tokens.unwrap_or(0),
    );
    let tokens = if read > 0 || written > 0 {
        format!("{tokens} (prompt cache: {read} read, {written} written)")
    } else {
        tokens
    };
    match cost.map(|cost| cost.usd) {
        Some(usd) => format!("{tokens} · cost ${usd:.4}"),
        None => tokens,
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(neutralise("plain\ttext\n"), "plain\ttext\n");
        let hostile = "\x1b]0;pwned\x07 \x1b[2J \u{9b}31m safe\rrm -rf ~ \u{202e}txt.exe \x7f";
        let shown = neutralise(hostile);
        assert_eq!(
            shown,
            "\\x1b]0;pwned\\x07 \\x1b[2J \\u{9b}31m safe\\rrm -rf ~ \\u{202e}txt.exe \\x7f"
        );
        assert!(!shown.chars().any(unsafe_char));
        let invisible = neutralise("write_file .fuseraft\u{200b}/sessions/x \u{feff}\u{2060}");
        assert_eq!(
            invisible,
            "write_file .fuseraft\\u{200b}/sessions/x \\u{feff}\\u{2060}"
        );
        let json = json_line(&serde_json::json!({ "text": hostile }));
        assert!(!json.chars().any(unsafe_char), "{json}");
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["text"], hostile, "still the same JSON");
    }

    #[test]
    fn a_neutral_writer_escapes_characters_split_across_writes() {
        let mut out = Neutral::new(Vec::new());
        let text = "ok \x1b]0;x\x07 \u{9b}2J \u{202e}é\n";
        for byte in text.as_bytes() {
            out.write_all(std::slice::from_ref(byte)).unwrap();
        }
        out.flush().unwrap();
        let shown = String::from_utf8(out.out).unwrap();
        assert_eq!(shown, neutralise(text));
        assert!(!shown.chars().any(unsafe_char), "{shown:?}");
    }

    #[test]
    fn the_fast_scan_finds_what_the_character_test_finds() {
        // Every character near a boundary of what is unsafe, at every offset within and
        // across two 32-byte windows and the tail, alone and after an earlier harmless
        // non-ASCII one.
        let mut probes: Vec<char> = (0u32..0x250).filter_map(char::from_u32).collect();
        probes.extend(['\u{061b}', '\u{061c}', '\u{061d}', '\u{200d}', '\u{2010}']);
        probes.extend(('\u{2028}'..='\u{2030}').chain('\u{2064}'..='\u{206a}'));
        probes.extend(['\u{fffd}', '\u{1f600}', '\u{10ffff}']);
        for c in probes {
            for before in 0..72 {
                for prefix in ["", "é", "\u{2014}"] {
                    let text = format!("{prefix}{}{c}tail text\n", "a".repeat(before));
                    assert_eq!(
                        has_unsafe(&text),
                        text.chars().any(unsafe_char),
                        "{:?} at {before} after {prefix:?}",
                        c
                    );
                }
            }
        }
        assert!(!has_unsafe(
            "a reply of many lines\n\twith tabs, é and \u{2014}\n"
        ));
        assert!(has_unsafe("twelve bytes\x7f"));
    }

    #[test]
    fn approvals_say_what_they_approve_and_show_it_whole() {
        let route = |signal: &str| Question::Route {
            signal: signal.to_string(),
        };
        assert_eq!(
            approval_question("Build", "Deploy", &route("DEPLOY")),
            "approve route `Build` → `Deploy` on `DEPLOY`? [y/N] "
        );
        // A route whose signal reads `tool` is still a route: the question is typed.
        assert!(approval_question("Build", "end", &route("tool")).starts_with("approve route"));
        // An escalated failure asks whether the agent may try again, not to approve a route.
        let why = "RequireShellPass failed".to_string();
        assert_eq!(
            approval_question("Build", "Deploy", &Question::Escalation { why }),
            "`Build` cannot go on to `Deploy`: RequireShellPass failed (escalated); let it try again? [y/N] "
        );
        // A magentic plan review asks about the plan the terminal has just shown.
        let plan = Question::PlanReview {
            first_line: "1. Research".into(),
        };
        assert_eq!(
            approval_question("select", "plan", &plan),
            "approve the manager's plan shown above? [y/N] "
        );
        let hidden = "run `echo hello\rrm -rf ~/important # \x1b[2K`";
        let tool = approval_question("Dev", hidden, &Question::ToolCall);
        assert_eq!(
            tool,
            "approve this tool call by agent `Dev`?\n    │ run `echo hello\\rrm -rf ~/important # \\x1b[2K`\n    (control characters are shown escaped, as \\xNN or \\u{NN})\napprove tool call? [y/N] "
        );
        let lines = approval_question(
            "Dev",
            "run `set -e\nmake\nmake install`",
            &Question::ToolCall,
        );
        assert!(
            lines.contains("    │ run `set -e\n    │ make\n    │ make install`\n"),
            "{lines}"
        );
        assert!(!lines.contains("route"));
        let human = Question::Human {
            context: "Publish?".into(),
        };
        assert_eq!(
            approval_question("ask", "ask/resume", &human),
            "`ask` (state `ask/resume`) asks the operator:\n    │ Publish?\nyour answer: "
        );
    }

    #[test]
    fn a_turns_tokens_say_when_unknown_or_partial_and_show_its_cost() {
        let payload = |extra: serde_json::Value| {
            let mut payload = serde_json::json!({
                "state": "Dev", "input_tokens": 120, "output_tokens": 42, "tool_calls": 0,
            });
            for (key, value) in extra.as_object().unwrap() {
                payload[key] = value.clone();
            }
            let event = serde_json::json!({"event_type": "turn_end", "payload": payload});
            serde_json::from_value::<EventKind>(event).unwrap()
        };
        assert_eq!(
            turn_tokens(&payload(serde_json::json!({}))),
            "tokens in 120 / out 42"
        );
        assert_eq!(
            turn_tokens(&payload(
                serde_json::json!({"usage": {"input_tokens": 120, "output_tokens": 42, "complete": false, "known": true}})
            )),
            "tokens in 120+ (partial) / out 42+"
        );
        assert_eq!(
            turn_tokens(&payload(
                serde_json::json!({"usage": {"input_tokens": 0, "output_tokens": 0, "complete": false, "known": false}})
            )),
            "tokens unknown (the server reported no usage)"
        );
        assert_eq!(
            turn_tokens(&payload(
                serde_json::json!({"cost": {"usd": 0.00072, "complete": true}})
            )),
            "tokens in 120 / out 42 · cost $0.0007"
        );
        assert_eq!(
            turn_tokens(&payload(
                serde_json::json!({"cache_read_tokens": 100, "cache_write_tokens": 0})
            )),
            "tokens in 120 / out 42 (prompt cache: 100 read, 0 written)"
        );
    }
}
