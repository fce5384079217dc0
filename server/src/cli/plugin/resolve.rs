//! Which resource a name on the command line means (`deploy`, `deployments`,
//! `deployments.apps`, `Deployment`, `deployment.apps`, `cm`), from the server's discovery
//! (`/api/v1`, `/apis`, `/apis/GROUP/VERSION` at each group's preferred version), and the URL
//! path of an object of it.

use super::super::error::{CliError, Result};
use super::client::Client;
use fieldstore_engine::store::type_is_named;
use serde_json::Value;

/// A resource the server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiResource {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
}

impl ApiResource {
    /// `plural` or `plural.group`, as fieldstore's own paths take a resource.
    pub(crate) fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Whether `name` means this resource: its plural, singular, kind or a short name, bare or
    /// qualified by the group.
    fn is_named(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        type_is_named(&name, &self.plural, &self.group, &self.kind)
            || name == self.singular
            || self.short_names.contains(&name)
            || name.strip_suffix(&format!(".{}", self.group)).is_some_and(|n| n == self.singular || self.short_names.iter().any(|s| s == n))
    }

    /// The URL path of object `name` (in `namespace` for namespaced resources).
    pub(crate) fn object_path(&self, namespace: &str, name: &str) -> String {
        let base = if self.group.is_empty() { format!("/api/{}", self.version) } else { format!("/apis/{}/{}", self.group, self.version) };
        if self.namespaced {
            format!("{base}/namespaces/{namespace}/{}/{name}", self.plural)
        } else {
            format!("{base}/{}/{name}", self.plural)
        }
    }
}

/// The resources of one `APIResourceList` (subresources left out).
pub(crate) fn from_resource_list(list: &Value) -> Vec<ApiResource> {
    let gv = list.get("groupVersion").and_then(Value::as_str).unwrap_or("v1");
    let (group, version) = gv.split_once('/').unwrap_or(("", gv));
    list.get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let plural = s("name");
            if plural.is_empty() || plural.contains('/') {
                return None;
            }
            Some(ApiResource {
                group: group.to_string(),
                version: version.to_string(),
                singular: Some(s("singularName")).filter(|n| !n.is_empty()).unwrap_or_else(|| s("kind").to_ascii_lowercase()),
                kind: s("kind"),
                namespaced: r.get("namespaced").and_then(Value::as_bool).unwrap_or(false),
                short_names: r
                    .get("shortNames")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                plural,
            })
        })
        .collect()
}

/// Every resource the server serves: the core group first, then the groups in `/apis` order,
/// each at its preferred version.
pub(crate) fn discover(client: &Client) -> Result<Vec<ApiResource>> {
    let mut out = from_resource_list(&client.get("/api/v1", &[])?);
    let groups = client.get("/apis", &[])?;
    for g in groups.get("groups").and_then(Value::as_array).into_iter().flatten() {
        let gv = g.pointer("/preferredVersion/groupVersion").or_else(|| g.pointer("/versions/0/groupVersion")).and_then(Value::as_str);
        if let Some(gv) = gv {
            out.extend(from_resource_list(&client.get(&format!("/apis/{gv}"), &[])?));
        }
    }
    Ok(out)
}

/// The first resource (in discovery order) `name` means.
///
/// # Errors
/// [`CliError::Usage`] when none does.
pub(crate) fn resolve<'a>(resources: &'a [ApiResource], name: &str) -> Result<&'a ApiResource> {
    resources.iter().find(|r| r.is_named(name)).ok_or_else(|| CliError::Usage(format!("the server doesn't have a resource type {name:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resources() -> Vec<ApiResource> {
        let core = json!({"groupVersion": "v1", "resources": [
            {"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap", "shortNames": ["cm"]},
            {"name": "events", "singularName": "event", "namespaced": true, "kind": "Event", "shortNames": ["ev"]},
            {"name": "namespaces", "singularName": "namespace", "namespaced": false, "kind": "Namespace", "shortNames": ["ns"]},
            {"name": "namespaces/status", "singularName": "", "namespaced": false, "kind": "Namespace"},
        ]});
        let apps = json!({"groupVersion": "apps/v1", "resources": [
            {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment", "shortNames": ["deploy"]},
        ]});
        let events = json!({"groupVersion": "events.k8s.io/v1", "resources": [
            {"name": "events", "singularName": "event", "namespaced": true, "kind": "Event", "shortNames": ["ev"]},
        ]});
        let mut out = from_resource_list(&core);
        out.extend(from_resource_list(&apps));
        out.extend(from_resource_list(&events));
        out
    }

    #[test]
    fn names_resolve_as_kubectl_resolves_them() {
        let r = resources();
        assert_eq!(r.len(), 5, "subresources are left out");
        for name in ["deploy", "deployment", "deployments", "Deployment", "deployments.apps", "deployment.apps", "deploy.apps"] {
            assert_eq!(resolve(&r, name).unwrap().qualified(), "deployments.apps", "{name}");
        }
        assert_eq!(resolve(&r, "cm").unwrap().qualified(), "configmaps");
        // The core group comes first; the group picks another.
        assert_eq!(resolve(&r, "events").unwrap().group, "");
        assert_eq!(resolve(&r, "events.events.k8s.io").unwrap().group, "events.k8s.io");
        assert!(resolve(&r, "widgets").is_err());
    }

    #[test]
    fn object_paths() {
        let r = resources();
        assert_eq!(resolve(&r, "cm").unwrap().object_path("dev", "x"), "/api/v1/namespaces/dev/configmaps/x");
        assert_eq!(resolve(&r, "deploy").unwrap().object_path("default", "web"), "/apis/apps/v1/namespaces/default/deployments/web");
        assert_eq!(resolve(&r, "ns").unwrap().object_path("default", "kube-system"), "/api/v1/namespaces/kube-system");
    }
}
