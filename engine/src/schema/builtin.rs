//! The schemas of Kubernetes' built-in types, derived at build time from the upstream protos the
//! way kube-openapi derives Kubernetes' OpenAPI.
//!
//! `engine/build.rs` compiles the upstream `generated.proto` files (`proto/k8s.io/…`: core/v1,
//! apps/v1, batch/v1, rbac/v1, networking/v1, coordination/v1, policy/v1, discovery/v1,
//! autoscaling/v2, apiextensions/v1, meta/v1, runtime, intstr, resource and scheduling/v1alpha3)
//! with protox, keeping their comments, and reads the Go struct facts the protos lack
//! (`codec/k8s-api/gofields.json`, the one copy the codec also reads: JSON names, `omitempty`, pointers, inline members). The
//! protos' comments are the Go types' comments, with the same markers kube-openapi's
//! `openapi-gen` reads, so the build writes one OpenAPI v3 document in the form kube-apiserver
//! publishes at `/openapi/v3` ([`OPENAPI_V3_JSON`], [`openapi_v3`]): `components.schemas` with one
//! definition per message, named as Kubernetes names them (`io.k8s.api.core.v1.Pod`,
//! `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`,
//! `io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition`: the Go
//! package path with its domain reversed). [`schema`] loads it once with the engine's
//! [`from_openapi_v3_components`], which converts it as Kubernetes converts its own document for
//! Server-Side Apply; strategic merge patches read the same schema
//! ([`PatchMeta::new`](crate::patch::PatchMeta::new)`(schema(), definition)`).
//!
//! # Example
//!
//! ```
//! use fieldstore_engine::schema::builtin;
//! use fieldstore_engine::{fieldmanager::Time, FieldManager};
//!
//! let root = builtin::type_ref("apps", "v1", "Deployment").expect("a built-in kind");
//! let fm = FieldManager::new(builtin::schema(), &root, "apps/v1").with_kind("Deployment");
//! let config = serde_json::json!({
//!     "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
//!     "spec": {"template": {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80}]}]}}}});
//! let out = fm.apply(None, &config, "kubectl", false, &Time::from_unix_seconds(0))?;
//! let fields = out.managed_fields()[0].fields_v1.as_ref().map(|f| f.get().to_string()).unwrap_or_default();
//! // Containers are keyed by name, their ports by port and protocol (TCP by default).
//! assert!(fields.contains(r#"k:{\"name\":\"app\"}"#));
//! assert!(fields.contains(r#"k:{\"containerPort\":80,\"protocol\":\"TCP\"}"#));
//! # Ok::<(), fieldstore_engine::Error>(())
//! ```
//!
//! # From Go types to definitions
//!
//! - A struct is `type: object` with a property per member, by JSON name; members tagged
//!   `json:"-"` are left out; inline (embedded) members are flattened into their parent
//!   (`Volume`'s `VolumeSource`, `Probe`'s `ProbeHandler`, `EphemeralContainer`'s common part, …);
//!   kinds (structs embedding `TypeMeta`) get `apiVersion` and `kind` strings. Members without
//!   `+optional` or `omitempty` are listed in `required`.
//! - Members: proto scalars by Go type (`string`; `integer` with format `int32`/`int64`;
//!   `number`/`double`; `boolean`; `[]byte` as `string`/`byte`); slices as `type: array` with
//!   `items`; maps as `type: object` with `additionalProperties`; structs as a reference,
//!   `$ref: "#/components/schemas/<name>"` when alone, `allOf: [{$ref}]` beside a default or
//!   extensions (kube-openapi's v3 form).
//! - Defaults (kube-openapi's `mustEnforceDefault`): a `+default=` marker (JSON, or `ref(Const)` of a
//!   known constant such as `ref(AzureDataDiskCachingReadWrite)`); else `{}` for a non-pointer
//!   struct and the zero value (`""`, `0`, `false`) for a non-pointer scalar without `omitempty`,
//!   for members as for non-pointer list items and map values. Defaults matter to Server-Side
//!   Apply where a map-list item omits a key field: `ContainerPort.protocol` and
//!   `ServicePort.protocol` default to `"TCP"`.
//! - Types with a custom OpenAPI definition in Go are written as kube-apiserver publishes them, and
//!   get no enforced default: `Time` and `MicroTime` `{type: string, format: date-time}`,
//!   `Duration` `{type: string}`, `IntOrString` `{format: int-or-string, oneOf: [integer, string]}`,
//!   `Quantity` `{oneOf: [string, number]}`, `RawExtension` and `FieldsV1` `{type: object}`, and
//!   apiextensions' `JSON`, `JSONSchemaPropsOrArray`, `JSONSchemaPropsOrBool` and
//!   `JSONSchemaPropsOrStringArray` `{}` (any value). `metav1.Verbs` (a named `[]string`) is an
//!   array of strings in place.
//! - `x-kubernetes-group-version-kind` on every kind's definition (and its list's): the kinds of
//!   each group's package; the meta/v1 options kinds and `WatchEvent` in every group version, as
//!   `metav1.AddToGroupVersion` registers them; `Status`, `APIVersions`, `APIGroup`,
//!   `APIGroupList` and `APIResourceList` as unversioned core `v1` kinds. [`kinds`] lists them.
//!
//! # Markers
//!
//! As `openapi-gen` maps them (the values verbatim; several occurrences make an array):
//!
//! | marker on a member | extension |
//! | --- | --- |
//! | `+listType=atomic\|set\|map` | `x-kubernetes-list-type` |
//! | `+listMapKey=k` (repeatable) | `x-kubernetes-list-map-keys` (always an array) |
//! | `+patchStrategy=merge`, `merge,retainKeys`, `retainKeys`, `replace` | `x-kubernetes-patch-strategy` |
//! | `+patchMergeKey=k` | `x-kubernetes-patch-merge-key` |
//! | `+mapType=atomic\|granular`, `+structType=atomic\|granular` | `x-kubernetes-map-type` |
//! | `+default=v` | `default` |
//! | `+optional` | left out of `required` |
//! | `+k8s:openapi-gen=false` | the member (or type) is left out |
//!
//! and on a type, `+structType=atomic` gives the definition `x-kubernetes-map-type: atomic`
//! (`LocalObjectReference`, `LabelSelector`, `OwnerReference`, `ObjectReference`, …).
//!
//! What the loader makes of them (Kubernetes' `schemaconv`): a list with `x-kubernetes-list-type:
//! map` is associative, keyed by its `x-kubernetes-list-map-keys`; `set` is associative without
//! keys; `atomic` is atomic; without a list type a list with `patchStrategy` `merge` (or
//! `merge,retainKeys`) is associative on its `patchMergeKey`, or a set of scalars without one;
//! any other list is atomic. Maps and structs are granular unless `x-kubernetes-map-type: atomic`
//! says otherwise (on the definition, or beside a reference for one member). The patch strategy
//! and merge key of each member are kept on its field for strategic merge patches.
//!
//! # Left out, and exceptions
//!
//! - Descriptions, `enum` values, `x-kubernetes-unions` and validation extensions are not
//!   written: they do not affect merging, and leaving them out keeps the document small.
//! - `runtime/schema` (`GroupVersionKind`, … used only inside protobuf envelopes), the
//!   `+k8s:openapi-gen=false` type core/v1 `Preconditions` and the `Verbs` wrapper get no
//!   definition.
//! - Compared with structured-merge-diff's own Kubernetes schema (v4.1.2's test data,
//!   `tests/builtin_schema_vs_smd.rs`), all 253 common types agree on list types, keys and
//!   map/struct atomicity except where the API changed since (structs and maps declared atomic,
//!   `ServiceSpec.ports` keyed by port and protocol, `JobStatus.conditions` declared atomic, types
//!   renamed) and where the OpenAPI v3 converter differs from the older v2 one (`RawExtension`
//!   an untyped scalar, `IntOrString` untyped, property-less objects granular maps); that test
//!   lists each with its reason.

