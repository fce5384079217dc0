//! FieldsV1 in fieldstore's compact binary form.
//!
//! The same [`Set`] as the JSON form (see [`crate::fields_v1`]), written as a trie walk with a
//! string table in front: field names and key field names, which a 10,000-item list repeats
//! tens of thousands of times, are stored once and referred to by index; numbers are LEB128
//! varints. `codec/FORMAT.md` documents the layout byte by byte.
//!
//! The decoder reads the input in one forward pass without recursion (explicit stacks for the
//! trie and for values), caps nesting at [`MAX_PATH_DEPTH`] and [`MAX_VALUE_DEPTH`], and never
//! reserves memory for more items than the remaining input could hold, so hostile bytes yield
//! [`Error::FieldsBinary`], never a panic, a stack overflow or an allocation bomb. A sub-tree whose
//! bytes repeat those of the previous sibling's (list items owning the same fields, the common
//! case) is cloned rather than decoded and sorted again.
//!
//! # Examples
//!
//! ```
//! use fieldstore_codec::{fields_binary, fields_v1};
//!
//! let set = fields_v1::from_json(br#"{"f:spec":{"f:replicas":{}}}"#).unwrap();
//! let bytes = fields_binary::encode(&set);
//! assert!(bytes.starts_with(&fields_binary::MAGIC));
//! assert_eq!(fields_binary::decode(&bytes).unwrap(), set);
//! ```

use crate::fieldpath::{KeyFields, Name, PathElement, Set};
use crate::{Error, Result};
use serde_json::{Map, Number, Value};
use std::cmp::Ordering;
/// ahash (keyed per map, as std's SipHash, against colliding names a client picks; several times
/// cheaper on the short names of field sets).
type HashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;
use std::sync::Arc;

mod decoder;

/// The first bytes of every binary FieldsV1 document: `FSB` (fieldstore set, binary).
pub const MAGIC: [u8; 3] = *b"FSB";

/// The format version written after [`MAGIC`]; the only one [`decode`] accepts.
pub const VERSION: u8 = 1;

/// The longest path the decoder accepts. The JSON form cannot nest deeper than serde_json's
/// recursion limit (128), so every set it can hold fits.
pub const MAX_PATH_DEPTH: usize = 256;

/// How deeply lists and maps may nest inside one key or value element (serde_json's own limit).
pub const MAX_VALUE_DEPTH: usize = 128;

/// The longest string the string table may hold. Bounds how much memory one table reference
/// (one input byte) can make the decoder allocate; longer strings are always written inline.
pub const MAX_INTERNED_LEN: usize = 256;

// Entry header byte: bits 0–1 the element kind, bits 2–3 the shape, bits 4–7 a kind-specific
// nibble (FieldName: table index + 1, or 0 for "string reference follows"; Key: field count, or 0
// for "varint count follows"; Value and Index: 0).
const KIND_FIELD: u8 = 0;
const KIND_KEY: u8 = 1;
const KIND_VALUE: u8 = 2;
const KIND_INDEX: u8 = 3;
/// The element is a member and has no children.
const SHAPE_MEMBER: u8 = 0;
/// The element is a member and also has children (FieldsV1's `".":{}`); a node follows.
const SHAPE_BOTH: u8 = 1;
/// The element only leads to children; a node follows.
const SHAPE_CHILDREN: u8 = 2;
/// Field names with table index below this fit in the header nibble.
const NIBBLE_INDEXES: usize = 15;

// Value tags.
const TAG_NULL: u8 = 0x00;
const TAG_FALSE: u8 = 0x01;
const TAG_TRUE: u8 = 0x02;
const TAG_INT: u8 = 0x03;
const TAG_UINT: u8 = 0x04;
const TAG_FLOAT: u8 = 0x05;
const TAG_STRING: u8 = 0x06;
const TAG_LIST: u8 = 0x07;
const TAG_MAP: u8 = 0x08;
/// `0x40 | i`: the string at table index `i < 64`.
const TAG_TABLE_SHORT: u8 = 0x40;
/// `0x80 | n`: an inline string of `n < 128` bytes.
const TAG_INLINE_SHORT: u8 = 0x80;

