//! Field paths against JSON values: finding the value a FieldsV1 path names, resolving many
//! paths at once to concrete positions, and matching printed paths by prefix.

use super::Step;
use fieldstore_codec::fieldpath::Name;
use fieldstore_codec::value::equals;
use fieldstore_codec::{Path, PathElement, Set};
use serde_json::Value;
use std::collections::BTreeMap;

/// The value `path` names in `v`: map entries by name, associative-list items by key fields,
/// set members by value, other list items by index.
#[must_use]
pub fn value_at<'v>(v: &'v Value, path: &Path) -> Option<&'v Value> {
    let mut cur = v;
    for pe in path.elements() {
        cur = child(cur, pe)?.1;
    }
    Some(cur)
}

/// Whether the printed path `path` is `prefix` or lies under it (`.spec` covers
/// `.spec.replicas` and `.spec.ports[port=80]`, not `.specification`).
#[must_use]
pub fn path_matches(path: &str, prefix: &str) -> bool {
    if prefix.is_empty() || prefix == "." {
        return true;
    }
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('.') || rest.starts_with('['),
        None => false,
    }
}

/// Whether a list item is the one `pe` names. `lenient` lets key fields the item omits match
/// (they have schema defaults, which keys carry and items need not).
fn item_matches(item: &Value, pe: &PathElement, lenient: bool) -> bool {
    match pe {
        PathElement::Key(fields) => match item {
            Value::Object(m) => fields.iter().all(|(n, v)| m.get(&**n).map_or(lenient, |x| equals(x, v))),
            _ => false,
        },
        PathElement::Value(v) => equals(item, v),
        _ => false,
    }
}

/// The child `pe` names in `v`, with its step.
fn child<'v>(v: &'v Value, pe: &PathElement) -> Option<(Step, &'v Value)> {
    match (v, pe) {
        (Value::Object(m), PathElement::FieldName(n)) => m.get(&**n).map(|c| (Step::Field(n.to_string()), c)),
        (Value::Array(items), PathElement::Index(i)) => {
            let i = usize::try_from(*i).ok()?;
            items.get(i).map(|c| (Step::Index(i), c))
        }
        (Value::Array(items), pe) => items
            .iter()
            .position(|it| item_matches(it, pe, false))
            .or_else(|| items.iter().position(|it| item_matches(it, pe, true)))
            .map(|i| (Step::Index(i), &items[i])),
        _ => None,
    }
}

/// A member of a set found in a value.
#[derive(Debug)]
pub(crate) struct Resolved<'v> {
    /// The member's path.
    pub path: Path,
    /// Its concrete position.
    pub steps: Vec<Step>,
    /// Its value.
    pub value: &'v Value,
}

/// Every member of `set` present in `v`, in the set's order. Lists are indexed once per list
/// when many of their items are wanted, so the cost is linear in `v` and `set`.
pub(crate) fn resolve_set<'v>(v: &'v Value, set: &Set) -> Vec<Resolved<'v>> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    let mut steps = Vec::new();
    walk(v, set, &mut path, &mut steps, &mut out);
    out
}

/// Many lookups in one list: an ordered index from item key to position.
const INDEX_THRESHOLD: usize = 8;

fn walk<'v>(v: &'v Value, set: &Set, path: &mut Vec<PathElement>, steps: &mut Vec<Step>, out: &mut Vec<Resolved<'v>>) {
    let wanted = set.members().len() + set.children().len();
    let index = match v {
        Value::Array(items) if wanted > INDEX_THRESHOLD => Some(list_index(items, set)),
        _ => None,
    };
    let find = |pe: &PathElement| -> Option<(Step, &'v Value)> {
        if let (Some(ix), Value::Array(items)) = (&index, v) {
            if !matches!(pe, PathElement::Index(_)) {
                if let Some(&i) = ix.get(pe) {
                    return Some((Step::Index(i), &items[i]));
                }
                // Items omitting defaulted key fields are not indexed: found by a scan.
            }
        }
        child(v, pe)
    };
    for pe in set.members() {
        if let Some((step, c)) = find(pe) {
            path.push(pe.clone());
            steps.push(step);
            out.push(Resolved { path: Path::from(path.clone()), steps: steps.clone(), value: c });
            path.pop();
            steps.pop();
        }
    }
    for (pe, sub) in set.children() {
        if let Some((step, c)) = find(pe) {
            path.push(pe.clone());
            steps.push(step);
            walk(c, sub, path, steps, out);
            path.pop();
            steps.pop();
        }
    }
}

