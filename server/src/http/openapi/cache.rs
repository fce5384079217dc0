//! The OpenAPI documents of the registered types, serialized once per set of types.
//!
//! Building the documents costs tens of milliseconds (every definition of the built-in kinds,
//! the paths of every type), and kubectl fetches them on many commands, so the router keeps a
//! [`Cache`]: [`Cache::documents`] hands out the [`Documents`] of the current types, rebuilt
//! only when the types differ from the last call's (a CRD registered, changed or removed). Each
//! document is built on first use and then served as the same bytes, so the `/openapi/v3`
//! index's hashes always match what `/openapi/v3/…?hash=` serves.

use super::{hash, v2, v2_protobuf, v3_group_version};
use fieldstore_engine::store::TypeSpec;
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// The documents of one set of types, each serialized on first use.
#[derive(Debug)]
pub struct Documents {
    types: Vec<TypeSpec>,
    v2: OnceLock<Value>,
    v2_json: OnceLock<Arc<Vec<u8>>>,
    v2_protobuf: OnceLock<Arc<Vec<u8>>>,
    /// Every group version's document (`api/v1`, `apis/apps/v1` → JSON bytes).
    v3: OnceLock<BTreeMap<String, Arc<Vec<u8>>>>,
    v3_index: OnceLock<Arc<Vec<u8>>>,
}

impl Documents {
    /// The documents of `types` (nothing is built yet).
    #[must_use]
    pub fn new(types: Vec<TypeSpec>) -> Self {
        Documents {
            types,
            v2: OnceLock::new(),
            v2_json: OnceLock::new(),
            v2_protobuf: OnceLock::new(),
            v3: OnceLock::new(),
            v3_index: OnceLock::new(),
        }
    }

    fn v2_doc(&self) -> &Value {
        self.v2.get_or_init(|| v2(&self.types))
    }

    /// `/openapi/v2` as JSON.
    pub fn v2_json(&self) -> Arc<Vec<u8>> {
        self.v2_json.get_or_init(|| Arc::new(serde_json::to_vec(self.v2_doc()).unwrap_or_default())).clone()
    }

    /// `/openapi/v2` as gnostic protobuf (serve it as [`super::V2_PROTOBUF_CONTENT_TYPE`]).
    pub fn v2_protobuf(&self) -> Arc<Vec<u8>> {
        self.v2_protobuf.get_or_init(|| Arc::new(v2_protobuf(self.v2_doc()))).clone()
    }

    fn v3_docs(&self) -> &BTreeMap<String, Arc<Vec<u8>>> {
        self.v3.get_or_init(|| {
            let mut gvs: Vec<(&str, &str)> = self.types.iter().map(|t| (t.group.as_str(), t.version.as_str())).collect();
            gvs.sort_unstable();
            gvs.dedup();
            gvs.into_iter()
                .filter_map(|(g, v)| {
                    let doc = v3_group_version(&self.types, g, v)?;
                    let key = super::paths::prefix(g, v).trim_start_matches('/').to_string();
                    Some((key, Arc::new(serde_json::to_vec(&doc).unwrap_or_default())))
                })
                .collect()
        })
    }

    /// `/openapi/v3/{key}` (`api/v1`, `apis/apps/v1`) as JSON; `None` for a group version no
    /// type has.
    pub fn v3_json(&self, key: &str) -> Option<Arc<Vec<u8>>> {
        self.v3_docs().get(key.trim_matches('/')).cloned()
    }

    /// `/openapi/v3` as JSON: each group version's path with the hash of the bytes
    /// [`v3_json`](Self::v3_json) serves (what [`super::v3_index`] computes).
    pub fn v3_index_json(&self) -> Arc<Vec<u8>> {
        self.v3_index
            .get_or_init(|| {
                let paths: Map<String, Value> = self
                    .v3_docs()
                    .iter()
                    .map(|(key, bytes)| (key.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={}", hash(bytes))})))
                    .collect();
                Arc::new(serde_json::to_vec(&json!({"paths": paths})).unwrap_or_default())
            })
            .clone()
    }
}

/// The [`Documents`] of the last types asked for.
#[derive(Debug, Default)]
pub struct Cache(Mutex<Option<Arc<Documents>>>);

impl Cache {
    /// The documents of `types`: the cached ones when the types are the same as last time, else
    /// new ones (built lazily) that replace them.
    pub fn documents(&self, types: &[TypeSpec]) -> Arc<Documents> {
        let mut last = self.0.lock();
        if let Some(d) = last.as_ref().filter(|d| d.types == types) {
            return d.clone();
        }
        let d = Arc::new(Documents::new(types.to_vec()));
        *last = Some(d.clone());
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore_engine::store::builtin_types;

    #[test]
    fn same_types_same_documents_and_hashes_match_the_bytes() {
        let cache = Cache::default();
        let types = builtin_types();
        let a = cache.documents(&types);
        let b = cache.documents(&types);
        assert!(Arc::ptr_eq(&a, &b));
        let index: Value = serde_json::from_slice(&a.v3_index_json()).unwrap();
        let apps = a.v3_json("apis/apps/v1").unwrap();
        assert_eq!(index["paths"]["apis/apps/v1"]["serverRelativeURL"], format!("/openapi/v3/apis/apps/v1?hash={}", hash(&apps)));
        assert_eq!(index, super::super::v3_index(&types));
        assert!(a.v3_json("apis/nothing/v1").is_none());
        assert!(Arc::ptr_eq(&a.v2_json(), &b.v2_json()));
        assert!(!a.v2_protobuf().is_empty());
        // Another type set: new documents.
        let mut more = types.clone();
        more.push(TypeSpec::new("example.com", "v1", "Thing", "things"));
        let c = cache.documents(&more);
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(c.v3_json("apis/example.com/v1").is_some());
    }
}