/// Serializes a set in the binary FieldsV1 form.
///
/// Key fields are written in the order the element holds them, which [`PathElement::key`] and the
/// FieldsV1 JSON decoder keep sorted by name; [`decode`] rejects any other order.
pub fn encode(set: &Set) -> Vec<u8> {
    encode_planned(set).0
}

/// [`encode`], also returning the plan, whose string sequence tests check was followed exactly.
fn encode_planned(set: &Set) -> (Vec<u8>, Plan<'_>) {
    let mut plan = Plan::new(set);
    let mut out = Vec::with_capacity(plan.size_hint);
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    write_varint(&mut out, plan.table.len() as u64);
    for s in &plan.table {
        write_varint(&mut out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    }
    let events = std::mem::take(&mut plan.events);
    let mut values = Vec::new();
    for event in events {
        match event {
            Event::Node(node) => write_node_header(&mut out, node),
            Event::Entry(pe, shape) => write_element(&mut out, pe, shape, &mut plan, &mut values),
        }
    }
    debug_assert_eq!(plan.cursor, plan.sequence.len(), "the writer strayed from the planned walk");
    (out, plan)
}

/// Parses a binary FieldsV1 document.
///
/// # Errors
///
/// [`Error::FieldsBinary`] with the byte offset of the problem when the bytes are truncated, carry
/// a wrong magic or version, an unknown tag, a reference past the string table, invalid UTF-8, a
/// non-finite float, unsorted key or map fields, more items than the input could hold, nesting
/// beyond [`MAX_PATH_DEPTH`] / [`MAX_VALUE_DEPTH`], or trailing bytes.
pub fn decode(bytes: &[u8]) -> Result<Set> {
    decoder::decode(bytes)
}

/// The entries of one trie node in FieldsV1 order: members and children merged, an element that
/// is both yielded once with [`SHAPE_BOTH`].
struct Entries<'a> {
    members: &'a [PathElement],
    children: &'a [(PathElement, Set)],
}

impl<'a> Entries<'a> {
    fn new(set: &'a Set) -> Self {
        Entries { members: set.members(), children: set.children() }
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = (&'a PathElement, u8, Option<&'a Set>);

    fn next(&mut self) -> Option<Self::Item> {
        let order = match (self.members.first(), self.children.first()) {
            (None, None) => return None,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(m), Some((c, _))) => m.cmp(c),
        };
        if order == Ordering::Less {
            let (m, rest) = self.members.split_first()?;
            self.members = rest;
            return Some((m, SHAPE_MEMBER, None));
        }
        let ((pe, child), rest) = self.children.split_first()?;
        self.children = rest;
        if order == Ordering::Equal {
            self.members = self.members.get(1..).unwrap_or_default();
            return Some((pe, SHAPE_BOTH, Some(child)));
        }
        Some((pe, SHAPE_CHILDREN, Some(child)))
    }
}

/// One step of the encoder's walk, in output order.
enum Event<'a> {
    /// A node header.
    Node(&'a Set),
    /// An entry header and its element.
    Entry(&'a PathElement, u8),
}

/// A string's uses, and how many of them as a field name (those get the header nibble).
#[derive(Default)]
struct Uses {
    total: u32,
    as_field: u32,
}

/// Marks a string id that is written inline.
const NOT_INTERNED: u32 = u32::MAX;

/// The encoder's first pass: the walk in output order, every string written with its use count,
/// and from those the string table.
struct Plan<'a> {
    events: Vec<Event<'a>>,
    /// Distinct strings and their ids, in order of first use.
    ids: HashMap<&'a str, u32>,
    strings: Vec<&'a str>,
    uses: Vec<Uses>,
    /// The id of every string written, in output order, so that writing needs no hashing.
    sequence: Vec<u32>,
    cursor: usize,
    /// Table index by string id, or [`NOT_INTERNED`].
    slots: Vec<u32>,
    table: Vec<&'a str>,
    /// A guess at the encoded size, to allocate the output once.
    size_hint: usize,
}

