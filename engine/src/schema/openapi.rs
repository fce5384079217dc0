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
//! [`DEDUCED_TYPE`]) and the built-in `ObjectMeta` types ([`OBJECT_META_TYPE`] and the types it
//! uses) unless the document defines them itself.
//!
//! Conversion is one pass over the document: each schema node is visited once; nested inline
//! schemas become inline type references.

use super::{Atom, ElementRelationship, List, Map, Scalar, Schema, StructField, TypeDef, TypeRef, DEDUCED_TYPE};
use crate::{Error, Result};
use serde_json::{Map as JsonMap, Value};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

/// Name of the built-in `ObjectMeta` type every loaded schema holds (unless the document defines
/// its own); the `metadata` of a CRD's root and of embedded resources is of this type.
pub const OBJECT_META_TYPE: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Name of the atomic untyped type Kubernetes adds to every converted schema.
const UNTYPED_ATOMIC: &str = "__untyped_atomic_";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";
const V2_PREFIX: &str = "#/definitions/";
const V3_PREFIX: &str = "#/components/schemas/";

/// Deepest nesting of inline schemas accepted; deeper documents are rejected rather than risking
/// the stack here or in the typed walkers later.
const MAX_DEPTH: usize = 128;

/// The built-in `ObjectMeta` and the types it uses, as Kubernetes publishes them (OpenAPI v3,
/// descriptions left out): labels and annotations granular maps, finalizers a set,
/// ownerReferences a map list keyed by `uid` of atomic items, managedFields an atomic list.
const OBJECT_META_DEFINITIONS: &str = r##"{
  "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
    "type": "object",
    "properties": {
      "annotations": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
      "creationTimestamp": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
      "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
      "deletionTimestamp": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
      "finalizers": {
        "type": "array", "items": {"type": "string", "default": ""},
        "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge"
      },
      "generateName": {"type": "string"},
      "generation": {"type": "integer", "format": "int64"},
      "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
      "managedFields": {
        "type": "array",
        "items": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry"},
        "x-kubernetes-list-type": "atomic"
      },
      "name": {"type": "string"},
      "namespace": {"type": "string"},
      "ownerReferences": {
        "type": "array",
        "items": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"},
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"],
        "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"
      },
      "resourceVersion": {"type": "string"},
      "selfLink": {"type": "string"},
      "uid": {"type": "string"}
    }
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference": {
    "type": "object",
    "required": ["apiVersion", "kind", "name", "uid"],
    "properties": {
      "apiVersion": {"type": "string", "default": ""},
      "blockOwnerDeletion": {"type": "boolean"},
      "controller": {"type": "boolean"},
      "kind": {"type": "string", "default": ""},
      "name": {"type": "string", "default": ""},
      "uid": {"type": "string", "default": ""}
    },
    "x-kubernetes-map-type": "atomic"
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry": {
    "type": "object",
    "properties": {
      "apiVersion": {"type": "string"},
      "fieldsType": {"type": "string"},
      "fieldsV1": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"},
      "manager": {"type": "string"},
      "operation": {"type": "string"},
      "subresource": {"type": "string"},
      "time": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}
    }
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {"type": "object"},
  "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string", "format": "date-time"}
}"##;

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
/// [`Error::Schema`] with the path of the offending node (starting at `openAPIV3Schema`) when the
/// schema is malformed: a node that is not an object, an unknown `type`, an array without
/// `items`, an unknown list type, map type or patch strategy, a map list without keys, an unknown
/// `$ref` target, or nesting deeper than 128 levels.
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
/// [`Error::Schema`] naming the place (e.g.
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
/// [`Error::Schema`] with a path such as `definitions[A].properties.b.$ref` when the document is
/// malformed (see [`from_openapi_v3`]) or refers to a definition it lacks.
pub fn from_openapi_v2(doc: &Value) -> Result<Schema> {
    let defs = document_schemas(doc, &["definitions"])?;
    convert_document(Flavor::V2, V2_PREFIX, "definitions", defs)
}

/// Converts the `components.schemas` of an OpenAPI v3 document, as Kubernetes serves at
/// `/openapi/v3/...`: every schema becomes a named type of the same name,
/// `$ref: "#/components/schemas/X"` (alone or as `allOf: [{$ref}]`) a reference to it.
///
/// # Errors
/// [`Error::Schema`] with a path such as `components.schemas[A].properties.b` when the document
/// is malformed (see [`from_openapi_v3`]) or refers to a schema it lacks.
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

