//! The checks of a CustomResourceDefinition's `openAPIV3Schema`, as apiextensions makes them:
//! the structural-schema rules (every field typed, `x-kubernetes-*` combinations, metadata at
//! the root), the OpenAPI keywords a CRD may not use, list and map types, CEL rule shapes, and
//! defaults that must be pruned and valid.
//!
//! `path` arguments are field paths of the definition (`spec.validation.openAPIV3Schema`);
//! children are `properties[name]`, `items`, `additionalProperties`, `allOf[0]`, … as
//! apimachinery names them.

use super::structural::{Structural, MAX_DEPTH};
use super::validation;
use crate::typed::ValidationError;
use serde_json::{Map, Value};

/// Where a node sits, for the structural rules.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// What the OpenAPI checks carry down the tree.
#[derive(Clone)]
struct Context {
    /// Why defaults are refused here (None: allowed).
    no_defaults: Option<&'static str>,
    /// Inside `metadata`, `apiVersion` or `kind` of the root or of an embedded resource.
    inside_meta: bool,
}

fn err(out: &mut Vec<ValidationError>, path: String, message: String) {
    out.push(ValidationError { path, message });
}

fn s<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str)
}

fn b(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

/// Every problem of `schema` (an `openAPIV3Schema` at `path`); `status` is whether the status
/// subresource is on.
#[must_use]
pub fn check(schema: &Value, path: &str, status: bool) -> Vec<ValidationError> {
    let mut out = Vec::new();
    let Some(m) = schema.as_object() else {
        err(&mut out, path.to_string(), "Required value".into());
        return out;
    };
    if status {
        root_with_status(m, path, &mut out);
    }
    if b(m, "nullable") {
        err(&mut out, format!("{path}.nullable"), "Forbidden: nullable cannot be true at the root".into());
    }
    let mut structural_errors = Vec::new();
    // A schema with keywords a structural schema cannot hold does not become one: only the
    // OpenAPI checks below name them.
    let readable = !unsupported(schema, 0);
    if readable {
        structural(m, Level::Root, path, &mut structural_errors, 0);
    }
    structural_errors.sort_by(|a, b| (&a.path, &a.message).cmp(&(&b.path, &b.message)));
    let structural_ok = readable && structural_errors.is_empty();
    out.extend(structural_errors);
    if structural_ok {
        defaults(&Structural::read(schema), schema, path, true, &mut out);
    }
    openapi(m, path, &Context { no_defaults: None, inside_meta: false }, true, &mut out, 0);
    // The CEL rules compile once the schema is sound (kube-apiserver types them by it).
    if out.is_empty() && structural_ok {
        let mut cost = super::cel::CrdCost::new();
        rules(schema, path, 1, true, None, &mut cost, &mut out, 0);
        out.extend(cost.check(path));
    }
    out
}

/// Compiles the rules of every node (`cardinality`: how many times per object they may run;
/// `uncorrelatable`: the list or map above, if any, under which `oldSelf` has no value).
#[allow(clippy::too_many_arguments)]
fn rules(
    node: &Value,
    path: &str,
    cardinality: u64,
    root: bool,
    uncorrelatable: Option<&str>,
    cost: &mut super::cel::CrdCost,
    out: &mut Vec<ValidationError>,
    depth: usize,
) {
    use super::cel::{cardinality as card, CompileOptions, Rules};
    let Value::Object(m) = node else { return };
    if depth > MAX_DEPTH {
        return;
    }
    match Rules::compile_with(node, &format!("{path}.x-kubernetes-validations"), CompileOptions { cardinality, root }) {
        Err(errs) => out.extend(errs),
        Ok(Some(r)) => {
            cost.add(&r, cardinality);
            if let Some(within) = uncorrelatable {
                out.extend(r.uncorrelatable_errors(within));
            }
        }
        Ok(None) => {}
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        let atomic = s(m, "x-kubernetes-map-type") == Some("atomic");
        for (k, p) in props {
            let below = uncorrelatable.or(atomic.then_some(path));
            rules(p, &format!("{path}.properties[{k}]"), cardinality, false, below, cost, out, depth + 1);
        }
    }
    if let Some(a @ Value::Object(_)) = m.get("additionalProperties") {
        rules(
            a,
            &format!("{path}.additionalProperties"),
            card::additional_properties(cardinality, node),
            false,
            uncorrelatable,
            cost,
            out,
            depth + 1,
        );
    }
    if let Some(items @ Value::Object(_)) = m.get("items") {
        let below = uncorrelatable.or((s(m, "x-kubernetes-list-type") != Some("map")).then_some(path));
        rules(items, &format!("{path}.items"), card::items(cardinality, node), false, below, cost, out, depth + 1);
    }
}

/// Whether `v` uses a keyword apiextensions' structural schemas do not read (`$ref`, `id`,
/// `additionalItems`, `patternProperties`, `definitions`, `dependencies`, `items` as an array).
fn unsupported(v: &Value, depth: usize) -> bool {
    let Value::Object(m) = v else { return false };
    if depth > MAX_DEPTH {
        return false;
    }
    let set = |k: &str| m.get(k).is_some_and(|x| !x.is_null() && x != &Value::String(String::new()));
    if ["$ref", "id", "additionalItems", "patternProperties", "definitions", "dependencies"].iter().any(|k| set(k))
        || m.get("items").is_some_and(Value::is_array)
    {
        return true;
    }
    m.iter().any(|(k, x)| match (k.as_str(), x) {
        ("properties", Value::Object(p)) => p.values().any(|p| unsupported(p, depth + 1)),
        ("items" | "additionalProperties" | "not", x) => unsupported(x, depth + 1),
        ("allOf" | "anyOf" | "oneOf", Value::Array(a)) => a.iter().any(|p| unsupported(p, depth + 1)),
        _ => false,
    })
}

/// kube-apiserver's fields allowed at the root of a schema with the status subresource.
const ROOT_WITH_STATUS: [&str; 22] = [
    "description",
    "type",
    "format",
    "title",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "required",
    "items",
    "properties",
    "externalDocs",
    "example",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
];

fn root_with_status(m: &Map<String, Value>, path: &str, out: &mut Vec<ValidationError>) {
    if let Some(t) = s(m, "type").filter(|t| !t.is_empty() && *t != "object") {
        err(
            out,
            format!("{path}.type"),
            format!(
                "Invalid value: {}: only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                validation::quoted(t)
            ),
        );
        return;
    }
    if m.keys().any(|k| !ROOT_WITH_STATUS.contains(&k.as_str())) {
        let fields = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]";
        err(out, path.to_string(), format!("Invalid value: \"object\": only {fields} fields are allowed at the root of the schema if the status subresource is enabled"));
    }
}

