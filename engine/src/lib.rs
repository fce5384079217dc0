//! fieldstore's engine: schemas and Server-Side Apply.
//!
//! - [`schema`]: the type model and its loaders;
//! - [`typed`]: validation, field sets, merge and comparison of typed values;
//! - [`merge`]: the [`Updater`] (apply and update over managed fields) and [`Conflicts`];
//! - [`replay`]: the scenario replayer that checks agreement with structured-merge-diff.
#![deny(missing_docs)]

pub mod crd;
mod error;
pub mod fieldmanager;
pub mod history;
pub mod merge;
pub mod names;
pub mod patch;
pub mod replay;
pub mod schema;
pub mod status;
#[cfg(feature = "store")]
pub mod store;
pub mod typed;

pub use error::{Error, Reason, Result};
pub use fieldmanager::FieldManager;
pub use merge::{Applied, Conflict, Conflicts, ManagedFields, ManagerKey, Operation, Updater, VersionedSet};
pub use schema::{Schema, TypeRef};
pub use status::{Status, StatusCause, StatusDetails};

/// The value at a field path inside an object (see [`history::value_at`]).
pub use history::value_at;