fn err(path: &str, reason: &str) -> Error {
    Error::Schema { path: path.to_string(), reason: reason.to_string() }
}

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

fn convert_document(flavor: Flavor, prefix: &'static str, root_path: &str, defs: Option<&JsonMap<String, Value>>) -> Result<Schema> {
    let empty = JsonMap::new();
    let defs = defs.unwrap_or(&empty);
    let known = defs.keys().map(String::as_str).collect();
    let mut c = Converter::new(flavor, prefix, known);
    let types = c.definitions(defs, &At::root(root_path), false)?;
    c.finish(types, false)
}

/// Which of Kubernetes' two converters to follow (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    V2,
    V3,
}

/// One step of the path to a schema node, rendered only when an error needs it.
#[derive(Clone, Copy)]
enum Seg<'a> {
    Root(&'a str),
    Field(&'a str),
    Name(&'a str),
}

/// The path to the node being converted, as a list linked through the call stack.
#[derive(Clone, Copy)]
struct At<'a> {
    parent: Option<&'a At<'a>>,
    seg: Seg<'a>,
}

impl<'a> At<'a> {
    fn root(path: &'a str) -> Self {
        At { parent: None, seg: Seg::Root(path) }
    }

    fn field<'b>(&'b self, name: &'b str) -> At<'b> {
        At { parent: Some(self), seg: Seg::Field(name) }
    }

    fn name<'b>(&'b self, name: &'b str) -> At<'b> {
        At { parent: Some(self), seg: Seg::Name(name) }
    }

    fn render(&self) -> String {
        let mut segs = Vec::new();
        let mut cur = Some(self);
        while let Some(at) = cur {
            segs.push(at.seg);
            cur = at.parent;
        }
        let mut out = String::new();
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root(r) => out.push_str(r),
                Seg::Field(f) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(f);
                }
                Seg::Name(n) => {
                    let _ = write!(out, "[{n}]");
                }
            }
        }
        if out.is_empty() {
            out.push_str("(root)");
        }
        out
    }

    fn err(&self, reason: impl Into<String>) -> Error {
        Error::Schema { path: self.render(), reason: reason.into() }
    }
}

/// The conversion of one document: the names it may refer to, and what the pass found that the
/// final assembly must add (aliases, relationship overrides of referenced types).
struct Converter<'d> {
    flavor: Flavor,
    prefix: &'static str,
    /// Names a `$ref` may target: the document's own and the built-in ones.
    known: HashSet<&'d str>,
    /// Definitions that are only a `$ref`: (name, target, path for errors).
    aliases: Vec<(String, String, String)>,
    /// Referenced types whose map relationship a reference overrides: (target, atomic).
    overrides: BTreeSet<(String, bool)>,
}

impl<'d> Converter<'d> {
    fn new(flavor: Flavor, prefix: &'static str, mut known: HashSet<&'d str>) -> Self {
        known.extend(BUILTIN_NAMES);
        Converter { flavor, prefix, known, aliases: Vec::new(), overrides: BTreeSet::new() }
    }

    /// Converts every definition into a named type (aliases are recorded for [`Self::finish`]).
    fn definitions(&mut self, defs: &'d JsonMap<String, Value>, at: &At<'_>, preserve_all: bool) -> Result<Vec<TypeDef>> {
        let mut out = Vec::with_capacity(defs.len());
        for (name, def) in defs {
            let at = at.name(name);
            let obj = def.as_object().ok_or_else(|| at.err("a schema must be an object"))?;
            if obj.contains_key("$ref") {
                // Kubernetes skips such definitions (leaving references to them dangling); an
                // alias keeps them usable.
                if let Some(target) = self.ref_target(obj, &at)? {
                    self.aliases.push((name.clone(), target, at.render()));
                }
                continue;
            }
            let atom = if name == QUANTITY || (self.flavor == Flavor::V3 && name == RAW_EXTENSION) {
                Atom { scalar: Some(Scalar::Untyped), ..Atom::default() }
            } else {
                self.atom(def, &at, preserve_all, false, 0)?
            };
            out.push(TypeDef { name: name.clone(), atom });
        }
        Ok(out)
    }

