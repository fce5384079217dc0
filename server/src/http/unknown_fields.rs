//! Fields a body sets that its type's schema does not declare: found in the engine's
//! validation errors (`field not declared in schema` at `.spec.containers[name="a"].x`) and
//! removed from the body, for `fieldValidation=Ignore|Warn`.

use fieldstore_engine::typed::ValidationErrors;
use serde_json::Value;

/// The engine's message for an undeclared field.
const UNDECLARED: &str = "field not declared in schema";

/// The paths of undeclared fields among validation errors.
pub(crate) fn paths(errs: &ValidationErrors) -> Vec<String> {
    errs.0.iter().filter(|e| e.message == UNDECLARED).map(|e| e.path.clone()).collect()
}

/// One step of a path.
#[derive(Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    /// List item by key fields (`[name="a",port=80]`).
    Keys(Vec<(String, Value)>),
    /// Set item by value (`[="a"]`).
    Item(Value),
}

fn parse(path: &str) -> Option<Vec<Step>> {
    let b = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b.get(i)? {
            b'.' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b.get(j).is_some_and(|c| *c != b'.' && *c != b'[') {
                    j += 1;
                }
                out.push(Step::Field(path.get(start..j)?.to_string()));
                i = j;
            }
            b'[' => {
                // To the matching `]` outside JSON strings.
                let start = i + 1;
                let (mut j, mut quoted, mut escaped) = (start, false, false);
                while j < b.len() {
                    let c = *b.get(j)?;
                    match (quoted, escaped, c) {
                        (true, true, _) => escaped = false,
                        (true, false, b'\\') => escaped = true,
                        (_, _, b'"') => quoted = !quoted,
                        (false, _, b']') => break,
                        _ => {}
                    }
                    j += 1;
                }
                out.push(selector(path.get(start..j)?)?);
                i = j + 1;
            }
            _ => return None,
        }
    }
    Some(out)
}

fn selector(s: &str) -> Option<Step> {
    if let Ok(n) = s.parse::<usize>() {
        return Some(Step::Index(n));
    }
    if let Some(v) = s.strip_prefix('=') {
        return serde_json::from_str(v).ok().map(Step::Item);
    }
    // `k=v,k2=v2` with JSON values: split on commas outside strings.
    let mut keys = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    let b = s.as_bytes();
    for j in 0..=b.len() {
        let c = b.get(j).copied().unwrap_or(b',');
        match (quoted, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (_, _, b'"') => quoted = !quoted,
            (false, _, b',') => {
                let (k, v) = s.get(start..j)?.split_once('=')?;
                keys.push((k.to_string(), serde_json::from_str(v).ok()?));
                start = j + 1;
            }
            _ => {}
        }
    }
    Some(Step::Keys(keys))
}

/// Removes the field at `path` from `v` (nothing when the path does not lead there).
pub(crate) fn remove(v: &mut Value, path: &str) {
    let Some(steps) = parse(path) else { return };
    let Some((Step::Field(last), parents)) = steps.split_last() else { return };
    let mut cur = v;
    for s in parents {
        let next = match (s, cur) {
            (Step::Field(f), Value::Object(m)) => m.get_mut(f),
            (Step::Index(i), Value::Array(a)) => a.get_mut(*i),
            (Step::Keys(keys), Value::Array(a)) => a.iter_mut().find(|item| keys.iter().all(|(k, kv)| item.get(k) == Some(kv))),
            (Step::Item(x), Value::Array(a)) => a.iter_mut().find(|item| *item == x),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    if let Value::Object(m) = cur {
        m.remove(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn removes_fields_inside_keyed_lists() {
        let mut v = json!({"spec": {"x": 1, "containers": [{"name": "a", "bad": 1}, {"name": "b,]", "bad": 2}], "ports": [{"port": 80, "protocol": "TCP", "q": 1}]}});
        remove(&mut v, ".spec.x");
        remove(&mut v, ".spec.containers[name=\"b,]\"].bad");
        remove(&mut v, ".spec.ports[port=80,protocol=\"TCP\"].q");
        remove(&mut v, ".spec.containers[0].bad");
        remove(&mut v, ".nothing.here");
        assert_eq!(v, json!({"spec": {"containers": [{"name": "a"}, {"name": "b,]"}], "ports": [{"port": 80, "protocol": "TCP"}]}}));
    }
}
