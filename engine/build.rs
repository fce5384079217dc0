//! Generates the OpenAPI v3 document of the built-in Kubernetes types (`OUT_DIR/builtin_openapi_v3.json`),
//! which `src/schema/builtin.rs` embeds.
//!
//! The input is what Kubernetes' own generator (kube-openapi's `openapi-gen`) reads, recovered from
//! the upstream `generated.proto` files under `../proto/k8s.io` (compiled by protox, with their
//! comments) and the Go struct facts the protos lack (`codec/k8s-api/gofields.json`, the codec's copy: JSON
//! names, `omitempty`, pointers, inline members). The protos' comments are the Go comments, so they
//! carry the same `+listType`, `+listMapKey`, `+patchStrategy`, `+patchMergeKey`, `+mapType`,
//! `+structType`, `+optional` and `+default` markers `openapi-gen` turns into the `x-kubernetes-*`
//! extensions. The rules are documented in `src/schema/builtin.rs`.

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::error::Error;
use std::fmt::Write as _;
use std::path::PathBuf;

const PROTO_ROOT: &str = "../proto";
const PROTOS: [&str; 25] = [
    "k8s.io/api/events/v1/generated.proto",
    "k8s.io/api/storage/v1/generated.proto",
    "k8s.io/api/admissionregistration/v1/generated.proto",
    "k8s.io/api/scheduling/v1/generated.proto",
    "k8s.io/api/node/v1/generated.proto",
    "k8s.io/api/certificates/v1/generated.proto",
    "k8s.io/api/flowcontrol/v1/generated.proto",
    "k8s.io/api/authorization/v1/generated.proto",
    "k8s.io/api/authentication/v1/generated.proto",
    "k8s.io/apimachinery/pkg/util/intstr/generated.proto",
    "k8s.io/apimachinery/pkg/runtime/schema/generated.proto",
    "k8s.io/apimachinery/pkg/runtime/generated.proto",
    "k8s.io/apimachinery/pkg/api/resource/generated.proto",
    "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
    "k8s.io/api/core/v1/generated.proto",
    "k8s.io/api/apps/v1/generated.proto",
    "k8s.io/api/batch/v1/generated.proto",
    "k8s.io/api/rbac/v1/generated.proto",
    "k8s.io/api/networking/v1/generated.proto",
    "k8s.io/api/coordination/v1/generated.proto",
    "k8s.io/api/policy/v1/generated.proto",
    "k8s.io/api/discovery/v1/generated.proto",
    "k8s.io/api/autoscaling/v2/generated.proto",
    "k8s.io/api/scheduling/v1alpha3/generated.proto",
    "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/generated.proto",
];
/// The one copy of the Go struct facts, the codec's (whose build checks it against the protos).
const GOFIELDS: &str = "../codec/k8s-api/gofields.json";
const OUTPUT: &str = "builtin_openapi_v3.json";
/// The descriptions of the definitions and their members (kept apart: only the served OpenAPI
/// documents need them, not the schema the engine loads).
const DESCRIPTIONS: &str = "builtin_descriptions.json";
/// The Go zero value of each kind, as kube-apiserver's typed conversion reads it (see
/// [`Model::zero_value`]).
const ZERO_VALUES: &str = "builtin_zero_values.json";
/// The proto message whose members `apiVersion` and `kind` are inlined into every kind.
const TYPE_META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.TypeMeta";
const REF_PREFIX: &str = "#/components/schemas/";

