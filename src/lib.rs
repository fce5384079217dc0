//! fieldstore: an embedded storage engine for Kubernetes-style control planes.
//!
//! This facade re-exports the public API of the member crates:
//! - [`codec`]: data formats (field paths and sets, FieldsV1 JSON and binary, managedFields entries,
//!   the `k8s\x00` protobuf envelope);
//! - [`engine`]: schemas and Server-Side Apply.
#![deny(missing_docs)]

pub use fieldstore_codec as codec;
pub use fieldstore_engine as engine;
