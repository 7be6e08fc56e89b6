//! Another agent's message as an agent's prompt shows it (`[Agent]: text`), built once and
//! shared by every later prompt that carries it: a run's shared history reaches every agent
//! at every turn, so without this each call would copy the whole history again.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

/// After this many prompts without being shown, a view is dropped (a message left out of
/// later prompts, or replaced by bounding).
const KEEP_CALLS: u64 = 64;

/// The views built lately, by the address of the text they show.
#[derive(Debug, Default)]
pub(super) struct Views(Mutex<Kept>);

#[derive(Debug, Default)]
pub(super) struct Kept {
    by_text: HashMap<usize, View, BuildHasherDefault<AddressHash>>,
    /// Prompts assembled so far.
    calls: u64,
}

#[derive(Debug)]
struct View {
    /// The text shown. Holding it keeps its address from being reused by another text
    /// while the view is kept, so the address alone tells the same text.
    source: Arc<str>,
    agent: String,
    view: Arc<str>,
    /// The prompt that last showed it.
    used: u64,
}

/// The map's hasher: an address mixed by one wide multiplication (its low bits are
/// always zero, so it is not a hash by itself). Every message of every prompt is looked up,
/// so SipHash's cost shows.
#[derive(Default)]
pub(super) struct AddressHash(u64);

impl Hasher for AddressHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(byte));
        }
    }

    fn write_usize(&mut self, address: usize) {
        self.write_u64(address as u64);
    }

    fn write_u64(&mut self, word: u64) {
        let wide = u128::from(word) * 0x9e37_79b9_7f4a_7c15;
        self.0 = (wide as u64) ^ ((wide >> 64) as u64);
    }
}

/// A prompt being assembled: the views it shows are marked as used by it.
pub(super) struct Prompt<'v> {
    kept: std::sync::MutexGuard<'v, Kept>,
}

impl Views {
    /// Starts a prompt; every `calls`-th one drops the views nobody showed lately.
    pub(super) fn prompt(&self) -> Prompt<'_> {
        // A poisoned lock only means a panic elsewhere; the map is whole after every insert.
        let mut kept = self.0.lock().unwrap_or_else(|poison| poison.into_inner());
        kept.calls += 1;
        if kept.calls.is_multiple_of(KEEP_CALLS) {
            let oldest = kept.calls - KEEP_CALLS;
            kept.by_text.retain(|_, view| view.used >= oldest);
        }
        Prompt { kept }
    }
}

impl Prompt<'_> {
    /// `text` by `agent` as the prompt shows it: the view kept for this very text and
    /// author, or `build`'s, kept from now on.
    pub(super) fn view(
        &mut self,
        agent: &str,
        text: &Arc<str>,
        build: impl FnOnce() -> String,
    ) -> Arc<str> {
        let calls = self.kept.calls;
        let key = Arc::as_ptr(text).cast::<u8>() as usize;
        if let Some(view) = self.kept.by_text.get_mut(&key) {
            if Arc::ptr_eq(&view.source, text) && view.agent == agent {
                view.used = calls;
                return Arc::clone(&view.view);
            }
        }
        let view: Arc<str> = build().into();
        self.kept.by_text.insert(
            key,
            View {
                source: Arc::clone(text),
                agent: agent.to_string(),
                view: Arc::clone(&view),
                used: calls,
            },
        );
        view
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_is_built_once_per_text_and_author() {
        let views = Views::default();
        let text: Arc<str> = "the plan".into();
        let mut built = 0;
        let mut show = |agent: &str, text: &Arc<str>| {
            views.prompt().view(agent, text, || {
                built += 1;
                format!("[{agent}]: {text}")
            })
        };
        let first = show("Planner", &text);
        let again = show("Planner", &text);
        assert!(
            Arc::ptr_eq(&first, &again),
            "the second prompt shares the view"
        );
        assert_eq!(&*show("Critic", &text), "[Critic]: the plan");
        // The same words in another message are another text: built again, same result.
        let copy: Arc<str> = "the plan".into();
        assert_eq!(&*show("Critic", &copy), "[Critic]: the plan");
        assert_eq!(built, 3);
    }

    #[test]
    fn views_nobody_shows_are_dropped() {
        let views = Views::default();
        let text: Arc<str> = "old".into();
        views.prompt().view("A", &text, || "[A]: old".into());
        for _ in 0..2 * KEEP_CALLS {
            drop(views.prompt());
        }
        assert!(views.0.lock().unwrap().by_text.is_empty());
        assert_eq!(Arc::strong_count(&text), 1, "the text is no longer held");
    }
}
