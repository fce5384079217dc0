//! Protobuf → Kubernetes JSON: reads a message's fields (gogo's rules: unknown fields skipped,
//! repeated occurrences of a singular message merged, the last scalar winning, packed or unpacked
//! repeated scalars), then writes them in declaration order with encoding/json's rules (omitempty,
//! `null` for nil pointers, slices and maps, inline structs flattened, map keys sorted) and the
//! special types' marshallers.

use super::json_in;
use super::json_out::{JsonStyle, JsonWriter};
use super::path::{PathError, Seg};
use super::quantity;
use super::schema::{Card, Field, GoKind, Message, Scalar, Schema, Special, Ty};
use super::time;
use super::wire::{Reader, Wire, WireError};
use super::MAX_DEPTH;

/// One occurrence of a known field in the input.
#[derive(Clone, Copy)]
struct Occ<'a> {
    /// Index of the field in its message's `fields`.
    field: u8,
    wire: Wire<'a>,
}

/// The bytes of one message value: none, one slice, or every occurrence of a singular message
/// field (decoded as their concatenation, which is protobuf's merge).
#[derive(Clone, Copy)]
enum Parts<'a> {
    Empty,
    One(&'a [u8]),
    /// A range of the decoder's occurrence stack.
    Occs(usize, usize),
}

