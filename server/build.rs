//! Compiles `proto/fieldstore/v1/store.proto` with protox (pure Rust, no `protoc`) and
//! tonic-build into `OUT_DIR`; `src/api.rs` includes the generated code, kept apart from ours.
//! The encoded descriptor set is written too, for gRPC server reflection.

use std::error::Error;
use std::path::PathBuf;

const PROTO_ROOT: &str = "../proto";
const PROTOS: &[&str] = &["fieldstore/v1/store.proto"];

fn main() -> Result<(), Box<dyn Error>> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={PROTO_ROOT}/{proto}");
    }
    let descriptors = protox::compile(PROTOS, [PROTO_ROOT])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("fieldstore_descriptor.bin"), prost::Message::encode_to_vec(&descriptors))?;
    tonic_build::configure().build_client(true).build_server(true).compile_fds(descriptors)?;
    Ok(())
}
