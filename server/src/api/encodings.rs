//! The encodings of recent watch events, shared by every door's watch streams: a change fanned
//! out to many watchers is serialised once per media type (and its event's message once per
//! event type) rather than once per watcher.

use super::body;
use bytes::Bytes;
use fieldstore_engine::store::WatchEvent;
use fieldstore_engine::Error;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Weak};

/// How a door makes an event's message: from the event type, the object's body and its
/// revision.
pub type Build = fn(&'static str, body::Body, u64) -> Bytes;

/// The wire encodings of recent watch events, so that a change fanned out to many watchers is
/// serialized once per media type rather than once per watcher.
/// Entries are found by the event object's identity (watchers share the `Arc` the store
/// broadcasts); a `Weak` keeps the allocation, so the address cannot be reused, without keeping
/// the object.
#[derive(Default)]
pub struct EventEncodings(Mutex<(VecDeque<Encoded>, usize)>);

/// One object's encoding in one media type.
struct Encoded {
    object: Weak<Value>,
    accept: String,
    body: body::Body,
    /// The object's resourceVersion as a number (read once, not per stream).
    revision: u64,
    /// The door's message of the event that carried it, with that event's type.
    message: Option<(&'static str, Bytes)>,
}

impl Encoded {
    /// Whether this is the encoding of `object` (by identity) as `accept`.
    fn is(&self, object: &Arc<Value>, accept: &str) -> bool {
        std::ptr::eq(self.object.as_ptr(), Arc::as_ptr(object)) && self.accept == accept
    }

    /// The bytes it keeps.
    fn bytes(&self) -> usize {
        self.body.data.len() + self.message.as_ref().map_or(0, |(_, m)| m.len())
    }
}

impl EventEncodings {
    /// At most this many recent encodings, and this many bytes of them.
    const KEEP: usize = 64;
    const KEEP_BYTES: usize = 16 << 20;

    /// The object's JSON, encoded once for every watcher of the change.
    ///
    /// # Errors
    /// The body's, when it does not encode.
    pub fn json(&self, object: &Arc<Value>) -> Result<Bytes, Error> {
        self.entry(object, body::JSON, None)
    }

    /// The message of the event of type `kind` (`ADDED`, …) carrying `object`, its body encoded
    /// as `accept`, as a door's `build` makes it from the body and the object's revision:
    /// encoded once for every stream it goes to (a door builds one kind of message).
    ///
    /// # Errors
    /// The body's, when it does not encode as `accept`.
    pub fn message(&self, kind: &'static str, object: &Arc<Value>, accept: &str, build: Build) -> Result<Bytes, Error> {
        self.entry(object, accept, Some((kind, build)))
    }

    /// The body of `object` in `accept` or, with `kind`, the message of its event; encoded and
    /// kept when not found.
    fn entry(&self, object: &Arc<Value>, accept: &str, kind: Option<(&'static str, Build)>) -> Result<Bytes, Error> {
        let found = {
            let mut guard = self.0.lock();
            let found = guard.0.iter_mut().rev().find(|e| e.is(object, accept));
            match (found, kind) {
                (None, _) => None,
                (Some(e), None) => return Ok(e.body.data.clone()),
                (Some(e), Some((kind, _))) => match &e.message {
                    Some((k, m)) if *k == kind => return Ok(m.clone()),
                    // The body without this event's message (encoded outside the lock).
                    _ => Some((e.body.clone(), e.revision)),
                },
            }
        };
        let (body, revision) = match found {
            Some(found) => found,
            None => (body::encode(object, accept)?, WatchEvent::Added(object.clone()).revision().map_or(0, |r| r.0)),
        };
        let message = kind.map(|(k, build)| (k, build(k, body.clone(), revision)));
        let out = message.as_ref().map_or_else(|| body.data.clone(), |(_, m)| m.clone());
        let mut guard = self.0.lock();
        let (recent, bytes) = &mut *guard;
        if let Some(e) = recent.iter_mut().rev().find(|e| e.is(object, accept)) {
            if let Some((kind, m)) = message {
                // The byte count follows the message replaced.
                *bytes += m.len();
                *bytes -= e.message.replace((kind, m)).map_or(0, |(_, old)| old.len());
            }
            return Ok(out);
        }
        let entry = Encoded { object: Arc::downgrade(object), accept: accept.to_string(), body, revision, message };
        *bytes += entry.bytes();
        recent.push_back(entry);
        while recent.len() > Self::KEEP || (*bytes > Self::KEEP_BYTES && recent.len() > 1) {
            if let Some(old) = recent.pop_front() {
                *bytes -= old.bytes();
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn configmap(rv: &str) -> Arc<Value> {
        Arc::new(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": rv}, "data": {"k": "v"}}),
        )
    }

    /// A message: the event type, the revision, then the body's bytes.
    fn build(kind: &'static str, b: body::Body, revision: u64) -> Bytes {
        let mut out = format!("{kind} {revision} ").into_bytes();
        out.extend_from_slice(&b.data);
        out.into()
    }

    #[test]
    fn an_event_is_encoded_once_for_every_stream() {
        let encodings = EventEncodings::default();
        let object = configmap("42");
        let first = encodings.message("MODIFIED", &object, body::JSON, build).unwrap();
        let second = encodings.message("MODIFIED", &object, body::JSON, build).unwrap();
        assert_eq!(first.as_ptr(), second.as_ptr(), "the second stream shares the first one's bytes");
        let json = serde_json::to_vec(&*object).unwrap();
        assert_eq!(&first[..], [b"MODIFIED 42 ".as_slice(), &json].concat().as_slice());
        // The HTTP API's JSON of the same object is the body kept, not encoded again.
        assert_eq!(encodings.json(&object).unwrap().as_ptr(), body_ptr(&encodings, &object));
        // Another event type carrying the same object gets its own message; another media type
        // its own body.
        assert!(encodings.message("DELETED", &object, body::JSON, build).unwrap().starts_with(b"DELETED 42 "));
        let pb = encodings.message("MODIFIED", &object, body::PROTOBUF, build).unwrap();
        assert_ne!(&pb[..], &first[..]);
        // Another object at the same revision is another entry.
        let other = configmap("42");
        let third = encodings.message("MODIFIED", &other, body::JSON, build).unwrap();
        assert_ne!(third.as_ptr(), second.as_ptr());
    }

    fn body_ptr(encodings: &EventEncodings, object: &Arc<Value>) -> *const u8 {
        let guard = encodings.0.lock();
        let e = guard.0.iter().find(|e| e.is(object, body::JSON)).unwrap();
        e.body.data.as_ptr()
    }

    #[test]
    fn the_byte_count_follows_bodies_and_messages_added_to_an_entry() {
        let encodings = EventEncodings::default();
        for i in 0..3 * EventEncodings::KEEP {
            let o = configmap(&i.to_string());
            // The HTTP API's body first, then messages of two event types on the entry.
            encodings.json(&o).unwrap();
            for kind in ["MODIFIED", "DELETED", "MODIFIED"] {
                encodings.message(kind, &o, body::JSON, build).unwrap();
            }
            let guard = encodings.0.lock();
            let kept: usize = guard.0.iter().map(Encoded::bytes).sum();
            assert_eq!(guard.1, kept);
        }
    }

    #[test]
    fn old_encodings_are_dropped_beyond_the_count_kept() {
        let encodings = EventEncodings::default();
        let objects: Vec<_> = (0..EventEncodings::KEEP + 10).map(|i| configmap(&i.to_string())).collect();
        for o in &objects {
            encodings.message("ADDED", o, body::JSON, build).unwrap();
        }
        let guard = encodings.0.lock();
        assert_eq!(guard.0.len(), EventEncodings::KEEP);
        let kept: usize = guard.0.iter().map(Encoded::bytes).sum();
        assert_eq!(guard.1, kept, "the byte count follows what is kept");
    }
}
