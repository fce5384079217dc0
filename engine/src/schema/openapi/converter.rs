//! The conversion of one document ([`Converter`]): each schema node visited once, as
//! kube-openapi's v2 or v3 converter ([`Flavor`]) converts it, then the schema assembled with
//! the built-in types, aliases and relationship overrides.

use super::super::{Atom, ElementRelationship, List, Map, Scalar, Schema, StructField, TypeDef, TypeRef, DEDUCED_TYPE};
use super::extensions::{bool_ext, list_relationship, map_relationship, properties};
use super::object_meta::{BUILTIN_NAMES, OBJECT_META_DEFINITIONS, OBJECT_META_TYPE};
use super::path::{err, At};
use crate::Result;
use serde_json::{Map as JsonMap, Value};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// Name of the atomic untyped type Kubernetes adds to every converted schema.
pub(super) const UNTYPED_ATOMIC: &str = "__untyped_atomic_";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";
pub(super) const V2_PREFIX: &str = "#/definitions/";
pub(super) const V3_PREFIX: &str = "#/components/schemas/";

/// Deepest nesting of inline schemas accepted; deeper documents are rejected rather than risking
/// the stack here or in the typed walkers later.
pub(super) const MAX_DEPTH: usize = 128;

/// Which of Kubernetes' two converters to follow (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavor {
    V2,
    V3,
}

/// The conversion of one document: the names it may refer to, and what the pass found that the
/// final assembly must add (aliases, relationship overrides of referenced types).
pub(super) struct Converter<'d> {
    flavor: Flavor,
    prefix: &'static str,
    /// Names a `$ref` may target: the document's own and the built-in ones.
    known: HashSet<&'d str>,
    /// Definitions that are only a `$ref`: (name, target, path for errors).
    aliases: Vec<(String, String, String)>,
    /// Referenced types whose map relationship a reference overrides: (target, atomic).
    overrides: BTreeSet<(String, bool)>,
}

impl<'d> Converter<'d> {
    /// A conversion following `flavor`, whose references start with `prefix` and may name
    /// `known` and the built-in types.
    pub(super) fn new(flavor: Flavor, prefix: &'static str, mut known: HashSet<&'d str>) -> Self {
        known.extend(BUILTIN_NAMES);
        Converter { flavor, prefix, known, aliases: Vec::new(), overrides: BTreeSet::new() }
    }

    /// Converts every definition into a named type (aliases are recorded for [`Self::finish`]).
    pub(super) fn definitions(&mut self, defs: &'d JsonMap<String, Value>, at: &At<'_>, preserve_all: bool) -> Result<Vec<TypeDef>> {
        let mut out = Vec::with_capacity(defs.len());
        for (name, def) in defs {
            let at = at.name(name);
            let obj = def.as_object().ok_or_else(|| at.err("a schema must be an object"))?;
            if obj.contains_key("$ref") {
                // Kubernetes skips such definitions (leaving references to them dangling); an
                // alias keeps them usable.
                if let Some(target) = self.ref_target(obj, &at)? {
                    self.aliases.push((name.clone(), target, at.render()));
                }
                continue;
            }
            let atom = if name == QUANTITY || (self.flavor == Flavor::V3 && name == RAW_EXTENSION) {
                Atom { scalar: Some(Scalar::Untyped), ..Atom::default() }
            } else {
                self.atom(def, &at, preserve_all, false, 0)?
            };
            out.push(TypeDef { name: name.clone(), atom });
        }
        Ok(out)
    }