    /// Assembles the schema: the converted types, the built-in and common types the document
    /// lacks, aliases, and the derived types of relationship overrides.
    fn finish(self, mut types: Vec<TypeDef>, preserve_all: bool) -> Result<Schema> {
        let alias_targets: HashMap<&str, &str> = self.aliases.iter().map(|(n, t, _)| (n.as_str(), t.as_str())).collect();
        let mut index: HashMap<String, usize> = types.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        let add = |types: &mut Vec<TypeDef>, index: &mut HashMap<String, usize>, t: TypeDef| {
            if !index.contains_key(&t.name) && !alias_targets.contains_key(t.name.as_str()) {
                index.insert(t.name.clone(), types.len());
                types.push(t);
            }
        };
        for t in builtin_types(preserve_all)? {
            add(&mut types, &mut index, t);
        }
        for t in Schema::deduced().types() {
            add(&mut types, &mut index, t.clone());
        }
        for (name, target, path) in &self.aliases {
            let mut cur = target.as_str();
            let mut steps = 0;
            let atom = loop {
                if let Some(&i) = index.get(cur) {
                    break types[i].atom.clone();
                }
                match alias_targets.get(cur) {
                    Some(&next) if steps <= self.aliases.len() => {
                        cur = next;
                        steps += 1;
                    }
                    Some(_) => return Err(err(path, "cycle of references")),
                    None => return Err(err(path, &format!("unknown reference target {cur:?}"))),
                }
            };
            index.insert(name.clone(), types.len());
            types.push(TypeDef { name: name.clone(), atom });
        }
        for (target, atomic) in &self.overrides {
            let Some(&i) = index.get(target) else {
                return Err(err(target, "unknown reference target"));
            };
            let mut atom = types[i].atom.clone();
            if let Some(m) = &mut atom.map {
                m.relationship = if *atomic { ElementRelationship::Atomic } else { ElementRelationship::Separable };
            }
            types.push(TypeDef { name: override_name(target, *atomic), atom });
        }
        Ok(Schema::new(types))
    }

    /// The type of a node referenced from a field, list item or map value: a named type for a
    /// reference, an inline type otherwise.
    fn make_ref(&mut self, s: &'d Value, at: &At<'_>, preserve: bool, depth: usize) -> Result<TypeRef> {
        if depth > MAX_DEPTH {
            return Err(at.err(format!("schemas nested deeper than {MAX_DEPTH} levels")));
        }
        let obj = s.as_object().ok_or_else(|| at.err("a schema must be an object"))?;
        if let Some(target) = self.ref_target(obj, at)? {
            if self.flavor == Flavor::V2 && target == RAW_EXTENSION {
                return Ok(TypeRef::Named(UNTYPED_ATOMIC.to_string(), None));
            }
            if let Some(rel) = map_relationship(obj, at)? {
                let atomic = rel == ElementRelationship::Atomic;
                let name = override_name(&target, atomic);
                self.overrides.insert((target, atomic));
                return Ok(TypeRef::Named(name, None));
            }
            return Ok(TypeRef::Named(target, None));
        }
        Ok(TypeRef::Inline(Arc::new(self.atom(s, at, preserve, false, depth)?)))
    }

