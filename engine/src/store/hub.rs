//! The watch hub: the committer's fan-out of committed changes to every open watch.

use super::keys::EventType;
use flume::{Receiver, Sender};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

impl ChangeEvent {
    /// Whether a watch of type `type_id` in `namespace` (all with `None`) is sent this change.
    pub(crate) fn concerns(&self, type_id: u32, namespace: Option<&str>) -> bool {
        self.type_id == type_id && namespace.is_none_or(|ns| ns == self.namespace)
    }
}

/// What a watch receives from the hub.
pub(crate) enum Msg {
    /// A committed group of changes, shared by every watcher it concerns (one message and one
    /// wake-up per watcher per group), with how many of them concern this watcher.
    Changes(Arc<[Arc<ChangeEvent>]>, usize),
    /// A bookmark the store was asked for ([`Store::request_bookmark`](super::Store::request_bookmark)).
    Bookmark(u64),
}

impl Msg {
    /// The events this message counts against the watcher's buffer.
    pub(crate) fn weight(&self) -> usize {
        match self {
            Msg::Changes(_, n) => *n,
            Msg::Bookmark(_) => 1,
        }
    }
}

struct Slot {
    id: u64,
    type_id: u32,
    namespace: Option<String>,
    tx: Sender<Msg>,
    /// Events sent and not yet received by the watch (it subtracts what it takes).
    queued: Arc<AtomicUsize>,
    capacity: usize,
    overflowed: Arc<AtomicBool>,
}

impl Slot {
    fn wants(&self, e: &ChangeEvent) -> bool {
        e.concerns(self.type_id, self.namespace.as_deref())
    }

    /// Queues `msg` unless that takes the watcher past its buffer; `false` drops the slot.
    fn offer(&self, msg: Msg) -> bool {
        let n = msg.weight();
        if self.queued.load(Ordering::SeqCst) + n > self.capacity {
            self.overflowed.store(true, Ordering::SeqCst);
            return false;
        }
        self.queued.fetch_add(n, Ordering::SeqCst);
        self.tx.send(msg).is_ok()
    }
}

/// A watch's end of the hub: its messages and the count of events queued for it.
pub(crate) struct Inbox {
    pub rx: Receiver<Msg>,
    pub queued: Arc<AtomicUsize>,
    pub overflowed: Arc<AtomicBool>,
}

/// The open watches, fed by the committer.
#[derive(Default)]
pub(crate) struct Hub {
    slots: Vec<Slot>,
    next_id: u64,
}

impl Hub {
    /// Sends a committed group to every interested watcher without blocking; a watcher whose
    /// buffer would overflow is dropped (its watch ends with an error once it drained what it
    /// has).
    pub(crate) fn broadcast(&mut self, group: &Arc<[Arc<ChangeEvent>]>) {
        self.slots.retain(|s| {
            let n = group.iter().filter(|e| s.wants(e)).count();
            n == 0 || s.offer(Msg::Changes(group.clone(), n))
        });
    }

    /// Asks every watcher for a bookmark at `revision` (skipped for watchers whose buffer is full).
    pub(crate) fn bookmark_all(&self, revision: u64) {
        for s in &self.slots {
            if s.queued.load(Ordering::SeqCst) < s.capacity {
                s.queued.fetch_add(1, Ordering::SeqCst);
                let _ = s.tx.send(Msg::Bookmark(revision));
            }
        }
    }

    /// Ends every watch (the store is closing).
    pub(crate) fn close_all(&mut self) {
        self.slots.clear();
    }

    /// Opens a watch's slot; `capacity` events may be queued for it.
    pub(super) fn register(&mut self, type_id: u32, namespace: Option<String>, capacity: usize) -> (u64, Inbox) {
        let (tx, rx) = flume::unbounded();
        let (queued, overflowed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        self.next_id += 1;
        self.slots.push(Slot {
            id: self.next_id,
            type_id,
            namespace,
            tx,
            queued: queued.clone(),
            capacity,
            overflowed: overflowed.clone(),
        });
        (self.next_id, Inbox { rx, queued, overflowed })
    }

    pub(super) fn remove(&mut self, id: u64) {
        self.slots.retain(|s| s.id != id);
    }
}