    /// Assembles the schema: the converted types, the built-in and common types the document
    /// lacks, aliases, and the derived types of relationship overrides.
    pub(super) fn finish(self, mut types: Vec<TypeDef>, preserve_all: bool) -> Result<Schema> {
        let alias_targets: HashMap<&str, &str> = self.aliases.iter().map(|(n, t, _)| (n.as_str(), t.as_str())).collect();
        let mut index: HashMap<String, usize> = types.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        let add = |types: &mut Vec<TypeDef>, index: &mut HashMap<String, usize>, t: TypeDef| {
            if !index.contains_key(&t.name) && !alias_targets.contains_key(t.name.as_str()) {
                index.insert(t.name.clone(), types.len());
                types.push(t);
            }
        };
        for t in builtin_types(preserve_all)? {
            add(&mut types, &mut index, t);
        }
        for t in Schema::deduced().types() {
            add(&mut types, &mut index, t.clone());
        }
        for (name, target, path) in &self.aliases {
            let mut cur = target.as_str();
            let mut steps = 0;
            let atom = loop {
                if let Some(&i) = index.get(cur) {
                    break types[i].atom.clone();
                }
                match alias_targets.get(cur) {
                    Some(&next) if steps <= self.aliases.len() => {
                        cur = next;
                        steps += 1;
                    }
                    Some(_) => return Err(err(path, "cycle of references")),
                    None => return Err(err(path, &format!("unknown reference target {cur:?}"))),
                }
            };
            index.insert(name.clone(), types.len());
            types.push(TypeDef { name: name.clone(), atom });
        }
        for (target, atomic) in &self.overrides {
            let Some(&i) = index.get(target) else {
                return Err(err(target, "unknown reference target"));
            };
            let mut atom = types[i].atom.clone();
            if let Some(m) = &mut atom.map {
                m.relationship = if *atomic { ElementRelationship::Atomic } else { ElementRelationship::Separable };
            }
            types.push(TypeDef { name: override_name(target, *atomic), atom });
        }
        Ok(Schema::new(types))
    }

    /// The type of a node referenced from a field, list item or map value: a named type for a
    /// reference, an inline type otherwise.
    fn make_ref(&mut self, s: &'d Value, at: &At<'_>, preserve: bool, depth: usize) -> Result<TypeRef> {
        if depth > MAX_DEPTH {
            return Err(at.err(format!("schemas nested deeper than {MAX_DEPTH} levels")));
        }
        let obj = s.as_object().ok_or_else(|| at.err("a schema must be an object"))?;
        if let Some(target) = self.ref_target(obj, at)? {
            if self.flavor == Flavor::V2 && target == RAW_EXTENSION {
                return Ok(TypeRef::Named(UNTYPED_ATOMIC.to_string(), None));
            }
            if let Some(rel) = map_relationship(obj, at)? {
                let atomic = rel == ElementRelationship::Atomic;
                let name = override_name(&target, atomic);
                self.overrides.insert((target, atomic));
                return Ok(TypeRef::Named(name, None));
            }
            return Ok(TypeRef::Named(target, None));
        }
        Ok(TypeRef::Inline(Arc::new(self.atom(s, at, preserve, false, depth)?)))
    }