impl<'a> Plan<'a> {
    fn new(set: &'a Set) -> Self {
        let mut plan = Plan {
            events: vec![Event::Node(set)],
            ids: HashMap::default(),
            strings: Vec::new(),
            uses: Vec::new(),
            sequence: Vec::new(),
            cursor: 0,
            slots: Vec::new(),
            table: Vec::new(),
            size_hint: MAGIC.len() + 16,
        };
        let mut stack = vec![Entries::new(set)];
        let mut values = Vec::new();
        while let Some(top) = stack.last_mut() {
            let Some((pe, shape, child)) = top.next() else {
                stack.pop();
                continue;
            };
            plan.events.push(Event::Entry(pe, shape));
            // Strings are noted in the order `write_element` writes them.
            match pe {
                PathElement::FieldName(name) => plan.note(name, true),
                PathElement::Key(fields) => {
                    for (name, v) in fields.iter() {
                        plan.note(name, false);
                        match (fields.len(), v) {
                            (1, Value::String(_)) => {} // written inline, see `write_element`
                            _ => plan.note_value(v, &mut values),
                        }
                    }
                }
                PathElement::Value(v) => plan.note_value(v, &mut values),
                PathElement::Index(_) => {}
            }
            if let Some(child) = child {
                plan.events.push(Event::Node(child));
                stack.push(Entries::new(child));
            }
        }
        plan.size_hint = plan.size_hint.saturating_add(plan.events.len().saturating_mul(3));
        plan.build_table();
        plan
    }

    fn note(&mut self, s: &'a str, as_field: bool) {
        let next = u32::try_from(self.strings.len()).unwrap_or(NOT_INTERNED);
        let id = *self.ids.entry(s).or_insert(next);
        if id == next {
            self.strings.push(s);
            self.uses.push(Uses::default());
        }
        if let Some(u) = self.uses.get_mut(id as usize) {
            u.total = u.total.saturating_add(1);
            u.as_field = u.as_field.saturating_add(u32::from(as_field));
        }
        self.sequence.push(id);
        self.size_hint = self.size_hint.saturating_add(s.len().min(8) + 1);
    }

    /// Notes the strings of a value in the order `write_value` writes them.
    fn note_value(&mut self, v: &'a Value, stack: &mut Vec<Pending<'a>>) {
        stack.clear();
        stack.push(Pending::Value(v));
        while let Some(work) = stack.pop() {
            match work {
                Pending::Key(k) => self.note(k, false),
                Pending::Value(Value::String(s)) => self.note(s, false),
                Pending::Value(Value::Array(items)) => stack.extend(items.iter().rev().map(Pending::Value)),
                Pending::Value(Value::Object(map)) => push_map_entries(stack, map),
                Pending::Value(Value::Null | Value::Bool(_) | Value::Number(_)) => {}
            }
        }
    }

    /// Interns the strings used at least twice; the order puts the most used field names under
    /// the header nibble and the most used strings under one-byte value tags.
    fn build_table(&mut self) {
        let mut order: Vec<u32> = Vec::new();
        for (id, (s, u)) in self.strings.iter().zip(&self.uses).enumerate() {
            if u.total >= 2 && !s.is_empty() && s.len() <= MAX_INTERNED_LEN {
                order.push(id as u32);
            }
        }
        let key = |id: &u32| {
            let i = *id as usize;
            let u = self.uses.get(i).map_or((0, 0), |u| (u.as_field, u.total));
            (std::cmp::Reverse(u), self.strings.get(i).copied().unwrap_or_default())
        };
        order.sort_unstable_by(|a, b| key(a).cmp(&key(b)));
        self.slots = vec![NOT_INTERNED; self.strings.len()];
        for (index, id) in order.iter().enumerate() {
            if let Some(slot) = self.slots.get_mut(*id as usize) {
                *slot = index as u32;
            }
        }
        self.table = order.iter().filter_map(|id| self.strings.get(*id as usize).copied()).collect();
        self.size_hint = self.size_hint.saturating_add(self.table.iter().map(|s| s.len() + 1).sum::<usize>());
    }

