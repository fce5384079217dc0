//! Values typed by a schema: validation, the set of fields a value holds, merging two values,
//! comparing them, and removing a set of fields — structured-merge-diff's `typed` package.
//!
//! Every operation walks the value and the schema together. Sets are built bottom-up (each node
//! returns the set of its own children, sorted once), so an n-item list costs O(n log n), whatever
//! the order of its items.

mod compare;
mod fieldset;
mod prune;
mod remove;
mod validate;

use crate::schema::{Atom, ElementRelationship, List, Map, Scalar, Schema, TypeRef};
use fieldstore_codec::fieldpath::Name;
use fieldstore_codec::PathElement;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

pub use compare::{
    compare, merge, merge_and_compare, merge_and_compare_with, validate_and_compare, Comparison, Fill, Fused, MergeOptions, MergeOutcome,
    Slot,
};
pub use fieldset::{ensure_named_fields_are_members, is_field_set_of, to_field_set};
pub use prune::prune_undeclared;
pub use remove::remove_items;
pub use validate::validate;

/// One problem found in an object, at a path printed as Kubernetes prints paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// Where the problem is, e.g. `.spec.containers[name="a"].image`; empty for the root.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Every problem found in an object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidationErrors(pub Vec<ValidationError>);

impl ValidationErrors {
    pub(crate) fn one(message: impl Into<String>) -> Self {
        ValidationErrors(vec![ValidationError { path: String::new(), message: message.into() }])
    }

    /// Whether no problem was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn extend(&mut self, other: ValidationErrors) {
        self.0.extend(other.0);
    }

    /// Prefixes every path with the printed form of `pe` (errors bubble up from the leaves).
    pub(crate) fn prefixed(mut self, pe: &PathElement) -> Self {
        if !self.0.is_empty() {
            let p = pe.to_string();
            for e in &mut self.0 {
                e.path.insert_str(0, &p);
            }
        }
        self
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.len() == 1 {
            return write!(f, "{}", self.0[0]);
        }
        f.write_str("errors:")?;
        for e in &self.0 {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

/// Which handler a value is walked with, once the atom is narrowed by the value's own kind.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind<'a> {
    Scalar(Scalar),
    List(&'a List),
    Map(&'a Map),
    Invalid,
}

impl Kind<'_> {
    fn tag(&self) -> u8 {
        match self {
            Kind::Scalar(_) => 0,
            Kind::List(_) => 1,
            Kind::Map(_) => 2,
            Kind::Invalid => 3,
        }
    }

    pub(crate) fn same_handler(&self, other: &Kind<'_>) -> bool {
        self.tag() == other.tag()
    }
}

/// structured-merge-diff's `deduceAtom` then `handleAtom`: the value's own kind if the atom allows
/// it, else the atom's first kind in the order map, scalar, list.
pub(crate) fn deduce<'a>(atom: &'a Atom, v: Option<&Value>) -> Kind<'a> {
    match v {
        Some(Value::Number(_) | Value::String(_) | Value::Bool(_)) if atom.scalar.is_some() => {
            return Kind::Scalar(atom.scalar.unwrap_or(Scalar::Untyped))
        }
        Some(Value::Array(_)) if atom.list.is_some() => return atom.list.as_ref().map_or(Kind::Invalid, Kind::List),
        Some(Value::Object(_)) if atom.map.is_some() => return atom.map.as_ref().map_or(Kind::Invalid, Kind::Map),
        _ => {}
    }
    if let Some(m) = &atom.map {
        Kind::Map(m)
    } else if let Some(s) = atom.scalar {
        Kind::Scalar(s)
    } else if let Some(l) = &atom.list {
        Kind::List(l)
    } else {
        Kind::Invalid
    }
}

/// Resolves `tr`, or the schema error structured-merge-diff reports.
pub(crate) fn resolve<'a>(schema: &'a Schema, tr: &'a TypeRef) -> Result<&'a Atom, ValidationErrors> {
    schema.resolve(tr).ok_or_else(|| {
        let name = match tr {
            TypeRef::Named(n, _) => n.as_str(),
            _ => "inlined",
        };
        ValidationErrors::one(format!("schema error: no type found matching: {name}"))
    })
}

