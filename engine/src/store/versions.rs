//! The versions of a custom resource, as kube-apiserver serves them with `conversion.strategy:
//! None`: every served version of a CustomResourceDefinition is a view of the one stored type —
//! the same objects, validated and merged with that version's schema, their `apiVersion`
//! rewritten to the version asked for on the way out and to the storage version on the way in
//! (a None conversion changes nothing else). The registry resolves `plural.version.group` to
//! the view of that version; `plural.group` is the storage version.
//!
//! A CRD converting through a webhook is served at its storage version only: the other
//! versions are listed (discovery, OpenAPI) but a request to one fails with a conversion error
//! (500), as kube-apiserver answers when it cannot call the webhook.

use super::{Registered, TypeSpec};
use crate::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cmp::Reverse;
use std::sync::Arc;

/// One version of a custom resource (an entry of its CRD's `spec.versions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiVersionSpec {
    /// The version (`v1beta1`).
    pub name: String,
    /// Whether requests may use it.
    pub served: bool,
    /// Whether objects are stored at it (exactly one version is).
    pub storage: bool,
    /// Whether requests to it get a deprecation warning.
    #[serde(default, skip_serializing_if = "is_false")]
    pub deprecated: bool,
    /// The warning of a deprecated version, when the CRD sets its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_warning: Option<String>,
    /// The fields (`spec.color`, without the JSONPath's leading dot) field selectors may use on
    /// this version, beyond `metadata.name` and `metadata.namespace` (`selectableFields`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectable_fields: Vec<String>,
}

// serde's `skip_serializing_if` takes the field by reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(b: &bool) -> bool {
    !*b
}

impl ApiVersionSpec {
    /// The versions of a CRD's `spec.versions`.
    pub(crate) fn of_crd(spec: &Value) -> Vec<ApiVersionSpec> {
        let versions = spec.get("versions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        versions
            .iter()
            .filter_map(|v| {
                let flag = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
                Some(ApiVersionSpec {
                    name: v.get("name")?.as_str()?.to_string(),
                    served: flag("served"),
                    storage: flag("storage"),
                    deprecated: flag("deprecated"),
                    deprecation_warning: v.get("deprecationWarning").and_then(Value::as_str).map(str::to_string),
                    selectable_fields: v
                        .get("selectableFields")
                        .and_then(Value::as_array)
                        .map(|fs| {
                            fs.iter()
                                .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                                .map(|p| p.trim_start_matches('.').to_string())
                                .collect()
                        })
                        .unwrap_or_default(),
                })
            })
            .collect()
    }
}

/// Where a version stands in kube's order of preference (`CompareKubeAwareVersionStrings`):
/// GA before beta before alpha, higher major first, then higher minor; versions of another
/// form after them all, alphabetically.
fn priority(v: &str) -> (u8, Reverse<u64>, Reverse<u64>, String) {
    let parsed = (|| {
        let rest = v.strip_prefix('v')?;
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 || rest.starts_with('0') {
            return None;
        }
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((0, major, 0));
        }
        let (class, minor) = if let Some(m) = tail.strip_prefix("beta") { (1, m) } else { (2, tail.strip_prefix("alpha")?) };
        if minor.is_empty() || !minor.chars().all(|c| c.is_ascii_digit()) || minor.starts_with('0') {
            return None;
        }
        Some((class, major, minor.parse().ok()?))
    })();
    match parsed {
        Some((class, major, minor)) => (class, Reverse(major), Reverse(minor), String::new()),
        None => (3, Reverse(0), Reverse(0), v.to_string()),
    }
}

/// Compares two versions in kube's order of preference (`Less`: `a` is preferred).
pub(crate) fn priority_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    priority(a).cmp(&priority(b))
}

/// Sorts versions in kube's order of preference (the first is a group's preferred version).
pub fn sort_by_priority(versions: &mut [String]) {
    versions.sort_by_cached_key(|v| priority(v));
}

impl TypeSpec {
    /// The versions requests may use, in kube's order of preference: the served versions of a
    /// custom resource, or the one version of any other type.
    #[must_use]
    pub fn served_versions(&self) -> Vec<String> {
        if self.versions.is_empty() {
            return vec![self.version.clone()];
        }
        let mut out: Vec<String> = self.versions.iter().filter(|v| v.served).map(|v| v.name.clone()).collect();
        sort_by_priority(&mut out);
        out
    }

    /// This type as served at `version` (its spec with that version).
    #[must_use]
    pub fn at_version(&self, version: &str) -> TypeSpec {
        TypeSpec { version: version.to_string(), ..self.clone() }
    }