/// The API group and version whose kinds each proto package holds.
const GROUP_VERSIONS: [(&str, &str, &str); 20] = [
    ("k8s.io.api.events.v1", "events.k8s.io", "v1"),
    ("k8s.io.api.storage.v1", "storage.k8s.io", "v1"),
    ("k8s.io.api.admissionregistration.v1", "admissionregistration.k8s.io", "v1"),
    ("k8s.io.api.scheduling.v1", "scheduling.k8s.io", "v1"),
    ("k8s.io.api.node.v1", "node.k8s.io", "v1"),
    ("k8s.io.api.certificates.v1", "certificates.k8s.io", "v1"),
    ("k8s.io.api.flowcontrol.v1", "flowcontrol.apiserver.k8s.io", "v1"),
    ("k8s.io.api.authorization.v1", "authorization.k8s.io", "v1"),
    ("k8s.io.api.authentication.v1", "authentication.k8s.io", "v1"),
    ("k8s.io.api.core.v1", "", "v1"),
    ("k8s.io.api.apps.v1", "apps", "v1"),
    ("k8s.io.api.batch.v1", "batch", "v1"),
    ("k8s.io.api.rbac.v1", "rbac.authorization.k8s.io", "v1"),
    ("k8s.io.api.networking.v1", "networking.k8s.io", "v1"),
    ("k8s.io.api.coordination.v1", "coordination.k8s.io", "v1"),
    ("k8s.io.api.policy.v1", "policy", "v1"),
    ("k8s.io.api.discovery.v1", "discovery.k8s.io", "v1"),
    ("k8s.io.api.autoscaling.v2", "autoscaling", "v2"),
    ("k8s.io.api.scheduling.v1alpha3", "scheduling.k8s.io", "v1alpha3"),
    ("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1", "apiextensions.k8s.io", "v1"),
];
const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";
/// meta/v1 kinds registered in every group version (`metav1.AddToGroupVersion`).
const META_KINDS_PER_GROUP: [&str; 7] =
    ["CreateOptions", "DeleteOptions", "GetOptions", "ListOptions", "PatchOptions", "UpdateOptions", "WatchEvent"];
/// meta/v1 kinds registered once, unversioned, as `v1` of the core group.
const META_KINDS_UNVERSIONED: [&str; 5] = ["APIGroup", "APIGroupList", "APIResourceList", "APIVersions", "Status"];
/// Proto packages that are not Go API types with a JSON form (no `openapi-gen`).
const SKIPPED_PACKAGES: [&str; 1] = ["k8s.io.apimachinery.pkg.runtime.schema"];
/// The proto messages standing for a Go named slice of strings (`metav1.Verbs`, the
/// `ExtraValue`s of authentication, authorization and certificates, `AttestationValue`): in JSON
/// and in the schema a list of strings.
const STRING_SLICES: [&str; 5] = [
    "k8s.io.apimachinery.pkg.apis.meta.v1.Verbs",
    "k8s.io.api.authentication.v1.ExtraValue",
    "k8s.io.api.authentication.v1.AttestationValue",
    "k8s.io.api.authorization.v1.ExtraValue",
    "k8s.io.api.certificates.v1.ExtraValue",
];
/// Go types defined as another struct type (`type List metav1.List`): their Go facts are the
/// other's.
const GO_ALIASES: [(&str, &str); 1] = [("k8s.io.api.core.v1.List", "k8s.io.apimachinery.pkg.apis.meta.v1.List")];
/// Constants named by `+default=ref(...)` markers, with their values.
const DEFAULT_REFS: [(&str, &str); 2] = [("AzureDataDiskCachingReadWrite", "ReadWrite"), ("AzureSharedBlobDisk", "Shared")];

