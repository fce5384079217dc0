//! The CEL type of a schema node, and a JSON value as the CEL value of that type.
//!
//! As kube-apiserver's `SchemaDeclType` and `UnstructuredToVal`: an object with properties is a
//! message-like object (field selection, `has()`), `additionalProperties` a map, an array a list,
//! `x-kubernetes-int-or-string` and a type-less `x-kubernetes-preserve-unknown-fields` node are
//! `dyn`, the formats `date-time`/`date` a timestamp, `duration` a duration, `byte` bytes. Property
//! names that are not CEL identifiers are escaped (`foo-bar` is `foo__dash__bar`); those that cannot
//! be escaped are left out.
//!
//! Every type carries the bounds the cost estimator needs: the longest string, the most items.
//! From a schema they are `maxLength`/`maxItems`/`maxProperties`, or without them kube's worst case
//! derived from the 3 MiB request size limit; from a value ([`Ty::of_value`]) they are its sizes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::Value as CelValue;
use serde_json::Value;

use super::cost::MAX_REQUEST_SIZE_BYTES;

/// How deep a value is converted; deeper parts are `null` (the request decoder bounds depth far
/// below this, so it only guards against stack exhaustion).
const MAX_VALUE_DEPTH: usize = 256;

/// A CEL type with size bounds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ty {
    Bool,
    Int,
    Uint,
    Double,
    Null,
    Duration,
    Timestamp,
    /// A type value (`int`, `string`, `type(x)`).
    Type,
    /// A string of at most this many characters.
    String(u64),
    /// Bytes, at most this many.
    Bytes(u64),
    /// A list of at most `.1` items.
    List(Arc<Ty>, u64),
    /// A map of at most `.2` entries.
    Map(Arc<Ty>, Arc<Ty>, u64),
    /// An object: the fields declared (escaped names).
    Object(Arc<Obj>),
    /// `optional(T)`.
    Optional(Arc<Ty>),
    /// The `[key or index, value]` pair a two-variable comprehension iterates (a list of two).
    Pair(Arc<Ty>, Arc<Ty>),
    /// A library type (`net.URL`, `net.IP`, `net.CIDR`, `kubernetes.Quantity`,
    /// `kubernetes.NamedFormat`), its text at most `.1` long.
    Opaque(&'static str, u64),
    /// Any value whose JSON is at most this many bytes.
    Dyn(u64),
}

/// The fields of an object type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Obj {
    pub fields: BTreeMap<String, Ty>,
    /// The longest field name (for iterating an object's keys).
    pub max_key: u64,
}

impl Obj {
    pub(crate) fn new(fields: BTreeMap<String, Ty>) -> Obj {
        let max_key = fields.keys().map(|k| k.chars().count() as u64).max().unwrap_or(0);
        Obj { fields, max_key }
    }

    /// The join of every field's type: what `obj[k]` is for an unknown `k`.
    pub(crate) fn any_field(&self) -> Ty {
        self.fields.values().fold(None, |acc: Option<Ty>, t| Some(acc.map_or_else(|| t.clone(), |a| a.join(t)))).unwrap_or(Ty::Dyn(0))
    }
}

impl Ty {
    /// The size bound the cost model counts: characters, bytes, items, entries; 1 for scalars.
    pub(crate) fn size(&self) -> u64 {
        match self {
            Ty::String(n) | Ty::Bytes(n) | Ty::List(_, n) | Ty::Map(_, _, n) | Ty::Dyn(n) | Ty::Opaque(_, n) => *n,
            Ty::Object(o) => o.fields.len() as u64,
            Ty::Optional(t) => t.size(),
            Ty::Pair(..) => 2,
            _ => 1,
        }
    }

    /// An upper bound of the JSON size of a value of this type.
    pub(crate) fn json_size(&self) -> u64 {
        match self {
            Ty::Bool => 5,
            Ty::Int | Ty::Uint | Ty::Double => 24,
            Ty::Null => 4,
            Ty::Duration | Ty::Timestamp | Ty::Type => 40,
            Ty::String(n) | Ty::Bytes(n) | Ty::Opaque(_, n) => n.saturating_mul(4).saturating_add(2),
            Ty::List(e, n) => n.saturating_mul(e.json_size().saturating_add(1)).saturating_add(2),
            Ty::Map(k, v, n) => n.saturating_mul(k.json_size().saturating_add(v.json_size()).saturating_add(2)).saturating_add(2),
            Ty::Object(o) => o.fields.iter().fold(2u64, |acc, (k, t)| acc.saturating_add(k.len() as u64 + 4).saturating_add(t.json_size())),
            Ty::Optional(t) => t.json_size(),
            Ty::Pair(k, v) => k.json_size().saturating_add(v.json_size()).saturating_add(3),
            Ty::Dyn(n) => *n,
        }
    }

