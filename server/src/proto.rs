//! The generated gRPC code for `proto/fieldstore/v1/store.proto` (kept apart from ours), and
//! its descriptor set for server reflection.

#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("fieldstore.v1");
}

/// The encoded `FileDescriptorSet` of the API, served by gRPC reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fieldstore_descriptor.bin"));

/// The encoded descriptor set of etcd's v3 API as the etcd door serves it (`proto/etcd/`): its
/// method names label the door's request metrics.
pub const ETCD_FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/etcd_descriptor.bin"));
