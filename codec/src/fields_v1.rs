//! FieldsV1 in Kubernetes' JSON form, byte-identical to what the apiserver writes.
//!
//! A set is a JSON object whose keys are serialized path elements — `f:<name>`, `k:<json object
//! of key fields>`, `v:<json value>`, `i:<index>` — each mapping to the object of its children;
//! `".":{}` inside a child object marks the child itself as a member when it also has children.
//! Keys appear in [`PathElement`] order. As in Kubernetes, object keys are escaped minimally (quote,
//! backslash, control characters) while JSON values inside `k:`/`v:` keys are HTML-escaped first.

use crate::fieldpath::{Name, Path, PathElement, Set};
use crate::value;
use crate::{Error, Result};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// Serializes a set as FieldsV1 JSON bytes.
pub fn to_json(set: &Set) -> Vec<u8> {
    to_json_string(set).into_bytes()
}

/// Serializes a set as a FieldsV1 JSON string.
pub fn to_json_string(set: &Set) -> String {
    let mut out = String::with_capacity(64 * set.members().len() + 64);
    write_json_string(set, &mut out);
    out
}

/// Appends [`to_json_string`]'s text to `out` (a buffer the caller reuses).
pub fn write_json_string(set: &Set, out: &mut String) {
    write_json_string_in_pieces(set, out, usize::MAX, &mut |_| {});
}

/// Appends [`to_json_string`]'s text to `out` as [`write_json_string`] does, handing the text
/// written so far to `hand_on` whenever `out` holds `piece` bytes or more after an entry: a large
/// set's text is written in pieces of about that size rather than held whole. `hand_on` is given
/// a prefix of `out`, which is then removed from it.
pub fn write_json_string_in_pieces(set: &Set, out: &mut String, piece: usize, hand_on: &mut dyn FnMut(&str)) {
    let mut e = Emitter { out, key: String::new(), handed: 0, kept: Vec::new(), piece, hand_on };
    e.out.push('{');
    e.emit(set, false);
    e.out.push('}');
}

/// Writes FieldsV1 text into `out`, handing it on in pieces when asked.
struct Emitter<'o, 'h> {
    out: &'o mut String,
    /// Where each entry's key is written before it is escaped.
    key: String,
    /// How many bytes were handed on: the text's offset of `out[0]`.
    handed: usize,
    /// For each node being written, where the text of its last child starts (text offset), while
    /// later children may copy it: what must stay in `out` when the rest is handed on.
    kept: Vec<Option<usize>>,
    piece: usize,
    hand_on: &'h mut dyn FnMut(&str),
}

/// The FieldsV1 document of a set as a JSON value: the value [`to_json_string`]'s text parses
/// to, built without the text.
pub fn to_value(set: &Set) -> Value {
    Value::Object(value_node(set, false, &mut String::new()))
}

/// Appends [`to_value`]'s document as `serde_json` serialises it (keys in byte order, its
/// escapes), without building the value: the bytes of `serde_json::to_vec(&to_value(set))`.
pub fn write_value_json(set: &Set, out: &mut Vec<u8>) {
    write_value_node(set, false, out, &mut String::new());
}

/// One node of [`write_value_json`]: its entries sorted by key, as a `serde_json::Map` holds them.
fn write_value_node(set: &Set, include_self: bool, out: &mut Vec<u8>, scratch: &mut String) {
    let mut entries: Vec<(String, Option<(&Set, bool)>)> = Vec::with_capacity(set.members().len() + set.children().len() + 1);
    if include_self && !(set.members().is_empty() && set.children().is_empty()) {
        entries.push((".".into(), None));
    }
    each_entry(set, |pe, child| {
        scratch.clear();
        serialize_element(scratch, pe);
        entries.push((String::from(scratch.as_str()), child));
    });
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    out.push(b'{');
    for (i, (key, child)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        value::write_json_string(out, key);
        out.push(b':');
        match child {
            Some((child, is_member)) => write_value_node(child, *is_member, out, scratch),
            None => out.extend_from_slice(b"{}"),
        }
    }
    out.push(b'}');
}

