//! fieldstore: an embedded storage engine for Kubernetes-style control planes.
//!
//! The crate root is the front door: the types an application embedding the store needs
//! ([`Store`], its options and replies, [`Error`] and [`Reason`], [`FieldManager`],
//! [`PatchType`], …). Everything else stays under the member crates, re-exported whole:
//! - [`codec`]: data formats (field paths and sets, FieldsV1 JSON and binary, managedFields entries,
//!   the `k8s\x00` protobuf envelope);
//! - [`engine`]: schemas, Server-Side Apply, patches, field history, and the store.
//!
//! The store (RocksDB) is the default `store` feature; without it (`default-features = false`)
//! only the pure SSA, patch and codec parts build. Two more features bring the Kubernetes API in
//! process: `kube` (`in_process`: a kube-rs `Client` on an embedded store, without a socket,
//! through the server's HTTP API as a tower service) and `testing` (`testing`: a fresh store per
//! controller test, ready in milliseconds, in process or on a loopback port).
//!
//! # Embedding the store
//!
//! Open a store in a directory, register a CustomResourceDefinition, apply an object as one
//! field manager, watch it, change a field as another manager, and ask who set each field:
//!
#![cfg_attr(feature = "store", doc = "```")]
#![cfg_attr(not(feature = "store"), doc = "```ignore")]
//! use fieldstore::{Collection, PatchType, Store, Options, TypeSpec, WatchEvent, WatchOptions, WriteOptions};
//! use serde_json::json;
//! use std::time::Duration;
//! # let dir = tempfile::tempdir()?;
//! # let dir = dir.path();
//!
//! let store = Store::open(dir, Options::default())?;
//!
//! // A CRD gives the type its schema.
//! let crd = json!({
//!     "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
//!     "metadata": {"name": "widgets.example.com"},
//!     "spec": {"group": "example.com", "scope": "Namespaced",
//!         "names": {"kind": "Widget", "plural": "widgets"},
//!         "versions": [{"name": "v1", "served": true, "storage": true,
//!             "schema": {"openAPIV3Schema": {"type": "object", "properties": {
//!                 "spec": {"type": "object", "properties": {
//!                     "replicas": {"type": "integer"}, "image": {"type": "string"}}}}}}}]}});
//! store.register(TypeSpec::from_crd(&crd)?)?;
//!
//! // "alice" applies her configuration (Server-Side Apply): she now owns both fields.
//! let web = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "web"},
//!     "spec": {"replicas": 2, "image": "nginx:1.27"}});
//! let widgets = Collection::new("widgets.example.com", Some("default"));
//! store.apply(&widgets, &web, &WriteOptions::new("alice"))?;
//!
//! // A watch starts with the current objects, as ADDED events, then sends every change.
//! let mut watch = store.watch(&widgets, &WatchOptions::default())?;
//! let Some(WatchEvent::Added(added)) = watch.next_timeout(Duration::from_secs(5)) else {
//!     panic!("expected ADDED")
//! };
//! assert_eq!(added["spec"]["replicas"], 2);
//!
//! // "autoscaler" changes one field with a merge patch and takes it over.
//! let patch = json!({"spec": {"replicas": 5}});
//! let autoscaler = WriteOptions::new("autoscaler");
//! let key = widgets.key("web");
//! store.patch(&key, PatchType::Merge, &patch, &autoscaler)?;
//! let Some(WatchEvent::Modified(modified)) = watch.next_timeout(Duration::from_secs(5)) else {
//!     panic!("expected MODIFIED")
//! };
//! assert_eq!(modified["spec"]["replicas"], 5);
//!
//! // Blame: every field with the last write that changed it and its owners now.
//! let blame = store.blame(&key)?;
//! let line = |path: &str| blame.iter().find(|l| l.path == path).unwrap();
//! let replicas = line(".spec.replicas");
//! assert_eq!(replicas.value, 5);
//! assert_eq!(replicas.last_change.as_ref().unwrap().manager, "autoscaler");
//! assert_eq!(replicas.owners, ["autoscaler"]);
//! let image = line(".spec.image");
//! assert_eq!(image.last_change.as_ref().unwrap().manager, "alice");
//! assert_eq!(image.owners, ["alice"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `examples/embed.rs` runs the same session and prints what it does
//! (`cargo run --release --example embed`).
#![deny(missing_docs)]

#[cfg(feature = "kube")]
pub mod in_process;
#[cfg(feature = "testing")]
pub mod testing;

pub use fieldstore_codec as codec;
pub use fieldstore_engine as engine;

pub use fieldstore_engine::history::ChangeKind;
pub use fieldstore_engine::patch::PatchType;
pub use fieldstore_engine::{Conflicts, Error, FieldManager, Reason, Result};

#[cfg(feature = "store")]
pub use fieldstore_engine::store::{
    Attribution, BlameLine, Collection, DeleteOptions, FieldEvent, FieldTimeline, GetOptions, HistoryPolicy, HistoryQuery, ListMeta,
    ListOptions, ListStream, ManagedObject, ManagedPage, ManagerSummary, ObjectKey, ObjectList, Options, Owner, ResourceVersionMatch,
    Revision, SchemaSource, Store, TypeSpec, Watch, WatchEvent, WatchOptions, WriteEntry, WriteOptions, WriteVerb,
};