/// apiextensions' `validateStructuralInvariants` (and its nested value validations).
fn structural(m: &Map<String, Value>, lvl: Level, path: &str, out: &mut Vec<ValidationError>, depth: usize) {
    if depth > MAX_DEPTH {
        err(out, path.to_string(), format!("Forbidden: must not be nested more than {MAX_DEPTH} levels"));
        return;
    }
    let t = s(m, "type").unwrap_or("");
    let (ios, preserve, embedded) =
        (b(m, "x-kubernetes-int-or-string"), b(m, "x-kubernetes-preserve-unknown-fields"), b(m, "x-kubernetes-embedded-resource"));
    if t == "array" && !m.get("items").is_some_and(Value::is_object) {
        err(out, format!("{path}.items"), "Required value: must be specified".into());
    }
    if let Some(Value::Object(items)) = m.get("items") {
        structural(items, Level::Item, &format!("{path}.items"), out, depth + 1);
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        for (k, v) in props {
            if let Value::Object(p) = v {
                structural(p, Level::Field, &format!("{path}.properties[{k}]"), out, depth + 1);
            }
        }
    }
    if let Some(a) = m.get("additionalProperties") {
        if lvl == Level::Root {
            err(out, format!("{path}.additionalProperties"), "Forbidden: must not be used at the root".into());
        }
        if let Value::Object(a) = a {
            structural(a, Level::Field, &format!("{path}.additionalProperties"), out, depth + 1);
        }
    }
    if ios && preserve {
        err(
            out,
            format!("{path}.x-kubernetes-preserve-unknown-fields"),
            "Invalid value: true: must be false if x-kubernetes-int-or-string is true".into(),
        );
    }
    if ios && embedded {
        err(
            out,
            format!("{path}.x-kubernetes-embedded-resource"),
            "Invalid value: true: must be false if x-kubernetes-int-or-string is true".into(),
        );
    }
    let int_or_string_any_of = ios && is_int_or_string_any_of(m.get("anyOf"));
    for key in ["allOf", "anyOf", "oneOf"] {
        if key == "anyOf" && int_or_string_any_of {
            continue;
        }
        if let Some(Value::Array(subs)) = m.get(key) {
            for (i, sub) in subs.iter().enumerate() {
                if let Value::Object(sub) = sub {
                    let skip = key == "allOf" && i == 0 && ios && is_int_or_string_any_of(sub.get("anyOf"));
                    nested(sub, &format!("{path}.{key}[{i}]"), out, skip, key == "allOf", depth + 1);
                }
            }
        }
    }
    if let Some(Value::Object(not)) = m.get("not") {
        nested(not, &format!("{path}.not"), out, false, false, depth + 1);
    }
    if let Some(p) = s(m, "pattern") {
        if let Err(e) = regex::Regex::new(p) {
            let first = e.to_string().lines().last().unwrap_or("").trim().to_string();
            err(
                out,
                format!("{path}.pattern"),
                format!("Invalid value: {}: must be a valid regular expression, but isn't: {first}", validation::quoted(p)),
            );
        }
    }
    if embedded && t != "object" {
        if t.is_empty() {
            err(out, format!("{path}.type"), "Required value: must be object if x-kubernetes-embedded-resource is true".into());
        } else {
            err(
                out,
                format!("{path}.type"),
                format!("Invalid value: {}: must be object if x-kubernetes-embedded-resource is true", validation::quoted(t)),
            );
        }
    } else if t.is_empty() && !ios && !preserve {
        let words = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        err(out, format!("{path}.type"), format!("Required value: {words}"));
    }
    if embedded && m.contains_key("additionalProperties") {
        err(out, format!("{path}.additionalProperties"), "Forbidden: must not be used if x-kubernetes-embedded-resource is set".into());
    }
    if lvl == Level::Root && !t.is_empty() && t != "object" {
        err(out, format!("{path}.type"), format!("Invalid value: {}: must be object at the root", validation::quoted(t)));
    }
    let props = m.get("properties").and_then(Value::as_object);
    if lvl == Level::Root || embedded {
        for k in ["kind", "apiVersion"] {
            if let Some(p) = props.and_then(|p| p.get(k)) {
                let pt = p.get("type").and_then(Value::as_str).unwrap_or("");
                if pt != "string" {
                    err(out, format!("{path}.properties[{k}].type"), format!("Invalid value: {}: must be string", validation::quoted(pt)));
                }
            }
        }
    }
    if let Some(Value::Object(meta)) = props.and_then(|p| p.get("metadata")) {
        let mpath = format!("{path}.properties[metadata]");
        if (lvl == Level::Root || embedded) && s(meta, "type") != Some("object") {
            err(
                out,
                format!("{mpath}.type"),
                format!("Invalid value: {}: must be object", validation::quoted(s(meta, "type").unwrap_or(""))),
            );
        }
        if lvl == Level::Root && !root_metadata_is_implicit(meta) {
            err(
                out,
                mpath,
                "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified".into(),
            );
        }
    }
    if embedded && !preserve && props.is_none_or(Map::is_empty) {
        err(
            out,
            format!("{path}.properties"),
            "Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
                .into(),
        );
    }
}

