//! The transcoding table: every message of the descriptor pool with its fields in declaration order
//! (Go struct order = JSON order), each joined with its Go facts from `gofields.json` (JSON name,
//! omitempty/omitzero, pointer or value, inline), plus the special types whose Go marshallers differ
//! from their protobuf shape, and the apiVersion/kind → message table.

use std::collections::HashMap;
use std::sync::OnceLock;

use prost_reflect::{Cardinality, DescriptorPool, Kind};

use super::descriptors::descriptor_pool;

/// The Go facts table `build.rs` derives from `gofields.json`.
static GOFIELDS: &str = include_str!(concat!(env!("OUT_DIR"), "/k8s_gofields.tsv"));

/// Index of a message in [`Schema::messages`].
pub(crate) type MsgId = u16;

/// The most fields a message may have (the encoder keeps one slot per field on the stack).
pub(crate) const MAX_FIELDS: usize = 64;

/// Protobuf scalar types the Kubernetes protos use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    String,
    Bytes,
    Bool,
    Int32,
    Int64,
    Double,
}

impl Scalar {
    /// The wire type of one value.
    pub(crate) fn wire_type(self) -> u8 {
        match self {
            Scalar::String | Scalar::Bytes => 2,
            Scalar::Bool | Scalar::Int32 | Scalar::Int64 => 0,
            Scalar::Double => 1,
        }
    }
}

/// A field's value type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Scalar(Scalar),
    Message(MsgId),
}

/// Singular, repeated, or a map (whose keys are strings in every Kubernetes proto).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Card {
    Single,
    Repeated,
    Map,
}

/// What the Go field is: it decides protobuf presence and JSON emptiness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GoKind {
    /// A non-pointer value: always written in protobuf, zero included.
    Value,
    /// A pointer: written iff non-nil; `null` in JSON when nil.
    Pointer,
    Slice,
    Map,
}

/// Types whose Go JSON (and sometimes protobuf) marshalling is custom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    None,
    /// `metav1.Time`: RFC 3339 seconds ↔ `{seconds, nanos}`.
    Time,
    /// `metav1.MicroTime`: RFC 3339 with microseconds.
    MicroTime,
    /// `metav1.Duration`: Go duration string ↔ `{duration}` nanoseconds.
    Duration,
    /// `intstr.IntOrString`: number or string ↔ `{type, intVal, strVal}`.
    IntOrString,
    /// `resource.Quantity` (and `QuantityValue`): canonical string ↔ `{string}`.
    Quantity,
    /// `runtime.RawExtension`: embedded JSON ↔ `{raw}`.
    RawExtension,
    /// `metav1.FieldsV1`: embedded JSON ↔ `{Raw}`.
    FieldsV1,
    /// apiextensions `JSON`: embedded JSON ↔ `{raw}`.
    Json,
    /// `JSONSchemaPropsOrBool`: bool or schema ↔ `{allows, schema}`.
    OrBool,
    /// `JSONSchemaPropsOrArray`: schema or array ↔ `{schema} | {jSONSchemas*}`.
    OrArray,
    /// `JSONSchemaPropsOrStringArray`: schema or string array ↔ `{schema} | {property*}`.
    OrStringArray,
    /// `metav1.Verbs`, and the other named `[]string` types with a message of their own
    /// (`ExtraValue` of authentication, authorization and certificates, `AttestationValue`): a
    /// Go `[]string` ↔ `{items*}`.
    Verbs,
}

/// One field, joined with its Go facts.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) number: u32,
    /// The proto field name (used in error paths where JSON has no name).
    pub(crate) name: &'static str,
    /// The JSON key; `None` when Go does not serialize the field by name (custom marshallers).
    pub(crate) json: Option<&'static str>,
    pub(crate) ty: Ty,
    pub(crate) card: Card,
    pub(crate) go: GoKind,
    pub(crate) omitempty: bool,
    pub(crate) omitzero: bool,
    /// An embedded struct: its fields are the parent's in JSON.
    pub(crate) inline: bool,
    /// Nothing is written to JSON when the field is absent from the protobuf.
    pub(crate) silent_when_absent: bool,
    /// The wire type of one value (2 for messages and map entries).
    pub(crate) wire_type: u8,
    /// The JSON key as written, quoted and with its colon: `"name":` (empty without a JSON name).
    pub(crate) json_key: &'static [u8],
}