/// Positions of the items of a list by the kind of key the set uses for them.
fn list_index(items: &[Value], set: &Set) -> BTreeMap<PathElement, usize> {
    let sample = set.members().iter().chain(set.children().iter().map(|(pe, _)| pe)).find(|pe| !matches!(pe, PathElement::Index(_)));
    let mut ix = BTreeMap::new();
    match sample {
        Some(PathElement::Key(fields)) => {
            let names: Vec<&Name> = fields.iter().map(|(n, _)| n).collect();
            for (i, item) in items.iter().enumerate() {
                if let Value::Object(m) = item {
                    let key: Option<Vec<(Name, Value)>> = names.iter().map(|n| m.get(&***n).map(|v| (Name::clone(n), v.clone()))).collect();
                    if let Some(key) = key {
                        ix.entry(PathElement::key(key)).or_insert(i);
                    }
                }
            }
        }
        Some(PathElement::Value(_)) => {
            for (i, item) in items.iter().enumerate() {
                ix.entry(PathElement::Value(item.clone())).or_insert(i);
            }
        }
        _ => {}
    }
    ix
}

/// The value at concrete steps, mutably.
pub(crate) fn at_steps_mut<'v>(v: &'v mut Value, steps: &[Step]) -> Option<&'v mut Value> {
    let mut cur = v;
    for s in steps {
        cur = match (cur, s) {
            (Value::Object(m), Step::Field(n)) => m.get_mut(n)?,
            (Value::Array(a), Step::Index(i)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_values_by_key_value_and_index() {
        let v = json!({"spec": {"ports": [{"port": 80, "name": "a"}, {"port": 443, "name": "b"}], "tags": ["x", "y"], "args": ["p", "q"]}});
        let p = Path::from(vec![
            PathElement::field("spec"),
            PathElement::field("ports"),
            PathElement::key(vec![("port".into(), json!(443.0))]),
            PathElement::field("name"),
        ]);
        assert_eq!(value_at(&v, &p), Some(&json!("b")));
        let p = Path::from(vec![PathElement::field("spec"), PathElement::field("tags"), PathElement::Value(json!("y"))]);
        assert_eq!(value_at(&v, &p), Some(&json!("y")));
        let p = Path::from(vec![PathElement::field("spec"), PathElement::field("args"), PathElement::Index(1)]);
        assert_eq!(value_at(&v, &p), Some(&json!("q")));
        let p = Path::from(vec![PathElement::field("spec"), PathElement::field("args"), PathElement::Index(9)]);
        assert_eq!(value_at(&v, &p), None);
    }

    #[test]
    fn resolving_many_items_uses_the_index_and_agrees_with_lookups() {
        let items: Vec<Value> = (0..50).map(|i| json!({"k": i, "v": i * 2})).collect();
        let v = json!({"l": items});
        let mut set = Set::new();
        let mut paths = Vec::new();
        for i in (0..50).step_by(3) {
            let p = Path::from(vec![PathElement::field("l"), PathElement::key(vec![("k".into(), json!(i))]), PathElement::field("v")]);
            set.insert(&p);
            paths.push(p);
        }
        let got = resolve_set(&v, &set);
        assert_eq!(got.len(), paths.len());
        for r in &got {
            assert_eq!(Some(r.value), value_at(&v, &r.path));
            let Step::Index(i) = r.steps[1] else { panic!("list step") };
            assert_eq!(r.value, &json!(i * 2));
        }
    }

    #[test]
    fn key_fields_with_defaults_match_items_that_omit_them() {
        let v = json!({"ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}]});
        let tcp = Path::from(vec![
            PathElement::field("ports"),
            PathElement::key(vec![("containerPort".into(), json!(80)), ("protocol".into(), json!("TCP"))]),
        ]);
        let udp = Path::from(vec![
            PathElement::field("ports"),
            PathElement::key(vec![("containerPort".into(), json!(80)), ("protocol".into(), json!("UDP"))]),
        ]);
        assert_eq!(value_at(&v, &tcp), Some(&json!({"containerPort": 80})));
        assert_eq!(value_at(&v, &udp), Some(&json!({"containerPort": 80, "protocol": "UDP"})));
    }

    #[test]
    fn prefix_matching_respects_element_boundaries() {
        assert!(path_matches(".spec.replicas", ".spec"));
        assert!(path_matches(".spec.ports[port=80]", ".spec.ports"));
        assert!(path_matches(".spec", ".spec"));
        assert!(!path_matches(".specification", ".spec"));
        assert!(path_matches(".anything", ""));
    }
}
