//! Kubernetes JSON → protobuf, byte for byte as gogo writes the Go struct that encoding/json would
//! have decoded: fields in ascending number; non-pointer scalars and structs always written (zero
//! included), pointers iff set, repeated fields and maps iff non-empty (map keys sorted), `[]byte`
//! iff non-nil; inline structs as their own submessage; the special types' own encodings.
//! JSON `null` is Go's "no effect" (the zero value, or nil for pointers, slices and maps); unknown
//! keys are ignored, keys are matched case-sensitively (as `sigs.k8s.io/json` does), and of
//! duplicate keys the last wins.

use super::base64;
use super::json_in::{JsonIn, View};
use super::path::{PathError, Seg};
use super::quantity;
use super::schema::{Card, Field, GoKind, Message, Scalar, Schema, Special, Ty, MAX_FIELDS};
use super::time;
use super::wire::{begin_len, end_len, put_bytes, put_key, put_varint};
use super::MAX_DEPTH;

pub(crate) struct Encoder {
    schema: &'static Schema,
    pub(crate) out: Vec<u8>,
}

/// `value` unless it is JSON `null`.
fn non_null<J: JsonIn>(value: Option<&J>) -> Option<&J> {
    value.filter(|v| !matches!(v.view(), View::Null))
}

fn type_error<J: JsonIn>(value: &J, expected: &str) -> PathError {
    PathError::new(format!("cannot unmarshal {} into a field of type {expected}", value.view().name()))
}

impl Encoder {
    pub(crate) fn new(schema: &'static Schema, capacity: usize) -> Self {
        Self { schema, out: Vec::with_capacity(capacity) }
    }

    /// Writes the body of `message` (no key, no length) from `json`; `None` (or `null`) is the
    /// zero value.
    pub(crate) fn message<J: JsonIn>(&mut self, message: &'static Message, json: Option<&J>, depth: usize) -> Result<(), PathError> {
        let json = non_null(json);
        if message.special != Special::None {
            return self.special(message, json, depth);
        }
        if depth >= MAX_DEPTH {
            return Err(PathError::new(format!("nested more than {MAX_DEPTH} levels deep")));
        }
        let mut slots: [Option<&J>; MAX_FIELDS] = [None; MAX_FIELDS];
        if let Some(object) = json {
            if !matches!(object.view(), View::Object) {
                return Err(type_error(object, &format!("{} (an object)", go_name(message))));
            }
            for (key, value) in object.members() {
                if let Some(index) = message.json_index(key) {
                    slots[index] = non_null(Some(value));
                }
            }
        }
        for &index in &message.encode_order {
            let field = &message.fields[usize::from(index)];
            self.field(field, slots[usize::from(index)], json, depth).map_err(|e| {
                if field.inline {
                    e
                } else {
                    e.at(Seg::Field(field.path_name()))
                }
            })?;
        }
        Ok(())
    }

