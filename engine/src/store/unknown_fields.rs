//! Fields a write sets that its type's schema does not declare, treated as the write's
//! [`FieldValidation`] says (kube-apiserver's `fieldValidation`).
//!
//! The schema's validation runs in the field manager's walk and stops at the first undeclared
//! field of a map. A write whose validation finds one is not refused at once when the options
//! allow otherwise: one walk ([`prune_undeclared`]) finds and removes every undeclared field of
//! its input, and the write is planned once more without them. A write with no undeclared
//! field (nearly every one) pays nothing for this.

use super::options::FieldValidation;
use super::types::Registered;
use crate::typed::prune_undeclared;
use crate::Error;
use serde_json::Value;

/// The schema validation's message for a field its type does not declare.
const UNDECLARED: &str = "field not declared in schema";

/// Whether `e` is a validation failure that names an undeclared field.
pub(super) fn found(e: &Error) -> bool {
    matches!(e, Error::Invalid(errs) if errs.0.iter().any(|x| x.message == UNDECLARED))
}

/// What a write does after its validation failed with `e` ([`found`]) on `input`: with a mode,
/// the input without any undeclared field and the warnings to show; `Strict` refuses with every
/// such field named; no mode keeps `e`.
///
/// # Errors
/// `e` without a mode, or when nothing could be removed; 400 `strict decoding error` for
/// `Strict`.
pub(super) fn pruned(t: &Registered, mode: Option<FieldValidation>, input: &Value, e: Error) -> Result<(Value, Vec<String>), Error> {
    let Some(mode) = mode else { return Err(e) };
    let mut out = input.clone();
    let paths = prune_undeclared(t.schema, t.root, &mut out);
    if paths.is_empty() {
        return Err(e);
    }
    let messages = paths.iter().map(|p| format!("unknown field {:?}", p.trim_start_matches('.'))).collect::<Vec<_>>();
    match mode {
        FieldValidation::Strict => {
            let kind = &t.spec.kind;
            let version = &t.spec.version;
            Err(Error::BadRequest(format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
                messages.join(", ")
            )))
        }
        FieldValidation::Warn => Ok((out, messages)),
        FieldValidation::Ignore => Ok((out, Vec::new())),
    }
}
