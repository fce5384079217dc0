//! Compiles `proto/fieldstore/v1/store.proto` with protox (pure Rust, no `protoc`) and
//! tonic-build into `OUT_DIR`; `src/api.rs` includes the generated code, kept apart from ours.
//! The encoded descriptor set is written too, for gRPC server reflection. Also compiles
//! `proto/gnostic/openapiv2.proto` (gnostic's OpenAPI v2 messages, `openapi.v2.rs`) with
//! prost-build, for `src/http/openapi/gnostic.rs`, and `proto/etcd/` (etcd's v3 API, server side,
//! for `src/etcd_api/`).

use std::error::Error;
use std::path::PathBuf;

const PROTO_ROOT: &str = "../proto";
const PROTOS: &[&str] = &["fieldstore/v1/store.proto"];
const GNOSTIC: &str = "gnostic/openapiv2.proto";
/// etcd's v3 API as the etcd door serves it (`src/etcd_api/`): our declarations of etcd's
/// messages, server side only.
const ETCD: &[&str] = &["etcd/mvccpb/kv.proto", "etcd/etcdserverpb/rpc.proto"];

fn main() -> Result<(), Box<dyn Error>> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={PROTO_ROOT}/{proto}");
    }
    let descriptors = protox::compile(PROTOS, [PROTO_ROOT])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("fieldstore_descriptor.bin"), prost::Message::encode_to_vec(&descriptors))?;
    // An object body is `bytes::Bytes`: a watch event's encoding is shared by every stream it
    // goes to instead of copied per stream, and a streamed list's items move into their message.
    tonic_build::configure()
        .build_client(true)
        .build_server(true)
        .bytes([".fieldstore.v1.Body.data", ".fieldstore.v1.ListChunk.items"])
        .compile_fds(descriptors)?;
    println!("cargo:rerun-if-changed={PROTO_ROOT}/{GNOSTIC}");
    prost_build::Config::new().compile_fds(protox::compile([GNOSTIC], [PROTO_ROOT])?)?;
    for proto in ETCD {
        println!("cargo:rerun-if-changed={PROTO_ROOT}/{proto}");
    }
    let etcd = protox::compile(ETCD, [PROTO_ROOT])?;
    // Its method names label the request metrics of the etcd door.
    std::fs::write(out.join("etcd_descriptor.bin"), prost::Message::encode_to_vec(&etcd))?;
    tonic_build::configure().build_client(false).build_server(true).compile_fds(etcd)?;
    Ok(())
}