    /// The definition a node refers to, if it is a reference; an error if the target is unknown.
    fn ref_target(&self, obj: &JsonMap<String, Value>, at: &At<'_>) -> Result<Option<String>> {
        let (r, in_all_of) = match obj.get("$ref") {
            Some(r) => (r, false),
            None if self.flavor == Flavor::V3 => match obj.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
                Some([one]) => match one.get("$ref") {
                    Some(r) => (r, true),
                    None => return Ok(None),
                },
                _ => return Ok(None),
            },
            None => return Ok(None),
        };
        // Rendered only on error: most nodes are fine.
        let path = || if in_all_of { format!("{}.allOf[0].$ref", at.render()) } else { at.field("$ref").render() };
        if self.flavor == Flavor::V2 {
            // kube-openapi's proto models reject these siblings of a reference.
            if obj.get("type").is_some_and(|t| !t.is_null()) {
                return Err(at.err("a reference can only have $ref and description"));
            }
            if obj.get("properties").is_some_and(|p| p.as_object().is_some_and(|p| !p.is_empty())) {
                return Err(at.err("a reference cannot define properties"));
            }
        }
        let r = r.as_str().ok_or_else(|| err(&path(), "must be a string"))?;
        let name = r
            .strip_prefix(self.prefix)
            .ok_or_else(|| err(&path(), &format!("unsupported reference {r:?}: expected {}<name>", self.prefix)))?;
        let name = if name.contains('~') { name.replace("~1", "/").replace("~0", "~") } else { name.to_string() };
        if !self.known.contains(name.as_str()) {
            return Err(err(&path(), &format!("unknown reference target {name:?}")));
        }
        Ok(Some(name))
    }

    /// The atom of a schema node. `preserve` is inherited from the ancestors; `native` adds the
    /// Kubernetes object fields.
    fn atom(&mut self, s: &'d Value, at: &At<'_>, preserve: bool, native: bool, depth: usize) -> Result<Atom> {
        let obj = s.as_object().ok_or_else(|| at.err("a schema must be an object"))?;
        let preserve = preserve || bool_ext(obj, "x-kubernetes-preserve-unknown-fields", at)?;
        let typ = self.type_of(obj, at)?;
        let scalar_only = |scalar: Scalar| -> Result<Atom> { Ok(Atom { scalar: Some(scalar), ..Atom::default() }) };
        match (self.flavor, typ) {
            (_, "integer" | "number") => scalar_only(Scalar::Numeric),
            (_, "boolean") => scalar_only(Scalar::Boolean),
            (_, "string") => match obj.get("format").and_then(Value::as_str).unwrap_or("") {
                "" | "byte" => scalar_only(Scalar::String),
                _ => scalar_only(Scalar::Untyped),
            },
            (_, "array") => Ok(Atom { list: Some(self.list(obj, at, preserve, true, depth)?), ..Atom::default() }),
            (Flavor::V3, "object") => Ok(Atom { map: Some(self.object_v3(obj, at, preserve, native, depth)?), ..Atom::default() }),
            (Flavor::V3, "") => Ok(Atom {
                scalar: Some(Scalar::Untyped),
                list: Some(self.list(obj, at, preserve, false, depth)?),
                map: Some(self.object_v3(obj, at, preserve, native, depth)?),
            }),
            (Flavor::V2, "object" | "") => match properties(obj, at)? {
                Some(props) => {
                    let fields = self.fields(Some(props), at, preserve, native, depth)?;
                    let element_type = if preserve { deduced() } else { TypeRef::Empty };
                    let relationship = map_relationship(obj, at)?.unwrap_or_default();
                    Ok(Atom { map: Some(Map::new(fields, element_type, relationship)), ..Atom::default() })
                }
                None if typ.is_empty() => Ok(deduced_atom()),
                None => {
                    let element_type = match obj.get("additionalProperties") {
                        Some(s @ Value::Object(_)) => self.make_ref(s, &at.field("additionalProperties"), preserve, depth + 1)?,
                        None | Some(Value::Null | Value::Bool(_)) => deduced(),
                        Some(_) => return Err(at.field("additionalProperties").err("must be a schema or a boolean")),
                    };
                    let relationship = map_relationship(obj, at)?.unwrap_or_default();
                    Ok(Atom { map: Some(Map::new(Vec::new(), element_type, relationship)), ..Atom::default() })
                }
            },
            (_, other) => Err(at.field("type").err(format!("unrecognized type {other:?}"))),
        }
    }

    /// `type`, empty when absent. kube-openapi reads the first of several types in v3 and
    /// rejects several in v2.
    fn type_of<'v>(&self, obj: &'v JsonMap<String, Value>, at: &At<'_>) -> Result<&'v str> {
        match obj.get("type") {
            None | Some(Value::Null) => Ok(""),
            Some(Value::String(s)) => Ok(s),
            Some(Value::Array(a)) => match a.as_slice() {
                [] => Ok(""),
                [Value::String(s)] => Ok(s),
                [Value::String(s), ..] if self.flavor == Flavor::V3 => Ok(s),
                _ => Err(at.field("type").err("must be one type name")),
            },
            Some(_) => Err(at.field("type").err("must be a string")),
        }
    }

    /// The map of a v3 object (`parseObject`).
    fn object_v3(&mut self, obj: &'d JsonMap<String, Value>, at: &At<'_>, preserve: bool, native: bool, depth: usize) -> Result<Map> {
        let native = native || bool_ext(obj, "x-kubernetes-embedded-resource", at)?;
        let fields = self.fields(properties(obj, at)?, at, preserve, native, depth)?;
        let element_type = match obj.get("additionalProperties") {
            // An object without properties is free-form; with them, only they are allowed.
            None | Some(Value::Null) => {
                if preserve || fields.is_empty() {
                    deduced()
                } else {
                    TypeRef::Empty
                }
            }
            Some(Value::Bool(true)) => deduced(),
            Some(Value::Bool(false)) => TypeRef::Empty,
            Some(s @ Value::Object(_)) => self.make_ref(s, &at.field("additionalProperties"), preserve, depth + 1)?,
            Some(_) => return Err(at.field("additionalProperties").err("must be a schema or a boolean")),
        };
        Ok(Map::new(fields, element_type, map_relationship(obj, at)?.unwrap_or_default()))
    }

    /// The declared fields, with their defaults and patch metadata; `native` replaces
    /// `apiVersion`, `kind` and `metadata` by Kubernetes' own.
    fn fields(
        &mut self,
        props: Option<&'d JsonMap<String, Value>>,
        at: &At<'_>,
        preserve: bool,
        native: bool,
        depth: usize,
    ) -> Result<Vec<StructField>> {
        let at = at.field("properties");
        let mut fields = Vec::with_capacity(props.map_or(0, JsonMap::len) + if native { 3 } else { 0 });
        for (name, member) in props.into_iter().flatten() {
            if native && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            let at = at.field(name);
            let ty = self.make_ref(member, &at, preserve, depth + 1)?;
            let mut field = StructField::new(name.as_str(), ty);
            if let Some(m) = member.as_object() {
                field.default = m.get("default").filter(|d| !d.is_null()).cloned();
                if let Some(ps) = m.get("x-kubernetes-patch-strategy") {
                    let ps = ps.as_str().ok_or_else(|| at.field("x-kubernetes-patch-strategy").err("must be a string"))?;
                    field.patch_strategies = ps.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
                }
                if let Some(k) = m.get("x-kubernetes-patch-merge-key") {
                    let k = k.as_str().ok_or_else(|| at.field("x-kubernetes-patch-merge-key").err("must be a string"))?;
                    field.patch_merge_key = Some(k.to_string());
                }
            }
            fields.push(field);
        }
        if native {
            let string = || TypeRef::Inline(Arc::new(Atom { scalar: Some(Scalar::String), ..Atom::default() }));
            fields.push(StructField::new("apiVersion", string()));
            fields.push(StructField::new("kind", string()));
            fields.push(StructField::new("metadata", TypeRef::Named(OBJECT_META_TYPE.to_string(), None)));
        }
        Ok(fields)
    }

    /// The list of an array (`parseList` / `VisitArray`). `typed`: the node says `type: array`,
    /// so it must have `items`; an untyped node without `items` holds untyped atomic elements.
    fn list(&mut self, obj: &'d JsonMap<String, Value>, at: &At<'_>, preserve: bool, typed: bool, depth: usize) -> Result<List> {
        let (relationship, keys) = list_relationship(obj, at)?;
        let element_type = match obj.get("items") {
            Some(items @ Value::Object(_)) => self.make_ref(items, &at.field("items"), preserve, depth + 1)?,
            None | Some(Value::Null) if !typed => TypeRef::Named(UNTYPED_ATOMIC.to_string(), None),
            None | Some(Value::Null) => return Err(at.err("`items` must be specified on arrays")),
            Some(_) => return Err(at.field("items").err("arrays must have exactly one item schema")),
        };
        Ok(List { element_type, relationship, keys: keys.into_iter().map(Into::into).collect() })
    }
}

