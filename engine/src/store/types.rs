//! The registry of resource types, persisted in the `types` column family.

use crate::fieldmanager::FieldManager;
use crate::schema::{self, Schema, TypeRef, DEDUCED_TYPE};
use crate::{Error, Result};
use fieldstore_codec::{Path, Set};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Where a resource type's schema comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SchemaSource {
    /// No schema: objects are merged as deduced (untyped) values.
    #[default]
    None,
    /// A structured-merge-diff schema in its YAML form, with the root type's name.
    SmdYaml {
        /// The YAML document.
        yaml: String,
        /// The name of the objects' type.
        root: String,
    },
    /// A CustomResourceDefinition (apiextensions.k8s.io/v1, as JSON): the registered version's
    /// `openAPIV3Schema`.
    Crd(Value),
    /// An OpenAPI document as Kubernetes publishes it (v2 `definitions` or v3
    /// `components.schemas`), with the name of the objects' definition.
    OpenApi {
        /// The document.
        document: Value,
        /// The definition of the objects (`io.k8s.api.core.v1.Pod`).
        root: String,
    },
    /// A definition of the engine's compiled-in Kubernetes OpenAPI (the built-in kinds'
    /// schemas, derived from k8s.io/api's definitions): shared by every type that names it, and
    /// current with the binary rather than with the record.
    Builtin {
        /// The definition of the objects (`io.k8s.api.apps.v1.Deployment`).
        definition: String,
    },
}

/// A resource type: its names, scope, schema and subresources.
///
/// # Examples
/// ```
/// use fieldstore_engine::store::TypeSpec;
/// let cm = TypeSpec::new("", "v1", "ConfigMap", "configmaps").namespaced(true);
/// assert_eq!(cm.api_version(), "v1");
/// assert_eq!(cm.resource(), "configmaps");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeSpec {
    /// API group; empty for the core group.
    pub group: String,
    /// API version objects are stored and served at.
    pub version: String,
    /// Kind of the objects.
    pub kind: String,
    /// Plural resource name (`configmaps`).
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The schema.
    pub schema: SchemaSource,
    /// Whether the `status` subresource exists (then `status` is reset on main-resource writes and
    /// everything else on status writes).
    pub status_subresource: bool,
    /// How much field history objects of this type keep.
    #[serde(default)]
    pub history: HistoryPolicy,
    /// Short names clients may use for the resource (`cm`, `deploy`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// Whether objects carry `metadata.generation` (1 on create, bumped when anything outside
    /// metadata and status changes), as the Kubernetes strategies of workloads and custom
    /// resources keep it; ConfigMaps, Secrets, Services and the like have none.
    #[serde(default = "yes")]
    pub generation: bool,
    /// A custom resource's `scale` subresource (its CRD's `subresources.scale`); the built-in
    /// kinds with one are [`super::SCALABLE`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<ScaleSubresource>,
    /// Whether a custom resource's schema changed while objects of it were stored (its CRD was
    /// updated with another schema): objects are then pruned and defaulted by the current
    /// schema as they are read, as kube-apiserver decodes stored objects.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reshaped: bool,
    /// Every version of a custom resource (its CRD's `spec.versions`; `version` is the storage
    /// version): the served ones are served ([`super::versions`]). Empty for other types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<super::versions::ApiVersionSpec>,
    /// Whether the CRD converts through a webhook (`spec.conversion.strategy: Webhook`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conversion_webhook: bool,
    /// Whether the CRD is being deleted: no new object of the type is created, and its objects
    /// are being deleted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminating: bool,
    /// Whether the CRD is gone: the type is no longer served, and only its objects' history is
    /// kept (readable through the history verbs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retired: bool,
}

/// Where a custom resource keeps what its `scale` subresource shows: JSON paths such as
/// `.spec.replicas` (a CRD's `subresources.scale`, as kube-apiserver reads it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleSubresource {
    /// `specReplicasPath`: the desired replicas, which a write of the Scale sets.
    pub spec_replicas_path: String,
    /// `statusReplicasPath`: the observed replicas.
    pub status_replicas_path: String,
    /// `labelSelectorPath`: a string holding the selector of the replicas, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector_path: Option<String>,
}

