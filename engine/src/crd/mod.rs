//! Custom resources as kube-apiserver serves them (apiextensions): the structural schema of a
//! CustomResourceDefinition's version, the checks of a definition itself, and what every write
//! of a custom resource goes through — defaulting, pruning of unknown fields, validation of the
//! OpenAPI v3 keywords and of the CEL rules (`x-kubernetes-validations`); and the v1 form of a
//! definition kube-apiserver stored at v1beta1.
//!
//! Pure logic over JSON values: no storage. The store calls it from its write and read paths.

pub mod cel;
pub mod defaults;
pub mod definition;
pub mod formats;
mod list_types;
pub mod naming;
pub mod prune;
mod rule_shapes;
mod rules_walk;
pub mod schema_checks;
pub mod selectable;
pub mod structural;
pub mod v1beta1;
pub mod validation;

pub use structural::Structural;
