//! The checks of a CustomResourceDefinition (apiextensions.k8s.io/v1) on create and update, as
//! kube-apiserver makes them — its name, group, scope, names, versions, schemas, subresources,
//! printer columns and conversion — and the defaults it gives one (`singular`, `listKind`,
//! `conversion`).
//!
//! A v1 definition whose versions all carry the same schema (one version always does) is
//! checked as kube-apiserver's internal form holds it, at `spec.validation`; likewise the
//! subresources (`spec.subresources`) and printer columns (`spec.additionalPrinterColumns`).

use super::schema_checks;
use super::validation::quoted;
use crate::names::{dns1035_errors, dns1123_subdomain_errors};
use crate::typed::ValidationError;
use serde_json::{json, Value};

fn err(out: &mut Vec<ValidationError>, path: impl Into<String>, message: String) {
    out.push(ValidationError { path: path.into(), message });
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Gives `crd` the defaults kube-apiserver gives a v1 definition: `names.singular` (the kind
/// in lower case), `names.listKind` (kind + `List`), `conversion.strategy: None`.
pub fn default(crd: &mut Value) {
    let kind = text(crd, "/spec/names/kind").to_string();
    if let Some(Value::Object(names)) = crd.pointer_mut("/spec/names") {
        if names.get("singular").and_then(Value::as_str).is_none_or(str::is_empty) && !kind.is_empty() {
            names.insert("singular".into(), Value::String(kind.to_lowercase()));
        }
        if names.get("listKind").and_then(Value::as_str).is_none_or(str::is_empty) && !kind.is_empty() {
            names.insert("listKind".into(), Value::String(format!("{kind}List")));
        }
    }
    if let Some(Value::Array(versions)) = crd.pointer_mut("/spec/versions") {
        for v in versions {
            if let Some(s) = v.pointer_mut("/schema/openAPIV3Schema") {
                drop_null_defaults(s, 0);
            }
        }
    }
    if let Some(Value::Object(spec)) = crd.get_mut("spec") {
        let conversion = spec.entry("conversion").or_insert_with(|| json!({}));
        if let Value::Object(c) = conversion {
            c.entry("strategy").or_insert_with(|| json!("None"));
        }
    }
}

/// Removes `default: null` from a schema: kube-apiserver's schema type cannot hold a null
/// default, so it drops it.
fn drop_null_defaults(schema: &mut Value, depth: usize) {
    let Value::Object(m) = schema else { return };
    if depth > super::structural::MAX_DEPTH {
        return;
    }
    if m.get("default") == Some(&Value::Null) {
        m.remove("default");
    }
    for (k, v) in m.iter_mut() {
        match (k.as_str(), v) {
            ("properties", Value::Object(props)) => props.values_mut().for_each(|p| drop_null_defaults(p, depth + 1)),
            ("items" | "additionalProperties" | "not", v) => drop_null_defaults(v, depth + 1),
            ("allOf" | "anyOf" | "oneOf", Value::Array(subs)) => subs.iter_mut().for_each(|p| drop_null_defaults(p, depth + 1)),
            _ => {}
        }
    }
}

/// Every problem of `crd` (defaulted by [`default`]); `old` is the stored definition on an
/// update.
#[must_use]
pub fn check(crd: &Value, old: Option<&Value>) -> Vec<ValidationError> {
    let mut out = Vec::new();
    let name = text(crd, "/metadata/name");
    let (plural, group) = (text(crd, "/spec/names/plural"), text(crd, "/spec/group"));
    if old.is_none() && !name.is_empty() {
        for m in dns1123_subdomain_errors(name) {
            err(&mut out, "metadata.name", format!("Invalid value: {}: {m}", quoted(name)));
        }
        if name != format!("{plural}.{group}") {
            err(&mut out, "metadata.name", format!("Invalid value: {}: must be spec.names.plural+\".\"+spec.group", quoted(name)));
        }
    }
    spec(crd, &mut out);
    if let Some(old) = old {
        immutable(crd, old, &mut out);
    }
    stored_versions(crd, old, &mut out);
    let preserved = |c: &Value| c.pointer("/spec/preserveUnknownFields") == Some(&Value::Bool(true));
    if preserved(crd) && !old.is_some_and(preserved) {
        err(
            &mut out,
            "spec.preserveUnknownFields",
            "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"
                .into(),
        );
    }
    out
}

/// The stored versions a write of `crd` leaves (the old ones, and the first storage version),
/// as kube-apiserver's strategy sets them before validating.
#[must_use]
pub fn stored_versions_after(crd: &Value, old: Option<&Value>) -> Vec<String> {
    let mut stored: Vec<String> = old
        .and_then(|o| o.pointer("/status/storedVersions"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    if let Some(v) = versions.and_then(|vs| vs.iter().find(|v| v.get("storage") == Some(&Value::Bool(true)))) {
        let name = text(v, "/name").to_string();
        if !stored.contains(&name) {
            stored.push(name);
        }
    }
    stored
}

/// apiextensions' `ValidateCustomResourceDefinitionStoredVersions`.
fn stored_versions(crd: &Value, old: Option<&Value>, out: &mut Vec<ValidationError>) {
    let stored = stored_versions_after(crd, old);
    if stored.is_empty() {
        err(out, "status.storedVersions", "Invalid value: null: must have at least one stored version".into());
        return;
    }
    let empty = Vec::new();
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array).unwrap_or(&empty);
    for v in versions {
        let name = text(v, "/name");
        if v.get("storage") == Some(&Value::Bool(true)) && !stored.iter().any(|s| s == name) {
            err(
                out,
                "status.storedVersions",
                format!("Invalid value: {}: must have the storage version {name}", Value::from(stored.clone())),
            );
        }
    }
    for (i, s) in stored.iter().enumerate() {
        if !versions.iter().any(|v| text(v, "/name") == s) {
            err(
                out,
                format!("status.storedVersions[{i}]"),
                format!("Invalid value: {}: missing from spec.versions; {s} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {s} and removes {s} from status.storedVersions", quoted(s)),
            );
        }
    }
}

fn immutable(crd: &Value, old: &Value, out: &mut Vec<ValidationError>) {
    let established = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c.get("type") == Some(&json!("Established")) && c.get("status") == Some(&json!("True"))));
    let mut fields = vec![("spec.group", "/spec/group"), ("spec.names.plural", "/spec/names/plural")];
    if established {
        fields.splice(0..0, [("spec.scope", "/spec/scope"), ("spec.names.kind", "/spec/names/kind")]);
    }
    for (path, pointer) in fields {
        let now = text(crd, pointer);
        if now != text(old, pointer) {
            err(out, path, format!("Invalid value: {}: field is immutable", quoted(now)));
        }
    }
}

fn spec(crd: &Value, out: &mut Vec<ValidationError>) {
    let Some(spec) = crd.get("spec") else {
        err(out, "spec", "Required value".into());
        return;
    };
    let group = text(spec, "/group");
    if group.is_empty() {
        err(out, "spec.group", "Required value".into());
    } else if let errs @ [_, ..] = dns1123_subdomain_errors(group).as_slice() {
        err(out, "spec.group", format!("Invalid value: {}: {}", quoted(group), errs.join(",")));
    } else if !group.contains('.') {
        err(out, "spec.group", format!("Invalid value: {}: should be a domain with at least one dot", quoted(group)));
    }
    match text(spec, "/scope") {
        "" => err(out, "spec.scope", "Required value".into()),
        "Cluster" | "Namespaced" => {}
        other => err(out, "spec.scope", format!("Unsupported value: {}: supported values: \"Cluster\", \"Namespaced\"", quoted(other))),
    }
    let empty = Vec::new();
    let versions = spec.get("versions").and_then(Value::as_array).unwrap_or(&empty);
    let hoisted = |key: &str| {
        !versions.is_empty()
            && versions.iter().all(|v| v.get(key).is_some_and(|x| !x.is_null() && x != &json!([])) && v.get(key) == versions[0].get(key))
    };
    let (schema_top, subresources_top, columns_top) = (hoisted("schema"), hoisted("subresources"), hoisted("additionalPrinterColumns"));
    if !versions.iter().all(|v| schema_of(v).is_some()) {
        for (i, v) in versions.iter().enumerate() {
            if schema_of(v).is_none() {
                err(out, format!("spec.versions[{i}].schema.openAPIV3Schema"), "Required value".into());
            }
        }
    }
    let mut storage = 0;
    let mut names_seen: Vec<&str> = Vec::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let at = format!("spec.versions[{i}]");
        let name = text(v, "/name");
        if v.get("storage") == Some(&Value::Bool(true)) {
            storage += 1;
        }
        if names_seen.contains(&name) {
            unique = false;
        }
        names_seen.push(name);
        let errs = dns1035_errors(name);
        if !errs.is_empty() {
            err(out, format!("{at}.name"), format!("Invalid value: {}: {}", quoted(name), errs.join(",")));
            // kube-apiserver's internal form also holds the first version as `spec.version`.
            if i == 0 {
                err(out, "spec.version", format!("Invalid value: {}: {}", quoted(name), errs.join(",")));
            }
        }
        if let Some(w) = v.get("deprecationWarning").and_then(Value::as_str) {
            if v.get("deprecated") != Some(&Value::Bool(true)) {
                err(
                    out,
                    format!("{at}.deprecationWarning"),
                    format!("Invalid value: {}: can only be set for deprecated versions", quoted(w)),
                );
            } else if w.len() > 256 {
                err(out, format!("{at}.deprecationWarning"), format!("Invalid value: {}: must be <= 256 characters long", quoted(w)));
            }
        }
        let status = status_on(if subresources_top { &versions[0] } else { v });
        if !schema_top {
            if let Some(s) = schema_of(v) {
                out.extend(schema_checks::check(s, &format!("{at}.schema.openAPIV3Schema"), status));
            }
        }
        if !subresources_top {
            subresources(v.get("subresources"), &format!("{at}.subresources"), out);
        }
        if !columns_top {
            columns(v.get("additionalPrinterColumns"), &format!("{at}.additionalPrinterColumns"), out);
        }
        if !hoisted("selectableFields") {
            out.extend(super::selectable::selectable_fields_errors(v, &at));
        }
    }
    // Identical in every version (one version, say), kube-apiserver checks them as the spec's.
    if hoisted("selectableFields") {
        out.extend(super::selectable::selectable_fields_errors(&versions[0], "spec"));
    }
    if !unique {
        err(out, "spec.versions", format!("Invalid value: {}: must contain unique version names", versions_shown(versions)));
    }
    if storage != 1 {
        err(
            out,
            "spec.versions",
            format!("Invalid value: {}: must have exactly one version marked as storage version", versions_shown(versions)),
        );
    }
    names(spec, out);
    if schema_top {
        if let Some(s) = schema_of(&versions[0]) {
            let status = versions.iter().any(status_on);
            out.extend(schema_checks::check(s, "spec.validation.openAPIV3Schema", status));
        }
    }
    if subresources_top {
        subresources(versions[0].get("subresources"), "spec.subresources", out);
    }
    if columns_top {
        columns(versions[0].get("additionalPrinterColumns"), "spec.additionalPrinterColumns", out);
    }
    conversion(spec, out);
}

