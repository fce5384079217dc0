//! The built-in schema (`schema::builtin`, generated from the upstream protos) against
//! structured-merge-diff's own Kubernetes schema (`tests/fixtures/smd/k8s-schema.yaml`, see the
//! README there): for every type both have, field by field, the list types, list map keys and
//! map/struct atomicity agree, except where the API changed since that schema was cut (listed
//! below with the reason).

use fieldstore_engine::schema::builtin;
use fieldstore_engine::schema::{parse_smd_yaml, Atom, ElementRelationship, Schema, TypeRef};
use std::collections::{BTreeMap, BTreeSet};

fn smd_schema() -> Schema {
    let path = format!("{}/tests/fixtures/smd/k8s-schema.yaml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_smd_yaml(&text).expect("the SMD schema parses")
}

/// What one side says about a list or map, as text for the report.
fn rel(r: ElementRelationship) -> &'static str {
    match r {
        ElementRelationship::Atomic => "atomic",
        ElementRelationship::Associative => "associative",
        ElementRelationship::Separable => "separable",
    }
}

fn list_desc(a: &Atom) -> Option<String> {
    a.list.as_ref().map(|l| {
        let keys: Vec<&str> = l.keys.iter().map(|k| &**k).collect();
        if keys.is_empty() {
            rel(l.relationship).to_string()
        } else {
            format!("{} keys {keys:?}", rel(l.relationship))
        }
    })
}

/// The name of a named reference, without the loader's `#atomic` / `#granular` suffix.
fn base_name(tr: &TypeRef) -> Option<&str> {
    match tr {
        TypeRef::Named(n, _) => Some(n.split('#').next().unwrap_or(n)),
        _ => None,
    }
}

struct Walk<'s> {
    smd: &'s Schema,
    ours: &'s Schema,
    /// Differences: path → (SMD's, ours).
    diffs: BTreeMap<String, (String, String)>,
    /// Fields only one side has (not compared): path.
    only_smd: BTreeSet<String>,
    only_ours: BTreeSet<String>,
}

impl Walk<'_> {
    fn diff(&mut self, path: &str, what: &str, smd: String, ours: String) {
        if smd != ours {
            self.diffs.insert(format!("{path} {what}"), (smd, ours));
        }
    }

    /// Compares two references; `descend` walks into the fields of named types too (only for the
    /// definition being compared: other named types are compared on their own).
    fn compare(&mut self, path: &str, a: &TypeRef, b: &TypeRef, descend: bool) {
        let (Some(aa), Some(bb)) = (self.smd.resolve(a), self.ours.resolve(b)) else {
            self.diff(path, "resolves", format!("{}", self.smd.resolve(a).is_some()), format!("{}", self.ours.resolve(b).is_some()));
            return;
        };
        if let (Some(na), Some(nb)) = (base_name(a), base_name(b)) {
            self.diff(path, "type", na.to_string(), nb.to_string());
            // A reference to a named type: the type is compared on its own, unless the reference
            // overrides its map relationship (`x-kubernetes-map-type` beside a `$ref`).
            let overrides = |tr: &TypeRef| matches!(tr, TypeRef::Named(n, _) if n.contains('#'));
            if !descend && !overrides(a) && !overrides(b) {
                return;
            }
        }
        let inline = descend || !matches!(a, TypeRef::Named(..)) || !matches!(b, TypeRef::Named(..));
        let shape = |x: &Atom| {
            format!(
                "{}{}{}",
                if x.scalar.is_some() { "s" } else { "" },
                if x.list.is_some() { "l" } else { "" },
                if x.map.is_some() { "m" } else { "" }
            )
        };
        self.diff(path, "shape", shape(aa), shape(bb));
        if let (Some(la), Some(lb)) = (&aa.list, &bb.list) {
            self.diff(path, "list", list_desc(aa).unwrap_or_default(), list_desc(bb).unwrap_or_default());
            if inline {
                self.compare(&format!("{path}[]"), &la.element_type, &lb.element_type, false);
            }
        }
        if let (Some(ma), Some(mb)) = (&aa.map, &bb.map) {
            self.diff(path, "map", rel(ma.relationship).to_string(), rel(mb.relationship).to_string());
            if inline {
                for fa in &ma.fields {
                    let fpath = format!("{path}.{}", fa.name);
                    match mb.find_field(&fa.name) {
                        Some(fb) => self.compare(&fpath, &fa.ty, &fb.ty, false),
                        None => {
                            self.only_smd.insert(fpath);
                        }
                    }
                }
                for fb in &mb.fields {
                    if ma.find_field(&fb.name).is_none() {
                        self.only_ours.insert(format!("{path}.{}", fb.name));
                    }
                }
                if !ma.element_type.is_empty() && !mb.element_type.is_empty() {
                    self.compare(&format!("{path}{{}}"), &ma.element_type, &mb.element_type, false);
                }
            }
        }
    }
}

