//! The field-level difference of two versions of an object.

use super::paths::{resolve_set, Resolved};
use super::{ChangeKind, FieldChange, Step, StoredValue, Undo, UndoOp};
use crate::schema::{Schema, TypeRef};
use crate::typed::{compare, to_field_set, ValidationErrors};
use fieldstore_codec::Set;
use serde_json::Value;

/// What a write changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff {
    /// Every leaf field added, modified or removed, in path order within each kind (added,
    /// modified, removed).
    pub changes: Vec<FieldChange>,
    /// How to get the old version back from the new one; `None` when the write created or
    /// deleted the object, or when no exact undo exists (the caller then keeps the old version
    /// whole).
    pub undo: Option<Undo>,
}

/// The difference between `before` and `after` (either absent for a create or a delete), both
/// without `metadata.managedFields` and `metadata.resourceVersion`. Values whose compact JSON
/// exceeds `inline_limit` bytes are kept as digests in the changes.
///
/// # Errors
/// A version does not conform to the schema.
pub fn diff(
    schema: &Schema,
    tr: &TypeRef,
    before: Option<&Value>,
    after: Option<&Value>,
    inline_limit: usize,
) -> Result<Diff, ValidationErrors> {
    let (added, modified, removed, realigned) = match (before, after) {
        (Some(b), Some(a)) => {
            let c = compare(schema, tr, b, a)?;
            (c.added, c.modified, c.removed, c.lists_realigned)
        }
        (None, Some(a)) => (to_field_set(schema, tr, a)?, Set::new(), Set::new(), true),
        (Some(b), None) => (Set::new(), Set::new(), to_field_set(schema, tr, b)?, true),
        (None, None) => return Ok(Diff::default()),
    };
    let mut changes = Vec::new();
    if let Some(a) = after {
        for r in resolve_set(a, &added.leaves()) {
            changes.push(FieldChange {
                path: r.path.to_string(),
                kind: ChangeKind::Added,
                before: None,
                after: Some(StoredValue::of(r.value, inline_limit)),
            });
        }
    }
    if let (Some(b), Some(a)) = (before, after) {
        let leaves = modified.leaves();
        let olds = resolve_set(b, &leaves);
        let news: std::collections::HashMap<String, &Value> =
            resolve_set(a, &leaves).into_iter().map(|r| (r.path.to_string(), r.value)).collect();
        for o in olds {
            let path = o.path.to_string();
            let new_value = news.get(&path).map(|v| StoredValue::of(v, inline_limit));
            changes.push(FieldChange {
                path,
                kind: ChangeKind::Modified,
                before: Some(StoredValue::of(o.value, inline_limit)),
                after: new_value,
            });
        }
    }
    if let Some(b) = before {
        for r in resolve_set(b, &removed.leaves()) {
            changes.push(FieldChange {
                path: r.path.to_string(),
                kind: ChangeKind::Removed,
                before: Some(StoredValue::of(r.value, inline_limit)),
                after: None,
            });
        }
    }
    let undo = match (before, after) {
        (Some(b), Some(a)) => undo(b, a, &added, &modified, &removed, realigned),
        _ => None,
    };
    Ok(Diff { changes, undo })
}

/// The topmost members of a set: members whose parent is not itself a member.
fn tops(set: &Set) -> Set {
    let members = set.members().to_vec();
    let children = set
        .children()
        .iter()
        .filter(|(pe, _)| !set.has_member(pe))
        .map(|(pe, sub)| (pe.clone(), tops(sub)))
        .filter(|(_, sub)| !sub.is_empty())
        .collect();
    Set::from_parts(members, children)
}

