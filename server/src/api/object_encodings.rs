//! The Kubernetes protobuf encodings of stored objects the API answered, kept to answer them
//! again without encoding: a LIST in protobuf (what client-go's reflectors and controllers ask
//! for) copies each item it finds here instead of parsing its JSON and encoding it.
//!
//! An encoding is kept per object (its message, namespace and name) for the one revision it was
//! made of ([`RevisionCache`]): a lookup names the revision the list read, so an encoding of
//! another version is never served, and a stored object's JSON view at one revision is one byte
//! sequence, so the encoding is the one a list would make of it. Only answers of stored versions
//! are kept — reads, and writes that are not dry runs — never a dry run's object, which no
//! revision holds.
//!
//! A LIST does not add what it encodes (as a bulk scan leaves RocksDB's block cache alone): one
//! long list would otherwise replace what writes and reads of the objects in use keep here, and
//! grow the server by the cache's budget.
//!
//! The *length* of every encoding made here or by a LIST is kept too ([`Sizes`]), for far more
//! objects than the encodings (24 bytes each instead of ~1 KiB): a protobuf LIST must know the
//! length of all its items before its first byte (`runtime.Unknown.raw` is length-prefixed), and
//! an item whose length is known is not encoded to learn it.

use fieldstore_codec::k8s_protobuf::MessageType;
use fieldstore_engine::store::RevisionCache;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// An encoding, shared: its count sits beside its bytes (one cache line to fetch for both when
/// a list copies it).
pub type Encoding = Arc<[u8]>;

/// The protobuf encodings (each message's bytes, without envelope) of the latest stored objects
/// the API answered, within a byte budget.
pub struct ObjectEncodings {
    cache: RevisionCache<Encoding>,
    sizes: Sizes,
}

impl Default for ObjectEncodings {
    fn default() -> Self {
        ObjectEncodings::new(Self::DEFAULT_BYTES)
    }
}

impl ObjectEncodings {
    /// The default budget: 64 MiB of encodings (about 60,000 1 KiB objects).
    pub const DEFAULT_BYTES: usize = 64 << 20;

    /// Keeps at most `budget` bytes of encodings (0: none).
    #[must_use]
    pub fn new(budget: usize) -> Self {
        ObjectEncodings { cache: RevisionCache::new(budget), sizes: Sizes::default() }
    }

    /// The encoding of revision `revision` of the object `namespace`/`name` as `message`, if
    /// kept. `key` is scratch space for the lookup's key.
    #[must_use]
    pub fn get(&self, key: &mut Vec<u8>, message: MessageType, namespace: &str, name: &str, revision: u64) -> Option<Encoding> {
        key_of(key, message, namespace, name);
        self.cache.get(key, revision)
    }

    /// The length of the encoding of revision `revision` of the object `namespace`/`name` as
    /// `message`, if the encoding is kept or its length known. `key` is scratch space.
    #[must_use]
    pub fn encoded_len(&self, key: &mut Vec<u8>, message: MessageType, namespace: &str, name: &str, revision: u64) -> Option<usize> {
        // Every kept encoding's length is noted too: one lookup, usually.
        key_of(key, message, namespace, name);
        self.sizes.get(key, revision).or_else(|| self.cache.get(key, revision).map(|found| found.len()))
    }

    /// Records that the encoding of revision `revision` of `namespace`/`name` as `message` is
    /// `len` bytes long (a LIST that encoded it without keeping it). `key` is scratch space.
    pub fn note_encoded_len(&self, key: &mut Vec<u8>, message: MessageType, namespace: &str, name: &str, revision: u64, len: usize) {
        key_of(key, message, namespace, name);
        self.sizes.put(key, revision, len);
    }