pub(crate) fn invalid_atom(tr: &TypeRef) -> ValidationErrors {
    let name = match tr {
        TypeRef::Named(n, _) => format!("named type: {n}"),
        _ => "inlined".to_string(),
    };
    ValidationErrors::one(format!("schema error: invalid atom: {name}"))
}

/// Checks a scalar against its kind (`null` is always allowed).
pub(crate) fn validate_scalar(t: Scalar, v: Option<&Value>, prefix: &str) -> Result<(), ValidationErrors> {
    let Some(v) = v else { return Ok(()) };
    let ok = match (t, v) {
        (_, Value::Null) => true,
        (Scalar::Numeric, Value::Number(_)) => true,
        (Scalar::Numeric, _) => false,
        (Scalar::String, Value::String(_)) => true,
        (Scalar::String, _) => false,
        (Scalar::Boolean, Value::Bool(_)) => true,
        (Scalar::Boolean, _) => false,
        (Scalar::Untyped, _) => true,
    };
    if ok {
        Ok(())
    } else {
        let want = match t {
            Scalar::Numeric => "numeric (int or float)",
            Scalar::String => "string",
            Scalar::Boolean => "boolean",
            Scalar::Untyped => "scalar",
        };
        Err(ValidationErrors::one(format!("{prefix}expected {want}, got {}", kind_name(v))))
    }
}

/// Whether a set has neither members nor children.
pub(crate) fn bare(s: &fieldstore_codec::Set) -> bool {
    s.members().is_empty() && s.children().is_empty()
}

pub(crate) fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// How a list item is identified, borrowed from the item (and the schema's key defaults): the
/// cheap form used to match items while walking, turned into a [`PathElement`] only when a path
/// must be recorded.
#[derive(Debug, Clone)]
pub(crate) enum ItemKey<'a> {
    /// A position.
    Index(usize),
    /// A set item's own value, or a one-field key's value.
    One(&'a Value),
    /// The values of a multi-field key, in the order of the list's key names.
    Many(Vec<&'a Value>),
}

impl PartialEq for ItemKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ItemKey::Index(a), ItemKey::Index(b)) => a == b,
            (ItemKey::One(a), ItemKey::One(b)) => fieldstore_codec::value::compare(a, b).is_eq(),
            (ItemKey::Many(a), ItemKey::Many(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| fieldstore_codec::value::compare(x, y).is_eq())
            }
            _ => false,
        }
    }
}

impl Eq for ItemKey<'_> {}

impl std::hash::Hash for ItemKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            ItemKey::Index(i) => i.hash(state),
            ItemKey::One(v) => fieldstore_codec::value::hash_value(v, state),
            ItemKey::Many(vs) => {
                for v in vs {
                    fieldstore_codec::value::hash_value(v, state);
                }
            }
        }
    }
}

impl ItemKey<'_> {
    /// The owned path element of this key in `list`.
    pub(crate) fn to_pe(&self, list: &List) -> PathElement {
        match self {
            ItemKey::Index(i) => PathElement::Index(*i as i64),
            ItemKey::One(v) if list.keys.is_empty() => PathElement::Value((*v).clone()),
            ItemKey::One(v) => PathElement::Key(Arc::new([(list.keys[0].clone(), (*v).clone())])),
            ItemKey::Many(vs) => PathElement::key(list.keys.iter().cloned().zip(vs.iter().map(|v| (*v).clone())).collect()),
        }
    }
}

