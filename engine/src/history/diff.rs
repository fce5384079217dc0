//! The field-level difference of two versions of an object.

use super::changes::{Changes, Diff};
use super::narrow::Stop;
use super::{FieldChange, Undo};
use crate::schema::{Schema, TypeRef};
use crate::typed::{compare, to_field_set, Comparison, ValidationErrors};
use serde_json::Value;

/// The difference between `before` and `after` (either absent for a create or a delete), both
/// without `metadata.managedFields` and `metadata.resourceVersion`. Values whose compact JSON
/// exceeds `inline_limit` bytes are kept as digests in the changes.
///
/// Two versions are compared only where they differ: the walk follows granular maps down to
/// the subtrees that changed (`narrow`), and the typed comparison runs on those alone — the
/// answer [`diff_whole`] gives from one comparison of the whole versions.
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
    match (before, after) {
        (Some(b), Some(a)) => {
            let mut acc = Changes::new(inline_limit);
            match super::narrow::node(schema, tr, b, a, false, &mut acc) {
                Ok(()) => Ok(acc.finish(|undo, changes| undoes(undo, changes, b, a))),
                Err(Stop::Invalid(e)) => Err(e),
                // Only versions carrying what history does not track stop for it.
                Err(Stop::Untracked) => diff_whole(schema, tr, before, after, inline_limit),
            }
        }
        _ => diff_whole(schema, tr, before, after, inline_limit),
    }
}

/// [`diff`] of two versions that still carry `metadata.managedFields` and
/// `metadata.resourceVersion`: the walk passes them by, and they are taken out (and put back)
/// only when a comparison or the undo's check must see a version whole.
///
/// # Errors
/// A version does not conform to the schema.
pub fn diff_tracked(
    schema: &Schema,
    tr: &TypeRef,
    before: &mut Value,
    after: &mut Value,
    inline_limit: usize,
) -> Result<Diff, ValidationErrors> {
    let mut acc = Changes::new(inline_limit);
    match super::narrow::node(schema, tr, before, after, true, &mut acc) {
        Err(Stop::Invalid(e)) => Err(e),
        Ok(()) if !acc.checks() => Ok(acc.finish(|_, _| true)),
        walked => {
            let (sb, sa) = (super::take_untracked(before), super::take_untracked(after));
            let d = match walked {
                Ok(()) => Ok(acc.finish(|undo, changes| undoes(undo, changes, before, after))),
                Err(_) => diff(schema, tr, Some(before), Some(after), inline_limit),
            };
            super::restore_untracked(before, sb);
            super::restore_untracked(after, sa);
            d
        }
    }
}

/// Whether `undo` turns `after` back into `before` exactly.
fn undoes(undo: &Undo, changes: &[FieldChange], before: &Value, after: &Value) -> bool {
    let mut check = after.clone();
    undo.apply(&mut check, changes) && check == *before
}

/// [`diff`] from one typed comparison of the whole versions (of a create or a delete: the whole
/// version added or removed).
///
/// # Errors
/// A version does not conform to the schema.
pub fn diff_whole(
    schema: &Schema,
    tr: &TypeRef,
    before: Option<&Value>,
    after: Option<&Value>,
    inline_limit: usize,
) -> Result<Diff, ValidationErrors> {
    let c = match (before, after) {
        (Some(b), Some(a)) => compare(schema, tr, b, a)?,
        (None, Some(a)) => Comparison { added: to_field_set(schema, tr, a)?, lists_realigned: true, ..Comparison::default() },
        (Some(b), None) => Comparison { removed: to_field_set(schema, tr, b)?, lists_realigned: true, ..Comparison::default() },
        (None, None) => return Ok(Diff::default()),
    };
    let mut acc = Changes::new(inline_limit);
    acc.comparison(before, after, &c, &[], &[]);
    Ok(match (before, after) {
        (Some(b), Some(a)) => acc.finish(|undo, changes| undoes(undo, changes, b, a)),
        _ => acc.finish_one_sided(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{ChangeKind, StoredValue};
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
        assert!(undo.apply(&mut back, &d.changes));
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
        if let Some(u) = &d.undo {
            let mut back = after.clone();
            assert!(u.apply(&mut back, &d.changes));
            assert_eq!(back, before);
        }
    }
}
