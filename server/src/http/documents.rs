//! The OpenAPI documents as served: built by [`super::openapi`] from the registered types, once per
//! change of the types (kubectl fetches them on most commands, and the v2 document of the
//! built-in kinds alone is megabytes), and kept as bytes.

use super::openapi;
use fieldstore_engine::store::TypeSpec;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The content type of `/openapi/v2` in gnostic's protobuf encoding, as kube-openapi answers both
/// `…spec.v2@v1.0+protobuf` (the form kubectl asks for, which Go's `mime` cannot parse back) and
/// `…spec.v2.v1.0+protobuf`.
pub(crate) const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The documents of one state of the registered types, built on first request.
#[derive(Default)]
struct Built {
    /// Which state of the types these are for ([`fieldstore_engine::store::Store::types_shared`]:
    /// a new allocation on every registration).
    types: Option<Arc<[TypeSpec]>>,
    v2_json: Option<Arc<Vec<u8>>>,
    v2_protobuf: Option<Arc<Vec<u8>>>,
    v3_index: Option<Arc<Vec<u8>>>,
    /// Per `(group, version)`; `None` when no type is of that group-version.
    v3: HashMap<(String, String), Option<Arc<Vec<u8>>>>,
}

/// Cached OpenAPI documents; cheap to share between requests.
#[derive(Default, Clone)]
pub(crate) struct Documents(Arc<Mutex<Built>>);

impl Documents {
    /// Runs `f` on the documents of `types`, dropping those of an earlier state of the types.
    fn with<R>(&self, types: &Arc<[TypeSpec]>, f: impl FnOnce(&mut Built) -> R) -> R {
        let mut built = self.0.lock();
        if !built.types.as_ref().is_some_and(|t| Arc::ptr_eq(t, types)) {
            *built = Built { types: Some(types.clone()), ..Built::default() };
        }
        f(&mut built)
    }

    /// `/openapi/v2`: the Swagger document as JSON, or in gnostic's protobuf when `protobuf`; with
    /// its content type.
    pub(crate) fn v2(&self, types: &Arc<[TypeSpec]>, protobuf: bool) -> (Arc<Vec<u8>>, &'static str) {
        self.with(types, |b| {
            let json = b.v2_json.get_or_insert_with(|| Arc::new(serde_json::to_vec(&openapi::v2(types)).unwrap_or_default())).clone();
            if !protobuf {
                return (json, "application/json");
            }
            let pb = b
                .v2_protobuf
                .get_or_insert_with(|| {
                    let doc: Value = serde_json::from_slice(&json).unwrap_or(Value::Null);
                    Arc::new(openapi::v2_protobuf(&doc))
                })
                .clone();
            (pb, OPENAPI_V2_PROTOBUF)
        })
    }

    /// `/openapi/v3`: the index of group-version documents.
    pub(crate) fn v3_index(&self, types: &Arc<[TypeSpec]>) -> Arc<Vec<u8>> {
        self.with(types, |b| {
            b.v3_index.get_or_insert_with(|| Arc::new(serde_json::to_vec(&openapi::v3_index(types)).unwrap_or_default())).clone()
        })
    }

    /// `/openapi/v3/api/v1` (group `""`) or `/openapi/v3/apis/GROUP/VERSION`; `None` when no
    /// registered type is of that group-version.
    pub(crate) fn v3_group_version(&self, types: &Arc<[TypeSpec]>, group: &str, version: &str) -> Option<Arc<Vec<u8>>> {
        self.with(types, |b| {
            b.v3.entry((group.to_string(), version.to_string()))
                .or_insert_with(|| {
                    openapi::v3_group_version(types, group, version).map(|d| Arc::new(serde_json::to_vec(&d).unwrap_or_default()))
                })
                .clone()
        })
    }
}