impl ScaleSubresource {
    /// The subresource a CRD's `subresources.scale` describes, if it is well formed.
    fn of(scale: &Value) -> Option<Self> {
        let path = |k: &str| scale.get(k).and_then(Value::as_str).map(str::to_string);
        Some(ScaleSubresource {
            spec_replicas_path: path("specReplicasPath")?,
            status_replicas_path: path("statusReplicasPath")?,
            label_selector_path: path("labelSelectorPath"),
        })
    }
}

fn yes() -> bool {
    true
}

impl TypeSpec {
    /// A cluster-scoped type without schema or subresources.
    #[must_use]
    pub fn new(group: impl Into<String>, version: impl Into<String>, kind: impl Into<String>, plural: impl Into<String>) -> Self {
        TypeSpec {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced: false,
            schema: SchemaSource::None,
            status_subresource: false,
            history: HistoryPolicy::default(),
            short_names: Vec::new(),
            generation: true,
            scale: None,
            reshaped: false,
            versions: Vec::new(),
            conversion_webhook: false,
            terminating: false,
            retired: false,
        }
    }

    /// Sets the short names (`cm`, `deploy`).
    #[must_use]
    pub fn with_short_names(mut self, short_names: Vec<String>) -> Self {
        self.short_names = short_names;
        self
    }

    /// Sets whether objects carry `metadata.generation` (default on).
    #[must_use]
    pub fn with_generation(mut self, generation: bool) -> Self {
        self.generation = generation;
        self
    }

    /// Sets the scope.
    #[must_use]
    pub fn namespaced(mut self, namespaced: bool) -> Self {
        self.namespaced = namespaced;
        self
    }

    /// Sets the schema.
    #[must_use]
    pub fn with_schema(mut self, schema: SchemaSource) -> Self {
        self.schema = schema;
        self
    }

    /// Turns the `status` subresource on or off.
    #[must_use]
    pub fn with_status_subresource(mut self, status: bool) -> Self {
        self.status_subresource = status;
        self
    }

    /// Sets the field-history policy (default: [`HistoryPolicy::default`](HistoryPolicy)).
    #[must_use]
    pub fn with_history(mut self, history: HistoryPolicy) -> Self {
        self.history = history;
        self
    }