/// Types with a custom OpenAPI definition in Go (`OpenAPISchemaType` / `OpenAPIDefinition`
/// methods), as kube-apiserver publishes them in OpenAPI v3 (descriptions left out). No default is
/// enforced for members of these types.
fn special_definition(full_name: &str) -> Option<Value> {
    Some(match full_name {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time" | "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => {
            json!({"type": "string", "format": "date-time"})
        }
        "k8s.io.apimachinery.pkg.apis.meta.v1.Duration" => json!({"type": "string"}),
        "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1" | "k8s.io.apimachinery.pkg.runtime.RawExtension" => json!({"type": "object"}),
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => {
            json!({"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]})
        }
        "k8s.io.apimachinery.pkg.api.resource.Quantity" | "k8s.io.apimachinery.pkg.api.resource.QuantityValue" => {
            json!({"oneOf": [{"type": "string"}, {"type": "number"}]})
        }
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON"
        | "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray"
        | "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool"
        | "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray" => json!({}),
        _ => return None,
    })
}

type BoxResult<T> = Result<T, Box<dyn Error>>;

/// A group, version and kind.
type Gvk = (&'static str, &'static str, String);

fn main() -> BoxResult<()> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={PROTO_ROOT}/{proto}");
    }
    println!("cargo:rerun-if-changed={GOFIELDS}");
    let fds = protox::compile(PROTOS, [PROTO_ROOT])?;
    let gofields: Value = serde_json::from_str(&std::fs::read_to_string(GOFIELDS)?)?;
    let gofields = gofields.get("messages").and_then(Value::as_object).ok_or("gofields.json: no `messages` object")?;
    let model = Model::new(&fds.file, gofields)?;
    let doc = model.document()?;
    let mut text = String::with_capacity(1 << 20);
    write_sorted(&doc, &mut text);
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join(OUTPUT), text)?;
    let descriptions = serde_json::to_string(&*model.descriptions.borrow())?;
    std::fs::write(out.join(DESCRIPTIONS), descriptions)?;
    let mut zeros = Map::new();
    for (full, m) in &model.messages {
        if model.has_definition(full, m) && model.type_meta_inline(full) && special_definition(full).is_none() {
            zeros.insert(m.definition.clone(), Value::Object(model.zero_value(full, m)?));
        }
    }
    std::fs::write(out.join(ZERO_VALUES), serde_json::to_string(&zeros)?)?;
    Ok(())
}

/// One proto message with what the generator needs of it.
struct Message<'a> {
    /// Proto package.
    package: &'a str,
    /// The definition name (`io.k8s.api.core.v1.Pod`).
    definition: String,
    descriptor: &'a DescriptorProto,
    /// The marker tags of the message's comment.
    tags: Tags,
    /// The marker tags of each field's comment, by field index.
    field_tags: Vec<Tags>,
    /// The message's description (its comment as `openapi-gen` words it).
    description: String,
    /// Each field's description, by field index.
    field_descriptions: Vec<String>,
}

/// Comment markers (`+name=value`) by name, in order, as gengo's `ExtractCommentTags` reads them.
#[derive(Default)]
struct Tags(BTreeMap<String, Vec<String>>);

impl Tags {
    fn parse(comment: &str) -> Self {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for line in comment.lines() {
            let Some(tag) = line.trim().strip_prefix('+') else { continue };
            let (name, value) = tag.split_once('=').unwrap_or((tag, ""));
            out.entry(name.to_string()).or_default().push(value.to_string());
        }
        Tags(out)
    }

    fn get(&self, name: &str) -> Option<&[String]> {
        self.0.get(name).map(Vec::as_slice)
    }

    fn first(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|v| v.first()).map(String::as_str)
    }
}

/// The Go facts of one field (from `gofields.json`).
struct GoField<'a> {
    json: Option<&'a str>,
    omitempty: bool,
    inline: bool,
    /// `ptr`, `value`, `slice` or `map`.
    kind: &'a str,
    go_type: &'a str,
}

struct Model<'a> {
    messages: BTreeMap<String, Message<'a>>,
    /// Descriptions by definition: `""` for the type's own, else by member JSON name (inline
    /// members' under the definition that flattens them), filled as definitions are made.
    descriptions: std::cell::RefCell<BTreeMap<String, BTreeMap<String, String>>>,
    /// Map entry messages: full name → (key field, value field).
    map_entries: HashMap<String, (&'a FieldDescriptorProto, &'a FieldDescriptorProto)>,
    gofields: &'a Map<String, Value>,
}

