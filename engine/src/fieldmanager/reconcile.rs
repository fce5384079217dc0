//! Reconciling managed fields with schema changes (structured-merge-diff's
//! `reconcileManagedFieldsWithSchemaChanges` and `typed.ReconcileFieldSetWithSchema`).

use crate::merge::ManagedFields;
use crate::schema::{Atom, ElementRelationship, List, Map, Scalar, Schema, TypeRef, DEDUCED_TYPE};
use crate::{Error, Result};
use fieldstore_codec::{PathElement, Set};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

/// Rewrites every manager's set to fit the current schema, where a field changed topology since
/// the set was written; returns whether any set changed.
///
/// - A field that became **atomic** (a granular struct, map or list turned atomic): a manager
///   that owned parts of it now owns the field itself, and nothing below it.
/// - A field that became **granular**: sets are left as they are, so its former owner owns the
///   field and none of its children, as if it had always been granular (the migration
///   structured-merge-diff advises against).
///
/// Maps of schemaless data (no declared fields, untyped elements) are not walked, since they can
/// be neither atomic nor granular by declaration. Structured-merge-diff converts the live object
/// to each manager's version first; with one schema for all versions, only the schema matters.
///
/// # Errors
/// [`Error::UnknownType`] or [`Error::Schema`] when the schema has a dangling reference or an
/// empty type where a set needs a type.
///
/// # Examples
///
/// ```
/// use fieldstore_codec::{Path, Set};
/// use fieldstore_engine::fieldmanager::reconcile_managed_fields;
/// use fieldstore_engine::schema::parse_smd_yaml;
/// use fieldstore_engine::{ManagedFields, ManagerKey, VersionedSet};
///
/// let schema = parse_smd_yaml("types:
/// - name: root
///   map:
///     fields:
///     - name: selector
///       type:
///         map:
///           elementType: {scalar: string}
///           elementRelationship: atomic
/// ").unwrap();
/// let root = schema.named("root").unwrap();
/// let owned = Set::from_paths(&[Path::fields(["selector", "app"])]);
/// let mut managers = ManagedFields::new();
/// managers.insert(ManagerKey::apply("a"), VersionedSet::new(owned, "v1", true));
/// assert!(reconcile_managed_fields(&schema, &root, &mut managers).unwrap());
/// let expected = Set::from_paths(&[Path::fields(["selector"])]);
/// assert_eq!(managers[&ManagerKey::apply("a")].set, expected);
/// ```
pub fn reconcile_managed_fields(schema: &Schema, root: &TypeRef, managers: &mut ManagedFields) -> Result<bool> {
    reconcile_with(schema, &AtomicIndex::new(schema), root, managers)
}

/// [`reconcile_managed_fields`] with the schema's [`AtomicIndex`] computed beforehand.
pub(crate) fn reconcile_with(schema: &Schema, index: &AtomicIndex, root: &TypeRef, managers: &mut ManagedFields) -> Result<bool> {
    if !index.reaches_atomic(root) {
        return Ok(false);
    }
    let mut changed = false;
    for vs in managers.values_mut() {
        if let Some(set) = reconcile_set(schema, index, root, &vs.set)? {
            vs.set = set;
            changed = true;
        }
    }
    Ok(changed)
}

/// The set reconciled with the schema, or `None` when it already fits.
fn reconcile_set(schema: &Schema, index: &AtomicIndex, root: &TypeRef, set: &Set) -> Result<Option<Set>> {
    let mut w = Walker { schema, index, path: Vec::new(), to_replace: Set::new() };
    w.node(root, Some(set), false)?;
    if w.to_replace.is_empty() {
        return Ok(None);
    }
    // Each marked path loses everything at and below it and is then owned as one unit.
    Ok(Some(set.recursive_difference(&w.to_replace).union(&w.to_replace)))
}

/// The named types from which the walk can reach an atomic map or list, where a set may need
/// reconciling. Below any other type nothing can change, so the walk skips it: a list of ten
/// thousand plain items costs nothing.
#[derive(Debug, Clone, Default)]
pub(crate) struct AtomicIndex(HashSet<String>);

impl AtomicIndex {
    /// Computes the index of `schema`, to a fixed point over its named types.
    pub(crate) fn new(schema: &Schema) -> Self {
        let mut index = AtomicIndex::default();
        loop {
            let found: Vec<String> = schema
                .types()
                .iter()
                .filter(|t| !index.0.contains(&t.name) && index.atom_reaches(&t.atom))
                .map(|t| t.name.clone())
                .collect();
            if found.is_empty() {
                return index;
            }
            index.0.extend(found);
        }
    }