    /// The encoding as `message` of `object`, a stored version read or written (with its
    /// `metadata.resourceVersion`): the one kept, else encoded and kept.
    ///
    /// # Errors
    /// The codec's, for an object that does not encode as `message`.
    pub fn of_stored(&self, message: MessageType, object: &Value) -> fieldstore_codec::Result<Encoding> {
        let metadata = object.get("metadata");
        let meta = |k: &str| metadata.and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or_default();
        let revision = meta("resourceVersion").parse::<u64>().ok();
        let mut key = Vec::new();
        if let Some(found) = revision.and_then(|r| self.get(&mut key, message, meta("namespace"), meta("name"), r)) {
            return Ok(found);
        }
        // The JSON text a list gives for the object (serde_json's), so the same bytes as the
        // list's encoding of it.
        let json = fieldstore_codec::json_text::to_vec(object);
        let encoded: Encoding = message.from_json(&json)?.into();
        if let Some(r) = revision {
            self.cache.put(&key, r, Some(encoded.clone()), encoded.len());
            self.sizes.put(&key, r, encoded.len());
        }
        Ok(encoded)
    }

    /// How many bytes of encodings are kept.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.cache.bytes()
    }
}

/// The lengths of encodings, by revision: a revision is one version of one object (the store's
/// `changes` maps each revision to the object it touched, `engine/STORAGE.md`), so the revision
/// alone finds the entry, which also holds a hash of the object's key (its message, namespace
/// and name, hashed with a key chosen per process) that a lookup must match. Two generations of
/// at most [`Sizes::PER_GENERATION`] entries: when the newer is full it becomes the older, and
/// the older is dropped, so the most recently noted lengths stay (at most ~7 MiB in all).
#[derive(Default)]
struct Sizes {
    hasher: ahash::RandomState,
    generations: Mutex<[Generation; 2]>,
}

/// Lengths by revision: (the key's hash, the length).
type Generation = HashMap<u64, (u64, u32), ahash::RandomState>;

impl Sizes {
    /// Entries per generation: 7/8 of 2^17, the most a table of 2^17 slots holds before it
    /// doubles (24 bytes and a control byte each: ~3.3 MiB per generation).
    const PER_GENERATION: usize = (1 << 17) / 8 * 7;

    fn get(&self, key: &[u8], revision: u64) -> Option<usize> {
        let hash = self.hasher.hash_one(key);
        let generations = self.generations.lock();
        generations.iter().find_map(|g| g.get(&revision).filter(|(h, _)| *h == hash).map(|&(_, len)| len as usize))
    }

    fn put(&self, key: &[u8], revision: u64, len: usize) {
        let Ok(len) = u32::try_from(len) else { return };
        let hash = self.hasher.hash_one(key);
        let mut generations = self.generations.lock();
        if generations[0].len() >= Self::PER_GENERATION && !generations[0].contains_key(&revision) {
            generations[1] = std::mem::take(&mut generations[0]);
        }
        generations[0].insert(revision, (hash, len));
    }
}