    /// The type of a CustomResourceDefinition: its group, kind, plural and scope, its storage
    /// version (or first version), `subresources.status` and `subresources.scale`, and its schema.
    ///
    /// # Errors
    /// [`Error::Schema`] when the CRD lacks a name or version.
    pub fn from_crd(crd: &Value) -> Result<Self> {
        let spec = crd.get("spec").ok_or_else(|| schema_err("spec", "missing"))?;
        let s = |v: Option<&Value>, what: &str| v.and_then(Value::as_str).map(str::to_string).ok_or_else(|| schema_err(what, "missing"));
        let group = s(spec.get("group"), "spec.group")?;
        let kind = s(spec.pointer("/names/kind"), "spec.names.kind")?;
        let plural = s(spec.pointer("/names/plural"), "spec.names.plural")?;
        let versions = spec.get("versions").and_then(Value::as_array).ok_or_else(|| schema_err("spec.versions", "missing"))?;
        let version = versions
            .iter()
            .find(|v| v.get("storage") == Some(&Value::Bool(true)))
            .or_else(|| versions.first())
            .ok_or_else(|| schema_err("spec.versions", "empty"))?;
        let name = s(version.get("name"), "spec.versions[].name")?;
        let status = version.pointer("/subresources/status").is_some() || spec.pointer("/subresources/status").is_some();
        let scale = version.pointer("/subresources/scale").or_else(|| spec.pointer("/subresources/scale")).and_then(ScaleSubresource::of);
        Ok(TypeSpec {
            group,
            version: name,
            kind,
            plural,
            namespaced: spec.get("scope").and_then(Value::as_str) != Some("Cluster"),
            schema: SchemaSource::Crd(crd.clone()),
            status_subresource: status,
            history: HistoryPolicy::default(),
            short_names: spec
                .pointer("/names/shortNames")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
            generation: true,
            scale,
            reshaped: false,
            versions: super::versions::ApiVersionSpec::of_crd(spec),
            conversion_webhook: spec.pointer("/conversion/strategy").and_then(Value::as_str) == Some("Webhook"),
            terminating: crd.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()),
            retired: false,
        })
    }

    /// The types an OpenAPI document (v2 or v3, as Kubernetes serves it) describes: every kind
    /// with a list operation (`x-kubernetes-action: list` and `x-kubernetes-group-version-kind`)
    /// in its `paths`. The plural is the list path's last segment; a type is namespaced when one
    /// of its list paths runs through `/namespaces/{namespace}/`, and has the status subresource
    /// when a `…/{name}/status` path exists; its schema is the definition carrying the same
    /// group-version-kind.
    ///
    /// # Errors
    /// [`Error::Schema`] when the document has no such kind, or a kind has no definition.
    pub fn from_openapi(document: &Value) -> Result<Vec<Self>> {
        let paths = document
            .get("paths")
            .and_then(Value::as_object)
            .ok_or_else(|| schema_err("paths", "missing: an OpenAPI document of an API server is expected"))?;
        let defs = document
            .get("definitions")
            .or_else(|| document.pointer("/components/schemas"))
            .and_then(Value::as_object)
            .ok_or_else(|| schema_err("definitions", "missing (v2 definitions or v3 components.schemas)"))?;
        let gvk_of = |v: &Value| -> Option<(String, String, String)> {
            let g = v.get("x-kubernetes-group-version-kind")?;
            let g = if let Value::Array(a) = g { a.first()? } else { g };
            let s = |k: &str| g.get(k).and_then(Value::as_str).map(str::to_string);
            Some((s("group").unwrap_or_default(), s("version")?, s("kind")?))
        };
        // (group, version, kind) -> (plural, namespaced)
        let mut found: std::collections::BTreeMap<(String, String, String), (String, bool)> = Default::default();
        for (path, item) in paths {
            let Some(get) = item.get("get") else { continue };
            if get.get("x-kubernetes-action").and_then(Value::as_str) != Some("list") {
                continue;
            }
            let Some(gvk) = gvk_of(get) else { continue };
            let plural = path.rsplit('/').next().unwrap_or("").to_string();
            let namespaced = path.contains("/namespaces/{namespace}/");
            let e = found.entry(gvk).or_insert((plural, false));
            e.1 |= namespaced;
        }
        if found.is_empty() {
            return Err(schema_err("paths", "no list operation with x-kubernetes-group-version-kind"));
        }
        let mut out = Vec::new();
        for ((group, version, kind), (plural, namespaced)) in found {
            let root = defs
                .iter()
                .find(|(_, d)| gvk_of(d).is_some_and(|g| g == (group.clone(), version.clone(), kind.clone())))
                .map(|(name, _)| name.clone())
                .ok_or_else(|| schema_err("definitions", &format!("no definition of {kind} {group}/{version}")))?;
            let status = paths.keys().any(|p| {
                p.ends_with(&format!("/{plural}/{{name}}/status")) && (group.is_empty() || p.contains(&format!("/apis/{group}/{version}/")))
            });
            let mut spec = TypeSpec::new(group, version, kind, plural).namespaced(namespaced).with_status_subresource(status);
            spec.schema = SchemaSource::OpenApi { document: document.clone(), root };
            out.push(spec);
        }
        Ok(out)
    }

    /// `group/version`, or `version` for the core group.
    #[must_use]
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The resource as requests name it: `plural` or `plural.group`.
    #[must_use]
    pub fn resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

impl TypeSpec {
    /// Whether a client's `name` for a resource type means this type: its plural,
    /// `plural.group`, its kind (any case), its singular kind with the group
    /// (`deployment.apps`), or one of its short names (`deploy`).
    #[must_use]
    pub fn is_named(&self, name: &str) -> bool {
        type_is_named(name, &self.plural, &self.group, &self.kind) || self.short_names.iter().any(|s| s == name)
    }
}

/// Whether a client's `name` for a resource type means the type with this plural, group and
/// kind: its plural, `plural.group`, its kind (any case), or its singular kind with the group
/// (`deployment.apps`). [`TypeSpec::is_named`] also knows short names.
#[must_use]
pub fn type_is_named(name: &str, plural: &str, group: &str, kind: &str) -> bool {
    let qualified = name.strip_suffix(group).and_then(|n| n.strip_suffix('.'));
    name == plural
        || qualified == Some(plural)
        || kind.eq_ignore_ascii_case(name)
        || qualified.is_some_and(|k| kind.eq_ignore_ascii_case(k))
}

