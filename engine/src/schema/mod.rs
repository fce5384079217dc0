//! The schema model: named types made of scalars, lists and maps, with the element
//! relationships that decide how Server-Side Apply merges and owns their contents.
//!
//! It mirrors structured-merge-diff's `schema` package. An [`Atom`] may allow several kinds at
//! once (the "deduced" type of schemaless objects is a scalar, a list and a map); the kind of the
//! value at hand picks one.

pub mod builtin;
mod openapi;
mod smd_yaml;

use fieldstore_codec::fieldpath::Name;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

pub use openapi::{
    crd_type_name, from_crd, from_openapi_v2, from_openapi_v3, from_openapi_v3_components, object_meta_schema, OBJECT_META_TYPE,
};
pub use smd_yaml::parse_smd_yaml;

/// A set of named types.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    types: Vec<TypeDef>,
    index: HashMap<String, usize>,
}

/// One named type of a schema.
#[derive(Debug, Clone)]
pub struct TypeDef {
    /// The type's name, unique in its schema.
    pub name: String,
    /// What values of the type may be.
    pub atom: Atom,
}

/// A reference to a type: by name, inline, or empty (which accepts nothing; a map whose element
/// type is empty declares only its named fields).
#[derive(Debug, Clone, Default)]
pub enum TypeRef {
    /// No type.
    #[default]
    Empty,
    /// A named type of the schema, with its index once resolved by [`Schema::new`].
    Named(String, Option<usize>),
    /// A type declared in place.
    Inline(Arc<Atom>),
}

impl TypeRef {
    /// Whether this is the empty reference.
    pub fn is_empty(&self) -> bool {
        matches!(self, TypeRef::Empty)
    }
}

/// The kinds a value of a type may have; at least one is set in a valid type.
#[derive(Debug, Clone, Default)]
pub struct Atom {
    /// The value may be a scalar of this kind.
    pub scalar: Option<Scalar>,
    /// The value may be a list of this shape.
    pub list: Option<List>,
    /// The value may be a map or struct of this shape.
    pub map: Option<Map>,
}

/// A scalar kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    /// An int or a float.
    Numeric,
    /// A string.
    String,
    /// A boolean.
    Boolean,
    /// Any scalar (schemaless data).
    Untyped,
}

/// How the elements of a list or map relate to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ElementRelationship {
    /// Each element stands on its own (the default for maps).
    #[default]
    Separable,
    /// The container is one value: owned and replaced as a whole.
    Atomic,
    /// A list keyed by its elements' key fields (a map list) or by the elements themselves (a set).
    Associative,
}

/// A list type.
#[derive(Debug, Clone)]
pub struct List {
    /// The type of the elements.
    pub element_type: TypeRef,
    /// Atomic, associative (set or map list), or separable (items identified by position).
    pub relationship: ElementRelationship,
    /// For a map list, the key fields of its elements (shared with the keys of paths).
    pub keys: Vec<Name>,
}

/// A map or struct type: named fields, and an element type for any other key.
#[derive(Debug, Clone, Default)]
pub struct Map {
    /// The declared fields.
    pub fields: Vec<StructField>,
    field_index: HashMap<String, usize, ahash::RandomState>,
    /// The type of keys that are not declared fields; empty when only declared fields are allowed.
    pub element_type: TypeRef,
    /// Granular (separable) or atomic.
    pub relationship: ElementRelationship,
}

impl Map {
    /// Up to this many fields, a field is found by looking at each (no index).
    const SCANNED: usize = 8;

    /// A map type from its parts.
    pub fn new(fields: Vec<StructField>, element_type: TypeRef, relationship: ElementRelationship) -> Self {
        let field_index = if fields.len() <= Self::SCANNED {
            HashMap::default()
        } else {
            fields.iter().enumerate().map(|(i, f)| (f.name.to_string(), i)).collect()
        };
        Map { fields, field_index, element_type, relationship }
    }

    /// The declared field of this name.
    pub fn find_field(&self, name: &str) -> Option<&StructField> {
        if self.fields.len() <= Self::SCANNED {
            // A few fields: compared by length and first byte before their text, which costs
            // less than hashing the name. The last of repeated names, as in the index.
            let (len, first) = (name.len(), name.as_bytes().first());
            return self.fields.iter().rev().find(|f| f.name.len() == len && f.name.as_bytes().first() == first && *f.name == *name);
        }
        self.field_index.get(name).map(|&i| &self.fields[i])
    }

