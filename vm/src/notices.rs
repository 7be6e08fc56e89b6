//! What a provider did on its way to a reply (a retry, a request cut to fit its model's
//! window, a memory webhook that failed), queued as it happens for the driver, which hands
//! each out as a run event: the terminal, the events file, the web view and traces all see it.

use std::sync::Mutex;

use crate::effect::Caller;
use crate::event::EventKind;

/// One thing a provider did for `caller`'s call.
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    pub caller: Caller,
    pub kind: EventKind,
}

/// The notices not yet handed out, and a wake-up for a driver waiting on a call.
#[derive(Debug, Default)]
pub struct Notices {
    queue: Mutex<Vec<Notice>>,
    arrived: tokio::sync::Notify,
}

impl Notices {
    /// Queues `kind` for `caller` and wakes the driver.
    pub fn push(&self, caller: &Caller, kind: EventKind) {
        if let Ok(mut queue) = self.queue.lock() {
            queue.push(Notice {
                caller: caller.clone(),
                kind,
            });
        }
        self.arrived.notify_one();
    }

    /// The notices queued so far, oldest first; the queue is left empty.
    pub fn take(&self) -> Vec<Notice> {
        self.queue
            .lock()
            .map(|mut queue| std::mem::take(&mut *queue))
            .unwrap_or_default()
    }

    /// Returns once a notice was pushed since the last wake-up (at once if one was).
    pub async fn arrived(&self) {
        self.arrived.notified().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_pushed_notice_wakes_a_waiter_and_is_taken_once() {
        let notices = Notices::default();
        let kind = EventKind::Warning {
            message: "the memory webhook failed".into(),
            reason: None,
        };
        notices.push(&Caller::Manager, kind.clone());
        // The push came before the wait: the wait returns at once.
        notices.arrived().await;
        assert_eq!(
            notices.take(),
            [Notice {
                caller: Caller::Manager,
                kind
            }]
        );
        assert!(notices.take().is_empty());
    }
}
