//! The generated gRPC code for `proto/fieldstore/v1/store.proto` (kept apart from ours), and
//! its descriptor set for server reflection.

#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("fieldstore.v1");
}

/// The encoded `FileDescriptorSet` of the API, served by gRPC reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fieldstore_descriptor.bin"));
