//! `meta.k8s.io/v1` Tables (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): the
//! columns kube-apiserver prints for a kind, one row of cells per object.
//!
//! Built-in kinds get the columns of Kubernetes' printers (`pkg/printers/internalversion`:
//! Pod `NAME READY STATUS RESTARTS AGE`, Deployment `NAME READY UP-TO-DATE AVAILABLE AGE`, …;
//! `priority: 1` columns are the ones `-o wide` adds), custom resources their CRD's
//! `additionalPrinterColumns` (an `Age` column when it declares none), as apiextensions'
//! table convertor evaluates them; any other kind `NAME AGE`. Ages are apimachinery's
//! `HumanDuration` of the time since `metadata.creationTimestamp`. Each row carries the object
//! as `includeObject` asks: none, its metadata as a `PartialObjectMetadata` (what kubectl asks
//! for, and needs for `-A`, `--show-labels` and `-L`), or the whole object.

mod duration;
mod jsonpath;
mod printers;

use fieldstore_engine::store::{SchemaSource, TypeSpec};
use serde_json::{json, Value};

/// What each row's `object` holds (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object.
    None,
    /// The object's metadata, as a `meta.k8s.io/v1 PartialObjectMetadata` (kubectl's choice
    /// and Kubernetes' default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl std::str::FromStr for IncludeObject {
    type Err = String;

    /// `None`, `Metadata` or `Object`, as the `includeObject` query parameter spells them.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "None" => Ok(IncludeObject::None),
            "Metadata" | "" => Ok(IncludeObject::Metadata),
            "Object" => Ok(IncludeObject::Object),
            other => Err(format!("includeObject: unsupported value {other:?}, expected None, Metadata or Object")),
        }
    }
}

/// A column: its definition's name, type and priority (format and description follow).
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub kind: &'static str,
    /// `name` for the name column.
    pub format: String,
    pub priority: i64,
    pub description: String,
}

impl Column {
    /// A column shown by default.
    pub(crate) fn new(name: &str, kind: &'static str) -> Self {
        Column { name: name.into(), kind, format: String::new(), priority: 0, description: String::new() }
    }

    /// A column `-o wide` adds.
    pub(crate) fn wide(name: &str, kind: &'static str) -> Self {
        Column { priority: 1, ..Column::new(name, kind) }
    }

    /// The `Name` column every printer starts with.
    pub(crate) fn name() -> Self {
        Column {
            format: "name".into(),
            // `metav1.ObjectMeta{}.SwaggerDoc()["name"]`, as kube-apiserver's printers describe it.
            description: "Name must be unique within a namespace. Is required when creating resources, although some resources may \
                          allow a client to request the generation of an appropriate name automatically. Name is primarily intended \
                          for creation idempotence and configuration definition. Cannot be updated. More info: \
                          https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
                .into(),
            ..Column::new("Name", "string")
        }
    }

    /// The `Age` column (the time since `metadata.creationTimestamp`).
    pub(crate) fn age() -> Self {
        Column {
            // `metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]`.
            description: "CreationTimestamp is a timestamp representing the server time when this object was created. It is not \
                          guaranteed to be set in happens-before order across separate operations. Clients may not set this value. \
                          It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. \
                          More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
                .into(),
            ..Column::new("Age", "string")
        }
    }

    fn definition(&self) -> Value {
        json!({"name": self.name, "type": self.kind, "format": self.format, "description": self.description, "priority": self.priority})
    }
}

