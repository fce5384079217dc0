//! The checks of a CRD version's `selectableFields`, as kube-apiserver makes them
//! (`ValidateCustomResourceSelectableFields`): each `jsonPath` is required, must be a simple
//! path (`.spec.color`, `.spec['a.b']`; no array notation) to a field the version's schema
//! declares, outside `metadata`, of type string, boolean or integer; no two name the same
//! field; at most [`MAX_SELECTABLE_FIELDS`] fields.

use crate::typed::ValidationError;
use serde_json::Value;

/// How many selectable fields a version may have.
pub const MAX_SELECTABLE_FIELDS: usize = 8;

/// The problems of the `selectableFields` of `version` (an entry of a CRD's `spec.versions`),
/// whose field path is `path` (`spec.versions[0]`).
#[must_use]
pub fn selectable_fields_errors(version: &Value, path: &str) -> Vec<ValidationError> {
    let mut errs = Vec::new();
    let Some(fields) = version.get("selectableFields").and_then(Value::as_array).filter(|f| !f.is_empty()) else {
        return errs;
    };
    let at = format!("{path}.selectableFields");
    let Some(schema) = version.pointer("/schema/openAPIV3Schema") else {
        errs.push(ValidationError {
            path: at,
            message: "Invalid value: \"\": selectableFields may only be set when version.schema.openAPIV3Schema is not included".into(),
        });
        return errs;
    };
    let mut unique: Vec<String> = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let here = format!("{at}[{i}].jsonPath");
        let json_path = f.get("jsonPath").and_then(Value::as_str).unwrap_or_default();
        let invalid =
            |detail: &str| ValidationError { path: here.clone(), message: format!("Invalid value: {}: {detail}", quote(json_path)) };
        if json_path.is_empty() {
            errs.push(ValidationError { path: here.clone(), message: "Required value".into() });
            continue;
        }
        let (segments, found) = match field_path(json_path, schema) {
            Ok(r) => r,
            Err(e) => {
                errs.push(invalid(&format!("is an invalid path: {e}")));
                continue;
            }
        };
        if segments.first().map(String::as_str) == Some("metadata") {
            errs.push(invalid("must not point to fields in metadata"));
        }
        if !matches!(found.get("type").and_then(Value::as_str), Some("string" | "boolean" | "integer")) {
            errs.push(invalid(
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        let key = segments.join("\u{0}");
        if unique.contains(&key) {
            errs.push(ValidationError { path: here.clone(), message: format!("Duplicate value: {}", quote(json_path)) });
        } else {
            unique.push(key);
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        errs.push(ValidationError {
            path: at,
            message: format!("Too many: {}: must have at most {MAX_SELECTABLE_FIELDS} items", unique.len()),
        });
    }
    errs
}

/// A string as Go's `%q` writes it (for the ASCII of paths, JSON's quoting).
fn quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// The fields a JSON path (`.a.b`, `.a['b.c']`) names in `schema`, and the schema of the last:
/// each step a property of an object with `properties`, or a key of one with
/// `additionalProperties`. The errors are those of kube-apiserver's field path check.
fn field_path<'s>(json_path: &str, schema: &'s Value) -> Result<(Vec<String>, &'s Value), String> {
    let mut schema = schema;
    let mut segments = Vec::new();
    let mut rest = json_path;
    while !rest.is_empty() {
        let name = if let Some(r) = rest.strip_prefix('.') {
            if r.is_empty() {
                return Err("unexpected end of JSON path".into());
            }
            // The next token: a name, or a delimiter taken as one (as kube-apiserver's scanner).
            let end = r.find(['.', '[', ']']).unwrap_or(r.len()).max(1);
            rest = &r[end..];
            r[..end].to_string()
        } else if rest.starts_with('[') {
            return Err("array notation is not allowed".into());
        } else {
            let end = rest.find(['.', '[', ']']).unwrap_or(rest.len()).max(1);
            return Err(format!("expected [ or . but got: {}", &rest[..end]));
        };
        schema = if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            props.get(&name).ok_or_else(|| "does not refer to a valid field".to_string())?
        } else if let Some(additional) = schema.get("additionalProperties").filter(|a| !a.is_null()) {
            // `additionalProperties: true` has no schema: no type either.
            if additional.is_object() {
                additional
            } else {
                &Value::Null
            }
        } else {
            return Err("does not refer to a valid field".into());
        };
        segments.push(name);
    }
    Ok((segments, schema))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn version(paths: &[&str]) -> Value {
        json!({"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
            "spec": {"type": "object", "properties": {
                "color": {"type": "string", "enum": ["red", "blue"]}, "size": {"type": "integer"}, "on": {"type": "boolean"},
                "ratio": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}},
            "selectableFields": paths.iter().map(|p| json!({"jsonPath": p})).collect::<Vec<_>>()})
    }

    fn messages(paths: &[&str]) -> Vec<(String, String)> {
        selectable_fields_errors(&version(paths), "spec.versions[0]").into_iter().map(|e| (e.path, e.message)).collect()
    }

    #[test]
    fn simple_paths_to_scalars_are_selectable() {
        assert!(messages(&[".spec.color", ".spec.size", ".spec.on", ".spec.labels.team"]).is_empty());
        assert!(selectable_fields_errors(&json!({"name": "v1"}), "spec.versions[0]").is_empty());
    }

    #[test]
    fn kube_apiserver_refusals() {
        let at = |i: usize| format!("spec.versions[0].selectableFields[{i}].jsonPath");
        assert_eq!(messages(&[""]), [(at(0), "Required value".into())]);
        assert_eq!(
            messages(&[".spec.ratio", ".spec.nothing", "spec.color", ".spec.tags[0]", ".metadata.name"]),
            [
                (at(0), "Invalid value: \".spec.ratio\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.".into()),
                (at(1), "Invalid value: \".spec.nothing\": is an invalid path: does not refer to a valid field".into()),
                (at(2), "Invalid value: \"spec.color\": is an invalid path: expected [ or . but got: spec".into()),
                (at(3), "Invalid value: \".spec.tags[0]\": is an invalid path: array notation is not allowed".into()),
                (at(4), "Invalid value: \".metadata.name\": must not point to fields in metadata".into()),
            ]
        );
        assert_eq!(messages(&[".spec.size", ".spec.size"]), [(at(1), "Duplicate value: \".spec.size\"".into())]);
        let many: Vec<String> = (0..9).map(|i| format!(".spec.labels.k{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(messages(&many), [("spec.versions[0].selectableFields".into(), "Too many: 9: must have at most 8 items".into())]);
        let no_schema = json!({"name": "v1", "selectableFields": [{"jsonPath": ".spec.a"}]});
        assert_eq!(selectable_fields_errors(&no_schema, "spec.versions[1]")[0].path, "spec.versions[1].selectableFields");
    }
}
