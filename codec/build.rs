//! Compiles the Kubernetes `runtime.Unknown` envelope schema with protox (pure Rust, no `protoc`)
//! and prost-build into `OUT_DIR`; `src/envelope.rs` includes the result in a private module.

use std::error::Error;

const PROTO_ROOT: &str = "../proto";
const PROTOS: &[&str] = &["k8s/runtime.proto"];

fn main() -> Result<(), Box<dyn Error>> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={PROTO_ROOT}/{proto}");
    }
    let descriptors = protox::compile(PROTOS, [PROTO_ROOT])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