    /// The index of a schema that lives for the rest of the process, computed once and shared
    /// by every field manager over it: the store's types keep their schemas so, and the
    /// built-in kinds (tens of them, two field managers each with a status) share one large
    /// schema, whose index is most of what opening a store costs when computed for each.
    pub(crate) fn shared(schema: &'static Schema) -> Arc<AtomicIndex> {
        // Keyed by address: a `'static` schema is never freed, so its address is never reused.
        static SHARED: OnceLock<Mutex<HashMap<usize, Arc<AtomicIndex>>>> = OnceLock::new();
        let mut shared = SHARED.get_or_init(Mutex::default).lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        shared.entry(std::ptr::from_ref(schema) as usize).or_insert_with(|| Arc::new(AtomicIndex::new(schema))).clone()
    }

    /// Whether the walk can meet an atomic container at or below a node of type `tr`.
    pub(crate) fn reaches_atomic(&self, tr: &TypeRef) -> bool {
        match tr {
            TypeRef::Empty => false,
            TypeRef::Named(n, _) => self.0.contains(n),
            TypeRef::Inline(a) => self.atom_reaches(a),
        }
    }

    /// The walk's view of an atom: a map first (where schemaless maps end it), then a scalar,
    /// then a list.
    fn atom_reaches(&self, a: &Atom) -> bool {
        if let Some(m) = &a.map {
            if is_untyped_deduced_map(m) {
                return false;
            }
            return m.relationship == ElementRelationship::Atomic
                || self.reaches_atomic(&m.element_type)
                || m.fields.iter().any(|f| self.reaches_atomic(&f.ty));
        }
        if a.scalar.is_some() {
            return false;
        }
        a.list.as_ref().is_some_and(|l| l.relationship == ElementRelationship::Atomic || self.reaches_atomic(&l.element_type))
    }
}

struct Walker<'s, 'p> {
    schema: &'s Schema,
    index: &'s AtomicIndex,
    /// Where the walk is; borrowed from the set so that walking allocates nothing.
    path: Vec<&'p PathElement>,
    /// Paths of fields now atomic that a set owned parts of.
    to_replace: Set,
}

impl<'p> Walker<'_, 'p> {
    /// Visits the node of type `tr`; `set` holds what is owned below it, `is_atomic` tells
    /// whether the node was owned as a leaf (a member with no children).
    fn node(&mut self, tr: &TypeRef, set: Option<&'p Set>, is_atomic: bool) -> Result<()> {
        let Some(atom) = self.schema.resolve(tr) else {
            let name = match tr {
                TypeRef::Named(n, _) => n.clone(),
                _ => String::new(),
            };
            return Err(Error::UnknownType(name));
        };
        // Same precedence as structured-merge-diff's handleAtom: map, then scalar, then list.
        if let Some(m) = &atom.map {
            return self.map(m, set, is_atomic);
        }
        if atom.scalar.is_some() {
            return Ok(());
        }
        if let Some(l) = &atom.list {
            return self.list(l, set, is_atomic);
        }
        Err(Error::Schema { path: self.path_string(), reason: "invalid atom: the type allows no value".into() })
    }

    fn map(&mut self, m: &Map, set: Option<&'p Set>, is_atomic: bool) -> Result<()> {
        if is_untyped_deduced_map(m) {
            return Ok(());
        }
        if !is_atomic && m.relationship == ElementRelationship::Atomic {
            if set.is_some_and(|s| s.size() > 0) {
                self.mark();
            }
            return Ok(());
        }
        let Some(set) = set else { return Ok(()) };
        self.items(set, |pe| {
            let tr = match pe {
                PathElement::FieldName(n) => m.find_field(n).map_or(&m.element_type, |f| &f.ty),
                _ => &m.element_type,
            };
            // Fields the schema does not know are left alone.
            (!tr.is_empty()).then_some(tr)
        })
    }

    fn list(&mut self, l: &List, set: Option<&'p Set>, is_atomic: bool) -> Result<()> {
        if !is_atomic && l.relationship == ElementRelationship::Atomic {
            self.mark();
            return Ok(());
        }
        let Some(set) = set else { return Ok(()) };
        self.items(set, |_| Some(&l.element_type))
    }

    /// Visits the children and members of `set`, each with the type `type_of` gives it.
    fn items<'t>(&mut self, set: &'p Set, type_of: impl Fn(&PathElement) -> Option<&'t TypeRef>) -> Result<()> {
        for (pe, child) in set.children() {
            if set.has_member(pe) {
                continue;
            }
            if let Some(tr) = type_of(pe) {
                self.descend(pe, tr, Some(child), false)?;
            }
        }
        for pe in set.members() {
            if let Some(tr) = type_of(pe) {
                let child = set.child(pe).filter(|c| !c.is_empty());
                self.descend(pe, tr, child, child.is_none())?;
            }
        }
        Ok(())
    }

    fn descend(&mut self, pe: &'p PathElement, tr: &TypeRef, set: Option<&'p Set>, is_atomic: bool) -> Result<()> {
        if !self.index.reaches_atomic(tr) {
            return Ok(());
        }
        self.path.push(pe);
        let r = self.node(tr, set, is_atomic);
        self.path.pop();
        r
    }

    fn mark(&mut self) {
        // The root itself cannot be owned as a member.
        if !self.path.is_empty() {
            let elements: Vec<PathElement> = self.path.iter().map(|&pe| pe.clone()).collect();
            self.to_replace.insert_elements(&elements);
        }
    }

    fn path_string(&self) -> String {
        self.path.iter().map(ToString::to_string).collect()
    }
}