impl Field {
    /// The name an error path shows for this field.
    pub(crate) fn path_name(&self) -> &'static str {
        self.json.unwrap_or(self.name)
    }
}

/// One message.
#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) full_name: &'static str,
    pub(crate) special: Special,
    /// Embeds `metav1.TypeMeta`: `kind`/`apiVersion` lead its JSON (they travel in the envelope).
    pub(crate) type_meta: bool,
    /// Declaration order.
    pub(crate) fields: Vec<Field>,
    /// Field number → index in `fields` + 1 (0: unknown number).
    by_number: Vec<u8>,
    /// Indices of `fields` in ascending field number (gogo's write order).
    pub(crate) encode_order: Vec<u8>,
    /// JSON name → index in `fields` (inline fields excluded).
    by_json: HashMap<&'static str, u8, ahash::RandomState>,
    /// Whether a field is an inline struct (which reads the whole JSON object).
    pub(crate) has_inline: bool,
}

impl Message {
    /// The index in `fields` of field `number`.
    pub(crate) fn field_index(&self, number: u32) -> Option<usize> {
        match self.by_number.get(number as usize) {
            Some(&i) if i > 0 => Some(usize::from(i) - 1),
            _ => None,
        }
    }

    /// The index in `fields` of the field named `key` in JSON.
    pub(crate) fn json_index(&self, key: &str) -> Option<usize> {
        self.by_json.get(key).map(|&i| usize::from(i))
    }
}

/// The table for every message of the pool.
#[derive(Debug)]
pub(crate) struct Schema {
    pub(crate) messages: Vec<Message>,
    by_name: HashMap<&'static str, MsgId>,
    /// apiVersion → kind → message.
    kinds: HashMap<&'static str, HashMap<&'static str, MsgId>>,
}

/// The group versions whose built-in kinds are known, with their proto packages.
pub(crate) const GROUP_VERSIONS: &[(&str, &str)] = &[
    ("v1", "k8s.io.api.core.v1"),
    ("apps/v1", "k8s.io.api.apps.v1"),
    // For the `scale` subresource's Scale (HorizontalPodAutoscaler is served as v2 only).
    ("autoscaling/v1", "k8s.io.api.autoscaling.v1"),
    ("autoscaling/v2", "k8s.io.api.autoscaling.v2"),
    ("batch/v1", "k8s.io.api.batch.v1"),
    ("coordination.k8s.io/v1", "k8s.io.api.coordination.v1"),
    ("discovery.k8s.io/v1", "k8s.io.api.discovery.v1"),
    ("networking.k8s.io/v1", "k8s.io.api.networking.v1"),
    ("policy/v1", "k8s.io.api.policy.v1"),
    ("rbac.authorization.k8s.io/v1", "k8s.io.api.rbac.v1"),
    ("scheduling.k8s.io/v1alpha3", "k8s.io.api.scheduling.v1alpha3"),
    ("apiextensions.k8s.io/v1", "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"),
    ("events.k8s.io/v1", "k8s.io.api.events.v1"),
    ("storage.k8s.io/v1", "k8s.io.api.storage.v1"),
    ("admissionregistration.k8s.io/v1", "k8s.io.api.admissionregistration.v1"),
    ("scheduling.k8s.io/v1", "k8s.io.api.scheduling.v1"),
    ("node.k8s.io/v1", "k8s.io.api.node.v1"),
    ("certificates.k8s.io/v1", "k8s.io.api.certificates.v1"),
    ("flowcontrol.apiserver.k8s.io/v1", "k8s.io.api.flowcontrol.v1"),
    ("authorization.k8s.io/v1", "k8s.io.api.authorization.v1"),
    ("authentication.k8s.io/v1", "k8s.io.api.authentication.v1"),
    ("meta.k8s.io/v1", META),
];

