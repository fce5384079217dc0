//! Loaders for OpenAPI schemas: a CRD version's `openAPIV3Schema`, a whole
//! CustomResourceDefinition, an OpenAPI v2 document's `definitions` and an OpenAPI v3 document's
//! `components.schemas`, converted as Kubernetes' kube-openapi `schemaconv` converts them.
//!
//! Kubernetes has two converters, and each loader follows the one Kubernetes uses for its input:
//!
//! - **v3** (`ToSchemaFromOpenAPI`, used for CRDs and OpenAPI v3 documents): a schema without
//!   `type` accepts anything (an untyped scalar, a list and a map); `type: object` is a map whose
//!   declared `properties` are its fields and whose other keys take the `additionalProperties`
//!   type — deduced when the object declares no properties or preserves unknown fields, none when
//!   it declares properties; `$ref` and a single-element `allOf: [{$ref}]` name a type;
//!   `io.k8s.apimachinery.pkg.api.resource.Quantity` and `…runtime.RawExtension` are untyped
//!   scalars.
//! - **v2** (`ToSchema` over kube-openapi's `proto` models, used for OpenAPI v2 documents): a
//!   schema with `properties` is a struct (its `additionalProperties` ignored), an object without
//!   them is a map of its `additionalProperties` (deduced when absent), a schema with neither
//!   `type` nor `properties` is the deduced type, `allOf` is not looked at, and a reference to
//!   `RawExtension` is the atomic untyped type.
//!
//! Both flavours share the rest: `x-kubernetes-map-type` (`atomic`, `granular`) sets a map's
//! relationship, on a `$ref` too (as a derived named type `<name>#atomic` / `<name>#granular`,
//! since this model's references carry no relationship of their own);
//! `x-kubernetes-preserve-unknown-fields: true` gives every map of the subtree the deduced element
//! type; lists take `x-kubernetes-list-type` (`atomic`, `set`, `map` with
//! `x-kubernetes-list-map-keys`), else `x-kubernetes-patch-strategy` (`merge` and
//! `merge,retainKeys`: associative, keyed by `x-kubernetes-patch-merge-key` when there is one, a
//! set otherwise; `retainKeys`: atomic), else are atomic. String formats other than `byte` make
//! an untyped scalar (so `int-or-string` and `date-time` are untyped), as in Kubernetes.
//!
//! Every loaded schema also holds the two common types Kubernetes adds (`__untyped_atomic_` and
//! [`DEDUCED_TYPE`](super::DEDUCED_TYPE)) and the built-in `ObjectMeta` types
//! ([`OBJECT_META_TYPE`] and the types it uses) unless the document defines them itself.
//!
//! Conversion is one pass over the document: each schema node is visited once; nested inline
//! schemas become inline type references.
//!
//! Its modules, each using only those before it: [`path`] (where a node is, for errors),
//! [`object_meta`] (the built-in types), [`extensions`] (the keywords and extensions a node's
//! conversion reads) and [`converter`] (the conversion of one document).

mod converter;
mod extensions;
mod object_meta;
mod path;

pub use object_meta::OBJECT_META_TYPE;

use super::{Schema, TypeDef};
use crate::Result;
use converter::{Converter, Flavor, V2_PREFIX, V3_PREFIX};
use path::{err, At};
use serde_json::{Map as JsonMap, Value};
use std::collections::HashSet;
use std::fmt::Write as _;

/// Converts a single OpenAPI v3 schema object — a CRD version's `openAPIV3Schema` — into a schema
/// whose type `root_name` is that object.
///
/// The schema is taken as written: unlike [`from_crd`], the root's `metadata` is not replaced by
/// `ObjectMeta`. Nested objects marked `x-kubernetes-embedded-resource` do get `apiVersion`,
/// `kind` and an `ObjectMeta` `metadata`, as Kubernetes adds them.
///
/// # Examples
/// ```
/// # use fieldstore_engine::schema::from_openapi_v3;
/// let s = from_openapi_v3(&serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}}), "root")?;
/// assert!(s.named("root").is_some());
/// # Ok::<(), fieldstore_engine::Error>(())
/// ```
///
/// # Errors
/// [`Error::Schema`](crate::Error::Schema) with the path of the offending node (starting at
/// `openAPIV3Schema`) when the schema is malformed: a node that is not an object, an unknown
/// `type`, an array without `items`, an unknown list type, map type or patch strategy, a map list
/// without keys, an unknown `$ref` target, or nesting deeper than 128 levels.
pub fn from_openapi_v3(schema: &Value, root_name: &str) -> Result<Schema> {
    convert_root(schema, root_name, "openAPIV3Schema", false, false)
}

