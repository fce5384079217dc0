//! Compiles the Kubernetes protos under `proto/k8s.io/` (upstream `generated.proto` files, see
//! `proto/k8s.io/README.md`) with protox (pure Rust, no `protoc`) and writes to `OUT_DIR`:
//!
//! - `k8s_descriptor_set.bin`: their `FileDescriptorSet`, with source code info (the comments, which
//!   carry markers such as `+listType=map`), read by `src/k8s_protobuf/descriptors.rs`;
//! - `k8s.io.apimachinery.pkg.runtime.rs`: prost-build's code for `runtime.Unknown` and `TypeMeta`
//!   only (the `k8s\x00` envelope, `src/envelope.rs`); every other message is handled by the
//!   table-driven transcoder, not by generated structs;
//! - `k8s_gofields.tsv`: the Go struct facts of `k8s-api/gofields.json` (JSON names, omitempty,
//!   pointer or value, inline) as a compact table, checked here against the descriptors so that every
//!   field of every message has its facts.

use std::error::Error;
use std::fmt::Write as _;
use std::path::PathBuf;

use prost::Message as _;

const PROTO_ROOT: &str = "../proto";
/// The Kubernetes protos, by import path (their own imports are among them).
const K8S_PROTOS: &[&str] = &[
    "k8s.io/api/events/v1/generated.proto",
    "k8s.io/api/storage/v1/generated.proto",
    "k8s.io/api/admissionregistration/v1/generated.proto",
    "k8s.io/api/scheduling/v1/generated.proto",
    "k8s.io/api/node/v1/generated.proto",
    "k8s.io/api/certificates/v1/generated.proto",
    "k8s.io/api/flowcontrol/v1/generated.proto",
    "k8s.io/api/authorization/v1/generated.proto",
    "k8s.io/api/authentication/v1/generated.proto",
    "k8s.io/api/apps/v1/generated.proto",
    "k8s.io/api/autoscaling/v1/generated.proto",
    "k8s.io/api/autoscaling/v2/generated.proto",
    "k8s.io/api/batch/v1/generated.proto",
    "k8s.io/api/coordination/v1/generated.proto",
    "k8s.io/api/core/v1/generated.proto",
    "k8s.io/api/discovery/v1/generated.proto",
    "k8s.io/api/networking/v1/generated.proto",
    "k8s.io/api/policy/v1/generated.proto",
    "k8s.io/api/rbac/v1/generated.proto",
    "k8s.io/api/scheduling/v1alpha3/generated.proto",
    "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/generated.proto",
    "k8s.io/apimachinery/pkg/api/resource/generated.proto",
    "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
    "k8s.io/apimachinery/pkg/runtime/generated.proto",
    "k8s.io/apimachinery/pkg/runtime/schema/generated.proto",
    "k8s.io/apimachinery/pkg/util/intstr/generated.proto",
];
/// The one file prost-build generates Rust code for: the envelope's `Unknown` and `TypeMeta`.
const RUNTIME_PROTO: &str = "k8s.io/apimachinery/pkg/runtime/generated.proto";
const GOFIELDS: &str = "k8s-api/gofields.json";

fn main() -> Result<(), Box<dyn Error>> {
    for proto in K8S_PROTOS {
        println!("cargo:rerun-if-changed={PROTO_ROOT}/{proto}");
    }
    println!("cargo:rerun-if-changed={GOFIELDS}");
    let out = PathBuf::from(std::env::var("OUT_DIR")?);

    let mut compiler = protox::Compiler::new([PROTO_ROOT])?;
    compiler.include_source_info(true).include_imports(true);
    compiler.open_files(K8S_PROTOS)?;
    let descriptors = compiler.file_descriptor_set();
    std::fs::write(out.join("k8s_descriptor_set.bin"), descriptors.encode_to_vec())?;

    // Comments would become doc comments, and upstream's indented Go examples doctests.
    let mut runtime = descriptors.clone();
    runtime.file.retain(|file| file.name() == RUNTIME_PROTO);
    for file in &mut runtime.file {
        file.source_code_info = None;
    }
    prost_build::Config::new().compile_fds(runtime)?;

    let gofields: serde_json::Value = serde_json::from_slice(&std::fs::read(GOFIELDS)?)?;
    std::fs::write(out.join("k8s_gofields.tsv"), gofields_table(&descriptors, &gofields)?)?;
    Ok(())
}

/// The facts of every message of `descriptors`, one line per message and per field:
///
/// ```text
/// M <TAB> full.message.Name <TAB> 1|0 (embeds metav1.TypeMeta)
/// F <TAB> number <TAB> JSON name ("-": none; "" with flag i: inline) <TAB> v|p|s|m (value, pointer, slice, map) <TAB> flags (e omitempty, z omitzero, i inline)
/// ```
///
/// A message without facts (a type with its own Go marshallers such as `metav1.Time` or
/// `resource.Quantity`, a Go named slice such as `metav1.Verbs`, an empty struct) gets an `M` line
/// and no `F` lines, except core/v1 `List`, which is Go's `type List metav1.List` and gets meta/v1
/// `List`'s facts.
fn gofields_table(descriptors: &prost_types::FileDescriptorSet, gofields: &serde_json::Value) -> Result<String, Box<dyn Error>> {
    let messages = gofields.get("messages").and_then(serde_json::Value::as_object).ok_or("gofields.json: no \"messages\" object")?;
    let mut table = String::new();
    for file in &descriptors.file {
        for message in &file.message_type {
            let name = format!("{}.{}", file.package(), message.name());
            let facts_name = if name == "k8s.io.api.core.v1.List" { "k8s.io.apimachinery.pkg.apis.meta.v1.List" } else { name.as_str() };
            let facts = messages.get(facts_name).ok_or_else(|| format!("gofields.json has no facts for {facts_name}"))?;
            let fields = facts.get("fields").and_then(serde_json::Value::as_object).ok_or_else(|| format!("{facts_name}: no fields"))?;
            let type_meta = facts.get("typeMetaInline").and_then(serde_json::Value::as_bool).unwrap_or(false);
            writeln!(table, "M\t{name}\t{}", u8::from(type_meta))?;
            if fields.is_empty() {
                continue;
            }
            for field in &message.field {
                let fact =
                    fields.get(&field.number().to_string()).ok_or_else(|| format!("{facts_name}: no facts for field {}", field.name()))?;
                let text = |key: &str| fact.get(key).and_then(serde_json::Value::as_str);
                let flag = |key: &str| fact.get(key).and_then(serde_json::Value::as_bool).unwrap_or(false);
                if text("proto") != Some(field.name()) {
                    return Err(format!("{facts_name}.{}: gofields.json names it {:?}", field.name(), text("proto")).into());
                }
                let json = match fact.get("json") {
                    Some(serde_json::Value::Null) => "-",
                    _ => text("json").ok_or_else(|| format!("{facts_name}.{}: no JSON name", field.name()))?,
                };
                let kind = match text("kind") {
                    Some("value") => 'v',
                    Some("ptr") => 'p',
                    Some("slice") => 's',
                    Some("map") => 'm',
                    other => return Err(format!("{facts_name}.{}: unknown kind {other:?}", field.name()).into()),
                };
                let flags: String = [("omitempty", 'e'), ("omitzero", 'z'), ("inline", 'i')]
                    .into_iter()
                    .filter_map(|(key, c)| flag(key).then_some(c))
                    .collect();
                writeln!(table, "F\t{}\t{json}\t{kind}\t{flags}", field.number())?;
            }
        }
    }
    Ok(table)
}