/// meta/v1's package.
pub(crate) const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// meta/v1 kinds that every group version above serves (`metav1.AddToGroupVersion`: the options,
/// `WatchEvent`, and the unversioned `Status`, `APIVersions`, `APIGroupList`, `APIGroup`,
/// `APIResourceList`).
const META_KINDS: &[&str] = &[
    "Status",
    "APIVersions",
    "APIGroupList",
    "APIGroup",
    "APIResourceList",
    "WatchEvent",
    "ListOptions",
    "GetOptions",
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
];

impl Schema {
    /// The schema, built on first use from [`descriptor_pool`] and the Go facts.
    pub(crate) fn get() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| match Schema::build(descriptor_pool(), GOFIELDS) {
            Ok(schema) => schema,
            // The inputs are fixed at build time and the crate's tests build the schema.
            Err(reason) => panic!("the Kubernetes protobuf schema does not build: {reason}"),
        })
    }

    pub(crate) fn message(&self, id: MsgId) -> &Message {
        &self.messages[usize::from(id)]
    }

    pub(crate) fn by_name(&self, full_name: &str) -> Option<MsgId> {
        self.by_name.get(full_name).copied()
    }

    pub(crate) fn for_kind(&self, api_version: &str, kind: &str) -> Option<MsgId> {
        self.kinds.get(api_version)?.get(kind).copied()
    }

    /// The known (apiVersion, kind, message) triples.
    pub(crate) fn kinds(&self) -> impl Iterator<Item = (&'static str, &'static str, MsgId)> + '_ {
        self.kinds.iter().flat_map(|(api_version, kinds)| kinds.iter().map(move |(kind, &id)| (*api_version, *kind, id)))
    }

    fn build(pool: &DescriptorPool, gofields: &'static str) -> Result<Schema, String> {
        let facts = parse_gofields(gofields)?;
        let descriptors: Vec<_> = pool.all_messages().collect();
        if descriptors.len() > usize::from(MsgId::MAX) {
            return Err("too many messages".into());
        }
        let leak = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
        let mut by_name = HashMap::new();
        for (id, descriptor) in descriptors.iter().enumerate() {
            by_name.insert(leak(descriptor.full_name()), id as MsgId);
        }
        let mut messages = Vec::with_capacity(descriptors.len());
        for descriptor in &descriptors {
            let full_name = *by_name.get_key_value(descriptor.full_name()).map(|(k, _)| k).ok_or("message vanished")?;
            let message_facts = facts.get(full_name);
            let mut fields = Vec::new();
            // The descriptor proto keeps declaration order.
            for field_proto in &descriptor.descriptor_proto().field {
                let number = u32::try_from(field_proto.number()).map_err(|_| format!("{full_name}: negative field number"))?;
                let field = descriptor.get_field(number).ok_or_else(|| format!("{full_name}: field {number} vanished"))?;
                let (card, value_kind) = if field.is_map() {
                    let Kind::Message(entry) = field.kind() else { return Err(format!("{full_name}.{}: map without entry", field.name())) };
                    if entry.map_entry_key_field().kind() != Kind::String {
                        return Err(format!("{full_name}.{}: map keys must be strings", field.name()));
                    }
                    (Card::Map, entry.map_entry_value_field().kind())
                } else if field.cardinality() == Cardinality::Repeated {
                    (Card::Repeated, field.kind())
                } else {
                    (Card::Single, field.kind())
                };
                let ty = match value_kind {
                    Kind::String => Ty::Scalar(Scalar::String),
                    Kind::Bytes => Ty::Scalar(Scalar::Bytes),
                    Kind::Bool => Ty::Scalar(Scalar::Bool),
                    Kind::Int32 => Ty::Scalar(Scalar::Int32),
                    Kind::Int64 => Ty::Scalar(Scalar::Int64),
                    Kind::Double => Ty::Scalar(Scalar::Double),
                    Kind::Message(m) => {
                        Ty::Message(*by_name.get(m.full_name()).ok_or_else(|| format!("unknown message {}", m.full_name()))?)
                    }
                    other => return Err(format!("{full_name}.{}: unsupported field type {other:?}", field.name())),
                };
                let name = leak(field.name());
                let fact = message_facts.and_then(|m| m.fields.iter().find(|f| f.number == number));
                fields.push(match fact {
                    Some(fact) => Field {
                        number,
                        name,
                        json: fact.json,
                        ty,
                        card,
                        go: fact.go,
                        omitempty: fact.omitempty,
                        omitzero: fact.omitzero,
                        inline: fact.inline,
                        silent_when_absent: false,
                        wire_type: 0,
                        json_key: b"",
                    },
                    // No facts: a type with custom marshallers (handled as Special) or a named
                    // slice; JSON name = proto name, Go kind from the proto shape.
                    None => Field {
                        number,
                        name,
                        json: Some(name),
                        ty,
                        card,
                        go: match card {
                            Card::Single => GoKind::Value,
                            Card::Repeated => GoKind::Slice,
                            Card::Map => GoKind::Map,
                        },
                        omitempty: false,
                        omitzero: false,
                        inline: false,
                        silent_when_absent: false,
                        wire_type: 0,
                        json_key: b"",
                    },
                });
            }
            for field in &mut fields {
                if let Some(json) = field.json {
                    field.json_key = Box::leak(format!("\"{json}\":").into_bytes().into_boxed_slice());
                }
                field.wire_type = match (field.card, field.ty) {
                    (Card::Map, _) | (_, Ty::Message(_)) => 2,
                    (_, Ty::Scalar(s)) => s.wire_type(),
                };
                field.silent_when_absent = !field.inline
                    && (field.json.is_none()
                        || match (field.card, field.ty, field.go) {
                            // An absent value struct is its zero value: written unless omitzero.
                            (Card::Single, Ty::Message(m), GoKind::Value)
                                if special(descriptors[usize::from(m)].full_name()) != Special::Verbs =>
                            {
                                field.omitzero
                            }
                            // Nil or zero: omitted by omitempty, else `null` or the zero value.
                            _ => field.omitempty,
                        });
            }
            if fields.len() > MAX_FIELDS {
                return Err(format!("{full_name} has {} fields, more than {MAX_FIELDS}", fields.len()));
            }
            let max_number = fields.iter().map(|f| f.number).max().unwrap_or(0);
            let mut by_number = vec![0u8; max_number as usize + 1];
            for (i, field) in fields.iter().enumerate() {
                by_number[field.number as usize] = i as u8 + 1;
            }
            let mut encode_order: Vec<u8> = (0..fields.len() as u8).collect();
            encode_order.sort_by_key(|&i| fields[usize::from(i)].number);
            let mut by_json = HashMap::with_hasher(ahash::RandomState::new());
            for (i, field) in fields.iter().enumerate() {
                if let (Some(json), false) = (field.json, field.inline) {
                    if by_json.insert(json, i as u8).is_some() {
                        return Err(format!("{full_name}: two fields named {json:?} in JSON"));
                    }
                }
            }
            messages.push(Message {
                full_name,
                special: special(full_name),
                type_meta: message_facts.is_some_and(|m| m.type_meta),
                has_inline: fields.iter().any(|f| f.inline),
                fields,
                by_number,
                encode_order,
                by_json,
            });
        }
        for message in &messages {
            for field in &message.fields {
                if field.inline && !matches!(field.ty, Ty::Message(_)) {
                    return Err(format!("{}.{}: an inline field must be a message", message.full_name, field.name));
                }
            }
        }
        let mut kinds: HashMap<&'static str, HashMap<&'static str, MsgId>> = HashMap::new();
        for &(api_version, package) in GROUP_VERSIONS {
            let table = kinds.entry(api_version).or_default();
            for (id, message) in messages.iter().enumerate() {
                let Some(kind) = message.full_name.strip_prefix(package).and_then(|rest| rest.strip_prefix('.')) else { continue };
                let is_kind = message.type_meta
                    || (package == META && matches!(kind, "Table" | "PartialObjectMetadata" | "PartialObjectMetadataList"));
                if is_kind && !kind.contains('.') {
                    table.insert(kind, id as MsgId);
                }
            }
            for &kind in META_KINDS {
                if !table.contains_key(kind) {
                    let id = by_name.get(format!("{META}.{kind}").as_str()).copied().ok_or_else(|| format!("no meta/v1 {kind}"))?;
                    table.insert(kind, id);
                }
            }
        }
        Ok(Schema { messages, by_name, kinds })
    }
}

