//! Kubernetes REST paths: `/api/v1/…` and `/apis/GROUP/VERSION/…`, with or without
//! `namespaces/NS/`, a `watch/` prefix, a name and a subresource.

use super::reply::Failure;
use fieldstore_engine::store::TypeSpec;

/// What a resource path names.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The resource type.
    pub(crate) spec: TypeSpec,
    /// The namespace of the path (`namespaces/NS/…`), if any.
    pub(crate) namespace: Option<String>,
    /// The object's name, if the path names one.
    pub(crate) name: Option<String>,
    /// The subresource (`status`, `blame`, `history`, `log`), if any.
    pub(crate) subresource: Option<String>,
    /// Whether the path had the legacy `watch/` prefix.
    pub(crate) watch: bool,
}

impl Target {
    /// The namespace as the store takes it.
    pub(crate) fn ns(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
}

/// The subresources served, by their exact names: Kubernetes' `status`, `scale` (of the types
/// that have them) and `finalize` (of namespaces), fieldstore's history (`blame`, `history`,
/// `log`) and the object at a revision
/// (`at`). Any other is 404.
pub(crate) const SUBRESOURCES: [&str; 7] = ["status", "scale", "finalize", "blame", "history", "log", "at"];

/// Resolves a path against the registered types (`lookup` finds one by its resource name:
/// `plural` for the core group, the served version `plural.version.group` otherwise): the
/// resource it names, or `None` for a path that is not a resource path.
///
/// # Errors
/// 404 for a path under `/api/v1` or `/apis/G/V` that names no registered resource (a `Status`
/// under a built-in group version, else the plain `404 page not found`).
pub(crate) fn route(path: &str, lookup: impl Fn(&str) -> Option<TypeSpec>) -> Result<Option<Target>, Failure> {
    // Segments are percent-decoded (`system%3Anode` is `system:node`).
    let decoded: Vec<String> =
        path.trim_matches('/').split('/').map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()).collect();
    let segs: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] if !rest.is_empty() => ("", *v, rest),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => (*g, *v, rest),
        _ => return Ok(None),
    };
    // Under a built-in group version an unknown resource is a `Status`; elsewhere (a custom
    // resource's group, no group at all) kube-apiserver's plain 404.
    let missing = || if builtin_group_version(group, version) { Failure::no_route() } else { Failure::page_not_found() };
    // `.` and `..` name nothing (a client that resolves them asks for another path).
    if rest.iter().any(|s| s.is_empty() || *s == "." || *s == "..") {
        return Err(missing());
    }
    let (watch, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    let in_gv = |plural: &str| {
        let resource = if group.is_empty() { plural.to_string() } else { format!("{plural}.{version}.{group}") };
        lookup(&resource).filter(|t| t.version == version && t.plural == plural)
    };
    // `namespaces/NS/RESOURCE…`, unless the third segment is a subresource of the namespace.
    let (namespace, rest) = match rest {
        ["namespaces", ns, r, more @ ..] if !more.is_empty() || in_gv(r).is_some() => (Some(ns.to_string()), &rest[2..]),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [p] => (*p, None, None),
        [p, n] => (*p, Some(n.to_string()), None),
        [p, n, s] if SUBRESOURCES.contains(s) => (*p, Some(n.to_string()), Some(s.to_string())),
        _ => return Err(missing()),
    };
    let spec = in_gv(plural).ok_or_else(missing)?;
    if namespace.is_some() && !spec.namespaced {
        return Err(missing());
    }
    if name.is_some() && spec.namespaced && namespace.is_none() {
        return Err(missing());
    }
    Ok(Some(Target { spec, namespace, name, subresource, watch }))
}

/// Whether the built-in kinds have `group`/`version` (`""`/`v1`, `apps`/`v1`).
fn builtin_group_version(group: &str, version: &str) -> bool {
    static SET: std::sync::OnceLock<std::collections::HashSet<(String, String)>> = std::sync::OnceLock::new();
    SET.get_or_init(|| fieldstore_engine::store::builtin_types().into_iter().map(|t| (t.group, t.version)).collect())
        .contains(&(group.to_string(), version.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fieldstore_engine::store::builtin_types;

    fn lookup(resource: &str) -> Option<TypeSpec> {
        builtin_types().into_iter().find(|t| t.versioned_resource() == resource)
    }

    fn target(p: &str) -> Target {
        route(p, lookup).unwrap().unwrap_or_else(|| panic!("{p} is not a resource path"))
    }

    #[test]
    fn resource_paths() {
        let t = target("/api/v1/namespaces/default/configmaps/x");
        assert_eq!((t.spec.plural.as_str(), t.ns(), t.name.as_deref()), ("configmaps", Some("default"), Some("x")));
        let t = target("/api/v1/namespaces/default");
        assert_eq!((t.spec.plural.as_str(), t.ns(), t.name.as_deref()), ("namespaces", None, Some("default")));
        let t = target("/api/v1/namespaces/default/status");
        assert_eq!((t.name.as_deref(), t.subresource.as_deref()), (Some("default"), Some("status")));
        let t = target("/apis/apps/v1/watch/namespaces/a/deployments");
        assert!(t.watch && t.name.is_none());
        let t = target("/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Abasic-user");
        assert_eq!(t.name.as_deref(), Some("system:basic-user"));
        let t = target("/api/v1/pods");
        assert_eq!((t.ns(), t.name.as_deref()), (None, None));
        let t = target("/api/v1/namespaces/a/pods/p/status");
        assert_eq!(t.subresource.as_deref(), Some("status"));
        assert!(matches!(route("/version", lookup), Ok(None)));
        for bad in ["/api/v1/nothings", "/api/v1/namespaces/a/nodes", "/api/v1/pods/p", "/apis/apps/v2/deployments", "/api/v1/a/b/c/d"] {
            assert_eq!(route(bad, lookup).unwrap_err().code(), 404, "{bad}");
        }
        for sub in SUBRESOURCES {
            assert_eq!(target(&format!("/api/v1/namespaces/a/configmaps/x/{sub}")).subresource.as_deref(), Some(sub));
        }
    }

    /// Only the exact names of the served subresources, and no `.` or `..` segment.
    #[test]
    fn unknown_subresources_and_dot_segments_name_nothing() {
        for bad in [
            "/api/v1/namespaces/default/configmaps/x/../history",
            "/api/v1/namespaces/default/configmaps/../log",
            "/api/v1/namespaces/default/configmaps/./log",
            "/api/v1/namespaces/default/configmaps/x/%2E%2E/log",
            "/api/v1/namespaces/default/configmaps/%2e%2e",
            "/api/v1/namespaces/../configmaps/x",
            "/api/v1/namespaces/default/configmaps/x/UPPER/log",
            "/api/v1/namespaces/default/configmaps/x/LOG",
            "/api/v1/namespaces/default/configmaps/x/Status",
            "/api/v1/namespaces/default/configmaps/x/logs",
            "/api/v1/namespaces/default/configmaps/x/log%2F",
        ] {
            assert_eq!(route(bad, lookup).unwrap_err().code(), 404, "{bad}");
        }
    }
}
