//! Kubernetes protobuf ⇄ JSON transcoding for the built-in kinds, as kube-apiserver does it.

mod descriptors;

pub use descriptors::{descriptor_pool, descriptor_set_bytes};
