//! Caches of the latest revision of objects, keyed by their key, within a byte budget.
//!
//! [`RevisionCache`] holds one value per key, for exactly one revision: a lookup names the
//! revision it read from the database and gets the entry only when it is that revision, so a
//! stale entry is never served. Entries go first-in first-out once the byte budget is spent.
//!
//! The store's decoded-object cache ([`ObjectCache`]) holds the JSON view of the latest version
//! of objects recently written over, and of large objects however written, so that the next write
//! to such an object (or a read of it) does not parse its record again; only the committer adds
//! its entries, after the write is durable, and a write that ends without committing puts back
//! the version it read. Its budget counts what the decoded objects take in memory ([`weight`]),
//! 6 to 25 times their records. The Kubernetes API's door keeps another (the protobuf encodings
//! of objects it sent).

use crate::fieldmanager::StoredEntry;
use crate::store::options::OBJECT_CACHE_LARGE_BYTES;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Decoded latest versions of objects, within a byte budget.
pub(crate) type ObjectCache = RevisionCache<CachedVersion>;

/// A version as the object cache holds it: its JSON view (shared with the watch events and the
/// writer's answer), and its managedFields entries decoded when its writer had them (a write
/// that takes the version then starts from them, not from the record's binary sets).
#[derive(Clone)]
pub(crate) struct CachedVersion {
    pub object: Arc<Value>,
    pub managers: Option<Arc<[StoredEntry]>>,
}

impl CachedVersion {
    /// A version without its entries decoded.
    #[cfg(test)]
    fn of(object: Value) -> Self {
        CachedVersion { object: Arc::new(object), managers: None }
    }
}

/// What a decoded object of a small record (under [`OBJECT_CACHE_LARGE_BYTES`]) is counted as,
/// per byte of its record: an upper bound of what such objects take (a ConfigMap of a few long
/// values 6×, a Lease 12×, a Deployment and its managedFields 25×: the cache's tests), so the
/// budget is never overrun, without walking every written object to weigh it.
pub(crate) const SMALL_OBJECT_WEIGHT: usize = 32;

/// The bytes an entry of the [`ObjectCache`] stands for: what the decoded `object` takes in
/// memory, counted for a large record ([`decoded_bytes`]) and bounded for a small one
/// ([`SMALL_OBJECT_WEIGHT`] times the record).
pub(crate) fn weight(object: &Value, record_bytes: usize) -> usize {
    if record_bytes < OBJECT_CACHE_LARGE_BYTES {
        record_bytes * SMALL_OBJECT_WEIGHT
    } else {
        decoded_bytes(object).max(record_bytes)
    }
}