/// Whether the root's `metadata` schema says nothing beyond its type and `name`/`generateName`.
fn root_metadata_is_implicit(meta: &Map<String, Value>) -> bool {
    meta.iter().all(|(k, v)| match k.as_str() {
        "type" | "default" => true,
        "properties" => v.as_object().is_none_or(|p| p.keys().all(|k| k == "name" || k == "generateName")),
        _ => false,
    })
}

fn is_int_or_string_any_of(v: Option<&Value>) -> bool {
    v == Some(&serde_json::json!([{"type": "integer"}, {"type": "string"}]))
}

/// A schema under `allOf`/`anyOf`/`oneOf`/`not`: value validations only.
fn nested(m: &Map<String, Value>, path: &str, out: &mut Vec<ValidationError>, skip_any_of: bool, cel_allowed: bool, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let forbidden = [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
        ("x-kubernetes-embedded-resource", "must be false to be structural"),
        ("x-kubernetes-int-or-string", "must be false to be structural"),
        ("x-kubernetes-list-map-keys", "must be empty to be structural"),
        ("x-kubernetes-list-type", "must be undefined to be structural"),
        ("x-kubernetes-map-type", "must be undefined to be structural"),
        ("x-kubernetes-validations", "must be empty to be structural"),
    ];
    for key in ["allOf", "anyOf", "oneOf"] {
        if key == "anyOf" && skip_any_of {
            continue;
        }
        if let Some(Value::Array(subs)) = m.get(key) {
            for (i, sub) in subs.iter().enumerate() {
                if let Value::Object(sub) = sub {
                    nested(sub, &format!("{path}.{key}[{i}]"), out, false, cel_allowed && key == "allOf", depth + 1);
                }
            }
        }
    }
    if let Some(Value::Object(not)) = m.get("not") {
        nested(not, &format!("{path}.not"), out, false, false, depth + 1);
    }
    if let Some(Value::Object(items)) = m.get("items") {
        nested(items, &format!("{path}.items"), out, false, cel_allowed, depth + 1);
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        for (k, v) in props {
            if let Value::Object(p) = v {
                nested(p, &format!("{path}.properties[{k}]"), out, false, cel_allowed, depth + 1);
            }
        }
    }
    for (key, words) in forbidden {
        let present = match m.get(key) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
        };
        if present && !(key == "x-kubernetes-validations" && cel_allowed) {
            err(out, format!("{path}.{key}"), format!("Forbidden: {words}"));
        }
    }
    if let Some(p) = s(m, "pattern") {
        if regex::Regex::new(p).is_err() {
            err(out, format!("{path}.pattern"), format!("Invalid value: {}: must be a valid regular expression", validation::quoted(p)));
        }
    }
    if m.get("properties").and_then(|p| p.get("metadata")).is_some() {
        err(out, format!("{path}.properties[metadata]"), "Forbidden: must not be specified in a nested context".into());
    }
}

