//! fieldstore's engine: schemas and Server-Side Apply.
//!
//! - [`schema`]: the type model and its loaders;
//! - [`typed`]: validation, field sets, merge and comparison of typed values;
//! - [`merge`]: the [`Updater`] (apply and update over managed fields) and [`Conflicts`];
//! - [`replay`]: the scenario replayer that checks agreement with structured-merge-diff.
#![deny(missing_docs)]

mod error;
mod status;
pub mod fieldmanager;
pub mod history;
pub mod merge;
pub mod patch;
pub mod replay;
pub mod schema;
#[cfg(feature = "store")]
pub mod store;
pub mod typed;

pub use error::{Error, Reason, Result};
pub use fieldmanager::FieldManager;
pub use merge::{Applied, Conflict, Conflicts, ManagedFields, ManagerKey, Operation, Updater, VersionedSet};
pub use schema::{Schema, TypeRef};

use fieldstore_codec::{value, Path, PathElement};
use serde_json::Value;

/// The value at `path` inside `v`, if there is one: fields by name, map-list items by key,
/// set items by value, other list items by position.
pub fn value_at<'v>(v: &'v Value, path: &Path) -> Option<&'v Value> {
    let mut cur = v;
    for pe in path.elements() {
        cur = match (pe, cur) {
            (PathElement::FieldName(n), Value::Object(m)) => m.get(n)?,
            (PathElement::Key(k), Value::Array(a)) => a.iter().find(|item| {
                k.iter().all(|(name, kv)| item.get(name).is_some_and(|iv| value::equals(iv, kv)))
            })?,
            (PathElement::Value(x), Value::Array(a)) => a.iter().find(|item| value::equals(item, x))?,
            (PathElement::Index(i), Value::Array(a)) => a.get(usize::try_from(*i).ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}
