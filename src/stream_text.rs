//! A model's reply as it streams, for the web view: the text deltas a provider hands out are
//! gathered and published as `ui_text` messages every [`BATCH`] at most (text that waited
//! that long goes at once, and all of it before the run's next event), so a turn card fills as the model writes, and a page that opens or
//! reloads mid-turn replays the text so far from the hub's history.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long streamed text may wait before it is published.
pub const BATCH: Duration = Duration::from_millis(50);

/// Text not published yet: whose, and since when the last was.
struct Pending {
    agent: String,
    text: String,
    last: Instant,
}

/// Where a batch of streamed text goes: `(turn, agent, text)`.
pub type Publish = Box<dyn Fn(u32, &str, String) + Send + Sync>;

/// Streamed text on its way to a page or a file.
pub struct TextSink {
    publish: Publish,
    pending: Mutex<Pending>,
    /// The turn the run is in (the newest `turn_start`).
    turn: AtomicU32,
}

impl TextSink {
    /// A sink publishing to `hub`, with a thread that publishes text left waiting (a stream
    /// that paused) once [`BATCH`] has passed; it ends with the sink.
    pub fn start(publish: Publish) -> Arc<TextSink> {
        let sink = Arc::new(TextSink::new(publish));
        let weak = Arc::downgrade(&sink);
        std::thread::spawn(move || loop {
            std::thread::sleep(BATCH);
            let Some(sink) = weak.upgrade() else {
                return;
            };
            sink.flush_due();
        });
        sink
    }

    fn new(publish: Publish) -> TextSink {
        TextSink {
            publish,
            pending: Mutex::new(Pending {
                agent: String::new(),
                text: String::new(),
                last: Instant::now(),
            }),
            turn: AtomicU32::new(0),
        }
    }

    /// Publishes what waited [`BATCH`] or longer.
    fn flush_due(&self) {
        if let Ok(mut pending) = self.pending.lock() {
            if pending.last.elapsed() >= BATCH {
                self.publish(&mut pending);
            }
        }
    }

    /// A delta of `agent`'s reply: published with what gathered before it once [`BATCH`]
    /// has passed since the last publication.
    pub fn text(&self, agent: &str, delta: &str) {
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        if pending.agent != agent {
            if !pending.text.is_empty() {
                self.publish(&mut pending);
            }
            pending.agent = agent.to_string();
        }
        pending.text.push_str(delta);
        if pending.last.elapsed() >= BATCH {
            self.publish(&mut pending);
        }
    }

    /// Publishes what is pending (before a run event, which may end the turn).
    pub fn flush(&self) {
        if let Ok(mut pending) = self.pending.lock() {
            self.publish(&mut pending);
        }
    }

    /// The run is now in `turn`.
    pub fn at_turn(&self, turn: u32) {
        self.turn.store(turn, Ordering::Relaxed);
    }

    fn publish(&self, pending: &mut Pending) {
        pending.last = Instant::now();
        if pending.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut pending.text);
        (self.publish)(self.turn.load(Ordering::Relaxed), &pending.agent, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_are_batched_and_flushed_whole() {
        let published = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&published);
        // (no flushing thread here: the test decides when time passes)
        let sink = TextSink::new(Box::new(move |turn, agent, text| {
            assert_eq!((turn, agent), (2, "Dev"));
            into.lock().unwrap().push(text);
        }));
        sink.at_turn(2);
        sink.text("Dev", "Hel");
        sink.text("Dev", "lo");
        std::thread::sleep(BATCH);
        sink.text("Dev", ", world");
        sink.text("Dev", "!");
        sink.flush();
        let texts = published.lock().unwrap().clone();
        assert_eq!(texts.concat(), "Hello, world!");
        assert!(texts.len() >= 2 && texts.len() <= 3, "{texts:?}");
    }
}
