//! The path to a schema node ([`At`]), linked through the call stack and rendered only when an
//! error names it.

use crate::Error;
use std::fmt::Write as _;

/// A schema error at `path`.
pub(super) fn err(path: &str, reason: &str) -> Error {
    Error::Schema { path: path.to_string(), reason: reason.to_string() }
}

/// One step of the path to a schema node, rendered only when an error needs it.
#[derive(Clone, Copy)]
enum Seg<'a> {
    Root(&'a str),
    Field(&'a str),
    Name(&'a str),
}

/// The path to the node being converted, as a list linked through the call stack.
#[derive(Clone, Copy)]
pub(super) struct At<'a> {
    parent: Option<&'a At<'a>>,
    seg: Seg<'a>,
}

impl<'a> At<'a> {
    /// The root, named `path` (empty: unnamed).
    pub(super) fn root(path: &'a str) -> Self {
        At { parent: None, seg: Seg::Root(path) }
    }

    /// The node's field or key `name`.
    pub(super) fn field<'b>(&'b self, name: &'b str) -> At<'b> {
        At { parent: Some(self), seg: Seg::Field(name) }
    }

    /// The node's named entry `name` (a definition), rendered `[name]`.
    pub(super) fn name<'b>(&'b self, name: &'b str) -> At<'b> {
        At { parent: Some(self), seg: Seg::Name(name) }
    }

    /// The path as text: `root.field[name]…`, `(root)` when empty.
    pub(super) fn render(&self) -> String {
        let mut segs = Vec::new();
        let mut cur = Some(self);
        while let Some(at) = cur {
            segs.push(at.seg);
            cur = at.parent;
        }
        let mut out = String::new();
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root(r) => out.push_str(r),
                Seg::Field(f) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(f);
                }
                Seg::Name(n) => {
                    let _ = write!(out, "[{n}]");
                }
            }
        }
        if out.is_empty() {
            out.push_str("(root)");
        }
        out
    }

    /// A schema error at this node.
    pub(super) fn err(&self, reason: impl Into<String>) -> Error {
        Error::Schema { path: self.render(), reason: reason.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_fields_names_and_indexes() {
        let root = At::root("definitions");
        let def = root.name("io.k8s.A");
        let f = def.field("properties");
        let g = f.field("x");
        assert_eq!(g.render(), "definitions[io.k8s.A].properties.x");
        let bare = At::root("");
        assert_eq!(bare.field("a").render(), "a");
        assert_eq!(bare.render(), "(root)");
    }
}
