//! The etcd API's state in memory, shared by the committer and the readers: the key-value
//! and event types it answers with, the lease table and the etcd watchers' slots (fed by the
//! committer under the hub lock, as object watches are).

use flume::{Receiver, Sender};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A key as etcd returns it (`mvccpb.KeyValue`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyValue {
    /// The key.
    pub key: Vec<u8>,
    /// The revision of the key's creation (0 in a delete event).
    pub create_revision: i64,
    /// The revision of the key's last change.
    pub mod_revision: i64,
    /// Puts since the key's creation (1 for a new key; 0 in a delete event).
    pub version: i64,
    /// The value, exactly as put.
    pub value: Vec<u8>,
    /// The lease the key is attached to (0: none).
    pub lease: i64,
}

/// What happened to a key (`mvccpb.Event`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEvent {
    /// Whether the key was deleted (otherwise put).
    pub deleted: bool,
    /// The key after the event (for a delete: the key and the deleting revision only).
    pub kv: KeyValue,
    /// The key before the event, if it existed.
    pub prev: Option<KeyValue>,
}

/// A lease in memory.
#[derive(Debug, Clone)]
pub(crate) struct Lease {
    /// The TTL it was granted, in seconds.
    pub granted: i64,
    /// When it expires unless kept alive.
    pub deadline: Instant,
    /// The keys attached to it.
    pub keys: BTreeSet<Vec<u8>>,
}

/// The lease table.
#[derive(Debug, Default)]
pub(crate) struct Leases {
    pub map: HashMap<i64, Lease>,
    /// The last id handed out.
    pub last_id: i64,
}

impl Leases {
    /// Moves `key` from lease `from` to lease `to` (0: none).
    pub(crate) fn reattach(&mut self, key: &[u8], from: i64, to: i64) {
        if from == to {
            return;
        }
        if let Some(l) = self.map.get_mut(&from) {
            l.keys.remove(key);
        }
        if let Some(l) = self.map.get_mut(&to) {
            l.keys.insert(key.to_vec());
        }
    }
}

/// A revision's events, shared by every etcd watcher.
pub(crate) type EventGroup = Arc<[(u64, KeyEvent)]>;

/// Whether an escaped key lies in the escaped range `[from, to)` (`to` None: every key from
/// `from`), as a range read and a watch cover keys.
pub(crate) fn within(escaped: &[u8], from: &[u8], to: Option<&[u8]>) -> bool {
    escaped >= from && to.is_none_or(|t| escaped < t)
}

struct Slot {
    id: u64,
    /// The escaped keys the watch covers, `[from, to)` (`to` None: every key from `from`).
    from: Vec<u8>,
    to: Option<Vec<u8>>,
    tx: Sender<EventGroup>,
    queued: Arc<AtomicUsize>,
    capacity: usize,
    overflowed: Arc<AtomicBool>,
}

/// An etcd watcher's end: its groups, how many are queued, whether it fell behind.
pub(crate) struct Inbox {
    pub id: u64,
    pub rx: Receiver<EventGroup>,
    pub queued: Arc<AtomicUsize>,
    pub overflowed: Arc<AtomicBool>,
}

/// The etcd watchers. Locked inside the hub lock (hub first), so that a registration and the
/// committer's publication of a revision are ordered.
#[derive(Default)]
pub(crate) struct Watchers {
    slots: Vec<Slot>,
    next_id: u64,
}

impl Watchers {
    /// Opens a slot for the escaped keys `[from, to)`, holding at most `capacity` groups not
    /// taken.
    pub(crate) fn register(&mut self, capacity: usize, from: Vec<u8>, to: Option<Vec<u8>>) -> Inbox {
        let (tx, rx) = flume::unbounded();
        self.next_id += 1;
        let (queued, overflowed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        self.slots.push(Slot { id: self.next_id, from, to, tx, queued: queued.clone(), capacity, overflowed: overflowed.clone() });
        Inbox { id: self.next_id, rx, queued, overflowed }
    }

    /// Closes a slot.
    pub(crate) fn remove(&mut self, id: u64) {
        self.slots.retain(|s| s.id != id);
    }

    /// Sends a group to every watcher whose keys hold one of its events (`escaped`: the events'
    /// keys, escaped), dropping those that fell `capacity` groups behind (they catch up from the
    /// change log). A watcher is not woken for a group that holds nothing for it: kube-apiserver
    /// keeps a watch per resource, and a write concerns one.
    pub(crate) fn broadcast(&mut self, group: &EventGroup, escaped: &[Vec<u8>]) {
        self.slots.retain(|s| {
            if !escaped.iter().any(|k| within(k, &s.from, s.to.as_deref())) {
                return true;
            }
            if s.queued.load(Ordering::SeqCst) >= s.capacity {
                s.overflowed.store(true, Ordering::SeqCst);
                return false;
            }
            s.queued.fetch_add(1, Ordering::SeqCst);
            s.tx.send(group.clone()).is_ok()
        });
    }

    /// Ends every watcher (the store is closing).
    pub(crate) fn close_all(&mut self) {
        self.slots.clear();
    }
}

/// The etcd API's state.
#[derive(Default)]
pub(crate) struct EtcdState {
    pub leases: parking_lot::Mutex<Leases>,
    pub watchers: parking_lot::Mutex<Watchers>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &[u8]) -> (u64, KeyEvent) {
        (7, KeyEvent { deleted: false, kv: KeyValue { key: key.to_vec(), ..KeyValue::default() }, prev: None })
    }

    #[test]
    fn a_group_goes_only_to_the_watchers_of_its_keys() {
        let mut w = Watchers::default();
        // Escaped bounds as the etcd API makes them: the keys, with the terminator `0x00 0x01`.
        let pods = w.register(4, b"/registry/pods/".to_vec(), Some(b"/registry/pods0".to_vec()));
        let maps = w.register(4, b"/registry/configmaps/".to_vec(), Some(b"/registry/configmaps0".to_vec()));
        let all = w.register(4, vec![0, 0xff, 0, 1], None);
        let group: EventGroup = vec![put(b"/registry/configmaps/default/a")].into();
        w.broadcast(&group, &[b"/registry/configmaps/default/a\x00\x01".to_vec()]);
        assert!(pods.rx.is_empty(), "a watcher of other keys is not sent the group");
        assert_eq!(pods.queued.load(Ordering::SeqCst), 0);
        assert_eq!(maps.rx.try_recv().map(|g| g.len()), Ok(1));
        assert_eq!(maps.queued.load(Ordering::SeqCst), 1);
        assert_eq!(all.rx.len(), 1);
        // A watcher that falls behind on its own keys is dropped; one that was sent nothing is not.
        for _ in 0..4 {
            w.broadcast(&group, &[b"/registry/configmaps/default/a\x00\x01".to_vec()]);
        }
        assert!(maps.overflowed.load(Ordering::SeqCst));
        assert!(!pods.overflowed.load(Ordering::SeqCst));
        assert_eq!(w.slots.iter().map(|s| s.id).collect::<Vec<_>>(), vec![pods.id]);
    }
}
