//! YAML responses (`Accept: application/yaml`), written as kube-apiserver writes them
//! (`sigs.k8s.io/yaml` over go-yaml): keys sorted, block style, sequence items at their key's
//! indentation (`items:` then `- name: …`), empty maps and lists as `{}` and `[]`, and every
//! string YAML 1.1 would read as another type (`"y"`, `"1"`, `"2024-01-01T00:00:00Z"`, `"true"`)
//! double-quoted.
//!
//! Not `serde_yaml` (which the CLI's `-o yaml` uses): it writes YAML 1.2 and leaves `y`, `n`,
//! `on`, `off`, `yes` and timestamps plain, which YAML 1.1 readers — Go clients through
//! `sigs.k8s.io/yaml`, kubectl — read back as booleans and times, not the strings they were.

use serde_json::Value;

/// `v` as a YAML document.
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => map(m, 0, &mut out),
        Value::Array(a) if !a.is_empty() => list(a, 0, &mut out),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn map(m: &serde_json::Map<String, Value>, indent: usize, out: &mut String) {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    for k in keys {
        out.push_str(&" ".repeat(indent));
        out.push_str(&string(k));
        out.push(':');
        value(&m[k.as_str()], indent, out, false);
    }
}

fn list(a: &[Value], indent: usize, out: &mut String) {
    for item in a {
        out.push_str(&" ".repeat(indent));
        out.push('-');
        value(item, indent, out, true);
    }
}

/// A value after `key:` or `-`: a scalar on the same line, a map or list below it (a list
/// item's map starts on the dash's line).
fn value(v: &Value, indent: usize, out: &mut String, item: bool) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            if item {
                // The first key on the dash's line, the others under it.
                let mut inner = String::new();
                map(m, indent + 2, &mut inner);
                out.push(' ');
                out.push_str(&inner[indent + 2..]);
            } else {
                out.push('\n');
                map(m, indent + 2, out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            if item {
                let mut inner = String::new();
                list(a, indent + 2, &mut inner);
                out.push(' ');
                out.push_str(&inner[indent + 2..]);
            } else {
                out.push('\n');
                list(a, indent, out);
            }
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
    }
}

/// A string plain when YAML (1.1 or 1.2) reads it back as that string, else double-quoted
/// (JSON's escapes are YAML's).
fn string(s: &str) -> String {
    const WORDS: [&str; 11] = ["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "="];
    let first = s.chars().next();
    let plain = first.is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '/' || (c == '.' && s.len() == 1))
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | ':'))
        && !s.ends_with(':')
        && !WORDS.contains(&s.to_ascii_lowercase().as_str());
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_as_kube_apiserver_and_reads_back() {
        let v = json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "77"}, "items": [
            {"metadata": {"name": "y", "creationTimestamp": "2026-11-27T11:03:43Z", "managedFields": [
                {"fieldsV1": {"f:data": {".": {}, "f:k": {}}}, "manager": "curl"}]}, "data": {"k": "v", "e": "", "n": "1"}}]});
        let y = to_yaml(&v);
        assert_eq!(
            y,
            "apiVersion: v1\nitems:\n- data:\n    e: \"\"\n    k: v\n    \"n\": \"1\"\n  metadata:\n    creationTimestamp: \"2026-11-27T11:03:43Z\"\n    managedFields:\n    - fieldsV1:\n        f:data:\n          .: {}\n          f:k: {}\n      manager: curl\n    name: \"y\"\nkind: ConfigMapList\nmetadata:\n  resourceVersion: \"77\"\n"
        );
        let back: Value = serde_yaml::from_str(&y).unwrap();
        assert_eq!(back, v);
        let nested = json!({"a": [[1, "x"], [], {}], "b": "multi\nline: yes"});
        assert_eq!(serde_yaml::from_str::<Value>(&to_yaml(&nested)).unwrap(), nested);
    }
}
