//! The structural schema of a custom resource version: its `openAPIV3Schema` read into a tree
//! of typed nodes (kube-apiserver's `structuralschema.Structural`), with the value checks each
//! node declares (numbers, strings, arrays, objects, formats, `allOf`/`anyOf`/`oneOf`/`not`)
//! and its `x-kubernetes-*` extensions.
//!
//! Reading never fails: a schema that is not structural is refused by the definition's checks
//! ([`super::definition`]) before any object meets it; what cannot be read here (a pattern that
//! does not compile) is left out.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The most nested schema levels read: deeper subtrees are left out (a definition's checks
/// refuse such schemas; this bounds the recursion of everything that walks the tree).
pub const MAX_DEPTH: usize = 64;

/// One node of a structural schema.
#[derive(Debug, Default)]
pub struct Structural {
    /// `type`: object, array, string, integer, number, boolean, or none.
    pub kind: Option<String>,
    /// `properties`, by name.
    pub properties: BTreeMap<String, Structural>,
    /// `additionalProperties`.
    pub additional: Option<Additional>,
    /// `items`.
    pub items: Option<Box<Structural>>,
    /// `nullable`.
    pub nullable: bool,
    /// `default`.
    pub default: Option<Value>,
    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub preserve_unknown: bool,
    /// `x-kubernetes-embedded-resource: true`.
    pub embedded: bool,
    /// `x-kubernetes-int-or-string: true`.
    pub int_or_string: bool,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// The value checks.
    pub checks: Checks,
    /// The node's CEL rules (`x-kubernetes-validations`), compiled; a node whose rules do not
    /// compile has none here (the definition's checks refuse it).
    pub rules: Option<Arc<super::cel::Rules>>,
    /// Whether this node or one below it has CEL rules.
    pub has_rules: bool,
    /// Whether this node or one below it has CEL transition rules (using `oldSelf`).
    pub has_transition_rules: bool,
}

/// `additionalProperties`: a schema for every undeclared key, or a plain yes/no.
#[derive(Debug)]
pub enum Additional {
    /// `additionalProperties: {…}`.
    Schema(Box<Structural>),
    /// `additionalProperties: true|false`.
    Allowed(bool),
}

/// The value validations of a node (kube-openapi's keywords).
#[derive(Debug, Default)]
pub struct Checks {
    /// `format`.
    pub format: Option<String>,
    /// `maximum`, and whether it is exclusive.
    pub maximum: Option<(f64, bool)>,
    /// `minimum`, and whether it is exclusive.
    pub minimum: Option<(f64, bool)>,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `minLength`.
    pub min_length: Option<u64>,
    /// `pattern`, as written and compiled.
    pub pattern: Option<(String, regex::Regex)>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `uniqueItems`.
    pub unique_items: bool,
    /// `maxProperties`.
    pub max_properties: Option<u64>,
    /// `minProperties`.
    pub min_properties: Option<u64>,
    /// `required`.
    pub required: Vec<String>,
    /// `enum`.
    pub enumeration: Option<Vec<Value>>,
    /// `allOf`.
    pub all_of: Vec<Structural>,
    /// `anyOf`.
    pub any_of: Vec<Structural>,
    /// `oneOf`.
    pub one_of: Vec<Structural>,
    /// `not`.
    pub not: Option<Box<Structural>>,
}

impl Structural {
    /// The structural schema `schema` describes.
    #[must_use]
    pub fn read(schema: &Value) -> Structural {
        read(schema, 0)
    }

    /// Whether this node or one below it declares a `default`.
    #[must_use]
    pub fn has_defaults(&self) -> bool {
        self.default.is_some()
            || self.properties.values().any(Structural::has_defaults)
            || self.items.as_ref().is_some_and(|i| i.has_defaults())
            || matches!(&self.additional, Some(Additional::Schema(s)) if s.has_defaults())
    }

    /// The schema of the field `key` of an object of this node: its property, or the
    /// `additionalProperties` schema.
    #[must_use]
    pub fn field(&self, key: &str) -> Option<&Structural> {
        match (self.properties.get(key), &self.additional) {
            (Some(s), _) => Some(s),
            (None, Some(Additional::Schema(s))) => Some(s),
            _ => None,
        }
    }
}

