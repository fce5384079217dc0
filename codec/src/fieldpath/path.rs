//! A sequence of path elements.

use super::PathElement;
use std::fmt;

/// A path from the root of an object to one of its fields, e.g.
/// `.spec.containers[name="nginx"].image`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Path(pub Vec<PathElement>);

impl Path {
    /// The empty path (the root).
    pub fn root() -> Self {
        Path(Vec::new())
    }

    /// A path of field names, e.g. `Path::fields(["spec", "replicas"])`.
    pub fn fields<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<super::Name>,
    {
        Path(names.into_iter().map(PathElement::field).collect())
    }

    /// This path extended by one element.
    #[must_use]
    pub fn child(&self, pe: PathElement) -> Self {
        let mut v = self.0.clone();
        v.push(pe);
        Path(v)
    }

    /// The elements of the path.
    pub fn elements(&self) -> &[PathElement] {
        &self.0
    }

    /// Whether the path has no elements.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `prefix` is a prefix of this path (every path has the root as prefix).
    pub fn starts_with(&self, prefix: &Path) -> bool {
        self.0.len() >= prefix.0.len() && self.0.iter().zip(&prefix.0).all(|(a, b)| a == b)
    }
}

impl From<Vec<PathElement>> for Path {
    fn from(v: Vec<PathElement>) -> Self {
        Path(v)
    }
}

/// Prints the path as Kubernetes does in conflict messages: the elements' forms concatenated.
impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            fmt::Display::fmt(pe, f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn displays_like_kubernetes() {
        let p = Path(vec![
            PathElement::field("spec"),
            PathElement::field("containers"),
            PathElement::key(vec![("name".into(), json!("nginx"))]),
            PathElement::field("image"),
        ]);
        assert_eq!(p.to_string(), r#".spec.containers[name="nginx"].image"#);
        let p = Path(vec![PathElement::field("metadata"), PathElement::field("finalizers"), PathElement::Value(json!("a"))]);
        assert_eq!(p.to_string(), r#".metadata.finalizers[="a"]"#);
        assert_eq!(Path(vec![PathElement::field("spec"), PathElement::field("args"), PathElement::Index(3)]).to_string(), ".spec.args[3]");
    }
}