/// How kube-apiserver prints `spec.versions` in its messages (Go's rendering of the internal
/// structs is not reproduced: the version names stand for them).
fn versions_shown(versions: &[Value]) -> String {
    let names: Vec<&str> = versions.iter().map(|v| text(v, "/name")).collect();
    Value::from(names).to_string()
}

fn schema_of(v: &Value) -> Option<&Value> {
    v.pointer("/schema/openAPIV3Schema").filter(|s| !s.is_null())
}

fn status_on(v: &Value) -> bool {
    v.pointer("/subresources/status").is_some_and(|s| !s.is_null())
}

fn names(spec: &Value, out: &mut Vec<ValidationError>) {
    for (key, pointer) in
        [("plural", "/names/plural"), ("singular", "/names/singular"), ("kind", "/names/kind"), ("listKind", "/names/listKind")]
    {
        if text(spec, pointer).is_empty() {
            err(out, format!("spec.names.{key}"), "Required value".into());
        }
    }
    let Some(names) = spec.get("names") else { return };
    for key in ["plural", "singular"] {
        let v = text(names, &format!("/{key}"));
        let errs = dns1035_errors(v);
        if !v.is_empty() && !errs.is_empty() {
            err(out, format!("spec.names.{key}"), format!("Invalid value: {}: {}", quoted(v), errs.join(",")));
        }
    }
    for key in ["kind", "listKind"] {
        let v = text(names, &format!("/{key}"));
        let errs = dns1035_errors(&v.to_lowercase());
        if !v.is_empty() && !errs.is_empty() {
            err(
                out,
                format!("spec.names.{key}"),
                format!("Invalid value: {}: may have mixed case, but should otherwise match: {}", quoted(v), errs.join(",")),
            );
        }
    }
    for key in ["shortNames", "categories"] {
        for (i, v) in names.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let v = v.as_str().unwrap_or("");
            let errs = dns1035_errors(v);
            if !errs.is_empty() {
                err(out, format!("spec.names.{key}[{i}]"), format!("Invalid value: {}: {}", quoted(v), errs.join(",")));
            }
        }
    }
    let (kind, list_kind) = (text(names, "/kind"), text(names, "/listKind"));
    if !kind.is_empty() && kind == list_kind {
        err(out, "spec.names.listKind", format!("Invalid value: {}: kind and listKind may not be the same", quoted(list_kind)));
    }
}