impl<'a> Model<'a> {
    fn new(files: &'a [FileDescriptorProto], gofields: &'a Map<String, Value>) -> BoxResult<Self> {
        let mut messages = BTreeMap::new();
        let mut map_entries = HashMap::new();
        for file in files {
            let package = file.package();
            let go_package =
                file.options.as_ref().and_then(|o| o.go_package.as_deref()).ok_or_else(|| format!("{}: no go_package", file.name()))?;
            let model_package = definition_package(go_package);
            let comments: HashMap<&[i32], &str> = file
                .source_code_info
                .iter()
                .flat_map(|s| &s.location)
                .filter_map(|l| l.leading_comments.as_deref().map(|c| (l.path.as_slice(), c)))
                .collect();
            for (mi, m) in file.message_type.iter().enumerate() {
                let mi = mi as i32;
                let comment = comments.get([4, mi].as_slice()).copied().unwrap_or("");
                let tags = Tags::parse(comment);
                let field_comment = |fi: usize| comments.get([4, mi, 2, fi as i32].as_slice()).copied().unwrap_or("");
                let field_tags = (0..m.field.len()).map(|fi| Tags::parse(field_comment(fi))).collect();
                let field_descriptions = (0..m.field.len()).map(|fi| description(field_comment(fi))).collect();
                let description = description(comment);
                let full = format!("{package}.{}", m.name());
                for nested in &m.nested_type {
                    if nested.options.as_ref().and_then(|o| o.map_entry) == Some(true) {
                        let key = nested.field.iter().find(|f| f.number() == 1).ok_or("map entry without key")?;
                        let value = nested.field.iter().find(|f| f.number() == 2).ok_or("map entry without value")?;
                        map_entries.insert(format!("{full}.{}", nested.name()), (key, value));
                    } else {
                        return Err(format!("{full}: unexpected nested message {}", nested.name()).into());
                    }
                }
                let package_name = tags.first("k8s:openapi-model-package").map(str::to_string).unwrap_or_else(|| model_package.clone());
                let definition = format!("{package_name}.{}", m.name());
                messages.insert(full, Message { package, definition, descriptor: m, tags, field_tags, description, field_descriptions });
            }
        }
        Ok(Model { messages, descriptions: Default::default(), map_entries, gofields })
    }

    fn describe(&self, definition: &str, member: &str, text: &str) {
        self.descriptions.borrow_mut().entry(definition.to_string()).or_default().insert(member.to_string(), text.to_string());
    }

    /// Whether a message gets a definition of its own.
    fn has_definition(&self, full: &str, m: &Message<'_>) -> bool {
        !SKIPPED_PACKAGES.contains(&m.package) && !STRING_SLICES.contains(&full) && m.tags.first("k8s:openapi-gen") != Some("false")
    }

    fn message(&self, type_name: &str) -> BoxResult<(&str, &Message<'a>)> {
        let full = type_name.trim_start_matches('.');
        self.messages.get_key_value(full).map(|(k, v)| (k.as_str(), v)).ok_or_else(|| format!("unknown message {full}").into())
    }