/// Names of the built-in types a `$ref` may target though the document does not define them.
const BUILTIN_NAMES: [&str; 5] = [
    OBJECT_META_TYPE,
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
];

/// The built-in `ObjectMeta` types, converted like any v3 document.
fn builtin_types(preserve_all: bool) -> Result<Vec<TypeDef>> {
    let defs: Value = serde_json::from_str(OBJECT_META_DEFINITIONS).map_err(|e| err("builtin ObjectMeta", &e.to_string()))?;
    let defs = defs.as_object().ok_or_else(|| err("builtin ObjectMeta", "not an object"))?;
    let mut c = Converter::new(Flavor::V3, V3_PREFIX, HashSet::new());
    c.definitions(defs, &At::root("builtin"), preserve_all)
}

fn override_name(target: &str, atomic: bool) -> String {
    format!("{target}#{}", if atomic { "atomic" } else { "granular" })
}

fn deduced() -> TypeRef {
    TypeRef::Named(DEDUCED_TYPE.to_string(), None)
}

/// The deduced type's atom, for a definition that is itself free-form.
fn deduced_atom() -> Atom {
    Atom {
        scalar: Some(Scalar::Untyped),
        list: Some(List {
            element_type: TypeRef::Named(UNTYPED_ATOMIC.to_string(), None),
            relationship: ElementRelationship::Atomic,
            keys: Vec::new(),
        }),
        map: Some(Map::new(Vec::new(), deduced(), ElementRelationship::Separable)),
    }
}