/// The undo of a write from `before` to `after`, checked to give `before` back exactly.
///
/// The check (applying the undo to a copy of `after`) is what catches list items that moved:
/// the typed comparison sees no field change in a reorder. When every list kept its items one
/// for one (`realigned` false), the undo restores each changed leaf and no item moved, so the
/// check is skipped: on a large object it costs more than the rest of the record.
fn undo(before: &Value, after: &Value, added: &Set, modified: &Set, removed: &Set, realigned: bool) -> Option<Undo> {
    let mut removes: Vec<Vec<Step>> = resolve_set(after, &tops(added)).into_iter().map(|r| r.steps).collect();
    // Later positions first, so that earlier indices stay valid.
    removes.sort_by(|a, b| b.cmp(a));
    let mut restores: Vec<(Vec<Step>, bool, String)> = Vec::new();
    let json = |r: &Resolved<'_>| serde_json::to_string(r.value).unwrap_or_default();
    for r in resolve_set(before, &tops(removed)) {
        let insert = matches!(r.steps.last(), Some(Step::Index(_)));
        restores.push((r.steps.clone(), insert, json(&r)));
    }
    for r in resolve_set(before, &modified.leaves()) {
        restores.push((r.steps.clone(), false, json(&r)));
    }
    // Positions of the old version, ascending: each insert lands where it was.
    restores.sort_by(|a, b| a.0.cmp(&b.0));
    let mut ops: Vec<UndoOp> = removes.into_iter().map(UndoOp::Remove).collect();
    ops.extend(
        restores.into_iter().map(|(steps, insert, json)| if insert { UndoOp::Insert(steps, json) } else { UndoOp::Set(steps, json) }),
    );
    let undo = Undo { ops };
    if !realigned && added.is_empty() && removed.is_empty() {
        return Some(undo);
    }
    let mut check = after.clone();
    (undo.apply(&mut check) && check == *before).then_some(undo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::parse_smd_yaml;
    use serde_json::json;

    const SCHEMA: &str = r#"
types:
- name: obj
  map:
    fields:
    - name: spec
      type: {namedType: spec}
    - name: metadata
      type: {map: {elementType: {scalar: untyped}, elementRelationship: separable}}
- name: spec
  map:
    fields:
    - name: replicas
      type: {scalar: numeric}
    - name: tags
      type: {list: {elementType: {scalar: string}, elementRelationship: associative}}
    - name: ports
      type:
        list:
          elementType: {namedType: port}
          elementRelationship: associative
          keys: [port]
    - name: args
      type: {list: {elementType: {scalar: string}, elementRelationship: atomic}}
- name: port
  map:
    fields:
    - name: port
      type: {scalar: numeric}
    - name: name
      type: {scalar: string}
"#;

    fn run(before: Option<&Value>, after: Option<&Value>) -> Diff {
        let schema = parse_smd_yaml(SCHEMA).unwrap();
        let tr = schema.named("obj").unwrap();
        diff(&schema, &tr, before, after, 64).unwrap()
    }

    fn kinds(d: &Diff) -> Vec<(String, ChangeKind)> {
        d.changes.iter().map(|c| (c.path.clone(), c.kind)).collect()
    }

    #[test]
    fn keyed_items_set_members_and_atomic_lists() {
        let before = json!({"spec": {"replicas": 1, "tags": ["a", "b"], "args": ["x"],
            "ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}, {"port": 8080, "name": "alt"}]}});
        let after = json!({"spec": {"replicas": 2, "tags": ["a", "c"], "args": ["x", "y"],
            "ports": [{"port": 80, "name": "web"}, {"port": 8080, "name": "alt"}, {"port": 9000, "name": "new"}]}});
        let d = run(Some(&before), Some(&after));
        let k = kinds(&d);
        assert!(k.contains(&(r#".spec.ports[port=80].name"#.into(), ChangeKind::Modified)), "{k:?}");
        assert!(k.contains(&(r#".spec.ports[port=443].name"#.into(), ChangeKind::Removed)), "{k:?}");
        assert!(k.contains(&(r#".spec.ports[port=9000].name"#.into(), ChangeKind::Added)), "{k:?}");
        assert!(k.contains(&(r#".spec.tags[="b"]"#.into(), ChangeKind::Removed)), "{k:?}");
        assert!(k.contains(&(r#".spec.tags[="c"]"#.into(), ChangeKind::Added)), "{k:?}");
        assert!(k.contains(&(".spec.args".into(), ChangeKind::Modified)), "{k:?}");
        assert!(k.contains(&(".spec.replicas".into(), ChangeKind::Modified)), "{k:?}");
        assert!(!k.iter().any(|(p, _)| p.contains("8080")), "{k:?}");
        let m = d.changes.iter().find(|c| c.path == ".spec.ports[port=80].name").unwrap();
        assert_eq!(m.before, Some(StoredValue::Inline("\"http\"".into())));
        assert_eq!(m.after, Some(StoredValue::Inline("\"web\"".into())));
        // The undo gives the old version back exactly, item order included.
        let undo = d.undo.expect("an exact undo");
        let mut back = after.clone();
        assert!(undo.apply(&mut back));
        assert_eq!(back, before);
    }

    #[test]
    fn create_and_delete_list_every_leaf() {
        let obj = json!({"spec": {"replicas": 1, "ports": [{"port": 80}]}});
        let created = run(None, Some(&obj));
        assert!(created.changes.iter().all(|c| c.kind == ChangeKind::Added));
        assert!(kinds(&created).contains(&(".spec.ports[port=80].port".into(), ChangeKind::Added)));
        let deleted = run(Some(&obj), None);
        assert!(deleted.changes.iter().all(|c| c.kind == ChangeKind::Removed));
        assert_eq!(deleted.changes.len(), created.changes.len());
        assert!(created.undo.is_none() && deleted.undo.is_none());
    }

    #[test]
    fn large_values_are_digests() {
        let big = "x".repeat(100);
        let d = run(Some(&json!({"metadata": {"a": "small"}})), Some(&json!({"metadata": {"a": big}})));
        match &d.changes[0].after {
            Some(StoredValue::Digest { size, sha256 }) => {
                assert_eq!(*size, 102);
                assert_eq!(sha256.len(), 64);
            }
            other => panic!("{other:?}"),
        }
        assert!(d.undo.is_some());
    }

    #[test]
    fn reordering_without_field_changes_has_an_exact_undo_or_none() {
        let before = json!({"spec": {"ports": [{"port": 1}, {"port": 2}]}});
        let after = json!({"spec": {"ports": [{"port": 2}, {"port": 1}]}});
        let d = run(Some(&before), Some(&after));
        // No leaf changed; an undo that would not restore the order is refused.
        assert!(d.changes.is_empty());
        if let Some(u) = d.undo {
            let mut back = after.clone();
            assert!(u.apply(&mut back));
            assert_eq!(back, before);
        }
    }
}