    /// The table index of `s`, the next string written.
    fn table_index(&mut self, s: &str) -> Option<usize> {
        let id = match self.sequence.get(self.cursor) {
            Some(&id) if self.strings.get(id as usize).is_some_and(|t| *t == s) => {
                self.cursor += 1;
                id
            }
            // Only if the two walks disagreed; the answer is the same, just slower.
            _ => *self.ids.get(s)?,
        };
        match self.slots.get(id as usize) {
            Some(&slot) if slot != NOT_INTERNED => Some(slot as usize),
            _ => None,
        }
    }
}

/// Pushes a map's entries so that they pop in key order, each key before its value. serde_json's
/// map iterates in key order; sort anyway in case `preserve_order` is enabled somewhere in the
/// build, since decoders require that order.
fn push_map_entries<'a>(stack: &mut Vec<Pending<'a>>, map: &'a Map<String, Value>) {
    let mut entries: Vec<(&'a String, &'a Value)> = map.iter().collect();
    if !entries.windows(2).all(|w| matches!(w, [a, b] if a.0 < b.0)) {
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    }
    for (k, item) in entries.into_iter().rev() {
        stack.push(Pending::Value(item));
        stack.push(Pending::Key(k));
    }
}

fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(i: i64) -> u64 {
    ((i << 1) ^ (i >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

fn write_node_header(out: &mut Vec<u8>, set: &Set) {
    write_varint(out, set.members().len() as u64);
    write_varint(out, set.children().len() as u64);
}

/// A string as a reference: `index << 1` into the table, or `len << 1 | 1` and the bytes inline.
fn write_string_ref(out: &mut Vec<u8>, s: &str, plan: &mut Plan) {
    let index = plan.table_index(s);
    write_string_ref_at(out, s, index);
}

/// [`write_string_ref`] for a string whose table index is already looked up.
fn write_string_ref_at(out: &mut Vec<u8>, s: &str, index: Option<usize>) {
    match index {
        Some(i) => write_varint(out, (i as u64) << 1),
        None => {
            write_varint(out, ((s.len() as u64) << 1) | 1);
            out.extend_from_slice(s.as_bytes());
        }
    }
}

fn write_element<'a>(out: &mut Vec<u8>, pe: &'a PathElement, shape: u8, plan: &mut Plan, values: &mut Vec<Pending<'a>>) {
    let header = |kind: u8, nibble: u8| kind | (shape << 2) | (nibble << 4);
    match pe {
        PathElement::FieldName(name) => match plan.table_index(name) {
            Some(i) if i < NIBBLE_INDEXES => out.push(header(KIND_FIELD, i as u8 + 1)),
            index => {
                out.push(header(KIND_FIELD, 0));
                write_string_ref_at(out, name, index);
            }
        },
        PathElement::Key(fields) => {
            match u8::try_from(fields.len()) {
                Ok(n @ 1..=15) => out.push(header(KIND_KEY, n)),
                _ => {
                    out.push(header(KIND_KEY, 0));
                    write_varint(out, fields.len() as u64);
                }
            }
            for (name, v) in fields.iter() {
                write_string_ref(out, name, plan);
                match (fields.len(), v) {
                    // The value of a one-field key names one item among its siblings, so it is
                    // unique there: not worth a table lookup (nor a table slot).
                    (1, Value::String(s)) => write_string_value(out, s, None),
                    _ => write_value(out, v, plan, values),
                }
            }
        }
        PathElement::Value(v) => {
            out.push(header(KIND_VALUE, 0));
            write_value(out, v, plan, values);
        }
        PathElement::Index(i) => {
            out.push(header(KIND_INDEX, 0));
            write_varint(out, zigzag(*i));
        }
    }
}

/// Work left while walking a value without recursion: a value, or a map key before its value.
enum Pending<'a> {
    Value(&'a Value),
    Key(&'a str),
}

fn write_value<'a>(out: &mut Vec<u8>, v: &'a Value, plan: &mut Plan, stack: &mut Vec<Pending<'a>>) {
    stack.clear();
    stack.push(Pending::Value(v));
    while let Some(work) = stack.pop() {
        let v = match work {
            Pending::Key(k) => {
                write_string_ref(out, k, plan);
                continue;
            }
            Pending::Value(v) => v,
        };
        match v {
            Value::Null => out.push(TAG_NULL),
            Value::Bool(false) => out.push(TAG_FALSE),
            Value::Bool(true) => out.push(TAG_TRUE),
            Value::Number(n) => write_number(out, n),
            Value::String(s) => {
                let index = plan.table_index(s);
                write_string_value(out, s, index);
            }
            Value::Array(items) => {
                out.push(TAG_LIST);
                write_varint(out, items.len() as u64);
                stack.extend(items.iter().rev().map(Pending::Value));
            }
            Value::Object(map) => {
                out.push(TAG_MAP);
                write_varint(out, map.len() as u64);
                push_map_entries(stack, map);
            }
        }
    }
}

/// A string value, at table index `index` or inline.
fn write_string_value(out: &mut Vec<u8>, s: &str, index: Option<usize>) {
    match index {
        Some(i) if i < 64 => out.push(TAG_TABLE_SHORT | i as u8),
        None if s.len() < 128 => {
            out.push(TAG_INLINE_SHORT | s.len() as u8);
            out.extend_from_slice(s.as_bytes());
        }
        index => {
            out.push(TAG_STRING);
            write_string_ref_at(out, s, index);
        }
    }
}

fn write_number(out: &mut Vec<u8>, n: &Number) {
    if let Some(i) = n.as_i64() {
        out.push(TAG_INT);
        write_varint(out, zigzag(i));
    } else if let Some(u) = n.as_u64() {
        out.push(TAG_UINT);
        write_varint(out, u);
    } else {
        // Without serde_json's `arbitrary_precision` every other number is a finite f64.
        out.push(TAG_FLOAT);
        out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldpath::Path;
    use crate::fields_v1;
    use serde_json::json;

    fn sample() -> Set {
        fields_v1::from_json(
            br#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:args":{"i:3":{},"i:-7":{}},"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}},"k:{\"name\":\"side\"}":{".":{},"f:image":{},"f:name":{}}},"f:finalizers":{"v:\"a\\u003cb\"":{},"v:1.5":{},"v:null":{},"v:[1,{\"a\":true,\"b\":false}]":{}},"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{},"k:{\"port\":18446744073709551615,\"protocol\":\"TCP\"}":{}}}}"#,
        )
        .unwrap()
    }

    #[test]
    fn mutated_encodings_give_a_set_or_an_error() {
        // A stand-in for the fuzz target in every test run: each byte of a real encoding changed
        // in several ways, and each truncation, decodes without panicking, and whatever decodes
        // is a valid set that round-trips.
        let bytes = encode(&sample());
        let mut decoded = 0;
        for i in 0..bytes.len() {
            for delta in [1u8, 2, 0x0f, 0x10, 0x40, 0x7f, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] = b[i].wrapping_add(delta);
                if let Ok(set) = decode(&b) {
                    decoded += 1;
                    assert_eq!(decode(&encode(&set)).unwrap(), set, "byte {i} + {delta}");
                }
            }
        }
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n]).is_err(), "a truncation to {n} bytes decodes");
        }
        assert!(decoded > 0, "some mutations still decode, so the round trip is exercised");
    }

    #[test]
    fn round_trips_every_element_kind() {
        let set = sample();
        let bytes = encode(&set);
        assert_eq!(decode(&bytes).unwrap(), set);
        assert_eq!(fields_v1::to_json_string(&decode(&bytes).unwrap()), fields_v1::to_json_string(&set));
    }

    #[test]
    fn the_writer_follows_the_planned_walk() {
        let mut set = sample();
        set.insert(&Path(vec![PathElement::Value(json!([{"z": "TCP", "a": ["TCP", {"b": "x"}]}, "TCP"]))]));
        let (bytes, plan) = encode_planned(&set);
        assert_eq!(plan.cursor, plan.sequence.len());
        assert_eq!(decode(&bytes).unwrap(), set);
    }

    #[test]
    fn empty_set_is_seven_bytes() {
        assert_eq!(encode(&Set::new()), b"FSB\x01\x00\x00\x00");
        assert_eq!(decode(b"FSB\x01\x00\x00\x00").unwrap(), Set::new());
    }

    #[test]
    fn pins_the_layout() {
        // Two uses of "a" intern it; `f:a` is a member with children (`".":{}`), `f:b` inline.
        let set = Set::from_paths(&[Path::fields(["a"]), Path::fields(["a", "a"]), Path::fields(["a", "b"])]);
        let want: &[u8] = &[
            b'F', b'S', b'B', 1, // magic, version
            1, 1, b'a', // table: ["a"]
            1, 1,    // root: one member, one child
            0x14, // FieldName, both, table index 0
            2, 0,    // node: two members, no children
            0x10, // FieldName, member, table index 0
            0x00, 3, b'b', // FieldName, member, inline "b"
        ];
        assert_eq!(encode(&set), want);
        assert_eq!(decode(want).unwrap(), set);
    }

    #[test]
    fn entries_out_of_order_decode_to_the_sorted_set() {
        // The node of `f:a` lists `f:b` before `f:a`, and `f:b` twice: no encoder writes this,
        // but the set is still the one its paths make.
        let bytes: &[u8] = &[
            b'F', b'S', b'B', 1, // magic, version
            1, 1, b'a', // table: ["a"]
            1, 1,    // root: one member, one child
            0x14, // FieldName, both, table index 0
            3, 0, // node: three members, no children
            0x00, 3, b'b', // FieldName, member, inline "b"
            0x10, // FieldName, member, table index 0
            0x00, 3, b'b', // FieldName, member, inline "b" again
        ];
        let want = Set::from_paths(&[Path::fields(["a"]), Path::fields(["a", "a"]), Path::fields(["a", "b"])]);
        let got = decode(bytes).unwrap();
        assert_eq!(got, want);
        assert_eq!(got.child(&PathElement::field("a")).unwrap().members().len(), 2);
    }

    #[test]
    fn pins_the_list_item_example_of_format_md() {
        let mut set = Set::new();
        for name in ["item-7", "item-8"] {
            let item = Path(vec![PathElement::key(vec![("name".into(), json!(name))])]);
            set.insert(&item);
            for f in ["name", "image", "value", "port", "flag"] {
                set.insert(&item.child(PathElement::field(f)));
            }
        }
        let bytes = encode(&set);
        let table: &[u8] = b"FSB\x01\x05\x04name\x04flag\x05image\x04port\x05value";
        let root: &[u8] = &[0x02, 0x02];
        let item = |digit: u8| [0x15, 0x00, 0x86, b'i', b't', b'e', b'm', b'-', digit, 0x05, 0x00, 0x20, 0x30, 0x10, 0x40, 0x50];
        assert_eq!(bytes, [table, root, &item(b'7'), &item(b'8')].concat());
        // Each item is 16 bytes here and 96 bytes (plus a comma) in the JSON form.
        let json = fields_v1::to_json_string(&set);
        assert_eq!(json.len(), 2 + 96 + 1 + 96, "{json}");
    }

    #[test]
    fn ints_and_floats_survive_exactly() {
        let mut set = Set::new();
        for v in [json!(1), json!(1.0), json!(-0.5), json!(i64::MIN), json!(u64::MAX), json!(1e300)] {
            set.insert(&Path(vec![PathElement::field("x"), PathElement::Value(v)]));
        }
        let back = decode(&encode(&set)).unwrap();
        assert_eq!(back, set);
    }

    #[test]
    fn empty_children_are_kept() {
        let mut set = Set::new();
        set.descend(&PathElement::field("a"));
        assert_eq!(decode(&encode(&set)).unwrap(), set);
    }

    #[test]
    fn garbage_is_a_typed_error() {
        let good = encode(&sample());
        for cut in 0..good.len() {
            let r = decode(&good[..cut]);
            assert!(matches!(r, Err(Error::FieldsBinary { .. })), "prefix {cut}");
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(matches!(decode(&trailing), Err(Error::FieldsBinary { .. })));
        assert!(matches!(decode(b"FSB\x02\x00\x00\x00"), Err(Error::FieldsBinary { offset: 3, .. })));
        assert!(matches!(decode(b"{}"), Err(Error::FieldsBinary { offset: 0, .. })));
        // A node claiming a million members in an 8-byte input.
        assert!(matches!(decode(b"FSB\x01\x00\xc0\x84\x3d\x00"), Err(Error::FieldsBinary { offset: 5, .. })));
        // An overlong varint.
        assert!(matches!(decode(b"FSB\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"), Err(Error::FieldsBinary { .. })));
    }

    #[test]
    fn deep_nesting_is_rejected_not_overflowed() {
        // 100,000 nested `f:"":{…}` nodes: a recursive decoder would overflow the stack.
        let mut bytes = b"FSB\x01\x00\x00\x01".to_vec();
        for _ in 0..100_000 {
            bytes.extend_from_slice(&[0x08, 0x01, 0x00, 0x01]);
        }
        let r = decode(&bytes);
        assert!(matches!(r, Err(Error::FieldsBinary { reason, .. }) if reason.contains("MAX_PATH_DEPTH")));
        let mut bytes = b"FSB\x01\x00\x01\x00\x02".to_vec();
        for _ in 0..100_000 {
            bytes.extend_from_slice(&[TAG_LIST, 1]);
        }
        let r = decode(&bytes);
        assert!(matches!(r, Err(Error::FieldsBinary { reason, .. }) if reason.contains("MAX_VALUE_DEPTH")));
    }

    #[test]
    fn deepest_allowed_path_round_trips() {
        let path = Path((0..MAX_PATH_DEPTH).map(|i| PathElement::Index(i as i64)).collect());
        let set = Set::from_paths(&[path]);
        assert_eq!(decode(&encode(&set)).unwrap(), set);
        let deeper = Path((0..=MAX_PATH_DEPTH).map(|i| PathElement::Index(i as i64)).collect());
        assert!(decode(&encode(&Set::from_paths(&[deeper]))).is_err());
    }

    #[test]
    fn unsorted_key_fields_are_rejected() {
        // Root with one member: Key of 2 fields, "b" then "a" inline, both null.
        let bytes = b"FSB\x01\x00\x01\x00\x21\x03b\x00\x03a\x00";
        assert!(matches!(decode(bytes), Err(Error::FieldsBinary { offset: 11, .. })));
        let sorted = b"FSB\x01\x00\x01\x00\x21\x03a\x00\x03b\x00";
        assert!(decode(sorted).is_ok());
    }
}
