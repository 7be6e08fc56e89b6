//! The run's event history and its live broadcast: every message published is kept (so a
//! page that connects late, or reloads, replays the run so far) and sent to every page that
//! listens. A message's index in the history is its server-sent-event id, so a page that
//! reconnects with `Last-Event-ID` continues after the last message it saw.

use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

/// How many messages a slow page may fall behind before it is sent a resync (it reconnects
/// and replays from its last id).
const LAG: usize = 4096;

/// One message: its index and its JSON text.
pub type Message = (usize, Arc<str>);

pub struct Hub {
    history: Mutex<Vec<Arc<str>>>,
    live: broadcast::Sender<Message>,
}

impl Default for Hub {
    fn default() -> Hub {
        Hub {
            history: Mutex::new(Vec::new()),
            live: broadcast::channel(LAG).0,
        }
    }
}

impl Hub {
    /// Keeps `text` and sends it to every listener.
    pub fn publish(&self, text: String) {
        let Ok(mut history) = self.history.lock() else {
            return;
        };
        let text: Arc<str> = text.into();
        let index = history.len();
        history.push(Arc::clone(&text));
        // Sent under the lock, so a subscriber sees each message once: in its replay or live.
        let _ = self.live.send((index, text));
    }

    /// The messages from index `from` on, and a receiver for those published after them.
    pub fn subscribe(&self, from: usize) -> (Vec<Message>, broadcast::Receiver<Message>) {
        let history = self
            .history
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let replay = history
            .iter()
            .enumerate()
            .skip(from)
            .map(|(index, text)| (index, Arc::clone(text)))
            .collect();
        (replay, self.live.subscribe())
    }

    /// How many pages are listening.
    pub fn listeners(&self) -> usize {
        self.live.receiver_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_subscriber_replays_then_continues_without_gap_or_repeat() {
        let hub = Hub::default();
        hub.publish("a".into());
        hub.publish("b".into());
        let (replay, mut live) = hub.subscribe(0);
        hub.publish("c".into());
        let texts: Vec<&str> = replay.iter().map(|(_, text)| &**text).collect();
        assert_eq!(texts, ["a", "b"]);
        assert_eq!(live.try_recv().unwrap(), (2, Arc::from("c")));
        assert!(live.try_recv().is_err());
        let (replay, _) = hub.subscribe(2);
        assert_eq!(replay, vec![(2, Arc::from("c"))]);
        // The second receiver was dropped at once.
        assert_eq!(hub.listeners(), 1);
    }
}
