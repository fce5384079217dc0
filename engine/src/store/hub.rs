//! The watch hub: the committer's fan-out of committed changes to every open watch.

use super::keys::EventType;
use flume::{Receiver, Sender, TrySendError};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A committed change as watchers see it.
#[derive(Debug)]
pub(crate) struct ChangeEvent {
    pub revision: u64,
    pub type_id: u32,
    pub namespace: String,
    pub event: EventType,
    pub object: Arc<Value>,
    pub prev: Option<Arc<Value>>,
}

/// What a watch receives from the hub.
pub(crate) enum Msg {
    /// A committed change.
    Change(Arc<ChangeEvent>),
    /// A bookmark the store was asked for ([`Store::request_bookmark`](super::Store::request_bookmark)).
    Bookmark(u64),
}

struct Slot {
    id: u64,
    type_id: u32,
    namespace: Option<String>,
    tx: Sender<Msg>,
    overflowed: Arc<AtomicBool>,
}

/// The open watches, fed by the committer.
#[derive(Default)]
pub(crate) struct Hub {
    slots: Vec<Slot>,
    next_id: u64,
}

impl Hub {
    /// Sends the changes to every interested watcher without blocking; a watcher whose buffer
    /// is full is dropped (its watch ends with an error once it drained what it has).
    pub(crate) fn broadcast(&mut self, events: &[Arc<ChangeEvent>]) {
        self.slots.retain(|s| {
            for e in events {
                if e.type_id != s.type_id || s.namespace.as_ref().is_some_and(|ns| *ns != e.namespace) {
                    continue;
                }
                match s.tx.try_send(Msg::Change(e.clone())) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        s.overflowed.store(true, Ordering::SeqCst);
                        return false;
                    }
                    Err(TrySendError::Disconnected(_)) => return false,
                }
            }
            true
        });
    }

    /// Asks every watcher for a bookmark at `revision` (skipped for watchers whose buffer is full).
    pub(crate) fn bookmark_all(&self, revision: u64) {
        for s in &self.slots {
            let _ = s.tx.try_send(Msg::Bookmark(revision));
        }
    }

    /// Ends every watch (the store is closing).
    pub(crate) fn close_all(&mut self) {
        self.slots.clear();
    }

    pub(super) fn register(&mut self, type_id: u32, namespace: Option<String>, capacity: usize) -> (u64, Receiver<Msg>, Arc<AtomicBool>) {
        let (tx, rx) = flume::bounded(capacity);
        let overflowed = Arc::new(AtomicBool::new(false));
        self.next_id += 1;
        self.slots.push(Slot { id: self.next_id, type_id, namespace, tx, overflowed: overflowed.clone() });
        (self.next_id, rx, overflowed)
    }

    pub(super) fn remove(&mut self, id: u64) {
        self.slots.retain(|s| s.id != id);
    }
}