use super::{from_openapi_v3_components, Schema, TypeRef};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The generated OpenAPI v3 document, as text (compact JSON, keys sorted).
pub const OPENAPI_V3_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/builtin_openapi_v3.json"));

/// One kind of the built-in groups: its group, version and kind, the definition of its type, and
/// whether that type has a `status` struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinKind {
    /// The API group (empty for the core group).
    pub group: &'static str,
    /// The API version (`v1`).
    pub version: &'static str,
    /// The kind (`Pod`).
    pub kind: &'static str,
    /// The name of the kind's definition (`io.k8s.api.core.v1.Pod`), also its type's name in
    /// [`schema`].
    pub definition: &'static str,
    /// Whether the type has a `status` field holding a struct (the kinds with a status
    /// subresource are among these).
    pub has_status: bool,
}

/// The OpenAPI v3 document of the built-in types (`components.schemas`), parsed once.
pub fn openapi_v3() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(OPENAPI_V3_JSON).expect("the built-in OpenAPI document is JSON (generated by build.rs)"))
}

/// The descriptions of the built-in definitions, as text (JSON): by definition name, `""` for
/// the type's own, else by member JSON name; from the protos' comments, worded as kube-openapi's
/// `openapi-gen` words them. Apart from [`OPENAPI_V3_JSON`]: only served documents need them.
pub const DESCRIPTIONS_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/builtin_descriptions.json"));

