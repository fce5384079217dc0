//! The built-in Kubernetes kinds a store knows from the start: every stored kind of the group
//! versions kube-apiserver serves by default (core/v1, apps/v1, batch/v1, autoscaling/v2,
//! rbac.authorization.k8s.io/v1, networking.k8s.io/v1, coordination.k8s.io/v1, policy/v1,
//! discovery.k8s.io/v1, events.k8s.io/v1, storage.k8s.io/v1, admissionregistration.k8s.io/v1,
//! scheduling.k8s.io/v1, node.k8s.io/v1, certificates.k8s.io/v1,
//! flowcontrol.apiserver.k8s.io/v1) and apiextensions.k8s.io/v1, with the facts
//! kube-apiserver's discovery and registry strategies give them: plural, short names, scope,
//! the `status` subresource, and whether the strategy keeps `metadata.generation`.
//!
//! Their schemas are the engine's compiled-in Kubernetes OpenAPI ([`SchemaSource::Builtin`]),
//! so a stored type record names its definition, not a copy of the document.

use super::types::{SchemaSource, TypeSpec};

/// One built-in kind, as a row of the table below.
struct Kind {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short_names: &'static [&'static str],
    namespaced: bool,
    status: bool,
    /// The registry strategy sets `metadata.generation` on create and bumps it on spec changes.
    generation: bool,
}

/// Flags of a row: namespaced, status subresource, generation.
const NS: u8 = 1;
const STATUS: u8 = 2;
const GENERATION: u8 = 4;

const fn kind(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short_names: &'static [&'static str],
    flags: u8,
) -> Kind {
    Kind {
        group,
        version,
        kind,
        plural,
        short_names,
        namespaced: flags & NS != 0,
        status: flags & STATUS != 0,
        generation: flags & GENERATION != 0,
    }
}

/// Every built-in kind (as `kubectl api-resources` lists them on a 1.33+ cluster).
const KINDS: &[Kind] = &[
    kind("", "v1", "ComponentStatus", "componentstatuses", &["cs"], 0),
    kind("", "v1", "ConfigMap", "configmaps", &["cm"], NS),
    kind("", "v1", "Endpoints", "endpoints", &["ep"], NS),
    kind("", "v1", "Event", "events", &["ev"], NS),
    kind("", "v1", "LimitRange", "limitranges", &["limits"], NS),
    kind("", "v1", "Namespace", "namespaces", &["ns"], STATUS),
    kind("", "v1", "Node", "nodes", &["no"], STATUS),
    kind("", "v1", "PersistentVolume", "persistentvolumes", &["pv"], STATUS),
    kind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", &["pvc"], NS | STATUS),
    // Pods carry a generation since Kubernetes 1.33 (observedGeneration tracking).
    kind("", "v1", "Pod", "pods", &["po"], NS | STATUS | GENERATION),
    kind("", "v1", "PodTemplate", "podtemplates", &[], NS),
    kind("", "v1", "ReplicationController", "replicationcontrollers", &["rc"], NS | STATUS | GENERATION),
    kind("", "v1", "ResourceQuota", "resourcequotas", &["quota"], NS | STATUS),
    kind("", "v1", "Secret", "secrets", &[], NS),
    kind("", "v1", "Service", "services", &["svc"], NS | STATUS),
    kind("", "v1", "ServiceAccount", "serviceaccounts", &["sa"], NS),
    kind("apps", "v1", "ControllerRevision", "controllerrevisions", &[], NS),
    kind("apps", "v1", "DaemonSet", "daemonsets", &["ds"], NS | STATUS | GENERATION),
    kind("apps", "v1", "Deployment", "deployments", &["deploy"], NS | STATUS | GENERATION),
    kind("apps", "v1", "ReplicaSet", "replicasets", &["rs"], NS | STATUS | GENERATION),
    kind("apps", "v1", "StatefulSet", "statefulsets", &["sts"], NS | STATUS | GENERATION),
    kind("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", &["hpa"], NS | STATUS | GENERATION),
    kind("batch", "v1", "CronJob", "cronjobs", &["cj"], NS | STATUS | GENERATION),
    kind("batch", "v1", "Job", "jobs", &[], NS | STATUS | GENERATION),
    kind("coordination.k8s.io", "v1", "Lease", "leases", &[], NS),
    kind("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", &[], NS),
    kind("networking.k8s.io", "v1", "IPAddress", "ipaddresses", &["ip"], 0),
    kind("networking.k8s.io", "v1", "Ingress", "ingresses", &["ing"], NS | STATUS | GENERATION),
    kind("networking.k8s.io", "v1", "IngressClass", "ingressclasses", &[], 0),
    kind("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", &["netpol"], NS | GENERATION),
    kind("networking.k8s.io", "v1", "ServiceCIDR", "servicecidrs", &[], STATUS),
    kind("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", &["pdb"], NS | STATUS | GENERATION),
    kind("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", &[], 0),
    kind("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", &[], 0),
    kind("rbac.authorization.k8s.io", "v1", "Role", "roles", &[], NS),
    kind("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", &[], NS),
    kind("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicy", "mutatingadmissionpolicies", &[], GENERATION),
    kind("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings", &[], GENERATION),
    kind("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", &[], GENERATION),
    kind("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", &[], STATUS | GENERATION),
    kind("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", &[], GENERATION),
    kind("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", &[], GENERATION),
    kind("certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests", &["csr"], STATUS),
    kind("certificates.k8s.io", "v1", "ClusterTrustBundle", "clustertrustbundles", &[], 0),
    kind("certificates.k8s.io", "v1", "PodCertificateRequest", "podcertificaterequests", &[], NS | STATUS),
    // events.k8s.io's Event is core/v1's Event in another shape: the same "ev" short name, which
    // resolves to core/v1's (kubectl prefers the core group too).
    kind("events.k8s.io", "v1", "Event", "events", &["ev"], NS),
    kind("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", &[], STATUS | GENERATION),
    kind("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration", "prioritylevelconfigurations", &[], STATUS | GENERATION),
    kind("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", &[], 0),
    // Generation 1 on create, never bumped (its value is immutable).
    kind("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", &["pc"], GENERATION),
    kind("storage.k8s.io", "v1", "CSIDriver", "csidrivers", &[], 0),
    kind("storage.k8s.io", "v1", "CSINode", "csinodes", &[], STATUS),
    kind("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities", &[], NS),
    kind("storage.k8s.io", "v1", "StorageClass", "storageclasses", &["sc"], 0),
    kind("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", &[], STATUS),
    kind("storage.k8s.io", "v1", "VolumeAttributesClass", "volumeattributesclasses", &["vac"], 0),
    kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", &["crd", "crds"], STATUS | GENERATION),
];