    /// The Go facts of a message (those of the aliased struct for a Go type alias).
    fn go_message(&self, message: &str) -> Option<&'a Value> {
        let message = GO_ALIASES.iter().find(|(a, _)| *a == message).map_or(message, |(_, target)| target);
        self.gofields.get(message)
    }

    fn go_field(&self, message: &str, field: &FieldDescriptorProto) -> Option<GoField<'a>> {
        let f = self.go_message(message)?.get("fields")?.get(field.number().to_string())?;
        Some(GoField {
            json: f.get("json").and_then(Value::as_str),
            omitempty: f.get("omitempty").and_then(Value::as_bool).unwrap_or(false),
            inline: f.get("inline").and_then(Value::as_bool).unwrap_or(false),
            kind: f.get("kind").and_then(Value::as_str).unwrap_or("ptr"),
            go_type: f.get("goType").and_then(Value::as_str).unwrap_or(""),
        })
    }

    fn type_meta_inline(&self, message: &str) -> bool {
        self.go_message(message).and_then(|m| m.get("typeMetaInline")).and_then(Value::as_bool).unwrap_or(false)
    }

    /// The Go zero value of a struct as structured-merge-diff's reflection of Go values reads it
    /// (kube-apiserver compares a create against `New()` of the kind): a member with `omitempty`
    /// is left out when Go calls it empty (nil, `""`, `0`, `false`, an empty slice or map), which a
    /// struct never is; a member without it is always there (`null` for a nil pointer, slice or
    /// map). Types with their own JSON form give theirs (`Time`: `null`, `Duration`: `"0s"`,
    /// `Quantity`: `"0"`, `IntOrString`: `0`).
    fn zero_value(&self, full: &str, m: &Message<'a>) -> BoxResult<Map<String, Value>> {
        let mut out = Map::new();
        for field in &m.descriptor.field {
            let Some(go) = self.go_field(full, field) else { continue };
            let Some(json_name) = go.json else { continue };
            if go.inline {
                let (inner_full, inner) = self.message(field.type_name())?;
                out.extend(self.zero_value(inner_full, inner)?);
                continue;
            }
            let repeated = field.label() == Label::Repeated || go.kind != "value";
            let zero = match field.r#type() {
                _ if repeated => {
                    if go.omitempty {
                        continue;
                    }
                    Value::Null
                }
                Type::Message => {
                    let (inner_full, inner) = self.message(field.type_name())?;
                    match inner_full {
                        "k8s.io.apimachinery.pkg.apis.meta.v1.Duration" => json!("0s"),
                        "k8s.io.apimachinery.pkg.api.resource.Quantity" => json!("0"),
                        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => json!(0),
                        _ if STRING_SLICES.contains(&inner_full) => {
                            if go.omitempty {
                                continue;
                            }
                            Value::Null
                        }
                        _ if special_definition(inner_full).is_some() => Value::Null,
                        _ => Value::Object(self.zero_value(inner_full, inner)?),
                    }
                }
                _ if go.omitempty => continue,
                Type::String => json!(""),
                Type::Bool => json!(false),
                Type::Bytes => Value::Null,
                _ => json!(0),
            };
            out.insert(json_name.to_string(), zero);
        }
        Ok(out)
    }

    fn document(&self) -> BoxResult<Value> {
        let gvks = self.group_version_kinds()?;
        let mut schemas = Map::new();
        for (full, m) in &self.messages {
            if !self.has_definition(full, m) {
                continue;
            }
            let mut def = match special_definition(full) {
                Some(s) => s,
                None => self.struct_definition(full, m)?,
            };
            if let Some(list) = gvks.get(full.as_str()) {
                let list = list.iter().map(|(g, v, k)| json!({"group": g, "version": v, "kind": k})).collect();
                insert(&mut def, "x-kubernetes-group-version-kind", Value::Array(list));
            }
            if !m.description.is_empty() {
                self.describe(&m.definition, "", &m.description);
            }
            if schemas.insert(m.definition.clone(), def).is_some() {
                return Err(format!("two messages named {}", m.definition).into());
            }
        }
        Ok(json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "built-in types of kubernetes/api 10b39a39 (1.37 development)"},
            "paths": {},
            "components": {"schemas": schemas},
        }))
    }

    /// The kinds of each message, as `x-kubernetes-group-version-kind` lists them, sorted.
    fn group_version_kinds(&self) -> BoxResult<HashMap<String, Vec<Gvk>>> {
        let mut out: HashMap<String, Vec<Gvk>> = HashMap::new();
        for (full, m) in &self.messages {
            if let Some((_, g, v)) = GROUP_VERSIONS.iter().find(|(p, _, _)| *p == m.package) {
                if self.type_meta_inline(full) {
                    out.entry(full.clone()).or_default().push((g, v, m.descriptor.name().to_string()));
                }
            }
        }
        for kind in META_KINDS_PER_GROUP {
            let full = format!("{META}.{kind}");
            self.messages.get(&full).ok_or_else(|| format!("no message {full}"))?;
            let list = out.entry(full).or_default();
            list.extend(GROUP_VERSIONS.iter().map(|(_, g, v)| (*g, *v, kind.to_string())));
        }
        for kind in META_KINDS_UNVERSIONED {
            let full = format!("{META}.{kind}");
            self.messages.get(&full).ok_or_else(|| format!("no message {full}"))?;
            out.entry(full).or_default().push(("", "v1", kind.to_string()));
        }
        for list in out.values_mut() {
            list.sort();
        }
        Ok(out)
    }

    /// A Go struct: `type: object` with its members as properties (inline members flattened).
    fn struct_definition(&self, full: &str, m: &Message<'a>) -> BoxResult<Value> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        if self.type_meta_inline(full) {
            properties.insert("apiVersion".into(), json!({"type": "string"}));
            properties.insert("kind".into(), json!({"type": "string"}));
            // Described as TypeMeta's members are.
            if let Some(meta) = self.messages.get(TYPE_META) {
                for (fi, f) in meta.descriptor.field.iter().enumerate() {
                    if !meta.field_descriptions[fi].is_empty() {
                        self.describe(&m.definition, f.json_name(), &meta.field_descriptions[fi]);
                    }
                }
            }
        }
        self.members(&m.definition, full, m, &mut properties, &mut required)?;
        let mut def = json!({"type": "object"});
        if !properties.is_empty() {
            insert(&mut def, "properties", Value::Object(properties));
        }
        if !required.is_empty() {
            insert(&mut def, "required", Value::Array(required));
        }
        // `+structType` (and `+mapType`) on the type: the struct's atomicity.
        for tag in ["structType", "mapType"] {
            if let Some(v) = m.tags.first(tag) {
                insert(&mut def, "x-kubernetes-map-type", Value::String(v.to_string()));
            }
        }
        Ok(def)
    }

    fn members(
        &self,
        definition: &str,
        full: &str,
        m: &Message<'a>,
        properties: &mut Map<String, Value>,
        required: &mut Vec<Value>,
    ) -> BoxResult<()> {
        for (fi, field) in m.descriptor.field.iter().enumerate() {
            let tags = &m.field_tags[fi];
            let go = self.go_field(full, field);
            if tags.first("k8s:openapi-gen") == Some("false") {
                continue;
            }
            let (json_name, omitempty, inline) = match &go {
                Some(g) => match g.json {
                    None => continue,
                    Some(j) => (j.to_string(), g.omitempty, g.inline),
                },
                // A message without Go facts (an alias of another struct): proto names, optional.
                None => (field.name().to_string(), true, false),
            };
            if inline {
                let (inner_full, inner) = self.message(field.type_name())?;
                self.members(definition, inner_full, inner, properties, required)?;
                continue;
            }
            if !(omitempty || tags.get("optional").is_some() || tags.get("k8s:optional").is_some()) {
                required.push(Value::String(json_name.clone()));
            }
            let at = format!("{full}.{}", field.name());
            if !m.field_descriptions[fi].is_empty() {
                self.describe(definition, &json_name, &m.field_descriptions[fi]);
            }
            let prop = self.property(field, go.as_ref(), omitempty, tags, &at)?;
            if properties.insert(json_name.clone(), prop).is_some() {
                return Err(format!("{at}: duplicate JSON name {json_name}").into());
            }
        }
        Ok(())
    }

    /// The schema of one member: its type, default and extensions.
    fn property(&self, field: &FieldDescriptorProto, go: Option<&GoField<'_>>, omitempty: bool, tags: &Tags, at: &str) -> BoxResult<Value> {
        let map_entry =
            if field.r#type() == Type::Message { self.map_entries.get(field.type_name().trim_start_matches('.')) } else { None };
        let pointer_elements = go.is_some_and(|g| g.go_type.contains("]*"));
        let (core, enforced) = if let Some((key, value)) = map_entry {
            if key.r#type() != Type::String {
                return Err(format!("{at}: map keys must be strings").into());
            }
            let elem = self.value_schema(value, !pointer_elements, at)?;
            (Core::Inline(json!({"type": "object", "additionalProperties": elem})), None)
        } else if field.label() == Label::Repeated {
            let elem = self.value_schema(field, !pointer_elements, at)?;
            (Core::Inline(json!({"type": "array", "items": elem})), None)
        } else {
            let value = go.is_some_and(|g| g.kind == "value");
            let (core, zero) = self.single(field, at)?;
            // Kubernetes' `mustEnforceDefault`: a non-pointer struct defaults to `{}`, a
            // non-pointer, non-omitempty scalar to its zero value.
            let enforced = match (&core, value) {
                (_, false) => None,
                (Core::Ref(_), true) => zero,
                (Core::Inline(_), true) if !omitempty => zero,
                _ => None,
            };
            (core, enforced)
        };
        let default = match tags.first("default") {
            Some(d) => Some(parse_default(d, at)?),
            None => enforced,
        };
        let mut siblings = Map::new();
        if let Some(d) = default {
            siblings.insert("default".into(), d);
        }
        for (tag, ext, always_array) in [
            ("listMapKey", "x-kubernetes-list-map-keys", true),
            ("listType", "x-kubernetes-list-type", false),
            ("mapType", "x-kubernetes-map-type", false),
            ("structType", "x-kubernetes-map-type", false),
            ("patchMergeKey", "x-kubernetes-patch-merge-key", false),
            ("patchStrategy", "x-kubernetes-patch-strategy", false),
        ] {
            if let Some(values) = tags.get(tag) {
                let v = if always_array || values.len() > 1 {
                    Value::Array(values.iter().cloned().map(Value::String).collect())
                } else {
                    Value::String(values[0].clone())
                };
                siblings.insert(ext.into(), v);
            }
        }
        Ok(core.with(siblings))
    }

    /// The schema of a list item or map value, with the default Kubernetes enforces for non-pointer
    /// elements.
    fn value_schema(&self, field: &FieldDescriptorProto, enforce_default: bool, at: &str) -> BoxResult<Value> {
        let (core, zero) = self.single(field, at)?;
        let mut siblings = Map::new();
        if let (true, Some(z)) = (enforce_default, zero) {
            siblings.insert("default".into(), z);
        }
        Ok(core.with(siblings))
    }

    /// The type of a single (not repeated) value of a field, and the default a non-pointer value of
    /// it gets (`{}` for structs without a custom definition, the zero value for scalars).
    fn single(&self, field: &FieldDescriptorProto, at: &str) -> BoxResult<(Core, Option<Value>)> {
        let scalar = |t: &str, f: &str, zero: Value| {
            let mut s = json!({"type": t});
            if !f.is_empty() {
                insert(&mut s, "format", Value::String(f.to_string()));
            }
            Ok((Core::Inline(s), Some(zero)))
        };
        match field.r#type() {
            Type::String => scalar("string", "", json!("")),
            Type::Bool => scalar("boolean", "", json!(false)),
            Type::Int32 => scalar("integer", "int32", json!(0)),
            Type::Int64 => scalar("integer", "int64", json!(0)),
            Type::Double => scalar("number", "double", json!(0)),
            Type::Float => scalar("number", "float", json!(0)),
            // Go `[]byte`: base64 in JSON; a slice, so no default.
            Type::Bytes => Ok((Core::Inline(json!({"type": "string", "format": "byte"})), None)),
            Type::Message => {
                let (full, m) = self.message(field.type_name())?;
                if STRING_SLICES.contains(&full) {
                    return Ok((Core::Inline(json!({"type": "array", "items": {"type": "string", "default": ""}})), None));
                }
                if !self.has_definition(full, m) {
                    return Err(format!("{at}: refers to {full}, which has no definition").into());
                }
                let zero = if special_definition(full).is_some() { None } else { Some(json!({})) };
                Ok((Core::Ref(m.definition.clone()), zero))
            }
            other => Err(format!("{at}: unsupported proto type {other:?}").into()),
        }
    }
}

