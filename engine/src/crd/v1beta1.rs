//! A CustomResourceDefinition at `apiextensions.k8s.io/v1beta1`, as kube-apiserver still stores
//! definitions in etcd (whatever version a client wrote), converted to `v1`, the version the
//! store registers types from — what kube-apiserver's own conversion (v1beta1 → internal → v1)
//! makes of it:
//!
//! - the top-level `validation`, `subresources` and `additionalPrinterColumns` (kube-apiserver
//!   lifts them there when every version has the same) go to each version lacking its own;
//! - a printer column's `JSONPath` is `jsonPath`;
//! - `version` goes (a definition with no `versions` gets the one it names, served and stored);
//! - `conversion.webhookClientConfig` and `conversionReviewVersions` go under
//!   `conversion.webhook` (`clientConfig`, `conversionReviewVersions`);
//! - `preserveUnknownFields`, defaulted to `true` in v1beta1, is kept when `true`, dropped when
//!   `false` (v1's default).
//!
//! Pure: a value in, a value out. Anything else in the definition is kept as it is.

use serde_json::{json, Map, Value};

/// The group and version of definitions kube-apiserver stores.
pub const API_VERSION: &str = "apiextensions.k8s.io/v1beta1";
/// The group and version the conversion makes.
const V1: &str = "apiextensions.k8s.io/v1";

/// Whether `object` is a CustomResourceDefinition at [`API_VERSION`].
#[must_use]
pub fn is_v1beta1_definition(object: &Value) -> bool {
    object.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
        && object.get("apiVersion").and_then(Value::as_str) == Some(API_VERSION)
}

/// The `v1` form of a v1beta1 definition (see the module's doc); any other object unchanged.
#[must_use]
pub fn to_v1(mut crd: Value) -> Value {
    if !is_v1beta1_definition(&crd) {
        return crd;
    }
    crd["apiVersion"] = Value::String(V1.into());
    if let Some(Value::Object(spec)) = crd.get_mut("spec") {
        convert_spec(spec);
    }
    crd
}

/// The spec's conversion, in place.
fn convert_spec(spec: &mut Map<String, Value>) {
    let schema = spec.remove("validation");
    let subresources = spec.remove("subresources");
    let columns = spec.remove("additionalPrinterColumns");
    let version = spec.remove("version");
    let versions = spec.entry("versions").or_insert_with(|| Value::Array(Vec::new()));
    if !versions.is_array() {
        *versions = Value::Array(Vec::new());
    }
    if let Value::Array(versions) = versions {
        if versions.is_empty() {
            if let Some(name) = version.filter(Value::is_string) {
                versions.push(json!({"name": name, "served": true, "storage": true}));
            }
        }
        for v in versions.iter_mut().filter_map(Value::as_object_mut) {
            for (field, shared) in [("schema", &schema), ("subresources", &subresources), ("additionalPrinterColumns", &columns)] {
                if let Some(shared) = shared {
                    v.entry(field).or_insert_with(|| shared.clone());
                }
            }
            if let Some(Value::Array(columns)) = v.get_mut("additionalPrinterColumns") {
                columns.iter_mut().filter_map(Value::as_object_mut).for_each(rename_json_path);
            }
        }
    }
    if let Some(Value::Object(conversion)) = spec.get_mut("conversion") {
        let client_config = conversion.remove("webhookClientConfig");
        let review_versions = conversion.remove("conversionReviewVersions");
        if client_config.is_some() || review_versions.is_some() {
            let mut webhook = Map::new();
            if let Some(c) = client_config {
                webhook.insert("clientConfig".into(), c);
            }
            // v1beta1's default, which v1 requires spelled out.
            webhook.insert("conversionReviewVersions".into(), review_versions.unwrap_or_else(|| json!(["v1beta1"])));
            conversion.insert("webhook".into(), Value::Object(webhook));
        }
    }
    match spec.get("preserveUnknownFields") {
        Some(Value::Bool(false)) => {
            spec.remove("preserveUnknownFields");
        }
        None => {
            spec.insert("preserveUnknownFields".into(), Value::Bool(true));
        }
        Some(_) => {}
    }
}

/// A printer column's `JSONPath` (v1beta1) as `jsonPath` (v1).
fn rename_json_path(column: &mut Map<String, Value>) {
    if let Some(path) = column.remove("JSONPath") {
        column.entry("jsonPath").or_insert(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_fields_go_to_each_version() {
        let beta = json!({"apiVersion": API_VERSION, "kind": "CustomResourceDefinition", "metadata": {"name": "gizmos.example.com"},
            "spec": {"group": "example.com", "version": "v1", "scope": "Cluster",
                "names": {"plural": "gizmos", "kind": "Gizmo"},
                "validation": {"openAPIV3Schema": {"type": "object"}},
                "subresources": {"status": {}},
                "versions": [{"name": "v1", "served": true, "storage": true}, {"name": "v2", "served": true, "storage": false,
                    "additionalPrinterColumns": [{"name": "Own", "type": "string", "JSONPath": ".spec.own"}]}],
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "JSONPath": ".spec.size"}],
                "conversion": {"strategy": "None"}, "preserveUnknownFields": false}});
        let v1 = to_v1(beta);
        assert_eq!(v1["apiVersion"], V1);
        let spec = &v1["spec"];
        for gone in ["version", "validation", "subresources", "additionalPrinterColumns", "preserveUnknownFields"] {
            assert!(spec.get(gone).is_none(), "{gone}: {spec}");
        }
        assert_eq!(spec["versions"][0]["schema"], json!({"openAPIV3Schema": {"type": "object"}}));
        assert_eq!(spec["versions"][1]["subresources"], json!({"status": {}}));
        assert_eq!(spec["versions"][0]["additionalPrinterColumns"], json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]));
        // A version's own columns are its own.
        assert_eq!(spec["versions"][1]["additionalPrinterColumns"], json!([{"name": "Own", "type": "string", "jsonPath": ".spec.own"}]));
        assert_eq!(spec["conversion"], json!({"strategy": "None"}));
    }

    #[test]
    fn a_lone_version_and_a_webhook_convert() {
        let beta = json!({"apiVersion": API_VERSION, "kind": "CustomResourceDefinition",
            "spec": {"group": "example.com", "version": "v1alpha1", "names": {"plural": "things", "kind": "Thing"},
                "conversion": {"strategy": "Webhook", "webhookClientConfig": {"url": "https://hook.example.com/convert"}}}});
        let spec = to_v1(beta)["spec"].clone();
        assert_eq!(spec["versions"], json!([{"name": "v1alpha1", "served": true, "storage": true}]));
        assert_eq!(
            spec["conversion"],
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://hook.example.com/convert"}, "conversionReviewVersions": ["v1beta1"]}})
        );
        assert_eq!(spec["preserveUnknownFields"], true, "v1beta1's default");
    }

    #[test]
    fn other_objects_are_unchanged() {
        for o in [
            json!({"apiVersion": V1, "kind": "CustomResourceDefinition", "spec": {"version": "v1"}}),
            json!({"apiVersion": API_VERSION, "kind": "Widget", "spec": {"version": "v1"}}),
        ] {
            assert_eq!(to_v1(o.clone()), o);
        }
    }
}
