//! Reset fields: the fields a resource's strategy resets on writes through one endpoint (the
//! `status` of the main resource, everything but `status` for the status subresource).
//!
//! In the apiserver, structured-merge-diff is told to ignore them (`Updater.IgnoredFields`: left
//! out of comparisons and of the writer's set) and the strategy then copies the old values back.
//! Here both happen in one place: the values at reset paths are restored from the live object
//! before the write is compared, so no manager gains or loses them, and the writer's set is
//! cleared of them.

use fieldstore_codec::{value, Path, PathElement, Set};
use serde_json::Value;

/// The paths of `set` at or below a member of `reset`.
pub(crate) fn touched(set: &Set, reset: &Set) -> Set {
    set.difference(&set.recursive_difference(reset))
}

/// Makes `target` carry `source`'s values at every member path of `reset`.
///
/// With `only_present`, paths `target` does not have are left alone (an apply configuration
/// that does not mention a reset field must not start to).
pub(crate) fn restore(target: &mut Value, source: &Value, reset: &Set, only_present: bool) {
    reset.iterate(|p| {
        if p.is_empty() {
            return;
        }
        let have = crate::value_at(target, p);
        if only_present && have.is_none() {
            return;
        }
        let want = crate::value_at(source, p);
        match (have, want) {
            (None, None) => {}
            (Some(h), Some(w)) if value::equals(h, w) => {}
            (_, Some(w)) => {
                let w = w.clone();
                put(target, p, w);
            }
            (Some(_), None) => remove(target, p),
        }
    });
}

/// The index of the item `pe` names in `items`.
fn find(items: &[Value], pe: &PathElement) -> Option<usize> {
    match pe {
        PathElement::Key(k) => {
            items.iter().position(|item| k.iter().all(|(name, kv)| item.get(&**name).is_some_and(|iv| value::equals(iv, kv))))
        }
        PathElement::Value(x) => items.iter().position(|item| value::equals(item, x)),
        PathElement::Index(i) => usize::try_from(*i).ok().filter(|&i| i < items.len()),
        PathElement::FieldName(_) => None,
    }
}

/// The value at `elements`, creating missing struct fields on the way (list items are never
/// invented: without the item there is nothing to restore into).
fn descend_mut<'v>(mut cur: &'v mut Value, elements: &[PathElement]) -> Option<&'v mut Value> {
    for pe in elements {
        cur = match (pe, cur) {
            (PathElement::FieldName(n), Value::Object(m)) => {
                m.entry(n.to_string()).or_insert_with(|| Value::Object(serde_json::Map::new()))
            }
            (pe, Value::Array(a)) => {
                let i = find(a, pe)?;
                a.get_mut(i)?
            }
            _ => return None,
        };
    }
    Some(cur)
}

fn put(target: &mut Value, p: &Path, v: Value) {
    let Some((last, parent)) = p.elements().split_last() else { return };
    match (last, descend_mut(target, parent)) {
        (PathElement::FieldName(n), Some(Value::Object(m))) => {
            m.insert(n.to_string(), v);
        }
        (pe, Some(Value::Array(a))) => match find(a, pe).and_then(|i| a.get_mut(i)) {
            Some(item) => *item = v,
            None if !matches!(pe, PathElement::Index(_)) => a.push(v),
            None => {}
        },
        _ => {}
    }
}

fn remove(target: &mut Value, p: &Path) {
    let Some((last, parent)) = p.elements().split_last() else { return };
    // Only walk parents that exist: removing must not create anything.
    if crate::value_at(target, &Path(parent.to_vec())).is_none() {
        return;
    }
    match (last, descend_mut(target, parent)) {
        (PathElement::FieldName(n), Some(Value::Object(m))) => {
            m.remove(&**n);
        }
        (pe, Some(Value::Array(a))) => {
            if let Some(i) = find(a, pe) {
                a.remove(i);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(paths: &[&[&str]]) -> Set {
        let paths: Vec<Path> = paths.iter().map(|p| Path::fields(p.iter().copied())).collect();
        Set::from_paths(&paths)
    }

    #[test]
    fn restores_values_and_absence() {
        let live = json!({"spec": {"a": 1}, "status": {"phase": "Up"}});
        let mut new = json!({"spec": {"a": 2}, "status": {"phase": "Down"}, "extra": {"x": 1}});
        restore(&mut new, &live, &set(&[&["status"], &["extra", "x"], &["spec", "b"]]), false);
        assert_eq!(new, json!({"spec": {"a": 2}, "status": {"phase": "Up"}, "extra": {}}));

        let mut new = json!({"spec": {"a": 2}});
        restore(&mut new, &live, &set(&[&["status", "phase"]]), false);
        assert_eq!(new, json!({"spec": {"a": 2}, "status": {"phase": "Up"}}));

        let mut config = json!({"spec": {"a": 2}});
        restore(&mut config, &live, &set(&[&["status"]]), true);
        assert_eq!(config, json!({"spec": {"a": 2}}));
    }

    #[test]
    fn touched_lists_paths_under_reset_members() {
        let s = set(&[&["spec", "a"], &["status", "phase"], &["status", "x", "y"]]);
        assert_eq!(touched(&s, &set(&[&["status"]])), set(&[&["status", "phase"], &["status", "x", "y"]]));
        assert!(touched(&s, &set(&[&["spec", "b"]])).is_empty());
    }
}