    /// The type of an element when iterating: (element, count, second variable of a map).
    pub(crate) fn iteration(&self) -> (Ty, u64, Ty) {
        match self {
            Ty::List(e, n) => ((**e).clone(), *n, Ty::Int),
            Ty::Map(k, v, n) => ((**k).clone(), *n, (**v).clone()),
            Ty::Object(o) => (Ty::String(o.max_key), o.fields.len() as u64, o.any_field()),
            Ty::Dyn(n) => (Ty::Dyn(*n), *n, Ty::Dyn(*n)),
            Ty::Pair(k, v) => (k.join(v), 2, Ty::Int),
            other => (Ty::Dyn(other.json_size()), other.size(), Ty::Dyn(other.json_size())),
        }
    }

    /// The least type both `self` and `other` are: same kinds keep their kind with the larger
    /// bounds, `null` joins anything, different kinds are `dyn`.
    pub(crate) fn join(&self, other: &Ty) -> Ty {
        use Ty::*;
        match (self, other) {
            (a, b) if a == b => a.clone(),
            (Null, b) => b.clone(),
            (a, Null) => a.clone(),
            (String(a), String(b)) => String((*a).max(*b)),
            (Bytes(a), Bytes(b)) => Bytes((*a).max(*b)),
            (List(a, n), List(b, m)) => List(Arc::new(a.join(b)), (*n).max(*m)),
            (Map(k1, v1, n), Map(k2, v2, m)) => Map(Arc::new(k1.join(k2)), Arc::new(v1.join(v2)), (*n).max(*m)),
            (Object(a), Object(b)) => {
                let mut fields = a.fields.clone();
                for (k, t) in &b.fields {
                    let joined = fields.get(k).map_or_else(|| t.clone(), |f| f.join(t));
                    fields.insert(k.clone(), joined);
                }
                Object(Arc::new(Obj::new(fields)))
            }
            (Optional(a), Optional(b)) => Optional(Arc::new(a.join(b))),
            (Pair(k1, v1), Pair(k2, v2)) => Pair(Arc::new(k1.join(k2)), Arc::new(v1.join(v2))),
            (Opaque(a, n), Opaque(b, m)) if a == b => Opaque(a, (*n).max(*m)),
            (a, b) => Dyn(a.json_size().max(b.json_size())),
        }
    }

    /// The name cel-go gives the type in messages.
    pub(crate) fn name(&self) -> String {
        match self {
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Uint => "uint".into(),
            Ty::Double => "double".into(),
            Ty::Null => "null_type".into(),
            Ty::Duration => "google.protobuf.Duration".into(),
            Ty::Timestamp => "google.protobuf.Timestamp".into(),
            Ty::Type => "type".into(),
            Ty::String(_) => "string".into(),
            Ty::Bytes(_) => "bytes".into(),
            Ty::List(e, _) => format!("list({})", e.name()),
            Ty::Map(k, v, _) => format!("map({}, {})", k.name(), v.name()),
            Ty::Object(_) => "object".into(),
            Ty::Optional(t) => format!("optional_type({})", t.name()),
            Ty::Pair(..) => "list(dyn)".into(),
            Ty::Opaque(n, _) => (*n).into(),
            Ty::Dyn(_) => "dyn".into(),
        }
    }

    pub(crate) fn is_dyn(&self) -> bool {
        matches!(self, Ty::Dyn(_))
    }

    /// The type of the JSON value `value` converted by [`to_cel`] for this node: the exact
    /// sizes, for the runtime cost bound.
    pub(crate) fn of_value(value: &CelValue) -> Ty {
        ty_of_value(value, 0)
    }
}