    /// Checks that `json` encodes as `message`, given that `old` (a version of the same object)
    /// did: a field's encoding depends on its value and depth alone, so members whose value
    /// equals `old`'s are not looked at again; nested messages and list items that changed are
    /// checked the same way. What fails is what [`message`](Self::message) reports for those
    /// fields, first in encoding order (an unchanged field is taken as encoding, as it did in
    /// `old`). The bytes written are not an encoding: only the result counts.
    pub(crate) fn message_changed(
        &mut self,
        message: &'static Message,
        json: Option<&serde_json::Value>,
        old: Option<&serde_json::Value>,
        depth: usize,
    ) -> Result<(), PathError> {
        let (json, old) = (non_null(json), non_null(old));
        let none = serde_json::Map::new();
        let (object, members, old_members) = match (json, old) {
            (Some(object @ serde_json::Value::Object(members)), Some(serde_json::Value::Object(old_members))) => {
                (object, members, old_members)
            }
            // Absent before (or a create's check): as an empty object, every member is new.
            (Some(object @ serde_json::Value::Object(members)), None) => (object, members, &none),
            _ => return if json == old { Ok(()) } else { self.message(message, json, depth) },
        };
        // An inline struct reads the whole object: such messages are encoded whole.
        if message.special != Special::None || depth >= MAX_DEPTH || message.has_inline {
            return self.message(message, json, depth);
        }
        // The members that differ from `old`'s, by field; a member `old` has and `json` lacks
        // (or has as null) takes its zero value, which always encodes.
        let mut changed: Vec<(&'static Field, &serde_json::Value, Option<&serde_json::Value>)> = Vec::new();
        for (key, value) in members {
            let was = old_members.get(key);
            if was == Some(value) || value.is_null() {
                continue;
            }
            if let Some(index) = message.json_index(key) {
                changed.push((&message.fields[index], value, non_null(was)));
            }
        }
        changed.sort_by_key(|(field, ..)| field.number);
        for (field, value, was) in changed {
            let result = match (field.card, field.ty) {
                (Card::Single, Ty::Message(sub)) => self.message_changed(self.schema.message(sub), Some(value), was, depth + 1),
                (Card::Repeated, Ty::Message(sub)) => match (value, was) {
                    (serde_json::Value::Array(items), None | Some(serde_json::Value::Array(_))) => {
                        let old_items = match was {
                            Some(serde_json::Value::Array(old_items)) => old_items.as_slice(),
                            _ => &[],
                        };
                        let sub = self.schema.message(sub);
                        items.iter().enumerate().try_for_each(|(i, item)| {
                            self.message_changed(sub, Some(item), old_items.get(i), depth + 1).map_err(|e| e.at(Seg::Index(i)))
                        })
                    }
                    _ => self.field(field, Some(value), Some(object), depth),
                },
                _ => self.field(field, Some(value), Some(object), depth),
            };
            result.map_err(|e| e.at(Seg::Field(field.path_name())))?;
        }
        Ok(())
    }

    fn sub_message<J: JsonIn>(&mut self, number: u32, message: &'static Message, json: Option<&J>, depth: usize) -> Result<(), PathError> {
        let at = begin_len(&mut self.out, number);
        self.message(message, json, depth)?;
        end_len(&mut self.out, at);
        Ok(())
    }

    fn field<J: JsonIn>(&mut self, field: &'static Field, value: Option<&J>, object: Option<&J>, depth: usize) -> Result<(), PathError> {
        let number = field.number;
        if field.inline {
            let Ty::Message(sub) = field.ty else { return Ok(()) };
            return self.sub_message(number, self.schema.message(sub), object, depth);
        }
        match field.card {
            Card::Repeated => {
                let Some(value) = value else { return Ok(()) };
                let View::Array(items) = value.view() else { return Err(type_error(value, "array")) };
                for (i, item) in items.iter().enumerate() {
                    let item = non_null(Some(item));
                    let result = match field.ty {
                        Ty::Scalar(Scalar::Bytes) => self.bytes(number, item),
                        Ty::Scalar(scalar) => self.scalar(number, scalar, item),
                        Ty::Message(sub) => self.sub_message(number, self.schema.message(sub), item, depth + 1),
                    };
                    result.map_err(|e| e.at(Seg::Index(i)))?;
                }
            }
            Card::Map => {
                let Some(value) = value else { return Ok(()) };
                if !matches!(value.view(), View::Object) {
                    return Err(type_error(value, "map (an object)"));
                }
                let mut entries: Vec<(&str, &J)> = value.members().collect();
                // Go sorts keys bytewise; of duplicate keys the last one decoded wins.
                entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                for (i, &(key, item)) in entries.iter().enumerate() {
                    if entries.get(i + 1).is_some_and(|next| next.0 == key) {
                        continue;
                    }
                    let at = begin_len(&mut self.out, number);
                    put_bytes(&mut self.out, 1, key.as_bytes());
                    let item = non_null(Some(item));
                    let result = match field.ty {
                        // A nil []byte value has no field 2.
                        Ty::Scalar(Scalar::Bytes) if item.is_none() => Ok(()),
                        Ty::Scalar(Scalar::Bytes) => self.bytes(2, item),
                        Ty::Scalar(scalar) => self.scalar(2, scalar, item),
                        Ty::Message(sub) => self.sub_message(2, self.schema.message(sub), item, depth + 1),
                    };
                    result.map_err(|e| e.at(Seg::Key(key.to_owned())))?;
                    end_len(&mut self.out, at);
                }
            }
            Card::Single => match field.ty {
                // []byte: written iff non-nil.
                Ty::Scalar(Scalar::Bytes) => {
                    if value.is_some() {
                        self.bytes(number, value)?;
                    }
                }
                Ty::Scalar(scalar) => {
                    if value.is_some() || field.go != GoKind::Pointer {
                        self.scalar(number, scalar, value)?;
                    }
                }
                Ty::Message(sub) => {
                    let message = self.schema.message(sub);
                    if value.is_some() || (field.go != GoKind::Pointer && message.special != Special::Verbs) {
                        self.sub_message(number, message, value, depth + 1)?;
                    }
                }
            },
        }
        Ok(())
    }

    /// A `[]byte` from its base64 string (nothing for `None`).
    fn bytes<J: JsonIn>(&mut self, number: u32, value: Option<&J>) -> Result<(), PathError> {
        let decoded = match value.map(JsonIn::view) {
            None => Vec::new(),
            Some(View::String(text)) => base64::decode(text)?,
            Some(View::Array(items)) => {
                // encoding/json also reads a []byte from an array of numbers.
                let mut bytes = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let byte = match item.view() {
                        View::Number(n) => n.to_i64().ok().and_then(|v| u8::try_from(v).ok()),
                        View::Null => Some(0),
                        _ => None,
                    };
                    bytes.push(byte.ok_or_else(|| type_error(item, "uint8").at(Seg::Index(i)))?);
                }
                bytes
            }
            Some(_) => return Err(value.map_or_else(|| PathError::new("bytes expected"), |v| type_error(v, "[]byte (a base64 string)"))),
        };
        put_bytes(&mut self.out, number, &decoded);
        Ok(())
    }