    /// The definition a node refers to, if it is a reference; an error if the target is unknown.
    fn ref_target(&self, obj: &JsonMap<String, Value>, at: &At<'_>) -> Result<Option<String>> {
        let (r, in_all_of) = match obj.get("$ref") {
            Some(r) => (r, false),
            None if self.flavor == Flavor::V3 => match obj.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
                Some([one]) => match one.get("$ref") {
                    Some(r) => (r, true),
                    None => return Ok(None),
                },
                _ => return Ok(None),
            },
            None => return Ok(None),
        };
        // Rendered only on error: most nodes are fine.
        let path = || if in_all_of { format!("{}.allOf[0].$ref", at.render()) } else { at.field("$ref").render() };
        if self.flavor == Flavor::V2 {
            // kube-openapi's proto models reject these siblings of a reference.
            if obj.get("type").is_some_and(|t| !t.is_null()) {
                return Err(at.err("a reference can only have $ref and description"));
            }
            if obj.get("properties").is_some_and(|p| p.as_object().is_some_and(|p| !p.is_empty())) {
                return Err(at.err("a reference cannot define properties"));
            }
        }
        let r = r.as_str().ok_or_else(|| err(&path(), "must be a string"))?;
        let name = r
            .strip_prefix(self.prefix)
            .ok_or_else(|| err(&path(), &format!("unsupported reference {r:?}: expected {}<name>", self.prefix)))?;
        let name = if name.contains('~') { name.replace("~1", "/").replace("~0", "~") } else { name.to_string() };
        if !self.known.contains(name.as_str()) {
            return Err(err(&path(), &format!("unknown reference target {name:?}")));
        }
        Ok(Some(name))
    }

    /// The atom of a schema node. `preserve` is inherited from the ancestors; `native` adds the
    /// Kubernetes object fields.
    pub(super) fn atom(&mut self, s: &'d Value, at: &At<'_>, preserve: bool, native: bool, depth: usize) -> Result<Atom> {
        let obj = s.as_object().ok_or_else(|| at.err("a schema must be an object"))?;
        let preserve = preserve || bool_ext(obj, "x-kubernetes-preserve-unknown-fields", at)?;
        let typ = self.type_of(obj, at)?;
        let scalar_only = |scalar: Scalar| -> Result<Atom> { Ok(Atom { scalar: Some(scalar), ..Atom::default() }) };
        match (self.flavor, typ) {
            (_, "integer" | "number") => scalar_only(Scalar::Numeric),
            (_, "boolean") => scalar_only(Scalar::Boolean),
            (_, "string") => match obj.get("format").and_then(Value::as_str).unwrap_or("") {
                "" | "byte" => scalar_only(Scalar::String),
                _ => scalar_only(Scalar::Untyped),
            },
            (_, "array") => Ok(Atom { list: Some(self.list(obj, at, preserve, true, depth)?), ..Atom::default() }),
            (Flavor::V3, "object") => Ok(Atom { map: Some(self.object_v3(obj, at, preserve, native, depth)?), ..Atom::default() }),
            (Flavor::V3, "") => Ok(Atom {
                scalar: Some(Scalar::Untyped),
                list: Some(self.list(obj, at, preserve, false, depth)?),
                map: Some(self.object_v3(obj, at, preserve, native, depth)?),
            }),
            (Flavor::V2, "object" | "") => match properties(obj, at)? {
                Some(props) => {
                    let fields = self.fields(Some(props), at, preserve, native, depth)?;
                    let element_type = if preserve { deduced() } else { TypeRef::Empty };
                    let relationship = map_relationship(obj, at)?.unwrap_or_default();
                    Ok(Atom { map: Some(Map::new(fields, element_type, relationship)), ..Atom::default() })
                }
                None if typ.is_empty() => Ok(deduced_atom()),
                None => {
                    let element_type = match obj.get("additionalProperties") {
                        Some(s @ Value::Object(_)) => self.make_ref(s, &at.field("additionalProperties"), preserve, depth + 1)?,
                        None | Some(Value::Null | Value::Bool(_)) => deduced(),
                        Some(_) => return Err(at.field("additionalProperties").err("must be a schema or a boolean")),
                    };
                    let relationship = map_relationship(obj, at)?.unwrap_or_default();
                    Ok(Atom { map: Some(Map::new(Vec::new(), element_type, relationship)), ..Atom::default() })
                }
            },
            (_, other) => Err(at.field("type").err(format!("unrecognized type {other:?}"))),
        }
    }

    /// `type`, empty when absent. kube-openapi reads the first of several types in v3 and
    /// rejects several in v2.
    fn type_of<'v>(&self, obj: &'v JsonMap<String, Value>, at: &At<'_>) -> Result<&'v str> {
        match obj.get("type") {
            None | Some(Value::Null) => Ok(""),
            Some(Value::String(s)) => Ok(s),
            Some(Value::Array(a)) => match a.as_slice() {
                [] => Ok(""),
                [Value::String(s)] => Ok(s),
                [Value::String(s), ..] if self.flavor == Flavor::V3 => Ok(s),
                _ => Err(at.field("type").err("must be one type name")),
            },
            Some(_) => Err(at.field("type").err("must be a string")),
        }
    }

    /// The map of a v3 object (`parseObject`).
    fn object_v3(&mut self, obj: &'d JsonMap<String, Value>, at: &At<'_>, preserve: bool, native: bool, depth: usize) -> Result<Map> {
        let native = native || bool_ext(obj, "x-kubernetes-embedded-resource", at)?;
        let fields = self.fields(properties(obj, at)?, at, preserve, native, depth)?;
        let element_type = match obj.get("additionalProperties") {
            // An object without properties is free-form; with them, only they are allowed.
            None | Some(Value::Null) => {
                if preserve || fields.is_empty() {
                    deduced()
                } else {
                    TypeRef::Empty
                }
            }
            Some(Value::Bool(true)) => deduced(),
            Some(Value::Bool(false)) => TypeRef::Empty,
            Some(s @ Value::Object(_)) => self.make_ref(s, &at.field("additionalProperties"), preserve, depth + 1)?,
            Some(_) => return Err(at.field("additionalProperties").err("must be a schema or a boolean")),
        };
        Ok(Map::new(fields, element_type, map_relationship(obj, at)?.unwrap_or_default()))
    }

    /// The declared fields, with their defaults and patch metadata; `native` replaces
    /// `apiVersion`, `kind` and `metadata` by Kubernetes' own.
    fn fields(
        &mut self,
        props: Option<&'d JsonMap<String, Value>>,
        at: &At<'_>,
        preserve: bool,
        native: bool,
        depth: usize,
    ) -> Result<Vec<StructField>> {
        let at = at.field("properties");
        let mut fields = Vec::with_capacity(props.map_or(0, JsonMap::len) + if native { 3 } else { 0 });
        for (name, member) in props.into_iter().flatten() {
            if native && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            let at = at.field(name);
            let ty = self.make_ref(member, &at, preserve, depth + 1)?;
            let mut field = StructField::new(name.as_str(), ty);
            if let Some(m) = member.as_object() {
                field.default = m.get("default").filter(|d| !d.is_null()).cloned();
                if let Some(ps) = m.get("x-kubernetes-patch-strategy") {
                    let ps = ps.as_str().ok_or_else(|| at.field("x-kubernetes-patch-strategy").err("must be a string"))?;
                    field.patch_strategies = ps.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
                }
                if let Some(k) = m.get("x-kubernetes-patch-merge-key") {
                    let k = k.as_str().ok_or_else(|| at.field("x-kubernetes-patch-merge-key").err("must be a string"))?;
                    field.patch_merge_key = Some(k.to_string());
                }
            }
            fields.push(field);
        }
        if native {
            let string = || TypeRef::Inline(Arc::new(Atom { scalar: Some(Scalar::String), ..Atom::default() }));
            fields.push(StructField::new("apiVersion", string()));
            fields.push(StructField::new("kind", string()));
            fields.push(StructField::new("metadata", TypeRef::Named(OBJECT_META_TYPE.to_string(), None)));
        }
        Ok(fields)
    }

    /// The list of an array (`parseList` / `VisitArray`). `typed`: the node says `type: array`,
    /// so it must have `items`; an untyped node without `items` holds untyped atomic elements.
    fn list(&mut self, obj: &'d JsonMap<String, Value>, at: &At<'_>, preserve: bool, typed: bool, depth: usize) -> Result<List> {
        let (relationship, keys) = list_relationship(obj, at)?;
        let element_type = match obj.get("items") {
            Some(items @ Value::Object(_)) => self.make_ref(items, &at.field("items"), preserve, depth + 1)?,
            None | Some(Value::Null) if !typed => TypeRef::Named(UNTYPED_ATOMIC.to_string(), None),
            None | Some(Value::Null) => return Err(at.err("`items` must be specified on arrays")),
            Some(_) => return Err(at.field("items").err("arrays must have exactly one item schema")),
        };
        Ok(List { element_type, relationship, keys: keys.into_iter().map(Into::into).collect() })
    }
}