fn schema_err(path: &str, reason: &str) -> Error {
    Error::Schema { path: path.into(), reason: reason.into() }
}

/// A registered type with its compiled schema and field managers.
pub(crate) struct Registered {
    pub id: u32,
    pub spec: TypeSpec,
    pub api_version: String,
    /// The root type's name (for strategic merge patch metadata).
    pub root_name: String,
    pub schema: &'static Schema,
    pub root: &'static TypeRef,
    pub main: FieldManager<'static>,
    pub status: Option<FieldManager<'static>>,
    /// The Kubernetes protobuf message of a built-in kind, once resolved ([`Registered::protobuf`]).
    protobuf: std::sync::OnceLock<Option<fieldstore_codec::k8s_protobuf::MessageType>>,
    /// The other served versions of a custom resource, each its own view of the same objects.
    pub views: Vec<Arc<Registered>>,
    /// For a view of a version objects are not stored at: the storage version's apiVersion.
    pub stored_as: Option<String>,
    /// For a version that cannot be served (its conversion needs a webhook): why.
    pub conversion_error: Option<String>,
    /// For a view: the structural schema of the storage version (what is written is pruned by
    /// it too, as kube-apiserver prunes an object converted to its storage version).
    pub storage_schema: Option<Arc<crate::crd::Structural>>,
    /// A custom resource's structural schema (its CRD's version), which defaults, validates and
    /// ratchets its objects ([`crate::crd`]).
    pub custom: Option<Arc<crate::crd::Structural>>,
}

impl Registered {
    /// The Kubernetes protobuf message of a built-in kind (what clients read it as): every
    /// object stored must encode as it. Only the built-in schema has one: a type registered
    /// under a built-in's name with a schema of its own is its owner's (README, "Built-in
    /// kinds"). Resolved on first use, so that the protobuf schema is not built as the store
    /// opens (a third of a start's CPU).
    pub fn protobuf(&self) -> Option<fieldstore_codec::k8s_protobuf::MessageType> {
        *self.protobuf.get_or_init(|| match self.spec.schema {
            SchemaSource::Builtin { .. } => {
                fieldstore_codec::k8s_protobuf::MessageType::for_kind(&self.spec.api_version(), &self.spec.kind).ok()
            }
            _ => None,
        })
    }

    /// A stored object of this type as read: a custom resource pruned and defaulted by its
    /// schema as it is now (kube-apiserver prunes and defaults objects as it decodes them from
    /// storage, so a field removed from a CRD goes and a default added shows on objects written
    /// before). Only types whose schema changed while objects were stored
    /// ([`TypeSpec::reshaped`]): the others' objects were pruned and defaulted when written.
    /// Whether anything changed.
    pub(crate) fn read_view(&self, object: &mut Value) -> bool {
        match (&self.custom, self.spec.reshaped) {
            (Some(schema), true) => crate::crd::prune::apply(schema, object) | crate::crd::defaults::apply(schema, object),
            _ => false,
        }
    }

    /// Compiles `spec`. The schema is leaked: field managers borrow it for the life of the
    /// process, and types are registered a handful of times.
    pub(crate) fn compile(id: u32, spec: TypeSpec) -> Result<Self> {
        let mut t = Self::compile_version(id, spec)?;
        t.views = Self::views_of(&t, |v| Self::compile_version(id, v))?;
        Ok(t)
    }

    /// Compiles `spec` at its version only.
    fn compile_version(id: u32, spec: TypeSpec) -> Result<Self> {
        let (schema, root_name) = match &spec.schema {
            SchemaSource::Builtin { definition } => {
                return Self::with_schema(id, spec.clone(), schema::builtin::schema(), definition.clone())
            }
            SchemaSource::None => (Schema::deduced(), DEDUCED_TYPE.to_string()),
            SchemaSource::SmdYaml { yaml, root } => (schema::parse_smd_yaml(yaml)?, root.clone()),
            SchemaSource::OpenApi { document, root } => {
                let schema = if document.get("definitions").is_some() {
                    schema::from_openapi_v2(document)?
                } else {
                    schema::from_openapi_v3_components(document)?
                };
                (schema, root.clone())
            }
            SchemaSource::Crd(crd) => {
                let versions = schema::from_crd(crd)?;
                let (_, schema, root) = versions
                    .into_iter()
                    .find(|(v, _, _)| *v == spec.version)
                    .ok_or_else(|| schema_err("spec.versions", &format!("no version {}", spec.version)))?;
                (schema, root)
            }
        };
        Self::with_schema(id, spec, Box::leak(Box::new(schema)), root_name)
    }