/// The Table of `objects` of type `spec` now; `list_meta` (`resourceVersion`, `continue`,
/// `remainingItemCount`) becomes the Table's `metadata`.
///
/// # Examples
/// ```
/// use fieldstore_engine::store::builtin_type;
/// use fieldstore_server::http::table::{table, IncludeObject};
/// let cm = builtin_type("", "v1", "ConfigMap").unwrap();
/// let obj = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
///     "metadata": {"name": "x", "creationTimestamp": "2024-01-01T00:00:00Z"}, "data": {"a": "1"}});
/// let t = table(&cm, &[obj], IncludeObject::Metadata, serde_json::json!({"resourceVersion": "7"}));
/// assert_eq!(t["columnDefinitions"][1]["name"], "Data");
/// assert_eq!(t["rows"][0]["cells"][0], "x");
/// assert_eq!(t["rows"][0]["cells"][1], 1);
/// assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
/// ```
#[must_use]
pub fn table(spec: &TypeSpec, objects: &[Value], include_object: IncludeObject, list_meta: Value) -> Value {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    table_at(spec, objects, include_object, list_meta, now)
}

/// [`table`] with the clock given: ages are computed against `now` (Unix seconds).
#[must_use]
pub fn table_at(spec: &TypeSpec, objects: &[Value], include_object: IncludeObject, list_meta: Value, now: i64) -> Value {
    let (columns, rows): (Vec<Column>, Vec<Vec<Value>>) = match crd_columns(spec) {
        Some(columns) => {
            let rows = objects.iter().map(|o| jsonpath::cells(&columns, o, now)).collect();
            (columns.into_iter().map(|(c, _)| c).collect(), rows)
        }
        None => {
            let printer = printers::printer(spec);
            (printer.columns(), objects.iter().map(|o| printer.cells(o, now)).collect())
        }
    };
    let rows: Vec<Value> = objects
        .iter()
        .zip(rows)
        .map(|(o, cells)| {
            let mut row = json!({"cells": cells});
            match include_object {
                IncludeObject::None => {}
                IncludeObject::Metadata => {
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": o.get("metadata").cloned().unwrap_or_else(|| json!({})),
                    });
                }
                IncludeObject::Object => row["object"] = o.clone(),
            }
            row
        })
        .collect();
    let metadata = if list_meta.is_object() { list_meta } else { json!({}) };
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns.iter().map(Column::definition).collect::<Vec<_>>(),
        "rows": rows,
    })
}

/// A CRD's columns (`Name`, then its `additionalPrinterColumns` of the served version or of the
/// spec, else `Age`), each with its JSONPath; `None` for types that are not custom resources.
fn crd_columns(spec: &TypeSpec) -> Option<Vec<(Column, String)>> {
    let SchemaSource::Crd(crd) = &spec.schema else { return None };
    let version = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| vs.iter().find(|v| v.get("name").and_then(Value::as_str) == Some(spec.version.as_str())));
    let declared = version
        .and_then(|v| v.get("additionalPrinterColumns"))
        .or_else(|| crd.pointer("/spec/additionalPrinterColumns"))
        .and_then(Value::as_array);
    let mut out = vec![(Column::name(), ".metadata.name".to_string())];
    match declared {
        Some(cols) => {
            for c in cols {
                let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                let path = s("jsonPath");
                let kind = match c.get("type").and_then(Value::as_str) {
                    Some("integer") => "integer",
                    Some("number") => "number",
                    Some("boolean") => "boolean",
                    Some("date") => "date",
                    _ => "string",
                };
                let description = Some(s("description"))
                    .filter(|d| !d.is_empty())
                    .unwrap_or_else(|| format!("Custom resource definition column (in JSONPath format): {path}"));
                let column = Column {
                    name: s("name"),
                    kind,
                    format: s("format"),
                    priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                    description,
                };
                out.push((column, path));
            }
        }
        None => out.push((Column { kind: "date", ..Column::age() }, ".metadata.creationTimestamp".to_string())),
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_object_parses_as_the_query_spells_it() {
        assert_eq!("None".parse::<IncludeObject>(), Ok(IncludeObject::None));
        assert_eq!("Object".parse::<IncludeObject>(), Ok(IncludeObject::Object));
        assert_eq!("".parse::<IncludeObject>(), Ok(IncludeObject::Metadata));
        assert!("all".parse::<IncludeObject>().is_err());
    }
}