/// Converts every version of an `apiextensions.k8s.io/v1` CustomResourceDefinition (as JSON;
/// convert YAML with `serde_yaml` first) into `(version, schema, root type name)`, the schema
/// built as the apiserver builds it for Server-Side Apply: the version's `openAPIV3Schema` with
/// `apiVersion` and `kind` strings and `metadata` of the built-in [`OBJECT_META_TYPE`], and
/// `spec.preserveUnknownFields` applied to the whole schema.
///
/// The root type is named as Kubernetes names CRD definitions: the group reversed, then version
/// and kind (`example.com`, `v1`, `Widget` → `com.example.v1.Widget`, see [`crd_type_name`]).
/// A version without a schema gets a root that accepts any object, with deduced contents.
///
/// # Examples
/// ```
/// # use fieldstore_engine::schema::from_crd;
/// let crd = serde_json::json!({
///     "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
///     "spec": {"group": "example.com", "names": {"kind": "Widget"}, "versions": [
///         {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
/// let versions = from_crd(&crd)?;
/// assert_eq!(versions[0].0, "v1");
/// assert_eq!(versions[0].2, "com.example.v1.Widget");
/// # Ok::<(), fieldstore_engine::Error>(())
/// ```
///
/// # Errors
/// [`Error::Schema`](crate::Error::Schema) naming the place (e.g.
/// `spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.items`) when the CRD lacks
/// its group, kind or versions, or a version's schema is malformed (see [`from_openapi_v3`]).
pub fn from_crd(crd: &Value) -> Result<Vec<(String, Schema, String)>> {
    let obj = crd.as_object().ok_or_else(|| err("document", "a CustomResourceDefinition must be an object"))?;
    if let Some(v) = obj.get("apiVersion") {
        if v.as_str() != Some("apiextensions.k8s.io/v1") {
            return Err(err("apiVersion", &format!("expected apiextensions.k8s.io/v1, got {v}")));
        }
    }
    if let Some(k) = obj.get("kind") {
        if k.as_str() != Some("CustomResourceDefinition") {
            return Err(err("kind", &format!("expected CustomResourceDefinition, got {k}")));
        }
    }
    let spec = obj.get("spec").and_then(Value::as_object).ok_or_else(|| err("spec", "missing or not an object"))?;
    let group = non_empty_str(spec.get("group"), "spec.group")?;
    let kind = non_empty_str(spec.get("names").and_then(|n| n.get("kind")), "spec.names.kind")?;
    let preserve_all = match spec.get("preserveUnknownFields") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(err("spec.preserveUnknownFields", "must be a boolean")),
    };
    let versions = match spec.get("versions") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        _ => return Err(err("spec.versions", "must be a non-empty list")),
    };
    let mut out = Vec::with_capacity(versions.len());
    for (i, v) in versions.iter().enumerate() {
        let name = non_empty_str(v.get("name"), &format!("spec.versions[{i}].name"))?;
        let root_name = crd_type_name(group, name, kind);
        let schema = match v.get("schema") {
            None | Some(Value::Null) => None,
            Some(Value::Object(s)) => s.get("openAPIV3Schema").filter(|s| !s.is_null()),
            Some(_) => return Err(err(&format!("spec.versions[{i}].schema"), "must be an object")),
        };
        let converted = match schema {
            Some(s) => convert_root(s, &root_name, &format!("spec.versions[{i}].schema.openAPIV3Schema"), true, preserve_all)?,
            // Kubernetes publishes a bare object for a version without a schema.
            None => convert_root(&serde_json::json!({"type": "object"}), &root_name, "", false, preserve_all)?,
        };
        out.push((name.to_string(), converted, root_name));
    }
    Ok(out)
}

/// Converts the `definitions` of an OpenAPI v2 (Swagger) document, as Kubernetes serves at
/// `/openapi/v2`: every definition becomes a named type of the same name (e.g.
/// `io.k8s.api.apps.v1.Deployment`), `$ref: "#/definitions/X"` a reference to it.
///
/// A definition that is only a `$ref` is an alias of its target.
///
/// # Examples
/// ```
/// # use fieldstore_engine::schema::from_openapi_v2;
/// let doc = serde_json::json!({"definitions": {"A": {"properties": {"b": {"$ref": "#/definitions/B"}}},
///                                             "B": {"type": "string"}}});
/// let s = from_openapi_v2(&doc)?;
/// assert!(s.named("A").is_some() && s.named("B").is_some());
/// # Ok::<(), fieldstore_engine::Error>(())
/// ```
///
/// # Errors
/// [`Error::Schema`](crate::Error::Schema) with a path such as `definitions[A].properties.b.$ref`
/// when the document is malformed (see [`from_openapi_v3`]) or refers to a definition it lacks.
pub fn from_openapi_v2(doc: &Value) -> Result<Schema> {
    let defs = document_schemas(doc, &["definitions"])?;
    convert_document(Flavor::V2, V2_PREFIX, "definitions", defs)
}

/// Converts the `components.schemas` of an OpenAPI v3 document, as Kubernetes serves at
/// `/openapi/v3/...`: every schema becomes a named type of the same name,
/// `$ref: "#/components/schemas/X"` (alone or as `allOf: [{$ref}]`) a reference to it.
///
/// # Errors
/// [`Error::Schema`](crate::Error::Schema) with a path such as `components.schemas[A].properties.b`
/// when the document is malformed (see [`from_openapi_v3`]) or refers to a schema it lacks.
pub fn from_openapi_v3_components(doc: &Value) -> Result<Schema> {
    let defs = document_schemas(doc, &["components", "schemas"])?;
    convert_document(Flavor::V3, V3_PREFIX, "components.schemas", defs)
}