    /// Compiles `spec` over a schema that lives for the rest of the process.
    fn with_schema(id: u32, spec: TypeSpec, schema: &'static Schema, root_name: String) -> Result<Self> {
        let root = schema.named(&root_name).ok_or_else(|| Error::UnknownType(root_name.clone()))?;
        let root: &'static TypeRef = Box::leak(Box::new(root));
        let api_version = spec.api_version();
        let mut main = FieldManager::over_static_schema(schema, root, api_version.clone()).with_kind(spec.kind.clone());
        // A built-in kind's create is compared with its Go zero value, as kube-apiserver does.
        if let SchemaSource::Builtin { .. } = spec.schema {
            if let Some(zero) = crate::schema::builtin::zero_value(&root_name) {
                main = main.with_created_from(zero);
            }
        }
        let mut status = None;
        if spec.status_subresource {
            let status_set = Set::from_paths([&Path::fields(["status"])]);
            let spec_set = Set::from_paths([&Path::fields(["spec"])]);
            main = main.with_reset_fields(api_version.clone(), "", status_set);
            status = Some(
                FieldManager::over_static_schema(schema, root, api_version.clone())
                    .with_kind(spec.kind.clone())
                    .with_subresource("status")
                    .with_reset_fields(api_version.clone(), "status", spec_set),
            );
        }
        // Only the built-in schema: a type registered under a built-in's name with a schema of
        // its own is its owner's (README, "Built-in kinds").
        // Resolved on first use: the protobuf schema is built then, not as the store opens.
        let protobuf = std::sync::OnceLock::new();
        let custom = match &spec.schema {
            SchemaSource::Crd(crd) => crd
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .and_then(|vs| vs.iter().find(|v| v.get("name").and_then(Value::as_str) == Some(spec.version.as_str())))
                .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
                .map(|s| Arc::new(crate::crd::Structural::read(s))),
            _ => None,
        };
        Ok(Registered {
            id,
            spec,
            api_version,
            root_name,
            schema,
            root,
            main,
            status,
            protobuf,
            custom,
            views: Vec::new(),
            stored_as: None,
            conversion_error: None,
            storage_schema: None,
        })
    }
}

/// Every registered type, by id and by resource name.
#[derive(Default)]
pub(crate) struct Registry {
    by_id: HashMap<u32, Arc<Registered>>,
    by_resource: HashMap<String, Arc<Registered>>,
    /// Every served version of every non-core type, by `plural.version.group`.
    by_version: HashMap<String, Arc<Registered>>,
    /// Every served version's spec, in registration order (discovery, the OpenAPI documents).
    served: Arc<[TypeSpec]>,
    /// Every spec in registration order, rebuilt on each registration and shared by readers that
    /// need them all on every request (the HTTP API's routing and discovery).
    shared: Arc<[TypeSpec]>,
    /// The highest id handed out for a type whose registration is under way (a definition's
    /// commit): never handed out again, registered or not.
    reserved: u32,
}

impl Registry {
    pub(crate) fn insert(&mut self, t: Registered) {
        let t = Arc::new(t);
        let resource = t.spec.resource();
        self.by_version.retain(|_, v| v.id != t.id);
        if t.spec.retired {
            if self.by_resource.get(&resource).is_some_and(|o| o.id == t.id) {
                self.by_resource.remove(&resource);
            }
        } else {
            for v in std::iter::once(&t).chain(&t.views) {
                if !v.spec.group.is_empty() && v.spec.served_versions().contains(&v.spec.version) {
                    self.by_version.insert(v.spec.versioned_resource(), v.clone());
                }
            }
            self.by_resource.insert(resource, t.clone());
        }
        self.by_id.insert(t.id, t);
        self.shared = self.specs().into();
        let mut served: Vec<(u32, TypeSpec)> = self.by_version.values().map(|v| (v.id, v.spec.clone())).collect();
        served.extend(self.by_id.values().filter(|t| t.spec.group.is_empty() && !t.spec.retired).map(|t| (t.id, t.spec.clone())));
        served.sort_by(|(a, s), (b, o)| a.cmp(b).then_with(|| super::versions::priority_cmp(&s.version, &o.version)));
        self.served = served.into_iter().map(|(_, s)| s).collect::<Vec<_>>().into();
    }