fn read(v: &Value, depth: usize) -> Structural {
    let Some(m) = v.as_object() else { return Structural::default() };
    if depth > MAX_DEPTH {
        return Structural::default();
    }
    let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
    let b = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
    let properties = m
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), read(v, depth + 1))).collect())
        .unwrap_or_default();
    let additional = match m.get("additionalProperties") {
        Some(Value::Bool(b)) => Some(Additional::Allowed(*b)),
        Some(v @ Value::Object(_)) => Some(Additional::Schema(Box::new(read(v, depth + 1)))),
        _ => None,
    };
    let mut node = Structural {
        kind: s("type").filter(|t| !t.is_empty()),
        properties,
        additional,
        items: m.get("items").filter(|i| i.is_object()).map(|i| Box::new(read(i, depth + 1))),
        nullable: b("nullable"),
        default: m.get("default").cloned(),
        preserve_unknown: b("x-kubernetes-preserve-unknown-fields"),
        embedded: b("x-kubernetes-embedded-resource"),
        int_or_string: b("x-kubernetes-int-or-string"),
        list_type: s("x-kubernetes-list-type"),
        list_map_keys: strings(m.get("x-kubernetes-list-map-keys")),
        checks: checks(m, depth),
        rules: None,
        has_rules: false,
        has_transition_rules: false,
    };
    let options = super::cel::CompileOptions { cardinality: 1, root: depth == 0 };
    node.rules = super::cel::Rules::compile_with(v, "x-kubernetes-validations", options).ok().flatten().map(Arc::new);
    node.has_rules = node.rules.is_some()
        || node.properties.values().any(|p| p.has_rules)
        || node.items.as_ref().is_some_and(|i| i.has_rules)
        || matches!(&node.additional, Some(Additional::Schema(a)) if a.has_rules);
    node.has_transition_rules = node.rules.as_ref().is_some_and(|r| !r.transition_rules().is_empty())
        || node.properties.values().any(|p| p.has_transition_rules)
        || node.items.as_ref().is_some_and(|i| i.has_transition_rules)
        || matches!(&node.additional, Some(Additional::Schema(a)) if a.has_transition_rules);
    node
}

fn checks(m: &Map<String, Value>, depth: usize) -> Checks {
    let f = |k: &str| m.get(k).and_then(Value::as_f64);
    let u = |k: &str| m.get(k).and_then(Value::as_u64);
    let b = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
    let many = |k: &str| -> Vec<Structural> {
        m.get(k).and_then(Value::as_array).map(|a| a.iter().map(|v| read(v, depth + 1)).collect()).unwrap_or_default()
    };
    Checks {
        format: m.get("format").and_then(Value::as_str).filter(|f| !f.is_empty()).map(str::to_string),
        maximum: f("maximum").map(|x| (x, b("exclusiveMaximum"))),
        minimum: f("minimum").map(|x| (x, b("exclusiveMinimum"))),
        multiple_of: f("multipleOf"),
        max_length: u("maxLength"),
        min_length: u("minLength"),
        pattern: m.get("pattern").and_then(Value::as_str).and_then(|p| {
            let re = regex::RegexBuilder::new(p).size_limit(1 << 20).build().ok()?;
            Some((p.to_string(), re))
        }),
        max_items: u("maxItems"),
        min_items: u("minItems"),
        unique_items: b("uniqueItems"),
        max_properties: u("maxProperties"),
        min_properties: u("minProperties"),
        required: strings(m.get("required")),
        enumeration: m.get("enum").and_then(Value::as_array).cloned(),
        all_of: many("allOf"),
        any_of: many("anyOf"),
        one_of: many("oneOf"),
        not: m.get("not").filter(|n| n.is_object()).map(|n| Box::new(read(n, depth + 1))),
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_keywords_and_extensions() {
        let s = Structural::read(&json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "required": ["a"], "properties": {
                    "a": {"type": "integer", "minimum": 1, "exclusiveMaximum": true, "maximum": 5, "default": 2},
                    "p": {"type": "string", "pattern": "^a+$"},
                    "l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object"}},
                    "m": {"type": "object", "additionalProperties": {"type": "string"}},
                    "x": {"x-kubernetes-int-or-string": true}
                }}
            }
        }));
        let spec = &s.properties["spec"];
        assert_eq!(spec.checks.required, vec!["a"]);
        let a = &spec.properties["a"];
        assert_eq!(a.checks.minimum, Some((1.0, false)));
        assert_eq!(a.checks.maximum, Some((5.0, true)));
        assert!(s.has_defaults());
        assert!(spec.properties["p"].checks.pattern.as_ref().is_some_and(|(_, re)| re.is_match("aaa")));
        assert_eq!(spec.properties["l"].list_map_keys, vec!["k"]);
        assert!(spec.properties["m"].field("anything").is_some_and(|f| f.kind.as_deref() == Some("string")));
        assert!(spec.properties["x"].int_or_string);
    }

    #[test]
    fn deep_schemas_are_cut() {
        let mut v = json!({"type": "string"});
        for _ in 0..200 {
            v = json!({"type": "object", "properties": {"a": v}});
        }
        let s = Structural::read(&v);
        let mut depth = 0;
        let mut n = &s;
        while let Some(c) = n.properties.get("a") {
            n = c;
            depth += 1;
        }
        assert!(depth <= MAX_DEPTH + 1);
    }
}
