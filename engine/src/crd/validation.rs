//! Validation of a custom resource against its structural schema, as kube-apiserver validates
//! it: kube-openapi's keyword checks with their messages, turned into field errors as
//! apiextensions turns them (`Invalid value`, `Unsupported value`, `Required value`,
//! `Too long`, `Too many`), list-type uniqueness (`Duplicate value`), embedded resources'
//! `apiVersion`/`kind`, and **ratcheting** (kube-apiserver ≥ 1.30): on an update, a value equal
//! to the value at the same place in the old object is not checked again, so tightening a schema
//! does not lock objects whose invalid parts nobody touches.

use super::formats;
use super::structural::{Additional, Structural};
use crate::typed::ValidationError;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Every problem of `object` (a whole custom resource) against `schema`, the root of its
/// version's schema; `old` is the object being updated (None on create). `metadata`,
/// `apiVersion` and `kind` at the root are the store's to check, not the schema's.
///
/// Then the CEL rules (`x-kubernetes-validations`), unless the keyword checks found a value of
/// the wrong type, a missing required field, an unsupported enum value or one too long or with
/// too many items — kube-apiserver then says the rules were not checked.
#[must_use]
pub fn validate(schema: &Structural, object: &Value, old: Option<&Value>) -> Vec<ValidationError> {
    validate_with_warnings(schema, object, old).0
}

/// [`validate`], and the warnings kube-apiserver 1.37 sends with an update: the CEL rules an
/// unchanged (ratcheted) value fails, each as `path: message`.
#[must_use]
pub fn validate_with_warnings(schema: &Structural, object: &Value, old: Option<&Value>) -> (Vec<ValidationError>, Vec<String>) {
    let mut ratcheted = Vec::new();
    let mut w = Walk { errors: Vec::new(), base: String::new() };
    if let Value::Object(m) = object {
        w.object(schema, m, old.and_then(Value::as_object), "");
        w.object_checks(schema, m, "");
    }
    if schema.has_rules {
        const BLOCKING: [&str; 5] =
            ["FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany", "FieldValueTypeInvalid"];
        if w.errors.iter().any(|e| BLOCKING.contains(&crate::status::cause_type(&e.message))) {
            w.errors.push(ValidationError {
                path: "<nil>".into(),
                message: "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
            });
        } else {
            let mut budget = super::cel::Budget::new();
            let mut out = super::rules_walk::Failures { errors: &mut w.errors, ratcheted: &mut ratcheted };
            super::rules_walk::check(schema, object, old, "", &mut budget, &mut out);
        }
    }
    let warnings = ratcheted.into_iter().map(|e| format!("{}: {}", e.path, e.message)).collect();
    (w.errors, warnings)
}

/// Every problem of `v` against `schema`, a value at the field path `base` (a CRD's `default`):
/// errors name `base` and the fields below it; messages name the fields relative to `v`, as
/// kube-apiserver's validation of a default names them.
#[must_use]
pub fn validate_value(schema: &Structural, v: &Value, base: &str) -> Vec<ValidationError> {
    let mut w = Walk { errors: Vec::new(), base: base.to_string() };
    w.node(schema, v, None, "");
    w.errors
}

struct Walk {
    errors: Vec<ValidationError>,
    /// The field path errors are below.
    base: String,
}

pub(crate) use super::cel::{go_float, shown};

/// A string as Go's `%q` prints it (one implementation with the CEL errors': [`super::cel::go_quote`]).
pub(crate) fn quoted(s: &str) -> String {
    super::cel::go_quote(s)
}