impl Kind {
    fn spec(&self) -> TypeSpec {
        TypeSpec::new(self.group, self.version, self.kind, self.plural)
            .namespaced(self.namespaced)
            .with_status_subresource(self.status)
            .with_short_names(self.short_names.iter().map(|s| (*s).to_string()).collect())
            .with_generation(self.generation)
            .with_schema(SchemaSource::Builtin {
                // Every row names a kind of the compiled-in document (checked by the tests below).
                definition: crate::schema::builtin::definition_name(self.group, self.version, self.kind).unwrap_or_default().to_string(),
            })
    }
}

/// The types of every built-in kind, in the order above.
#[must_use]
pub fn builtin_types() -> Vec<TypeSpec> {
    KINDS.iter().map(Kind::spec).collect()
}

/// The type of a built-in kind, by group, version and kind (`("apps", "v1", "Deployment")`).
#[must_use]
pub fn builtin_type(group: &str, version: &str, kind: &str) -> Option<TypeSpec> {
    KINDS.iter().find(|k| k.group == group && k.version == version && k.kind == kind).map(Kind::spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_a_kind_of_the_compiled_in_document_with_its_status() {
        for k in KINDS {
            let def = crate::schema::builtin::kinds().iter().find(|b| (b.group, b.version, b.kind) == (k.group, k.version, k.kind));
            let def = def.unwrap_or_else(|| panic!("{} {} {} has no definition", k.group, k.version, k.kind));
            // A status subresource needs a status struct (some kinds have one but no subresource).
            assert!(!k.status || def.has_status, "{}: status subresource without a status struct", k.kind);
        }
        assert_eq!(
            builtin_type("", "v1", "Pod").map(|t| t.schema),
            Some(SchemaSource::Builtin { definition: "io.k8s.api.core.v1.Pod".into() })
        );
    }

    #[test]
    fn every_kind_once_and_short_names_unique() {
        let types = builtin_types();
        let mut names: Vec<String> = types.iter().map(TypeSpec::resource).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), types.len());
        // Unique but for "ev", both Events' (as kube-apiserver has it).
        let mut short: Vec<&String> = types.iter().filter(|t| t.group != "events.k8s.io").flat_map(|t| &t.short_names).collect();
        let n = short.len();
        short.sort();
        short.dedup();
        assert_eq!(short.len(), n);
        let cm = builtin_type("", "v1", "ConfigMap").expect("ConfigMap is built in");
        assert!(cm.namespaced && !cm.generation && !cm.status_subresource);
        let deploy = builtin_type("apps", "v1", "Deployment").expect("Deployment is built in");
        assert!(deploy.generation && deploy.status_subresource && deploy.short_names == ["deploy"]);
    }
}