fn special(full_name: &str) -> Special {
    match full_name {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time" => Special::Time,
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => Special::MicroTime,
        "k8s.io.apimachinery.pkg.apis.meta.v1.Duration" => Special::Duration,
        "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1" => Special::FieldsV1,
        "k8s.io.apimachinery.pkg.apis.meta.v1.Verbs"
        | "k8s.io.api.authentication.v1.ExtraValue"
        | "k8s.io.api.authentication.v1.AttestationValue"
        | "k8s.io.api.authorization.v1.ExtraValue"
        | "k8s.io.api.certificates.v1.ExtraValue" => Special::Verbs,
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
        "k8s.io.apimachinery.pkg.api.resource.Quantity" | "k8s.io.apimachinery.pkg.api.resource.QuantityValue" => Special::Quantity,
        "k8s.io.apimachinery.pkg.runtime.RawExtension" => Special::RawExtension,
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON" => Special::Json,
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool" => Special::OrBool,
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray" => Special::OrArray,
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray" => Special::OrStringArray,
        _ => Special::None,
    }
}

struct MessageFacts {
    type_meta: bool,
    fields: Vec<FieldFacts>,
}

struct FieldFacts {
    number: u32,
    json: Option<&'static str>,
    go: GoKind,
    omitempty: bool,
    omitzero: bool,
    inline: bool,
}

