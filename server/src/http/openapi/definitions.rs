//! The definitions a set of registered types publishes, in OpenAPI v3 form
//! (`$ref: #/components/schemas/NAME`), and their conversion to the v2 form.
//!
//! Every type publishes a complete definition of its kind and of its list, or none at all
//! (kubectl's validation rejects unknown fields of a published kind):
//!
//! - built-in kinds: their definition in the engine's compiled-in document, with every
//!   definition it references;
//! - CRDs: the registered version's `openAPIV3Schema` with `apiVersion`, `kind` and `metadata`
//!   (a reference to `ObjectMeta`) added, named `com.example.v1.Widget` (the group reversed), as
//!   apiextensions-apiserver builds it; a version without a schema is an object that keeps
//!   unknown fields;
//! - OpenAPI documents: the root definition and what it references, from the document;
//! - types without a usable schema (none, or structured-merge-diff YAML): an object that keeps
//!   unknown fields, so that clients validate nothing but the envelope.

use fieldstore_engine::schema::{builtin, crd_type_name, OBJECT_META_TYPE};
use fieldstore_engine::store::{SchemaSource, TypeSpec};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// References in the v3 form, the form this module keeps.
pub(super) const V3_PREFIX: &str = "#/components/schemas/";
/// References in the v2 form.
pub(super) const V2_PREFIX: &str = "#/definitions/";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
/// The meta/v1 definitions operations refer to (request and response bodies).
pub(super) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub(super) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub(super) const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
pub(super) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";

/// The definitions of a set of types, by name (v3 form), and the names each type's kind and list
/// go by.
#[derive(Debug, Default)]
pub(super) struct Catalog {
    /// Every definition any type (or an operation) refers to.
    pub definitions: BTreeMap<String, Value>,
}

/// The definition names of one type: its kind's and its list's.
#[derive(Debug, Clone)]
pub(super) struct Names {
    pub kind: String,
    pub list: String,
}

impl Catalog {
    /// Adds the definitions of `spec` (and everything they reference); returns their names.
    pub(super) fn add(&mut self, spec: &TypeSpec) -> Names {
        match &spec.schema {
            SchemaSource::Builtin { definition } if builtin_definitions().contains_key(definition) => {
                let list = builtin::definition_name(&spec.group, &spec.version, &format!("{}List", spec.kind))
                    .map(str::to_string)
                    .filter(|l| builtin_definitions().contains_key(l));
                self.add_builtin(definition);
                let list = match list {
                    Some(l) => {
                        self.add_builtin(&l);
                        l
                    }
                    None => self.add_list(spec, definition),
                };
                Names { kind: definition.clone(), list }
            }
            SchemaSource::Crd(crd) => {
                let name = definition_name(spec);
                let schema = crd_version_schema(crd, &spec.version);
                self.add_kind(spec, &name, schema)
            }
            SchemaSource::OpenApi { document, root } => match self.add_from_document(document, root) {
                Some(()) => {
                    let list = self.add_list(spec, root);
                    Names { kind: root.clone(), list }
                }
                None => self.add_kind(spec, &definition_name(spec), None),
            },
            _ => self.add_kind(spec, &definition_name(spec), None),
        }
    }

    /// Adds a built-in definition and, transitively, the built-in definitions it references.
    pub(super) fn add_builtin(&mut self, name: &str) {
        let mut todo = vec![name.to_string()];
        while let Some(n) = todo.pop() {
            if self.definitions.contains_key(&n) {
                continue;
            }
            let Some(def) = builtin_definitions().get(&n) else { continue };
            refs(def, &mut todo);
            let mut def = def.clone();
            describe(&n, &mut def);
            self.definitions.insert(n, def);
        }
    }

    /// A kind built from an `openAPIV3Schema` (or none: an object keeping unknown fields) with
    /// `apiVersion`, `kind` and `metadata`, and its list.
    fn add_kind(&mut self, spec: &TypeSpec, name: &str, schema: Option<&Value>) -> Names {
        let mut def = match schema {
            Some(Value::Object(o)) => Value::Object(o.clone()),
            _ => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        };
        if let Value::Object(o) = &mut def {
            o.insert("type".into(), json!("object"));
            let props = o.entry("properties").or_insert_with(|| json!({}));
            if let Value::Object(p) = props {
                p.insert("apiVersion".into(), json!({"type": "string"}));
                p.insert("kind".into(), json!({"type": "string"}));
                p.insert("metadata".into(), json!({"$ref": format!("{V3_PREFIX}{OBJECT_META_TYPE}")}));
            }
            o.insert("x-kubernetes-group-version-kind".into(), json!([gvk(spec, &spec.kind)]));
        }
        self.add_builtin(OBJECT_META_TYPE);
        self.definitions.insert(name.to_string(), def);
        let list = self.add_list(spec, name);
        Names { kind: name.to_string(), list }
    }