/// The JSON type kube-openapi names a value by.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl Walk {
    fn push(&mut self, path: &str, message: String) {
        let path = match (self.base.is_empty(), path.is_empty()) {
            (true, _) => path.to_string(),
            (false, true) => self.base.clone(),
            (false, false) if path.starts_with('[') => format!("{}{path}", self.base),
            (false, false) => format!("{}.{path}", self.base),
        };
        self.errors.push(ValidationError { path, message });
    }

    /// `Invalid value: <value>: <path> in body <detail>`, kube-openapi's default error.
    fn invalid(&mut self, path: &str, value: &str, detail: &str) {
        self.push(path, format!("Invalid value: {value}: {path} in body {detail}"));
    }

    fn node(&mut self, s: &Structural, v: &Value, old: Option<&Value>, path: &str) {
        if old == Some(v) {
            return; // ratcheting: unchanged values are not checked again
        }
        if v.is_null() {
            if !s.nullable && (s.kind.is_some() || s.int_or_string) {
                let want = s.kind.as_deref().unwrap_or("integer,string");
                self.push(path, format!("Invalid value: \"null\": {path} in body must be of type {want}: \"null\""));
            }
            return;
        }
        if !self.type_ok(s, v, path) {
            return;
        }
        self.value_checks(s, v, path);
        match v {
            Value::Object(m) => {
                self.object(s, m, old.and_then(Value::as_object), path);
                self.object_checks(s, m, path);
            }
            Value::Array(items) => self.array(s, items, old.and_then(Value::as_array), path),
            _ => {}
        }
    }

    fn type_ok(&mut self, s: &Structural, v: &Value, path: &str) -> bool {
        let actual = type_name(v);
        let ok = match s.kind.as_deref() {
            // kube-apiserver types an int-or-string as `[integer, string]`, whatever its `type`.
            _ if s.int_or_string => matches!(actual, "integer" | "string") || is_whole(v),
            None => true,
            Some("integer") => actual == "integer" || is_whole(v),
            Some("number") => matches!(actual, "integer" | "number"),
            Some(t) => t == actual,
        };
        if !ok {
            let want = if s.int_or_string { "integer,string" } else { s.kind.as_deref().unwrap_or("") };
            self.push(path, format!("Invalid value: \"{actual}\": {path} in body must be of type {want}: \"{actual}\""));
            if want == "integer" && actual == "number" {
                self.unchecked_integer(path, "(default format)");
            }
        } else if s.kind.as_deref() == Some("integer") {
            // kube-openapi converts an integer to its format's width; one that does not fit fails
            // that conversion.
            let fits = match s.checks.format.as_deref() {
                Some("int32") => {
                    v.as_i64().is_some_and(|i| i32::try_from(i).is_ok())
                        || is_whole(v) && v.as_f64().is_some_and(|f| f.abs() <= f64::from(i32::MAX))
                }
                _ => v.as_i64().is_some() || is_whole(v) && v.as_f64().is_some_and(|f| f.abs() < 9.2e18),
            };
            if !fits {
                let format = s
                    .checks
                    .format
                    .as_deref()
                    .filter(|f| *f == "int32")
                    .map_or("(default format)".to_string(), |f| format!("with format {f}"));
                self.unchecked_integer(path, &format);
                return false;
            }
        }
        ok
    }

    /// kube-openapi's error of an integer its format's width cannot hold: not a field error, so
    /// apiextensions names no field (`<nil>`).
    fn unchecked_integer(&mut self, path: &str, format: &str) {
        let name = if self.base.is_empty() { path.to_string() } else { child(&self.base, path) };
        self.errors.push(ValidationError {
            path: "<nil>".into(),
            message: format!("Invalid value: \"\": Checked value must be of type integer {format} in {name}"),
        });
    }

    /// The checks of one value by its keywords (composition included), without its children.
    fn value_checks(&mut self, s: &Structural, v: &Value, path: &str) {
        let c = &s.checks;
        if let Value::String(text) = v {
            let chars = text.chars().count() as u64;
            if let Some(max) = c.max_length.filter(|m| chars > *m) {
                let unit = if max == 1 { "byte" } else { "bytes" };
                self.push(path, format!("Too long: may not be more than {max} {unit}"));
            }
            if let Some(min) = c.min_length.filter(|m| chars < *m) {
                self.invalid(path, &shown(v), &format!("should be at least {min} chars long"));
            }
            if let Some((p, re)) = &c.pattern {
                if !re.is_match(text) {
                    self.invalid(path, &shown(v), &format!("should match '{p}'"));
                }
            }
            if let Some(f) = &c.format {
                if !formats::valid(f, text) {
                    self.push(path, format!("Invalid value: {}: {path} in body must be of type {f}: {}", shown(v), shown(v)));
                }
            }
        }
        if let Some(x) = v.as_f64().filter(|_| v.is_number()) {
            if let Some(m) = c.multiple_of.filter(|m| *m > 0.0) {
                let q = x / m;
                if (q - q.round()).abs() > 1e-9 * q.abs().max(1.0) {
                    self.invalid(path, &shown(v), &format!("should be a multiple of {}", go_float(m)));
                }
            }
            if let Some((max, exclusive)) = c.maximum {
                if (exclusive && x >= max) || (!exclusive && x > max) {
                    let words = if exclusive { "should be less than" } else { "should be less than or equal to" };
                    self.invalid(path, &shown(v), &format!("{words} {}", go_float(max)));
                }
            }
            if let Some((min, exclusive)) = c.minimum {
                if (exclusive && x <= min) || (!exclusive && x < min) {
                    let words = if exclusive { "should be greater than" } else { "should be greater than or equal to" };
                    self.invalid(path, &shown(v), &format!("{words} {}", go_float(min)));
                }
            }
        }
        if let Value::Array(items) = v {
            let n = items.len() as u64;
            if let Some(max) = c.max_items.filter(|m| n > *m) {
                let unit = if max == 1 { "item" } else { "items" };
                self.push(path, format!("Too many: {n}: must have at most {max} {unit}"));
            }
            if let Some(min) = c.min_items.filter(|m| n < *m) {
                self.invalid(path, &n.to_string(), &format!("should have at least {min} items"));
            }
            let mut distinct = std::collections::HashSet::new();
            if c.unique_items && !items.iter().all(|a| distinct.insert(a.to_string())) {
                self.invalid(path, &shown(v), "shouldn't contain duplicates");
            }
        }
        if let Some(allowed) = &c.enumeration {
            if !allowed.iter().any(|a| same(a, v)) {
                let list = allowed
                    .iter()
                    .map(|a| quoted(&a.as_str().map_or_else(|| a.to_string(), str::to_string)))
                    .collect::<Vec<_>>()
                    .join(", ");
                self.push(path, format!("Unsupported value: {}: supported values: {list}", shown(v)));
            }
        }
        self.composition(s, v, path);
    }

    /// `allOf`, `anyOf`, `oneOf` and `not`: their schemas check the same value.
    fn composition(&mut self, s: &Structural, v: &Value, path: &str) {
        let c = &s.checks;
        let base = self.base.clone();
        let passes = |sub: &Structural| {
            let mut w = Walk { errors: Vec::new(), base: base.clone() };
            w.node(sub, v, None, path);
            w.errors
        };
        for sub in &c.all_of {
            let errs = passes(sub);
            self.errors.extend(errs);
        }
        if !c.any_of.is_empty() && !c.any_of.iter().any(|sub| passes(sub).is_empty()) {
            self.push(path, format!("Invalid value: \"\": \"{path}\" must validate at least one schema (anyOf)"));
        }
        if !c.one_of.is_empty() {
            let n = c.one_of.iter().filter(|sub| passes(sub).is_empty()).count();
            if n != 1 {
                let more = if n == 0 { "Found none valid" } else { "Found more than one valid" };
                self.push(path, format!("Invalid value: \"\": \"{path}\" must validate one and only one schema (oneOf). {more}"));
            }
        }
        if let Some(not) = &c.not {
            if passes(not).is_empty() {
                self.push(path, format!("Invalid value: \"\": \"{path}\" must not validate the schema (not)"));
            }
        }
    }

    /// The size and `required` checks of an object.
    fn object_checks(&mut self, s: &Structural, m: &Map<String, Value>, path: &str) {
        let c = &s.checks;
        let n = m.len() as u64;
        if let Some(max) = c.max_properties.filter(|x| n > *x) {
            let unit = if max == 1 { "item" } else { "items" };
            self.push(path, format!("Too many: {n}: must have at most {max} {unit}"));
        }
        if let Some(min) = c.min_properties.filter(|x| n < *x) {
            self.invalid(path, &n.to_string(), &format!("should have at least {min} properties"));
        }
        for r in &c.required {
            if !m.contains_key(r) {
                self.push(&child(path, r), "Required value".into());
            }
        }
        if s.embedded {
            for k in ["apiVersion", "kind"] {
                match m.get(k) {
                    None => self.push(&child(path, k), "Required value".into()),
                    Some(Value::String(x)) if x.is_empty() => self.push(&child(path, k), "Invalid value: \"\": must not be empty".into()),
                    _ => {}
                }
            }
        }
    }

    /// The fields of an object, each against its property or `additionalProperties`.
    fn object(&mut self, s: &Structural, m: &Map<String, Value>, old: Option<&Map<String, Value>>, path: &str) {
        // At the root, `metadata`, `apiVersion` and `kind` are the store's to check.
        let mut keys: Vec<&String> =
            m.keys().filter(|k| !path.is_empty() || !matches!(k.as_str(), "metadata" | "apiVersion" | "kind")).collect();
        keys.sort();
        for k in keys {
            let v = &m[k.as_str()];
            let p = child(path, k);
            match (s.properties.get(k.as_str()), &s.additional) {
                (Some(f), _) => self.node(f, v, old.and_then(|o| o.get(k.as_str())), &p),
                (None, Some(Additional::Schema(f))) => self.node(f, v, old.and_then(|o| o.get(k.as_str())), &p),
                (None, Some(Additional::Allowed(false))) if old.and_then(|o| o.get(k.as_str())) != Some(v) => {
                    self.push(path, format!("Invalid value: {}: {p} in body is a forbidden property", quoted(k)));
                }
                _ => {}
            }
        }
    }

    /// The items of an array, and the uniqueness its list type asks. Items are found by their
    /// key (map lists) or value (sets) through a hash of it: linear in the list's length.
    fn array(&mut self, s: &Structural, items: &[Value], old: Option<&Vec<Value>>, path: &str) {
        let Some(item) = &s.items else { return };
        let identity = |v: &Value| -> Option<String> {
            match s.list_type.as_deref() {
                Some("map") if !s.list_map_keys.is_empty() => {
                    let keys: Vec<Option<&Value>> = s.list_map_keys.iter().map(|k| v.get(k)).collect();
                    serde_json::to_string(&keys).ok()
                }
                Some("set") => serde_json::to_string(v).ok(),
                _ => None,
            }
        };
        // Items are correlated with the old list's by their keys in a map list, by value in a
        // set; atomic lists are not correlated.
        let prior: HashMap<String, &Value> = match (old, s.list_type.as_deref()) {
            (Some(o), Some("map" | "set")) => o.iter().filter_map(|x| Some((identity(x)?, x))).collect(),
            _ => HashMap::new(),
        };
        let mut seen: HashMap<String, ()> = HashMap::new();
        for (i, v) in items.iter().enumerate() {
            let id = identity(v);
            let before = id.as_ref().and_then(|id| prior.get(id).copied());
            self.node(item, v, before, &format!("{path}[{i}]"));
            let Some(id) = id else { continue };
            if seen.insert(id, ()).is_some() {
                let shown_value = if s.list_type.as_deref() == Some("set") {
                    shown(v)
                } else {
                    let keys: Map<String, Value> = s.list_map_keys.iter().filter_map(|k| Some((k.clone(), v.get(k)?.clone()))).collect();
                    Value::Object(keys).to_string()
                };
                self.push(&format!("{path}[{i}]"), format!("Duplicate value: {shown_value}"));
            }
        }
    }
}

/// Whether a JSON number is an integer written as a float (`2.0`), which kube-openapi takes
/// for an integer.
fn is_whole(v: &Value) -> bool {
    v.as_f64().is_some_and(|f| v.is_f64() && f.fract() == 0.0)
}

/// Equality as `enum` compares: numbers by value.
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests;
