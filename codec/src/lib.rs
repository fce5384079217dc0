//! fieldstore's data formats: field paths and sets ([`PathElement`], [`Path`], [`Set`]), FieldsV1 in
//! Kubernetes' JSON form and in fieldstore's compact binary form, managedFields entries, the
//! Kubernetes protobuf envelope (`k8s\x00` + `runtime.Unknown`), and Kubernetes protobuf ⇄ JSON
//! transcoding of the built-in kinds ([`k8s_protobuf`]).
//!
//! Values are [`serde_json::Value`]: integers stay exact (`i64`/`u64`), floats are `f64`, and the
//! ordering and equality rules of structured-merge-diff are provided by [`value`].
#![deny(missing_docs)]

pub mod document;
pub mod envelope;
mod error;
pub mod fieldpath;
pub mod fields_binary;
pub mod fields_v1;
pub mod json_text;
pub mod k8s_protobuf;
pub mod managed_fields;
pub mod rfc3339;
pub mod value;

pub use envelope::Envelope;
pub use error::{Error, Result};
pub use fieldpath::{Path, PathElement, Set};
pub use managed_fields::{ManagedFieldsEntry, Operation};