fn properties<'d>(obj: &'d JsonMap<String, Value>, at: &At<'_>) -> Result<Option<&'d JsonMap<String, Value>>> {
    match obj.get("properties") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(p)) => Ok(Some(p)),
        Some(_) => Err(at.field("properties").err("must be an object")),
    }
}

fn bool_ext(obj: &JsonMap<String, Value>, key: &str, at: &At<'_>) -> Result<bool> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(at.field(key).err("must be a boolean")),
    }
}

/// `x-kubernetes-map-type`: `atomic` or `granular`, `None` when absent.
fn map_relationship(obj: &JsonMap<String, Value>, at: &At<'_>) -> Result<Option<ElementRelationship>> {
    match obj.get("x-kubernetes-map-type") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_str() {
            Some("atomic") => Ok(Some(ElementRelationship::Atomic)),
            Some("granular") => Ok(Some(ElementRelationship::Separable)),
            _ => Err(at.field("x-kubernetes-map-type").err(format!("unknown map type {v}"))),
        },
    }
}

/// kube-openapi's `getListElementRelationship`: the list type first, then the patch strategy,
/// else atomic.
fn list_relationship(obj: &JsonMap<String, Value>, at: &At<'_>) -> Result<(ElementRelationship, Vec<String>)> {
    if let Some(lt) = obj.get("x-kubernetes-list-type").filter(|v| !v.is_null()) {
        return match lt.as_str() {
            Some("atomic") => Ok((ElementRelationship::Atomic, Vec::new())),
            Some("set") => Ok((ElementRelationship::Associative, Vec::new())),
            Some("map") => {
                let kat = at.field("x-kubernetes-list-map-keys");
                let keys = match obj.get("x-kubernetes-list-map-keys") {
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|k| k.as_str().map(str::to_string).ok_or_else(|| kat.err("keys must be strings")))
                        .collect::<Result<Vec<_>>>()?,
                    None | Some(Value::Null) => return Err(kat.err("missing map keys of a map list")),
                    Some(_) => return Err(kat.err("must be a list of strings")),
                };
                if keys.is_empty() {
                    return Err(kat.err("a map list needs at least one key"));
                }
                Ok((ElementRelationship::Associative, keys))
            }
            _ => Err(at.field("x-kubernetes-list-type").err(format!("unknown list type {lt}"))),
        };
    }
    if let Some(ps) = obj.get("x-kubernetes-patch-strategy").filter(|v| !v.is_null()) {
        return match ps.as_str() {
            Some("merge" | "merge,retainKeys") => match obj.get("x-kubernetes-patch-merge-key").filter(|v| !v.is_null()) {
                Some(Value::String(k)) => Ok((ElementRelationship::Associative, vec![k.clone()])),
                Some(_) => Err(at.field("x-kubernetes-patch-merge-key").err("must be a string")),
                // Merging without a key: a set.
                None => Ok((ElementRelationship::Associative, Vec::new())),
            },
            Some("retainKeys") => Ok((ElementRelationship::Atomic, Vec::new())),
            _ => Err(at.field("x-kubernetes-patch-strategy").err(format!("unknown patch strategy {ps} for a list"))),
        };
    }
    Ok((ElementRelationship::Atomic, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn paths_render_fields_names_and_indexes() {
        let root = At::root("definitions");
        let def = root.name("io.k8s.A");
        let f = def.field("properties");
        let g = f.field("x");
        assert_eq!(g.render(), "definitions[io.k8s.A].properties.x");
        let bare = At::root("");
        assert_eq!(bare.field("a").render(), "a");
        assert_eq!(bare.render(), "(root)");
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