/// One node's map; `scratch` is where each key is written before it is copied out at its length.
fn value_node(set: &Set, include_self: bool, scratch: &mut String) -> serde_json::Map<String, Value> {
    let mut entries: Vec<(String, Value)> = Vec::with_capacity(set.members().len() + set.children().len() + 1);
    if include_self && !(set.members().is_empty() && set.children().is_empty()) {
        entries.push((".".into(), Value::Object(serde_json::Map::new())));
    }
    each_entry(set, |pe, child| {
        scratch.clear();
        serialize_element(scratch, pe);
        let key = String::from(scratch.as_str());
        let node = match child {
            Some((child, is_member)) => value_node(child, is_member, scratch),
            None => serde_json::Map::new(),
        };
        entries.push((key, Value::Object(node)));
    });
    entries.into_iter().collect()
}

/// Calls `f` with each entry of a node, members and children merged in element order: a member
/// without children as `(pe, None)`, a child as `(pe, Some((its set, whether pe is also a
/// member)))`. Inlined into its callers: called once per node, it cost `to_value` 7% more
/// instructions.
#[inline(always)]
fn each_entry<'s>(set: &'s Set, mut f: impl FnMut(&'s PathElement, Option<(&'s Set, bool)>)) {
    let (members, children) = (set.members(), set.children());
    let (mut i, mut j) = (0, 0);
    while i < members.len() || j < children.len() {
        let ord = match (members.get(i), children.get(j)) {
            (Some(m), Some(c)) => m.cmp(&c.0),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        if ord == std::cmp::Ordering::Less {
            f(&members[i], None);
            i += 1;
        } else {
            let (pe, child) = &children[j];
            let is_member = ord == std::cmp::Ordering::Equal;
            f(pe, Some((child, is_member)));
            i += usize::from(is_member);
            j += 1;
        }
    }
}

impl Emitter<'_, '_> {
    /// Writes one node's entries (without the surrounding braces), as structured-merge-diff's
    /// `emitContentsV1` does: members and children merged in element order.
    fn emit(&mut self, set: &Set, include_self: bool) {
        let mut first = true;
        if include_self && !(set.members().is_empty() && set.children().is_empty()) {
            first = false;
            self.out.push_str("\".\":{}");
        }
        // The text of the last child written (its start and end in the text): list items owning
        // the same fields share one node, so 10,000 items' fields are written once and copied.
        let mut last: Option<(&Set, bool, std::ops::Range<usize>)> = None;
        self.kept.push(None);
        each_entry(set, |pe, child| {
            if !std::mem::take(&mut first) {
                self.out.push(',');
            }
            self.key.clear();
            serialize_element(&mut self.key, pe);
            value::write_go_key(self.out, &self.key);
            match child {
                Some((child, is_member)) => {
                    self.out.push_str(":{");
                    let start = self.handed + self.out.len();
                    match &last {
                        Some((node, member, text)) if *member == is_member && node.is_same_node(child) => {
                            self.out.extend_from_within(text.start - self.handed..text.end - self.handed);
                        }
                        _ => {
                            // This child's text is what later ones may copy: kept from its start
                            // while it is written (the previous child's is no longer needed).
                            if let Some(kept) = self.kept.last_mut() {
                                *kept = Some(start);
                            }
                            self.emit(child, is_member);
                        }
                    }
                    // The copy just written stands for the node from now on (what is kept moves
                    // along with the items).
                    let end = self.handed + self.out.len();
                    last = Some((child, is_member, start..end));
                    if let Some(kept) = self.kept.last_mut() {
                        *kept = Some(start);
                    }
                    self.out.push('}');
                }
                None => self.out.push_str(":{}"),
            }
            if self.out.len() >= self.piece {
                self.hand_on_some();
            }
        });
        self.kept.pop();
    }

    /// Hands on the text before the earliest child text a node may still copy.
    fn hand_on_some(&mut self) {
        let end = self.handed + self.out.len();
        let keep = self.kept.iter().flatten().copied().min().unwrap_or(end);
        let n = keep - self.handed;
        if n > 0 {
            (self.hand_on)(&self.out[..n]);
            self.out.drain(..n);
            self.handed = keep;
        }
    }
}

/// Appends the FieldsV1 key form of one path element (before it is itself escaped as a JSON key).
pub fn serialize_element(out: &mut String, pe: &PathElement) {
    match pe {
        PathElement::FieldName(n) => {
            out.push_str("f:");
            out.push_str(n);
        }
        PathElement::Key(fields) => {
            out.push_str("k:{");
            for (i, (n, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                value::write_go_key(out, n);
                out.push(':');
                value::write_go_json(out, v);
            }
            out.push('}');
        }
        PathElement::Value(v) => {
            out.push_str("v:");
            value::write_go_json(out, v);
        }
        PathElement::Index(i) => {
            out.push_str("i:");
            out.push_str(&i.to_string());
        }
    }
}

/// Parses the FieldsV1 key form of one path element. `Ok(None)` for a well-formed key of an
/// unknown kind (`x:…`), which decoders skip as Kubernetes does.
pub fn deserialize_element(key: &str) -> Result<Option<PathElement>> {
    Names::default().element(key)
}

/// The field names one decoder has read, so that the elements of a document share them: a list's
/// items repeat the same few names, which are then held once, not once per item.
#[derive(Debug, Default)]
pub struct Names(std::collections::HashSet<Name, ahash::RandomState>);

impl Names {
    /// `name`, shared with every earlier use of it.
    pub fn name(&mut self, name: &str) -> Name {
        if let Some(n) = self.0.get(name) {
            return n.clone();
        }
        let n = Name::from(name);
        self.0.insert(n.clone());
        n
    }

    /// [`deserialize_element`], with the element's field names shared through `self`.
    ///
    /// # Errors
    /// Those of [`deserialize_element`].
    pub fn element(&mut self, key: &str) -> Result<Option<PathElement>> {
        let err = |reason: String| Error::PathElement { key: key.to_string(), reason };
        let b = key.as_bytes();
        if b.len() < 2 {
            return Err(err("key must be at least 2 characters long".into()));
        }
        if b[1] != b':' {
            return Err(err("missing colon after the element kind".into()));
        }
        let rest = &key[2..];
        Ok(Some(match b[0] {
            b'f' => PathElement::FieldName(self.name(rest)),
            b'v' => match plain_string(rest) {
                Some(s) => PathElement::Value(Value::String(s.into())),
                None => PathElement::Value(serde_json::from_str::<Value>(rest).map_err(|e| err(format!("value is not JSON: {e}")))?),
            },
            b'k' => {
                if let Some((name, value)) = one_string_field(rest) {
                    return Ok(Some(PathElement::Key(Arc::from([(self.name(name), Value::String(value.into()))]))));
                }
                let v: Value = serde_json::from_str(rest).map_err(|e| err(format!("key is not JSON: {e}")))?;
                match v {
                    Value::Object(m) => PathElement::Key(m.into_iter().map(|(k, v)| (self.name(&k), v)).collect()),
                    _ => return Err(err("key must be a JSON object".into())),
                }
            }
            b'i' => PathElement::Index(rest.parse::<i64>().map_err(|e| err(format!("index is not an integer: {e}")))?),
            _ => return Ok(None),
        }))
    }
}

/// The contents of a JSON string literal that needs no unescaping (no quote, backslash or
/// control character inside), as JSON reads it; `None` for any other text.
fn plain_string(json: &str) -> Option<&str> {
    let inner = json.strip_prefix('"')?.strip_suffix('"')?;
    inner.bytes().all(|b| b != b'"' && b != b'\\' && b >= 0x20).then_some(inner)
}

/// The field and value of a key object of one string field with plain strings, the usual
/// associative-list key (`{"name":"nginx"}`), read without building a JSON map; `None` for any
/// other text, which the JSON parser reads.
fn one_string_field(json: &str) -> Option<(&str, &str)> {
    let inner = json.strip_prefix("{\"")?.strip_suffix('}')?;
    let (name, value) = inner.split_once("\":")?;
    let name = plain_string(&json[1..name.len() + 3])?;
    Some((name, plain_string(value)?))
}

/// Parses FieldsV1 JSON bytes into a set.
///
/// # Errors
/// [`Error::FieldsV1Json`] when the bytes are not a JSON object of objects, or a key is not a
/// valid path element; the error names the path decoded so far.
pub fn from_json(bytes: &[u8]) -> Result<Set> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let mut path = Vec::new();
    let node = NodeSeed { path: &mut path, names: &mut Names::default() }
        .deserialize(&mut de)
        .map_err(|e| Error::FieldsV1Json { path: path_string(&path), reason: e.to_string() })?;
    de.end().map_err(|e| Error::FieldsV1Json { path: String::new(), reason: e.to_string() })?;
    Ok(node.children.unwrap_or_default())
}

fn path_string(path: &[PathElement]) -> String {
    let p = Path(path.to_vec());
    if p.is_empty() {
        "the root".to_string()
    } else {
        p.to_string()
    }
}

/// What one JSON object of a FieldsV1 document decodes to: its children (if any) and whether it
/// marks its own element as a member.
struct Node {
    children: Option<Set>,
    is_member: bool,
}

struct NodeSeed<'a> {
    path: &'a mut Vec<PathElement>,
    names: &'a mut Names,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Node;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Node, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_> {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a FieldsV1 object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Node, A::Error> {
        let mut members = Vec::new();
        let mut children = Vec::new();
        let mut is_member = false;
        let mut any = false;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "." {
                is_member = true;
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let pe = match self.names.element(&key).map_err(serde::de::Error::custom)? {
                Some(pe) => pe,
                None => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            any = true;
            self.path.push(pe);
            let child = map.next_value_seed(NodeSeed { path: self.path, names: self.names })?;
            let pe = self.path.pop().unwrap_or(PathElement::Index(0));
            match (child.is_member, child.children) {
                (true, Some(c)) => {
                    members.push(pe.clone());
                    children.push((pe, c));
                }
                (true, None) => members.push(pe),
                (false, Some(c)) => children.push((pe, c)),
                (false, None) => {}
            }
        }
        if !any {
            return Ok(Node { children: None, is_member: true });
        }
        let set = Set::from_sorted_parts(members, children);
        let empty = set.members().is_empty() && set.children().is_empty();
        Ok(Node { children: if empty { None } else { Some(set) }, is_member: is_member || empty })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn children_sharing_a_node_are_written_as_when_they_do_not() {
        let item = |n: &str| PathElement::Key(vec![(Name::from("name"), Value::String(n.into()))].into());
        let field = |f: &str| PathElement::FieldName(Name::from(f));
        let owned = Set::from_parts(vec![field("image"), field("name")], Vec::new());
        // Three items share one node; the second is also a member itself (`".":{}`), which the
        // text copied from the first must not hide; the fourth has its own node, equal.
        let names = ["a", "b", "c", "d"];
        let shared: Vec<(PathElement, Set)> = names
            .iter()
            .map(|n| (item(n), if *n == "d" { Set::from_parts(vec![field("image"), field("name")], Vec::new()) } else { owned.clone() }))
            .collect();
        let set = Set::from_parts(vec![item("b")], shared);
        let mut paths = vec![Path(vec![item("b")])];
        for n in names {
            paths.extend(["image", "name"].map(|f| Path(vec![item(n), field(f)])));
        }
        let unshared = Set::from_paths(&paths);
        assert!(set == unshared);
        assert_eq!(to_json_string(&set), to_json_string(&unshared));
        assert_eq!(
            to_json_string(&set),
            r#"{"k:{\"name\":\"a\"}":{"f:image":{},"f:name":{}},"k:{\"name\":\"b\"}":{".":{},"f:image":{},"f:name":{}},"k:{\"name\":\"c\"}":{"f:image":{},"f:name":{}},"k:{\"name\":\"d\"}":{"f:image":{},"f:name":{}}}"#
        );
    }

    #[test]
    fn a_set_written_in_pieces_is_the_text_written_whole() {
        // Items sharing nodes (the copies must survive what is handed on), nested below fields,
        // members among them, and a sibling after the list.
        let item = |n: usize| PathElement::Key(vec![(Name::from("name"), Value::String(format!("item-{n}")))].into());
        let field = |f: &str| PathElement::FieldName(Name::from(f));
        let owned = Set::from_parts(vec![field("image"), field("name")], Vec::new());
        let other = Set::from_parts(vec![field("name")], vec![(field("ports"), Set::from_parts(vec![field("a")], Vec::new()))]);
        let items: Vec<(PathElement, Set)> = (0..40).map(|n| (item(n), if n % 7 == 3 { other.clone() } else { owned.clone() })).collect();
        let list = Set::from_parts((0..40).filter(|n| n % 5 == 0).map(item).collect(), items);
        let spec = Set::from_parts(vec![field("replicas")], vec![(field("items"), list.clone()), (field("more"), list)]);
        let set = Set::from_parts(vec![field("kind")], vec![(field("spec"), spec)]);
        let whole = to_json_string(&set);
        for piece in [1, 2, 7, 64, 1000, usize::MAX] {
            let (mut handed, mut out) = (String::new(), String::from("prefix"));
            write_json_string_in_pieces(&set, &mut out, piece, &mut |p| handed.push_str(p));
            handed.push_str(&out);
            assert_eq!(handed, format!("prefix{whole}"), "pieces of {piece}");
        }
    }

    /// The element JSON's own parser reads from a key (the only reading before plain keys got
    /// their own).
    fn parsed(key: &str) -> PathElement {
        let v: Value = serde_json::from_str(&key[2..]).unwrap();
        match (&key[..2], v) {
            ("v:", v) => PathElement::Value(v),
            ("k:", Value::Object(m)) => PathElement::Key(m.into_iter().map(|(k, v)| (Name::from(k), v)).collect()),
            _ => unreachable!("test keys are values or keys"),
        }
    }

    #[test]
    fn plain_keys_and_values_read_as_json_reads_them() {
        let keys = [
            r#"k:{"name":"nginx"}"#,
            r#"k:{"name":""}"#,
            r#"k:{"":"x"}"#,
            r#"k:{"name":"ünï ☃"}"#,
            r#"k:{"na:me":"a\":b"}"#,
            r#"k:{"name":"a\"b"}"#,
            r#"k:{"name":"a\u003cb"}"#,
            r#"k:{"na\"me":"x"}"#,
            r#"k:{ "name":"x"}"#,
            r#"k:{"name": "x"}"#,
            r#"k:{"port":80}"#,
            r#"k:{"port":80,"protocol":"TCP"}"#,
            r#"k:{"a":"x","b":"y"}"#,
            r#"v:"a""#,
            r#"v:"""#,
            r#"v:"a\\b""#,
            r#"v:"a\nb""#,
            r#"v:1"#,
            r#"v:null"#,
        ];
        for key in keys {
            assert_eq!(deserialize_element(key).unwrap(), Some(parsed(key)), "{key}");
        }
        // Not JSON, plain-looking or not: an error either way.
        for key in [r#"k:{"a"b":"x"}"#, r#"k:{"name":"x"#, r#"v:"a"#, "k:{\"name\":\"a\u{1}b\"}", "v:\"a\u{1f}\""] {
            assert!(deserialize_element(key).is_err(), "{key:?}");
        }
    }

    #[test]
    fn round_trips_kubernetes_bytes() {
        // The `<` is escaped by the value encoder, then its backslash again as part of the JSON key.
        let golden = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:args":{"i:3":{}},"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}}},"f:finalizers":{"v:\"a\\u003cb\"":{}}}}"#;
        let set = from_json(golden.as_bytes()).unwrap();
        assert_eq!(to_json_string(&set), golden);
        let k = PathElement::key(vec![("name".into(), json!("nginx"))]);
        assert!(set.has(&Path(vec![PathElement::field("spec"), PathElement::field("containers"), k.clone()])));
        assert!(set.has(&Path(vec![PathElement::field("spec"), PathElement::field("containers"), k, PathElement::field("image")])));
    }

    #[test]
    fn keys_are_written_in_element_order() {
        let mut s = Set::new();
        s.insert(&Path(vec![PathElement::Index(1)]));
        s.insert(&Path(vec![PathElement::Value(json!("x"))]));
        s.insert(&Path(vec![PathElement::key(vec![("b".into(), json!(2)), ("a".into(), json!(1))])]));
        s.insert(&Path(vec![PathElement::field("z")]));
        assert_eq!(to_json_string(&s), r#"{"f:z":{},"k:{\"a\":1,\"b\":2}":{},"v:\"x\"":{},"i:1":{}}"#);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        for bad in [&b"[]"[..], b"{\"f:a\":1}", b"{\"zz\":{}}", b"{\"k:[1]\":{}}", b"{\"i:x\":{}}", b"{", b"{} x"] {
            assert!(matches!(from_json(bad), Err(Error::FieldsV1Json { .. })), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn unknown_element_kinds_are_skipped() {
        let s = from_json(br#"{"x:foo":{},"f:a":{}}"#).unwrap();
        assert_eq!(s, Set::from_paths(&[Path::fields(["a"])]));
    }
}