/// A member's type before its siblings (default, extensions) are added.
enum Core {
    /// A reference to a definition.
    Ref(String),
    /// A schema written in place.
    Inline(Value),
}

impl Core {
    /// The member's schema: a reference alone as `$ref`, with siblings as kube-openapi's v3 form
    /// writes it, `allOf: [{$ref}]` beside them.
    fn with(self, siblings: Map<String, Value>) -> Value {
        match self {
            Core::Ref(name) if siblings.is_empty() => json!({"$ref": format!("{REF_PREFIX}{name}")}),
            Core::Ref(name) => {
                let mut v = json!({"allOf": [{"$ref": format!("{REF_PREFIX}{name}")}]});
                for (k, s) in siblings {
                    insert(&mut v, &k, s);
                }
                v
            }
            Core::Inline(mut v) => {
                for (k, s) in siblings {
                    insert(&mut v, &k, s);
                }
                v
            }
        }
    }
}

fn insert(v: &mut Value, key: &str, value: Value) {
    if let Some(o) = v.as_object_mut() {
        o.insert(key.to_string(), value);
    }
}

/// The definition-name package of a Go package path, as Kubernetes names its definitions: the
/// domain of the first segment reversed, the rest joined by dots
/// (`k8s.io/api/core/v1` → `io.k8s.api.core.v1`).
fn definition_package(go_package: &str) -> String {
    let (domain, rest) = go_package.split_once('/').unwrap_or((go_package, ""));
    let mut out: Vec<&str> = domain.rsplit('.').collect();
    out.extend(rest.split('/').filter(|s| !s.is_empty()));
    out.join(".")
}

