//! The built-in `ObjectMeta` types every loaded schema holds, as Kubernetes publishes them.

/// Name of the built-in `ObjectMeta` type every loaded schema holds (unless the document defines
/// its own); the `metadata` of a CRD's root and of embedded resources is of this type.
pub const OBJECT_META_TYPE: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The built-in `ObjectMeta` and the types it uses, as Kubernetes publishes them (OpenAPI v3,
/// descriptions left out): labels and annotations granular maps, finalizers a set,
/// ownerReferences a map list keyed by `uid` of atomic items, managedFields an atomic list.
pub(super) const OBJECT_META_DEFINITIONS: &str = r##"{
  "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
    "type": "object",
    "properties": {
      "annotations": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
      "creationTimestamp": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
      "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
      "deletionTimestamp": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
      "finalizers": {
        "type": "array", "items": {"type": "string", "default": ""},
        "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge"
      },
      "generateName": {"type": "string"},
      "generation": {"type": "integer", "format": "int64"},
      "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
      "managedFields": {
        "type": "array",
        "items": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry"},
        "x-kubernetes-list-type": "atomic"
      },
      "name": {"type": "string"},
      "namespace": {"type": "string"},
      "ownerReferences": {
        "type": "array",
        "items": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"},
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"],
        "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"
      },
      "resourceVersion": {"type": "string"},
      "selfLink": {"type": "string"},
      "uid": {"type": "string"}
    }
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference": {
    "type": "object",
    "required": ["apiVersion", "kind", "name", "uid"],
    "properties": {
      "apiVersion": {"type": "string", "default": ""},
      "blockOwnerDeletion": {"type": "boolean"},
      "controller": {"type": "boolean"},
      "kind": {"type": "string", "default": ""},
      "name": {"type": "string", "default": ""},
      "uid": {"type": "string", "default": ""}
    },
    "x-kubernetes-map-type": "atomic"
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry": {
    "type": "object",
    "properties": {
      "apiVersion": {"type": "string"},
      "fieldsType": {"type": "string"},
      "fieldsV1": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"},
      "manager": {"type": "string"},
      "operation": {"type": "string"},
      "subresource": {"type": "string"},
      "time": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}
    }
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {"type": "object"},
  "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string", "format": "date-time"}
}"##;

/// Names of the built-in types a `$ref` may target though the document does not define them.
pub(super) const BUILTIN_NAMES: [&str; 5] = [
    OBJECT_META_TYPE,
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
];