    /// A scalar; `None` is its zero value.
    fn scalar<J: JsonIn>(&mut self, number: u32, scalar: Scalar, value: Option<&J>) -> Result<(), PathError> {
        let view = value.map(JsonIn::view);
        match scalar {
            Scalar::String => {
                let text = match &view {
                    None => "",
                    Some(View::String(text)) => text,
                    Some(_) => return Err(value.map_or_else(|| PathError::new("string expected"), |v| type_error(v, "string"))),
                };
                put_bytes(&mut self.out, number, text.as_bytes());
            }
            Scalar::Bytes => return self.bytes(number, value),
            Scalar::Bool => {
                let b = match view {
                    None => false,
                    Some(View::Bool(b)) => b,
                    Some(_) => return Err(value.map_or_else(|| PathError::new("bool expected"), |v| type_error(v, "bool"))),
                };
                put_key(&mut self.out, number, 0);
                self.out.push(u8::from(b));
            }
            Scalar::Int32 | Scalar::Int64 => {
                let n = match view {
                    None => 0,
                    Some(View::Number(n)) => n.to_i64()?,
                    Some(_) => return Err(value.map_or_else(|| PathError::new("number expected"), |v| type_error(v, "integer"))),
                };
                if scalar == Scalar::Int32 && i32::try_from(n).is_err() {
                    return Err(PathError::new(format!("number {n} overflows int32")));
                }
                put_key(&mut self.out, number, 0);
                // Negative numbers are sign-extended to ten bytes, int32 included.
                put_varint(&mut self.out, n as u64);
            }
            Scalar::Double => {
                let f = match view {
                    None => 0.0,
                    Some(View::Number(n)) => n.to_f64()?,
                    Some(_) => return Err(value.map_or_else(|| PathError::new("number expected"), |v| type_error(v, "float64"))),
                };
                put_key(&mut self.out, number, 1);
                self.out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
        }
        Ok(())
    }

    /// The message type of field `number` of `message`.
    fn field_message(&self, message: &Message, number: u32) -> Result<&'static Message, PathError> {
        match message.field_index(number).map(|i| message.fields[i].ty) {
            Some(Ty::Message(sub)) => Ok(self.schema.message(sub)),
            _ => Err(PathError::new(format!("{} has no message field {number}", message.full_name))),
        }
    }

