//! The node's stop signal: fired once (by the `Shutdown` RPC, a signal handler, or a test),
//! awaited by everything that must wind down.

use std::sync::Arc;

use tokio::sync::watch;

/// A one-shot, cloneable stop signal that carries its reason. Clones share the signal.
#[derive(Clone, Debug)]
pub struct Shutdown {
    /// `None` until fired; then the reason, which never changes again.
    reason: Arc<watch::Sender<Option<String>>>,
}

impl Default for Shutdown {
    fn default() -> Shutdown {
        Shutdown::new()
    }
}

impl Shutdown {
    /// A signal not yet fired.
    pub fn new() -> Shutdown {
        let (sender, _) = watch::channel(None);
        Shutdown {
            reason: Arc::new(sender),
        }
    }

    /// Fires the signal with `reason`; whether this call was the first (later reasons are dropped).
    pub fn trigger(&self, reason: &str) -> bool {
        self.reason.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(reason.to_owned());
            true
        })
    }

    /// The reason, if the signal has fired.
    pub fn reason(&self) -> Option<String> {
        self.reason.borrow().clone()
    }

    /// Waits until the signal fires, then returns its reason. Returns at once if it already has.
    pub async fn triggered(&self) -> String {
        let mut receiver = self.reason.subscribe();
        // `wait_for` looks at the current value first, so a trigger that came before
        // `subscribe` is not missed. It fails only if the sender is dropped, and `self` holds it.
        let reason = receiver.wait_for(Option::is_some).await;
        reason
            .ok()
            .and_then(|reason| reason.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_reason_wins_and_waiters_see_it() {
        let shutdown = Shutdown::new();
        let waiter = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { shutdown.triggered().await }
        });
        assert_eq!(shutdown.reason(), None);
        assert!(shutdown.trigger("operator asked"));
        assert!(!shutdown.trigger("second"));
        assert_eq!(waiter.await.unwrap(), "operator asked");
        // A waiter that arrives late returns at once.
        assert_eq!(shutdown.triggered().await, "operator asked");
        assert_eq!(shutdown.clone().reason().as_deref(), Some("operator asked"));
    }
}
