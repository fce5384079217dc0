//! Where in an object a transcoding error is: a JSON path such as
//! `.spec.containers[0].ports[1].containerPort`, built while the error unwinds (nothing is
//! recorded on the success path).

/// One step of a path.
#[derive(Debug)]
pub(crate) enum Seg {
    /// An object member (a field's JSON name, or its proto name where JSON has none).
    Field(&'static str),
    /// An array element.
    Index(usize),
    /// A map entry.
    Key(String),
}

/// An error with the path to where it happened, innermost step first.
#[derive(Debug)]
pub(crate) struct PathError {
    reversed: Vec<Seg>,
    pub(crate) reason: String,
}

impl PathError {
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        Self { reversed: Vec::new(), reason: reason.into() }
    }

    /// The same error one step further out.
    #[must_use]
    pub(crate) fn at(mut self, seg: Seg) -> Self {
        self.reversed.push(seg);
        self
    }

    /// The path, outermost step first; `.` for the object itself.
    pub(crate) fn path(&self) -> String {
        if self.reversed.is_empty() {
            return ".".into();
        }
        let mut path = String::new();
        for seg in self.reversed.iter().rev() {
            match seg {
                Seg::Field(name) => {
                    path.push('.');
                    path.push_str(name);
                }
                Seg::Index(i) => path.push_str(&format!("[{i}]")),
                Seg::Key(key) => path.push_str(&format!("[{}]", serde_json::Value::String(key.clone()))),
            }
        }
        path
    }
}

impl From<String> for PathError {
    fn from(reason: String) -> Self {
        Self::new(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_outermost_first() {
        let e = PathError::new("x")
            .at(Seg::Field("containerPort"))
            .at(Seg::Index(1))
            .at(Seg::Field("ports"))
            .at(Seg::Index(0))
            .at(Seg::Field("containers"))
            .at(Seg::Field("spec"));
        assert_eq!(e.path(), ".spec.containers[0].ports[1].containerPort");
        assert_eq!(PathError::new("x").at(Seg::Key("a\"b".into())).at(Seg::Field("labels")).path(), r#".labels["a\"b"]"#);
        assert_eq!(PathError::new("x").path(), ".");
    }
}