    /// A list of `item` objects (`…WidgetList`), as apiextensions-apiserver publishes one.
    fn add_list(&mut self, spec: &TypeSpec, item: &str) -> String {
        let name = format!("{item}List");
        if !self.definitions.contains_key(&name) {
            self.add_builtin(LIST_META);
            let def = json!({
                "type": "object",
                "required": ["items"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "items": {"type": "array", "items": {"$ref": format!("{V3_PREFIX}{item}")}},
                    "metadata": {"allOf": [{"$ref": format!("{V3_PREFIX}{LIST_META}")}], "default": {}},
                },
                "x-kubernetes-group-version-kind": [gvk(spec, &format!("{}List", spec.kind))],
            });
            self.definitions.insert(name.clone(), def);
        }
        name
    }

    /// Adds `root` of an OpenAPI document (v2 or v3) with what it references, references
    /// rewritten to the v3 form; `None` when the document lacks `root`.
    fn add_from_document(&mut self, document: &Value, root: &str) -> Option<()> {
        let defs = document.get("definitions").or_else(|| document.pointer("/components/schemas"))?.as_object()?;
        defs.get(root)?;
        let mut todo = vec![root.to_string()];
        while let Some(n) = todo.pop() {
            if self.definitions.contains_key(&n) {
                continue;
            }
            let Some(def) = defs.get(&n) else {
                // Not in the document: a built-in (ObjectMeta and the like), if known.
                self.add_builtin(&n);
                continue;
            };
            let def = rewrite_refs(def, V2_PREFIX, V3_PREFIX);
            refs(&def, &mut todo);
            self.definitions.insert(n, def);
        }
        Some(())
    }

    /// The definitions reachable from `roots`, by name.
    pub(super) fn closure<'a>(&self, roots: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, Value> {
        let mut out = BTreeMap::new();
        let mut todo: Vec<String> = roots.into_iter().map(str::to_string).collect();
        while let Some(n) = todo.pop() {
            if out.contains_key(&n) {
                continue;
            }
            if let Some(def) = self.definitions.get(&n) {
                refs(def, &mut todo);
                out.insert(n, def.clone());
            }
        }
        out
    }
}

/// The definition name of a type without a compiled-in one: the group reversed, as
/// apiextensions-apiserver names a CRD's (`com.example.v1.Widget`), or the core group's package
/// for a type of the core group (`io.k8s.api.core.v1.Thing`).
fn definition_name(spec: &TypeSpec) -> String {
    if spec.group.is_empty() {
        format!("io.k8s.api.core.{}.{}", spec.version, spec.kind)
    } else {
        crd_type_name(&spec.group, &spec.version, &spec.kind)
    }
}

/// `{group, version, kind}` as `x-kubernetes-group-version-kind` lists it.
pub(super) fn gvk(spec: &TypeSpec, kind: &str) -> Value {
    json!({"group": spec.group, "version": spec.version, "kind": kind})
}

/// The compiled-in document's definitions.
fn builtin_definitions() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    builtin::openapi_v3().pointer("/components/schemas").and_then(Value::as_object).unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// The `openAPIV3Schema` of one version of a CRD.
fn crd_version_schema<'a>(crd: &'a Value, version: &str) -> Option<&'a Value> {
    let versions = crd.pointer("/spec/versions")?.as_array()?;
    let v = versions.iter().find(|v| v.get("name").and_then(Value::as_str) == Some(version))?;
    v.pointer("/schema/openAPIV3Schema").or_else(|| crd.pointer("/spec/validation/openAPIV3Schema")).filter(|s| s.is_object())
}

/// Pushes the definition names `v` references (in either form).
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, child) in o {
                if k == "$ref" {
                    if let Some(r) = child.as_str() {
                        let name = r.strip_prefix(V3_PREFIX).or_else(|| r.strip_prefix(V2_PREFIX)).unwrap_or(r);
                        out.push(name.to_string());
                    }
                } else {
                    refs(child, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|c| refs(c, out)),
        _ => {}
    }
}

/// `v` with every `$ref` starting with `from` rewritten to start with `to`.
pub(super) fn rewrite_refs(v: &Value, from: &str, to: &str) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, c)| match (k.as_str(), c.as_str().and_then(|r| r.strip_prefix(from))) {
                    ("$ref", Some(name)) => (k.clone(), Value::String(format!("{to}{name}"))),
                    _ => (k.clone(), rewrite_refs(c, from, to)),
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|c| rewrite_refs(c, from, to)).collect()),
        other => other.clone(),
    }
}