/// Where the two schemas differ, and why. Each entry is a path (definition, then fields; `[]` a
/// list's items, `{}` a map's values) and what differs there.
const EXCEPTIONS: &[(&str, &str)] = &[
    // Reference and selector structs made atomic (`+structType=atomic`) after SMD's schema was cut.
    ("io.k8s.api.core.v1.ConfigMapKeySelector map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.EndpointAddress map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.EndpointPort map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.LocalObjectReference map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.NodeSelector map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.NodeSelectorTerm map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.ObjectFieldSelector map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.ObjectReference map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.ResourceFieldSelector map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.ScopeSelector map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.SecretKeySelector map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.SecretReference map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.TopologySelectorTerm map", STRUCT_ATOMIC),
    ("io.k8s.api.core.v1.TypedLocalObjectReference map", STRUCT_ATOMIC),
    ("io.k8s.api.rbac.v1.RoleRef map", STRUCT_ATOMIC),
    ("io.k8s.api.rbac.v1.Subject map", STRUCT_ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector map", STRUCT_ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference map", STRUCT_ATOMIC),
    // String maps made atomic (`+mapType=atomic`) later.
    ("io.k8s.api.core.v1.PodSpec.nodeSelector map", MAP_ATOMIC),
    ("io.k8s.api.core.v1.ReplicationControllerSpec.selector map", MAP_ATOMIC),
    ("io.k8s.api.core.v1.ServiceSpec.selector map", MAP_ATOMIC),
    // List types declared later.
    ("io.k8s.api.core.v1.ServiceSpec.ports list", "+listType=map with +listMapKey=port and +listMapKey=protocol declared since: SMD's schema keys by the patch merge key `port` alone"),
    ("io.k8s.api.batch.v1.JobStatus.conditions list", "+listType=atomic added to Job conditions (their patchStrategy=merge on `type` stays for strategic merge patches); SMD's schema fell back to the patch strategy"),
    // Types renamed or split since.
    ("io.k8s.api.core.v1.Lifecycle.postStart type", "Handler renamed LifecycleHandler (Kubernetes 1.23)"),
    ("io.k8s.api.core.v1.Lifecycle.preStop type", "Handler renamed LifecycleHandler (Kubernetes 1.23)"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimSpec.resources type", "ResourceRequirements replaced by VolumeResourceRequirements (without `claims`) since"),
    ("io.k8s.api.core.v1.PersistentVolumeSpec.glusterfs type", "a GlusterfsPersistentVolumeSource (with an endpoints namespace) in the current API; SMD's schema has the pod volume source"),
    // Converter: SMD's schema was converted from OpenAPI v2 by the older `ToSchema`; Kubernetes
    // converts its OpenAPI v3 document with `ToSchemaFromOpenAPI`, as this schema is.
    ("io.k8s.api.apps.v1.ControllerRevision.data type", RAW_EXTENSION),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent.object type", RAW_EXTENSION),
    ("io.k8s.apimachinery.pkg.runtime.RawExtension shape", RAW_EXTENSION),
    ("io.k8s.apimachinery.pkg.util.intstr.IntOrString shape", "OpenAPI v3 publishes IntOrString as `oneOf: [integer, string]` without a type, which the v3 converter reads as untyped (scalar, list or map); v2's `type: string` was an untyped scalar"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Patch map", PROPERTYLESS_OBJECT),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Patch shape", PROPERTYLESS_OBJECT),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Patch{} type", PROPERTYLESS_OBJECT),
];

const STRUCT_ATOMIC: &str = "+structType=atomic added to the type after SMD's schema was cut";
const MAP_ATOMIC: &str = "+mapType=atomic added to the field after SMD's schema was cut";
const RAW_EXTENSION: &str =
    "the v2 converter replaced references to RawExtension by the atomic untyped type; the v3 converter makes RawExtension itself an untyped scalar";
const PROPERTYLESS_OBJECT: &str =
    "`type: object` without properties: a granular map of deduced values for the v3 converter, the atomic untyped type for SMD's schema";

/// Fields SMD's schema has that the API has since removed.
const REMOVED_FIELDS: &[&str] = &[
    "io.k8s.api.core.v1.EventSeries.state",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta.clusterName",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta.initializers",
];

fn compare_all() -> (usize, Walk<'static>) {
    let smd: &'static Schema = Box::leak(Box::new(smd_schema()));
    let ours = builtin::schema();
    let mut w = Walk { smd, ours, diffs: BTreeMap::new(), only_smd: BTreeSet::new(), only_ours: BTreeSet::new() };
    let mut common = 0;
    for t in smd.types() {
        if t.name.starts_with("__") {
            continue;
        }
        let (Some(a), Some(b)) = (smd.named(&t.name), ours.named(&t.name)) else { continue };
        common += 1;
        w.compare(&t.name, &a, &b, true);
    }
    (common, w)
}

#[test]
fn list_types_map_keys_and_atomicity_agree_with_structured_merge_diff() {
    let (common, w) = compare_all();
    // core/v1, apps/v1, batch/v1, networking/v1, rbac/v1 and meta/v1 types, the quantity, int-or-string
    // and raw extension types.
    assert!(common >= 250, "only {common} types in common");
    let expected: BTreeSet<&str> = EXCEPTIONS.iter().map(|(p, _)| *p).collect();
    let unexpected: Vec<String> = w
        .diffs
        .iter()
        .filter(|(p, _)| !expected.contains(p.as_str()))
        .map(|(p, (a, b))| format!("{p}: structured-merge-diff has {a}, ours {b}"))
        .collect();
    assert!(unexpected.is_empty(), "differences without a listed reason:\n{}", unexpected.join("\n"));
    let stale: Vec<&str> = expected.iter().filter(|p| !w.diffs.contains_key(**p)).copied().collect();
    assert!(stale.is_empty(), "listed exceptions that no longer differ: {stale:?}");
}

#[test]
fn only_removed_fields_are_missing_from_the_built_in_schema() {
    let (_, w) = compare_all();
    assert_eq!(w.only_smd.iter().map(String::as_str).collect::<Vec<_>>(), REMOVED_FIELDS);
    // Fields added since (not compared) exist too: e.g. ephemeral containers.
    assert!(w.only_ours.contains("io.k8s.api.core.v1.PodSpec.ephemeralContainers"));
}