/// About how many bytes a decoded JSON value takes in memory, itself included: 32 per value,
/// its strings' bytes, its arrays' slots, and its objects' B-tree nodes (a node of 640 bytes
/// holds up to 11 members: one for a small object, one per about 7 members of a large one).
#[must_use]
pub(crate) fn decoded_bytes(v: &Value) -> usize {
    const VALUE: usize = std::mem::size_of::<Value>();
    const NODE: usize = 640;
    fn inner(v: &Value) -> usize {
        match v {
            Value::String(s) => s.capacity(),
            Value::Array(a) => a.capacity() * VALUE + a.iter().map(inner).sum::<usize>(),
            Value::Object(m) => {
                let nodes = match m.len() {
                    0 => 0,
                    n @ 1..=11 => n.div_ceil(11),
                    n => n / 7 + 1,
                };
                nodes * NODE + m.iter().map(|(k, v)| k.capacity() + inner(v)).sum::<usize>()
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        }
    }
    VALUE + inner(v)
}

/// One value per key (the value of one revision of what the key names), within a byte budget.
pub struct RevisionCache<V> {
    /// The most bytes the cached values may stand for; 0 turns the cache off.
    budget: usize,
    inner: Mutex<Inner<V>>,
}

struct Inner<V> {
    /// By key; aHash (seeded per process) rather than SipHash: a LIST looks up every item.
    entries: HashMap<Vec<u8>, Entry<V>, ahash::RandomState>,
    /// Insertion order, for eviction; an item whose revision no longer matches its entry is
    /// skipped.
    order: VecDeque<(Vec<u8>, u64)>,
    bytes: usize,
}

struct Entry<V> {
    revision: u64,
    value: V,
    bytes: usize,
}

impl<V: Clone> RevisionCache<V> {
    /// A cache of values standing for up to `budget` bytes in all.
    #[must_use]
    pub fn new(budget: usize) -> Self {
        RevisionCache { budget, inner: Mutex::new(Inner { entries: HashMap::default(), order: VecDeque::new(), bytes: 0 }) }
    }

    /// The value of revision `revision` of `key`, if cached.
    pub fn get(&self, key: &[u8], revision: u64) -> Option<V> {
        let inner = self.inner.lock();
        inner.entries.get(key).filter(|e| e.revision == revision).map(|e| e.value.clone())
    }

    /// The value of revision `revision` of `key`, if cached, taken out of the cache: a writer
    /// about to replace the object takes it, so that it usually holds the only reference and can
    /// own the value without copying it.
    pub fn take(&self, key: &[u8], revision: u64) -> Option<V> {
        let mut inner = self.inner.lock();
        if inner.entries.get(key)?.revision != revision {
            return None;
        }
        let e = inner.entries.remove(key)?;
        inner.bytes -= e.bytes;
        Some(e.value)
    }

    /// Records that revision `revision` of `key`, standing for `bytes` (for the object cache,
    /// its [`weight`]), is `value` (`None`: the key's object is gone). An entry for a newer
    /// revision stays.
    pub fn put(&self, key: &[u8], revision: u64, value: Option<V>, bytes: usize) {
        if self.budget == 0 {
            return;
        }
        let mut inner = self.inner.lock();
        if inner.entries.get(key).is_some_and(|e| e.revision > revision) {
            // A writer putting back the version it read, after a newer one was committed.
            return;
        }
        if let Some(old) = inner.entries.remove(key) {
            inner.bytes -= old.bytes;
        }
        let Some(value) = value.filter(|_| bytes <= self.budget) else {
            return;
        };
        inner.entries.insert(key.to_vec(), Entry { revision, value, bytes });
        inner.order.push_back((key.to_vec(), revision));
        inner.bytes += bytes;
        while inner.bytes > self.budget {
            let Some((key, rev)) = inner.order.pop_front() else { break };
            if inner.entries.get(&key).is_some_and(|e| e.revision == rev) {
                if let Some(e) = inner.entries.remove(&key) {
                    inner.bytes -= e.bytes;
                }
            }
        }
        // Drop order items of entries replaced or taken since, so the queue stays bounded.
        if inner.order.len() > 2 * inner.entries.len() + 16 {
            let Inner { entries, order, .. } = &mut *inner;
            order.retain(|(key, rev)| entries.get(key).is_some_and(|e| e.revision == *rev));
        }
    }

    /// How many bytes the cached values stand for.
    pub fn bytes(&self) -> usize {
        self.inner.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The bytes `make` leaves allocated on this thread in what it returns (the test binary's
    /// allocator is `allocation_counter`'s counting one, a dev-dependency).
    fn allocated<T>(make: impl FnOnce() -> T) -> (T, usize) {
        let mut made = None;
        let info = allocation_counter::measure(|| made = Some(make()));
        (made.unwrap_or_else(|| unreachable!()), usize::try_from(info.bytes_current).unwrap_or(0))
    }

    #[test]
    fn decoded_bytes_are_what_a_parsed_object_allocates() {
        let list = |n: usize| {
            let items: Vec<Value> = (0..n)
                .map(|i| json!({"name": format!("item-{i:05}"), "image": format!("registry.example/img-{i}:v1"), "port": 8000 + i}))
                .collect();
            json!({"apiVersion": "v1", "kind": "List", "metadata": {"name": "big", "labels": {"a": "b"}}, "spec": {"items": items}})
        };
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "front"},
                "annotations": {"note": "x".repeat(300)}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "env": (0..30).map(|i| json!({"name": format!("VAR_{i}"), "value": format!("value {i}")})).collect::<Vec<_>>()}]}}}});
        // A map of more members than a node holds, and empty containers.
        let wide = json!({"data": (0..500).map(|i| (format!("key-{i}"), json!(format!("v{i}")))).collect::<serde_json::Map<_, _>>(),
            "empty": {}, "none": [], "n": null});
        for (what, v) in [("10k-item list", list(10_000)), ("Deployment", deployment), ("wide map", wide)] {
            let text = serde_json::to_string(&v).unwrap();
            let (parsed, bytes) = allocated(|| serde_json::from_str::<Value>(&text).unwrap());
            let estimate = decoded_bytes(&parsed);
            let ratio = estimate as f64 / bytes as f64;
            assert!((0.75..1.33).contains(&ratio), "{what}: estimated {estimate} bytes, allocated {bytes} ({ratio:.2})");
        }
    }

    #[test]
    fn the_weight_of_a_large_object_is_its_decoded_size() {
        let v = json!({"items": (0..1000).map(|i| json!({"name": format!("n{i}")})).collect::<Vec<_>>()});
        let large = OBJECT_CACHE_LARGE_BYTES;
        assert_eq!(weight(&v, 100), 100 * SMALL_OBJECT_WEIGHT, "a small record: bounded, not weighed");
        assert_eq!(weight(&v, large), decoded_bytes(&v).max(large));
        let big = json!({"items": (0..10_000).map(|i| json!({"name": format!("n{i}")})).collect::<Vec<_>>()});
        assert!(decoded_bytes(&big) > large);
        assert_eq!(weight(&big, large), decoded_bytes(&big));
        assert_eq!(weight(&json!(null), large), large, "never less than the record");
    }

    /// Small objects as a cluster writes them, with their managedFields: what parsing each
    /// allocates stays under [`SMALL_OBJECT_WEIGHT`] times its record, so the cache's budget
    /// is not overrun by the bound it counts them at.
    #[test]
    fn small_objects_take_less_than_their_bound() {
        use crate::store::object::{encode_with_entries, BodyEncoding};
        let entry = |manager: &str, api: &str, fields: Value| {
            json!({"manager": manager, "operation": "Update", "apiVersion": api, "time": "2024-01-01T00:00:00Z",
                "fieldsType": "FieldsV1", "fieldsV1": fields})
        };
        let container = json!({".": {}, "f:image": {}, "f:name": {},
            "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}},
            "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}}}});
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d0", "namespace": "default", "uid": "1234-5678-9abc-def0-1234-5678", "generation": 3,
                "creationTimestamp": "2024-01-01T00:00:00Z", "resourceVersion": "123", "labels": {"app": "web"},
                "managedFields": [
                    entry("kubectl", "apps/v1", json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:replicas": {},
                        "f:selector": {}, "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": container}}}}})),
                    entry("kube-controller-manager", "apps/v1", json!({"f:status": {"f:replicas": {}, "f:readyReplicas": {},
                        "f:conditions": {".": {}, "k:{\"type\":\"Available\"}": {".": {}, "f:type": {}, "f:status": {}}}}}))]},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}}]}}},
            "status": {"replicas": 3, "readyReplicas": 3, "conditions": [{"type": "Available", "status": "True"}]}});
        let data: serde_json::Map<String, Value> =
            (0..8).map(|k| (format!("key{k}"), json!(format!("{k:08}-{}", "v".repeat(100))))).collect();
        let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default",
            "resourceVersion": "5", "labels": {"app": "web"}, "managedFields": [entry("bench", "v1",
                json!({"f:data": {".": {}, "f:key0": {}, "f:key1": {}, "f:key2": {}, "f:key3": {}, "f:key4": {}, "f:key5": {},
                    "f:key6": {}, "f:key7": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}))]}, "data": data});
        let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "node-1",
            "namespace": "kube-node-lease", "resourceVersion": "5", "uid": "1234-5678-9abc-def0-1234-5678",
            "managedFields": [entry("kubelet", "coordination.k8s.io/v1",
                json!({"f:spec": {"f:holderIdentity": {}, "f:leaseDurationSeconds": {}, "f:renewTime": {}}}))]},
            "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40, "renewTime": "2024-01-01T00:00:00.000000Z"}});
        for (what, object) in [("Deployment", deployment), ("ConfigMap", configmap), ("Lease", lease)] {
            for encoding in [BodyEncoding::Json, BodyEncoding::Protobuf] {
                let record = encode_with_entries(&mut object.clone(), false, None, encoding).unwrap().record;
                let text = serde_json::to_string(&object).unwrap();
                let (_, bytes) = allocated(|| serde_json::from_str::<Value>(&text).unwrap());
                let ratio = bytes as f64 / record.len() as f64;
                assert!(
                    ratio < SMALL_OBJECT_WEIGHT as f64,
                    "{what} ({encoding:?}): {bytes} bytes decoded from a record of {}",
                    record.len()
                );
                assert!(ratio > 4.0, "{what}: a bound far above what it takes ({ratio:.1}×) would waste the budget");
            }
        }
    }

    #[test]
    fn serves_only_the_revision_it_holds() {
        let c = ObjectCache::new(1000);
        c.put(b"a", 5, Some(CachedVersion::of(json!({"v": 5}))), 10);
        assert!(c.get(b"a", 4).is_none());
        assert_eq!(*c.get(b"a", 5).unwrap().object, json!({"v": 5}));
        c.put(b"a", 6, Some(CachedVersion::of(json!({"v": 6}))), 10);
        assert!(c.get(b"a", 5).is_none());
        assert!(c.take(b"a", 5).is_none());
        assert_eq!(*c.take(b"a", 6).unwrap().object, json!({"v": 6}));
        assert!(c.get(b"a", 6).is_none(), "taken entries are gone");
        c.put(b"a", 8, Some(CachedVersion::of(json!({"v": 8}))), 10);
        c.put(b"a", 7, Some(CachedVersion::of(json!({"v": 7}))), 10);
        assert!(c.get(b"a", 8).is_some(), "an older version put back does not replace a newer one");
    }

    #[test]
    fn tombstones_and_the_budget() {
        let c = ObjectCache::new(100);
        c.put(b"huge", 1, Some(CachedVersion::of(json!(1))), 101);
        assert!(c.get(b"huge", 1).is_none(), "over the whole budget");
        c.put(b"a", 2, Some(CachedVersion::of(json!(2))), 60);
        c.put(b"a", 3, None, 60);
        assert!(c.get(b"a", 2).is_none() && c.get(b"a", 3).is_none(), "a tombstone drops the entry");
        c.put(b"a", 4, Some(CachedVersion::of(json!(4))), 60);
        c.put(b"b", 5, Some(CachedVersion::of(json!(5))), 60);
        assert!(c.get(b"a", 4).is_none(), "the oldest entry goes when the budget is spent");
        assert!(c.get(b"b", 5).is_some());
        assert_eq!(c.bytes(), 60);
        for r in 6..200 {
            c.put(b"b", r, Some(CachedVersion::of(json!(r))), 60);
        }
        assert!(c.inner.lock().order.len() <= 2 + 16, "the eviction queue stays bounded");
    }
}