fn ty_of_value(value: &CelValue, depth: usize) -> Ty {
    if depth > MAX_VALUE_DEPTH {
        return Ty::Null;
    }
    match value {
        CelValue::Bool(_) => Ty::Bool,
        CelValue::Int(_) => Ty::Int,
        CelValue::UInt(_) => Ty::Uint,
        CelValue::Float(_) => Ty::Double,
        CelValue::Null => Ty::Null,
        CelValue::Duration(_) => Ty::Duration,
        CelValue::Timestamp(_) => Ty::Timestamp,
        CelValue::String(s) => Ty::String(s.chars().count() as u64),
        CelValue::Bytes(b) => Ty::Bytes(b.len() as u64),
        CelValue::List(items) => {
            let elem = items.iter().fold(None, |acc: Option<Ty>, v| {
                let t = ty_of_value(v, depth + 1);
                Some(acc.map_or(t.clone(), |a| a.join(&t)))
            });
            Ty::List(Arc::new(elem.unwrap_or(Ty::Null)), items.len() as u64)
        }
        CelValue::Map(m) => {
            let mut fields = BTreeMap::new();
            let mut other = false;
            for (k, v) in m.map.iter() {
                match k {
                    Key::String(s) => {
                        fields.insert(s.to_string(), ty_of_value(v, depth + 1));
                    }
                    _ => other = true,
                }
            }
            if other {
                Ty::Dyn(json_size_of(value, 0))
            } else {
                Ty::Object(Arc::new(Obj::new(fields)))
            }
        }
        other => Ty::Dyn(json_size_of(other, depth)),
    }
}

fn json_size_of(value: &CelValue, depth: usize) -> u64 {
    if depth > MAX_VALUE_DEPTH {
        return 4;
    }
    match value {
        CelValue::String(s) => s.len() as u64 * 2 + 2,
        CelValue::Bytes(b) => b.len() as u64 * 2 + 2,
        CelValue::List(items) => items.iter().fold(2u64, |a, v| a.saturating_add(json_size_of(v, depth + 1) + 1)),
        CelValue::Map(m) => m.map.iter().fold(2u64, |a, (k, v)| {
            let ks = match k {
                Key::String(s) => s.len() as u64 + 2,
                _ => 24,
            };
            a.saturating_add(ks + 1 + json_size_of(v, depth + 1) + 1)
        }),
        _ => 40,
    }
}

/// A schema node's keyword, when present.
fn kw<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema.as_object().and_then(|o| o.get(key))
}

fn flag(schema: &Value, key: &str) -> bool {
    kw(schema, key).and_then(Value::as_bool).unwrap_or(false)
}

fn bound(schema: &Value, key: &str) -> Option<u64> {
    kw(schema, key).and_then(Value::as_u64)
}

/// The schema node's `type`, "" when none (as kube-apiserver prints it in messages).
pub(crate) fn type_name(schema: &Value) -> &str {
    kw(schema, "type").and_then(Value::as_str).unwrap_or("")
}

/// The smallest JSON a value of the schema can be (kube's `estimateMinSizeJSON`).
fn min_json_size(schema: &Value) -> u64 {
    min_json_size_at(schema, 0)
}

fn min_json_size_at(schema: &Value, depth: usize) -> u64 {
    if depth > MAX_VALUE_DEPTH || flag(schema, "x-kubernetes-int-or-string") {
        return 1;
    }
    match type_name(schema) {
        "boolean" => 4,
        "number" | "integer" => 1,
        "string" => 2,
        "array" => 2,
        // `{}` and the required properties without a default (`"name":value,`).
        "object" => {
            let props = kw(schema, "properties").and_then(Value::as_object);
            let required = kw(schema, "required").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
            required.iter().filter_map(Value::as_str).fold(2u64, |acc, name| {
                match props.and_then(|p| p.get(name)).filter(|p| kw(p, "default").is_none()) {
                    Some(p) => acc.saturating_add(name.len() as u64 + 4).saturating_add(min_json_size_at(p, depth + 1)),
                    None => acc,
                }
            })
        }
        _ => 1,
    }
}

/// At most how many items a list of `items` can have in one request.
pub(crate) fn unbounded_items(items: &Value) -> u64 {
    (MAX_REQUEST_SIZE_BYTES - 2) / (min_json_size(items) + 1)
}

/// At most how many entries a map of `values` can have in one request (kube's estimate: 6 bytes
/// besides the value per entry).
pub(crate) fn unbounded_entries(values: &Value) -> u64 {
    (MAX_REQUEST_SIZE_BYTES - 2) / (min_json_size(values) + 6)
}

