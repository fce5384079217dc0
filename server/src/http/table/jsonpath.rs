//! The cells of a custom resource's printer columns: each column's JSONPath evaluated on the
//! object, the first result converted by the column's type, as apiextensions' table convertor
//! does (`string`: the value as text; `integer`, `number`, `boolean`: the JSON value when it
//! has that type; `date`: the age of the timestamp; anything missing: `null`).
//!
//! The paths CRDs use are simple: `.spec.replicas`, `.metadata.labels.app`,
//! `.status.conditions[0].type`, `.spec.items[*].name` (first match),
//! `.status.conditions[?(@.type=="Ready")].status` (first match), `['dotted.key']`.

use super::duration;
use super::Column;
use serde_json::Value;

/// The cells of one object.
pub(super) fn cells(columns: &[(Column, String)], obj: &Value, now: i64) -> Vec<Value> {
    columns
        .iter()
        .map(|(c, path)| {
            let Some(v) = first(obj, path) else { return Value::Null };
            match (c.kind, v) {
                ("string", Value::String(s)) => Value::String(s.clone()),
                ("string", Value::Null) => Value::Null,
                ("string", other) => Value::String(other.to_string()),
                ("integer", Value::Number(n)) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).map_or(Value::Null, Value::from),
                ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
                ("boolean", Value::Bool(b)) => Value::Bool(*b),
                ("date", Value::String(s)) => {
                    if fieldstore_codec::rfc3339::parse(s).is_some() {
                        Value::String(duration::since(Some(s), now))
                    } else {
                        Value::String("<invalid>".into())
                    }
                }
                _ => Value::Null,
            }
        })
        .collect()
}

/// The first value `path` selects in `obj`, if any.
pub(super) fn first<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim();
    let path = path.strip_prefix('{').and_then(|p| p.strip_suffix('}')).unwrap_or(path);
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    let mut current = vec![obj];
    while !rest.is_empty() {
        let (step, after) = next_step(rest)?;
        rest = after;
        current = current.into_iter().flat_map(|v| apply(v, &step)).collect();
        if current.is_empty() {
            return None;
        }
    }
    current.into_iter().next()
}

/// One step of a path.
#[derive(Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    /// `[?(@.a.b=="v")]`: items whose `a.b` equals `v` (a JSON literal or a bare word).
    Filter(String, Value),
}

fn next_step(s: &str) -> Option<(Step, &str)> {
    if let Some(r) = s.strip_prefix('.') {
        let end = r.find(['.', '[']).unwrap_or(r.len());
        let (name, after) = r.split_at(end);
        if name.is_empty() {
            return next_step(after);
        }
        return Some((Step::Field(name.to_string()), after));
    }
    let r = s.strip_prefix('[')?;
    let end = r.find(']')?;
    let (inner, after) = (&r[..end], &r[end + 1..]);
    let inner = inner.trim();
    let step = if inner == "*" {
        Step::All
    } else if let Some(f) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        let (lhs, rhs) = f.split_once("==")?;
        let field = lhs.trim().strip_prefix("@.")?.to_string();
        let rhs = rhs.trim();
        let literal = serde_json::from_str(rhs).ok().or_else(|| {
            let unquoted = rhs.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')).unwrap_or(rhs);
            Some(Value::String(unquoted.to_string()))
        })?;
        Step::Filter(field, literal)
    } else if let Some(q) = inner.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')) {
        Step::Field(q.to_string())
    } else if let Some(q) = inner.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
        Step::Field(q.to_string())
    } else {
        Step::Index(inner.parse().ok()?)
    };
    Some((step, after))
}

fn apply<'a>(v: &'a Value, step: &Step) -> Vec<&'a Value> {
    match step {
        Step::Field(name) => v.get(name.as_str()).into_iter().collect(),
        Step::Index(i) => v.get(*i).into_iter().collect(),
        Step::All => match v {
            Value::Array(a) => a.iter().collect(),
            Value::Object(o) => o.values().collect(),
            _ => Vec::new(),
        },
        Step::Filter(field, want) => {
            v.as_array().into_iter().flatten().filter(|item| field.split('.').try_fold(*item, |cur, f| cur.get(f)) == Some(want)).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn simple_paths_select_the_first_match() {
        let o = json!({"spec": {"replicas": 3, "items": [{"name": "a"}, {"name": "b"}]},
            "metadata": {"labels": {"app.kubernetes.io/name": "web"}},
            "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(first(&o, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(first(&o, "{.spec.replicas}"), Some(&json!(3)));
        assert_eq!(first(&o, ".spec.items[1].name"), Some(&json!("b")));
        assert_eq!(first(&o, ".spec.items[*].name"), Some(&json!("a")));
        assert_eq!(first(&o, ".status.conditions[?(@.type==\"Ready\")].status"), Some(&json!("True")));
        assert_eq!(first(&o, ".metadata.labels['app.kubernetes.io/name']"), Some(&json!("web")));
        assert_eq!(first(&o, ".spec.missing"), None);
        assert_eq!(first(&o, ".spec.items[9]"), None);
        assert_eq!(first(&o, ".spec.items[x"), None);
    }
}