pub(crate) struct Decoder<'a> {
    schema: &'static Schema,
    pub(crate) w: JsonWriter,
    /// Occurrences of the messages being decoded, innermost last.
    occ: Vec<Occ<'a>>,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(schema: &'static Schema, style: JsonStyle, capacity: usize) -> Self {
        Self { schema, w: JsonWriter::new(style, capacity), occ: Vec::with_capacity(64) }
    }

    /// Writes a top-level object: `kind` and `apiVersion` first (when the type embeds TypeMeta and
    /// they are non-empty), then the message's fields.
    pub(crate) fn object(&mut self, message: &'static Message, type_meta: Option<(&str, &str)>, bytes: &'a [u8]) -> Result<(), PathError> {
        if message.special != Special::None {
            return self.message(message, Parts::One(bytes), 0);
        }
        self.w.begin_object();
        if let (true, Some((api_version, kind))) = (message.type_meta, type_meta) {
            if !kind.is_empty() {
                self.w.plain_key("kind");
                self.w.string(kind.as_bytes());
            }
            if !api_version.is_empty() {
                self.w.plain_key("apiVersion");
                self.w.string(api_version.as_bytes());
            }
        }
        self.members(message, Parts::One(bytes), 1)?;
        self.w.end_object();
        Ok(())
    }

    /// Reads the fields of `parts` onto the occurrence stack, sorted by field (stable: input order
    /// within a field). Returns their range.
    fn collect(&mut self, message: &'static Message, parts: Parts<'a>) -> Result<(usize, usize), PathError> {
        let base = self.occ.len();
        match parts {
            Parts::Empty => {}
            Parts::One(bytes) => self.scan(message, bytes)?,
            Parts::Occs(start, end) => {
                for k in start..end {
                    if let Wire::Bytes(bytes) = self.occ[k].wire {
                        self.scan(message, bytes)?;
                    }
                }
            }
        }
        let end = self.occ.len();
        let slice = &mut self.occ[base..end];
        if !slice.is_sorted_by_key(|o| o.field) {
            slice.sort_by_key(|o| o.field);
        }
        Ok((base, end))
    }

    fn scan(&mut self, message: &'static Message, bytes: &'a [u8]) -> Result<(), PathError> {
        let mut reader = Reader::new(bytes);
        loop {
            let (number, wire) = match reader.next_field() {
                Ok(Some(next)) => next,
                Ok(None) => return Ok(()),
                Err(e) => return Err(wire_error(message, e)),
            };
            let Some(index) = message.field_index(number) else { continue };
            let field = &message.fields[index];
            let expected = field.wire_type;
            let packed = field.card == Card::Repeated && expected != 2 && wire.wire_type() == 2;
            if wire.wire_type() != expected && !packed {
                let error = PathError::new(format!(
                    "wrong wire type {} for field {} ({}), expected {expected}",
                    wire.wire_type(),
                    field.name,
                    field.number
                ));
                return Err(if field.inline { error } else { error.at(Seg::Field(field.path_name())) });
            }
            self.occ.push(Occ { field: index as u8, wire });
        }
    }

    /// Writes the JSON members of `message` (without braces: inline structs share their parent's).
    fn members(&mut self, message: &'static Message, parts: Parts<'a>, depth: usize) -> Result<(), PathError> {
        let (base, end) = self.collect(message, parts)?;
        let mut cursor = base;
        for (index, field) in message.fields.iter().enumerate() {
            let start = cursor;
            while cursor < end && usize::from(self.occ[cursor].field) == index {
                cursor += 1;
            }
            if start == cursor && field.silent_when_absent {
                continue;
            }
            self.field(field, start, cursor, depth).map_err(|e| if field.inline { e } else { e.at(Seg::Field(field.path_name())) })?;
        }
        self.occ.truncate(base);
        Ok(())
    }

    fn key_null(&mut self, field: &Field) {
        if !field.omitempty {
            self.w.member_key(field.json_key);
            self.w.null();
        }
    }

    fn field(&mut self, field: &'static Field, start: usize, end: usize, depth: usize) -> Result<(), PathError> {
        let present = start < end;
        if field.inline {
            let Ty::Message(sub) = field.ty else { return Ok(()) };
            return self.members(self.schema.message(sub), Parts::Occs(start, end), depth);
        }
        if field.json.is_none() {
            return Ok(());
        }
        match (field.card, field.ty) {
            (Card::Repeated, _) => self.repeated(field, start, end, depth),
            (Card::Map, _) => self.map(field, start, end, depth),
            (Card::Single, Ty::Scalar(Scalar::Bytes)) => {
                match self.last_bytes(start, end) {
                    None => self.key_null(field),
                    Some(bytes) if field.omitempty && bytes.is_empty() => {}
                    Some(bytes) => {
                        self.w.member_key(field.json_key);
                        self.w.base64(bytes);
                    }
                }
                Ok(())
            }
            (Card::Single, Ty::Scalar(scalar)) => {
                let last = present.then(|| self.occ[end - 1].wire);
                if last.is_none() && field.go == GoKind::Pointer {
                    self.key_null(field);
                    return Ok(());
                }
                // A pointer that is set is never empty; a value is when it is zero.
                if field.omitempty && field.go != GoKind::Pointer && last.is_none_or(|w| scalar_is_zero(scalar, w)) {
                    return Ok(());
                }
                self.w.member_key(field.json_key);
                self.scalar(scalar, last).map_err(PathError::new)
            }
            (Card::Single, Ty::Message(sub)) => {
                let message = self.schema.message(sub);
                if !present && (field.go == GoKind::Pointer || message.special == Special::Verbs) {
                    self.key_null(field);
                    return Ok(());
                }
                if message.special == Special::Verbs && field.omitempty && self.verbs_empty(message, start, end)? {
                    return Ok(());
                }
                if field.omitzero && self.is_zero(message, Parts::Occs(start, end))? {
                    return Ok(());
                }
                self.w.member_key(field.json_key);
                self.message(message, Parts::Occs(start, end), depth)
            }
        }
    }

    /// Writes one message value (an object, or a special type's JSON).
    fn message(&mut self, message: &'static Message, parts: Parts<'a>, depth: usize) -> Result<(), PathError> {
        if message.special != Special::None {
            return self.special(message, parts, depth);
        }
        if depth >= MAX_DEPTH {
            return Err(PathError::new(format!("nested more than {MAX_DEPTH} levels deep")));
        }
        self.w.begin_object();
        self.members(message, parts, depth + 1)?;
        self.w.end_object();
        Ok(())
    }

    fn last_bytes(&self, start: usize, end: usize) -> Option<&'a [u8]> {
        match self.occ[start..end].last()?.wire {
            Wire::Bytes(bytes) => Some(bytes),
            _ => None,
        }
    }

    fn scalar(&mut self, scalar: Scalar, wire: Option<Wire<'a>>) -> Result<(), String> {
        let number = match wire {
            Some(Wire::Varint(v) | Wire::Fixed64(v)) => v,
            Some(Wire::Fixed32(v)) => u64::from(v),
            Some(Wire::Bytes(bytes)) => {
                match scalar {
                    Scalar::Bytes => self.w.base64(bytes),
                    _ => self.w.string(bytes),
                }
                return Ok(());
            }
            Some(Wire::Group) | None => 0,
        };
        match scalar {
            Scalar::String => self.w.string(b""),
            Scalar::Bytes => self.w.base64(b""),
            Scalar::Bool => self.w.bool(number != 0),
            // gogo accumulates an int32 field's varint into an int32: the low 32 bits.
            Scalar::Int32 => self.w.int(i64::from(number as u32 as i32)),
            Scalar::Int64 => self.w.int(number as i64),
            Scalar::Double => self.w.float(f64::from_bits(number))?,
        }
        Ok(())
    }

    /// Writes one element of a repeated field (packed ones are expanded by the caller).
    fn element(&mut self, field: &Field, wire: Wire<'a>, depth: usize) -> Result<(), PathError> {
        match field.ty {
            Ty::Scalar(scalar) => self.scalar(scalar, Some(wire)).map_err(PathError::new),
            Ty::Message(sub) => {
                let bytes = if let Wire::Bytes(bytes) = wire { bytes } else { &[] };
                self.message(self.schema.message(sub), Parts::One(bytes), depth)
            }
        }
    }

    fn repeated(&mut self, field: &'static Field, start: usize, end: usize, depth: usize) -> Result<(), PathError> {
        // A Go slice decoded from protobuf is nil unless an element was read (an empty packed run
        // adds none).
        let is_packed = |o: &Occ<'_>| matches!((field.ty, o.wire), (Ty::Scalar(s), Wire::Bytes(_)) if s.wire_type() != 2);
        let empty = self.occ[start..end].iter().all(|o| is_packed(o) && matches!(o.wire, Wire::Bytes(b) if b.is_empty()));
        if empty {
            self.key_null(field);
            return Ok(());
        }
        if depth >= MAX_DEPTH {
            return Err(PathError::new(format!("nested more than {MAX_DEPTH} levels deep")));
        }
        self.w.member_key(field.json_key);
        self.w.begin_array();
        let mut index = 0;
        for k in start..end {
            let occ = self.occ[k];
            match (field.ty, occ.wire) {
                (Ty::Scalar(scalar), Wire::Bytes(packed)) if scalar.wire_type() != 2 => {
                    let mut pos = 0;
                    while pos < packed.len() {
                        let wire = if scalar.wire_type() == 0 {
                            let mut reader = Reader::new(&packed[pos..]);
                            let value =
                                reader.varint().map_err(|e| PathError::new(format!("packed element: {e}")).at(Seg::Index(index)))?;
                            pos += reader.position();
                            Wire::Varint(value)
                        } else {
                            let chunk: [u8; 8] = packed
                                .get(pos..pos + 8)
                                .and_then(|c| c.try_into().ok())
                                .ok_or_else(|| PathError::new("truncated packed 8-byte element").at(Seg::Index(index)))?;
                            pos += 8;
                            Wire::Fixed64(u64::from_le_bytes(chunk))
                        };
                        self.element(field, wire, depth + 1).map_err(|e| e.at(Seg::Index(index)))?;
                        index += 1;
                    }
                }
                (_, wire) => {
                    self.element(field, wire, depth + 1).map_err(|e| e.at(Seg::Index(index)))?;
                    index += 1;
                }
            }
        }
        self.w.end_array();
        Ok(())
    }

    fn map(&mut self, field: &'static Field, start: usize, end: usize, depth: usize) -> Result<(), PathError> {
        let mut entries: Vec<(&'a [u8], Option<Wire<'a>>)> = Vec::with_capacity(end - start);
        let value_wire_type = match field.ty {
            Ty::Scalar(s) => s.wire_type(),
            Ty::Message(_) => 2,
        };
        for k in start..end {
            let Wire::Bytes(entry) = self.occ[k].wire else { continue };
            let mut key: &'a [u8] = b"";
            let mut value = None;
            let mut reader = Reader::new(entry);
            loop {
                match reader.next_field() {
                    Ok(Some((1, Wire::Bytes(bytes)))) => key = bytes,
                    Ok(Some((2, wire))) if wire.wire_type() == value_wire_type => value = Some(wire),
                    Ok(Some((number @ (1 | 2), wire))) => {
                        return Err(PathError::new(format!("wrong wire type {} for map entry field {number}", wire.wire_type())));
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) => return Err(PathError::new(format!("map entry: {}", e.reason))),
                }
            }
            entries.push((key, value));
        }
        // Go map semantics: keys sorted bytewise, the last of equal keys wins.
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let mut unique = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            if entries.get(i + 1).is_none_or(|next| next.0 != entry.0) {
                unique.push(*entry);
            }
        }
        if unique.is_empty() {
            self.key_null(field);
            return Ok(());
        }
        if depth >= MAX_DEPTH {
            return Err(PathError::new(format!("nested more than {MAX_DEPTH} levels deep")));
        }
        self.w.member_key(field.json_key);
        self.w.begin_object();
        for (key, value) in unique {
            self.w.key_bytes(key);
            let result = match field.ty {
                Ty::Scalar(scalar) => self.scalar(scalar, value).map_err(PathError::new),
                Ty::Message(sub) => {
                    let parts = match value {
                        Some(Wire::Bytes(bytes)) => Parts::One(bytes),
                        _ => Parts::Empty,
                    };
                    self.message(self.schema.message(sub), parts, depth + 1)
                }
            };
            result.map_err(|e| e.at(Seg::Key(String::from_utf8_lossy(key).into_owned())))?;
        }
        self.w.end_object();
        Ok(())
    }

    /// The occurrence range of field `number` within a collected range.
    fn occs_of(&self, message: &Message, (base, end): (usize, usize), number: u32) -> (usize, usize) {
        let Some(index) = message.field_index(number) else { return (end, end) };
        let mut start = base;
        while start < end && usize::from(self.occ[start].field) != index {
            start += 1;
        }
        let mut stop = start;
        while stop < end && usize::from(self.occ[stop].field) == index {
            stop += 1;
        }
        (start, stop)
    }

    fn last_varint(&self, message: &Message, range: (usize, usize), number: u32) -> u64 {
        let (start, end) = self.occs_of(message, range, number);
        match self.occ[start..end].last().map(|o| o.wire) {
            Some(Wire::Varint(v)) => v,
            _ => 0,
        }
    }

    fn last_field_bytes(&self, message: &Message, range: (usize, usize), number: u32) -> Option<&'a [u8]> {
        let (start, end) = self.occs_of(message, range, number);
        self.last_bytes(start, end)
    }

    /// The last occurrence only: types whose Go `Unmarshal` resets the value.
    fn last_part(&self, parts: Parts<'a>) -> Parts<'a> {
        match parts {
            Parts::Occs(start, end) if end > start => match self.occ[end - 1].wire {
                Wire::Bytes(bytes) => Parts::One(bytes),
                _ => Parts::Empty,
            },
            Parts::Occs(..) => Parts::Empty,
            other => other,
        }
    }

    fn parts_empty(&self, parts: Parts<'a>) -> bool {
        match parts {
            Parts::Empty => true,
            Parts::One(bytes) => bytes.is_empty(),
            Parts::Occs(start, end) => self.occ[start..end].iter().all(|o| matches!(o.wire, Wire::Bytes(b) if b.is_empty())),
        }
    }

    /// A Time or MicroTime: `None` when zero (zero-length message, or Go's zero instant), else Unix
    /// seconds and microseconds.
    fn time(&mut self, message: &'static Message, parts: Parts<'a>) -> Result<Option<(i64, u32)>, PathError> {
        let parts = self.last_part(parts);
        if self.parts_empty(parts) {
            return Ok(None);
        }
        let range = self.collect(message, parts)?;
        let seconds = self.last_varint(message, range, 1) as i64;
        let nanos = self.last_varint(message, range, 2) as u32 as i32;
        self.occ.truncate(range.0);
        let (seconds, micros) = match message.special {
            Special::MicroTime => time::micro_time_from_proto(seconds, nanos)?,
            _ => (seconds, 0),
        };
        Ok((seconds != time::GO_ZERO_UNIX || micros != 0).then_some((seconds, micros)))
    }

    /// Go's `omitzero`: `IsZero()` for times, the zero value (nothing set) otherwise.
    fn is_zero(&mut self, message: &'static Message, parts: Parts<'a>) -> Result<bool, PathError> {
        match message.special {
            Special::Time | Special::MicroTime => Ok(self.time(message, parts)?.is_none()),
            _ => Ok(self.parts_empty(parts)),
        }
    }

    fn verbs_empty(&mut self, message: &'static Message, start: usize, end: usize) -> Result<bool, PathError> {
        let range = self.collect(message, Parts::Occs(start, end))?;
        let empty = self.occs_of(message, range, 1).0 == self.occs_of(message, range, 1).1;
        self.occ.truncate(range.0);
        Ok(empty)
    }

    fn raw_json(&mut self, raw: &[u8], depth: usize, what: &str) -> Result<(), PathError> {
        let text = json_in::lossy_utf8(raw);
        let node =
            json_in::parse(&text, MAX_DEPTH.saturating_sub(depth)).map_err(|e| PathError::new(format!("{what} is not valid JSON: {e}")))?;
        json_in::emit(&node, &mut self.w);
        Ok(())
    }

    fn special(&mut self, message: &'static Message, parts: Parts<'a>, depth: usize) -> Result<(), PathError> {
        match message.special {
            Special::Time | Special::MicroTime => {
                match self.time(message, parts)? {
                    None => self.w.null(),
                    Some((seconds, micros)) => {
                        let micros = (message.special == Special::MicroTime).then_some(micros);
                        self.w.quoted(|out| time::format(out, seconds, micros))?;
                    }
                }
                return Ok(());
            }
            Special::Quantity => {
                let parts = self.last_part(parts);
                let range = self.collect(message, parts)?;
                let text = self.last_field_bytes(message, range, 1);
                self.occ.truncate(range.0);
                match text {
                    None => self.w.plain_string("0"),
                    Some(bytes) => {
                        let text = std::str::from_utf8(bytes).map_err(|_| PathError::new("quantity is not UTF-8"))?;
                        let canonical = quantity::canonical(text)?;
                        self.w.string(canonical.as_bytes());
                    }
                }
                return Ok(());
            }
            _ => {}
        }
        let range = self.collect(message, parts)?;
        match message.special {
            Special::Duration => {
                let nanos = self.last_varint(message, range, 1) as i64;
                self.w.quoted(|out| {
                    time::format_duration(out, nanos);
                    Ok(())
                })?;
            }
            Special::IntOrString => match self.last_varint(message, range, 1) as i64 {
                0 => self.w.int(i64::from(self.last_varint(message, range, 2) as u32 as i32)),
                1 => {
                    let text = self.last_field_bytes(message, range, 3).unwrap_or_default();
                    self.w.string(text);
                }
                other => return Err(PathError::new(format!("impossible IntOrString.Type {other}"))),
            },
            Special::RawExtension => match self.last_field_bytes(message, range, 1) {
                None => self.w.null(),
                Some([0xd9, 0xd9, 0xf7, ..]) => return Err(PathError::new("CBOR-encoded RawExtension is not supported")),
                Some(raw @ [b'\t' | b'\r' | b'\n' | b' ' | b'{' | b'[' | b'n' | b't' | b'f' | b'"' | b'-' | b'0'..=b'9', ..]) => {
                    self.raw_json(raw, depth, "RawExtension")?;
                }
                Some(_) => return Err(PathError::new("cannot convert RawExtension with unrecognized content type to unstructured")),
            },
            Special::FieldsV1 => match self.last_field_bytes(message, range, 1) {
                None | Some([]) => self.w.null(),
                Some([0xf6 | 0xa0..=0xbf | 0xc6..=0xdb, ..]) => return Err(PathError::new("CBOR-encoded FieldsV1 is not supported")),
                Some(raw) => self.raw_json(raw, depth, "FieldsV1")?,
            },
            Special::Json => match self.last_field_bytes(message, range, 1) {
                None | Some([]) => self.w.null(),
                Some(raw) => self.raw_json(raw, depth, "JSON")?,
            },
            Special::OrBool => {
                let schema = self.occs_of(message, range, 2);
                if schema.0 < schema.1 {
                    let sub = self.field_message(message, 2)?;
                    self.message(sub, Parts::Occs(schema.0, schema.1), depth)?;
                } else {
                    self.w.bool(self.last_varint(message, range, 1) != 0);
                }
            }
            Special::OrArray | Special::OrStringArray => {
                let (number, other) = (2, 1);
                let items = self.occs_of(message, range, number);
                let schema = self.occs_of(message, range, other);
                if items.0 < items.1 {
                    if depth >= MAX_DEPTH {
                        return Err(PathError::new(format!("nested more than {MAX_DEPTH} levels deep")));
                    }
                    self.w.begin_array();
                    for (i, k) in (items.0..items.1).enumerate() {
                        let bytes = if let Wire::Bytes(bytes) = self.occ[k].wire { bytes } else { &[] };
                        if message.special == Special::OrStringArray {
                            self.w.string(bytes);
                        } else {
                            let sub = self.field_message(message, number)?;
                            self.message(sub, Parts::One(bytes), depth + 1).map_err(|e| e.at(Seg::Index(i)))?;
                        }
                    }
                    self.w.end_array();
                } else if schema.0 < schema.1 {
                    let sub = self.field_message(message, other)?;
                    self.message(sub, Parts::Occs(schema.0, schema.1), depth)?;
                } else {
                    self.w.null();
                }
            }
            Special::Verbs => {
                let items = self.occs_of(message, range, 1);
                if depth >= MAX_DEPTH {
                    return Err(PathError::new(format!("nested more than {MAX_DEPTH} levels deep")));
                }
                self.w.begin_array();
                for k in items.0..items.1 {
                    let bytes = if let Wire::Bytes(bytes) = self.occ[k].wire { bytes } else { &[] };
                    self.w.string(bytes);
                }
                self.w.end_array();
            }
            Special::None | Special::Time | Special::MicroTime | Special::Quantity => {}
        }
        self.occ.truncate(range.0);
        Ok(())
    }

    /// The message type of field `number` of `message`.
    fn field_message(&self, message: &Message, number: u32) -> Result<&'static Message, PathError> {
        match message.field_index(number).map(|i| message.fields[i].ty) {
            Some(Ty::Message(sub)) => Ok(self.schema.message(sub)),
            _ => Err(PathError::new(format!("{} has no message field {number}", message.full_name))),
        }
    }
}

fn scalar_is_zero(scalar: Scalar, wire: Wire<'_>) -> bool {
    match (scalar, wire) {
        (_, Wire::Bytes(bytes)) => bytes.is_empty(),
        (Scalar::Int32, Wire::Varint(v)) => v as u32 == 0,
        (Scalar::Double, Wire::Fixed64(v)) => f64::from_bits(v) == 0.0,
        (_, Wire::Varint(v) | Wire::Fixed64(v)) => v == 0,
        (_, Wire::Fixed32(v)) => v == 0,
        (_, Wire::Group) => true,
    }
}

/// A wire error, with the field being read when there is one.
fn wire_error(message: &Message, e: WireError) -> PathError {
    let error = PathError::new(e.reason);
    match e.field.and_then(|number| message.field_index(number)).map(|i| &message.fields[i]) {
        Some(field) if !field.inline => error.at(Seg::Field(field.path_name())),
        _ => error,
    }
}
