//! One step of a field path.

use crate::value;
use serde_json::Value;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A field name inside a path: shared, so the many paths and sets naming the same field (every
/// item of a list owns its `.image`) hold one string between them.
pub type Name = Arc<str>;

/// The key of an associative-list item: its key fields and their values, sorted by field name.
/// Shared, since a set holds an item's key both as a member and as the prefix of its fields.
pub type KeyFields = Arc<[(Name, Value)]>;

/// One step into a value.
///
/// The variants are ordered `FieldName < Key < Value < Index`, and within a variant as
/// structured-merge-diff orders them; that order decides FieldsV1 key order, so `Ord` is written
/// by hand to match it.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A field of a struct or an entry of a map: `.spec`.
    FieldName(Name),
    /// An associative-list item identified by its key fields (sorted by name): `[name="nginx"]`.
    Key(KeyFields),
    /// A set-list item identified by its own value: `[="a"]`.
    Value(Value),
    /// A list item identified by its position: `[3]`.
    Index(i64),
}

impl PathElement {
    /// A `FieldName` element.
    pub fn field(name: impl Into<Name>) -> Self {
        PathElement::FieldName(name.into())
    }

    /// A `Key` element from key fields in any order; they are sorted by name.
    pub fn key(mut fields: Vec<(Name, Value)>) -> Self {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields.into())
    }

    /// The field name, for a `FieldName` element.
    pub fn as_field(&self) -> Option<&str> {
        match self {
            PathElement::FieldName(n) => Some(n),
            _ => None,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::FieldName(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }
}

/// structured-merge-diff's `FieldList.Compare`: pairwise by name then value, shorter first.
fn compare_keys(a: &KeyFields, b: &KeyFields) -> Ordering {
    if Arc::ptr_eq(a, b) {
        return Ordering::Equal;
    }
    for ((an, av), (bn, bv)) in a.iter().zip(b.iter()) {
        let c = compare_names(an, bn).then_with(|| value::compare(av, bv));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// Names in byte order; one shared string is equal to itself without reading it.
#[inline]
fn compare_names(a: &Name, b: &Name) -> Ordering {
    if Arc::ptr_eq(a, b) {
        Ordering::Equal
    } else {
        a.cmp(b)
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::FieldName(a), PathElement::FieldName(b)) => compare_names(a, b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_keys(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => value::compare(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl Hash for PathElement {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.rank().hash(state);
        match self {
            PathElement::FieldName(n) => n.hash(state),
            PathElement::Key(k) => {
                for (n, v) in k.iter() {
                    n.hash(state);
                    value::hash_value(v, state);
                }
            }
            PathElement::Value(v) => value::hash_value(v, state),
            PathElement::Index(i) => i.hash(state),
        }
    }
}

impl PathElement {
    /// Appends the element as its `Display` prints it (`.name`, `[3]`, `[name="x"]`, `[="a"]`).
    pub fn write_to(&self, out: &mut String) {
        use fmt::Write;
        match self {
            PathElement::FieldName(n) => {
                out.push('.');
                out.push_str(n);
            }
            // Writing into a string cannot fail.
            PathElement::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
            PathElement::Key(k) => {
                out.push('[');
                for (i, (n, v)) in k.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(n);
                    out.push('=');
                    value::display(out, v);
                }
                out.push(']');
            }
            PathElement::Value(v) => {
                out.push_str("[=");
                value::display(out, v);
                out.push(']');
            }
        }
    }
}

/// Prints the element as Kubernetes prints it in conflict messages: `.name`, `[k=v,…]`, `[=v]`,
/// `[3]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        // Field names (nearly every element) go straight to the formatter; the others are
        // written to a string first.
        match self {
            PathElement::FieldName(n) => {
                f.write_char('.')?;
                f.write_str(n)
            }
            other => {
                let mut s = String::new();
                other.write_to(&mut s);
                f.write_str(&s)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn variant_order_is_field_key_value_index() {
        let v =
            [PathElement::field("z"), PathElement::key(vec![("a".into(), json!(1))]), PathElement::Value(json!(0)), PathElement::Index(0)];
        for i in 0..v.len() {
            for j in 0..v.len() {
                assert_eq!(v[i].cmp(&v[j]), i.cmp(&j));
            }
        }
    }

    #[test]
    fn int_and_float_elements_are_equal() {
        assert_eq!(PathElement::Value(json!(1)), PathElement::Value(json!(1.0)));
        let k1 = PathElement::key(vec![("port".into(), json!(80))]);
        let k2 = PathElement::key(vec![("port".into(), json!(80.0))]);
        assert_eq!(k1, k2);
    }

    #[test]
    fn display_as_kubernetes_prints() {
        let k = PathElement::key(vec![("protocol".into(), json!("TCP")), ("port".into(), json!(80))]);
        assert_eq!(k.to_string(), r#"[port=80,protocol="TCP"]"#);
        assert_eq!(PathElement::Value(json!("a")).to_string(), r#"[="a"]"#);
        assert_eq!(PathElement::Index(3).to_string(), "[3]");
        assert_eq!(PathElement::field("spec").to_string(), ".spec");
    }
}
