//! Checks of names and object shape, with the apiserver's messages.

use crate::typed::{ValidationError, ValidationErrors};
use crate::{Error, Result};
use serde_json::Value;

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// A 422 Invalid error about one field.
pub(crate) fn invalid(path: &str, message: &str) -> Error {
    Error::Invalid(ValidationErrors(vec![ValidationError { path: path.into(), message: message.into() }]))
}

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= 63
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

/// An object name: a DNS subdomain (RFC 1123) of at most 253 characters.
pub(crate) fn name(name: &str) -> Result<()> {
    if name.len() > 253 {
        return Err(invalid("metadata.name", &format!("Invalid value: {name:?}: must be no more than 253 characters")));
    }
    if !name.split('.').all(is_label) {
        return Err(invalid("metadata.name", &format!("Invalid value: {name:?}: {DNS1123_SUBDOMAIN_MSG}")));
    }
    Ok(())
}

/// A namespace name: a DNS label (RFC 1123) of at most 63 characters.
pub(crate) fn namespace(ns: &str) -> Result<()> {
    if ns.len() > 63 {
        return Err(invalid("metadata.namespace", &format!("Invalid value: {ns:?}: must be no more than 63 characters")));
    }
    if !is_label(ns) {
        return Err(invalid("metadata.namespace", &format!("Invalid value: {ns:?}: {DNS1123_LABEL_MSG}")));
    }
    Ok(())
}

/// `prefix` and five random characters of the apiserver's alphabet (no vowels, no look-alikes).
pub(crate) fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut out = String::with_capacity(prefix.len() + 5);
    // The apiserver cuts the prefix so that the name fits 63 characters.
    out.push_str(prefix.get(..prefix.len().min(58)).unwrap_or(prefix));
    for b in bytes.iter().take(5) {
        out.push(char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]));
    }
    out
}

/// Rejects values nested deeper than `max` objects and arrays.
pub(crate) fn depth(v: &Value, max: usize) -> Result<()> {
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Object(m) => Box::new(m.values()),
            Value::Array(a) => Box::new(a.iter()),
            _ => continue,
        };
        if d > max {
            return Err(Error::BadRequest(format!("object nesting exceeds the limit of {max} levels")));
        }
        stack.extend(children.map(|c| (c, d + 1)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        assert!(name("a.b-c.d9").is_ok());
        for bad in ["", "A", "-a", "a-", "a..b", "a_b", &"a".repeat(254)] {
            assert!(matches!(name(bad), Err(Error::Invalid(_))), "{bad}");
        }
        assert!(namespace("kube-system").is_ok());
        assert!(namespace("a.b").is_err());
    }

    #[test]
    fn nesting() {
        let v = serde_json::json!({"a": {"b": [1]}});
        assert!(depth(&v, 3).is_ok());
        assert!(depth(&v, 2).is_err());
    }
}