    /// Every served version's spec (one per version of a custom resource), in registration
    /// order and then kube's version preference, shared as [`Registry::shared`].
    pub(crate) fn served(&self) -> Arc<[TypeSpec]> {
        self.served.clone()
    }

    /// A retired type (a deleted CRD's), by resource name (`plural.group`, or one of its
    /// versions' `plural.version.group`): what the history verbs still read.
    pub(crate) fn retired(&self, resource: &str) -> Option<Arc<Registered>> {
        let named =
            |s: &TypeSpec| s.resource() == resource || s.versions.iter().any(|v| s.at_version(&v.name).versioned_resource() == resource);
        self.by_id.values().filter(|t| t.spec.retired && named(&t.spec)).max_by_key(|t| t.id).cloned()
    }

    /// Every spec in registration order, shared: the same allocation until the next
    /// registration, so `Arc::ptr_eq` tells whether the types changed.
    pub(crate) fn shared(&self) -> Arc<[TypeSpec]> {
        self.shared.clone()
    }

    /// The type of a resource name: `plural` or `plural.group` (one lookup), else any name
    /// [`TypeSpec::is_named`] accepts (a short name, the kind, a plural without its group) that
    /// names exactly one type.
    pub(crate) fn resolve(&self, resource: &str) -> Result<Arc<Registered>> {
        if let Some(t) = self.get(resource) {
            return Ok(t.clone());
        }
        let mut named = self.by_id.values().filter(|t| !t.spec.retired && (t.spec.is_named(resource) || t.spec.plural == resource));
        match (named.next(), named.next()) {
            (Some(t), None) => Ok(t.clone()),
            _ => Err(Error::NotFound { resource: "resource type".into(), name: resource.into() }),
        }
    }

    /// The history policy of every type, by id.
    pub(crate) fn policies(&self) -> HashMap<u32, HistoryPolicy> {
        self.by_id.iter().map(|(id, t)| (*id, t.spec.history.clone())).collect()
    }

    /// The resource name of every type, by id.
    pub(crate) fn clone_index(&self) -> HashMap<u32, String> {
        self.by_id.iter().map(|(id, t)| (*id, t.spec.resource())).collect()
    }

    /// The type registered under exactly this resource name (`plural` or `plural.group`), or
    /// the served version `plural.version.group` names.
    pub(crate) fn get(&self, resource: &str) -> Option<&Arc<Registered>> {
        self.by_resource.get(resource).or_else(|| self.by_version.get(resource))
    }

    /// The type registered with this id.
    pub(crate) fn by_id(&self, id: u32) -> Option<&Arc<Registered>> {
        self.by_id.get(&id)
    }

    pub(crate) fn next_id(&self) -> u32 {
        self.by_id.keys().max().map_or(1, |m| m + 1).max(self.reserved.saturating_add(1))
    }

    /// An id for a type registered by a commit under way: one no other registration gets.
    pub(crate) fn reserve_id(&mut self) -> u32 {
        let id = self.next_id();
        self.reserved = id;
        id
    }

    /// The first type, in registration order, whose spec satisfies `pred` (without copying the
    /// others: a lookup on every request must not clone every spec).
    pub(crate) fn first(&self, pred: impl Fn(&TypeSpec) -> bool) -> Option<&Arc<Registered>> {
        self.by_id.values().filter(|t| !t.spec.retired && pred(&t.spec)).min_by_key(|t| t.id)
    }

