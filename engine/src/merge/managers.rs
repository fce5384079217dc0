//! Who owns which fields: managers and their versioned field sets.

use fieldstore_codec::Set;
use std::collections::BTreeMap;
use std::fmt;

/// How a manager wrote its fields: the codec's managedFields operation, one enum for the
/// merge, the field manager, history and the wire.
pub use fieldstore_codec::managed_fields::Operation;

/// The identity of a managedFields entry, as the apiserver builds it: the manager's name, the
/// operation, and for updates the API version (an applier is one entry whatever version it
/// used), plus the subresource written through.
///
/// Ordered by manager, then operation, then API version, then subresource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ManagerKey {
    /// The field manager's name, e.g. `kubectl`.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// For Update entries, the API version written; empty for Apply.
    pub api_version: String,
    /// The subresource written through (`status`), or empty.
    pub subresource: String,
}

impl ManagerKey {
    /// The key of an applier.
    pub fn apply(manager: impl Into<String>) -> Self {
        ManagerKey { manager: manager.into(), operation: Operation::Apply, api_version: String::new(), subresource: String::new() }
    }

    /// The key of an updater writing at `api_version`.
    pub fn update(manager: impl Into<String>, api_version: impl Into<String>) -> Self {
        ManagerKey { manager: manager.into(), operation: Operation::Update, api_version: api_version.into(), subresource: String::new() }
    }

    /// This key for writes through `subresource`.
    #[must_use]
    pub fn with_subresource(mut self, subresource: impl Into<String>) -> Self {
        self.subresource = subresource.into();
        self
    }
}

/// Prints the apiserver's manager identifier: `{"manager":"kubectl","operation":"Apply"}`.
impl fmt::Display for ManagerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::from("{");
        s.push_str(&format!("\"manager\":{}", serde_json::Value::String(self.manager.clone())));
        s.push_str(&format!(",\"operation\":\"{}\"", self.operation));
        if !self.api_version.is_empty() {
            s.push_str(&format!(",\"apiVersion\":{}", serde_json::Value::String(self.api_version.clone())));
        }
        if !self.subresource.is_empty() {
            s.push_str(&format!(",\"subresource\":{}", serde_json::Value::String(self.subresource.clone())));
        }
        s.push('}');
        f.write_str(&s)
    }
}

/// The fields one manager owns, with the API version they were written at and whether they came
/// from an apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedSet {
    /// The owned fields.
    pub set: Set,
    /// The API version the fields were written at.
    pub api_version: String,
    /// Whether the set is an applier's declared configuration.
    pub applied: bool,
}

impl VersionedSet {
    /// A versioned set from its parts.
    pub fn new(set: Set, api_version: impl Into<String>, applied: bool) -> Self {
        VersionedSet { set, api_version: api_version.into(), applied }
    }
}

/// Every manager of an object and the fields it owns.
pub type ManagedFields = BTreeMap<ManagerKey, VersionedSet>;
