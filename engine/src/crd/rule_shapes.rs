//! The shape of a schema node's CEL rules (`x-kubernetes-validations`) as apiextensions checks
//! it before compiling them: a rule, a one-line message, a supported reason, a one-line
//! field path.

use super::validation::quoted;
use crate::typed::ValidationError;
use serde_json::{Map, Value};

/// The reasons a rule may give.
const REASONS: [&str; 4] = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];

fn err(out: &mut Vec<ValidationError>, path: String, message: String) {
    out.push(ValidationError { path, message });
}

/// The shape problems of the rules of the node `m` at `path`; none when it has no rules.
pub(crate) fn check(m: &Map<String, Value>, path: &str, out: &mut Vec<ValidationError>) {
    let Some(Value::Array(rules)) = m.get("x-kubernetes-validations") else { return };
    for (i, r) in rules.iter().enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let (rule, message, expr, field_path) = (s("rule"), s("message"), s("messageExpression"), s("fieldPath"));
        let newline = |x: &str| x.contains('\n') || x.contains('\r');
        if rule.trim().is_empty() {
            err(out, format!("{at}.rule"), "Required value: rule is not specified".into());
        } else if !message.is_empty() && message.trim().is_empty() {
            err(out, format!("{at}.message"), format!("Invalid value: {}: must be non-empty if specified", quoted(message)));
        } else if newline(message.trim()) {
            err(out, format!("{at}.message"), format!("Invalid value: {}: must not contain line breaks", quoted(message)));
        } else if newline(rule.trim()) && message.trim().is_empty() {
            err(out, format!("{at}.message"), "Required value: message must be specified if rule contains line breaks".into());
        }
        if !expr.is_empty() && expr.trim().is_empty() {
            err(out, format!("{at}.messageExpression"), "Required value: messageExpression must be non-empty if specified".into());
        }
        if let Some(reason) = r.get("reason").and_then(Value::as_str) {
            if !REASONS.contains(&reason) {
                let list = REASONS.iter().map(|x| format!("\"{x}\"")).collect::<Vec<_>>().join(", ");
                err(out, format!("{at}.reason"), format!("Unsupported value: {}: supported values: {list}", quoted(reason)));
            }
        }
        if !field_path.is_empty() && field_path.trim().is_empty() {
            err(out, format!("{at}.fieldPath"), format!("Invalid value: {}: must be non-empty if specified", quoted(field_path)));
        }
        if newline(field_path) {
            err(out, format!("{at}.fieldPath"), format!("Invalid value: {}: must not contain line breaks", quoted(field_path)));
        }
    }
}
