//! A rule's fields as the CRD carries them, their checks, and kube-apiserver's wording of errors.

use serde_json::Value;

use super::Reason;
use crate::typed::ValidationError;

/// One entry of `x-kubernetes-validations`, read leniently (a wrong JSON type reads as absent).
pub(crate) struct ParsedRule {
    pub rule: String,
    pub message: Option<String>,
    pub message_expression: Option<String>,
    pub reason_text: Option<String>,
    pub reason: Reason,
    pub field_path: Option<String>,
    pub normalized_field_path: Option<String>,
    pub optional_old_self: bool,
    pub optional_old_self_set: bool,
}

fn string(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

const REASONS: [&str; 4] = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];

impl ParsedRule {
    pub(crate) fn from_json(v: &Value) -> ParsedRule {
        let reason_text = string(v, "reason");
        let reason = match reason_text.as_deref() {
            Some("FieldValueForbidden") => Reason::Forbidden,
            Some("FieldValueRequired") => Reason::Required,
            Some("FieldValueDuplicate") => Reason::Duplicate,
            _ => Reason::Invalid,
        };
        let optional = v.get("optionalOldSelf").and_then(Value::as_bool);
        ParsedRule {
            rule: string(v, "rule").unwrap_or_default(),
            message: string(v, "message"),
            message_expression: string(v, "messageExpression"),
            reason_text,
            reason,
            field_path: string(v, "fieldPath"),
            normalized_field_path: None,
            optional_old_self: optional.unwrap_or(false),
            optional_old_self_set: optional.is_some(),
        }
    }

    /// kube-apiserver's checks of the rule's fields (its "schema errors": when any, no rule of
    /// the node is compiled). `at`: `…x-kubernetes-validations[i]`. Also normalises `fieldPath`.
    pub(crate) fn field_errors(&mut self, schema: &Value, at: &str) -> Vec<ValidationError> {
        let mut errs = Vec::new();
        let e = |field: &str, message: String| ValidationError { path: format!("{at}.{field}"), message };
        let rule = self.rule.trim();
        let message = self.message.as_deref().unwrap_or("");
        let trimmed_msg = message.trim();
        if rule.is_empty() {
            errs.push(e("rule", "Required value: rule is not specified".into()));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            errs.push(e("message", format!("Invalid value: {}: message must be non-empty if specified", go_quote(message))));
        } else if has_newlines(trimmed_msg) {
            errs.push(e("message", format!("Invalid value: {}: message must not contain line breaks", go_quote(message))));
        } else if has_newlines(rule) && trimmed_msg.is_empty() {
            errs.push(e("message", "Required value: message must be specified if rule contains line breaks".into()));
        }
        if let Some(me) = &self.message_expression {
            if !me.is_empty() && me.trim().is_empty() {
                errs.push(e("messageExpression", "Required value: messageExpression must be non-empty if specified".into()));
            }
        }
        if let Some(reason) = &self.reason_text {
            if !REASONS.contains(&reason.as_str()) {
                let supported: Vec<String> = REASONS.iter().map(|r| go_quote(r)).collect();
                errs.push(e("reason", format!("Unsupported value: {}: supported values: {}", go_quote(reason), supported.join(", "))));
            }
        }
        if let Some(fp) = &self.field_path {
            if !fp.is_empty() && fp.trim().is_empty() {
                errs.push(e("fieldPath", format!("Invalid value: {}: fieldPath must be non-empty if specified", go_quote(fp))));
            }
            if has_newlines(fp) {
                errs.push(e("fieldPath", format!("Invalid value: {}: fieldPath must not contain line breaks", go_quote(fp))));
            }
            if !fp.is_empty() {
                match super::field_path::normalize(fp, schema) {
                    Ok(n) => self.normalized_field_path = Some(n).filter(|n| !n.is_empty()),
                    Err(_) => errs.push(e("fieldPath", format!("Invalid value: {}: fieldPath must be a valid path", go_quote(fp)))),
                }
            }
        }
        errs
    }
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// A string as Go's `%q` writes it.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The rule as kube-apiserver prints the bad value of a compile error (Go's `%#v` of its
/// internal `apiextensions.ValidationRule`; a set pointer is shown as `(…)(0x0)`-style address,
/// Go's being a heap address).
pub(crate) fn rule_struct(r: &ParsedRule) -> String {
    let reason = if r.reason_text.is_some() {
        "(*apiextensions.FieldValueErrorReason)(0xc000000000)"
    } else {
        "(*apiextensions.FieldValueErrorReason)(nil)"
    };
    let optional = if r.optional_old_self_set { "(*bool)(0xc000000000)" } else { "(*bool)(nil)" };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
        go_quote(&r.rule),
        go_quote(r.message.as_deref().unwrap_or("")),
        go_quote(r.message_expression.as_deref().unwrap_or("")),
        go_quote(r.field_path.as_deref().unwrap_or("")),
    )
}

/// The 1-based line and column (in characters) of byte offset `offset` of `source`.
pub(crate) fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let mut line = 1;
    let mut line_start = 0;
    for (i, c) in source.char_indices() {
        if i >= offset {
            break;
        }
        if c == '\n' {
            line += 1;
            line_start = i + 1;
        }
    }
    let col = source.get(line_start..offset).map_or(0, |s| s.chars().count()) + 1;
    (line, col)
}

/// cel-go's issue format: `ERROR: <input>:L:C: msg` and the line with a caret under the column.
pub(crate) fn located(source: &str, line: usize, col: usize, msg: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{col}: {msg}");
    if let Some(text) = source.lines().nth(line.saturating_sub(1)) {
        out.push_str(&format!("\n | {text}\n | {}^", ".".repeat(col.saturating_sub(1))));
    }
    out
}

/// A cel-rust evaluation error in cel-go's words where they differ.
pub(crate) fn execution_error(e: &cel::ExecutionError) -> String {
    use cel::ExecutionError as E;
    match e {
        E::NoSuchKey(k) => format!("no such key: {k}"),
        E::DivisionByZero(_) => "division by zero".into(),
        E::RemainderByZero(_) => "modulus by zero".into(),
        E::Overflow(..) => "integer overflow".into(),
        E::IndexOutOfBounds(i) => format!("index out of bounds: {}", value_text(i)),
        E::FunctionError { function, message } => format!("{function}: {message}"),
        E::UndeclaredReference(r) => format!("no such attribute: {r}"),
        other => other.to_string(),
    }
}

fn value_text(v: &cel::Value) -> String {
    match v {
        cel::Value::Int(i) => i.to_string(),
        cel::Value::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    }
}

/// How kube-apiserver's field errors print a value: numbers and booleans plainly, strings
/// quoted, anything else as JSON.
pub(crate) fn shown(v: &Value) -> String {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(|i| i.to_string())
            .or_else(|| n.as_u64().map(|u| u.to_string()))
            .unwrap_or_else(|| go_float(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => go_quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Null => "\"null\"".into(),
        other => other.to_string(),
    }
}

/// A float as Go's `%v` prints it.
pub(crate) fn go_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{}", f as i64)
    } else if f.abs() >= 1e21 || (f != 0.0 && f.abs() < 1e-4) {
        let s = format!("{f:e}");
        // Go writes the exponent with a sign and at least two digits: 1e+21, 1e-05.
        match s.split_once('e') {
            Some((m, e)) => {
                let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
                format!("{m}e{sign}{digits:0>2}")
            }
            None => s,
        }
    } else {
        format!("{f}")
    }
}