    pub(crate) fn specs(&self) -> Vec<TypeSpec> {
        let mut v: Vec<_> = self.by_id.values().filter(|t| !t.spec.retired).map(|t| (t.id, t.spec.clone())).collect();
        v.sort_by_key(|(id, _)| *id);
        v.into_iter().map(|(_, s)| s).collect()
    }
}

/// How long and how much field history a resource type keeps.
///
/// A change is dropped only when it is both older than [`keep_for`](Self::keep_for) and not
/// among the last [`keep_changes`](Self::keep_changes) changes of its object: by default every
/// object keeps at least its last 100 changes and every change of the last 30 days.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HistoryPolicy {
    /// Whether writes record history at all.
    pub enabled: bool,
    /// Changes per object always kept.
    pub keep_changes: u64,
    /// Age below which changes are always kept, in seconds.
    pub keep_seconds: u64,
    /// Values whose compact JSON is longer are kept as SHA-256 + size.
    pub inline_limit: usize,
}

impl Default for HistoryPolicy {
    fn default() -> Self {
        HistoryPolicy { enabled: true, keep_changes: 100, keep_seconds: 30 * 24 * 3600, inline_limit: crate::history::DEFAULT_INLINE_LIMIT }
    }
}

impl HistoryPolicy {
    /// No history.
    #[must_use]
    pub fn off() -> Self {
        HistoryPolicy { enabled: false, ..Self::default() }
    }

    /// The age below which changes are always kept.
    #[must_use]
    pub fn keep_for(&self) -> Duration {
        Duration::from_secs(self.keep_seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A slice of an API server's OpenAPI v2 document: one namespaced kind with a status path,
    /// one cluster-scoped kind.
    fn document() -> Value {
        let gvk = |g: &str, k: &str| json!([{"group": g, "version": "v1", "kind": k}]);
        json!({
            "swagger": "2.0",
            "paths": {
                "/apis/example.com/v1/namespaces/{namespace}/widgets": {"get": {"x-kubernetes-action": "list", "x-kubernetes-group-version-kind": gvk("example.com", "Widget")}},
                "/apis/example.com/v1/widgets": {"get": {"x-kubernetes-action": "list", "x-kubernetes-group-version-kind": gvk("example.com", "Widget")}},
                "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status": {"get": {"x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk("example.com", "Widget")}},
                "/apis/example.com/v1/gadgets": {"get": {"x-kubernetes-action": "list", "x-kubernetes-group-version-kind": gvk("example.com", "Gadget")}},
            },
            "definitions": {
                "com.example.v1.Widget": {"type": "object", "x-kubernetes-group-version-kind": gvk("example.com", "Widget"), "properties": {
                    "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                    "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
                    "spec": {"type": "object", "properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                        "items": {"type": "object", "properties": {"port": {"type": "integer"}, "name": {"type": "string"}}}}}},
                    "status": {"type": "object"}}},
                "com.example.v1.Gadget": {"type": "object", "x-kubernetes-group-version-kind": gvk("example.com", "Gadget"), "properties": {
                    "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                    "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}}},
            }
        })
    }

    #[test]
    fn openapi_documents_give_plural_scope_status_and_schema() {
        let specs = TypeSpec::from_openapi(&document()).unwrap();
        let w = specs.iter().find(|s| s.kind == "Widget").unwrap();
        assert_eq!(
            (w.plural.as_str(), w.namespaced, w.status_subresource, w.resource()),
            ("widgets", true, true, "widgets.example.com".to_string())
        );
        let g = specs.iter().find(|s| s.kind == "Gadget").unwrap();
        assert_eq!((g.plural.as_str(), g.namespaced, g.status_subresource), ("gadgets", false, false));
        // The schema compiles, and its map list merges by key.
        let t = Registered::compile(1, w.clone()).unwrap();
        let live = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"ports": [{"port": 80, "name": "a"}]}});
        let now = crate::fieldmanager::Time::from_unix_seconds(1_700_000_000);
        let created = t.main.apply(None, &live, "m1", false, &now).unwrap().object;
        let other = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"ports": [{"port": 81}]}});
        let merged = t.main.apply(Some(&created), &other, "m2", false, &now).unwrap().object;
        assert_eq!(merged["spec"]["ports"].as_array().unwrap().len(), 2);
        assert!(TypeSpec::from_openapi(&json!({"paths": {}})).is_err());
    }
}
