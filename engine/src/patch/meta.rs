//! Patch metadata from the schema: for a field, its strategic-merge-patch strategy and merge key,
//! and the type to walk into — apimachinery's `LookupPatchMeta`.
//!
//! The rules, in order:
//! - a field's `x-kubernetes-patch-strategy` (or Go tag) decides: `merge` merges, `replace`
//!   replaces, `retainKeys` (alone or with one other strategy) adds the `$retainKeys` directive;
//! - a list field without a strategy whose list type is `map` (`x-kubernetes-list-type: map`)
//!   merges by its first key;
//! - everything else: maps merge key by key, lists are replaced.
//!
//! A merging list of scalars is a set; a merging list of objects needs a merge key (the field's
//! `patchMergeKey`, else the list type's first key).

use super::{at_error, At, PatchErrorKind};
use crate::schema::{Atom, ElementRelationship, Schema, TypeRef};
use crate::{Error, Result};

/// What a patch walk knows about the value at hand: a type of a schema, or nothing (untyped
/// values merge as maps, lists are replaced, no lookup ever fails).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ty<'s> {
    /// No schema information: every lookup succeeds without metadata.
    Untyped,
    /// A type of `schema`.
    Typed(&'s Schema, &'s Atom),
}

/// The patch strategy of a field, as `extractRetainKeysPatchStrategy` splits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Strategy {
    /// No strategy declared: maps merge, lists are replaced.
    Default,
    /// `merge`.
    Merge,
    /// `replace`.
    Replace,
    /// Any other strategy name: treated as the default, as Kubernetes does.
    Other,
}

/// The metadata of one field.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FieldMeta<'s> {
    /// The field's type (for a list lookup: the element type).
    pub ty: Ty<'s>,
    /// The strategy besides `retainKeys`.
    pub strategy: Strategy,
    /// Whether `retainKeys` is among the strategies.
    pub retain_keys: bool,
    /// The merge key of a merging list of objects.
    pub merge_key: Option<&'s str>,
}

const UNTYPED_FIELD: FieldMeta<'static> = FieldMeta { ty: Ty::Untyped, strategy: Strategy::Default, retain_keys: false, merge_key: None };

/// The schema and root type strategic merge patches are computed against.
///
/// # Examples
/// ```
/// # use fieldstore_engine::patch::{strategic_merge, PatchMeta};
/// # use serde_json::json;
/// // Without a schema, maps merge and lists are replaced.
/// let out = strategic_merge(&json!({"a": {"b": 1}, "l": [1]}), &json!({"a": {"c": 2}, "l": [2]}), &PatchMeta::untyped())?;
/// assert_eq!(out, json!({"a": {"b": 1, "c": 2}, "l": [2]}));
/// # Ok::<(), fieldstore_engine::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct PatchMeta<'s> {
    root: Ty<'s>,
}

impl<'s> PatchMeta<'s> {
    /// Patch metadata of the type `root` of `schema`.
    ///
    /// # Errors
    /// [`Error::UnknownType`] when the schema has no such type.
    pub fn new(schema: &'s Schema, root: &str) -> Result<Self> {
        let def = match schema.named(root) {
            Some(TypeRef::Named(_, Some(i))) => schema.types().get(i),
            _ => None,
        };
        let def = def.ok_or_else(|| Error::UnknownType(root.to_string()))?;
        Ok(PatchMeta { root: Ty::Typed(schema, &def.atom) })
    }

    /// No schema: maps merge key by key, lists are replaced, directives still apply.
    pub fn untyped() -> PatchMeta<'static> {
        PatchMeta { root: Ty::Untyped }
    }

    pub(crate) fn root(&self) -> Ty<'s> {
        self.root
    }
}