/// A map with no declared fields whose elements are schemaless (`x-kubernetes-preserve-unknown-
/// fields` without properties, or the deduced type itself).
fn is_untyped_deduced_map(m: &Map) -> bool {
    let untyped = match &m.element_type {
        TypeRef::Named(n, _) => n == DEDUCED_TYPE,
        TypeRef::Inline(a) => a.scalar == Some(Scalar::Untyped),
        TypeRef::Empty => false,
    };
    untyped && m.fields.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{ManagerKey, VersionedSet};
    use crate::schema::parse_smd_yaml;
    use fieldstore_codec::Path;
    use serde_json::json;

    const ATOMIC: &str = "types:
- name: root
  map:
    fields:
    - name: struct
      type:
        map:
          fields:
          - {name: numeric, type: {scalar: numeric}}
          - {name: string, type: {scalar: string}}
          elementRelationship: atomic
    - name: list
      type:
        list:
          elementType: {scalar: string}
          elementRelationship: atomic
    - name: objectList
      type:
        list:
          elementType:
            map:
              fields:
              - {name: keyA, type: {scalar: string}}
              - {name: value, type: {scalar: string}}
          elementRelationship: atomic
    - name: stringMap
      type:
        map:
          elementType: {scalar: string}
          elementRelationship: atomic
    - name: unchanged
      type:
        map:
          fields:
          - {name: numeric, type: {scalar: numeric}}
";

    fn p(elements: Vec<PathElement>) -> Path {
        Path(elements)
    }

    fn f(n: &str) -> PathElement {
        PathElement::field(n)
    }

    /// structured-merge-diff's `granular-to-atomic` case of reconcile_schema_test.go.
    #[test]
    fn granular_to_atomic() {
        let schema = parse_smd_yaml(ATOMIC).unwrap();
        let root = schema.named("root").unwrap();
        let old = Set::from_paths(&[
            p(vec![f("struct"), f("numeric")]),
            p(vec![f("list"), PathElement::Value(json!("one"))]),
            p(vec![f("stringMap"), f("key1")]),
            p(vec![f("objectList"), PathElement::key(vec![("keyA".into(), json!("a1"))]), f("value")]),
            p(vec![f("unchanged"), f("numeric")]),
        ]);
        let fixed = Set::from_paths(&[
            p(vec![f("struct")]),
            p(vec![f("list")]),
            p(vec![f("objectList")]),
            p(vec![f("stringMap")]),
            p(vec![f("unchanged"), f("numeric")]),
        ]);
        let index = AtomicIndex::new(&schema);
        assert_eq!(reconcile_set(&schema, &index, &root, &old).unwrap(), Some(fixed.clone()));
        // Already atomic: no change.
        assert_eq!(reconcile_set(&schema, &index, &root, &fixed).unwrap(), None);
        let mut managers = ManagedFields::new();
        managers.insert(ManagerKey::apply("a"), VersionedSet::new(old, "v1", true));
        assert!(reconcile_managed_fields(&schema, &root, &mut managers).unwrap());
        assert_eq!(managers[&ManagerKey::apply("a")].set, fixed);
    }

    #[test]
    fn a_static_schema_has_one_shared_index() {
        let schema: &'static Schema = Box::leak(Box::new(parse_smd_yaml(ATOMIC).unwrap()));
        let other: &'static Schema = Box::leak(Box::new(parse_smd_yaml(ATOMIC).unwrap()));
        let shared = AtomicIndex::shared(schema);
        assert!(std::sync::Arc::ptr_eq(&shared, &AtomicIndex::shared(schema)));
        assert!(!std::sync::Arc::ptr_eq(&shared, &AtomicIndex::shared(other)), "one index per schema");
        assert_eq!(shared.0, AtomicIndex::new(schema).0);
        assert!(shared.reaches_atomic(&schema.named("root").unwrap()));
    }

    #[test]
    fn deduced_maps_are_not_walked() {
        let schema = Schema::deduced();
        let root = schema.named(DEDUCED_TYPE).unwrap();
        let s = Set::from_paths(&[p(vec![f("a"), f("b")])]);
        let index = AtomicIndex::new(&schema);
        assert!(!index.reaches_atomic(&root));
        assert_eq!(reconcile_set(&schema, &index, &root, &s).unwrap(), None);
    }
}