/// The built-in `ObjectMeta` types, converted like any v3 document.
fn builtin_types(preserve_all: bool) -> Result<Vec<TypeDef>> {
    let defs: Value = serde_json::from_str(OBJECT_META_DEFINITIONS).map_err(|e| err("builtin ObjectMeta", &e.to_string()))?;
    let defs = defs.as_object().ok_or_else(|| err("builtin ObjectMeta", "not an object"))?;
    let mut c = Converter::new(Flavor::V3, V3_PREFIX, HashSet::new());
    c.definitions(defs, &At::root("builtin"), preserve_all)
}

/// The name of the derived type of `target` with an atomic or granular map relationship.
fn override_name(target: &str, atomic: bool) -> String {
    format!("{target}#{}", if atomic { "atomic" } else { "granular" })
}

/// A reference to the deduced type.
fn deduced() -> TypeRef {
    TypeRef::Named(DEDUCED_TYPE.to_string(), None)
}

/// The deduced type's atom, for a definition that is itself free-form.
fn deduced_atom() -> Atom {
    Atom {
        scalar: Some(Scalar::Untyped),
        list: Some(List {
            element_type: TypeRef::Named(UNTYPED_ATOMIC.to_string(), None),
            relationship: ElementRelationship::Atomic,
            keys: Vec::new(),
        }),
        map: Some(Map::new(Vec::new(), deduced(), ElementRelationship::Separable)),
    }
}