/// A `+default=` marker's value: JSON, or `ref(Name)` of a known constant.
fn parse_default(text: &str, at: &str) -> BoxResult<Value> {
    if let Some(name) = text.strip_prefix("ref(").and_then(|r| r.strip_suffix(')')) {
        let (_, value) = DEFAULT_REFS.iter().find(|(n, _)| *n == name).ok_or_else(|| format!("{at}: unknown default constant {name}"))?;
        return Ok(Value::String((*value).to_string()));
    }
    serde_json::from_str(text).map_err(|e| format!("{at}: default {text:?} is not JSON: {e}").into())
}

/// Compact JSON with every object's keys sorted (as Go's `encoding/json` writes maps), whatever
/// order `serde_json::Map` keeps.
fn write_sorted(v: &Value, out: &mut String) {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{}:", Value::String(k.clone()));
                write_sorted(&o[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_sorted(e, out);
            }
            out.push(']');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// A Go comment as kube-openapi's `openapi-gen` turns it into a description (its `fmtRawDoc`):
/// nothing after a line starting `---`; marker (`+…`) and `TODO` lines left out; lines joined by
/// spaces, an empty line a paragraph break, an indented line on a line of its own. A proto
/// comment's lines start with the one space after `//`.
fn description(comment: &str) -> String {
    let mut out = String::new();
    for line in comment.lines() {
        let line = line.strip_prefix(' ').unwrap_or(line).trim_end_matches(' ');
        let leading = line.trim_start_matches(' ');
        if leading.starts_with("---") {
            break;
        } else if line.is_empty() {
            out.pop();
            out.push_str("\n\n");
        } else if leading.starts_with("TODO") || leading.starts_with('+') {
        } else if line.starts_with(' ') || line.starts_with('\t') {
            out.pop();
            out.push('\n');
            out.push_str(line);
            out.push('\n');
        } else {
            out.push_str(line);
            out.push(' ');
        }
    }
    let out = out.trim_end_matches('\n');
    out.strip_suffix(' ').unwrap_or(out).to_string()
}