fn subresources(sub: Option<&Value>, path: &str, out: &mut Vec<ValidationError>) {
    let Some(scale) = sub.and_then(|s| s.get("scale")).filter(|s| !s.is_null()) else { return };
    for (key, prefixes, words) in [
        ("specReplicasPath", &[".spec."][..], "should be a json path under .spec"),
        ("statusReplicasPath", &[".status."][..], "should be a json path under .status"),
        ("labelSelectorPath", &[".spec.", ".status."][..], "should be a json path under either .spec or .status"),
    ] {
        let v = text(scale, &format!("/{key}"));
        let at = format!("{path}.scale.{key}");
        if v.is_empty() {
            if key != "labelSelectorPath" {
                err(out, at, "Required value".into());
            }
        } else if let Some(e) = simple_json_path(v) {
            err(out, at, e);
        } else if !prefixes.iter().any(|p| v.starts_with(p)) {
            err(out, at, format!("Invalid value: {}: {words}", quoted(v)));
        }
    }
}

/// What is wrong with `s` as a simple JSON path (`.a.b`).
fn simple_json_path(s: &str) -> Option<String> {
    if !s.starts_with('.') {
        return Some(format!("Invalid value: {}: must be a simple json path starting with .", quoted(s)));
    }
    None
}

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: [&str; 8] = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"];