    fn special<J: JsonIn>(&mut self, message: &'static Message, json: Option<&J>, depth: usize) -> Result<(), PathError> {
        let view = json.map(JsonIn::view);
        let expected = |what: &str| match json {
            Some(v) => type_error(v, what),
            None => PathError::new(format!("{what} expected")),
        };
        match message.special {
            Special::Time | Special::MicroTime => {
                let (seconds, nanos) = match view {
                    None => return Ok(()),
                    Some(View::String(text)) if message.special == Special::Time => (time::parse_time(text)?, 0),
                    Some(View::String(text)) => time::parse_micro_time(text)?,
                    Some(_) => return Err(expected("string (an RFC 3339 time)")),
                };
                // The zero time is a zero-length message.
                if seconds != time::GO_ZERO_UNIX || nanos != 0 {
                    put_key(&mut self.out, 1, 0);
                    put_varint(&mut self.out, seconds as u64);
                    put_key(&mut self.out, 2, 0);
                    put_varint(&mut self.out, u64::from(nanos));
                }
            }
            Special::Duration => {
                let nanos = match view {
                    Some(View::String(text)) => time::parse_duration(text)?,
                    // Absent (or null, which this encoder treats alike; Go's UnmarshalJSON would
                    // reject a null) is the zero duration.
                    None => 0,
                    Some(_) => return Err(expected("string (a duration)")),
                };
                put_key(&mut self.out, 1, 0);
                put_varint(&mut self.out, nanos as u64);
            }
            Special::IntOrString => {
                let (kind, int, text) = match view {
                    None => (0, 0, ""),
                    Some(View::String(text)) => (1, 0, text),
                    Some(View::Number(n)) => {
                        let n = n.to_i64()?;
                        (0, i32::try_from(n).map_err(|_| PathError::new(format!("number {n} overflows int32")))?, "")
                    }
                    Some(_) => return Err(expected("IntOrString (a number or a string)")),
                };
                put_key(&mut self.out, 1, 0);
                put_varint(&mut self.out, kind);
                put_key(&mut self.out, 2, 0);
                put_varint(&mut self.out, i64::from(int) as u64);
                put_bytes(&mut self.out, 3, text.as_bytes());
            }
            Special::Quantity => {
                let text = match view {
                    None => "0".to_owned(),
                    // UnmarshalJSON takes the text between the quotes, or the number literal,
                    // trimmed of white space.
                    Some(View::String(text)) => quantity::canonical(text.trim())?.into_owned(),
                    Some(View::Number(n)) => {
                        let literal = n.to_string();
                        quantity::canonical(&literal)?.into_owned()
                    }
                    Some(_) => return Err(expected("quantity (a string or a number)")),
                };
                put_bytes(&mut self.out, 1, text.as_bytes());
            }
            Special::RawExtension | Special::FieldsV1 | Special::Json => {
                if let Some(value) = json {
                    let at = begin_len(&mut self.out, 1);
                    value.compact_into(&mut self.out);
                    end_len(&mut self.out, at);
                }
            }
            Special::OrBool => match view {
                None => {
                    put_key(&mut self.out, 1, 0);
                    self.out.push(0);
                }
                Some(View::Bool(b)) => {
                    put_key(&mut self.out, 1, 0);
                    self.out.push(u8::from(b));
                }
                Some(View::Object) => {
                    put_key(&mut self.out, 1, 0);
                    self.out.push(1);
                    let schema = self.field_message(message, 2)?;
                    self.sub_message(2, schema, json, depth)?;
                }
                Some(_) => return Err(PathError::new("boolean or JSON schema expected")),
            },
            Special::OrArray | Special::OrStringArray => match view {
                Some(View::Object) => {
                    let schema = self.field_message(message, 1)?;
                    self.sub_message(1, schema, json, depth)?;
                }
                Some(View::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        let item = non_null(Some(item));
                        let result = if message.special == Special::OrArray {
                            let schema = self.field_message(message, 2)?;
                            self.sub_message(2, schema, item, depth + 1)
                        } else {
                            self.scalar(2, Scalar::String, item)
                        };
                        result.map_err(|e| e.at(Seg::Index(i)))?;
                    }
                }
                // Go's UnmarshalJSON ignores anything else.
                _ => {}
            },
            Special::Verbs => match view {
                None => {}
                Some(View::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        self.scalar(1, Scalar::String, non_null(Some(item))).map_err(|e| e.at(Seg::Index(i)))?;
                    }
                }
                Some(_) => return Err(expected("[]string (an array)")),
            },
            Special::None => {}
        }
        Ok(())
    }
}

/// A message's Go-ish type name for error messages: `v1.PodSpec`.
fn go_name(message: &Message) -> String {
    let mut parts = message.full_name.rsplit('.');
    let name = parts.next().unwrap_or_default();
    match parts.next() {
        Some(version) => format!("{version}.{name}"),
        None => name.to_owned(),
    }
}
