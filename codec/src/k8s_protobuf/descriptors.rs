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
/// `k8s.io.api.core.v1.Pod`, their fields, and upstream's comments (each file's
/// `source_code_info`, whose locations match a descriptor's `path()`; see [`comments`]).
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

/// The comments upstream wrote on the element at `path` of `file` (a descriptor's `path()`, e.g.
/// of a [`prost_reflect::MessageDescriptor`] or [`prost_reflect::FieldDescriptor`]), leading
/// comment first, with markers such as `+listType=map` as written.
#[must_use]
pub fn comments(file: &prost_reflect::FileDescriptor, path: &[i32]) -> Option<String> {
    let info = file.file_descriptor_proto().source_code_info.as_ref()?;
    let location = info.location.iter().find(|location| location.path == path)?;
    let mut text = String::new();
    for comment in location.leading_detached_comments.iter().chain(&location.leading_comments).chain(&location.trailing_comments) {
        text.push_str(comment);
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_keeps_upstream_comments_and_their_markers() {
        let pod_spec = descriptor_pool().get_message_by_name("k8s.io.api.core.v1.PodSpec").unwrap();
        let containers = pod_spec.get_field_by_name("containers").unwrap();
        let text = comments(&pod_spec.parent_file(), containers.path()).unwrap();
        assert!(text.contains("+listType=map") && text.contains("+patchMergeKey=name"), "{text}");
        assert!(comments(&pod_spec.parent_file(), pod_spec.path()).unwrap().contains("PodSpec is a description of a pod."));
    }
}