    /// The path element of the entry `name`: for a declared field it shares the field's name,
    /// so it costs no allocation.
    pub fn field_element(&self, name: &str) -> fieldstore_codec::PathElement {
        fieldstore_codec::PathElement::FieldName(match self.find_field(name) {
            Some(f) => f.name.clone(),
            None => Name::from(name),
        })
    }

    /// The type of the entry `name`: the declared field's type, else the element type.
    pub fn entry_type(&self, name: &str) -> &TypeRef {
        self.find_field(name).map(|f| &f.ty).unwrap_or(&self.element_type)
    }
}

/// A declared field of a struct.
#[derive(Debug, Clone)]
pub struct StructField {
    /// The field name (shared with the paths that name the field).
    pub name: Name,
    /// The field's type.
    pub ty: TypeRef,
    /// A default value, used for an associative-list key field an item omits.
    pub default: Option<Value>,
    /// Strategic-merge-patch strategies of the field (`merge`, `replace`, `retainKeys`), from
    /// `x-kubernetes-patch-strategy` or Go struct tags; empty when none is declared.
    pub patch_strategies: Vec<String>,
    /// Strategic-merge-patch merge key of a list field (`x-kubernetes-patch-merge-key`).
    pub patch_merge_key: Option<String>,
}

impl StructField {
    /// A field with a name and a type, no default and no patch metadata.
    pub fn new(name: impl Into<Name>, ty: TypeRef) -> Self {
        StructField { name: name.into(), ty, default: None, patch_strategies: Vec::new(), patch_merge_key: None }
    }
}

/// The atom every unresolvable or empty reference resolves to: it accepts nothing.
static EMPTY_ATOM: Atom = Atom { scalar: None, list: None, map: None };

impl Schema {
    /// A schema from its named types; named references are resolved to indexes here.
    pub fn new(mut types: Vec<TypeDef>) -> Self {
        let index: HashMap<String, usize> = types.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        for t in &mut types {
            resolve_atom(&mut t.atom, &index);
        }
        Schema { types, index }
    }

    /// The named types.
    pub fn types(&self) -> &[TypeDef] {
        &self.types
    }

    /// A reference to the named type `name`, if the schema has it.
    pub fn named(&self, name: &str) -> Option<TypeRef> {
        self.index.get(name).map(|&i| TypeRef::Named(name.to_string(), Some(i)))
    }

    /// The atom a reference points at; `None` for a named type the schema lacks. The empty
    /// reference resolves to an atom that accepts nothing.
    pub fn resolve<'a>(&'a self, tr: &'a TypeRef) -> Option<&'a Atom> {
        match tr {
            TypeRef::Empty => Some(&EMPTY_ATOM),
            TypeRef::Named(_, Some(i)) => self.types.get(*i).map(|t| &t.atom),
            TypeRef::Named(name, None) => self.index.get(name).map(|&i| &self.types[i].atom),
            TypeRef::Inline(a) => Some(a),
        }
    }

    /// The schema Kubernetes uses for objects without one: every map granular, every list
    /// atomic, scalars untyped. Its root type is [`DEDUCED_TYPE`].
    pub fn deduced() -> Self {
        parse_smd_yaml(DEDUCED_YAML).unwrap_or_default()
    }
}

/// Name of the root type of [`Schema::deduced`].
pub const DEDUCED_TYPE: &str = "__untyped_deduced_";

const DEDUCED_YAML: &str = "types:
- name: __untyped_atomic_
  scalar: untyped
  list:
    elementType:
      namedType: __untyped_atomic_
    elementRelationship: atomic
  map:
    elementType:
      namedType: __untyped_atomic_
    elementRelationship: atomic
- name: __untyped_deduced_
  scalar: untyped
  list:
    elementType:
      namedType: __untyped_atomic_
    elementRelationship: atomic
  map:
    elementType:
      namedType: __untyped_deduced_
    elementRelationship: separable
";

fn resolve_ref(tr: &mut TypeRef, index: &HashMap<String, usize>) {
    match tr {
        TypeRef::Named(name, slot) => *slot = index.get(name.as_str()).copied(),
        TypeRef::Inline(a) => resolve_atom(Arc::make_mut(a), index),
        TypeRef::Empty => {}
    }
}

fn resolve_atom(a: &mut Atom, index: &HashMap<String, usize>) {
    if let Some(l) = &mut a.list {
        resolve_ref(&mut l.element_type, index);
    }
    if let Some(m) = &mut a.map {
        resolve_ref(&mut m.element_type, index);
        for f in &mut m.fields {
            resolve_ref(&mut f.ty, index);
        }
    }
}