/// The defaults of a structural schema: pruned (no unknown fields) and valid against their own
/// node (apiextensions' `ValidateDefaults`).
fn defaults(s: &Structural, raw: &Value, path: &str, root: bool, out: &mut Vec<ValidationError>) {
    if let Some(d) = &s.default {
        if !root {
            if s.has_unknown(d) {
                err(out, format!("{path}.default"), format!("Invalid value: {}: must not have unknown fields", validation::shown(d)));
            }
            out.extend(validation::validate_value(s, d, &format!("{path}.default")));
        }
    }
    if let Some(items) = &s.items {
        defaults(items, raw.get("items").unwrap_or(&Value::Null), &format!("{path}.items"), false, out);
    }
    for (k, p) in &s.properties {
        if root && k == "metadata" {
            continue;
        }
        defaults(
            p,
            raw.pointer(&format!("/properties/{}", k.replace('~', "~0").replace('/', "~1"))).unwrap_or(&Value::Null),
            &format!("{path}.properties[{k}]"),
            false,
            out,
        );
    }
}

const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// apiextensions' `ValidateCustomResourceDefinitionOpenAPISchema` without its CEL part.
fn openapi(m: &Map<String, Value>, path: &str, cx: &Context, root: bool, out: &mut Vec<ValidationError>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let t = s(m, "type").unwrap_or("");
    if !t.is_empty() && !TYPES.contains(&t) {
        let list = TYPES.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", ");
        err(out, format!("{path}.type"), format!("Unsupported value: {}: supported values: {list}", validation::quoted(t)));
    }
    if let (Some(_), Some(why)) = (m.get("default"), cx.no_defaults) {
        err(out, format!("{path}.default"), format!("Forbidden: must not be set {why}"));
    }
    for (key, words) in [
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ] {
        if m.get(key).is_some_and(|v| !v.is_null() && v != &Value::String(String::new())) {
            err(out, format!("{path}.{key}"), format!("Forbidden: {words}"));
        }
    }
    if t == "null" {
        err(out, format!("{path}.type"), "Forbidden: type cannot be set to null, use nullable as an alternative".into());
    }
    if m.get("items").is_some_and(Value::is_array) {
        err(out, format!("{path}.items"), "Forbidden: items must be a schema object and not an array".into());
    }
    if cx.inside_meta && b(m, "x-kubernetes-embedded-resource") {
        err(out, format!("{path}.x-kubernetes-embedded-resource"), "Forbidden: must not be used inside of resource meta".into());
    }
    if b(m, "uniqueItems") {
        err(
            out,
            format!("{path}.uniqueItems"),
            "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic".into(),
        );
    }
    let props = m.get("properties").and_then(Value::as_object);
    if let Some(a) = m.get("additionalProperties") {
        if props.is_some_and(|p| !p.is_empty()) && (a == &Value::Bool(false) || a.is_object()) {
            err(out, format!("{path}.additionalProperties"), "Forbidden: additionalProperties and properties are mutual exclusive".into());
        }
        if let Value::Object(a) = a {
            let mut sub = cx.clone();
            if cx.inside_meta {
                sub.no_defaults = Some("inside additionalProperties applying to object metadata");
            }
            openapi(a, &format!("{path}.additionalProperties"), &sub, false, out, depth + 1);
        }
    }
    let embedded = b(m, "x-kubernetes-embedded-resource");
    if let Some(props) = props {
        for (k, v) in props {
            let Value::Object(p) = v else { continue };
            let mut sub = cx.clone();
            if (root || embedded) && matches!(k.as_str(), "metadata" | "kind" | "apiVersion") {
                sub.inside_meta = true;
                if root {
                    sub.no_defaults = Some(match k.as_str() {
                        "metadata" => "in top-level metadata",
                        "kind" => "in top-level kind",
                        _ => "in top-level apiVersion",
                    });
                }
            }
            openapi(p, &format!("{path}.properties[{k}]"), &sub, false, out, depth + 1);
        }
    }
    if let Some(Value::Object(not)) = m.get("not") {
        openapi(not, &format!("{path}.not"), cx, false, out, depth + 1);
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        if let Some(Value::Array(subs)) = m.get(key) {
            for (i, sub) in subs.iter().enumerate() {
                if let Value::Object(sub) = sub {
                    openapi(sub, &format!("{path}.{key}[{i}]"), cx, false, out, depth + 1);
                }
            }
        }
    }
    if let Some(Value::Object(items)) = m.get("items") {
        openapi(items, &format!("{path}.items"), cx, false, out, depth + 1);
    }
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        err(out, format!("{path}.x-kubernetes-preserve-unknown-fields"), "Invalid value: false: must be true or undefined".into());
    }
    super::list_types::check(m, path, out);
    super::rule_shapes::check(m, path, out);
}

impl Structural {
    /// Whether `v` holds a field this schema would prune (apiextensions' pruning).
    #[must_use]
    pub fn has_unknown(&self, v: &Value) -> bool {
        match v {
            Value::Object(m) if !self.preserve_unknown => m.iter().any(|(k, x)| match self.field(k) {
                Some(f) => f.has_unknown(x),
                None => {
                    let kept = matches!(self.additional, Some(super::structural::Additional::Allowed(true)))
                        || (self.embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"));
                    !kept
                }
            }),
            Value::Object(m) => m.iter().any(|(k, x)| self.properties.get(k).is_some_and(|f| f.has_unknown(x))),
            Value::Array(items) => self.items.as_ref().is_some_and(|i| items.iter().any(|x| i.has_unknown(x))),
            _ => false,
        }
    }
}
