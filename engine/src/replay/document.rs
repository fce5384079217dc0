//! Reading a scenario document: its top-level members and each op kept as their text in the
//! input (each op parsed only when its turn comes), and the first op handed on with what it needs
//! as soon as it has been read, so that it can run while the rest is read.

use super::Fatal;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::mpsc::Sender;

/// A scenario's top-level members, each still its JSON text in the input, and its ops each as
/// their own text.
#[derive(Default)]
pub(super) struct Document<'a> {
    /// The members of an object (the last of a repeated one wins, as in a parsed tree), but `ops`.
    members: BTreeMap<String, &'a RawValue>,
    /// The elements of the member `ops`; none when it is absent or not an array.
    ops: Vec<&'a RawValue>,
    /// Whether the [`Ahead`] handed on while reading still stands: no `schema`, `type`, `live`
    /// or `ops` member came after the first `ops`.
    pub(super) ahead_stands: bool,
}

/// The first op and the members it runs with, handed on as soon as they have been read (when
/// `schema` and `type` come before `ops`, as they do in the oracle's scenarios).
pub(super) struct Ahead<'a> {
    pub(super) schema: &'a RawValue,
    pub(super) type_name: &'a RawValue,
    pub(super) live: Option<&'a RawValue>,
    pub(super) op: &'a RawValue,
}

impl<'a> Document<'a> {
    /// Reads `input` (the members of its object; none when it is valid JSON of another kind,
    /// whose members then read as absent, as they would from a parsed tree), handing the first op
    /// on to `ahead` as soon as it has been read.
    pub(super) fn read(input: &'a str, ahead: Option<&Sender<Ahead<'a>>>) -> Result<Self, Fatal> {
        let mut de = serde_json::Deserializer::from_str(input);
        let doc = Reader { ahead }.deserialize(&mut de).and_then(|doc| de.end().map(|()| doc));
        doc.map_err(|e| Fatal(format!("bad scenario JSON: {e}")))
    }

    /// A member parsed; `None` when absent or not a JSON value.
    pub(super) fn value(&self, key: &str) -> Option<Value> {
        self.members.get(key).and_then(|raw| parse(raw))
    }

    /// A string member; empty when absent or not a string.
    pub(super) fn text(&self, key: &str) -> String {
        self.members.get(key).map(|raw| text(raw)).unwrap_or_default()
    }

    /// The ops from the `from`th on, each numbered and parsed when its turn comes.
    pub(super) fn ops(&self, from: usize) -> impl Iterator<Item = (usize, Value)> + '_ {
        self.ops.iter().enumerate().skip(from).map(|(i, op)| (i, parse(op).unwrap_or(Value::Null)))
    }
}

/// A member's value parsed (`None` when it does not parse: deeper than the parser goes).
pub(super) fn parse(raw: &RawValue) -> Option<Value> {
    serde_json::from_str(raw.get()).ok()
}

/// A string member's text; empty when it is not a string.
pub(super) fn text(raw: &RawValue) -> String {
    serde_json::from_str::<String>(raw.get()).unwrap_or_default()
}

/// Reads a [`Document`].
struct Reader<'s, 'a> {
    ahead: Option<&'s Sender<Ahead<'a>>>,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Reader<'_, 'a> {
    type Value = Document<'a>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Document<'a>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Reader<'_, 'a> {
    type Value = Document<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Document<'a>, M::Error> {
        let mut doc = Document::default();
        let mut sent = false;
        while let Some(key) = map.next_key::<String>()? {
            let member = matches!(key.as_str(), "schema" | "type" | "live" | "ops");
            if sent && member {
                doc.ahead_stands = false;
            }
            if key == "ops" {
                // The first op is handed on only with the members it needs, read before it.
                let ahead = match (self.ahead.filter(|_| !sent), doc.members.get("schema"), doc.members.get("type")) {
                    (Some(to), Some(&schema), Some(&type_name)) => Some((to, schema, type_name, doc.members.get("live").copied())),
                    _ => None,
                };
                let ops = map.next_value_seed(Ops { ahead })?;
                doc.ops = ops.0;
                if ops.1 {
                    (sent, doc.ahead_stands) = (true, true);
                }
            } else {
                doc.members.insert(key, map.next_value::<&'de RawValue>()?);
            }
        }
        Ok(doc)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<Document<'a>, S::Error> {
        Ops { ahead: None }.visit_seq(seq).map(|_| Document::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<Document<'a>, E> {
        Ok(Document::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Document<'a>, E> {
        Ok(Document::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Document<'a>, E> {
        Ok(Document::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Document<'a>, E> {
        Ok(Document::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Document<'a>, E> {
        Ok(Document::default())
    }
    fn visit_unit<E>(self) -> Result<Document<'a>, E> {
        Ok(Document::default())
    }
}

/// Reads the member `ops`: its elements (none when it is not an array) and whether the first
/// was handed on (`ahead`: where to, and the members `schema`, `type` and `live` to hand on
/// with it).
struct Ops<'s, 'a> {
    #[allow(clippy::type_complexity)]
    ahead: Option<(&'s Sender<Ahead<'a>>, &'a RawValue, &'a RawValue, Option<&'a RawValue>)>,
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Ops<'_, 'a> {
    type Value = (Vec<&'a RawValue>, bool);

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Ops<'_, 'a> {
    type Value = (Vec<&'a RawValue>, bool);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        let mut elements = Vec::new();
        let mut sent = false;
        let mut ahead = self.ahead;
        while let Some(e) = seq.next_element::<&'de RawValue>()? {
            if let Some((to, schema, type_name, live)) = ahead.take() {
                // Nobody waiting any more (the replay has ended): nothing handed on.
                sent = to.send(Ahead { schema, type_name, live, op: e }).is_ok();
            }
            elements.push(e);
        }
        Ok((elements, sent))
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok((Vec::new(), false))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok((Vec::new(), false))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok((Vec::new(), false))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok((Vec::new(), false))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok((Vec::new(), false))
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok((Vec::new(), false))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((Vec::new(), false))
    }
}