/// The key of an object's encodings: the message's name, the namespace and the name, each ended
/// by a zero byte (none of them holds one).
fn key_of(key: &mut Vec<u8>, message: MessageType, namespace: &str, name: &str) {
    key.clear();
    for part in [message.full_name(), namespace, name] {
        key.extend_from_slice(part.as_bytes());
        key.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn configmap(rv: &str, value: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": rv}, "data": {"k": value}})
    }

    #[test]
    fn an_encoding_is_kept_for_its_revision_only() {
        let message = MessageType::for_kind("v1", "ConfigMap").unwrap();
        let e = ObjectEncodings::default();
        let five = e.of_stored(message, &configmap("5", "x")).unwrap();
        assert_eq!(&five[..], &message.from_json(&serde_json::to_vec(&configmap("5", "x")).unwrap()).unwrap()[..]);
        let mut key = Vec::new();
        assert_eq!(e.get(&mut key, message, "ns", "a", 5), Some(five.clone()));
        assert_eq!(e.get(&mut key, message, "ns", "a", 6), None, "another revision");
        assert_eq!(e.get(&mut key, message, "other", "a", 5), None, "another namespace");
        let secret = MessageType::for_kind("v1", "Secret").unwrap();
        assert_eq!(e.get(&mut key, secret, "ns", "a", 5), None, "another message");
        // A newer version replaces it.
        let six = e.of_stored(message, &configmap("6", "y")).unwrap();
        assert_ne!(five, six);
        assert_eq!(e.get(&mut key, message, "ns", "a", 5), None);
        assert_eq!(e.get(&mut key, message, "ns", "a", 6), Some(six.clone()));
        assert_eq!(e.bytes(), six.len());
    }

    #[test]
    fn lengths_are_known_for_their_revision_and_object_only() {
        let message = MessageType::for_kind("v1", "ConfigMap").unwrap();
        let e = ObjectEncodings::new(0);
        let mut key = Vec::new();
        // Made by an answer (its encoding not kept: no budget), or noted by a list.
        let five = e.of_stored(message, &configmap("5", "x")).unwrap();
        assert_eq!(e.encoded_len(&mut key, message, "ns", "a", 5), Some(five.len()));
        e.note_encoded_len(&mut key, message, "ns", "b", 7, 1234);
        assert_eq!(e.encoded_len(&mut key, message, "ns", "b", 7), Some(1234));
        assert_eq!(e.encoded_len(&mut key, message, "ns", "a", 6), None, "another revision");
        assert_eq!(e.encoded_len(&mut key, message, "ns", "b", 5), None, "another object at that revision");
        let secret = MessageType::for_kind("v1", "Secret").unwrap();
        assert_eq!(e.encoded_len(&mut key, secret, "ns", "a", 5), None, "another message");
        // A kept encoding answers its own length.
        let kept = ObjectEncodings::default();
        let six = kept.of_stored(message, &configmap("6", "yy")).unwrap();
        assert_eq!(kept.encoded_len(&mut key, message, "ns", "a", 6), Some(six.len()));
    }

    #[test]
    fn lengths_are_kept_for_two_generations() {
        let message = MessageType::for_kind("v1", "ConfigMap").unwrap();
        let e = ObjectEncodings::new(0);
        let mut key = Vec::new();
        let n = Sizes::PER_GENERATION as u64;
        for r in 1..=n + 1 {
            e.note_encoded_len(&mut key, message, "ns", &format!("o{r}"), r, r as usize);
        }
        // The first generation filled and became the older one: all still known.
        assert_eq!(e.encoded_len(&mut key, message, "ns", "o1", 1), Some(1));
        assert_eq!(e.encoded_len(&mut key, message, "ns", &format!("o{}", n + 1), n + 1), Some(n as usize + 1));
        for r in n + 2..=2 * n + 1 {
            e.note_encoded_len(&mut key, message, "ns", &format!("o{r}"), r, r as usize);
        }
        // The second filled too: the first is dropped, the second kept.
        assert_eq!(e.encoded_len(&mut key, message, "ns", "o1", 1), None);
        assert_eq!(e.encoded_len(&mut key, message, "ns", &format!("o{}", n + 1), n + 1), Some(n as usize + 1));
        assert_eq!(e.encoded_len(&mut key, message, "ns", &format!("o{}", 2 * n + 1), 2 * n + 1), Some(2 * n as usize + 1));
        let total: usize = e.sizes.generations.lock().iter().map(HashMap::len).sum();
        assert!(total <= 2 * Sizes::PER_GENERATION, "{total} lengths kept");
    }

    #[test]
    fn nothing_is_kept_without_a_budget_or_a_revision() {
        let message = MessageType::for_kind("v1", "ConfigMap").unwrap();
        let off = ObjectEncodings::new(0);
        off.of_stored(message, &configmap("5", "x")).unwrap();
        assert_eq!(off.bytes(), 0);
        let e = ObjectEncodings::default();
        e.of_stored(message, &configmap("", "x")).unwrap();
        assert_eq!(e.bytes(), 0, "no resourceVersion: not a stored version");
    }
}
