//! A rule's `fieldPath`: a relative JSON path (`.a.b`, `.m['key']`, `['a.b']`) into the node's
//! schema, only through properties and map values (kube-apiserver's `ValidFieldPath`); the
//! normalised path is what an error's path gets appended (`a.b`, `m[key]`).

use serde_json::Value;

fn tokens(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &path[i..];
        if bytes[i] == b'\'' {
            // A quoted string up to the next unescaped quote (or the end).
            let mut j = 1;
            let mut end = rest.len();
            while j < rest.len() {
                if rest.as_bytes()[j] == b'\'' && rest.as_bytes()[j - 1] != b'\\' {
                    end = j + 1;
                    break;
                }
                j += 1;
            }
            out.push(&rest[..end]);
            i += end;
            continue;
        }
        match bytes[i] {
            b'.' | b'[' | b']' => {
                out.push(&rest[..1]);
                i += 1;
            }
            _ => {
                let end = rest.find(['.', '[', ']']).unwrap_or(rest.len());
                out.push(&rest[..end]);
                i += end;
            }
        }
    }
    out
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('a') => out.push('\x07'),
            Some('b') => out.push('\x08'),
            Some('f') => out.push('\x0c'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\x0b'),
            Some('\'') => out.push('\''),
            Some('\\') => out.push('\\'),
            Some(o) => return Err(format!("invalid escape char \\{o}")),
            None => out.push('\\'),
        }
    }
    Ok(out)
}

/// The normalised form of `path` if it is a valid path into `schema`; the reason otherwise.
pub(crate) fn normalize(path: &str, schema: &Value) -> Result<String, String> {
    let mut out = String::new();
    let mut node = schema;
    let toks = tokens(path);
    let mut it = toks.into_iter();
    let step = |name: &str, out: &mut String, node: &mut &Value| -> Result<(), String> {
        if let Some(props) = node.get("properties").and_then(Value::as_object) {
            let sub = props.get(name).ok_or("does not refer to a valid field")?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(name);
            *node = sub;
        } else if let Some(ap) = node.get("additionalProperties").filter(|a| a.is_object()) {
            out.push('[');
            out.push_str(name);
            out.push(']');
            *node = ap;
        } else {
            return Err("does not refer to a valid field".into());
        }
        Ok(())
    };
    while let Some(tok) = it.next() {
        match tok {
            "[" => {
                let quoted = it.next().ok_or("unexpected end of JSON path")?;
                if quoted.len() < 2 || !quoted.starts_with('\'') || !quoted.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {quoted}"));
                }
                let name = unescape(&quoted[1..quoted.len() - 1])?;
                step(&name, &mut out, &mut node)?;
                match it.next() {
                    Some("]") => {}
                    Some(other) => return Err(format!("expected ] but got {other}")),
                    None => return Err("unexpected end of JSON path".into()),
                }
            }
            "." => {
                let name = it.next().ok_or("unexpected end of JSON path")?;
                step(name, &mut out, &mut node)?;
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok(out)
}