/// [`DESCRIPTIONS_JSON`], parsed once.
pub fn descriptions() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(DESCRIPTIONS_JSON).expect("the built-in descriptions are JSON (generated by build.rs)"))
}

/// The Go zero value of each built-in kind by definition name, as text (JSON), generated by
/// `build.rs` from the Go struct facts: what `New()` of the kind reads as through
/// structured-merge-diff's reflection (members without `omitempty` always present, `null` for
/// nil pointers, slices and maps; structs always present; `metadata.creationTimestamp: null`).
pub const ZERO_VALUES_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/builtin_zero_values.json"));

/// The Go zero value of the kind whose definition is `definition`
/// (`io.k8s.api.apps.v1.Deployment` → `{"metadata": {"creationTimestamp": null}, "spec":
/// {"selector": null, "strategy": {}, "template": {…}}, "status": {}}`), `None` for a name that
/// is not a built-in kind's. kube-apiserver computes a create's managedFields against it, so
/// members Go always has get no `"."` entry of their own.
pub fn zero_value(definition: &str) -> Option<&'static Value> {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(ZERO_VALUES_JSON).expect("the built-in zero values are JSON (generated by build.rs)"))
        .get(definition)
}

/// The schema of the built-in types, loaded once from [`openapi_v3`] by
/// [`from_openapi_v3_components`], as Kubernetes converts its OpenAPI v3 document.
pub fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| from_openapi_v3_components(openapi_v3()).expect("the built-in OpenAPI document loads (checked by its tests)"))
}

/// Every kind whose definition carries `x-kubernetes-group-version-kind`, sorted by group, version
/// and kind.
pub fn kinds() -> &'static [BuiltinKind] {
    static KINDS: OnceLock<Vec<BuiltinKind>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let mut out = Vec::new();
        let schemas = openapi_v3().pointer("/components/schemas").and_then(Value::as_object);
        for (name, def) in schemas.into_iter().flatten() {
            let has_status = def.pointer("/properties/status").is_some_and(|s| s.get("$ref").is_some() || s.get("allOf").is_some());
            for gvk in def.get("x-kubernetes-group-version-kind").and_then(Value::as_array).into_iter().flatten() {
                let s = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("");
                out.push(BuiltinKind { group: s("group"), version: s("version"), kind: s("kind"), definition: name.as_str(), has_status });
            }
        }
        out.sort_by(|a, b| (a.group, a.version, a.kind).cmp(&(b.group, b.version, b.kind)));
        out
    })
}

/// The definition (and type) name of a kind: `("apps", "v1", "Deployment")` →
/// `io.k8s.api.apps.v1.Deployment`; `None` for a kind the built-in groups lack.
pub fn definition_name(group: &str, version: &str, kind: &str) -> Option<&'static str> {
    static INDEX: OnceLock<HashMap<(&'static str, &'static str, &'static str), &'static str>> = OnceLock::new();
    let index = INDEX.get_or_init(|| kinds().iter().map(|k| ((k.group, k.version, k.kind), k.definition)).collect());
    index.get(&(group, version, kind)).copied()
}

/// The root type of a kind in [`schema`], for [`crate::FieldManager::new`] and
/// [`crate::patch::PatchMeta::new`].
pub fn type_ref(group: &str, version: &str, kind: &str) -> Option<TypeRef> {
    schema().named(definition_name(group, version, kind)?)
}