    /// The resource name of this type at its version: `plural.version.group` (kubectl's fully
    /// qualified form), or `plural` for the core group. Requests naming it reach this version.
    #[must_use]
    pub fn versioned_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}.{}", self.plural, self.version, self.group)
        }
    }

    /// The entry of this type's version in its CRD's versions, if it has them.
    fn this_version(&self) -> Option<&ApiVersionSpec> {
        self.versions.iter().find(|v| v.name == self.version)
    }

    /// The `Warning` of requests to this version when it is deprecated: the CRD's own
    /// `deprecationWarning`, or kube-apiserver's (`example.com/v1beta1 Widget is deprecated;
    /// use example.com/v1 Widget`, naming the preferred served version above it that is not
    /// deprecated).
    #[must_use]
    pub fn deprecation_warning(&self) -> Option<String> {
        let v = self.this_version().filter(|v| v.deprecated)?;
        if let Some(w) = &v.deprecation_warning {
            return Some(w.clone());
        }
        let mut msg = format!("{}/{} {} is deprecated", self.group, v.name, self.kind);
        let mut better: Vec<String> = self
            .versions
            .iter()
            .filter(|o| o.served && !o.deprecated && priority(&o.name) < priority(&v.name))
            .map(|o| o.name.clone())
            .collect();
        sort_by_priority(&mut better);
        if let Some(b) = better.first() {
            msg.push_str(&format!("; use {}/{b} {}", self.group, self.kind));
        }
        Some(msg)
    }

    /// The fields field selectors may use on this version besides the name and namespace (its
    /// CRD's `selectableFields`).
    #[must_use]
    pub fn selectable_fields(&self) -> &[String] {
        self.this_version().map(|v| v.selectable_fields.as_slice()).unwrap_or_default()
    }

    /// The storage version of a custom resource with versions (else its one version).
    pub(crate) fn storage_version(&self) -> &str {
        self.versions.iter().find(|v| v.storage).map_or(self.version.as_str(), |v| v.name.as_str())
    }
}

impl Registered {
    /// The views of the served versions of `t` other than its storage version, each compiled
    /// with its own schema (`compile` compiles one version).
    pub(crate) fn views_of(t: &Registered, compile: impl Fn(TypeSpec) -> Result<Registered>) -> Result<Vec<Arc<Registered>>> {
        let spec = &t.spec;
        if spec.versions.is_empty() || spec.version != spec.storage_version() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for v in spec.served_versions().into_iter().filter(|v| *v != spec.version) {
            let mut view = compile(spec.at_version(&v))?;
            view.id = t.id;
            view.stored_as = Some(t.api_version.clone());
            view.storage_schema.clone_from(&t.custom);
            if spec.conversion_webhook {
                view.conversion_error = Some(format!(
                    "conversion webhook for {}, Kind={} failed: fieldstore does not call conversion webhooks yet: \
                     objects are served at the storage version {} only",
                    view.api_version, spec.kind, t.api_version
                ));
            }
            out.push(Arc::new(view));
        }
        Ok(out)
    }

    /// Gives the type, and its views, the id `id` (and the views its `reshaped`).
    pub(crate) fn set_id(&mut self, id: u32) {
        self.id = id;
        for v in &mut self.views {
            match Arc::get_mut(v) {
                Some(v) => {
                    v.id = id;
                    v.spec.reshaped = self.spec.reshaped;
                }
                None => debug_assert!(false, "a view shared before its type has an id"),
            }
        }
    }

    /// Whether this is a view of a version other than the one objects are stored at.
    pub(crate) fn is_view(&self) -> bool {
        self.stored_as.is_some()
    }

    /// Whether objects read through this type may need converting: a view, or the storage
    /// version of a custom resource with several versions (objects stored before the storage
    /// version moved carry the older one).
    pub(crate) fn converts(&self) -> bool {
        self.is_view() || self.spec.versions.len() > 1
    }

    /// An object as read from storage, as this version serves it: at its apiVersion and, for a
    /// view, pruned by its schema (kube-apiserver's None conversion, then the version's
    /// structural schema; its defaults apply to writes, not to reads).
    pub(crate) fn to_served(&self, object: &mut Value) {
        if !self.converts() {
            return;
        }
        set_api_version(object, &self.api_version);
        if let (true, Some(schema)) = (self.is_view(), &self.custom) {
            crate::crd::prune::apply(schema, object);
        }
    }

    /// An object written through this version, as it is stored: at the storage version, pruned
    /// by its schema.
    pub(crate) fn to_stored(&self, object: &mut Value) {
        if let Some(stored) = &self.stored_as {
            set_api_version(object, stored);
            if let Some(schema) = &self.storage_schema {
                crate::crd::prune::apply(schema, object);
            }
        }
    }

    /// A shared object from storage as this version serves it (a copy only when it converts).
    pub(crate) fn served_arc(&self, object: &Arc<Value>) -> Arc<Value> {
        if self.converts() {
            let mut o = Value::clone(object);
            self.to_served(&mut o);
            Arc::new(o)
        } else {
            object.clone()
        }
    }
}

fn set_api_version(object: &mut Value, api_version: &str) {
    if let Value::Object(m) = object {
        if m.contains_key("apiVersion") {
            m.insert("apiVersion".into(), Value::String(api_version.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_version_priority() {
        let mut vs: Vec<String> =
            ["foo10", "v1", "v11alpha2", "v10beta3", "v2", "v12alpha1", "foo1", "v3beta1", "v10", "v11beta2"].map(String::from).to_vec();
        sort_by_priority(&mut vs);
        assert_eq!(vs, ["v10", "v2", "v1", "v11beta2", "v10beta3", "v3beta1", "v12alpha1", "v11alpha2", "foo1", "foo10"]);
    }
}