/// Orders an item's key against a path element as the element itself would order
/// ([`PathElement`]'s `Ord`), without building it.
pub(crate) fn cmp_item_pe(list: &List, key: &ItemKey<'_>, pe: &PathElement) -> std::cmp::Ordering {
    use fieldstore_codec::value::compare;
    use std::cmp::Ordering;
    let rank = |pe: &PathElement| match pe {
        PathElement::FieldName(_) => 0,
        PathElement::Key(_) => 1,
        PathElement::Value(_) => 2,
        PathElement::Index(_) => 3,
    };
    match (key, pe) {
        (ItemKey::Index(i), PathElement::Index(j)) => (*i as i64).cmp(j),
        (ItemKey::Index(_), other) => 3.cmp(&rank(other)),
        (ItemKey::One(v), PathElement::Value(w)) if list.keys.is_empty() => compare(v, w),
        (ItemKey::One(_), other) if list.keys.is_empty() => 2.cmp(&rank(other)),
        (ItemKey::One(v), PathElement::Key(fields)) => {
            let Some((n, w)) = fields.first() else { return Ordering::Greater };
            (*list.keys[0]).cmp(n).then_with(|| compare(v, w)).then(1.cmp(&fields.len()))
        }
        (ItemKey::Many(vs), PathElement::Key(fields)) => {
            let mut mine: Vec<(&str, &Value)> = list.keys.iter().map(|k| &**k).zip(vs.iter().copied()).collect();
            mine.sort_by(|a, b| a.0.cmp(b.0));
            for ((n, v), (m, w)) in mine.iter().zip(fields.iter()) {
                let c = (*n).cmp(&**m).then_with(|| compare(v, w));
                if c != Ordering::Equal {
                    return c;
                }
            }
            mine.len().cmp(&fields.len())
        }
        (_, other) => 1.cmp(&rank(other)),
    }
}

/// The [`ItemKey`] of item `index` of a list; the same rules and errors as [`list_item_pe`].
pub(crate) fn item_key<'a>(schema: &'a Schema, list: &'a List, index: usize, item: &'a Value) -> Result<ItemKey<'a>, String> {
    if list.relationship != ElementRelationship::Associative {
        return Ok(ItemKey::Index(index));
    }
    if list.keys.is_empty() {
        return match item {
            Value::Object(_) => Err("associative list without keys has an element that's a map type".into()),
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => Err("associative list without keys has an element that's an explicit null".into()),
            v => Ok(ItemKey::One(v)),
        };
    }
    let m = match item {
        Value::Null => return Err("associative list with keys may not have a null element".into()),
        Value::Object(m) => m,
        _ => return Err("associative list with keys may not have non-map elements".into()),
    };
    let one = |k: &Name| -> Result<&'a Value, String> {
        if let Some(v) = m.get(&**k) {
            return Ok(v);
        }
        let elem = schema
            .resolve(&list.element_type)
            .ok_or_else(|| format!("couldn't find default value for {k}: invalid elementType for list"))?;
        let em =
            elem.map.as_ref().ok_or_else(|| format!("couldn't find default value for {k}: associative list may not have non-map types"))?;
        em.find_field(k)
            .and_then(|f| f.default.as_ref())
            .ok_or_else(|| format!("associative list with keys has an element that omits key field {k:?} (and doesn't have default value)"))
    };
    if list.keys.len() == 1 {
        return one(&list.keys[0]).map(ItemKey::One);
    }
    list.keys.iter().map(one).collect::<Result<Vec<_>, _>>().map(ItemKey::Many)
}

/// The path element identifying item `index` of a list: its key for a map list, its value for a
/// set, its position otherwise.
pub(crate) fn list_item_pe(schema: &Schema, list: &List, index: usize, item: &Value) -> Result<PathElement, String> {
    if list.relationship != ElementRelationship::Associative {
        return Ok(PathElement::Index(index as i64));
    }
    if list.keys.is_empty() {
        return match item {
            Value::Object(_) => Err("associative list without keys has an element that's a map type".into()),
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => Err("associative list without keys has an element that's an explicit null".into()),
            v => Ok(PathElement::Value(v.clone())),
        };
    }
    let m = match item {
        Value::Null => return Err("associative list with keys may not have a null element".into()),
        Value::Object(m) => m,
        _ => return Err("associative list with keys may not have non-map elements".into()),
    };
    let mut fields = Vec::with_capacity(list.keys.len());
    for k in &list.keys {
        if let Some(v) = m.get(&**k) {
            fields.push((k.clone(), v.clone()));
            continue;
        }
        let elem = schema
            .resolve(&list.element_type)
            .ok_or_else(|| format!("couldn't find default value for {k}: invalid elementType for list"))?;
        let em =
            elem.map.as_ref().ok_or_else(|| format!("couldn't find default value for {k}: associative list may not have non-map types"))?;
        match em.find_field(k).and_then(|f| f.default.as_ref()) {
            Some(d) => fields.push((k.clone(), d.clone())),
            None => {
                return Err(format!(
                    "associative list with keys has an element that omits key field {k:?} (and doesn't have default value)"
                ))
            }
        }
    }
    Ok(PathElement::key(fields))
}