/// The built-in `ObjectMeta` types alone (plus the common untyped types); the root is
/// [`OBJECT_META_TYPE`].
pub fn object_meta_schema() -> Schema {
    Converter::new(Flavor::V3, V3_PREFIX, HashSet::new()).finish(Vec::new(), false).unwrap_or_default()
}

/// The name Kubernetes gives a CRD's type in its OpenAPI documents: the group's DNS labels
/// reversed, then version and kind (`example.com`, `v1`, `Widget` → `com.example.v1.Widget`).
pub fn crd_type_name(group: &str, version: &str, kind: &str) -> String {
    let mut out = String::with_capacity(group.len() + version.len() + kind.len() + 2);
    for (i, label) in group.rsplit('.').enumerate() {
        if i > 0 {
            out.push('.');
        }
        out.push_str(label);
    }
    let _ = write!(out, ".{version}.{kind}");
    out
}

/// The non-empty string `v`; an error at `path` otherwise.
fn non_empty_str<'v>(v: Option<&'v Value>, path: &str) -> Result<&'v str> {
    match v.and_then(Value::as_str) {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(err(path, "missing or not a non-empty string")),
    }
}

/// The schemas object at `keys` of `doc`; a document without one has no schemas.
fn document_schemas<'d>(doc: &'d Value, keys: &[&str]) -> Result<Option<&'d JsonMap<String, Value>>> {
    if !doc.is_object() {
        return Err(err("document", "an OpenAPI document must be an object"));
    }
    let mut cur = doc;
    for (i, k) in keys.iter().enumerate() {
        match cur.get(k) {
            None | Some(Value::Null) => return Ok(None),
            Some(v @ Value::Object(_)) => cur = v,
            Some(_) => return Err(err(&keys[..=i].join("."), "must be an object")),
        }
    }
    Ok(cur.as_object())
}

/// Converts one schema object as the root type of a schema of its own; `native` adds the
/// Kubernetes object fields (`apiVersion`, `kind`, `metadata`) to it, as for a CRD's root.
fn convert_root(schema: &Value, root_name: &str, root_path: &str, native: bool, preserve_all: bool) -> Result<Schema> {
    let mut c = Converter::new(Flavor::V3, V3_PREFIX, HashSet::new());
    let atom = c.atom(schema, &At::root(root_path), preserve_all, native, 0)?;
    c.finish(vec![TypeDef { name: root_name.to_string(), atom }], preserve_all)
}

/// Converts a document's schemas (`defs`, at `root_path`), each a named type; references start
/// with `prefix`.
fn convert_document(flavor: Flavor, prefix: &'static str, root_path: &str, defs: Option<&JsonMap<String, Value>>) -> Result<Schema> {
    let empty = JsonMap::new();
    let defs = defs.unwrap_or(&empty);
    let known = defs.keys().map(String::as_str).collect();
    let mut c = Converter::new(flavor, prefix, known);
    let types = c.definitions(defs, &At::root(root_path), false)?;
    c.finish(types, false)
}

#[cfg(test)]
mod tests {
    use super::super::{ElementRelationship, DEDUCED_TYPE};
    use super::converter::{MAX_DEPTH, UNTYPED_ATOMIC};
    use super::*;
    use crate::Error;

    #[test]
    fn builtin_object_meta_converts() {
        let s = object_meta_schema();
        let meta_ref = s.named(OBJECT_META_TYPE).unwrap();
        let meta = s.resolve(&meta_ref).unwrap().map.as_ref().unwrap();
        let owners = s.resolve(&meta.find_field("ownerReferences").unwrap().ty).unwrap().list.as_ref().unwrap();
        assert_eq!(owners.keys, vec![fieldstore_codec::fieldpath::Name::from("uid")]);
        let owner = s.resolve(&owners.element_type).unwrap().map.as_ref().unwrap();
        assert_eq!(owner.relationship, ElementRelationship::Atomic);
        assert!(s.named(DEDUCED_TYPE).is_some() && s.named(UNTYPED_ATOMIC).is_some());
    }

    #[test]
    fn crd_type_name_reverses_the_group() {
        assert_eq!(crd_type_name("example.com", "v1", "Widget"), "com.example.v1.Widget");
        assert_eq!(crd_type_name("stable.example.com", "v1beta1", "CronTab"), "com.example.stable.v1beta1.CronTab");
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let mut s = serde_json::json!({"type": "string"});
        for _ in 0..(MAX_DEPTH + 5) {
            s = serde_json::json!({"type": "array", "items": s});
        }
        assert!(matches!(from_openapi_v3(&s, "r"), Err(Error::Schema { .. })));
    }
}