/// Reads the table `build.rs` writes (its format is documented there).
fn parse_gofields(table: &'static str) -> Result<HashMap<&'static str, MessageFacts>, String> {
    let mut facts: HashMap<&'static str, MessageFacts> = HashMap::new();
    let mut current: Option<&'static str> = None;
    for line in table.lines() {
        let cols: Vec<&'static str> = line.split('\t').collect();
        match cols.as_slice() {
            ["M", name, type_meta] => {
                facts.insert(name, MessageFacts { type_meta: *type_meta == "1", fields: Vec::new() });
                current = Some(name);
            }
            ["F", number, json, kind, flags] => {
                let message = current.and_then(|name| facts.get_mut(name)).ok_or("field facts before a message")?;
                message.fields.push(FieldFacts {
                    number: number.parse().map_err(|_| format!("bad field number {number:?}"))?,
                    json: if *json == "-" { None } else { Some(json) },
                    go: match *kind {
                        "v" => GoKind::Value,
                        "p" => GoKind::Pointer,
                        "s" => GoKind::Slice,
                        "m" => GoKind::Map,
                        other => return Err(format!("bad Go kind {other:?}")),
                    },
                    omitempty: flags.contains('e'),
                    omitzero: flags.contains('z'),
                    inline: flags.contains('i'),
                });
            }
            _ => return Err(format!("bad gofields line {line:?}")),
        }
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_builds_and_resolves_kinds() {
        let schema = Schema::get();
        assert!(schema.messages.len() > 500);
        let pod = schema.for_kind("v1", "Pod").unwrap();
        assert_eq!(schema.message(pod).full_name, "k8s.io.api.core.v1.Pod");
        assert!(schema.message(pod).type_meta);
        let status = schema.for_kind("apps/v1", "Status").unwrap();
        assert_eq!(schema.message(status).full_name, "k8s.io.apimachinery.pkg.apis.meta.v1.Status");
        let crd = schema.for_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition").unwrap();
        assert_eq!(schema.message(crd).full_name, "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition");
        assert_eq!(schema.message(schema.for_kind("v1", "List").unwrap()).full_name, "k8s.io.api.core.v1.List");
        assert!(schema.for_kind("v1", "PodSpec").is_none());
        assert!(schema.for_kind("example.com/v1", "Widget").is_none());
        // ConfigMap: JSON order is declaration order, the wire order field numbers.
        let config_map = schema.message(schema.for_kind("v1", "ConfigMap").unwrap());
        let json: Vec<_> = config_map.fields.iter().map(|f| f.json.unwrap()).collect();
        assert_eq!(json, ["metadata", "immutable", "data", "binaryData"]);
        let numbers: Vec<_> = config_map.encode_order.iter().map(|&i| config_map.fields[usize::from(i)].number).collect();
        assert_eq!(numbers, [1, 2, 3, 4]);
    }
}
