//! The compiled Kubernetes protobuf schema: the `FileDescriptorSet` that `build.rs` writes from
//! `proto/k8s.io/` (with source code info, i.e. the comments) and its lazily decoded pool.

use std::sync::OnceLock;

use prost_reflect::DescriptorPool;

/// The encoded `google.protobuf.FileDescriptorSet` of every Kubernetes `generated.proto` under
/// `proto/k8s.io/`, imports included, with source code info: each message's and field's comments
/// (and so markers such as `+listType=map` and `+patchMergeKey=name`) are in it.
static DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/k8s_descriptor_set.bin"));

/// The encoded `FileDescriptorSet` of the Kubernetes protos (see [`descriptor_pool`]), for tools that
/// want the bytes themselves (gRPC reflection, `protoc --descriptor_set_in`).
#[must_use]
pub fn descriptor_set_bytes() -> &'static [u8] {
    DESCRIPTOR_SET
}

/// The Kubernetes protos as a [`DescriptorPool`], decoded on first use: messages such as
/// `k8s.io.api.core.v1.Pod`, their fields, and (through [`prost_reflect::MessageDescriptor::comments`]
/// and friends) upstream's comments.
///
/// # Panics
///
/// Never in practice: the bytes were produced by `build.rs` from the same descriptors; a failure to
/// decode them would be a build defect, caught by the crate's tests.
#[must_use]
pub fn descriptor_pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| DescriptorPool::decode(DESCRIPTOR_SET).expect("build.rs writes a valid FileDescriptorSet"))
}