/// A v3-form schema in the OpenAPI 2.0 (Swagger) form kube-apiserver serves at `/openapi/v2`:
/// references to `#/definitions/`; `allOf: [{$ref}]` beside siblings becomes `$ref` with those
/// siblings (kube-openapi's v2 form); `int-or-string` is `{type: string, format: int-or-string}`;
/// `oneOf`/`anyOf` of a string and a number (Quantity) is a string; the v3-only `oneOf`,
/// `anyOf`, `not` and `nullable` are dropped, as is `x-kubernetes-validations`.
pub(super) fn to_v2(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            let mut out = Map::new();
            if let Some(Value::Array(all)) = o.get("allOf") {
                if let [Value::Object(only)] = all.as_slice() {
                    if let (1, Some(r)) = (only.len(), only.get("$ref").and_then(Value::as_str)) {
                        out.insert("$ref".into(), Value::String(v2_ref(r)));
                    }
                }
            }
            let alternatives = o.get("oneOf").or_else(|| o.get("anyOf")).and_then(Value::as_array);
            let int_or_string = o.get("format").and_then(Value::as_str) == Some("int-or-string")
                || o.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
            if !o.contains_key("type") {
                if int_or_string {
                    out.insert("type".into(), json!("string"));
                    out.insert("format".into(), json!("int-or-string"));
                } else if alternatives.is_some_and(|a| a.iter().any(|s| s.get("type") == Some(&json!("string")))) {
                    out.insert("type".into(), json!("string"));
                }
            }
            for (k, c) in o {
                match k.as_str() {
                    "allOf" if out.contains_key("$ref") => {}
                    "oneOf" | "anyOf" | "not" | "nullable" | "x-kubernetes-validations" => {}
                    "$ref" => {
                        out.insert(k.clone(), c.as_str().map_or_else(|| c.clone(), |r| Value::String(v2_ref(r))));
                    }
                    // Names under `properties` are data, not keywords.
                    "properties" => {
                        let props = c.as_object().map(|p| p.iter().map(|(n, s)| (n.clone(), to_v2(s))).collect());
                        out.insert(k.clone(), props.map_or_else(|| c.clone(), Value::Object));
                    }
                    // Values, not schemas.
                    "default" | "enum" | "example" | "x-kubernetes-group-version-kind" => {
                        out.insert(k.clone(), c.clone());
                    }
                    _ if out.contains_key(k) => {}
                    _ => {
                        out.insert(k.clone(), to_v2(c));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(to_v2).collect()),
        other => other.clone(),
    }
}

/// A built-in definition with the descriptions kube-apiserver publishes (`kubectl explain`):
/// the type's own and its members'; a member that is only a `$ref` becomes `allOf: [$ref]` so
/// that the description stands beside it, as in kube-apiserver's OpenAPI v3.
fn describe(name: &str, def: &mut Value) {
    let Some(Value::Object(texts)) = builtin::descriptions().get(name) else { return };
    let Value::Object(d) = def else { return };
    if let Some(own) = texts.get("") {
        d.insert("description".into(), own.clone());
    }
    let Some(Value::Object(props)) = d.get_mut("properties") else { return };
    for (member, text) in texts.iter().filter(|(m, _)| !m.is_empty()) {
        let Some(Value::Object(p)) = props.get_mut(member) else { continue };
        if p.len() == 1 && p.contains_key("$ref") {
            let r = p.remove("$ref").unwrap_or_default();
            p.insert("allOf".into(), json!([{ "$ref": r }]));
        }
        p.insert("description".into(), text.clone());
    }
}

/// A v3 reference in the v2 form.
fn v2_ref(r: &str) -> String {
    r.strip_prefix(V3_PREFIX).map_or_else(|| r.to_string(), |n| format!("{V2_PREFIX}{n}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_form_of_references_and_int_or_string() {
        let v3 = json!({"properties": {
            "meta": {"allOf": [{"$ref": "#/components/schemas/A"}], "default": {}},
            "port": {"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]},
            "q": {"oneOf": [{"type": "string"}, {"type": "number"}]},
            "n": {"type": "string", "nullable": true},
            "allOf": {"type": "string"},
        }});
        let v2 = to_v2(&v3);
        assert_eq!(v2["properties"]["meta"], json!({"$ref": "#/definitions/A", "default": {}}));
        assert_eq!(v2["properties"]["port"], json!({"type": "string", "format": "int-or-string"}));
        assert_eq!(v2["properties"]["q"], json!({"type": "string"}));
        assert_eq!(v2["properties"]["n"], json!({"type": "string"}));
        // A property named like a keyword is kept.
        assert_eq!(v2["properties"]["allOf"], json!({"type": "string"}));
    }

    #[test]
    fn schemaless_types_keep_unknown_fields_with_the_envelope() {
        let mut c = Catalog::default();
        let names = c.add(&TypeSpec::new("example.com", "v1", "Thing", "things"));
        assert_eq!((names.kind.as_str(), names.list.as_str()), ("com.example.v1.Thing", "com.example.v1.ThingList"));
        let def = &c.definitions["com.example.v1.Thing"];
        assert_eq!(def["x-kubernetes-preserve-unknown-fields"], json!(true));
        assert_eq!(def["properties"]["metadata"]["$ref"], json!(format!("{V3_PREFIX}{OBJECT_META_TYPE}")));
        assert!(c.definitions.contains_key(OBJECT_META_TYPE));
        let core = c.add(&TypeSpec::new("", "v1", "Thing", "things"));
        assert_eq!(core.kind, "io.k8s.api.core.v1.Thing");
    }
}