impl<'s> Ty<'s> {
    fn resolve(schema: &'s Schema, tr: &'s TypeRef) -> Ty<'s> {
        match schema.resolve(tr) {
            Some(atom) => Ty::Typed(schema, atom),
            // A reference the schema cannot resolve carries no metadata.
            None => Ty::Untyped,
        }
    }

    /// The metadata of the entry `key` of the map or struct this type describes
    /// (`LookupPatchMetadataForStruct`).
    pub(crate) fn field(self, key: &str, at: At<'_>) -> Result<FieldMeta<'s>> {
        let (schema, atom) = match self {
            Ty::Untyped => return Ok(UNTYPED_FIELD),
            Ty::Typed(s, a) => (s, a),
        };
        let Some(map) = &atom.map else {
            return Err(at_error(
                PatchErrorKind::UnknownField,
                at,
                format!("unable to find api field {key:?}: the type is not a map or struct"),
            ));
        };
        if let Some(f) = map.find_field(key) {
            let (retain_keys, strategy) = parse_strategies(&f.patch_strategies, at)?;
            return Ok(FieldMeta { ty: Ty::resolve(schema, &f.ty), strategy, retain_keys, merge_key: f.patch_merge_key.as_deref() });
        }
        if !map.element_type.is_empty() {
            return Ok(FieldMeta { ty: Ty::resolve(schema, &map.element_type), ..UNTYPED_FIELD });
        }
        Err(at_error(PatchErrorKind::UnknownField, at, format!("unable to find api field {key:?}")))
    }

    /// The metadata of the list at `key`, its `ty` being the element type
    /// (`LookupPatchMetadataForSlice`).
    pub(crate) fn list_field(self, key: &str, at: At<'_>) -> Result<FieldMeta<'s>> {
        let mut meta = self.field(key, at)?;
        let (schema, atom) = match meta.ty {
            Ty::Untyped => return Ok(meta),
            Ty::Typed(s, a) => (s, a),
        };
        // A field declared as one object but holding a list (Go's `*T` used as a list, an OpenAPI
        // `$ref` to the element type; OpenAPI v3 gives an untyped `$ref` target a generic list
        // too): the type is the element type.
        let struct_like = atom.map.as_ref().is_some_and(|m| !m.fields.is_empty());
        if let Some(list) = atom.list.as_ref().filter(|_| !struct_like) {
            meta.ty = Ty::resolve(schema, &list.element_type);
            if list.relationship == ElementRelationship::Associative && !list.keys.is_empty() {
                if meta.strategy == Strategy::Default && !meta.retain_keys {
                    meta.strategy = Strategy::Merge;
                }
                if meta.merge_key.is_none() {
                    meta.merge_key = list.keys.first().map(|k| &**k);
                }
            }
            return Ok(meta);
        }
        if atom.map.is_some() {
            return Ok(meta);
        }
        Err(at_error(PatchErrorKind::UnknownField, at, format!("field {key:?} is not a list in the schema")))
    }
}

/// Loads a schema from a document in any of the loaders' formats, told apart by content, and
/// returns it with the name of the root type: structured-merge-diff YAML (`types:`), a
/// CustomResourceDefinition (`root` is a version name or the root type name), an OpenAPI v2
/// document (`swagger` / `definitions`), an OpenAPI v3 document (`openapi` / `components`), or a
/// bare OpenAPI v3 schema (named `root`). JSON or YAML.
///
/// # Examples
/// ```
/// # use fieldstore_engine::patch::{load_schema, strategic_merge, PatchMeta};
/// # use serde_json::json;
/// let doc = r##"{"swagger": "2.0", "definitions": {"Pod": {"properties": {"containers": {
///     "type": "array", "items": {"$ref": "#/definitions/C"},
///     "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"}}},
///   "C": {"properties": {"name": {"type": "string"}, "image": {"type": "string"}}}}}"##;
/// let (schema, root) = load_schema(doc, "Pod")?;
/// let meta = PatchMeta::new(&schema, &root)?;
/// let live = json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]});
/// let out = strategic_merge(&live, &json!({"containers": [{"name": "b", "image": "z"}]}), &meta)?;
/// assert_eq!(out["containers"][1]["image"], "z");
/// # Ok::<(), fieldstore_engine::Error>(())
/// ```
///
/// # Errors
/// [`Error::Schema`] when the text is neither JSON nor YAML or is no known schema format, the
/// loader's errors, [`Error::UnknownType`] when a CRD has no such version.
pub fn load_schema(text: &str, root: &str) -> Result<(Schema, String)> {
    let doc: serde_json::Value = match serde_json::from_str(text) {
        Ok(doc) => doc,
        // YAML is a superset of JSON, and also reads JSON with trailing commas.
        Err(_) => serde_yaml::from_str(text)
            .map_err(|e| Error::Schema { path: "document".into(), reason: format!("neither JSON nor YAML: {e}") })?,
    };
    let has = |key: &str| doc.get(key).is_some();
    let schema = if doc.get("types").is_some_and(serde_json::Value::is_array) {
        crate::schema::parse_smd_yaml(text)?
    } else if doc.get("kind").and_then(serde_json::Value::as_str) == Some("CustomResourceDefinition") {
        let versions = crate::schema::from_crd(&doc)?;
        let found = versions.into_iter().find(|(version, _, name)| version == root || name == root);
        let (_, schema, name) = found.ok_or_else(|| Error::UnknownType(root.to_string()))?;
        return Ok((schema, name));
    } else if has("swagger") || has("definitions") {
        crate::schema::from_openapi_v2(&doc)?
    } else if has("openapi") || has("components") {
        crate::schema::from_openapi_v3_components(&doc)?
    } else if has("type") || has("properties") {
        crate::schema::from_openapi_v3(&doc, root)?
    } else {
        return Err(Error::Schema {
            path: "document".into(),
            reason: "not a schema: expected structured-merge-diff `types`, an OpenAPI document, a CRD or an OpenAPI schema".into(),
        });
    };
    Ok((schema, root.to_string()))
}

/// Splits the strategies as `extractRetainKeysPatchStrategy` does: none, one, or two of which
/// one is `retainKeys`.
fn parse_strategies(strategies: &[String], at: At<'_>) -> Result<(bool, Strategy)> {
    let named = |s: &str| match s {
        "merge" => Strategy::Merge,
        "replace" => Strategy::Replace,
        "" => Strategy::Default,
        _ => Strategy::Other,
    };
    match strategies {
        [] => Ok((false, Strategy::Default)),
        [one] if one == "retainKeys" => Ok((true, Strategy::Default)),
        [one] => Ok((false, named(one))),
        [a, b] if a == "retainKeys" => Ok((true, named(b))),
        [a, b] if b == "retainKeys" => Ok((true, named(a))),
        _ => Err(at_error(PatchErrorKind::Schema, at, format!("unexpected patch strategy: {}", strategies.join(",")))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::PatchErrorKind as K;
    use crate::schema::{List, Map, Scalar, StructField, TypeDef};
    use std::sync::Arc;

    fn strategies(s: &[&str]) -> Result<(bool, Strategy)> {
        parse_strategies(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>(), At::ROOT)
    }

    #[test]
    fn strategies_split_like_apimachinery() {
        assert_eq!(strategies(&[]).ok(), Some((false, Strategy::Default)));
        assert_eq!(strategies(&["retainKeys"]).ok(), Some((true, Strategy::Default)));
        assert_eq!(strategies(&["merge", "retainKeys"]).ok(), Some((true, Strategy::Merge)));
        assert_eq!(strategies(&["retainKeys", "replace"]).ok(), Some((true, Strategy::Replace)));
        assert_eq!(strategies(&["frob"]).ok(), Some((false, Strategy::Other)));
        assert!(matches!(strategies(&["merge", "replace"]), Err(Error::Patch { kind: K::Schema, .. })));
    }

    fn schema() -> Schema {
        let string = TypeRef::Inline(Arc::new(Atom { scalar: Some(Scalar::String), ..Atom::default() }));
        let list = |relationship, keys: Vec<fieldstore_codec::fieldpath::Name>| {
            let l = List { element_type: TypeRef::Named("item".into(), None), relationship, keys };
            TypeRef::Inline(Arc::new(Atom { list: Some(l), ..Atom::default() }))
        };
        let mut replaced = StructField::new("replaced", list(ElementRelationship::Associative, vec!["name".into()]));
        replaced.patch_strategies = vec!["replace".into()];
        let root = Map::new(
            vec![
                StructField::new("keyed", list(ElementRelationship::Associative, vec!["name".into(), "port".into()])),
                StructField::new("atomic", list(ElementRelationship::Atomic, Vec::new())),
                replaced,
                StructField::new("single", TypeRef::Named("item".into(), None)),
                StructField::new(
                    "labels",
                    TypeRef::Inline(Arc::new(Atom {
                        map: Some(Map::new(Vec::new(), string.clone(), ElementRelationship::Separable)),
                        ..Atom::default()
                    })),
                ),
            ],
            TypeRef::Empty,
            ElementRelationship::Separable,
        );
        let item = Map::new(vec![StructField::new("name", string)], TypeRef::Empty, ElementRelationship::Separable);
        Schema::new(vec![
            TypeDef { name: "root".into(), atom: Atom { map: Some(root), ..Atom::default() } },
            TypeDef { name: "item".into(), atom: Atom { map: Some(item), ..Atom::default() } },
        ])
    }

    #[test]
    fn list_types_decide_the_merge() {
        let schema = schema();
        let meta = PatchMeta::new(&schema, "root").expect("root");
        let root = meta.root();
        let keyed = root.list_field("keyed", At::ROOT).expect("keyed");
        assert_eq!((keyed.strategy, keyed.merge_key), (Strategy::Merge, Some("name")));
        let atomic = root.list_field("atomic", At::ROOT).expect("atomic");
        assert_eq!((atomic.strategy, atomic.merge_key), (Strategy::Default, None));
        // An explicit strategy wins over the list type.
        assert_eq!(root.list_field("replaced", At::ROOT).expect("replaced").strategy, Strategy::Replace);
        // An object type holding a list: the type is the element type.
        let single = root.list_field("single", At::ROOT).expect("single");
        assert!(matches!(single.ty.field("name", At::ROOT), Ok(FieldMeta { ty: Ty::Typed(..), .. })));
        // Maps with an element type accept any key; structs only their fields.
        assert!(root.field("labels", At::ROOT).expect("labels").ty.field("anything", At::ROOT).is_ok());
        assert!(matches!(root.field("nope", At::ROOT), Err(Error::Patch { kind: K::UnknownField, .. })));
        assert!(matches!(PatchMeta::new(&schema, "nope"), Err(Error::UnknownType(_))));
        // Untyped: every lookup succeeds, without metadata.
        let untyped = PatchMeta::untyped().root().list_field("x", At::ROOT).expect("untyped");
        assert_eq!((untyped.strategy, untyped.merge_key), (Strategy::Default, None));
    }

    #[test]
    fn schemas_load_by_content() {
        let smd = "types:\n- name: root\n  map:\n    fields:\n    - name: a\n      type:\n        scalar: string\n";
        assert!(load_schema(smd, "root").is_ok());
        let v3 = r#"{"openapi": "3.0.0", "components": {"schemas": {"T": {"type": "object", "properties": {"a": {"type": "string"}}}}}}"#;
        assert_eq!(load_schema(v3, "T").map(|(_, r)| r).ok(), Some("T".to_string()));
        let bare = r#"{"type": "object", "properties": {"a": {"type": "string"}}}"#;
        assert!(load_schema(bare, "Root").is_ok_and(|(s, r)| s.named(&r).is_some()));
        let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  group: example.com\n  names:\n    kind: Widget\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema:\n        type: object\n";
        assert_eq!(load_schema(crd, "v1").map(|(_, r)| r).ok(), Some("com.example.v1.Widget".to_string()));
        assert!(matches!(load_schema(crd, "v2"), Err(Error::UnknownType(_))));
        assert!(matches!(load_schema("[1, 2]", "x"), Err(Error::Schema { .. })));
    }
}