/// The CEL keywords a property may not be named as is (escaped `__name__`).
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property name as CEL names the field (kube's `cel.Escape`); `None` when it can't be escaped.
pub(crate) fn escape(name: &str) -> Option<String> {
    if name.is_empty() {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut first = true;
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            first = false;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphabetic() || c == '_' => out.push(c),
            c if c.is_ascii_digit() && !first => out.push(c),
            _ => return None,
        }
        first = false;
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// The fields every resource root (and embedded resource) shows CEL besides its properties.
fn resource_fields(fields: &mut BTreeMap<String, Ty>) {
    let s = Ty::String(MAX_REQUEST_SIZE_BYTES - 2);
    fields.entry("apiVersion".into()).or_insert(s.clone());
    fields.entry("kind".into()).or_insert(s.clone());
    let mut meta = BTreeMap::new();
    meta.insert("name".into(), s.clone());
    meta.insert("generateName".into(), s);
    fields.insert("metadata".into(), Ty::Object(Arc::new(Obj::new(meta))));
}

/// The CEL type of a schema node (`root`: the resource root, which also shows apiVersion, kind
/// and metadata.name/generateName).
pub(crate) fn schema_type(schema: &Value, root: bool) -> Ty {
    schema_type_at(schema, root, 0)
}

fn schema_type_at(schema: &Value, root: bool, depth: usize) -> Ty {
    if depth > MAX_VALUE_DEPTH {
        return Ty::Dyn(MAX_REQUEST_SIZE_BYTES);
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        return Ty::Dyn(MAX_REQUEST_SIZE_BYTES);
    }
    let embedded = root || flag(schema, "x-kubernetes-embedded-resource");
    match type_name(schema) {
        "boolean" => Ty::Bool,
        "integer" => Ty::Int,
        "number" => Ty::Double,
        "string" => {
            let max = bound(schema, "maxLength").unwrap_or(MAX_REQUEST_SIZE_BYTES - 2);
            match kw(schema, "format").and_then(Value::as_str) {
                Some("date-time") | Some("datetime") | Some("date") => Ty::Timestamp,
                Some("duration") => Ty::Duration,
                Some("byte") => Ty::Bytes(max.saturating_mul(3) / 4 + 1),
                _ => Ty::String(max),
            }
        }
        "array" => {
            let items = kw(schema, "items").unwrap_or(&Value::Null);
            let n = bound(schema, "maxItems").unwrap_or_else(|| unbounded_items(items));
            Ty::List(Arc::new(schema_type_at(items, false, depth + 1)), n)
        }
        "object" => {
            if let Some(ap) = kw(schema, "additionalProperties").filter(|ap| ap.is_object()) {
                if kw(schema, "properties").is_none() {
                    let n = bound(schema, "maxProperties").unwrap_or_else(|| unbounded_entries(ap));
                    return Ty::Map(Arc::new(Ty::String(MAX_REQUEST_SIZE_BYTES - 2)), Arc::new(schema_type_at(ap, false, depth + 1)), n);
                }
            }
            let mut fields = BTreeMap::new();
            if let Some(props) = kw(schema, "properties").and_then(Value::as_object) {
                for (name, sub) in props {
                    if let Some(escaped) = escape(name) {
                        fields.insert(escaped, schema_type_at(sub, false, depth + 1));
                    }
                }
            }
            if embedded {
                resource_fields(&mut fields);
            }
            if fields.is_empty() && flag(schema, "x-kubernetes-preserve-unknown-fields") {
                return Ty::Dyn(MAX_REQUEST_SIZE_BYTES);
            }
            Ty::Object(Arc::new(Obj::new(fields)))
        }
        _ => Ty::Dyn(MAX_REQUEST_SIZE_BYTES),
    }
}

/// `value` as the CEL value of the schema node `schema` (`root`: a resource root, of which CEL
/// sees apiVersion, kind, metadata.name and metadata.generateName besides the properties).
pub(crate) fn to_cel(value: &Value, schema: &Value, root: bool) -> CelValue {
    to_cel_at(value, Some(schema), root, 0)
}

fn str_val(s: &str) -> CelValue {
    CelValue::String(Arc::new(s.to_owned()))
}

fn map_val(m: HashMap<Key, CelValue>) -> CelValue {
    CelValue::Map(Map { map: Arc::new(m) })
}

fn to_cel_at(value: &Value, schema: Option<&Value>, root: bool, depth: usize) -> CelValue {
    if depth > MAX_VALUE_DEPTH {
        return CelValue::Null;
    }
    let schema = schema.filter(|s| s.is_object());
    let int_or_string = schema.is_some_and(|s| flag(s, "x-kubernetes-int-or-string"));
    let ty = schema.map(type_name).unwrap_or("");
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => {
            if ty == "number" {
                return CelValue::Float(n.as_f64().unwrap_or(0.0));
            }
            if let Some(i) = n.as_i64() {
                CelValue::Int(i)
            } else if let Some(u) = n.as_u64() {
                CelValue::UInt(u)
            } else {
                CelValue::Float(n.as_f64().unwrap_or(0.0))
            }
        }
        Value::String(s) => {
            if int_or_string || ty != "string" {
                return str_val(s);
            }
            match schema.and_then(|s| kw(s, "format")).and_then(Value::as_str) {
                Some("date-time") | Some("datetime") => {
                    chrono::DateTime::parse_from_rfc3339(s).map(CelValue::Timestamp).unwrap_or_else(|_| str_val(s))
                }
                Some("date") => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                    .ok()
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .map(|d| CelValue::Timestamp(d.and_utc().fixed_offset()))
                    .unwrap_or_else(|| str_val(s)),
                Some("duration") => parse_go_duration(s).map(CelValue::Duration).unwrap_or_else(|| str_val(s)),
                Some("byte") => decode_base64(s).map(|b| CelValue::Bytes(Arc::new(b))).unwrap_or_else(|| str_val(s)),
                _ => str_val(s),
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| kw(s, "items"));
            CelValue::List(Arc::new(items.iter().map(|v| to_cel_at(v, item_schema, false, depth + 1)).collect()))
        }
        Value::Object(obj) => {
            let Some(schema) = schema else {
                // Unknown territory (preserve-unknown-fields): everything, as is.
                return map_val(
                    obj.iter().map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel_at(v, None, false, depth + 1))).collect(),
                );
            };
            let props = kw(schema, "properties").and_then(Value::as_object);
            let ap = kw(schema, "additionalProperties").filter(|ap| ap.is_object());
            let embedded = root || flag(schema, "x-kubernetes-embedded-resource");
            if props.is_none() && ap.is_none() && !embedded {
                // No declared structure: a dyn map of everything.
                return map_val(
                    obj.iter().map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel_at(v, None, false, depth + 1))).collect(),
                );
            }
            let mut out = HashMap::new();
            if let (Some(ap), None) = (ap, props) {
                for (k, v) in obj {
                    out.insert(Key::String(Arc::new(k.clone())), to_cel_at(v, Some(ap), false, depth + 1));
                }
                return map_val(out);
            }
            for (k, v) in obj {
                if embedded && (k == "apiVersion" || k == "kind") && props.is_none_or(|p| !p.contains_key(k)) {
                    out.insert(Key::String(Arc::new(k.clone())), to_cel_at(v, None, false, depth + 1));
                    continue;
                }
                if embedded && k == "metadata" {
                    let mut meta = HashMap::new();
                    if let Some(m) = v.as_object() {
                        for f in ["name", "generateName"] {
                            if let Some(Value::String(s)) = m.get(f) {
                                meta.insert(Key::String(Arc::new(f.to_owned())), str_val(s));
                            }
                        }
                    }
                    out.insert(Key::String(Arc::new("metadata".into())), map_val(meta));
                    continue;
                }
                let Some(sub) = props.and_then(|p| p.get(k)) else { continue };
                let Some(name) = escape(k) else { continue };
                out.insert(Key::String(Arc::new(name)), to_cel_at(v, Some(sub), false, depth + 1));
            }
            map_val(out)
        }
    }
}

/// A Go `time.ParseDuration` string ("1h30m", "-1.5s", "300ms", "0").
pub(crate) fn parse_go_duration(s: &str) -> Option<chrono::Duration> {
    let (neg, mut rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let num: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let nanos = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += num * nanos;
    }
    if !total.is_finite() || total > i64::MAX as f64 {
        return None;
    }
    let d = chrono::Duration::nanoseconds(total as i64);
    Some(if neg { -d } else { d })
}

/// Standard base64 (with or without padding), as Go's `[]byte` JSON decoding reads it.
pub(crate) fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let mut buf = 0u32;
    let mut bits = 0;
    let trimmed = s.trim_end_matches('=');
    if s.len() - trimmed.len() > 2 {
        return None;
    }
    for c in trimmed.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32;
        buf = (buf << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
            buf &= (1 << bits) - 1;
        }
    }
    Some(out)
}