fn columns(cols: Option<&Value>, path: &str, out: &mut Vec<ValidationError>) {
    for (i, c) in cols.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("{path}[{i}]");
        if text(c, "/name").is_empty() {
            err(out, format!("{at}.name"), "Required value".into());
        }
        match text(c, "/type") {
            "" => err(out, format!("{at}.type"), format!("Required value: must be one of {COLUMN_TYPES}")),
            t if COLUMN_TYPES.split(',').any(|x| x == t) => {}
            t => err(out, format!("{at}.type"), format!("Invalid value: {}: must be one of {COLUMN_TYPES}", quoted(t))),
        }
        let f = text(c, "/format");
        if !f.is_empty() && !COLUMN_FORMATS.contains(&f) {
            err(out, format!("{at}.format"), format!("Invalid value: {}: must be one of {}", quoted(f), COLUMN_FORMATS.join(",")));
        }
        match text(c, "/jsonPath") {
            "" => err(out, format!("{at}.JSONPath"), "Required value".into()),
            p => {
                if let Some(e) = simple_json_path(p) {
                    err(out, format!("{at}.JSONPath"), e);
                }
            }
        }
    }
}

fn conversion(spec: &Value, out: &mut Vec<ValidationError>) {
    let Some(c) = spec.get("conversion").filter(|c| !c.is_null()) else { return };
    let strategy = text(c, "/strategy");
    match strategy {
        "" => err(out, "spec.conversion.strategy", "Required value".into()),
        "None" | "Webhook" => {}
        other => {
            err(out, "spec.conversion.strategy", format!("Unsupported value: {}: supported values: \"None\", \"Webhook\"", quoted(other)))
        }
    }
    if strategy == "Webhook" {
        match c.get("webhook").and_then(|w| w.get("clientConfig")) {
            None => err(out, "spec.conversion.webhookClientConfig", "Required value: required when strategy is set to Webhook".into()),
            Some(cc) if cc.get("url").is_some() == cc.get("service").is_some() => {
                err(out, "spec.conversion.webhookClientConfig", "Required value: exactly one of url or service is required".into())
            }
            Some(cc) => {
                if let Some(url) = cc.get("url").and_then(Value::as_str) {
                    webhook_url(url, out);
                }
            }
        }
        let review = c.pointer("/webhook/conversionReviewVersions").and_then(Value::as_array);
        match review {
            None => err(out, "spec.conversion.conversionReviewVersions", "Required value".into()),
            Some(vs) if vs.is_empty() => err(out, "spec.conversion.conversionReviewVersions", "Required value".into()),
            Some(vs) if !vs.iter().any(|v| v == "v1" || v == "v1beta1") => err(
                out,
                "spec.conversion.conversionReviewVersions",
                format!("Invalid value: {}: must include at least one of v1, v1beta1", Value::from(vs.clone())),
            ),
            _ => {}
        }
    } else {
        if c.pointer("/webhook/clientConfig").is_some_and(|x| !x.is_null()) {
            err(out, "spec.conversion.webhookClientConfig", "Forbidden: should not be set when strategy is not set to Webhook".into());
        }
        if c.pointer("/webhook/conversionReviewVersions").and_then(Value::as_array).is_some_and(|a| !a.is_empty()) {
            err(out, "spec.conversion.conversionReviewVersions", "Forbidden: should not be set when strategy is not set to Webhook".into());
        }
    }
}

/// apiextensions' check of a conversion webhook's URL: `https://host[/path]`, nothing else.
fn webhook_url(url: &str, out: &mut Vec<ValidationError>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let at = "spec.conversion.webhookClientConfig.url";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        err(out, at, format!("Invalid value: {}: 'https' is the only allowed URL scheme{FORM}", quoted(scheme)));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.is_empty() {
        err(out, at, format!("Invalid value: \"\": host must be specified{FORM}"));
    }
    if let Some((user, _)) = authority.rsplit_once('@') {
        err(out, at, format!("Invalid value: {}: user information is not permitted in the URL", quoted(user)));
    }
    if let Some((_, fragment)) = rest.split_once('#') {
        err(out, at, format!("Invalid value: {}: fragments are not permitted in the URL", quoted(fragment)));
    }
    if let Some((_, query)) = rest.split('#').next().unwrap_or("").split_once('?') {
        err(out, at, format!("Invalid value: {}: query parameters are not permitted in the URL", quoted(query)));
    }
}

#[cfg(test)]
mod tests;
