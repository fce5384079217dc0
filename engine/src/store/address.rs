//! Where a verb goes: one object ([`ObjectKey`]), the objects of a resource in a namespace
//! ([`Collection`]), and a revision of the store ([`Revision`]).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::num::ParseIntError;
use std::str::FromStr;

/// One object: its resource (as a client names it: plural, `plural.group`, kind, short name),
/// namespace (none for cluster-scoped objects) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    /// The resource.
    pub resource: String,
    /// The namespace.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// The object `name` of `resource` in `namespace` (an empty namespace is none).
    pub fn new(resource: impl Into<String>, namespace: Option<&str>, name: impl Into<String>) -> Self {
        ObjectKey { resource: resource.into(), namespace: namespace.filter(|n| !n.is_empty()).map(str::to_string), name: name.into() }
    }

    /// The namespace, as a borrowed string.
    #[must_use]
    pub fn ns(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The collection the object is in: its resource in its namespace.
    #[must_use]
    pub fn collection(&self) -> Collection {
        Collection { resource: self.resource.clone(), namespace: self.namespace.clone() }
    }
}

/// The objects of a resource in one namespace, or in all (or cluster-scoped ones).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Collection {
    /// The resource, as a client names it.
    pub resource: String,
    /// The namespace; none for all of them.
    pub namespace: Option<String>,
}

impl Collection {
    /// The objects of `resource` in `namespace` (an empty namespace is none).
    pub fn new(resource: impl Into<String>, namespace: Option<&str>) -> Self {
        Collection { resource: resource.into(), namespace: namespace.filter(|n| !n.is_empty()).map(str::to_string) }
    }

    /// The namespace, as a borrowed string.
    #[must_use]
    pub fn ns(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The object `name` of this collection.
    pub fn key(&self, name: impl Into<String>) -> ObjectKey {
        ObjectKey { resource: self.resource.clone(), namespace: self.namespace.clone(), name: name.into() }
    }
}

/// A revision of the store: every write takes the next one of a single gap-free counter, and it
/// is the written object's `metadata.resourceVersion`. Displayed and serialized as the bare
/// number, as Kubernetes writes a resourceVersion (in a string field of an object) and as the
/// store's own replies write a revision (a JSON number).
///
/// A client's resourceVersion stays a string until the store parses it: the options that carry
/// one ([`GetOptions`](super::GetOptions), [`ListOptions`](super::ListOptions),
/// [`WatchOptions`](super::WatchOptions), [`DeleteOptions`](super::DeleteOptions)) keep the
/// wire form, so that a malformed one fails with Kubernetes' messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Revision(pub u64);

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Reads the revision of an object's `metadata.resourceVersion` (decimal digits), as the store
/// wrote it.
impl FromStr for Revision {
    type Err = ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(Revision)
    }
}

impl From<u64> for Revision {
    fn from(revision: u64) -> Self {
        Revision(revision)
    }
}

impl From<Revision> for u64 {
    fn from(revision: Revision) -> Self {
        revision.0
    }
}
